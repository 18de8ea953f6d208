"""Restless-bandit studies at CogBench's design (80 trials per run, 10 runs per agent).

* :func:`metric_validity` — CogBench's metacognition (adjusted QSR, mean over runs) against the
  Kalman agent's confidence noise σ_c (sensitivity) and confidence gain κ (calibration), and
  accuracy / mean reward against its inverse temperature β: means, SD across replications (the
  noise at 10 runs), monotonicity.
* :func:`power_curve` — probability of detecting a metacognition difference between two agents
  (Welch t-test on per-run adjusted QSR, α = .05) against the number of runs.

No model is fitted for this task (CogBench scores it descriptively).
Run all: ``python -m cogtestbed.validation.restless -o study_output/restless``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.restless import cogbench_metrics
from cogtestbed.simulation import simulate
from cogtestbed.validation.metric_studies import monotonicity, power_point, run_studies, save, welch_p

RUNS = 10  # CogBench's default num_runs
BASE = {"drift_sd": 4.0, "beta": 0.3, "confidence_gain": 1.0, "confidence_bias": 0.0, "confidence_noise": 0.5}
AGENT = "kalman"
SWEEPS = (
    ("confidence_noise", (0.0, 0.5, 1.0, 2.0, 3.0, 5.0), "metacognition"),
    ("confidence_gain", (0.1, 0.25, 0.5, 1.0, 2.0, 4.0), "metacognition"),
    ("beta", (0.0, 0.05, 0.1, 0.2, 0.4, 0.8), "accuracy"),
    ("beta", (0.0, 0.05, 0.1, 0.2, 0.4, 0.8), "performance"),
)


def _metrics(params: dict[str, float], runs: int, seed: int) -> dict[str, Any]:
    return dict(cogbench_metrics(simulate("restless-bandit", AGENT, runs, seed, params)))


def metric_validity(reps: int = 50, runs: int = RUNS, seed: int = 0, out_dir: Any = None) -> dict[str, Any]:
    rows = []
    for k, (which, grid, metric) in enumerate(SWEEPS):
        for i, value in enumerate(grid):
            for r in range(reps):
                m = _metrics({**BASE, which: value}, runs, seed * 1_000_000 + k * 100_000 + i * 1000 + r)
                rows.append({"parameter": which, "metric": metric, "value": value, "rep": r,
                             "estimate": m["metrics"][metric]})
    table = pd.DataFrame(rows)
    save(table, out_dir, "restless_metric_validity")
    out: dict[str, Any] = {"runs": runs, "reps": reps}
    for (which, metric), g in table.groupby(["parameter", "metric"]):
        s = g.groupby("value")["estimate"].agg(["mean", "std"]).reset_index()
        out[f"{metric}_vs_{which}"] = {"by_value": s.round(4).to_dict(orient="records"),
                                       **monotonicity(s["value"], s["mean"])}
    return out


def power_curve(a: float = 0.5, b: float = 2.0, runs: tuple[int, ...] = (5, 10, 20, 40), sims: int = 200,
                seed: int = 3, out_dir: Any = None) -> dict[str, Any]:
    rows = []
    for n in runs:
        def detect(rng: np.random.Generator, n: int = n) -> bool:
            s = int(rng.integers(2**31))
            ra = [x["metacognition"] for x in _metrics({**BASE, "confidence_noise": a}, n, s)["per_run"]]
            rb = [x["metacognition"] for x in _metrics({**BASE, "confidence_noise": b}, n, s + 1)["per_run"]]
            return welch_p(np.array(ra), np.array(rb)) < 0.05

        rows.append({"runs": n, **power_point(detect, sims, seed * 100 + n)})
    table = pd.DataFrame(rows)
    save(table, out_dir, "restless_power")
    return {"confidence_noise_a": a, "confidence_noise_b": b, "curve": table.to_dict(orient="records")}


def main(argv: list[str] | None = None) -> None:
    run_studies(__doc__, argv, lambda a: {
        "metric_validity": lambda: metric_validity(reps=a.reps, out_dir=a.output),
        "power": lambda: power_curve(sims=a.sims, out_dir=a.output),
    }, reps=50, sims=200)


if __name__ == "__main__":
    main()
