"""Tiny timing helpers shared by the benchmark scripts (best-of-n wall clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _best(fn: Callable[[], Any], repeats: int, clock: Callable[[], float]) -> float:
    """Smallest ``clock`` time of ``repeats`` calls, in seconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def best_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest wall-clock time of ``repeats`` calls, in seconds (after one warm-up call)."""
    return _best(fn, repeats, time.perf_counter)


def best_cpu_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest process CPU time of ``repeats`` calls, in seconds (after one warm-up call).

    CPU time rather than wall clock: the benchmark machines are shared, and a single-threaded
    call's CPU time does not count the time other processes held the core.
    """
    return _best(fn, repeats, time.process_time)
