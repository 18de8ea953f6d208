"""Hierarchical (PyMC, non-centred) parameter recovery of the CogBench models at CogBench's design.

Each simulated subject is one synthetic agent playing ``runs`` sessions (CogBench "runs") of the
experiment's default design, with its own parameters drawn from the hierarchical prior (a new
population per rep, :func:`~cogtestbed.inference.hierarchical.sample_hierarchical_prior`); the
model is fitted by :func:`~cogtestbed.inference.hierarchical.fit_hierarchical` through the generic
study runner (:mod:`cogtestbed.studies.driver`, ``method="hierarchical"``).  Prints per
parameter: Pearson r, bias, RMSE (log scale for log-transformed parameters) and the coverage of the
central 50 % / 90 % posterior intervals, for the subject values and the population medians
(``{p}_pop``), plus the sampler diagnostics of every fit (max R-hat, min bulk ESS, divergences).

    python benchmarks/studies/hierarchical_recovery.py hybrid            # one model
    python benchmarks/studies/hierarchical_recovery.py all --reps 4      # all five
    python benchmarks/studies/hierarchical_recovery.py all --check       # one long fit each

``--check`` instead fits one data set per model (subjects scattered with SD 0.3 on the
unconstrained scale around :data:`MEDIANS`) with 2 chains × 1000 tuning + 1000 draws and prints
its diagnostics and population estimates: the "does it sample cleanly" figure.

Sizes are small on purpose (two shared cores); raise ``--reps``/``--subjects``/``--runs`` on a
quiet machine.  The same study from the shell: ``cogtestbed recover two-step --model hybrid
--method hierarchical --runs 10 --subjects 8 --reps 4 --draws 500 --chains 2``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.studies.driver import run_study, study_spec

#: model -> (experiment, subjects, runs per subject).  Runs are CogBench's sessions: two-step 20
#: trials, BART 45 balloons, horizon one game, urn task 2 judgements, discounting one staircase.
CONFIGS: dict[str, tuple[str, int, int]] = {
    "hybrid": ("two-step", 8, 10),
    "hyperbolic": ("temporal-discounting", 10, 5),
    "target": ("bart", 8, 2),
    "generalised-bayes": ("probabilistic-reasoning", 10, 20),
    "info-bonus": ("horizon", 10, 50),
}


#: Population medians of the ``--check`` data sets.
MEDIANS: dict[str, dict[str, float]] = {
    "hybrid": {"w": 0.6, "alpha": 0.5, "beta": 5.0, "lam": 0.5, "persev": 0.2},
    "hyperbolic": {"k": 0.2, "temperature": 0.05},
    "target": {"target_128": 40.0, "target_32": 10.0, "target_8": 3.0, "noise": 2.0},
    "generalised-bayes": {"beta_prior": 0.6, "beta_likelihood": 0.9, "bias": 0.0,
                          "noise_sd": 0.5},
    "info-bonus": {"bonus_h1": 0.0, "bonus_h6": 6.0, "temperature_h1": 4.0,
                   "temperature_h6": 8.0, "bias": 0.0},
}


def check(model: str, draws: int = 1000, chains: int = 2, seed: int = 0,
          subjects: int | None = None, runs: int | None = None) -> dict[str, Any]:
    """One long fit of a fixed-population data set: diagnostics and population estimates."""
    import warnings

    from cogtestbed.inference.hierarchical import ConvergenceWarning, fit_hierarchical
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import simulate_runs

    experiment, n_default, runs_default = CONFIGS[model]
    n, r = subjects or n_default, runs or runs_default
    exp = get_experiment(experiment)
    cog = exp.model(model)
    rng = np.random.default_rng(seed)
    params = {p.name: p.to_constrained(p.to_unconstrained(MEDIANS[model][p.name])
                                       + 0.3 * rng.normal(size=n)) for p in cog.parameters}
    trials = simulate_runs(exp, model, n, seed, params, exp.env_cls.design_cls(), r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = fit_hierarchical(cog, trials, draws=draws, tune=draws, chains=chains, seed=seed)
    post = fit.idata.posterior
    pop = {p: {"true": MEDIANS[model][p], "median": float(post[f"{p}_pop"].median()),
               "lo90": float(post[f"{p}_pop"].quantile(0.05)),
               "hi90": float(post[f"{p}_pop"].quantile(0.95))} for p in cog.parameters.names}
    return {"model": model, "subjects": n, "runs": r, "diagnostics": fit.diagnostics.as_dict(),
            "population": pop}


def study(model: str, reps: int = 4, subjects: int | None = None, runs: int | None = None,
          draws: int = 500, chains: int = 2, seed: int = 0, workers: int = 1) -> dict[str, Any]:
    """Run one model's recovery study; returns the summary plus per-fit diagnostics."""
    experiment, n_default, runs_default = CONFIGS[model]
    spec = study_spec(kind="recovery", experiment=experiment, models=(model,), method="hierarchical",
                     subjects=(subjects or n_default,), runs=(runs or runs_default,),
                     population=True, reps=reps,
                     seed=seed, draws=draws, tune=draws, chains=chains)
    start = time.perf_counter()
    result = run_study(spec, workers=workers)
    return {"model": model, "experiment": experiment, "subjects": spec.subjects[0],
            "runs": spec.runs[0], "reps": reps, "draws": draws, "chains": chains,
            "seconds": time.perf_counter() - start, "summary": result.summary,
            "diagnostics": diagnostics(result.table)}


def diagnostics(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Sampler diagnostics of each rep's fit (the study stores them on every row)."""
    per_rep = table.groupby("rep").first()
    return [{"rep": int(r), "max_rhat": round(float(row["max_rhat"]), 4),
             "min_ess_bulk": round(float(row["min_ess_bulk"])), "min_ess_tail": round(float(row["min_ess_tail"])),
             "divergences": int(row["divergences"]), "converged": bool(row["converged"]),
             "seconds": round(float(row["fit_seconds"]), 1)} for r, row in per_rep.iterrows()]


def print_report(res: dict[str, Any]) -> None:
    print(f"\n== {res['model']} ({res['experiment']}): {res['subjects']} subjects x {res['runs']} "
          f"runs, {res['reps']} reps, {res['chains']} chains x {res['draws']} draws, "
          f"{res['seconds']:.0f} s")
    for cell in res["summary"].values():
        rows = [{"parameter": k, **{c: v.get(c, np.nan) for c in
                                    ("r", "bias", "rmse", "coverage50", "coverage90", "n")},
                 "scale": v.get("scale", "natural")} for k, v in cell["parameters"].items()]
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("diagnostics per fit:", json.dumps(res["diagnostics"]))
    bad = [d["rep"] for d in res["diagnostics"] if not d["converged"]]
    print("every fit converged (R-hat, bulk and tail ESS, divergences)" if not bad
          else f"NOT converged: reps {bad} fail R-hat, bulk/tail ESS or divergence checks")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=[*CONFIGS, "all"])
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--subjects", type=int, default=None)
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true",
                    help="one long fit per model (2 chains x --draws 1000): diagnostics")
    a = ap.parse_args(argv)
    for model in (list(CONFIGS) if a.model == "all" else [a.model]):
        if a.check:
            print(json.dumps(check(model, draws=max(a.draws, 1000), chains=a.chains, seed=a.seed,
                                   subjects=a.subjects, runs=a.runs), default=float))
            continue
        res = study(model, a.reps, a.subjects, a.runs, a.draws, a.chains, a.seed)
        print_report(res)


if __name__ == "__main__":
    main()
