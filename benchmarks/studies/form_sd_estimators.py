"""The form SD's estimators at small K (issue 47 item 5): bias with its MC SE, and how often the interval excludes 0.

Two parts, each at K = 4, 8, 16 forms × 10 subjects and true form SD τ = 0, 0.05, 0.1, 0.15, 0.3:

* **Gaussian** (``--gaussian``, the random-effects model exactly): per-subject values
  ``μ + δ_k + σ ε`` with ``δ_k ~ N(0, τ²)``, σ = 1.35 (the within-form SD of the RW± logit α̂⁺ off
  its bounds at the design below); 2,000 studies a cell (seed 1).  It isolates the estimators.
* **RW±** (the design of docs/prompt-forms.md's MLE figure): RW± (α⁺ = α⁻ = 0.5, β = 5), 10
  subjects × 96 trials a form, each form shifting α⁺ by a Normal(0, τ) offset on the logit scale,
  per-subject MLE (2 starts), the between-form spread of the fitted logit α⁺ (a bound's estimate
  clipped 0.001 from it, :data:`~cogtestbed.studies.form_studies.BOUND_EPS`), on all
  subjects and on those off the bounds.  300 simulated 8-form studies per τ (seeds :data:`SEEDS`);
  K = 4 takes each study's forms 0–3 and 4–7 as two studies (600), K = 16 joins studies i and i + 150
  (150): forms and subjects are independent draws, so each is a study of that K.

Estimators (``cogtestbed.inference.form_effects``):

* ``ANOVA``: the default (:data:`~cogtestbed.inference.form_effects.FORM_SD_ESTIMATOR`), the one-way
  random-effects ANOVA with the within-form variance pooled (REML for balanced forms);
* ``DL``: DerSimonian–Laird on each form's own ``v_k = s_k²/n_k`` (the default before issue 47);
* ``REML v_k``: REML on those ``v_k`` (Viechtbauer 2005);
* ``median v_k``: the median-unbiased Q-profile estimate, Q(τ²) = median of χ²_{K−1} (Viechtbauer 2007).

Each row: mean bias ± MC SE with its 95 % interval, and the share of studies whose 95 % interval
excludes 0 (the default's F interval and the Q-profile interval) with its MC SE.

``python benchmarks/studies/form_sd_estimators.py --gaussian``  (about 1 min)
``python benchmarks/studies/form_sd_estimators.py --rw --cache DIR``  (about 0.55 CPU s a study, 1,500
studies; ``--cache`` keeps each τ's fitted values, so a re-run only re-estimates)
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from cogtestbed.inference.form_effects import (
    anova_interval,
    anova_tau2,
    dl_tau2,
    form_summaries,
    median_tau2,
    q_profile_interval,
    reml_tau2,
)
from cogtestbed.studies.form_studies import BOUND_EPS

FORMS, PER_FORM, SEEDS = 8, 10, {0.0: 43, 0.05: 46, 0.1: 47, 0.15: 42, 0.3: 44}
TAUS, KS = (0.0, 0.05, 0.1, 0.15, 0.3), (4, 8, 16)
#: the within-form SD of the Gaussian part: RW± logit α̂⁺ off its bounds at the design (measured 1.32–1.38)
SIGMA = 1.35
#: logit of α at BOUND_EPS from its bound: where an at-bound estimate lands
BOUND = math.log((1 - BOUND_EPS) / BOUND_EPS)

Estimator = Callable[[np.ndarray, np.ndarray, np.ndarray], float]
ESTIMATORS: dict[str, Estimator] = {
    "ANOVA (default)": lambda n, m, v: anova_tau2(n, m, v),
    "DL": lambda n, m, v: dl_tau2(m, v)[0],
    "REML v_k": lambda n, m, v: reml_tau2(m, v),
    "median v_k": lambda n, m, v: median_tau2(m, v),
}


def simulate(tau: float, studies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(logit α⁺ estimates, forms) of ``studies`` simulated RW± studies (one row each)."""
    from cogtestbed.environments.forms import FORM_COLUMN, FormDesign
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate as sim
    from cogtestbed.studies.form_studies import STUDY_STARTS, _unconstrained

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


