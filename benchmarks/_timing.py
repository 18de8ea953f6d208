"""Tiny timing helpers shared by the benchmark scripts (best-of-n wall clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest wall-clock time of ``repeats`` calls, in seconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_cpu_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest process CPU time of ``repeats`` calls, in seconds (after one warm-up call).

    CPU time rather than wall clock: the benchmark machines are shared, and a single-threaded
    call's CPU time does not count the time other processes held the core.
    """
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)
