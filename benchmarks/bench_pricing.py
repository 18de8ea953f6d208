"""CPU seconds of pricing two-step designs by their exact dry run (issue 40: the fixed search prices
every simulated design with ``run --dry-run``'s code, serially in the plan's process).

Prices a grid of days x runs-per-LLM designs of issue 40's two-LLM comparison (gpt-4o for both
groups, ``Pricer.exact``) in one process after one small untimed dry run (kernels loaded), and
prints each design's calls, prompt tokens and dollars with its CPU seconds, then the total.

    python benchmarks/bench_pricing.py [--days 20 40 100] [--runs 100 400] [--llms openai:gpt-4o openai:gpt-4o-mini]

``--llms``: the two groups' LLMs (default gpt-4o for both, one dry run serving both; two different
LLMs are priced from one playthrough of the sessions, each counted by its own client).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, nargs="+", default=[20, 40, 100])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--llms", nargs=2, default=["openai:gpt-4o", "openai:gpt-4o"])
    args = parser.parse_args()

    from cogtestbed.api.core import get_experiment
    from cogtestbed.environments.twostep import TwoStepDesign
    from cogtestbed.planning.pricing import Pricer

    exp = get_experiment("two-step")
    pricer = Pricer(exp, tuple(args.llms), seed=0)
    pricer.exact(TwoStepDesign(n_days=3), 2)  # numba kernels loaded, untimed
    total = 0.0
    for days in args.days:
        for runs in args.runs:
            t0 = time.process_time()
            cost = pricer.exact(TwoStepDesign(n_days=days), runs)
            cpu = time.process_time() - t0
            total += cpu
            print(f"{days:4d} days x {runs:5d} runs: {cost.calls:9,d} calls {cost.prompt_tokens:13,d} prompt tokens "
                  f"${cost.dollars:10.4f}  {cpu:6.2f} s CPU", flush=True)
    print(f"pricing: {total:.2f} s CPU")


if __name__ == "__main__":
    main()
