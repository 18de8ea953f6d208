"""Issue 71 item 1: an amortised per-subject statistic for ``plan --looks auto``, measured against its MLE.

``plan --looks auto`` fits ~240,000 simulated subjects by the coarse-start MLE of ``seqfit.AUTO_FIT`` (a 4-node a
parameter start grid, BFGS from its 2 best starts, at most 50 iterations each): about 0.35 CPU ms of a 96-trial
RW± subject's ~0.5 ms (docs/benchmarks.md), which keeps the plan at ~5x its fixed plan.  The issue names an
*amortised point estimator trained once per model and design and validated by simulation* as one way out.  This
study measures the simplest such estimator that works for every family without new code per family:

* **features**: the subject's NLL at the nodes of the model's start grid with ``g`` nodes a parameter (what the
  coarse-start MLE computes before its BFGS starts), as the normalised likelihood weights
  ``w = exp(-(NLL - min NLL))`` over the grid, the log-likelihood differences clipped at -30 (over 30), and the
  grid posterior mean of the effect ``w . c`` (``c``: the effect at each node, on the test's scale);
* **estimator**: a ridge regression (penalty 1e-3 x training subjects) of the subject's *true* effect on those
  features, trained on subjects simulated at population effects from -3 to 3 times the planned one in steps of 0.5
  (:data:`TRAIN_MULTIPLES`), those whose medians stay strictly inside the parameters' bounds (:func:`feasible`), the
  plan's population otherwise (its medians, its between-subject SD), seeds of their own;
* **validation**: ``n`` fresh subjects under the null and ``n`` under the planned effect, each estimated by the
  amortised estimator, by the coarse-start MLE (``AUTO_FIT``) and by the model's full fitter; per estimator the
  CPU ms a subject (features and regression, or the fit), the null and effect means on the test's scale and the
  standardized effect (difference of the means over the pooled SD, what a t-test's power rests on: the subjects
  needed for a given power scale with its inverse square), with the amortised minus ``AUTO_FIT`` difference's
  paired bootstrap SE (the same subjects), the null mean in SDs (a one-sample t-test's statistic drifts by it
  times the square root of the subjects under the null: a statistic far from 0 there needs the plan's simulated
  calibration to mean anything) and how far the null mean moves (in SDs) when the between-subject SD doubles.

Nothing here is in the product: the study says whether the estimator would pay (CPU and subjects) before it is
built into the plan's statistic, ``run --plan``'s looks and plan.json.

    python benchmarks/studies/amortised_statistic.py [--subjects 1500] [--train 22000] [--grid 3 4] \
        [--families rw-pm,prospect-theory,...] [--record amortised-statistic]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: Population effects the estimator is trained at, as multiples of the planned effect (the study's choice: symmetric
#: about the null, so that the regression's shrinkage pulls toward the null and not toward the effect).
TRAIN_MULTIPLES = np.linspace(-3.0, 3.0, 13)
#: Ridge penalty per training subject (the study's choice; the features' clip is ``seqamortised.CLIP``, 30).
RIDGE = 1e-3
BOOTSTRAP = 400
#: The between-subject SD of the second null population, times the plan's (``seqauto.WIDE_SD_FACTOR``'s 2): how far
#: each statistic's null mean moves when the population is not the one it was calibrated (or trained) on.
WIDE = 2.0


@dataclass(frozen=True)
class Family:
    experiment: str
    model: str
    effect: str
    size: float
    trials: int | None = None


#: The families measured: the documented plans' effects (RW± optimism bias 0.2, prospect theory's lambda 0.5)
#: and one parameter effect of each other family's headline model, sized so that its MLE's standardized effect
#: is moderate (the study's choice).
FAMILIES: dict[str, Family] = {
    "rw-pm": Family("instrumental-learning", "rw-pm", "optimism_bias", 0.2, 96),
    "prospect-theory": Family("risky-choice", "prospect-theory", "lambda", 0.5),
    "hyperbolic": Family("temporal-discounting", "hyperbolic", "k", 0.05),
    "magnitude-linear": Family("magnitude", "linear", "w", 0.1),
    "two-step-hybrid": Family("two-step", "hybrid", "w", 0.2),
    "generalised-bayes": Family("probabilistic-reasoning", "generalised-bayes", "beta_prior", 0.3),
}


def spec_of(f: Family, size: float) -> Any:
    from cogtestbed.studies.driver import study_spec

    trials = {"trials": (f.trials,)} if f.trials else {}
    return study_spec(kind="power", experiment=f.experiment, models=(f.model,), effect=f.effect, effect_size=size,
                      seed=0, **trials)


def simulate(f: Family, size: float, n: int, seed: int,
             sd_factor: float = 1.0) -> tuple[Any, Any, dict[str, np.ndarray]]:
    """(spec, trial table, true parameters) of ``n`` subjects at population effect ``size`` (the between-subject SD
    times ``sd_factor``)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import power_parameters
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model

    exp = get_experiment(f.experiment)
    model = exp.model(f.model)
    spec = spec_of(f, size)
    spec = spec.model_copy(update={"sd_between": spec.sd_between * sd_factor})
    params_seq, sim_seq = np.random.SeedSequence(seed).spawn(2)
    true = power_parameters(spec, model, n, np.random.default_rng(params_seq))
    table = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design_for_trials(exp, f.trials, {}), 1)
    return spec, table, true


