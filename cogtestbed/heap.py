"""Keeping freed memory for the next table: the process's C allocator told not to hand large blocks back.

A trial table of 10⁵–10⁶ rows is tens of megabytes of fresh columns, and a simulation allocates
and frees its session and outcome arrays around it.  glibc's ``malloc`` serves each block of more
than 128 KiB (raised adaptively up to 32 MiB) with its own ``mmap`` and trims the heap's free top
above twice that, so every new table touches new pages: one page fault per 4 KiB, which on a
virtual machine costs microseconds (measured here: 0.7 ns per byte, more than simulating the
trials; ``benchmarks/bench_simulate_path.py``).  :func:`keep_freed_memory` sets the two thresholds
once per process (``mallopt``): blocks up to :data:`MMAP_THRESHOLD` come from the heap and up to
:data:`TRIM_THRESHOLD` of freed heap is kept for reuse, so repeated simulations (a study's
repetitions, a benchmark's best-of-N) reuse warm pages.  The cost is resident memory that is not
returned to the system until the process exits (at most :data:`TRIM_THRESHOLD` beyond what is in
use).  Only glibc has these knobs; elsewhere, or with ``COGTESTBED_KEEP_HEAP=0`` in the
environment, nothing changes.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform

#: glibc ``mallopt`` parameter numbers (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Blocks up to this size come from the heap (glibc's ceiling for the threshold: 32 MiB on 64-bit).
MMAP_THRESHOLD = 32 * 2**20
#: Freed heap kept for reuse before the top is returned to the system.
TRIM_THRESHOLD = 512 * 2**20
#: Environment variable that turns the setting off ("0").
ENV_SWITCH = "COGTESTBED_KEEP_HEAP"

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Set the allocator thresholds (once per process); whether they are in effect."""
    if _done:
        return _done[0]
    ok = False
    if os.environ.get(ENV_SWITCH, "1") != "0" and platform.libc_ver()[0] == "glibc":
        try:
            mallopt = ctypes.CDLL(None).mallopt
            ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):  # pragma: no cover - a libc without mallopt
            ok = False
    _done.append(ok)
    return ok


#: :func:`zero_buffer` maps pages of its own from this size up (smaller buffers come zeroed from the heap).
ZERO_PAGES_MIN_BYTES = 2**20


def zero_buffer(nbytes: int) -> bytearray | mmap.mmap:
    """A writable buffer of ``nbytes`` zero bytes, for data that is mostly never read (the offsets of
    an all-missing text column).  From :data:`ZERO_PAGES_MIN_BYTES` up, a private anonymous mapping:
    the system's zero pages, mapped on first touch, so a buffer nobody reads costs neither writes
    nor page faults (a heap block kept warm by :func:`keep_freed_memory` is zeroed byte by byte:
    3.2 MB for the offsets of a 400,000-row text column).  Smaller ones are a zeroed ``bytearray``,
    as is every one where the platform has no private mappings."""
    if nbytes < 0:
        raise ValueError(f"a buffer needs a non-negative size, got {nbytes}")
    if nbytes < ZERO_PAGES_MIN_BYTES or not hasattr(mmap, "MAP_PRIVATE"):
        return bytearray(nbytes)
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
