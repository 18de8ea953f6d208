"""The ``monitor`` plan kind's refusals (:mod:`~cogtestbed.planning.kinds.monitor.monitor_kind`): what its request alone
decides, checked on an experiment's shipped facts before its module is imported (and again on the loaded
experiment), and the bounded statistic the betting e-process needs.

Imports nothing heavy.
"""

from __future__ import annotations

import math
from typing import Any

from cogtestbed.errors import InputError


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
    ``exp``: the experiment, or its shipped facts (:mod:`~cogtestbed.planning.facts`: what they decide is
    refused before the experiment is imported; the metric's per-unit values and the statistic's bounds are
    checked on the loaded experiment)."""
    from cogtestbed.planning.facts import ExperimentFacts
    from cogtestbed.planning.request import check_target
    from cogtestbed.planning.sizes import Effect

    if not req.sequential.monitor:
        raise InputError("a monitor plan needs `monitor`")
    check_target(exp, req)
    t = req.target
    if t.metric is not None and t.compare is not None:
        llms = [req.llms.llm] if isinstance(req.llms.llm, str) else list(req.llms.llm or [])
        if len(llms) == 1:
            raise InputError("a monitored metric difference is run pair by pair, one unit of each of two LLMs a "
                             "step: give two `llm` (one LLM's run has no pairs to monitor; plan it without "
                             "`monitor`)")
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
    from cogtestbed.studies.model_studies import effect_scale

    model = exp.model(t.model)
    effect = Effect.of(t.effect, "effect")
    assert effect is not None
    name = effect.name
    if name not in model.parameters.names and name not in model.contrasts:
        return  # the fixed plan's own check names the choices
    statistic_bounds(model, name, effect_scale(model, name))


__all__ = ["check_monitor", "statistic_bounds"]
