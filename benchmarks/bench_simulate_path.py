"""Full simulate path against the kernel, for every registered experiment, one core (CPU time).

For each experiment (its first declared generating agent, default parameters and design) prints
trials/s of (a) the agent's numba kernel alone on pre-drawn sessions and uniforms and (b) the whole
batch path :func:`cogtestbed.simulation.simulate` (session sampling + uniforms + kernel + trial
table), and the ratio full / kernel (target ≥ 0.40 for every experiment), with the CPU ns per
trial of the two other stages (drawing the sessions, building the table) to show where the rest
goes.  Then the RW± kernel of instrumental learning in ns per trial on one core (target ≤ 15 ns).
``--floors`` prints, for instrumental learning, a measured floor of the full path: the kernel, plus
the PCG64 outputs its two streams require (drawn in compiled code at the generator's throughput,
nothing stored), plus writing the table's bytes (each column's buffers, at the dtypes the table
holds, all alive at once as in a table) into freshly allocated memory; and the best ratio that floor
allows, then with the sort of the trial-order keys and with pandas assembling the frame from its
finished columns (as :func:`cogtestbed.trials.table_frame` assembles it) added; and the same with the
cheapest uniform shuffle (the package's Fisher–Yates on ready uniforms) in place of the sort.
``--rw-only`` prints only that figure (``--rw-repeats N`` times); ``--lanes 8,16,...`` also times private
copies of the kernel compiled with each number of vector lanes (:data:`SIM_LANES`), to show the scaling.
Timings are the best of N process-CPU-time runs (the machine is shared), on one core (the process
pins itself), each figure over the same trials; the kernel and the full path, whose ratio is the
target, are timed in alternation (:func:`_timing.best_cpu_of_each`), so that a slow spell of the
shared machine falls on both; both stages run in a process whose allocator keeps
freed memory (:func:`cogtestbed.heap.keep_freed_memory`, as the ``cogtestbed`` command sets it).
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
from _timing import best_cpu_of, best_cpu_of_each  # noqa: E402
from numba import njit  # noqa: E402

from cogtestbed.environments.draws import _fisher_yates  # noqa: E402
from cogtestbed.environments.instrumental import _buckets, _sort_packed  # noqa: E402
from cogtestbed.environments.pcg64 import step_key  # noqa: E402
from cogtestbed.heap import keep_freed_memory  # noqa: E402
from cogtestbed.registry import ExperimentSpec, experiment_names, get_experiment  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402
from cogtestbed.trials import table_frame  # noqa: E402

#: Trials simulated per experiment (subjects = this / trials per subject, at least 10).
TARGET_TRIALS = 400_000
#: Ratio full path / kernel every experiment must reach.
RATIO_TARGET = 0.40
#: RW± kernel budget per trial on one core.
RW_NS_TARGET = 15.0
RW_SUBJECTS = 20_000
REPEATS = 5
#: Rounds of the kernel and the full path timed in turn (:func:`_timing.best_cpu_of_each`), for their ratio.
PAIRED_REPEATS = 9


def agent_of(spec: ExperimentSpec) -> str:
    """The generating agent of the experiment's first model (its first agent when it has none)."""
    named = [g.agent for g in spec.generators.values()]
    return named[0] if named else sorted(spec.agents)[0]


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
    kernel_s, full_s = best_cpu_of_each([lambda: agent_cls.simulate_batch(design, sessions, params, uniforms),
                                         lambda: simulate(spec, agent, n, 0)], PAIRED_REPEATS)
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


