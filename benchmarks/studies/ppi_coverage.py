"""Prediction-powered intervals on real people (``plan --mix``): coverage, width and people saved.

For each data set, each person's estimand is the label (computed once per person) and a predictor
predicts it.  Spektor's 282 (prospect theory's lambda) and Shahar's 554 (the hybrid model's w): each
person's MLE; ``model`` is the same model fitted on the person's first half of trials (a short
session: the fitted model's prediction), ``agent`` a random-parameter agent (the parameter drawn
uniformly over the model's search range, independent of the person).  Thoma's probability learning
(thoma2025problearn, the 483 records shipped; no experiment of the package models it): each
person's share of choices of the house the animal hid behind more often in their session (Thoma et
al.'s maximizing share); ``model`` is a Beta(1, 1)-Bernoulli model's posterior predictive of that
share from the person's first half of trials, ``agent`` a random agent choosing that house with a
probability drawn uniformly on (0, 1).  Then ``--reps`` times: ``--labelled`` people drawn at random
are the labelled set, the rest the unlabelled units (their predictions only); ppi_py's PPI++
interval of the mean (95 %) against the full sample's mean (its coverage), its width against the
people-only interval of the same labelled people, and the people it saves: realised, 1 - n / n_eff
with n_eff = n (classical width / PPI width)^2, beside the plan's prediction from the full sample's
PPI correlation (1 - n / n_eff, n_eff = n (n + N) / (n + (1 - rho^2) N), Broska et al.).
Monte-Carlo SEs over the resamples.  A row whose ``--labelled`` is below the estimand's Cochran
minimum (25 x skewness^2 of the people's values, :func:`cogtestbed.planning.kinds.mix.mix.min_people`;
what ``plan --mix`` refuses) prints that refusal instead.

    nice .venv/bin/python benchmarks/studies/ppi_coverage.py                      # three data sets, 1,000 reps
    nice .venv/bin/python benchmarks/studies/ppi_coverage.py --data-sets spektor --labelled 170
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
    "thoma": ("thoma2025problearn", None, None, "p_max"),
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
def thoma_choices() -> Any:
    """Thoma's trials: one row per choice (``person``, ``trial``, ``chose_max``: the choice was the house the
    animal hid behind more often in that person's session), from the transcript's feedback sentences."""
    import re

    import pandas as pd

    from cogtestbed.data.psych201_table import transcript_table

    t = transcript_table(PSYCH201 / DATA_SETS["thoma"][0] / "prompts.jsonl.zip")
    t = t[t["choice"] >= 0].sort_values(["line", "choice"], kind="stable")
    feedback = t.groupby("line")["before"].shift(-1).fillna(t["after"])  # the text after each choice
    hiding = re.compile(r"At house '([^']*)', there is an animal hiding")
    found = [set(hiding.findall(str(text))) for text in feedback]
    rows = pd.DataFrame({"person": t["line"].to_numpy(), "trial": t["choice"].to_numpy(),
                         "chosen": t["chosen"].astype(str).to_numpy(), "found": found})
    counts = rows.explode("found").dropna(subset=["found"]).groupby(["person", "found"]).size()
    best = counts.groupby(level="person").idxmax().map(lambda key: key[1])
    rows["chose_max"] = (rows["chosen"] == rows["person"].map(best)).astype(float)
    return rows


def _thoma_labels() -> Any:
    rows = thoma_choices()
    return rows.groupby("person")["chose_max"].mean().rename("p_max")


def _thoma_predicted(predictor: str, seed: int) -> Any:
    import pandas as pd

    rows = thoma_choices()
    if predictor == "agent":
        persons = sorted(rows["person"].unique())
        return pd.Series(np.random.default_rng(seed).uniform(0, 1, len(persons)), index=persons, name="prediction")
    first = rows[rows["trial"] < rows.groupby("person")["trial"].transform("size") // 2]
    grouped = first.groupby("person")["chose_max"]
    return ((grouped.sum() + 1) / (grouped.size() + 2)).rename("prediction")  # Beta(1, 1) posterior predictive


@functools.cache
def labels(data_set: str) -> Any:
    """Each person's estimand (the MLE of the model's parameter; Thoma's maximizing share), computed once."""
    from cogtestbed.planning.kinds.mix.mix import person_estimates

    if data_set == "thoma":
        return _thoma_labels()
    _, model, table = _people(data_set)
    return person_estimates(model, table, str(DATA_SETS[data_set][3]))


@functools.cache
def predicted(data_set: str, predictor: str, seed: int) -> Any:
    """The predictor's prediction of each person's estimand (computed once)."""
    from cogtestbed.planning.kinds.mix.mix import predictions

    if data_set == "thoma":
        return _thoma_predicted(predictor, seed)
    _, model, table = _people(data_set)
    return predictions(predictor, model, table, str(DATA_SETS[data_set][3]), seed)


def row(data_set: str, predictor: str, n: int, reps: int, seed: int) -> dict[str, Any]:
    """One row of the table (module docstring)."""
    from cogtestbed.errors import InputError
    from cogtestbed.planning.kinds.mix.mix import (
        check_labelled,
        check_pairs,
        classical_interval,
        min_people,
        ppi_correlation,
        ppi_interval,
        predicted_effective_n,
    )

    y, yhat = check_pairs(labels(data_set), predicted(data_set, predictor, seed))
    units = y.size
    if not 2 < n < units:
        raise ValueError(f"--labelled must lie between 3 and {units - 1} for {data_set}")
    try:
        check_labelled(n, min_people(y))
    except InputError as exc:
        return {"data_set": data_set, "predictor": predictor, "reason": str(exc)}
    truth = float(np.mean(y))
    rng = np.random.default_rng(seed)
    cover, cover_classical, ratio, saved = [], [], [], []
    for _ in range(reps):
        order = rng.permutation(units)
        lab, unl = order[:n], order[n:]
        lo, hi = ppi_interval(y[lab], yhat[lab], yhat[unl])
        clo, chi = classical_interval(y[lab])
        cover.append(lo <= truth <= hi)
        cover_classical.append(clo <= truth <= chi)
        ratio.append((hi - lo) / (chi - clo))
        saved.append(1 - ratio[-1] ** 2)  # 1 - n / n_eff, n_eff = n (classical / PPI width)^2
    rho = ppi_correlation(y, yhat)  # the plan's: a pilot of every person
    saved_planned = [1 - n / predicted_effective_n(rho, n, units - n)]
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
    if args.record:
        record(" ".join(["python benchmarks/studies/ppi_coverage.py", *(a for a in sys.argv[1:] if a != "--record")]),
               printed)


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
