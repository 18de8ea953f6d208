"""risky-choice figures (issue 52 item 2), printed as JSON lines.

``human-mle``: the 282 Psych-201 Spektor et al. (2024) participants fitted one by one (prospect
theory, MLE): median λ with its 95 % order-statistic interval (all, and per experiment), medians of α
and θ, the share with λ > 1, and the participants whose AIC prefers prospect theory to expected value.

``human-hierarchical``: the hierarchical prospect-theory fit (generic non-centred PyMC model) of one
experiment's participants (``--study exp2``, or ``all``): the population medians with 90 % intervals,
max R-hat, min bulk/tail ESS, divergences and wall time.

``recovery``: the prospect-theory decider's parameters recovered by MLE at 98 (Spektor Exp. 2), 196
and 392 trials, parameters drawn from the model's priors: r, bias and RMSE per parameter (the
package's recovery study, with identification judged).  ``recovery-plain``: the same without
identification profiles, with Spearman's r and the estimates at a bound.

    python benchmarks/studies/risky_choice.py human-mle
    python benchmarks/studies/risky_choice.py human-hierarchical --study exp2
    python benchmarks/studies/risky_choice.py recovery --subjects 100 --reps 2 --workers 1
    python benchmarks/studies/risky_choice.py recovery-plain --subjects 300
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.risky import MODELS, median_interval
from cogtestbed.registry import get_experiment

SPEKTOR = Path(__file__).resolve().parents[3] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"


def _interval(values: pd.Series) -> dict[str, float]:
    med, lo, hi = median_interval(values.to_numpy(dtype=np.float64))
    return {"median": round(med, 3), "lo95": round(lo, 3), "hi95": round(hi, 3), "n": int(values.notna().sum())}


def human_mle(table: pd.DataFrame) -> None:
    """Per-participant MLE of prospect theory and expected value (see the module docstring)."""
    t0 = time.perf_counter()
    pt = MODELS["prospect-theory"].fit_mle(table).set_index("subject")
    ev = MODELS["expected-value"].fit_mle(table).set_index("subject")
    study = table.groupby("subject")["study"].first()
    pt["study"] = study
    pt["pt_better_aic"] = pt["aic"] < ev.loc[pt.index, "aic"]
    for name, rows in [("all", pt), *sorted(pt.groupby("study"))]:
        print(json.dumps({"fit": "mle prospect-theory", "study": name, "lambda": _interval(rows["lambda"]),
                          "alpha": _interval(rows["alpha"]), "theta": _interval(rows["theta"]),
                          "share_lambda_above_1": round(float((rows["lambda"] > 1).mean()), 3),
                          "share_pt_better_aic_than_ev": round(float(rows["pt_better_aic"].mean()), 3),
                          "at_lambda_bound": int(((rows["lambda"] <= 1e-6) | (rows["lambda"] >= 10 - 1e-6)).sum()),
                          "not_converged": int((~rows["converged"].astype(bool)).sum())}), flush=True)
    print(json.dumps({"fit": "mle", "seconds": round(time.perf_counter() - t0, 1)}), flush=True)


def human_hierarchical(table: pd.DataFrame, study: str, draws: int, tune: int, chains: int) -> None:
    """Hierarchical prospect theory on one experiment's participants (or all)."""
    from cogtestbed.inference.hierarchical import fit_hierarchical

    rows = table if study == "all" else table[table["study"] == study]
    model = MODELS["prospect-theory"]
    fit = fit_hierarchical(model, rows, draws=draws, tune=tune, chains=chains, seed=0, log_likelihood=False)
    post = fit.idata.posterior
    pop = {p: [round(float(post[f"{p}_pop"].quantile(q)), 3) for q in (0.05, 0.5, 0.95)]
           for p in model.parameters.names}
    diag = {k: v for k, v in fit.diagnostics.as_dict().items() if k != "problems"}
    print(json.dumps({"fit": "hierarchical prospect-theory", "study": study,
                      "subjects": int(rows["subject"].nunique()), "trials": len(rows),
                      "population_median_90ci": pop, "diagnostics": diag}, default=str), flush=True)


