"""The ``monitor`` plan kind's refusals (:mod:`~cogtestbed.validation.design.monitor_kind`): what its request alone
decides, checked on an experiment's shipped facts before its module is imported (and again on the loaded
experiment), and the bounded statistic the betting e-process needs.

Imports nothing heavy.
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


def statistic_bounds(model: Any, effect: str, scale: str) -> tuple[float, float]:
    """The range of one subject's estimate of ``effect`` given its parameters' declared bounds (a
    contrast Σ wᵢθᵢ: each term at the end its weight's sign picks), on the test's scale; an unbounded
    range is refused in one line (the monitor's validity rests on these bounds)."""
    params = model.parameters
    weights = {effect: 1.0} if effect in params.names else dict(model.contrasts[effect])
    lo = sum(w * (params[p].lower if w > 0 else params[p].upper) for p, w in weights.items())
    hi = sum(w * (params[p].upper if w > 0 else params[p].lower) for p, w in weights.items())
    if scale == "log":
        lo, hi = (math.log(lo) if lo > 0 else -math.inf), (math.log(hi) if hi > 0 else -math.inf)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InputError(f"`monitor` needs a bounded statistic: {model.name}'s `effect` {effect} ranges over "
                         f"[{lo:g}, {hi:g}] on its test's scale ({scale}), so no betting e-process is valid for it")
    return float(lo), float(hi)


def check_monitor(exp: Any, req: Any) -> None:
    """Refusals from the request alone: a model effect with one or two LLMs (no people, no test target, no
    hierarchical fit) whose statistic is bounded, or a metric difference between two settings (two LLMs)
    whose metric has per-unit values (a pooled metric with only a standard error has no unit to look at).
    ``exp``: the experiment, or its shipped facts (:mod:`~cogtestbed.validation.design.facts`: what they decide is
    refused before the experiment is imported; the metric's per-unit values and the statistic's bounds are
    checked on the loaded experiment)."""
    from cogtestbed.validation.design.facts import ExperimentFacts
    from cogtestbed.validation.design.request import check_target
    from cogtestbed.validation.design.sizes import Effect

    if not req.sequential.monitor:
        raise InputError("a monitor plan needs `monitor`")
    check_target(exp, req)
    t = req.target
    if t.metric is not None and t.compare is not None:
        if isinstance(exp, ExperimentFacts):
            return
        how = exp.metrics.comparability(t.metric)
        if how.test == "z":
            raise InputError(f"a monitor plan looks at a metric after every unit: {exp.name}'s {t.metric!r} is one "
                             "pooled estimate with a standard error, without per-unit values to monitor")
        return
    if t.model is None or t.effect is None:
        raise InputError("a monitor plan needs `model` and `effect` (a model parameter's effect) or `metric` with "
                         "`compare` (a metric difference between two settings); a test target is not monitored")
    for group, name in ((req.people, "human"), (req.people, "population"), (t, "test"), (t, "precision")):
        if getattr(group, name) is not None:
            raise InputError(f"a monitor plan does not take `{name}`: it monitors a model effect of one or two LLMs "
                             "or a metric difference between two")
    if req.analysis.fit != "mle":
        raise InputError("a monitor plan monitors the per-subject MLE: drop `fit`")
    if isinstance(exp, ExperimentFacts):
        return
    from cogtestbed.validation.studies.model_studies import effect_scale

    model = exp.model(t.model)
    effect = Effect.of(t.effect, "effect")
    assert effect is not None
    name = effect.name
    if name not in model.parameters.names and name not in model.contrasts:
        return  # the fixed plan's own check names the choices
    statistic_bounds(model, name, effect_scale(model, name))


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
    if not isinstance(design, Mapping):
        raise InputError(f"{where} must be an object, got {design!r}")
    if "digest" not in design:
        raise InputError(f"{where} has no `digest` of its content: re-plan it with `cogtestbed plan --monitor`")
    if design["digest"] != monitor_digest(design):
        raise InputError(f"{where} was edited after it was planned (its content does not match its `digest`): "
                         "re-plan it with `cogtestbed plan --monitor`")
    level = _finite(design, "level", where)
    if not 0.0 < level < 1.0:
        raise InputError(f"{where}.level must lie in (0, 1), got {level:g}")
    cap = design.get("cap")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InputError(f"{where}.cap must be a whole number >= 1, got {cap!r}")
    bounds, scale = design.get("bounds"), design.get("symmetry_scale")
    if bounds is None and scale is not None:  # the symmetry test needs no bounds (a metric's pair differences)
        bounds = [-math.inf, math.inf]
    elif not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise InputError(f"{where}.bounds must be two numbers [lo, hi], got {bounds!r}")
    else:
        bounds = [_finite({"bounds": b}, "bounds", where) for b in bounds]
    lo, hi = (float(b) for b in bounds)
    if not lo < hi:
        raise InputError(f"{where}.bounds must have lo < hi, got [{lo:g}, {hi:g}]")
    width = _finite({"halfwidth": design.get("halfwidth") or 0.0}, "halfwidth", where)
    if not (width >= 0.0 and lo < -width and width < hi):
        raise InputError(f"{where}: the null interval 0 ± {width:g} must lie strictly inside the bounds "
                         f"[{lo:g}, {hi:g}] (halfwidth >= 0)")
    if scale is not None:
        _finite(design, "symmetry_scale", where)
        if not scale > 0:
            raise InputError(f"{where}.symmetry_scale must be positive, got {scale:g}")
    if design.get("planned_bet") is not None:
        _check_bet(_finite(design, "planned_bet", where), lo, hi, width, scale is not None, where)
    if "null_value" in design:
        _finite(design, "null_value", where)
    if design.get("outside", "stop") not in OUTSIDE:
        raise InputError(f"{where}.outside must be one of {', '.join(OUTSIDE)}, got {design.get('outside')!r}")
    return dict(design)


def _check_bet(bet: float, lo: float, hi: float, width: float, symmetric: bool, where: str) -> None:
    """A constant bet λ keeps each factor ``1 + λ (y − m)`` positive for every ``y`` in [0, 1] only if
    ``λ < 1/m`` (λ > 0, against the null interval's upper end ``m``) or ``−λ < 1/(1 − m)`` (λ < 0, its lower)."""
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


__all__ = ["OUTSIDE", "RUN_FIELDS", "check_monitor", "checked_monitor", "checked_observation", "monitor_digest",
           "sealed", "statistic_bounds"]
