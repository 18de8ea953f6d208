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

Each part timed alone, in a tight loop, writes into blocks the loop itself just freed (still in
the cache).  The path cannot do that: the table's 53 MB land in memory that the sessions, the
uniforms and the kernel used in between.  So the floor is measured twice:

* **alone**: each part at its best on its own (the lowest figure any implementation could reach);
* **in pipeline order**: the same parts run one after the other as the path runs them (draws, the
  session and uniform arrays written, the kernel, the table's inputs read once, every buffer of
  the table written), each stage's best of :data:`PIPELINE_REPEATS` passes, with the full path
  timed in the same loop.

The sum is a floor that no implementation of the same table from the same streams, through the
experiment contract (sessions, then the kernel's outcomes, then the table), can beat on this
machine; the ratio each allows is printed beside the measured one.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _timing import best_cpu_of  # noqa: E402
from bench_simulate_path import (  # noqa: E402
    RATIO_TARGET,
    REPEATS,
    TARGET_TRIALS,
    _column_buffers,
    _pcg64_outputs,
    write_fresh,
)

from cogtestbed.environments.pcg64 import cursors  # noqa: E402
from cogtestbed.heap import keep_freed_memory  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402

#: PCG64 outputs per game besides the rewards: forced-choice shuffle 3, condition 1, and five
#: bounded integers (horizon, arm, base mean, Δ, pattern) from 32-bit halves of an output.
OTHER_OUTPUTS_PER_GAME = 3 + 1 + 2.5
#: Passes of the pipeline-order floor (each stage's best, and the full path's, over these).
PIPELINE_REPEATS = 11


def pipeline_floor(stages: dict[str, Callable[[], Any]], full: Callable[[], Any]) -> tuple[dict[str, float], float]:
    """(each stage's best CPU seconds, the full path's best) over :data:`PIPELINE_REPEATS` passes that
    run the stages in order (what a stage returns stays alive until the pass ends), then the full path."""
    best = dict.fromkeys(stages, float("inf"))
    full_best = float("inf")
    for _ in range(PIPELINE_REPEATS):
        alive = []
        for name, stage in stages.items():
            start = time.process_time()
            alive.append(stage())
            best[name] = min(best[name], time.process_time() - start)
        del alive
        start = time.process_time()
        full()
        full_best = min(full_best, time.process_time() - start)
    return best, full_best


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
    print("  each part alone (best of its own loop):")
    print(f"    kernel                                      {kernel_s * per:6.1f}")
    print(f"    PCG64 outputs the streams need ({outputs / trials:.2f}/trial)    {draws_s * per:6.1f}")
    print(f"    table bytes into fresh memory ({table_bytes / trials:.0f} B/row)   {write_s * per:6.1f}")
    print(f"    floor (sum)                                 {floor * per:6.1f}  -> best ratio {kernel_s / floor:.2f}")
    print(f"    budget at ratio {RATIO_TARGET:.2f}                       {kernel_s / RATIO_TARGET * per:6.1f}")
    print(f"    full path now                               {full_s * per:6.1f}  -> ratio {kernel_s / full_s:.2f}")
    session_arrays = [np.asarray(v) for v in vars(sessions).values()]
    inputs = [*session_arrays, outcomes.action, outcomes.reward, outcomes.valid]
    made = [(a.shape, a.dtype) for a in (*session_arrays, uniforms)]
    stages: dict[str, Callable[[], Any]] = {
        "PCG64 outputs the streams need": lambda: _pcg64_outputs(cur, inc, outputs),
        "session and uniform arrays written": lambda: write_fresh(made),
        "kernel": lambda: agent_cls.simulate_batch(design, sessions, params, uniforms),
        "the table's inputs read once": lambda: sum(float(np.sum(a)) for a in inputs),
        "table bytes written": lambda: write_fresh([((size,), dtype) for size, dtype in buffers]),
    }
    best, full_best = pipeline_floor(stages, lambda: simulate(spec, agent, n, 0))
    in_order = sum(best.values())
    print(f"  in pipeline order (each stage's best of {PIPELINE_REPEATS} passes):")
    for name, seconds in best.items():
        print(f"    {name:44s}{seconds * per:6.1f}")
    print(f"    floor (sum)                                 {in_order * per:6.1f}  "
          f"-> best ratio {best['kernel'] / in_order:.2f}")
    unread = in_order - best["the table's inputs read once"]
    print(f"    floor without the reads                     {unread * per:6.1f}  "
          f"-> best ratio {best['kernel'] / unread:.2f}  (as if every read overlapped a write)")
    bare = best["kernel"] + best["PCG64 outputs the streams need"] + best["table bytes written"]
    print(f"    kernel + outputs + table bytes only          {bare * per:6.1f}  "
          f"-> best ratio {best['kernel'] / bare:.2f}  "
          "(as if the sessions cost no bytes and every read overlapped a write)")
    print(f"    budget at ratio {RATIO_TARGET:.2f}                       {best['kernel'] / RATIO_TARGET * per:6.1f}")
    print(f"    full path (same passes)                     {full_best * per:6.1f}  "
          f"-> ratio {best['kernel'] / full_best:.2f}, {in_order / full_best:.0%} of the floor's speed")


if __name__ == "__main__":
    main()
