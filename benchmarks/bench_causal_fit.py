"""Benchmark: thesis-style CBN fit of one 240-row agent including task-level LOOCV.

Target: ≤ 0.2 s per agent.  Prints the best-of-n wall clock for the 3p scheme, the 4p
scheme and ``auto`` (both fitted, the winner selected), each with its 11 LOOCV refits.  The
reference is causAIign's torch L-BFGS fit (R = 5 restarts + 11 × 2 LOOCV refits per scheme).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402

from cogtestbed.environments.causal import CausalDesign  # noqa: E402
from cogtestbed.inference.causal import fit_best  # noqa: E402
from cogtestbed.simulation import simulate  # noqa: E402

TARGET_S = 0.2


def main() -> None:
    trials = simulate("collider", "cbn", 1, seed=3, params={"b": 0.2, "m1": 0.7, "m2": 0.7,
                      "pc1": 0.5, "pc2": 0.5, "noise_sd": 0.2}, design=CausalDesign())
    task = trials["task_index"].to_numpy()
    y = trials["action"].astype(float).to_numpy() / 100
    assert len(y) == 240
    for scheme in ("3p", "4p", "auto"):
        secs = best_of(lambda s=scheme: fit_best(task, y, s), repeats=20)  # type: ignore[misc]
        ok = "OK" if secs <= TARGET_S else "MISSED"
        print(f"CBN fit {scheme:>4} + task-LOOCV, 240 rows: {secs * 1e3:7.2f} ms  "
              f"(target <= {TARGET_S * 1e3:.0f} ms: {ok})")


if __name__ == "__main__":
    main()