def feasible(f: Family) -> list[float]:
    """The :data:`TRAIN_MULTIPLES` whose population effect keeps every median strictly inside its parameter's bounds
    (a median on a bound, e.g. a discount rate k = 0, puts every subject's effect at about -690 on a log scale, and
    such subjects would dominate the regression's squared loss)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import population_medians

    model = get_experiment(f.experiment).model(f.model)
    out = []
    for mult in TRAIN_MULTIPLES:
        try:
            medians = population_medians(spec_of(f, float(mult * f.size)), model)
        except InputError:
            continue
        if all(_inside(p.lower, p.upper, medians[p.name]) for p in model.parameters):
            out.append(float(mult))
    return out


def _inside(lower: float, upper: float, value: float) -> bool:
    """``value`` in the open interval (lower, upper), away from each finite bound by 1e-9 of its scale."""
    return bool(value > lower + 1e-9 * max(1.0, abs(lower)) and value < upper - 1e-9 * max(1.0, abs(upper)))


class Amortised:
    """The grid-profile features of one family and grid, and the ridge regression trained on them."""

    def __init__(self, f: Family, g: int) -> None:
        from cogtestbed.planning.kinds.sequential.seqfit import SubjectFit
        from cogtestbed.registry import get_experiment
        from cogtestbed.studies.model_studies import one_sample_null, one_sample_values
        from cogtestbed.studies.study_data import fitted_model

        self.f = f
        self.model = get_experiment(f.experiment).model(f.model)
        spec = spec_of(f, f.size)
        self.fitter = SubjectFit(g, 1).fitter(fitted_model(spec, self.model))
        self.grid = self.fitter.start_grid()
        self.null = one_sample_null(spec, self.model)
        names = list(self.model.parameters.names)
        self.c = np.asarray(one_sample_values(spec, self.model, {p: self.grid[:, i] for i, p in enumerate(names)},
                                              self.null), float)
        self.beta: np.ndarray | None = None
        #: the training's population effects, as multiples of the planned one (:func:`feasible`, set by :meth:`train`)
        self.multiples: list[float] = []

    def features(self, table: Any, n: int) -> np.ndarray:
        """Each subject's design row (NaN for a subject without a valid trial): the product's features
        (``seqamortised.design_rows``)."""
        from cogtestbed.planning.kinds.sequential.seqamortised import design_rows

        nll = np.full((n, len(self.grid)), np.nan)
        for key, d in self.fitter.subject_data(table).items():
            if self.fitter.n_observations(d):
                nll[int(str(key))] = self.fitter.nll_many(self.grid, d)
        with np.errstate(invalid="ignore"):
            return design_rows(nll, self.c)

    def train(self, subjects: int, seed: int) -> float:
        """Fit the regression on ``subjects`` simulated subjects; its training R².  The effect at each grid node is
        first clipped into the training truths' 0.1-99.9 % range (a node at a bound can sit at -inf on a log scale:
        hyperbolic k = 0)."""
        from cogtestbed.studies.model_studies import one_sample_values

        self.multiples = feasible(self.f)
        per = max(1, subjects // len(self.multiples))
        batches = []
        for j, mult in enumerate(self.multiples):
            spec, table, true = simulate(self.f, float(mult * self.f.size), per, seed + j)
            batches.append((table, np.asarray(one_sample_values(spec, self.model, true, self.null), float)))
        truths = np.concatenate([y for _, y in batches])
        lo, hi = np.quantile(truths[np.isfinite(truths)], [0.001, 0.999])
        self.c = np.clip(self.c, lo, hi)
        xs, ys = [], []
        for table, y in batches:
            x = self.features(table, per)
            keep = np.isfinite(x).all(axis=1) & np.isfinite(y)
            xs.append(x[keep])
            ys.append(y[keep])
        x, y = np.vstack(xs), np.concatenate(ys)
        self.beta = np.linalg.solve(x.T @ x + RIDGE * len(y) * np.eye(x.shape[1]), x.T @ y)
        return float(1 - np.var(y - x @ self.beta) / np.var(y))

    def estimate(self, table: Any, n: int) -> np.ndarray:
        assert self.beta is not None
        return np.asarray(self.features(table, n) @ self.beta, float)


def standardized(v0: np.ndarray, v1: np.ndarray) -> float:
    v0, v1 = v0[np.isfinite(v0)], v1[np.isfinite(v1)]
    return float((v1.mean() - v0.mean()) / math.sqrt((v0.var() + v1.var()) / 2))


def paired_se(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], seed: int) -> float:
    """Bootstrap SE of standardized(a) - standardized(b), resampling subjects (the same for both)."""
    rng = np.random.default_rng(seed)
    n0, n1 = len(a[0]), len(a[1])
    diffs = []
    for _ in range(BOOTSTRAP):
        i0, i1 = rng.integers(0, n0, n0), rng.integers(0, n1, n1)
        diffs.append(standardized(a[0][i0], a[1][i1]) - standardized(b[0][i0], b[1][i1]))
    return float(np.std(diffs))


def measure(name: str, f: Family, n: int, train: int, grids: Sequence[int]) -> list[list[str]]:
    """The table's rows for one family."""
    from cogtestbed.planning.kinds.sequential.seqfit import AUTO_FIT, FULL_FIT
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts

    est: dict[str, list[np.ndarray]] = {}
    cpu: dict[str, float] = {}
    amortised = {g: Amortised(f, g) for g in grids}
    r2 = {g: a.train(train, 7000) for g, a in amortised.items()}
    model, null = amortised[grids[0]].model, amortised[grids[0]].null
    for k, (size, sd) in enumerate(((0.0, 1.0), (f.size, 1.0), (0.0, WIDE))):
        spec, table, _ = simulate(f, size, n, 9100 + k, sd)
        first = table[table["subject"] == 0]
        for fit in (FULL_FIT, AUTO_FIT):  # kernels compiled or loaded before any clock
            subject_contrasts(spec, model, first, 1, null, fit=fit)
        for a in amortised.values():
            a.estimate(first, 1)
        runs: list[tuple[str, Any]] = [("full MLE", FULL_FIT), ("auto MLE", AUTO_FIT), *[(f"amortised {g}", a) for g, a
                                                                                         in amortised.items()]]
        for label, how in runs:
            start = time.process_time()
            if isinstance(how, Amortised):
                values = how.estimate(table, n)
            else:  # every set against the plan's null, as the amortised estimator is (not the wider population's)
                values = subject_contrasts(spec, model, table, n, null, fit=how)
            est.setdefault(label, []).append(values)
            cpu[label] = cpu.get(label, 0.0) + (time.process_time() - start) / (3 * n)
    auto = est["auto MLE"][:2]
    d_auto = standardized(*auto)
    rows = []
    for label, (v0, v1, wide) in est.items():
        d = standardized(v0, v1)
        sd = math.sqrt((np.nanvar(v0) + np.nanvar(v1)) / 2)
        se = "" if label == "auto MLE" else f"{d - d_auto:+.3f} ± {paired_se((v0, v1), (auto[0], auto[1]), 11):.3f}"
        g = int(label.split()[-1]) if label.startswith("amortised") else None
        grid = (f"{len(amortised[g].grid):,} nodes, R² {r2[g]:.2f}, trained {amortised[g].multiples[0]:g} to "
                f"{amortised[g].multiples[-1]:g}x" if g else "")
        rows.append([name, label, grid, f"{1000 * cpu[label]:.3f}", f"{np.nanmean(v0):+.4f}", f"{np.nanmean(v1):+.4f}",
                     f"{d:.3f}", se, f"{(d_auto / d) ** 2:.2f}", f"{np.nanmean(v0) / sd:+.3f}",
                     f"{(np.nanmean(wide) - np.nanmean(v0)) / sd:+.3f}"])
    return rows