def rw_studies(y: np.ndarray, f: np.ndarray, k: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The K-form studies made of the 8-form ones (module docstring)."""
    if k == FORMS:
        yield from zip(y, f, strict=True)
    elif k == FORMS // 2:
        for yi, fi in zip(y, f, strict=True):
            for part in (fi < k, fi >= k):
                yield yi[part], fi[part]
    else:
        half = len(y) // 2
        for i in range(half):
            yield np.concatenate([y[i], y[i + half]]), np.concatenate([f[i], f[i + half] + FORMS])


def gaussian_studies(k: int, tau: float, studies: int, rng: np.random.Generator,
                     ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    forms = np.repeat(np.arange(k), PER_FORM)
    for _ in range(studies):
        yield (tau * rng.standard_normal(k))[forms] + SIGMA * rng.standard_normal(k * PER_FORM), forms


def table(studies: Iterator[tuple[np.ndarray, np.ndarray]], tau: float) -> str:
    """One line per estimator: bias ± MC SE [95 % interval of the bias], and the intervals' share excluding 0."""
    est: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    excl_f, excl_q = [], []
    for y, f in studies:
        _ids, n, m, v = form_summaries(y, f)
        for name, fn in ESTIMATORS.items():
            est[name].append(math.sqrt(fn(n, m, v)))
        excl_f.append(anova_interval(n, m, v)[0] > 0)
        excl_q.append(q_profile_interval(m, v)[0] > 0)
    s = len(excl_f)
    lines = []
    for name, values in est.items():
        t = np.asarray(values)
        b, se = t.mean() - tau, t.std(ddof=1) / math.sqrt(s)
        lines.append(f"    {name:16s} mean {t.mean():.3f}  bias {b:+.3f} ± {se:.3f} [{b - 1.96 * se:+.3f}, "
                     f"{b + 1.96 * se:+.3f}]  share 0 {np.mean(t == 0):.2f}")
    for name, hits in (("F interval (default)", excl_f), ("Q-profile v_k", excl_q)):
        p = float(np.mean(hits))
        lines.append(f"    95% {name} excludes 0 in {p:.3f} ± {math.sqrt(p * (1 - p) / s):.3f}")
    return f"  ({s} studies)\n" + "\n".join(lines)


def rw_data(tau: float, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    seed = SEEDS[tau]
    path = None if cache is None else cache / f"forms_tau{tau:g}_n300_s{seed}.npz"
    if path is not None and path.exists():
        d = np.load(path)
        return d["y"], d["f"]
    y, f = simulate(tau, 300, seed)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, y=y, f=f)
    return y, f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gaussian", action="store_true", help="the Gaussian random-effects part")
    ap.add_argument("--rw", action="store_true", help="the RW± part")
    ap.add_argument("--studies", type=int, default=2000, help="Gaussian studies a cell")
    ap.add_argument("--taus", type=float, nargs="+", default=list(TAUS))
    ap.add_argument("--cache", type=Path, default=None)
    a = ap.parse_args()
    start = time.perf_counter()
    if a.gaussian:
        rng = np.random.default_rng(1)
        for k in KS:
            for tau in a.taus:
                print(f"Gaussian K = {k} forms x {PER_FORM} subjects, sigma {SIGMA}, true form SD {tau:g}:"
                      + table(gaussian_studies(k, tau, a.studies, rng), tau))
    if a.rw:
        for tau in a.taus:
            y, f = rw_data(tau, a.cache)
            off = np.abs(y) < BOUND - 1e-6
            print(f"RW+- true form SD {tau:g} (seed {SEEDS[tau]}): {np.mean(~off):.1%} of the estimates at a bound")
            for k in KS:
                print(f"  K = {k}, all estimates:" + table(rw_studies(y, f, k), tau))
                pairs = zip(rw_studies(y, f, k), rw_studies(off, f, k), strict=True)
                print(f"  K = {k}, off-bound estimates:" + table(((yi[o], fi[o]) for (yi, fi), (o, _) in pairs), tau))
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
