"""Memory checks: refuse a job whose estimated need exceeds the memory available now, before
anything is allocated (a base module: environments, models and studies all call it)."""

from __future__ import annotations

import os

from cogtestbed.errors import CogtestbedError

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


def check_input_size(path: str | os.PathLike[str]) -> None:
    """Refuse in one line, before reading, a published file larger than the input limit (naming
    the estimated time and memory, the limit and its override), or one whose estimated memory
    exceeds what is available (:func:`check_memory`)."""
    from pathlib import Path

    size = Path(path).stat().st_size
    mib = size / 2**20
    raw = os.environ.get(MAX_INPUT_ENV)
    try:
        limit = float(raw) if raw else MAX_INPUT_MB
    except ValueError:
        raise ValueError(f"{MAX_INPUT_ENV} must be a number of MiB, got {raw!r}") from None
    need = size * MEMORY_PER_INPUT_BYTE
    if mib > limit:
        raise MemoryLimitError(
            f"{path} is {mib:.0f} MiB: importing and scoring it takes about {mib * SECONDS_PER_INPUT_MB:.0f} s "
            f"and {format_bytes(need)} of memory; the input limit is {limit:g} MiB ({MAX_INPUT_ENV}=N raises it)")
    check_memory(need, f"reading {path} ({mib:.0f} MiB)", "split the file")
