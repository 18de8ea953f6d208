"""A monitor plan file's checks: the design sealed with a digest of its own content, checked in full before a
monitored run buys its first call, and each subject's statistic checked against the design's bounds.

Imports nothing heavy, and nothing of the planner (a run and ``looks`` read plan files through it).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import InputError

#: What a monitored run does with a subject's statistic outside the plan's bounds: ``clip`` it to the bounds,
#: or ``stop`` the run in one line (the default of a plan that does not say).
OUTSIDE = ("clip", "stop")


#: What a run adds to a plan's monitor design when it records it (not the plan's content: outside its digest).
RUN_FIELDS = ("digest", "llms", "run_dirs")


def monitor_digest(design: Mapping[str, Any]) -> str:
    """The SHA-256 of a monitor design's own content (every field but :data:`RUN_FIELDS`, keys sorted): a plan
    writes it beside the design and a run refuses a design whose content no longer matches it."""
    body = {k: v for k, v in design.items() if k not in RUN_FIELDS}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sealed(design: Mapping[str, Any]) -> dict[str, Any]:
    """``design`` with its :func:`monitor_digest` under ``digest``."""
    body = {k: v for k, v in design.items() if k != "digest"}
    return {**body, "digest": monitor_digest(body)}


def _finite(design: Mapping[str, Any], name: str, where: str) -> float:
    value = design.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}.{name} must be a finite number, got {value!r}")
    return float(value)


def checked_monitor(design: Any, where: str) -> dict[str, Any]:
    """A plan's monitor design checked in full before a run buys its first call: its ``digest`` matches its
    content (:func:`monitor_digest`: a hand edit is refused), the level lies in (0, 1), the cap is a positive
    whole number, the bounds are finite with ``lo < hi``, the null interval ``0 ± halfwidth`` lies strictly
    inside them, the planned bet keeps every factor of the e-process positive on them, a symmetry scale is
    positive and finite, and ``outside`` is one of :data:`OUTSIDE`.  The first problem in one line naming the
    field (``where``: the design's place, e.g. ``--plan: PATH: run.monitor``)."""
    _check_sealed(design, where)
    level = _finite(design, "level", where)
    if not 0.0 < level < 1.0:
        raise InputError(f"{where}.level must lie in (0, 1), got {level:g}")
    cap = design.get("cap")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InputError(f"{where}.cap must be a whole number >= 1, got {cap!r}")
    scale = design.get("symmetry_scale")
    lo, hi = _checked_bounds(design, scale is not None, where)
    width = _finite({"halfwidth": design.get("halfwidth") or 0.0}, "halfwidth", where)
    c = _checked_center(design, width, where)
    if not (width >= 0.0 and lo < c - width and c + width < hi):
        raise InputError(f"{where}: the null interval {c:g} ± {width:g} must lie strictly inside the bounds "
                         f"[{lo:g}, {hi:g}] (halfwidth >= 0)")
    if scale is not None:
        _finite(design, "symmetry_scale", where)
        if not scale > 0:
            raise InputError(f"{where}.symmetry_scale must be positive, got {scale:g}")
    if design.get("planned_bet") is not None:
        _check_bet(_finite(design, "planned_bet", where), lo - c, hi - c, width, scale is not None, where)
    if design.get("futility") is not None:
        low = _finite(design, "futility", where)
        if not 0.0 < low < 1.0:
            raise InputError(f"{where}.futility must lie in (0, 1) (an e-value at which the monitor gives up), "
                             f"got {low:g}")
    if "null_value" in design:
        _finite(design, "null_value", where)
    if design.get("outside", "stop") not in OUTSIDE:
        raise InputError(f"{where}.outside must be one of {', '.join(OUTSIDE)}, got {design.get('outside')!r}")
    return dict(design)


def _checked_center(design: Mapping[str, Any], width: float, where: str) -> float:
    """The null interval's center (0 unless the design says), equal to the stored ``null_interval``'s where
    the design has one (a composite null over a nuisance region)."""
    c = _finite({"null_center": design.get("null_center") or 0.0}, "null_center", where)
    interval = design.get("null_interval")
    if interval is None:
        return c
    if not isinstance(interval, (list, tuple)) or len(interval) != 2:
        raise InputError(f"{where}.null_interval must be two numbers [lo, hi], got {interval!r}")
    a, b = (_finite({"null_interval": v}, "null_interval", where) for v in interval)
    if not (math.isclose(c, (a + b) / 2, abs_tol=1e-12) and math.isclose(width, (b - a) / 2, abs_tol=1e-12)):
        raise InputError(f"{where}: null_center {c:g} ± halfwidth {width:g} is not the null_interval "
                         f"[{a:g}, {b:g}]")
    return c


def _check_sealed(design: Any, where: str) -> None:
    """``design`` is an object whose ``digest`` matches its content (a hand edit is refused)."""
    if not isinstance(design, Mapping):
        raise InputError(f"{where} must be an object, got {design!r}")
    if "digest" not in design:
        raise InputError(f"{where} has no `digest` of its content: re-plan it as a monitor plan")
    if design["digest"] != monitor_digest(design):
        raise InputError(f"{where} was edited after it was planned (its content does not match its `digest`): "
                         "re-plan it as a monitor plan")


def _checked_bounds(design: Mapping[str, Any], symmetric: bool, where: str) -> tuple[float, float]:
    """The design's finite bounds ``lo < hi``; without bounds, a symmetry test's whole line (a metric's pair
    differences need none)."""
    bounds = design.get("bounds")
    if bounds is None and symmetric:
        bounds = [-math.inf, math.inf]
    elif not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise InputError(f"{where}.bounds must be two numbers [lo, hi], got {bounds!r}")
    else:
        bounds = [_finite({"bounds": b}, "bounds", where) for b in bounds]
    lo, hi = (float(b) for b in bounds)
    if not lo < hi:
        raise InputError(f"{where}.bounds must have lo < hi, got [{lo:g}, {hi:g}]")
    return lo, hi


def _check_bet(bet: float, lo: float, hi: float, width: float, symmetric: bool, where: str) -> None:
    """A constant bet λ keeps each factor ``1 + λ (y − m)`` positive for every ``y`` in [0, 1] only if
    ``λ < 1/m`` (λ > 0, against the null interval's upper end ``m``) or ``−λ < 1/(1 − m)`` (λ < 0, its lower);
    ``lo``, ``hi``: the bounds less the null interval's center."""
    down, up = (0.5, 0.5) if symmetric else ((-width - lo) / (hi - lo), (width - lo) / (hi - lo))
    top = 1.0 / up if bet > 0 else 1.0 / (1.0 - down)
    if not abs(bet) < top:
        raise InputError(f"{where}.planned_bet {bet:g} would stake more than the capital on one subject (|bet| "
                         f"must be below {top:.4g} on these bounds)")


def checked_observation(design: Mapping[str, Any], value: float, subject: int) -> float:
    """A subject's statistic as the monitor takes it: inside the plan's bounds as it is (NaN: no estimate);
    outside, clipped to them where the plan's ``outside`` is ``clip``, else refused in one line (the e-process's
    validity rests on the bounds)."""
    if design.get("bounds") is None:  # the symmetry test: any value
        return value
    lo, hi = (float(b) for b in design["bounds"])
    if not math.isfinite(value) or lo <= value <= hi:
        return value
    if design.get("outside", "stop") == "clip":
        return min(max(value, lo), hi)
    raise InputError(f"subject {subject}'s statistic {value:g} lies outside the plan's bounds [{lo:g}, {hi:g}]: "
                     "the monitor stops (its e-value would not be valid there; `outside: clip` clips it)")


__all__ = ["OUTSIDE", "RUN_FIELDS", "checked_monitor", "checked_observation", "monitor_digest", "sealed"]
