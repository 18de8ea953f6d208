"""T1b with its default learner and with the paper's CatBoost (App. E: depth 6, 1,000 iterations).

Simulates one subject of the paper design (200 contexts x 5 repetitions, π0 and the decision) and
times ``t1_nested`` with each backend (CPU and wall seconds, 500 context-bootstrap resamples, 4
placebos), printing the estimate, the interval and the decision.  CatBoost is the optional extra
``pip install 'cogtestbed[catboost]'``; without it the catboost row says so in one line.

    python benchmarks/studies/belief_t1b_catboost.py [--agent logit-rum] [--seed 4]
"""

from __future__ import annotations

import argparse
import time

from cogtestbed.environments.belief import BeliefDesign
from cogtestbed.inference import belief as B
from cogtestbed.simulation import simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", default="logit-rum")
    ap.add_argument("--param", action="append", default=["report_noise=0.05"])
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    params = {k: float(v) for k, v in (p.split("=", 1) for p in args.param)}
    design = BeliefDesign(variants=("pi0",), lie_node="none")
    table = B.canonical_table(simulate("belief-coherence", args.agent, 1, args.seed, params, design=design))[0]
    for backend in ("sklearn", "catboost"):
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            r = B.t1_nested(table, backend=backend, n_boot=500)
        except B.BeliefTableError as exc:
            print(f"{backend:8s} {exc}")
            continue
        print(f"{backend:8s} cpu {time.process_time() - cpu:5.1f} s  wall {time.perf_counter() - wall:5.1f} s  "
              f"improvement {r['estimate']:+.2f} % [{r['lo']:+.2f}, {r['hi']:+.2f}]  p {r['p_value']:.3f}  "
              f"reject {r['reject']}  (n {r['n']})", flush=True)


if __name__ == "__main__":
    main()
