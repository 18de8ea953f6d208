"""Tiny helpers shared by the benchmark scripts (best-of-n wall clock; the agent each experiment is
benchmarked with)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


def _best(fn: Callable[[], Any], repeats: int, clock: Callable[[], float]) -> float:
    """Smallest ``clock`` time of ``repeats`` calls, in seconds (after one warm-up call)."""
    return _best_each([fn], repeats, clock)[0]


def _best_each(fns: Sequence[Callable[[], Any]], repeats: int, clock: Callable[[], float]) -> list[float]:
    """Smallest ``clock`` time of each of ``fns`` over ``repeats`` rounds that call every one once, in
    turn (after one warm-up round; the order reversed every other round)."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    order = list(range(len(fns)))
    for round_ in range(repeats):
        for i in order if round_ % 2 == 0 else order[::-1]:
            start = clock()
            fns[i]()
            best[i] = min(best[i], clock() - start)
    return best


def best_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest wall-clock time of ``repeats`` calls, in seconds (after one warm-up call)."""
    return _best(fn, repeats, time.perf_counter)


def best_cpu_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest process CPU time of ``repeats`` calls, in seconds (after one warm-up call).

    CPU time rather than wall clock: the benchmark machines are shared, and a single-threaded
    call's CPU time does not count the time other processes held the core.
    """
    return _best(fn, repeats, time.process_time)


def best_cpu_of_each(fns: Sequence[Callable[[], Any]], repeats: int = 5) -> list[float]:
    """Smallest process CPU time of each of ``fns`` over ``repeats`` rounds that call every one of them
    once, in turn (after one warm-up round; the order reversed every other round).

    For a ratio of two timings on a shared machine: its speed drifts over seconds (other tenants'
    load on the memory and caches), and timing one function's repeats before the other's lets a
    slow spell fall on one side only.  Interleaved, both sides see the same spells.
    """
    return _best_each(fns, repeats, time.process_time)


def agent_of(spec: Any) -> str:
    """The generating agent of the experiment's first model (its first agent when it has none)."""
    named = [g.agent for g in spec.generators.values()]
    return named[0] if named else sorted(spec.agents)[0]
