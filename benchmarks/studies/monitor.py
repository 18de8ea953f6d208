"""Anytime-valid monitoring beside the fixed design at equal power (issue 74): per plan question, the betting
e-process looked at after every subject, its futility cap, power, expected subjects and dollars under the
effect and the null, and its null rejection rate with a one-sided 95 % upper bound, each with its MC SE.

Each case is ``ct.plan(..., monitor=True)`` at the fixed design the full plan chose (its subjects and
trials given as single points, so the fixed search is not repeated; the full searches are in docs/plan.md),
with the group-sequential design of 3 looks beside it where the planner makes one (one LLM; a model
difference between two LLMs is planned as a fixed design):
the fixed plan's power at that design, then :func:`~cogtestbed.validation.design.monitor_kind.monitor_section`
(simulated subjects reused across studies: each study a random ordering of one of 10 disjoint sub-pools).

    .venv/bin/python benchmarks/studies/monitor.py                 # both cases, 2,000 studies per hypothesis
    .venv/bin/python benchmarks/studies/monitor.py --case one --studies 500
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import cogtestbed as ct  # noqa: E402
from cogtestbed.validation.design.monitor_kind import design_table  # noqa: E402

#: The plan questions the issue names: (label, experiment, keywords of ct.plan at the full plan's design).
CASES = {
    "one": ("RW± optimism bias 0.2, one LLM (gpt-4o-mini)", "instrumental-learning",
            {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "llm": ["openai:gpt-4o-mini"], "subjects": "26",
             "trials": "96", "looks": 3, "seq_sims": 300}),
    "two": ("RW± optimism bias difference 0.4 between two LLMs (gpt-4o, gpt-4o-mini)", "instrumental-learning",
            {"model": "rw-pm", "effect": {"optimism_bias": 0.4}, "llm": ["openai:gpt-4o", "openai:gpt-4o-mini"],
             "subjects": "14", "trials": "96"}),
    "metric": ("CogBench temporal-discounting score, hyperbolic k 0.005 vs 0.8, between two LLMs (gpt-4o, "
               "gpt-4o-mini)", "temporal-discounting",
               {"metric": "score", "compare": ("hyperbolic:k=0.005", "hyperbolic:k=0.8"),
                "llm": ["openai:gpt-4o", "openai:gpt-4o-mini"], "runs": "22"}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), action="append", help="default: every case")
    ap.add_argument("--studies", type=int, default=2000, help="simulated studies per hypothesis")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    for key in args.case or sorted(CASES):
        label, experiment, kw = CASES[key]
        start = time.perf_counter()
        plan = ct.plan(experiment, monitor=True, monitor_sims=args.studies, seed=args.seed, workers=args.workers,
                       mc_se=0.03, **kw)
        print(f"## {label} ({experiment}; {time.perf_counter() - start:.0f} s)")
        for line in design_table(plan.payload):
            print(line)
        print()


if __name__ == "__main__":
    main()
