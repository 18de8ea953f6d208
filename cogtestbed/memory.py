"""Memory checks: refuse a job whose estimated need exceeds the memory available now, before
anything is allocated (a base module: environments, models and studies all call it)."""

from __future__ import annotations

#: Copies of a trial table's data alive at once while it is simulated and analysed (the session
#: and outcome arrays, the table itself, a fitter's packed arrays): the memory estimate's factor.
MEMORY_COPIES = 3


class MemoryLimitError(ValueError):
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
