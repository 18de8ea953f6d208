"""Simulation with lapses: the batch path (native kernels, or lapses applied after the fact) vs the
step path, per experiment: CPU seconds (best of 3 after a warm-up) and byte identity of the tables.

Run: ``python benchmarks/bench_lapse_batch.py [--subjects 50] [--invalid 0.08] [--random 0.05]``.
Each experiment plays the conformance suite's quick design (``small_design``) with its last
declared agent at its default parameters.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_cpu_of  # noqa: E402

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.suite import small_design, table_bytes
from cogtestbed.lapse import Lapse  # noqa: E402
from cogtestbed.registry import experiment_names, get_experiment  # noqa: E402
from cogtestbed.simulation import simulate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument("--invalid", type=float, default=0.08)
    parser.add_argument("--random", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--experiments", nargs="*", default=None)
    args = parser.parse_args()
    lapse = Lapse(args.invalid, args.random)
    print(f"{'experiment':24s} {'agent':22s} {'batch s':>8s} {'step s':>8s} {'speed-up':>8s}  identical")
    for name in args.experiments or experiment_names():
        spec = get_experiment(name)
        agent = list(spec.agents)[-1]
        design = small_design(spec, CheckConfig())

        def run(method: str, spec: object = spec, agent: str = agent, design: object = design) -> object:
            return simulate(spec, agent, args.subjects, 1, lapse=lapse, method=method,  # type: ignore[arg-type]
                            design=design)  # type: ignore[arg-type]

        same = table_bytes(run("batch")) == table_bytes(run("step"))  # type: ignore[arg-type]
        batch = best_cpu_of(lambda: run("batch"), args.repeats)
        step = best_cpu_of(lambda: run("step"), args.repeats)
        print(f"{name:24s} {agent:22s} {batch:8.3f} {step:8.3f} {step / batch:7.1f}×  {same}", flush=True)


if __name__ == "__main__":
    main()