COLUMNS = ["family", "estimator", "features", "CPU ms a subject", "null mean", "effect mean", "standardized effect",
           "minus auto MLE's (± SE)", "subjects vs auto MLE", "null mean in SDs",
           "null mean moved by SD x 2 (in SDs)"]


def record_tables(rows: list[list[str]]) -> list[dict[str, Any]]:
    """The record's two tables of the printed rows (:data:`COLUMNS`), each narrow enough to print as a table: every
    estimator's figures, and the amortised estimators' features (nodes, training R² and span)."""
    keep = [i for i, c in enumerate(COLUMNS) if c != "features"]
    short = ["family", "estimator", "ms", "null", "effect", "d", "d - auto (SE)", "n/auto", "null/SD", "SD x 2"]
    features = [[r[0], r[1], *r[2].split(", ")] for r in rows if r[2]]
    return [{"title": "each estimator on the same subjects: ms, CPU ms a subject; null and effect, the means on the "
                      "test's scale; d, the standardized effect; d - auto, its difference to auto MLE's (paired "
                      "bootstrap SE); n/auto, the subjects it needs for auto MLE's power, as a share; null/SD, the "
                      "null mean in SDs; SD x 2, how far (in SDs) the null mean moves when the between-subject SD "
                      "doubles",
             "columns": short, "rows": [[r[i] for i in keep] for r in rows]},
            {"title": "the amortised estimators' features", "columns": ["family", "estimator", "grid", "training R²",
                                                                        "trained at"], "rows": features}]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=1500, help="validation subjects under each hypothesis")
    ap.add_argument("--train", type=int, default=22000, help="training subjects")
    ap.add_argument("--grid", type=int, nargs="+", default=[3, 4], help="start-grid nodes a parameter")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"comma-separated, of {', '.join(FAMILIES)}")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    o = ap.parse_args(argv)
    names = [x for x in o.families.split(",") if x]
    if o.subjects < 10 or o.train < 110 or any(g < 2 for g in o.grid) or not set(names) <= set(FAMILIES):
        print(f"give --subjects >= 10, --train >= 110, --grid >= 2, families of {', '.join(FAMILIES)}",
              file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            got = measure(name, FAMILIES[name], o.subjects, o.train, o.grid)
            for r in got:
                print("  ".join(r), flush=True)
            rows += got
    print(f"(load {load:.1f} at the start)")
    if o.record:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import recorded

        notes = (f"{o.subjects} subjects a family under the null, the effect and the null with the between-subject SD "
                 f"x {WIDE:g}; the amortised estimators trained on {o.train} subjects at population effects from -3 to "
                 "3 times the planned one where the parameter bounds allow (the features table gives the span); "
                 f"load {load:.1f} at the start (CPU ms measured under that load)")
        command = " ".join(["python benchmarks/studies/amortised_statistic.py", *(argv or sys.argv[1:])])
        recorded.write(o.record, command, record_tables(rows), notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
