"""The form SD's estimators at small K (issue 47 item 5): bias, and how often the interval excludes 0.

The design of docs/prompt-forms.md's MLE figure: RW± (α⁺ = α⁻ = 0.5, β = 5), 8 prompt forms × 10
subjects × 96 trials, each form shifting α⁺ by a Normal(0, τ) offset on the logit scale, per-subject
MLE (2 starts), the between-form SD of the fitted logit α⁺ (estimates at a bound clipped 0.001 from
it, :data:`~cogtestbed.validation.studies.form_studies.BOUND_EPS`).  For each true τ
(``--taus``, default 0, 0.15, 0.3; ``--studies`` each) prints, per estimator, the mean estimate ±
its MC SE and its bias, and for the 95 % Q-profile interval its coverage and the share of studies
whose interval excludes 0 (it "shows a wording effect"):

* ``DL``: DerSimonian–Laird (the package's ``between_form_sd``);
* ``REML``: restricted maximum likelihood (Viechtbauer 2005; :func:`~cogtestbed.inference.form_effects.reml_tau2`);
* ``median``: the median-unbiased Q-profile estimate (:func:`~cogtestbed.inference.form_effects.median_tau2`);
* each also on the subjects whose estimate is off the bounds (``… off-bound``), a variant of ours.

``python benchmarks/studies/form_sd_estimators.py [--studies 300] [--taus 0 0.15 0.3] [--cache DIR]``
(about 0.5 CPU s a study; ``--cache`` keeps each τ's fitted values, so a re-run only re-estimates).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.inference.form_effects import dl_tau2, form_summaries, median_tau2, q_profile_interval, reml_tau2
from cogtestbed.validation.studies.form_studies import BOUND_EPS

FORMS, PER_FORM, SEEDS = 8, 10, {0.0: 43, 0.15: 42, 0.3: 44}
#: logit of α at BOUND_EPS from its bound: where an at-bound estimate lands
BOUND = math.log((1 - BOUND_EPS) / BOUND_EPS)


def simulate(tau: float, studies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(logit α⁺ estimates, forms) of ``studies`` simulated studies (one row each)."""
    from cogtestbed.environments.forms import FORM_COLUMN, FormDesign
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate as sim
    from cogtestbed.validation.studies.form_studies import STUDY_STARTS, _unconstrained

    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    design = exp.design_cls(visits_per_casino=24)
    forms = FormDesign(tuple(range(FORMS)), {"alpha_pos": tau})
    ys, fs = [], []
    for s in np.random.SeedSequence(seed).generate_state(studies, dtype=np.uint32):
        table = sim(exp, "rw-pm", FORMS * PER_FORM, int(s), {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                    design=design, forms=forms)
        fits = model.fit_mle(table, n_starts=STUDY_STARTS)
        form_of = table.groupby("subject", sort=True)[FORM_COLUMN].first()
        ys.append(_unconstrained(model, "alpha_pos", fits["alpha_pos"].to_numpy(float)))
        fs.append(form_of.loc[fits["subject"]].to_numpy())
    return np.asarray(ys), np.asarray(fs)


def estimates(y: np.ndarray, f: np.ndarray) -> dict[str, Any]:
    """Every estimator's τ̂ and the Q-profile interval, on all subjects and off the bounds."""
    out: dict[str, Any] = {}
    for tag, keep in (("", np.ones(y.size, bool)), (" off-bound", np.abs(y) < BOUND - 1e-6)):
        _ids, _n, m, v = form_summaries(y[keep], f[keep])
        out["DL" + tag] = math.sqrt(dl_tau2(m, v)[0])
        out["REML" + tag] = math.sqrt(reml_tau2(m, v))
        out["median" + tag] = math.sqrt(median_tau2(m, v))
        out["interval" + tag] = q_profile_interval(m, v)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=300)
    ap.add_argument("--taus", type=float, nargs="+", default=[0.0, 0.15, 0.3])
    ap.add_argument("--cache", type=Path, default=None)
    a = ap.parse_args()
    start = time.perf_counter()
    for tau in a.taus:
        seed = SEEDS.get(tau, 45)
        path = None if a.cache is None else a.cache / f"forms_tau{tau:g}_n{a.studies}_s{seed}.npz"
        if path is not None and path.exists():
            d = np.load(path)
            y, f = d["y"], d["f"]
        else:
            y, f = simulate(tau, a.studies, seed)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.savez(path, y=y, f=f)
        rows = [estimates(yi, fi) for yi, fi in zip(y, f, strict=True)]
        n = len(rows)
        print(f"true form SD {tau:g}: {n} studies ({FORMS} forms x {PER_FORM} subjects x 96 trials, seed {seed}); "
              f"{np.mean(np.abs(y) >= BOUND - 1e-6):.1%} of the estimates at a bound")
        for name in ("DL", "REML", "median", "DL off-bound", "REML off-bound", "median off-bound"):
            t = np.array([r[name] for r in rows])
            print(f"  {name:17s} mean {t.mean():.3f} ± {t.std(ddof=1) / math.sqrt(n):.3f}  bias {t.mean() - tau:+.3f}  "
                  f"share 0 {np.mean(t == 0):.2f}")
        for tag in ("", " off-bound"):
            lo = np.array([r["interval" + tag][0] for r in rows])
            hi = np.array([r["interval" + tag][1] for r in rows])
            print(f"  95% Q-profile interval{tag}: excludes 0 in {np.mean(lo > 0):.3f}, covers {tau:g} in "
                  f"{np.mean((lo <= tau) & (tau <= hi)):.3f}, mean [{lo.mean():.3f}, {hi.mean():.3f}]")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