def recovery(subjects: int, reps: int, trials: tuple[int, ...], seed: int, workers: int) -> None:
    """MLE recovery of the prospect-theory decider at the given session lengths (prior-drawn parameters)."""
    from cogtestbed.studies.driver import run_study, study_spec

    spec = study_spec(kind="recovery", experiment="risky-choice", models=("prospect-theory",),
                      subjects=(subjects,), trials=trials, reps=reps, seed=seed)
    res = run_study(spec, workers=workers)
    for cell in res.summary.values():
        print(json.dumps({"study": "recovery prospect-theory (MLE, prior-drawn)", "trials": cell["n_trials"],
                          "subjects": subjects, "reps": reps,
                          **{k: _recovered(v) for k, v in cell["parameters"].items()}}), flush=True)
    print(json.dumps({"study": "recovery", "seconds": round(res.seconds, 1)}), flush=True)


def recovery_plain(subjects: int, trials: tuple[int, ...], seed: int) -> None:
    """Plain MLE recovery (no identification profiles): prior-drawn prospect-theory deciders, one fit
    each; Pearson r on the log scale (as the recovery study scores log-transformed parameters) and
    Spearman's rank r, with the estimates at a bound counted."""
    from scipy.stats import pearsonr, spearmanr

    from cogtestbed.conformance.suite import prior_draws
    from cogtestbed.environments.risky import RiskyDesign
    from cogtestbed.simulation import simulate

    model = MODELS["prospect-theory"]
    spec = get_experiment("risky-choice")
    for t in trials:
        rng = np.random.default_rng(seed)
        true = prior_draws(model.parameters, subjects, rng)
        table = simulate(spec, "prospect-theory", subjects, seed, params=true, design=RiskyDesign(repetitions=t // 98))
        fits = model.fit_mle(table).sort_values("subject")
        row: dict[str, Any] = {"study": "plain MLE recovery prospect-theory (prior-drawn)", "trials": t,
                               "subjects": subjects}
        for p in model.parameters:
            est = fits[p.name].to_numpy(dtype=np.float64)
            at = (est <= p.lower + 1e-6) | (est >= p.upper - 1e-6)
            row[p.name] = {"r_log": round(float(pearsonr(np.log(true[p.name]), np.log(est)).statistic), 3),
                           "spearman": round(float(spearmanr(true[p.name], est).statistic), 3),
                           "at_bound": int(at.sum())}
        print(json.dumps(row), flush=True)


def _recovered(entry: dict[str, Any]) -> dict[str, Any]:
    """r, bias and RMSE (log scale) over all subjects, and r over the identified estimates with their count."""
    out: dict[str, Any] = {m: round(float(entry[m]), 3) for m in ("r", "bias", "rmse")}
    if entry.get("r_identified") is not None:
        out.update(r_identified=round(float(entry["r_identified"]), 3), n_identified=entry["n_identified"],
                   n=entry["n"], not_identified=entry["unidentified_reasons"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("human-mle", "human-hierarchical", "recovery", "recovery-plain"))
    parser.add_argument("--study", default="exp2", help="exp1, exp2, exp3 or all (human-hierarchical)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--trials", default="98,196,392")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="local processes of the recovery study")
    args = parser.parse_args()
    if args.what == "recovery-plain":
        recovery_plain(args.subjects, tuple(int(t) for t in args.trials.split(",")), args.seed)
        return
    if args.what == "recovery":
        recovery(args.subjects, args.reps, tuple(int(t) for t in args.trials.split(",")), args.seed, args.workers)
        return
    table = get_experiment("risky-choice").importer("psych201").load(SPEKTOR)
    if args.what == "human-mle":
        human_mle(table)
    else:
        human_hierarchical(table, args.study, args.draws, args.tune, args.chains)


if __name__ == "__main__":
    main()
