"""The forms plan's power across seeds: the estimand and σ of 600 simulated subjects, and the power they give.

A simulated forms plan computes the noncentral-t power of the test on form means at the per-subject MLE's mean
(the estimand the test sees) and SD of :data:`~cogtestbed.planning.kinds.forms.form_plan.SIGMA_SUBJECTS`
simulated subjects.  For each seed this prints that estimand with its MC SE, σ, the formula's power at 8 forms ×
5 subjects (the claims audit's design) and the same power by resampling those subjects' estimates into 20,000
forms studies (form offsets Normal(0, τ)) tested by the t-test on the form means: the formula agrees with the
resampling, and the power moves with the seed by the estimand's MC error.

    python benchmarks/studies/forms_estimand_spread.py 0 1 2
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

#: The claims audit's forms design (benchmarks/studies/claims_audit.py, ``FORMS``) and its chosen forms × subjects.
FORMS, PER_FORM, TAU = 8, 5, 0.0359


def main() -> None:
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.planning.kinds.forms.form_plan import SIGMA_SUBJECTS, forms_power
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate
    from cogtestbed.studies.form_studies import STUDY_STARTS, effect_values, form_study_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seeds", nargs="+", type=int)
    args = ap.parse_args()
    spec = form_study_spec("instrumental-learning", "rw-pm", FormDesign(tuple(range(FORMS)), {"alpha_pos": 0.15}),
                           2 * FORMS, params={"alpha_pos": 0.5, "alpha_neg": 0.5}, effect=("optimism_bias", 0.2))
    exp = get_experiment(spec.experiment)
    model = exp.model(spec.model)
    for seed in args.seeds:
        table = simulate(exp, spec.agent, SIGMA_SUBJECTS, seed, spec.params, design=spec.design)
        v = effect_values(spec, model.fit_mle(table, n_starts=STUDY_STARTS), model)
        v = v[np.isfinite(v)]
        est, sd = float(v.mean() - spec.null), float(v.std(ddof=1))
        rng = np.random.default_rng(seed)
        centred = v - v.mean()
        means = (est + rng.normal(0, TAU, (20_000, FORMS))
                 + centred[rng.integers(0, v.size, (20_000, FORMS, PER_FORM))].mean(axis=2))
        resampled = float((stats.ttest_1samp(means, 0.0, axis=1).pvalue < 0.05).mean())
        print(f"seed {seed}: estimand {est:.4f} ± {sd / np.sqrt(v.size):.4f}, σ {sd:.4f}, power at {FORMS} forms × "
              f"{PER_FORM}: formula {forms_power(est, sd, TAU, FORMS, PER_FORM):.3f}, resampled {resampled:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
