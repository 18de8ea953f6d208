"""Issue 46's power figures: a power curve with common random numbers and its MC SE, and a model
parameter's difference between two LLMs planned and priced.

``--curve`` (default): temporal discounting's CogBench score between two hyperbolic settings, the
runs per setting 5, 10, 20, 40 sharing their random numbers (``cogtestbed power``'s curve since issue
46): the declared pair (k 0.005 vs 0.8) and the pair declared before (k 0.05 vs 0.3, whose scores
nearly coincide: its 24-simulation curve read .208, .083, 0 at 10, 20, 40 runs).
``--two-llm``: ``cogtestbed plan temporal-discounting --model hyperbolic --effect k=DIFF --llm
openai:gpt-4o --llm openai:gpt-4o-mini`` through ``ct.plan``: the chosen design, power ± MC SE, price
per LLM.  ``--type-i``: the two-group test's rejection rate at a zero difference ± MC SE.
``--sims N`` simulated studies per size (curve; default 200), ``--workers`` (default 1).
"""

from __future__ import annotations

import argparse
import math
import time

import cogtestbed as ct

LOW_HIGH = ("hyperbolic:k=0.005,temperature=0.05", "hyperbolic:k=0.8,temperature=0.05")
OLD_PAIR = ("hyperbolic:k=0.05,temperature=0.05", "hyperbolic:k=0.3,temperature=0.05")


def curve(compare: tuple[str, str], runs: tuple[int, ...], sims: int, workers: int) -> None:
    """One power curve over ``runs`` with each size's power ± MC SE."""
    start = time.perf_counter()
    study = ct.power("temporal-discounting", metric="score", compare=compare, runs=runs, sims=sims, seed=0,
                     workers=workers)
    print(f"score, {compare[0]} vs {compare[1]}, {sims} sims per size (common random numbers), "
          f"{time.perf_counter() - start:.0f} s wall")
    for c in study.summary["cells"]:
        print(f"  {c['runs']:>3} runs: power {c['power']:.3f} ± {c['mc_se']:.3f} MC SE, mean difference "
              f"{c['mean_difference']:+.3f}")


def two_llm(effect: float, subjects: str, workers: int, fit: str) -> None:
    """The two-LLM plan of hyperbolic k's difference: design, power, price."""
    start = time.perf_counter()
    plan = ct.plan("temporal-discounting", llm=("openai:gpt-4o", "openai:gpt-4o-mini"), model="hyperbolic",
                   effect={"k": effect}, subjects=subjects, seed=0, workers=workers, fit=fit)
    p = plan.to_dict()
    cost, power = p["cost"], p["power"]
    print(f"{p['target']['what']}: chosen {p['chosen']['design']} ({p['chosen']['sessions_per_llm']} sessions per "
          f"LLM); power {power['rate']:.3f} ± {power['mc_se']:.3f} MC SE ({power['sims']} sims); "
          f"{cost['calls']:,} calls, ${cost['dollars']:.2f} = "
          + " + ".join(f"${r['estimated_cost_usd']:.2f} ({r['llm']})" for r in cost["per_llm"])
          + f"; {time.perf_counter() - start:.0f} s wall")
    for row in p["frontier"]:
        print(f"  frontier: {row['design']}: power {row['power']:.3f} ± {row['mc_se']:.3f}, ${row['dollars']:.2f}")


def type_i(sims: int, workers: int) -> None:
    """The two-group test of hyperbolic k at a zero difference (20 subjects per group)."""
    study = ct.power("hyperbolic", effect={"k": 0.0}, experiment="temporal-discounting", groups=2, subjects=(20,),
                     sims=sims, seed=0, workers=workers)
    c = study.summary["cells"][0]
    print(f"two-group Welch test of log k at a zero difference, 20 subjects per group: rejection rate "
          f"{c['type_i_error']:.3f} ± {math.sqrt(c['type_i_error'] * (1 - c['type_i_error']) / sims):.3f} MC SE "
          f"({sims} sims; alpha 0.05)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--two-llm", action="store_true")
    ap.add_argument("--type-i", action="store_true")
    ap.add_argument("--effect", type=float, default=0.1)
    ap.add_argument("--subjects", default=None)
    ap.add_argument("--fit", default="mle")
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    if args.two_llm:
        two_llm(args.effect, args.subjects, args.workers, args.fit)
    elif args.type_i:
        type_i(args.sims, args.workers)
    else:
        curve(LOW_HIGH, (5, 10, 20, 40), args.sims, args.workers)
        curve(OLD_PAIR, (10, 20, 40), 24, args.workers)
        curve(OLD_PAIR, (10, 20, 40), args.sims, args.workers)


if __name__ == "__main__":
    main()
