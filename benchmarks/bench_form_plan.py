"""Time of ``plan --forms 1,2,4,8`` against today's fixed plan of the same target (issue 42's
target: at most 2x).  Runs each command ``--repeats`` times alternately (after one untimed round
that warms the numba and bytecode caches) and prints the median wall and CPU seconds (the process
and its children) of each, and their ratios.

Run: ``python benchmarks/bench_form_plan.py --repeats 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

BASE = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--power", "0.8",
        "--llm", "openai:gpt-4o-mini", "--workers", "2", "--json"]
COMMANDS = {"fixed": BASE,
            "forms": [*BASE, "--forms", "1,2,4,8", "--form-sd", "alpha_pos=0.15", "--base", "alpha_pos=0.5",
                      "--base", "alpha_neg=0.5"]}


def timed(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cogtestbed", *args], check=True, capture_output=True, env=os.environ)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    for cmd in COMMANDS.values():
        timed(cmd)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in COMMANDS}
    for _ in range(args.repeats):
        for name, cmd in COMMANDS.items():
            times[name].append(timed(cmd))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    print(json.dumps({"wall_s": {k: round(v[0], 1) for k, v in med.items()},
                      "cpu_s": {k: round(v[1], 1) for k, v in med.items()},
                      "ratio_wall": round(med["forms"][0] / med["fixed"][0], 2),
                      "ratio_cpu": round(med["forms"][1] / med["fixed"][1], 2), "repeats": args.repeats}))


if __name__ == "__main__":
    main()
