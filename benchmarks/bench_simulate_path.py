"""ns per trial of :func:`cogtestbed.simulation.simulate` at 400,000 trials, for every registered
experiment, one core (CPU time).

For each experiment (its first declared generating agent, default parameters and design) prints the
CPU ns per trial of the whole batch path (session sampling + uniforms + kernel + trial table) and of
its stages: drawing the sessions, the agent's numba kernel on pre-drawn sessions and uniforms, and
building the table.  Then the RW± kernel of instrumental learning in ns per trial on one core
(target ≤ 15 ns).  ``--rw-only`` prints only that figure (``--rw-repeats N`` times); ``--lanes
8,16,...`` also times private copies of the kernel compiled with each number of vector lanes
(:data:`SIM_LANES`), to show the scaling.  Timings are the best of N process-CPU-time runs (the
machine is shared), on one core (the process pins itself).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):  # one core for every figure (the kernel's and the full path's alike)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _timing import agent_of, best_cpu_of  # noqa: E402

from cogtestbed.registry import experiment_names, get_experiment  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402

#: Trials simulated per experiment (subjects = this / trials per subject, at least 10).
TARGET_TRIALS = 400_000
#: RW± kernel budget per trial on one core.
RW_NS_TARGET = 15.0
RW_SUBJECTS = 20_000
REPEATS = 5


def bench(name: str) -> tuple[str, int, float, float, float, float]:
    """(agent, trials, kernel s, full path s, sessions s, table s) of one experiment."""
    spec = get_experiment(name)
    agent = agent_of(spec)
    agent_cls = spec.agent(agent)
    design = spec.env_cls.design_cls()
    probe = simulate(spec, agent, 10, 0)
    n = max(10, TARGET_TRIALS * 10 // len(probe))
    env_rng, agent_rng = seed_streams(0)
    sessions = spec.env_cls.sample_sessions(design, n, env_rng)
    uniforms = agent_rng.random((n, spec.env_cls.max_steps(design) * agent_cls.draws_per_trial))
    params = subject_params(agent_cls, None, n)
    trials = len(simulate(spec, agent, n, 0))
    kernel_s = best_cpu_of(lambda: agent_cls.simulate_batch(design, sessions, params, uniforms), REPEATS)
    full_s = best_cpu_of(lambda: simulate(spec, agent, n, 0), REPEATS)
    sessions_s = best_cpu_of(lambda: spec.env_cls.sample_sessions(design, n, seed_streams(0)[0]), REPEATS)
    outcomes = agent_cls.simulate_batch(design, sessions, params, uniforms)
    table_s = best_cpu_of(lambda: spec.env_cls.trials_table(design, sessions, outcomes, agent=agent, params=params),
                          REPEATS)
    return agent, trials, kernel_s, full_s, sessions_s, table_s


def rw_ns_per_trial() -> float:
    """CPU ns per trial of the RW± kernel (instrumental learning, default parameters)."""
    spec = get_experiment("instrumental-learning")
    agent_cls = spec.agent("rw-pm")
    design = spec.env_cls.design_cls()
    env_rng, agent_rng = seed_streams(0)
    sessions = spec.env_cls.sample_sessions(design, RW_SUBJECTS, env_rng)
    uniforms = agent_rng.random((RW_SUBJECTS, spec.env_cls.max_steps(design)))
    params = subject_params(agent_cls, {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}, RW_SUBJECTS)
    seconds = best_cpu_of(lambda: agent_cls.simulate_batch(design, sessions, params, uniforms), 2 * REPEATS)
    return seconds / (RW_SUBJECTS * design.n_trials) * 1e9


def kernel_module(lanes: int) -> ModuleType:
    """A private, uncached copy of :mod:`cogtestbed.inference.instrumental` whose kernel has ``lanes`` lanes."""
    source = Path(importlib.util.find_spec("cogtestbed.inference.instrumental").origin).read_text()  # type: ignore[arg-type, union-attr]
    code, found = re.subn(r"^SIM_LANES = \d+$", f"SIM_LANES = {lanes}", source, flags=re.MULTILINE)
    if found != 1:
        raise RuntimeError("no 'SIM_LANES = <int>' line in cogtestbed.inference.instrumental: update the benchmark")
    module = ModuleType(f"_instrumental_lanes_{lanes}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(code.replace("cache=True", "cache=False"), f"<instrumental, {lanes} lanes>", "exec"), module.__dict__)
    return module


def rw_lane_scaling(lanes: list[int]) -> dict[int, float]:
    """CPU ns per trial of the RW± kernel compiled with each lane count (same sessions and draws)."""
    from cogtestbed.environments.instrumental import InstrumentalDesign, InstrumentalLearningEnv

    design = InstrumentalDesign()
    env_rng, agent_rng = seed_streams(0)
    sessions = InstrumentalLearningEnv.sample_sessions(design, RW_SUBJECTS, env_rng)
    uniforms = agent_rng.random((RW_SUBJECTS, InstrumentalLearningEnv.max_steps(design)))
    rates = [np.full(RW_SUBJECTS, v) for v in (0.4, 0.2, 5.0)]
    no_lapse = (np.zeros((0, uniforms.shape[1]), dtype=np.int8), np.zeros((0, uniforms.shape[1])))
    args: tuple[Any, ...] = (sessions.casino - 1, sessions.reward_draws, *rates, uniforms, design.n_casinos, *no_lapse)
    reference = get_experiment("instrumental-learning").agent("rw-pm").simulate_batch(
        design, sessions, {"alpha_pos": rates[0], "alpha_neg": rates[1], "beta": rates[2]}, uniforms)
    out = {}
    for n in lanes:
        kernel = kernel_module(n).simulate_rwpm_kernel
        if not np.array_equal(kernel(*args)[0], reference.action):
            raise AssertionError(f"the {n}-lane kernel chose differently")

        def run(k: Any = kernel) -> Any:
            return k(*args)

        out[n] = best_cpu_of(run, 2 * REPEATS) / (RW_SUBJECTS * design.n_trials) * 1e9
    return out


def print_rw(ns: float) -> None:
    print(f"RW± kernel (instrumental-learning, rw-pm), one core: {ns:.1f} ns/trial "
          f"(target <= {RW_NS_TARGET:.0f}) [{'OK' if ns <= RW_NS_TARGET else 'MISSED'}]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rw-only", action="store_true", help="only the RW± kernel figure")
    parser.add_argument("--rw-repeats", type=int, default=1, help="print the RW± figure this many times")
    parser.add_argument("--lanes", default="", help="comma-separated lane counts to time the RW± kernel with")
    parser.add_argument("--experiments", default="", help="comma-separated experiments to time (default: all)")
    args = parser.parse_args()
    if not args.rw_only:
        experiments_table([e for e in args.experiments.split(",") if e] or experiment_names())
    for _ in range(args.rw_repeats):
        print_rw(rw_ns_per_trial())
    if args.lanes:
        from cogtestbed.inference.instrumental import SIM_LANES

        for n, ns in rw_lane_scaling([int(v) for v in args.lanes.split(",")]).items():
            default = " (the package default)" if n == SIM_LANES else ""
            print(f"RW± kernel with {n:4d} lanes: {ns:5.1f} ns/trial{default}", flush=True)


def experiments_table(names: list[str]) -> None:
    """ns per trial of the whole simulate path and of its stages, for the named experiments."""
    print(f"{'experiment':24s} {'agent':18s} {'trials':>9s}   ns/trial: simulate  sessions  kernel  table")
    for name in names:
        agent, trials, kernel_s, full_s, sessions_s, table_s = bench(name)
        per = 1e9 / trials
        print(f"{name:24s} {agent:18s} {trials:9d} {full_s * per:19.1f} {sessions_s * per:9.1f} "
              f"{kernel_s * per:7.1f} {table_s * per:6.1f}", flush=True)


if __name__ == "__main__":
    main()
