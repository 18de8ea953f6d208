"""The upper bound of a count option and what a count above it would cost, declared with the option
(:func:`cogtestbed.request.option`'s ``max`` and ``cost``) and checked when a request is built, before any work:
a count of simulated studies, draws, re-asks or workers beyond its bound is refused in one line that names the
memory and time it would take, and the bound.

The figures of a :class:`Cost` are what one unit takes at the option's defaults, measured on this project's
reference machine (rounded; ``at`` says where they were measured): they size the refusal, not a plan.

Imports nothing heavy (the command line builds its options from here).
"""

from __future__ import annotations

from dataclasses import dataclass

from cogtestbed.errors import InputError


@dataclass(frozen=True)
class Cost:
    """What one unit of a count option costs: ``each`` names the units (plural: "simulated studies per
    hypothesis"), ``bytes`` and ``cpu_seconds`` what each one holds and takes (0: nothing worth naming),
    ``at`` where they were measured ("at a 26-subject design"), ``note`` what else each one brings ("each
    another paid call")."""

    each: str
    bytes: float = 0.0
    cpu_seconds: float = 0.0
    at: str = ""
    note: str = ""

    def of(self, count: int) -> str:
        """What ``count`` units would take, in words ("10,000,000 simulated studies would take about 15 GB of
        memory and 3.2 CPU-hours at a 60-subject design")."""
        parts = [f"about {size_text(count * self.bytes)} of memory" if self.bytes else "",
                 f"{'about ' if not self.bytes else ''}{duration_text(count * self.cpu_seconds)} of CPU"
                 if self.cpu_seconds else ""]
        taken = " and ".join(p for p in parts if p)
        where = f" {self.at}" if self.at and taken else ""
        note = f" ({self.note})" if self.note else ""
        return f"{count:,} {self.each}" + (f" would take {taken}{where}" if taken else "") + note


def size_text(n_bytes: float) -> str:
    """``n_bytes`` in the largest unit that keeps it at or above 1 (``"6.7 GB"``)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.2g} {unit}" if n_bytes / scale < 10 else f"{n_bytes / scale:,.0f} {unit}"
    return f"{n_bytes:.0f} bytes"


def duration_text(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it at or above 1 (``"3.2 CPU-hours"`` reads ``3.2 hours``)."""
    for unit, scale in (("years", 3.156e7), ("days", 86_400.0), ("hours", 3_600.0), ("minutes", 60.0)):
        if seconds >= scale:
            return f"{seconds / scale:.2g} {unit}" if seconds / scale < 10 else f"{seconds / scale:,.0f} {unit}"
    return f"{seconds:.2g} seconds"


def check_bound(name: str, value: object, high: float | None, cost: Cost | None) -> None:
    """Refuse ``value`` of the count option ``name`` above its bound ``high`` (one line: what it would take,
    from ``cost``, and the bound); anything else passes (its type and lower limit are checked elsewhere)."""
    if high is None or isinstance(value, bool) or not isinstance(value, int | float) or not value > high:
        return
    count = int(value) if float(value).is_integer() else value
    what = cost.of(int(count)) if cost is not None and isinstance(count, int) else f"{count:,}"
    raise InputError(f"`{name}` {count:,} is over its bound of {high:,.0f}: {what}; give at most {high:,.0f}")


__all__ = ["Cost", "check_bound", "duration_text", "size_text"]