@njit(cache=False)
def _pcg64_outputs(cur: np.ndarray, inc: np.ndarray, count: int) -> np.uint64:  # pragma: no cover - numba
    """XOR of ``count`` PCG64 outputs drawn as four interleaved chains (each cursor steps its own
    state: the generator's throughput, not its latency, with nothing stored)."""
    h0, l0, h1, l1 = cur[0, 0], cur[0, 1], cur[1, 0], cur[1, 1]
    h2, l2, h3, l3 = cur[2, 0], cur[2, 1], cur[3, 0], cur[3, 1]
    acc = np.uint64(0)
    for _ in range(count // 4):
        h0, l0, k0 = step_key(h0, l0, inc[0], inc[1])
        h1, l1, k1 = step_key(h1, l1, inc[0], inc[1])
        h2, l2, k2 = step_key(h2, l2, inc[0], inc[1])
        h3, l3, k3 = step_key(h3, l3, inc[0], inc[1])
        acc ^= k0 ^ k1 ^ k2 ^ k3
    return acc


@njit(cache=False)
def _sort_rows(rows: np.ndarray) -> np.uint64:  # pragma: no cover - numba
    """XOR of a word of each row of packed order keys sorted by instrumental learning's session sort."""
    n, m = rows.shape
    shift, counts = _buckets(m)
    packed = np.empty(m, dtype=np.uint64)
    acc = np.uint64(0)
    for i in range(n):
        _sort_packed(rows[i], m, packed, counts, shift)
        acc ^= packed[i % m]
    return acc


def write_fresh(shapes: list[tuple[Any, np.dtype]]) -> list[np.ndarray]:
    """Fresh arrays of these shapes and dtypes, each written once, all alive at once as a table's are
    (one freed before the next is written would be rewritten in the cache: a floor no table of tens
    of megabytes can reach)."""
    out = []
    for shape, dtype in shapes:
        out.append(np.empty(shape, dtype=dtype))
        out[-1].fill(1)
    return out


def _column_buffers(table: Any) -> list[tuple[int, np.dtype]]:
    """(elements, dtype) of every buffer the table's columns hold (a buffer shared by columns once)."""
    import pyarrow as pa

    seen: set[int] = set()
    out: list[tuple[int, np.dtype]] = []
    for name in table.columns:
        array = table[name].array
        if hasattr(array, "__arrow_array__"):
            chunked = pa.chunked_array(array.__arrow_array__())
            buffers = [b for chunk in chunked.chunks for b in chunk.buffers() if b is not None]
            for b in buffers:
                if b.address not in seen and b.size:
                    seen.add(b.address)
                    out.append((b.size, np.dtype(np.uint8)))
            continue
        parts = ([array.codes] if hasattr(array, "codes")
                 else [getattr(array, "_data", None), getattr(array, "_mask", None)])
        parts = [p for p in parts if p is not None] or [np.asarray(array)]
        for p in parts:
            out.append((p.size, p.dtype))
    return out


def instrumental_floors() -> None:
    """The measured floor of instrumental learning's full path, next to the ratio target's budget."""
    from cogtestbed.environments.pcg64 import cursors

    spec = get_experiment("instrumental-learning")
    agent = agent_of(spec)
    agent_cls = spec.agent(agent)
    design = spec.env_cls.design_cls()
    n = max(10, TARGET_TRIALS // design.n_trials)
    trials = n * design.n_trials
    env_rng, agent_rng = seed_streams(0)
    sessions = spec.env_cls.sample_sessions(design, n, env_rng)
    uniforms = agent_rng.random((n, design.n_trials))
    params = subject_params(agent_cls, None, n)
    kernel_s = best_cpu_of(lambda: agent_cls.simulate_batch(design, sessions, params, uniforms), REPEATS)
    outcomes = agent_cls.simulate_batch(design, sessions, params, uniforms)
    table = spec.env_cls.trials_table(design, sessions, outcomes, agent=agent, params=params)
    # the env stream: letter keys, trial-order keys, two outcomes and the option order; the agent's: one
    outputs = n * (len(design.alphabet) + 4 * design.n_trials) + n * design.n_trials * agent_cls.draws_per_trial
    cur, inc, _ = cursors(np.random.default_rng(0), [outputs // 4] * 4)
    draws_s = best_cpu_of(lambda: _pcg64_outputs(cur, inc, outputs), REPEATS)
    keys = np.random.default_rng(1).integers(0, 2**53, (n, design.n_trials), dtype=np.uint64) << np.uint64(11)
    keys |= np.arange(design.n_trials, dtype=np.uint64)
    sort_s = best_cpu_of(lambda: _sort_rows(keys), REPEATS)
    # the package's Fisher–Yates on ready uniforms, each run reshuffling the same casino rows in place
    rows = np.tile(np.repeat(np.arange(1, design.n_casinos + 1, dtype=np.int64), design.visits_per_casino), (n, 1))
    order_uniforms = np.random.default_rng(2).random((n, design.n_trials - 1))
    shuffle_s = best_cpu_of(lambda: _fisher_yates(rows, order_uniforms), REPEATS)
    buffers = _column_buffers(table)
    table_bytes = sum(size * dtype.itemsize for size, dtype in buffers)

    write_s = best_cpu_of(lambda: write_fresh(buffers), REPEATS)
    ready = {name: table[name].array for name in table.columns}
    assemble_s = best_cpu_of(lambda: table_frame(ready, len(table)), REPEATS)  # as finish_table assembles it
    full_s = best_cpu_of(lambda: simulate(spec, agent, n, 0), REPEATS)
    sessions_s = best_cpu_of(lambda: spec.env_cls.sample_sessions(design, n, seed_streams(0)[0]), REPEATS)
    uniforms_s = best_cpu_of(lambda: seed_streams(0)[1].random((n, design.n_trials)), REPEATS)
    table_s = best_cpu_of(lambda: spec.env_cls.trials_table(design, sessions, outcomes, agent=agent, params=params),
                          REPEATS)
    per = 1e9 / trials
    floor = kernel_s + draws_s + write_s
    print(f"instrumental-learning ({agent}), {trials} trials, ns/trial:")
    rows = [("kernel", kernel_s, ""),
            (f"PCG64 outputs the streams need ({outputs / trials:.2f}/trial)", draws_s, ""),
            (f"table bytes into fresh memory ({table_bytes / trials:.0f} B/row)", write_s, ""),
            ("floor (sum)", floor, f"-> best ratio {kernel_s / floor:.2f}"),
            ("  + sorting the trial-order keys (the bucket sort)", floor + sort_s,
             f"-> best ratio {kernel_s / (floor + sort_s):.2f}"),
            ("  + assembling the frame from its ready columns", floor + sort_s + assemble_s,
             f"-> best ratio {kernel_s / (floor + sort_s + assemble_s):.2f}"),
            ("floor + a Fisher-Yates shuffle instead of the sort", floor + shuffle_s,
             f"-> best ratio {kernel_s / (floor + shuffle_s):.2f}"),
            ("  + assembling the frame from its ready columns", floor + shuffle_s + assemble_s,
             f"-> best ratio {kernel_s / (floor + shuffle_s + assemble_s):.2f}"),
            (f"budget at ratio {RATIO_TARGET:.2f}", kernel_s / RATIO_TARGET, ""),
            ("full path now", full_s, f"-> ratio {kernel_s / full_s:.2f}")]
    for label, seconds, note in rows:
        print(f"  {label:52s} {seconds * per:6.1f}  {note}")
    print(f"    of which sessions {sessions_s * per:.1f}, agent uniforms {uniforms_s * per:.1f}, kernel "
          f"{kernel_s * per:.1f}, table {table_s * per:.1f}")


def print_rw(ns: float) -> None:
    print(f"RW± kernel (instrumental-learning, rw-pm), one core: {ns:.1f} ns/trial "
          f"(target <= {RW_NS_TARGET:.0f}) [{'OK' if ns <= RW_NS_TARGET else 'MISSED'}]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rw-only", action="store_true", help="only the RW± kernel figure")
    parser.add_argument("--floors", action="store_true", help="only instrumental learning's measured floor")
    parser.add_argument("--rw-repeats", type=int, default=1, help="print the RW± figure this many times")
    parser.add_argument("--lanes", default="", help="comma-separated lane counts to time the RW± kernel with")
    parser.add_argument("--experiments", default="", help="comma-separated experiments to time (default: all)")
    args = parser.parse_args()
    print(f"allocator keeps freed memory: {keep_freed_memory()}")
    if args.floors:
        instrumental_floors()
        return
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
    """The full-path / kernel table of the named experiments."""
    print(f"{'experiment':24s} {'agent':18s} {'trials':>9s} {'kernel trials/s':>16s} {'full trials/s':>14s} "
          f"{'ratio':>6s}        ns/trial: kernel sessions table")
    worst = float("inf")
    for name in names:
        agent, trials, kernel_s, full_s, sessions_s, table_s = bench(name)
        ratio = kernel_s / full_s
        worst = min(worst, ratio)
        flag = "OK" if ratio >= RATIO_TARGET else "MISSED"
        print(f"{name:24s} {agent:18s} {trials:9d} {trials / kernel_s:16.3e} {trials / full_s:14.3e} "
              f"{ratio:6.2f} {flag:6s} {kernel_s / trials * 1e9:14.0f} {sessions_s / trials * 1e9:8.0f} "
              f"{table_s / trials * 1e9:5.0f}", flush=True)
    print(f"worst full/kernel ratio: {worst:.2f} (target >= {RATIO_TARGET:.2f}) "
          f"[{'OK' if worst >= RATIO_TARGET else 'MISSED'}]")


if __name__ == "__main__":
    main()
