"""Memory checks: refuse a job whose estimated need exceeds the memory available now, before
anything is allocated (a base module: environments, models and studies all call it)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from cogtestbed.errors import CogtestbedError, InputError

#: Copies of a trial table's data alive at once while it is simulated and analysed (the session
#: and outcome arrays, the table itself, a fitter's packed arrays): the memory estimate's factor.
MEMORY_COPIES = 3


class MemoryLimitError(CogtestbedError, ValueError):
    """A job would need more memory than the machine has available (refused before it starts)."""


def format_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps the figure >= 1 (e.g. ``1.8 TiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_memory(need: int, what: str, hint: str = "use fewer subjects") -> None:
    """Refuse (:class:`MemoryLimitError`, with the estimate) a job whose estimated need ``need``
    exceeds the memory available now."""
    import psutil

    available = int(psutil.virtual_memory().available)
    if need > available:
        raise MemoryLimitError(f"{what} needs about {format_bytes(need)} of memory and "
                               f"{format_bytes(available)} is available: {hint}")


def check_disk(need: int, where: str | os.PathLike[str], what: str, hint: str = "use fewer subjects") -> None:
    """Refuse (:class:`MemoryLimitError`, with the estimate) a file of about ``need`` bytes that the
    folder ``where`` has no room for now (a streamed simulation's memory stays flat, its file does not)."""
    import shutil

    free = int(shutil.disk_usage(os.fspath(where)).free)
    if need > free:
        raise MemoryLimitError(f"{what} needs about {format_bytes(need)} of disk and {format_bytes(free)} is "
                               f"free in {os.fspath(where)}: {hint}")


#: Largest published file an importer reads without being asked (MiB); the environment variable
#: ``COGTESTBED_MAX_INPUT_MB`` raises (or lowers) it.  A named default.
MAX_INPUT_MB = 50.0
#: Environment variable that overrides :data:`MAX_INPUT_MB`.
MAX_INPUT_ENV = "COGTESTBED_MAX_INPUT_MB"
#: Seconds per MiB of CSV that importing and scoring take, and bytes of memory per byte of CSV:
#: measured on this project's 2-core machine (a 5-million-row CogBench CSV, ~130 MiB: 300 s and
#: 1 GB; RestlessBandit/random.csv, 2.2 MiB: 1.4 s).
SECONDS_PER_INPUT_MB = 2.3
MEMORY_PER_INPUT_BYTE = 8


#: A file above this size (MiB) that is read (under the limit, or above it with the limit raised)
#: gets a progress line on stderr before it is read and one after.  A named default.
PROGRESS_INPUT_MB = 10.0


def input_estimate(path: str | os.PathLike[str]) -> tuple[float, int, str]:
    """(MiB on disk, bytes of memory once read, what the estimate rests on) of an input file: a
    CSV by :data:`MEMORY_PER_INPUT_BYTE` per byte, a Parquet table by its footer's uncompressed
    size (its rows too) times :data:`MEMORY_COPIES`."""
    from pathlib import Path

    size = Path(path).stat().st_size
    if Path(path).suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(path).metadata
            raw = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            return size / 2**20, int(raw * MEMORY_COPIES), f"{meta.num_rows:,} rows"
        except Exception:  # noqa: BLE001 - not Parquet after all: the reader says so in one line
            pass
    return size / 2**20, size * MEMORY_PER_INPUT_BYTE, ""


def input_limit_mb() -> float:
    """The input limit in MiB: :data:`MAX_INPUT_MB`, or ``$COGTESTBED_MAX_INPUT_MB``."""
    raw = os.environ.get(MAX_INPUT_ENV)
    try:
        limit = float(raw) if raw else MAX_INPUT_MB
    except ValueError:
        raise InputError(f"{MAX_INPUT_ENV} must be a number of MiB, got {raw!r}") from None
    return limit


def check_input_size(path: str | os.PathLike[str]) -> None:
    """Refuse in one line, before reading, a user's file (a published CSV, a trial table) larger
    than the input limit (naming the estimated time and memory, the limit and its override), or
    one whose estimated memory exceeds what is available (:func:`check_memory`)."""
    mib, need, basis = input_estimate(path)
    limit = input_limit_mb()
    if mib > limit:
        raise MemoryLimitError(
            f"{path} is {mib:.0f} MiB{f' ({basis})' if basis else ''}: reading and scoring it takes about "
            f"{mib * SECONDS_PER_INPUT_MB:.0f} s and {format_bytes(need)} of memory; the input limit is {limit:g} MiB "
            f"({MAX_INPUT_ENV}=N raises it)")
    check_memory(need, f"reading {path} ({mib:.0f} MiB)", "split the file")


@contextlib.contextmanager
def reading_input(path: str | os.PathLike[str]) -> Iterator[None]:
    """Check a user's file (:func:`check_input_size`) and read it inside this block; a file above
    :data:`PROGRESS_INPUT_MB` gets a line on stderr before (its size, the estimated time, memory)
    and one after (the time it took), so a long read is never silent."""
    check_input_size(path)
    mib, need, basis = input_estimate(path)
    if mib <= PROGRESS_INPUT_MB:
        yield
        return
    start = time.perf_counter()
    shown = f"{mib:.0f} MiB{', ' + basis if basis else ''}"
    print(f"reading {path} ({shown}): about {mib * SECONDS_PER_INPUT_MB:.0f} s and {format_bytes(need)} of memory ...",
          file=sys.stderr, flush=True)
    yield
    print(f"read {path} in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
