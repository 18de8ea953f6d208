"""The plan kinds, registered: every plan question is one :class:`~cogtestbed.planning.kinds.
PlanKind` in :data:`PLAN_KINDS`, the registry pattern experiments and LLM backends share
(:class:`cogtestbed.plugins.Registry`: the package's own, the entry-point group ``cogtestbed.plan_kinds``,
:func:`register_plan_kind` in a script).

The package's own kinds:

========================  ==========================================================================
``power``                 the cheapest fixed design reaching the target power: a model parameter or contrast
                          (one LLM, two LLMs, an LLM against people), a metric difference, a reported test
``sequential``            the same with a group-sequential design (``looks``)
``hierarchical``          the size searched with the hierarchical fit (``fit="hierarchical"``)
``precision``             the cheapest design whose one-subject MLE is within a half-width (``precision``)
``adaptive``              adaptive against fixed sessions for one precision target (``adaptive``)
``forms``                 forms × subjects chosen jointly by dollars (``forms``)
``monitor``               an anytime-valid monitor of a model effect beside the fixed (and group-sequential)
                          design at equal power (``monitor``)
``mix``                   people and a predictor's units mixed for one population mean: prediction-powered
                          inference (``mix``, docs/mix.md)
========================  ==========================================================================

:func:`plan_request` is the one dispatch :func:`cogtestbed.plan` and the command line use: the kind named
by the request's ``question``, else the first (by :attr:`~cogtestbed.planning.kinds.PlanKind.order`)
that claims the request; its options checked (:func:`check_request`) before anything is simulated; then
run.  :meth:`cogtestbed.Plan.save` writes through the same kind.  Nothing here or in its callers branches on a
kind's name (tests/test_plan_kinds.py reads the dispatch modules' source to keep it so).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds import PlanContext, PlanKind, Planned
from cogtestbed.planning.plan_options import PLAN_FORMS_OPTIONS, PlanRequest
from cogtestbed.plugins import Registry, named_instance
from cogtestbed.request import leaves, value

#: Entry-point group through which other distributions register plan kinds.
ENTRY_POINT_GROUP = "cogtestbed.plan_kinds"
#: Options every kind takes (what identifies and seeds the plan, how it is computed).
ALWAYS = frozenset({"experiment", "seed", "workers", "dask", "mc_se", "question"})
_FORMS_ONLY = frozenset({"forms", "form_sd"})
_ADAPTIVE_ONLY = frozenset({"adaptive", "adaptive_sims"})
_EVERY = frozenset(leaf.name for leaf in leaves(PlanRequest))


def _write_plan(payload: Mapping[str, Any], out: Path) -> dict[str, Path]:
    from cogtestbed.planning.plan_report import write_plan

    return write_plan(dict(payload), out)


def _lines(name: str) -> Any:
    """The text function ``name`` of :mod:`~cogtestbed.planning.plan_text` (imported when called)."""

    def lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
        from cogtestbed.planning import plan_text

        return list(getattr(plan_text, name)(payload, size_name))

    return lines


# Each kind's run and check, imported when a plan of the kind runs or is checked (the command line starts without
# the planning machinery); direct references, so an editor and a type checker follow them.

def _run_forms(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.kinds.forms.forms_kind import run_forms

    return run_forms(exp, req, ctx)


def _run_adaptive(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.kinds.adaptive.adaptive_plan import run_adaptive

    return run_adaptive(exp, req, ctx)


def _run_precision(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.request import run_precision

    return run_precision(exp, req, ctx)


def _run_sequential(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.request import run_sequential

    return run_sequential(exp, req, ctx)


def _run_hierarchical(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.request import run_hierarchical

    return run_hierarchical(exp, req, ctx)


def _run_power(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.request import run_power

    return run_power(exp, req, ctx)


def _run_monitor(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.kinds.monitor.monitor_kind import run_monitor

    return run_monitor(exp, req, ctx)


def _run_mix(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    from cogtestbed.planning.kinds.mix.mix import run_mix

    return run_mix(exp, req, ctx)


def _check_forms(exp: Any, req: Any) -> None:
    from cogtestbed.planning.kinds.forms.forms_kind import check_forms

    check_forms(exp, req)


def _check_adaptive(exp: Any, req: Any) -> None:
    from cogtestbed.planning.request_checks import check_adaptive

    check_adaptive(exp, req)


def _check_precision(exp: Any, req: Any) -> None:
    from cogtestbed.planning.request import check_precision

    check_precision(exp, req)


def _check_sequential(exp: Any, req: Any) -> None:
    from cogtestbed.planning.request import check_sequential

    check_sequential(exp, req)


def _check_hierarchical(exp: Any, req: Any) -> None:
    from cogtestbed.planning.request import check_hierarchical

    check_hierarchical(exp, req)


def _check_target(exp: Any, req: Any) -> None:
    from cogtestbed.planning.request import check_target

    check_target(exp, req)


def _check_monitor(exp: Any, req: Any) -> None:
    from cogtestbed.planning.kinds.monitor.monitor_checks import check_monitor

    check_monitor(exp, req)


def _monitor_protocol(seed: int) -> Any:
    """The monitor's evaluation-protocol declaration (:func:`~cogtestbed.planning.kinds.monitor.monitor_kind.
    monitor_protocol`, imported when checked)."""
    from cogtestbed.planning.kinds.monitor.monitor_kind import monitor_protocol

    return monitor_protocol(seed)


def _declared(name: str) -> Any:
    """The declaration ``name`` of :mod:`~cogtestbed.planning.kind_protocols` (imported when checked)."""

    def protocol(seed: int) -> Any:
        from cogtestbed.planning import kind_protocols

        return getattr(kind_protocols, name)(seed)

    return protocol


def _check_mix(exp: Any, req: Any) -> None:
    from cogtestbed.planning.kinds.mix.mix import check_mix

    check_mix(exp, req)


def _monitor_write(payload: Mapping[str, Any], out: Path) -> dict[str, Path]:
    from cogtestbed.planning.kinds.monitor.monitor_kind import write_monitor

    return write_monitor(payload, out)


def _monitor_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    from cogtestbed.planning.kinds.monitor.monitor_kind import monitor_lines

    return monitor_lines(payload, size_name)


_MONITOR_ONLY = frozenset({"monitor", "monitor_sims"})


def _mix_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    from cogtestbed.planning.kinds.mix.mix import mix_lines

    return mix_lines(payload, size_name)

_MIX_ONLY = frozenset({"mix", "estimand", "predictor", "fee", "predictor_cost", "short_share", "llm_trials",
                       "llm_base_url", "llm_max_calls"})
#: Options a mix plan shares with other kinds (its target, its human data, the llm predictor's pricing).
_MIX_SHARED = frozenset({"model", "precision", "human", "level", "llm", "prices", "allow_unpriced", "max_cost"})
_POWERISH = _EVERY - _FORMS_ONLY - _ADAPTIVE_ONLY - _MONITOR_ONLY - _MIX_ONLY
#: A precision plan's target is its assurance, not a power at a level.
_PRECISION = _POWERISH - {"power", "level", "max_seconds"}

#: The package's own plan kinds.
BUILTIN: tuple[PlanKind, ...] = (
    PlanKind("forms", "forms x subjects chosen jointly by dollars for one model effect across prompt forms",
             _run_forms, claims=lambda r: r.prompt_forms.forms is not None, check=_check_forms,
             accepts=frozenset(PLAN_FORMS_OPTIONS), order=10, lines=_lines("forms_lines"), facts=True,
             protocol=_declared("forms_protocol")),
    PlanKind("adaptive", "the trials per session adaptive and fixed sessions need for one precision target",
             _run_adaptive, claims=lambda r: bool(r.adaptive_sessions.adaptive), check=_check_adaptive,
             accepts=_ADAPTIVE_ONLY | {"precision", "assurance", "subjects", "trials", "llm", "prices",
                                       "allow_unpriced", "model", "assume_reasoning_tokens", "reasoning_effort",
                                       "thinking_budget", "max_tokens", "temperature", "reask", "max_cost"},
             order=20, lines=_lines("adaptive_lines"), facts=True,
             protocol=_declared("adaptive_protocol")),
    PlanKind("precision", "the cheapest design whose one-subject MLE of a parameter lies within a half-width",
             _run_precision, claims=lambda r: r.target.precision is not None, accepts=_PRECISION,
             check=_check_precision,
             order=30, lines=_lines("precision_lines"), facts=True,
             protocol=_declared("precision_protocol")),
    PlanKind("sequential", "a group-sequential design (looks, spending, futility) for a target power",
             _run_sequential, claims=lambda r: r.sequential.looks is not None, accepts=_POWERISH,
             check=_check_sequential,
             order=40, write=_write_plan, lines=_lines("plan_lines"), frontier=True, facts=True,
             protocol=_declared("sequential_protocol")),
    PlanKind("hierarchical", "the size a target power needs with the hierarchical fit the researcher reports",
             _run_hierarchical, claims=lambda r: r.analysis.fit == "hierarchical", accepts=_POWERISH,
             check=_check_hierarchical,
             order=50, write=_write_plan, lines=_lines("plan_lines"), frontier=True, facts=True,
             protocol=_declared("power_protocol")),
    PlanKind("power", "the cheapest fixed design reaching a target power: a model parameter (one LLM, two LLMs, an "
             "LLM against people), a metric difference or a reported test", _run_power,
             claims=lambda r: True, accepts=_POWERISH, check=_check_target,
             order=1000, write=_write_plan, lines=_lines("plan_lines"), frontier=True, facts=True,
             protocol=_declared("power_protocol")),
    PlanKind("monitor", "an anytime-valid monitor (betting e-process, every subject a look) beside the fixed and the "
             "group-sequential design at equal power", _run_monitor,
             claims=lambda r: r.sequential.monitor, accepts=_POWERISH | _MONITOR_ONLY,
             check=_check_monitor, order=35, write=_monitor_write, lines=_monitor_lines,
             frontier=True, facts=True, protocol=_monitor_protocol),
    PlanKind("mix", "people and a predictor's units mixed for one population mean (prediction-powered inference): "
             "the cheapest pair beside people alone", _run_mix, claims=lambda r: r.mixed.mix,
             check=_check_mix, accepts=_MIX_ONLY | _MIX_SHARED,
             order=5, lines=_mix_lines, protocol=_declared("mix_protocol")),
)


def _itself(kind: PlanKind) -> PlanKind:
    return kind


#: Every plan kind: the package's own, the plug-ins' and those registered in this process.
PLAN_KINDS: Registry[PlanKind] = Registry(
    "plan kind", ENTRY_POINT_GROUP, lambda: {k.name: functools.partial(_itself, k) for k in BUILTIN},
    named_instance("plan kind", PlanKind),
    unknown=lambda name, names: InputError(f"`question` {name!r} is no plan kind: choose one of {', '.join(names)}"))


def register_plan_kind(kind: PlanKind) -> PlanKind:
    """Register ``kind`` in this process (``ct.plan(..., question=NAME)``, ``cogtestbed plan --question NAME``
    and a request it claims then plan it); returns it.  The same kind again is a no-op; another under a
    taken name is refused."""
    if not isinstance(kind, PlanKind):
        raise TypeError(f"register_plan_kind takes a PlanKind, got {type(kind).__name__}")
    taken = sorted({o.name for o in kind.options} & {leaf.name for leaf in leaves(PlanRequest)})
    if taken:
        raise InputError(f"plan kind {kind.name!r} declares {', '.join(taken)}, already an option of every plan: "
                         "name its own options otherwise")
    return PLAN_KINDS.register(kind.name, kind)


def kind_options(options: dict[str, Any]) -> dict[str, Any]:
    """Take out of the keywords ``options`` those that a registered plan kind declares as its own
    (:attr:`~cogtestbed.planning.kinds.PlanKind.options`) and return them; the rest stay (a name no kind
    declares and no request option is then refused as an unknown keyword)."""
    declared = {o.name for name in plan_kind_names() for o in get_plan_kind(name).options}
    return {name: options.pop(name) for name in list(options) if name in declared}


def with_kind_options(kind: PlanKind, ctx: PlanContext) -> PlanContext:
    """``ctx`` with the kind's own options: those given (``ctx.options``), the rest at their defaults; an option
    another kind declares but this one does not is refused in one line."""
    own = {o.name: o.default for o in kind.options}
    extra = sorted(set(ctx.options) - set(own))
    if extra:
        fields = ", ".join(f"`{name}`" for name in extra)
        raise InputError(f"a {kind.name} plan does not take {fields}: drop {'it' if len(extra) == 1 else 'them'} "
                         f"(`question`: {', '.join(plan_kind_names())})")
    return dataclasses.replace(ctx, options={**own, **ctx.options})


def unregister_plan_kind(name: str) -> None:
    """Remove a plan kind registered in this process (tests, notebooks)."""
    PLAN_KINDS.unregister(name)


def get_plan_kind(name: str) -> PlanKind:
    """The plan kind called ``name`` (one line listing them where none is)."""
    return PLAN_KINDS.get(name)


def plan_kind_names() -> list[str]:
    """Every plan kind's name."""
    return PLAN_KINDS.names()


def choose_kind(req: PlanRequest) -> PlanKind:
    """The kind that plans ``req``: the one its ``question`` names, else the first by order that claims it."""
    named = req.target.question
    if named is not None:
        return get_plan_kind(named)
    kinds = sorted((get_plan_kind(name) for name in plan_kind_names()), key=lambda k: k.order)
    return next(k for k in kinds if k.claims(req))


def given_options(req: PlanRequest) -> list[str]:
    """The options of ``req`` given other values than their defaults (flat keywords, declaration order)."""
    return [leaf.name for leaf in leaves(PlanRequest) if not _same(value(req, leaf), leaf.default)]


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # a table or an array compared element-wise: given
        return False


def check_request(kind: PlanKind, exp: Any, req: PlanRequest) -> None:
    """The refusals reachable from the request alone, before anything is simulated: the kind's own
    :attr:`~cogtestbed.planning.kinds.PlanKind.check`, then any option given that the kind does not
    read (one line naming the fields; the command line names their flags)."""
    kind.check(exp, req)
    if kind.accepts is None:
        return
    extra = [name for name in given_options(req) if name not in kind.accepts | ALWAYS]
    if extra:
        fields = ", ".join(f"`{name}`" for name in extra)
        raise InputError(f"a {kind.name} plan does not take {fields}: drop {'it' if len(extra) == 1 else 'them'} "
                         f"(`question`: {', '.join(plan_kind_names())})")


def check_before_import(experiment: Any, req: PlanRequest) -> None:
    """The refusals reachable from ``req`` alone, on the shipped facts of the package experiment ``experiment``
    (:func:`~cogtestbed.planning.facts.shipped_facts`), before the experiment's module and its
    numerical libraries are imported: a refused request comes in well under a second from a cold command line.
    A kind whose check reads more than the facts (:attr:`~cogtestbed.planning.kinds.PlanKind.facts`
    false), or an experiment whose facts are not shipped, is checked by :func:`plan_request` alone.  Then a plan
    against people refuses trials other than theirs (:func:`~cogtestbed.planning.kinds.people.people_trials.
    refuse_other_trials`: their table's ``subject`` column or their population file read, nothing imported)."""
    from cogtestbed.planning.facts import shipped_facts
    from cogtestbed.planning.request_checks import check_design_names, check_sources

    kind = choose_kind(req)
    facts = shipped_facts(experiment) if kind.facts else None
    if facts is not None:
        check_sources(req)
        check_design_names(facts, req)
        check_request(kind, facts, req)
        from cogtestbed.planning.kinds.people.people_trials import refuse_other_trials

        refuse_other_trials(kind.name, req)  # the people's own trials, from their table or population file alone


def plan_request(exp: Any, req: PlanRequest, ctx: PlanContext) -> tuple[PlanKind, Planned]:
    """The plan ``req`` asks for, through the registry: its kind chosen (:func:`choose_kind`), its request
    checked (:func:`check_request`), then run: its simulated studies on the Dask scheduler ``req.dask`` where
    given (:func:`~cogtestbed.planning.kinds.power.power_sims.on_cluster`)."""
    from cogtestbed.planning.kinds.power.power_sims import on_cluster

    kind = choose_kind(req)
    ctx = with_kind_options(kind, ctx)
    check_request(kind, exp, req)
    with on_cluster(req.dask):
        return kind, kind.run(exp, req, ctx)


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "PLAN_KINDS", "check_before_import", "check_request", "choose_kind",
           "get_plan_kind", "given_options", "kind_options", "plan_kind_names", "plan_request", "register_plan_kind",
           "unregister_plan_kind", "with_kind_options"]
