"""Measured floor of the horizon task's full simulate path, one core (CPU time), next to the budget
that a full/kernel ratio of 0.40 leaves.

The floor is what the path cannot avoid, each part timed on its own at its best:

* the agent's kernel (the same call and trials as ``bench_simulate_path.py``);
* the PCG64 outputs the two seeded streams must produce: the environment's (per game 2·(4 + 6)
  reward uniforms, 3 for the forced-choice shuffle, 1 for the information condition, and five
  bounded integers from 32-bit halves of an output: 2.5) and the agent's uniforms, drawn in
  compiled code at the generator's throughput with nothing stored;
* writing the table's bytes (every buffer its columns hold, at their dtypes, all alive at once as
  in a table) into fresh memory.

The sum is a floor that no implementation of the same table from the same streams can beat on
this machine; the ratio it allows is printed beside the measured one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _timing import best_cpu_of  # noqa: E402
from bench_simulate_path import RATIO_TARGET, REPEATS, TARGET_TRIALS, _column_buffers, _pcg64_outputs  # noqa: E402

from cogtestbed.environments.pcg64 import cursors  # noqa: E402
from cogtestbed.heap import keep_freed_memory  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402

#: PCG64 outputs per game besides the rewards: forced-choice shuffle 3, condition 1, and five
#: bounded integers (horizon, arm, base mean, Δ, pattern) from 32-bit halves of an output.
OTHER_OUTPUTS_PER_GAME = 3 + 1 + 2.5


def main() -> None:
    keep_freed_memory()
    spec = get_experiment("horizon")
    agent = next(iter(spec.generators.values())).agent
    agent_cls = spec.agent(agent)
    design = spec.env_cls.design_cls()
    n = max(10, TARGET_TRIALS * 10 // len(simulate(spec, agent, 10, 0)))
    env_rng, agent_rng = seed_streams(0)
    sessions = spec.env_cls.sample_sessions(design, n, env_rng)
    steps = spec.env_cls.max_steps(design) * agent_cls.draws_per_trial
    uniforms = agent_rng.random((n, steps))
    params = subject_params(agent_cls, None, n)
    outcomes = agent_cls.simulate_batch(design, sessions, params, uniforms)
    table = spec.env_cls.trials_table(design, sessions, outcomes, agent=agent, params=params)
    trials = len(table)
    kernel_s = best_cpu_of(lambda: agent_cls.simulate_batch(design, sessions, params, uniforms), REPEATS)
    outputs = int(n * (2 * design.n_trials + OTHER_OUTPUTS_PER_GAME + steps)) // 4 * 4
    cur, inc, _ = cursors(np.random.default_rng(0), [outputs // 4] * 4)
    draws_s = best_cpu_of(lambda: _pcg64_outputs(cur, inc, outputs), REPEATS)
    buffers = _column_buffers(table)
    table_bytes = sum(size * dtype.itemsize for size, dtype in buffers)

    def write_columns() -> list[np.ndarray]:
        columns = []
        for size, dtype in buffers:  # all alive at once, as a table's columns are
            columns.append(np.empty(size, dtype=dtype))
            columns[-1].fill(1)
        return columns

    write_s = best_cpu_of(write_columns, REPEATS)
    full_s = best_cpu_of(lambda: simulate(spec, agent, n, 0), REPEATS)
    per = 1e9 / trials
    floor = kernel_s + draws_s + write_s
    print(f"horizon ({agent}), {trials} trials ({n} games), ns/trial:")
    print(f"  kernel                                        {kernel_s * per:6.1f}")
    print(f"  PCG64 outputs the streams need ({outputs / trials:.2f}/trial)      {draws_s * per:6.1f}")
    print(f"  table bytes into fresh memory ({table_bytes / trials:.0f} B/row)     {write_s * per:6.1f}")
    print(f"  floor (sum)                                   {floor * per:6.1f}  -> best ratio {kernel_s / floor:.2f}")
    print(f"  budget at ratio {RATIO_TARGET:.2f}                         {kernel_s / RATIO_TARGET * per:6.1f}")
    print(f"  full path now                                 {full_s * per:6.1f}  -> ratio {kernel_s / full_s:.2f}")


if __name__ == "__main__":
    main()
