"""Horizon-task studies at CogBench's design (1000 games pooled per agent).

* :func:`metric_validity` — CogBench's directed_exploration against the info-bonus agent's
  horizon-6 bonus A_6 (A_1 = 0) and random_exploration against its horizon-6 temperature T_6
  (T_1 fixed): mean, SD across replications (the noise at 1000 games), monotonicity, and the
  share of fits CogBench would have scored 0 (non-convergence).
* :func:`parameter_recovery` — info-bonus MLE on each agent's 1000 pooled games: r / bias / RMSE.
* :func:`power_curve` — probability of detecting a difference in directed exploration between two
  agents (z-test on the two pooled logit coefficients, α = .05) against the number of games.

Run all: ``python -m cogtestbed.validation.horizon -o study_output/horizon``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.inference.horizon import MODELS, cogbench_metrics
from cogtestbed.simulation import simulate
from cogtestbed.validation.metric_studies import monotonicity, power_point, recovery_stats, run_studies, save

RUNS = 1000  # CogBench's default num_runs (games)
BASE = {"bonus_h1": 0.0, "bonus_h6": 6.0, "temperature_h1": 5.0, "temperature_h6": 8.0, "bias": 0.0}
AGENT = "info-bonus"


def _metrics(params: dict[str, float], runs: int, seed: int) -> dict[str, Any]:
    result = cogbench_metrics(simulate("horizon", AGENT, runs, seed, params))
    return {**result["metrics"], "flags": result["flags"]}


def metric_validity(bonuses: tuple[float, ...] = (0.0, 2.5, 5.0, 10.0, 15.0, 20.0),
                    temperatures: tuple[float, ...] = (5.0, 7.5, 10.0, 15.0, 20.0, 30.0), reps: int = 20,
                    runs: int = RUNS, seed: int = 0, out_dir: Any = None) -> dict[str, Any]:
    rows = []
    for which, grid, metric in (("bonus_h6", bonuses, "directed_exploration"),
                                ("temperature_h6", temperatures, "random_exploration")):
        for i, value in enumerate(grid):
            for r in range(reps):
                offset = 500 if metric == "random_exploration" else 0
                m = _metrics({**BASE, which: value}, runs, seed * 1_000_000 + i * 1000 + r + offset)
                failed = any(f.startswith(metric) for f in m["flags"])
                rows.append({"parameter": which, "value": value, "rep": r, "metric": metric,
                             "estimate": m[metric], "scored_zero": failed})
    table = pd.DataFrame(rows)
    save(table, out_dir, "horizon_metric_validity")
    out: dict[str, Any] = {"runs": runs, "reps": reps}
    for which, g in table.groupby("parameter"):
        s = g.groupby("value").agg(mean=("estimate", "mean"), sd=("estimate", "std"),
                                   zero_share=("scored_zero", "mean")).reset_index()
        out[str(which)] = {"by_value": s.round(4).to_dict(orient="records"), **monotonicity(s["value"], s["mean"])}
    return out


def parameter_recovery(reps: int = 30, runs: int = RUNS, seed: int = 1, out_dir: Any = None) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    model = MODELS[AGENT]
    rows = []
    for r in range(reps):
        truth = {"bonus_h1": rng.uniform(-5, 5), "bonus_h6": rng.uniform(0, 20),
                 "temperature_h1": rng.uniform(2, 10), "temperature_h6": rng.uniform(2, 20),
                 "bias": rng.uniform(-3, 3)}
        t = simulate("horizon", AGENT, runs, seed * 10_000 + r, truth)
        fit = model.fit_mle(t.assign(session=t["subject"], subject=0)).iloc[0]
        m = cogbench_metrics(t)["metrics"]
        rows.append({**{f"true_{k}": v for k, v in truth.items()}, **{f"mle_{k}": float(fit[k]) for k in truth},
                     "directed_exploration": m["directed_exploration"],
                     "random_exploration": m["random_exploration"], "converged": bool(fit["converged"])})
    table = pd.DataFrame(rows)
    save(table, out_dir, "horizon_recovery")
    out: dict[str, Any] = {"reps": reps, "runs": runs, "converged": float(table["converged"].mean())}
    for k in BASE:
        out[f"mle_{k}"] = recovery_stats(table[f"true_{k}"], table[f"mle_{k}"])
    d_true = (table["true_bonus_h6"] / table["true_temperature_h6"]
              - table["true_bonus_h1"] / table["true_temperature_h1"])
    r_true = 1 / table["true_temperature_h1"] - 1 / table["true_temperature_h6"]
    out["directed_exploration_vs_bonus_contrast"] = recovery_stats(d_true, table["directed_exploration"])
    out["random_exploration_vs_temperature_contrast"] = recovery_stats(r_true, table["random_exploration"])
    return out


def power_curve(a: float = 5.0, b: float = 10.0, runs: tuple[int, ...] = (250, 500, 1000, 2000),
                sims: int = 100, seed: int = 3, out_dir: Any = None) -> dict[str, Any]:
    rows = []
    for n in runs:
        def detect(rng: np.random.Generator, n: int = n) -> bool:
            s = int(rng.integers(2**31))
            ma = _metrics({**BASE, "bonus_h6": a}, n, s)
            mb = _metrics({**BASE, "bonus_h6": b}, n, s + 1)
            se = np.hypot(ma["directed_exploration_ci"], mb["directed_exploration_ci"]) / 1.96
            if not np.isfinite(se):
                return False
            return bool(2 * stats.norm.sf(abs((mb["directed_exploration"] - ma["directed_exploration"]) / se)) < 0.05)

        rows.append({"runs": n, **power_point(detect, sims, seed * 100 + n)})
    table = pd.DataFrame(rows)
    save(table, out_dir, "horizon_power")
    return {"bonus_h6_a": a, "bonus_h6_b": b, "curve": table.to_dict(orient="records")}


def main(argv: list[str] | None = None) -> None:
    run_studies(__doc__, argv, lambda a: {
        "metric_validity": lambda: metric_validity(reps=a.reps, out_dir=a.output),
        "parameter_recovery": lambda: parameter_recovery(reps=max(a.reps, 10), out_dir=a.output),
        "power": lambda: power_curve(sims=a.sims, out_dir=a.output),
    }, reps=20, sims=100)


if __name__ == "__main__":
    main()
