"""Horizon-task MLE recovery at 92 games a subject: r beside the spread of the true values it is computed on.

Runs ``ct.recover("horizon", "info-bonus", subjects=30, runs=92, reps=1, seed=1, workers=1)`` (as ``cogtestbed
recover info-bonus -e horizon --runs 92 --subjects 30 --reps 1 --seed 1 --workers 1``) with true parameters drawn
from the hierarchical prior (one population: its SD on a parameter can be near 0) and with ``sampler="uniform"``
(independent draws over the prior's central 90 %), and prints per parameter r, the true values' SD, the
estimates' typical error (1.4826·MAD of the errors) and the r that error leaves (``r_ceiling``, where the SD is
below the error).  A low r with a tiny true SD says nothing about the fit.

    nice .venv/bin/python benchmarks/studies/horizon_recovery_spread.py --games 92
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import cogtestbed as ct


def measure(games: int = 92, subjects: int = 30, seed: int = 1, samplers: tuple[str, ...] = ("prior", "uniform")
            ) -> dict[str, Any]:
    """Per sampler and parameter: r, true SD, typical error and r ceiling (None where the SD exceeds the error)."""
    out: dict[str, Any] = {}
    for sampler in samplers:
        study = ct.recover("horizon", "info-bonus", subjects=subjects, runs=games, reps=1, seed=seed, workers=1,
                           sampler=sampler)
        params = next(iter(study.summary.values()))["parameters"]
        out[sampler] = {name: {k: v.get(k) for k in ("r", "true_sd", "typical_error", "r_ceiling", "scale")}
                        for name, v in params.items()}
    return {"games": games, "subjects": subjects, "seed": seed, "recovery": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=92)
    ap.add_argument("--subjects", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(json.dumps(measure(a.games, a.subjects, a.seed), indent=1))


if __name__ == "__main__":
    main()
