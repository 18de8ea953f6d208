"""A plan's time limit (``plan --max-seconds S``): before the search starts, what it may take, from a cheap
timing of one simulated study (:func:`~cogtestbed.planning.estimate.timed_simulation`) times the
simulated studies the search needs; a search that may run past ``S`` is refused in one line that offers the
largest range of the searched size that fits.

How many studies the search needs (:func:`search_studies`): the size ladder doubles from the range's bottom
to the design it settles on, each rung a look of :data:`LOOK_SIMS` simulations (a first batch and one
doubling, the typical look), the fitted power curve refines the bracket with :data:`REFINE_LOOKS` more looks
near the chosen size, and the chosen design is simulated to the MC SE asked (the target power's binomial SE,
at most :data:`~cogtestbed.planning.plan.MAX_FINAL_SIMS`) twice: once to confirm its power and
once, on fresh seeds, for its bias and coverage.  Each study's time is the timed one scaled by the design's
data size (subjects × trials × runs, as the per-look estimate scales it), shared among the workers.  The
design the search settles on is not known before it runs: the figure is for a search that settles at the
top of the range (its most), so a plan refused here may have finished inside the limit, never the reverse
by much.  The steps after the fixed search (a sequential design's looks, a monitor's simulations, the
hierarchical refit) are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cogtestbed.errors import InputError
from cogtestbed.progress import duration

#: Simulations of a typical look of the search: its first batch and one doubling.
LOOK_SIMS = 48
#: Looks the fitted power curve adds near the chosen size after the doubling ladder.
REFINE_LOOKS = 2


@dataclass(frozen=True)
class SearchTime:
    """What a search settling at size ``top`` may take: ``seconds`` of wall on the workers, ``studies``
    simulated."""

    top: int
    seconds: float
    studies: int


def search_studies(lo: int, top: int, target: float, mc_se: float) -> list[tuple[int, int]]:
    """(size, simulated studies) of a search from ``lo`` that settles at ``top`` (the module docstring)."""
    from cogtestbed.planning.plan import MAX_FINAL_SIMS

    rungs, size = [], max(1, lo)
    while size < top:
        rungs.append((size, LOOK_SIMS))
        size *= 2
    rungs += [(top, LOOK_SIMS)] * (1 + REFINE_LOOKS)
    final = min(MAX_FINAL_SIMS, math.ceil(target * (1 - target) / mc_se ** 2))
    return [*rungs, (top, 2 * max(final, LOOK_SIMS))]


def search_time(per_study: float, units: Callable[[int], float], lo: int, top: int, target: float, mc_se: float,
                workers: int) -> SearchTime:
    """:class:`SearchTime` of a search from ``lo`` settling at ``top``: ``per_study`` seconds a study at
    ``lo`` takes, ``units(size)`` a design's data size, shared among ``workers``."""
    steps = search_studies(lo, top, target, mc_se)
    base = units(lo)
    seconds = sum(per_study * n * units(size) / base for size, n in steps) / max(1, workers)
    return SearchTime(top, seconds, sum(n for _, n in steps))


def largest_fitting(values: Sequence[int], fits: Callable[[int], bool]) -> int | None:
    """The largest of the sorted ``values`` that ``fits`` (its cost grows with the value; bisected, so a
    lazy range of millions is never listed); None when not even the smallest fits."""
    lo, hi = 0, len(values) - 1
    if not fits(values[0]):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(values[mid]) else (lo, mid - 1)
    return int(values[lo])


def range_text(axis: str, values: Sequence[int], top: int) -> str:
    """The searched range cut at ``top`` as the option that gives it (``subjects`` 5:27, ``design``
    n_contexts=50,100)."""
    from cogtestbed.planning.plan import OWN_OPTION_AXES

    if axis in OWN_OPTION_AXES:
        return f"`{axis}` {values[0]}:{top}"
    return f"`design` {axis}={','.join(str(v) for v in values if v <= top)}"


def check_time(max_seconds: float, per_study: float, units: Callable[[int], float], axis: str,
               values: Sequence[int], target: float, mc_se: float, workers: int, at_lo: str = "") -> SearchTime:
    """The search's time at the top of ``values`` (:func:`search_time`), or an :class:`InputError` in one
    line when it may run past ``max_seconds``: what it may take and why, and the largest range of ``axis``
    that fits (or that none does).  ``at_lo``: the design ``per_study`` was timed at, in words (default:
    the bottom of ``axis``)."""
    lo = int(values[0])

    def at(top: int) -> SearchTime:
        return search_time(per_study, units, lo, top, target, mc_se, workers)

    whole = at(int(values[-1]))
    if whole.seconds <= max_seconds:
        return whole
    head = (f"`max_seconds` {max_seconds:g}: this plan's search may take up to {duration(whole.seconds)} if it "
            f"settles at the top of the range ({whole.studies:,} simulated studies on {workers} "
            f"worker{'s' * (workers != 1)}; one takes {duration(per_study)} at {at_lo or f'{lo} {axis}'}, "
            "more at larger designs)")
    top = largest_fitting(values, lambda v: at(int(v)).seconds <= max_seconds)
    if top is None:
        raise InputError(f"{head}; not even {lo} {axis} fits: raise `max_seconds` or `mc_se`, or give more "
                         "`workers`")
    raise InputError(f"{head}; the largest range that fits is {range_text(axis, values, top)} (up to "
                     f"{duration(at(top).seconds)}), or raise `max_seconds`")


__all__ = ["LOOK_SIMS", "REFINE_LOOKS", "SearchTime", "check_time", "largest_fitting", "range_text",
           "search_studies", "search_time"]
