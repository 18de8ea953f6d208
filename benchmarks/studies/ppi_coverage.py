"""Prediction-powered intervals on real people (``plan --mix``): coverage, width and people saved.

For each shipped Psych-201 data set read by an experiment, each person's MLE of one parameter is the
label (fitted once per person), and a predictor predicts it: ``model`` (the same model fitted on the
person's first half of trials, a short session) or ``agent`` (a random-parameter agent: the parameter
drawn uniformly over the model's search range, independent of the person).  Then ``--reps`` times:
``--labelled`` people drawn at random are the labelled set, the rest the unlabelled units (their
predictions only); ppi_py's PPI++ interval of the mean (95 %) against the full sample's mean (its
coverage), its width against the people-only interval of the same labelled people, and the people it
saves: realised, 1 - n / n_eff with n_eff = n (classical width / PPI width)^2, beside the plan's
prediction from the labelled people's own PPI correlation (1 - n / n_eff, n_eff = n (n + N) / (n +
(1 - rho^2) N), Broska et al.).  Monte-Carlo SEs over the resamples.

    nice .venv/bin/python benchmarks/studies/ppi_coverage.py                      # both data sets, 1,000 reps
    nice .venv/bin/python benchmarks/studies/ppi_coverage.py --data-sets spektor --predictors agent --reps 200

thoma2025problearn is read by no experiment of the package (no model to fit per person): its row says so.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

PSYCH201 = Path(__file__).resolve().parents[3] / "shared" / "data" / "psych201"
#: name -> (Psych-201 folder, experiment, model, estimand)
DATA_SETS: dict[str, tuple[str, str | None, str | None, str | None]] = {
    "spektor": ("spektor2024lossaversion", "risky-choice", "prospect-theory", "lambda"),
    "shahar": ("shahar2019twosteptask", "two-step", "hybrid", "w"),
    "thoma": ("thoma2025problearn", None, None, None),
}
PREDICTORS = ("model", "agent")


@functools.cache
def _people(data_set: str) -> tuple[Any, Any, Any]:
    """(experiment, model, trial table) of a data set, read once."""
    from cogtestbed.api.core import get_experiment, read_table

    folder, experiment, model, _ = DATA_SETS[data_set]
    exp = get_experiment(str(experiment))
    table, _ = read_table(exp, PSYCH201 / folder / "prompts.jsonl.zip")
    return exp, exp.model(str(model)), table


@functools.cache
def labels(data_set: str) -> Any:
    """Each person's MLE of the data set's estimand (fitted once)."""
    from cogtestbed.planning.kinds.mix.mix import person_estimates

    _, model, table = _people(data_set)
    return person_estimates(model, table, str(DATA_SETS[data_set][3]))


@functools.cache
def predicted(data_set: str, predictor: str, seed: int) -> Any:
    """The predictor's prediction of each person's estimand (fitted once)."""
    from cogtestbed.planning.kinds.mix.mix import predictions

    _, model, table = _people(data_set)
    return predictions(predictor, model, table, str(DATA_SETS[data_set][3]), seed)


def row(data_set: str, predictor: str, n: int, reps: int, seed: int) -> dict[str, Any]:
    """One row of the table (module docstring)."""
    from cogtestbed.planning.kinds.mix.mix import (
        check_pairs,
        classical_interval,
        ppi_correlation,
        ppi_interval,
        predicted_effective_n,
    )

    if DATA_SETS[data_set][1] is None:
        return {"data_set": data_set, "predictor": predictor,
                "reason": f"{DATA_SETS[data_set][0]} is read by no experiment: no per-person model fit"}
    y, yhat = check_pairs(labels(data_set), predicted(data_set, predictor, seed))
    units = y.size
    if not 2 < n < units:
        raise ValueError(f"--labelled must lie between 3 and {units - 1} for {data_set}")
    truth = float(np.mean(y))
    rng = np.random.default_rng(seed)
    cover, cover_classical, ratio, saved, saved_planned = [], [], [], [], []
    for _ in range(reps):
        order = rng.permutation(units)
        lab, unl = order[:n], order[n:]
        lo, hi = ppi_interval(y[lab], yhat[lab], yhat[unl])
        clo, chi = classical_interval(y[lab])
        cover.append(lo <= truth <= hi)
        cover_classical.append(clo <= truth <= chi)
        ratio.append((hi - lo) / (chi - clo))
        saved.append(1 - ratio[-1] ** 2)  # 1 - n / n_eff, n_eff = n (classical / PPI width)^2
        rho = ppi_correlation(y[lab], yhat[lab])
        saved_planned.append(1 - n / predicted_effective_n(rho, n, units - n))
    se = float(np.sqrt(np.mean(cover) * (1 - np.mean(cover)) / reps))
    return {"data_set": data_set, "estimand": DATA_SETS[data_set][3], "predictor": predictor, "people": units,
            "labelled": n, "unlabelled": units - n, "ppi_corr_full": ppi_correlation(y, yhat),
            "coverage": float(np.mean(cover)), "coverage_se": se, "coverage_classical": float(np.mean(cover_classical)),
            "width_ratio": float(np.mean(ratio)), "saved": float(np.mean(saved)),
            "saved_se": float(np.std(saved, ddof=1) / np.sqrt(reps)), "saved_planned": float(np.mean(saved_planned)),
            "reps": reps}


def line(r: dict[str, Any]) -> str:
    if "reason" in r:
        return f"{r['data_set']:<9}{'':<9}{r['predictor']:<8}{r['reason']}"
    return (f"{r['data_set']:<9}{r['estimand']:<9}{r['predictor']:<8}{r['people']:>6}{r['labelled']:>5}"
            f"{r['ppi_corr_full']:>8.3f}{100 * r['coverage']:>8.1f} ± {100 * r['coverage_se']:.1f}"
            f"{100 * r['coverage_classical']:>8.1f}{r['width_ratio']:>8.3f}"
            f"{100 * r['saved']:>8.1f} ± {100 * r['saved_se']:.1f}{100 * r['saved_planned']:>9.1f}")


HEADER = (f"{'data set':<9}{'estimand':<9}{'pred.':<8}{'people':>6}{'n':>5}{'rho':>8}{'PPI cov %':>14}"
          f"{'cls cov':>8}{'width':>8}{'saved %':>14}{'planned':>9}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-sets", default=",".join(DATA_SETS))
    ap.add_argument("--predictors", default=",".join(PREDICTORS))
    ap.add_argument("--labelled", type=int, default=50, help="people drawn as the labelled set")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--record", action="store_true",
                    help="append the table to benchmarks/studies/results/ppi-coverage.json (recorded.py prints it)")
    args = ap.parse_args()
    printed = [HEADER]
    print(HEADER)
    for data_set in args.data_sets.split(","):
        for predictor in args.predictors.split(","):
            r = row(data_set, predictor, args.labelled, args.reps, args.seed)
            printed.append(line(r))
            print(printed[-1], flush=True)
            if "reason" in r:
                break
    if args.record:
        record(" ".join(["python benchmarks/studies/ppi_coverage.py", *sys.argv[1:]]), printed)


def record(command: str, printed: list[str]) -> None:
    """Add one run's printed table to the results file ``ppi-coverage`` (earlier runs' kept before it)."""
    import json

    sys.path.insert(0, str(Path(__file__).parent))
    from recorded import RESULTS, write

    path = RESULTS / "ppi-coverage.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    commands = [*filter(None, old.get("command", "").split("; then ")), command]
    write("ppi-coverage", "; then ".join(commands), old.get("tables", []), output=[*old.get("output", []), *printed])


if __name__ == "__main__":
    main()
