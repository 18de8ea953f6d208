"""Type-I error of the two-group comparison of belief coherence's T1a (kNN CMI) and T3 (prompt RMSE)
at zero difference (issue 67): both groups' subjects simulated from one agent setting, the declared
comparison (:data:`cogtestbed.inference.belief.COMPARISONS`: a two-sided permutation test of the two
groups' mean per-subject estimate) run on each simulated study, its rejection rate printed with its
Monte-Carlo SE and the bar α + 2 MC SE.

    .venv/bin/python benchmarks/studies/belief_compare_size.py            # 1,000 studies per row
    .venv/bin/python benchmarks/studies/belief_compare_size.py --sims 200 --workers 2

Each row is ``cogtestbed power belief-coherence --metric M --compare S S --runs R --sims N`` (the
study a plan simulates, at a difference of zero); the agent is the calibrated logit RUM with report
noise 0.05 (reports not exact, so T3's RMSE is not identically 0), 20 contexts × 2 repetitions,
π0 and the three loss variants (T3 reads them).
"""

from __future__ import annotations

import argparse
import math
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: no BLAS threads spinning
    os.environ.setdefault(_var, "1")

import cogtestbed as ct  # noqa: E402

#: (metric, runs per group, agent setting of both groups) of each row.
ROWS = (("t1_cmi", 5, "logit-rum:report_noise=0.05"), ("t3", 5, "logit-rum:report_noise=0.05"),
        ("t1_cmi", 5, "leak:leak=0.2"))
DESIGN = {"n_contexts": 20, "n_reps": 2, "variants": "pi0,mse,abs,bayes", "lie_node": "none"}


def row(metric: str, runs: int, setting: str, sims: int, level: float, seed: int, workers: int) -> dict[str, object]:
    """One row: the rejection rate at zero difference, its MC SE and whether it is within α + 2 MC SE."""
    start = time.perf_counter()
    study = ct.power("belief-coherence", metric=metric, compare=(setting, setting), runs=[runs], sims=sims,
                     design=[f"{k}={v}" for k, v in DESIGN.items()], level=level, seed=seed, workers=workers)
    cell = study.summary["cells"][0]
    rate, n = float(cell["power"]), int(cell["sims"])
    se = math.sqrt(level * (1 - level) / n)  # MC SE at the nominal level (the bar's)
    return {"metric": metric, "runs": runs, "setting": setting, "sims": n, "rate": rate, "mc_se": se,
            "bar": level + 2 * se, "ok": rate <= level + 2 * se, "untestable": int(cell.get("untestable", 0)),
            "seconds": time.perf_counter() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--level", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print(f"{'metric':8} {'runs':>4} {'setting':30} {'sims':>5} {'type I':>7} {'MC SE':>6} {'bar':>6}  ok   s")
    for metric, runs, setting in ROWS:
        r = row(metric, runs, setting, args.sims, args.level, args.seed, args.workers)
        print(f"{r['metric']:8} {r['runs']:>4} {r['setting']:30} {r['sims']:>5} {r['rate']:7.3f} {r['mc_se']:6.4f} "
              f"{r['bar']:6.3f}  {'yes' if r['ok'] else 'NO':3} {r['seconds']:4.0f}", flush=True)


if __name__ == "__main__":
    main()
