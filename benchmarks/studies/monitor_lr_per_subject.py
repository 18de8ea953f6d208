"""Why the likelihood-ratio monitor pools the null over subjects: the per-subject universal-inference e-value
(each subject's own RW maximum in the denominator, the plan's population mixture of RW± in the numerator) has a
negative expected log under the plan's effect at 96 trials, so a product of them never reaches 1/alpha.

``python benchmarks/studies/monitor_lr_per_subject.py`` prints mean log e, E[e] and the SD of log e over 200
simulated subjects under the effect and at two null points (seeds fixed below).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import declared_studies, spec_from_decl
from cogtestbed.studies.model_studies import power_parameters
from cogtestbed.studies.study_data import design_for_trials, simulate_model

N, K = 200, 1000


def main() -> None:
    exp = get_experiment("instrumental-learning")
    decl = next(d for _, d in declared_studies(exp) if d.kind == "power")
    spec = spec_from_decl(exp, decl, reps=1)
    model, null = exp.model("rw-pm"), exp.model("rw")
    prior = power_parameters(spec, model, K, np.random.default_rng(5))
    nodes = np.column_stack([prior[p] for p in model.parameters.names])
    design = design_for_trials(exp, None, spec.design)

    def point(a: float, b: float) -> dict[str, np.ndarray]:
        return {"alpha_pos": np.full(N, a), "alpha_neg": np.full(N, a), "beta": np.full(N, b)}

    cases = [("effect", power_parameters(spec, model, N, np.random.default_rng(9))),
             ("null alpha .7 beta 10", point(0.7, 10.0)), ("null alpha .3 beta 3", point(0.3, 3.0))]
    for label, true in cases:
        table = simulate_model(spec, exp, "rw-pm", true, N, 11, design, 1)
        log_e = np.array([logsumexp(-model.nll_many(nodes, d)) - np.log(K)
                          + min(null.fit_subject(d).nll, null.nll_many(null.start_grid(), d).min())
                          for d in model.subject_data(table).values()])
        print(f"{label:<24} mean log e {log_e.mean():+.2f}  E[e] {np.exp(log_e).mean():.3g}  SD {log_e.std():.2f}")


if __name__ == "__main__":
    main()
