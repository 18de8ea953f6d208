"""A plan asked for (``cogtestbed plan``, :func:`cogtestbed.plan`): its options checked, its study
built and the plan run, fixed (:mod:`~cogtestbed.planning.plan`), group-sequential
(:mod:`~cogtestbed.planning.kinds.sequential.seqpayload`, :mod:`~cogtestbed.planning.kinds.sequential.seqauto`), with
the
hierarchical fit (:mod:`~cogtestbed.planning.fitcheck`) or for precision
(:mod:`~cogtestbed.planning.kinds.precision.precision`).

:class:`~cogtestbed.planning.plan_options.PlanRequest` holds the options (declared once there:
the command line's, ``ct.plan``'s and ``plan.json``'s ``request`` block are made from it); :func:`_study` checks
them, each bad mix refused in one line naming the option, in the order the options are read.  The plan
kinds :func:`run_power`, :func:`run_sequential`, :func:`run_hierarchical` and :func:`run_precision` are
registered in :mod:`~cogtestbed.planning.plan_kinds`; the public face (:mod:`cogtestbed.api.plan`)
only builds the request and dispatches through that registry.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.planning.identified import check_identified, check_identified_design
from cogtestbed.planning.kinds import PlanContext, Planned, Say
from cogtestbed.planning.plan_options import PlanRequest
from cogtestbed.planning.request_checks import (
    check_agent_settings,
    check_answerable,
    check_backends,
    check_behaviour_target,
    check_compare_settings,
    check_design_trials,
    check_informative,
    check_lapse_fit,
    check_params_keep_effect,
    check_simulated_subjects,
    check_sizes,
    check_target_mix,
    priced_llms,
    shift_of,
)
from cogtestbed.planning.sizes import Effect, Sizes, assignments

#: Reads a trial table of the experiment (a table or a path): ``(exp, table_or_path, source, sessions)`` to
#: ``(table, source)`` (:func:`cogtestbed.api.core.read_table`).
ReadTable = Callable[[Any, Any, str, Any], Any]


@dataclass(frozen=True)
class _Study:
    """A request read: the study planned and what the plan needs beside it."""

    spec: Any
    llms: list[str]
    subjects: Sizes | None
    runs: Sizes | None
    trials: Sizes | None
    looks: int | str | None
    target: Effect | None
    field_axis: Any
    reasoning: dict[str, Any]
    pilot_info: Any


def run_power(exp: Any, req: PlanRequest, ctx: PlanContext) -> Planned:
    """The ``power`` plan kind: the cheapest fixed design reaching the target power (``plan.json``'s
    payload): a model parameter or contrast (one LLM, two LLMs, an LLM against people), a metric
    difference between two settings or a test the metrics function reports."""
    return _power_plan(exp, req, ctx, None)


def run_sequential(exp: Any, req: PlanRequest, ctx: PlanContext) -> Planned:
    """The ``sequential`` plan kind (``looks``): the fixed plan and its group-sequential design at the
    chosen design (:func:`_attach_looks`)."""
    seq = req.sequential

    def looks(payload: dict[str, Any], result: Any, planner: Any, pricer: Any, st: _Study,
              workers: int) -> dict[str, Any]:
        assert st.looks is not None  # the kind claims a request with looks
        _attach_looks(payload, result, pricer, exp, st.looks, seq.spending, seq.futility, seq.seq_sims, workers,
                      seq.null, None if ctx.say is None else planner.say, seq.null_sims, seq.binding_futility,
                      req.mc_se)
        return payload

    return _power_plan(exp, req, ctx, looks)


def run_hierarchical(exp: Any, req: PlanRequest, ctx: PlanContext) -> Planned:
    """The ``hierarchical`` plan kind (``fit="hierarchical"``): the size searched with the hierarchical
    fit from the per-subject MLE's choice (:func:`_hierarchical_plan`)."""

    def refit(payload: dict[str, Any], result: Any, planner: Any, pricer: Any, st: _Study,
              workers: int) -> dict[str, Any]:
        return _hierarchical_plan(payload, result, planner, exp, req.analysis.fit_sims, workers, req.llms.max_cost,
                                  st.pilot_info)

    return _power_plan(exp, req, ctx, refit)


def run_precision(exp: Any, req: PlanRequest, ctx: PlanContext) -> Planned:
    """The ``precision`` plan kind (``precision={PARAM: HALFWIDTH}``): the cheapest design whose one-subject
    MLE lies within the half-width with the assurance asked (``precision.json``'s payload)."""
    st = _study(exp, req, ctx.read_table, ctx.say)
    lm = req.llms
    assert st.target is not None  # the kind claims a request with a precision target
    payload = _plan_precision(st.spec, exp, st.target[0], st.target[1], req.target.assurance, st.runs, st.trials,
                              st.llms, req.seed, lm.max_tokens, lm.temperature, lm.reask,
                              None if lm.prices is None else Path(lm.prices), st.field_axis, lm.allow_unpriced,
                              ctx.say, lm.batch, st.reasoning)
    return Planned(payload, "subjects")


#: A step after the fixed search, inside its heartbeat: ``(payload, result, planner, pricer, study, workers)`` →
#: the payload (the looks attached, the hierarchical fit's search).
_Then = Callable[[dict[str, Any], Any, Any, Any, "_Study", int], dict[str, Any]]


def _power_plan(exp: Any, req: PlanRequest, ctx: PlanContext, then: _Then | None) -> Planned:
    """The fixed search of a power target, then ``then`` (a kind's own step) on its result."""
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.planning.plan import Planner
    from cogtestbed.planning.plan_report import plan_payload
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.space import design_axes, n_groups
    from cogtestbed.progress import heartbeat

    say = ctx.say
    st = _study(exp, req, ctx.read_table, say)
    lm = req.llms
    spec, llms = st.spec, st.llms
    size, others = design_axes(spec, exp, st.subjects, st.runs, st.trials, st.field_axis)
    pricer = Pricer(exp, _priced_llms(llms, n_groups(spec)), seed=req.seed,
                    max_tokens=lm.max_tokens, temperature=resolve_temperature(exp.decoding, lm.temperature)[0],
                    reask=lm.reask, prices=None if lm.prices is None else Path(lm.prices),
                    allow_unpriced=lm.allow_unpriced, batch=lm.batch, **st.reasoning)
    n_workers = req.workers if req.workers is not None else (os.cpu_count() or 1)
    planner = Planner(spec, pricer, size, others, target=req.target.power, max_cost=lm.max_cost, mc_se=req.mc_se,
                      workers=n_workers, extend_to=_extend_to(size.name, st.subjects, st.runs), on_progress=say)
    _say_look_estimate(planner, say, req.max_seconds)
    with heartbeat(say):
        result = planner.plan()
        payload = plan_payload(result, pricer, exp, lm.max_cost, st.pilot_info)
        if then is not None:
            payload = then(payload, result, planner, pricer, st, n_workers)
    return Planned(payload, result.size_name)


def _study(exp: Any, req: PlanRequest, read_table: ReadTable, say: Say) -> _Study:
    """The request's options read and checked, in the order the command reads them, and the study
    built: the target, the groups, the people, the lapse fit, the pilot and the expected lapses."""
    from cogtestbed.planning.sizes import Effect, Sizes
    from cogtestbed.studies.options import assignment_items

    tg, sz, sim, lm, seq = req.target, req.sizes, req.simulated, req.llms, req.sequential
    subjects, runs, trials = (None if given is None else Sizes.of(given, name)
                              for given, name in ((sz.subjects, "subjects"), (sz.runs, "runs"), (sz.trials, "trials")))
    effect, precision = Effect.of(tg.effect, "effect"), Effect.of(tg.precision, "precision")
    looks = looks_option(seq.looks)
    check_sequential_options(looks, seq.spending, seq.futility, seq.null, seq.seq_sims, precision, tg.test,
                             seq.null_sims, seq.binding_futility)
    llms = [lm.llm] if isinstance(lm.llm, str) else list(lm.llm or [])
    check_backends(llms)
    pp = req.people
    people = "`human`" if pp.human is not None else (
        "`population`" if pp.population is not None and precision is None and len(llms) == 1 else None)
    effect, target = _target(llms, tg.model, effect, tg.metric, tg.test, precision, people)
    given_base, given_params = assignments(sim.base, "base"), assignments(sim.params, "params")
    design = sz.design if isinstance(sz.design, Mapping) else (assignment_items(sz.design) or None)
    fixed, trials, field_axis = _searched(exp, design, trials)
    check_identified_design(exp, tg.model, fixed, trials, req)
    common: dict[str, Any] = {"subjects": (1,), "runs": (1,), "trials": (None,), "design": fixed,
                              "reps": 1, "seed": req.seed, "level": tg.level, "method": "mle", "base": given_base,
                              "sd_between": sim.sd_between, "params": given_params, "draws": 500, "tune": 500,
                              "chains": 2}
    common.update(_groups(effect, target, llms, people, looks, req.analysis.fit))
    spec = _power_study(exp, tg.model, effect, tg.metric, tg.compare, tg.test, tg.agent, common)
    check_agent_settings(spec, exp)
    check_params_keep_effect(spec, exp)
    if pp.human is not None:
        spec, trials = _with_human(spec, exp, pp.human, given_base, pp.population is None, read_table, trials)
    spec = _with_population(spec, pp.population, people == "`population`")
    trials = _people_trials(spec, trials)
    runs = people_runs(spec, exp, runs)
    spec = _with_lapse_fit(spec, sim.lapse_fit)
    from cogtestbed.studies.study_kinds import PowerStudy

    _check_fit_option(req.analysis.fit, req.analysis.fit_sims, isinstance(spec, PowerStudy), looks,
                      precision is not None)
    reasoning = {"reasoning_effort": lm.reasoning_effort, "thinking_budget": lm.thinking_budget,
                 "hidden": hidden_tokens(llms, sim.pilot, lm.assume_reasoning_tokens, lm.thinking_budget, exp.name)}
    spec, pilot_info = _pilot_and_lapses(spec, exp, None if sim.pilot is None else Path(sim.pilot), llms, given_base,
                                         given_params, sim.invalid_rate, sim.random_rate, say)
    check_carried(spec, exp, "the pilot's fitted base" if pilot_info is not None else "the base")
    return _Study(spec, llms, subjects, runs, trials, looks, target, field_axis, reasoning, pilot_info)


def check_target(exp: Any, req: PlanRequest) -> None:
    """A power or precision kind's refusals reachable from the request alone, before any simulation: a size range
    too large to simulate (:meth:`~cogtestbed.planning.sizes.Sizes.of`), a mix of targets and groups no
    plan answers, a metric two groups cannot be compared in
    (:func:`~cogtestbed.planning.facts.check_metric_target`), a model the experiment lacks, an
    effect or a precision target on no parameter or contrast of the model (each with the targets that can be
    planned), an effect the base cannot carry.  ``exp``: the experiment, or its shipped facts
    (:mod:`~cogtestbed.planning.facts`: checked before the experiment is imported)."""
    from cogtestbed.planning.facts import facts_of

    facts = facts_of(exp)
    tg, pp = req.target, req.people
    _check_request_alone(facts, req)
    if tg.model is None:
        return
    if tg.model not in facts.models:
        raise InputError(f"`model` {tg.model!r} is no model of {facts.name}: choose one of {', '.join(facts.models)}")
    model = facts.model(tg.model)
    names = list(model.parameters.names)
    allowed = names + list(model.contrasts)
    for field, given in (("effect", tg.effect), ("precision", tg.precision)):
        target = Effect.of(given, field)
        if target is not None and target.name not in allowed:
            raise InputError(f"`{field}` {target.name}: model {tg.model} can plan {', '.join(allowed)}")
    effect = Effect.of(tg.effect, "effect")
    sim = req.simulated
    check_simulated_subjects(tg.model, model, effect, req)
    check_identified(facts.name, tg.model, req)
    if effect is not None and sim.pilot is None and pp.human is None and pp.population is None:
        given = assignments(sim.base, "base")
        base = {p.name: float(given.get(p.name, p.default)) for p in model.parameters}
        shift = shift_of(model, effect.name, effect.size)
        carried(model, effect.name, effect.size, {k: v + shift.get(k, 0.0) for k, v in base.items()}, "the base")


def check_precision(exp: Any, req: PlanRequest) -> None:
    """The ``precision`` kind's refusals (:func:`check_target`), and a request naming the kind without its target."""
    if req.target.precision is None:
        raise InputError("a precision plan needs `precision` PARAM=HALFWIDTH")
    check_target(exp, req)


def check_sequential(exp: Any, req: PlanRequest) -> None:
    """The ``sequential`` kind's refusals (:func:`check_target`), and a request naming the kind without looks."""
    if req.sequential.looks is None:
        raise InputError("a sequential plan needs `looks` K (or auto)")
    check_target(exp, req)


def check_hierarchical(exp: Any, req: PlanRequest) -> None:
    """The ``hierarchical`` kind's refusals (:func:`check_target`), and a request naming the kind without the fit
    (its plan would be the hierarchical fit's while its request recorded the MLE)."""
    if req.analysis.fit != "hierarchical":
        raise InputError("a hierarchical plan needs `fit` hierarchical")
    check_target(exp, req)


def _check_request_alone(facts: Any, req: PlanRequest) -> None:
    """The part of :func:`check_target` that reads no model: the sizes, the metric compared, the sequential
    options and the mix of targets and groups."""
    tg = req.target
    for name in ("subjects", "runs", "trials"):
        given = getattr(req.sizes, name)
        if given is not None:
            Sizes.of(given, name)
    if tg.metric is not None and tg.compare is not None:
        from cogtestbed.planning.facts import check_metric_target

        check_metric_target(facts, tg.metric)
    seq = req.sequential
    check_sequential_options(looks_option(seq.looks), seq.spending, seq.futility, seq.null, seq.seq_sims,
                             Effect.of(tg.precision, "precision"), tg.test, seq.null_sims, seq.binding_futility)
    llms = [req.llms.llm] if isinstance(req.llms.llm, str) else list(req.llms.llm or [])
    pp = req.people
    people = "`human`" if pp.human is not None else (
        "`population`" if pp.population is not None and tg.precision is None and len(llms) == 1 else None)
    check_target_mix(req, llms)
    effect, target = _target(llms, tg.model, Effect.of(tg.effect, "effect"), tg.metric, tg.test,
                             Effect.of(tg.precision, "precision"), people)
    looks = looks_option(seq.looks)
    _groups(effect, target, llms, people, looks, req.analysis.fit)
    _check_fit_option(req.analysis.fit, req.analysis.fit_sims, tg.model is not None, looks, target is not None)
    check_answerable(req)
    if tg.model is None:
        check_behaviour_target(req)
    check_sizes(facts, req, effect is not None)
    check_compare_settings(facts, req)
    check_design_trials(facts, req)
    check_lapse_fit(req)
    if llms:
        _check_llm_options(req, llms)


def _check_llm_options(req: PlanRequest, llms: list[str]) -> None:
    """The refusals of the LLM options that the request alone decides (the capability and price tables): a backend,
    a price, the reasoning controls, a reasoning model's tokens per call (the pricer's), a batch API."""
    from cogtestbed.llm_adapters.clients.backends import parse_spec, require_batch_api

    lm = req.llms
    check_backends(llms)
    hidden = hidden_tokens(llms, None, lm.assume_reasoning_tokens, lm.thinking_budget)
    priced_llms(llms, lm.prices, lm.allow_unpriced, lm.reasoning_effort, lm.thinking_budget,
                hidden if req.simulated.pilot is None else "the pilot's")
    for llm in llms if lm.batch else []:
        require_batch_api(parse_spec(llm)[0], llm)


def check_carried(spec: Any, exp: Any, source: str) -> None:
    """Refuse an effect that moves a population median out of its parameter's bounds (from ``source``: the
    base, or the pilot's fitted base), with the largest effect that base can carry, before any simulation; with a
    ``population``, the median of any of its posterior draws (:meth:`~cogtestbed.inference.population.Population.
    location`)."""
    from cogtestbed.studies.model_studies import effect_shift, population_medians
    from cogtestbed.studies.study_kinds import PowerStudy

    if not isinstance(spec, PowerStudy) or spec.effect_size == 0:
        return
    model = exp.model(spec.models[0])
    pop = spec.from_population
    if pop is not None:  # every posterior draw's medians moved (a simulation worker refused it, seconds later)
        import numpy as np

        pop.location(model.parameters, np.arange(pop.n_draws), effect_shift(spec, model))
        return
    moved = population_medians(spec, model)
    carried(model, spec.effect, spec.effect_size, {p.name: moved[p.name] for p in model.parameters}, source)


def carried(model: Any, effect: str, size: float, moved: dict[str, float], source: str) -> None:
    """Refuse ``effect`` = ``size`` where it moves the medians (``moved``: the base with the effect applied,
    :func:`~cogtestbed.studies.model_studies.effect_shift`) out of a parameter's bounds; the
    message names the largest effect ``source`` can carry."""
    bad = [p for p in model.parameters if not p.lower <= moved[p.name] <= p.upper]
    if not bad or size == 0:
        return
    shift = shift_of(model, effect, size)
    limits = []
    for q in model.parameters:
        c = shift.get(q.name, 0.0) / size
        if c != 0:
            base = moved[q.name] - shift[q.name]
            ends = sorted(((q.lower - base) / c, (q.upper - base) / c))
            limits.append(ends[1] if size > 0 else ends[0])
    p = bad[0]
    largest = "" if not limits else \
        f": the largest effect this base can carry is {min(limits) if size > 0 else max(limits):.3g}"
    raise InputError(f"`effect` {effect}={size:g} moves {p.name} from {moved[p.name] - shift.get(p.name, 0.0):.3g} "
                     f"({source}) to {moved[p.name]:.3g}, outside its bounds [{p.lower:g}, {p.upper:g}]{largest}")


def _groups(effect: Effect | None, target: Any, llms: list[str], people: str | None, looks: int | str | None,
            fit: str) -> dict[str, Any]:
    """``{"groups": 2}`` for a model parameter's difference between two groups (two LLMs, or one LLM
    and people: the ``--human`` sample or the ``--population``'s; its options checked by
    :func:`_check_two_groups`), else ``{}``."""
    if effect is None or target is not None or not (len(llms) == 2 or people):
        return {}
    _check_two_groups(looks, fit, people)
    return {"groups": 2}


def _people_trials(spec: Any, trials: Sizes | None) -> Sizes | None:
    """The trials an LLM-against-people study searches: the people's own count, and nothing else.

    The test compares per-subject estimates of the two groups; at unequal trials per subject their precision
    differs and its null rejection exceeded alpha even with a calibrated critical value (0.057 at 2x the people's
    trials, 0.064 at 4x; ``benchmarks/studies/unequal_trials_level.py``), so such designs are refused before any
    simulation, and a search without ``trials`` keeps the people's count.  Other studies: ``trials`` as given."""
    n = getattr(spec, "people_trials", None)
    if not getattr(spec, "people", None) or n is None:
        return trials
    return equal_trials(trials, n, "a population's people")


def equal_trials(trials: Sizes | None, n: int, people: str) -> Sizes:
    """``trials`` where it is the people's own ``n`` trials per subject (``None``: ``n``); else refused in one
    line naming the field (the two-group test of per-subject estimates at unequal trials: :func:`_people_trials`)."""
    if trials is not None and (trials.lo != n or trials.hi != n):
        raise InputError(f"`trials` must be the people's own {n} trials per subject in a plan against {people}: "
                         "with unequal trials the per-subject estimates differ in precision and the two-group test "
                         "does not hold its level (docs/human-data.md)")
    return Sizes.of(n, "trials")


def people_runs(spec: Any, exp: Any, runs: Sizes | None) -> Sizes | None:
    """The sessions pooled per LLM subject in a plan against people (a population's or a ``human`` table) of an
    experiment that pools sessions: one, so that each LLM subject plays the people's own trials per subject
    (:func:`equal_trials`); other ``runs`` refused in one line.  Other plans: ``runs`` as given."""
    people = getattr(spec, "people", None) and getattr(spec, "people_trials", None) is not None
    if not (people or getattr(spec, "reference", None) is not None) or exp.pooling_unit != "session":
        return runs
    if runs is not None and (runs.lo != 1 or runs.hi != 1):
        raise InputError("`runs` must be 1 in a plan against people: each LLM subject plays the people's own trials "
                         "per subject in one session (with more, the per-subject estimates differ in precision and "
                         "the two-group test does not hold its level; docs/human-data.md)")
    return Sizes.of(1, "runs")


def human_trials(table: Any) -> int:
    """The human sample's trials per subject: the most common number of rows a subject has in ``table``
    (the largest where several are as common)."""
    return modal_count(int(n) for n in table.groupby("subject", sort=False).size())


def modal_count(counts: Iterable[int]) -> int:
    """The most common of ``counts`` (the largest where several are as common; 0 for none): a sample's trials per
    subject (:func:`human_trials`, :mod:`~cogtestbed.planning.kinds.people.people_trials`)."""
    often = Counter(counts)
    return max((n for n, k in often.items() if k == max(often.values())), default=0)


def _with_population(spec: Any, population: Any, first_group: bool) -> Any:
    """The study drawn from ``population`` (:func:`~cogtestbed.studies.options.with_population`; with
    ``first_group`` its people are the first of two groups)."""
    from cogtestbed.studies.options import with_population

    return with_population(spec, population, first_group)


def _power_study(exp: Any, model: str | None, effect: Effect | None, metric: str | None,
                 compare: tuple[str, str] | None, test: str | None, agent: str | None,
                 common: dict[str, Any]) -> Any:
    """The power study planned (:func:`~cogtestbed.studies.options.power_spec`): a model target (``model``,
    by default the experiment's own), a metric difference or a reported test."""
    from cogtestbed.studies.options import power_spec
    from cogtestbed.studies.study_kinds import PlannedStudy

    spec = power_spec(model or exp.name, exp.name if effect is not None else None, effect, metric, compare,
                      test, agent, common)
    assert isinstance(spec, PlannedStudy)  # a power study of one of its three forms
    return spec


def _priced_llms(llms: list[str], groups: int) -> tuple[str, ...]:
    """The LLM pricing each group: one LLM against the ``--human`` sample is priced twice (two
    groups' sessions), as a two-LLM comparison prices each of its two."""
    return tuple(llms) * (2 if groups == 2 and len(llms) == 1 else 1)


def hidden_tokens(llms: Sequence[str], pilot: str | os.PathLike[str] | None, assumption: str | None,
                  thinking_budget: int | None, experiment: str | None = None) -> Any:
    """A reasoning model's completion tokens per call (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`): the
    assumption given, else the pilot's measurement where an LLM planned reasons, else the pilot's expected
    completion tokens per call (one price for plan and dry run), else None (a plan for a reasoning
    model is then refused by its pricer)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of, check_allowance
    from cogtestbed.llm_adapters.runs import hidden_tokens as ht

    if assumption is not None:
        assumed = ht.from_assumption(assumption)
        row = assumed.kinds["all"]
        for llm in llms:  # the tokens assumed per call stay within the model's output limit (its row)
            check_allowance("`assume_reasoning_tokens`", llm, capability_of(llm), row.high if ":" in assumption
                            else row.mean)
        return assumed
    if pilot is None:
        return None
    if any(ht.reasons(llm, thinking_budget) for llm in llms):
        return ht.from_pilot(Path(pilot), llms[0] if len(set(llms)) == 1 else None, experiment)
    return ht.expected_from_pilot(Path(pilot), llms, experiment)


def _hierarchical_plan(payload: dict[str, Any], result: Any, planner: Any, exp: Any, sims: int | None, workers: int,
                       max_cost: float | None, pilot: Any) -> dict[str, Any]:
    """``plan --fit hierarchical``: the size searched with the hierarchical fit from the per-subject
    MLE's choice (:func:`~cogtestbed.planning.fitcheck.search_hierarchical`, each size priced
    as the fixed search prices it); the plan's design, cost and power are then the hierarchical ones
    (``fit_check`` holds the search, ``mle_chosen`` the MLE's choice) and the recovery warnings say
    whether that fit removes the MLE's bias."""
    import dataclasses

    from cogtestbed.planning.fitcheck import HIERARCHICAL_SIMS, affordable_top, search_hierarchical
    from cogtestbed.planning.plan import Evaluated
    from cogtestbed.planning.plan_report import plan_payload, recovery_warnings

    start = result.chosen.point
    top = affordable_top(getattr(start, result.size_name), result.chosen.cost.dollars, max_cost)
    found = search_hierarchical(result.spec, exp, start, result.size_name, result.target, sims or HIERARCHICAL_SIMS,
                                workers, price=planner.exact_cost, top=top)
    chosen = Evaluated(found.point, found.estimate, planner.exact_cost(found.point))
    out = plan_payload(dataclasses.replace(result, chosen=chosen, spec=found.spec, fresh=None), planner.pricer, exp,
                       max_cost, pilot)
    out["mle_chosen"] = {**{k: payload[k] for k in ("chosen", "cost", "power")},
                         "test_name": (payload.get("recovery") or {}).get("test_name") or "test"}
    out["fit_check"] = found.check
    out["warnings"] = recovery_warnings(out["recovery"], found.check)
    return out


def _check_fit_option(fit: str, fit_sims: int | None, model_target: bool, looks: Any, precision: bool) -> None:
    """``--fit`` / ``--fit-sims`` checked against the plan asked for, before any simulation (``model_target``: a
    model's parameter is planned, no metric or test)."""
    if fit == "mle" and fit_sims is None:
        return
    from cogtestbed.planning.request_checks import check_fit_request

    check_fit_request(fit, fit_sims, model_target, looks)
    if precision:
        raise InputError("`fit` hierarchical plans a power plan's design; `precision` plans one subject's MLE "
                         "(drop one of them)")


def _extend_to(size_name: str, subjects: Sizes | None, runs: Sizes | None) -> int | None:
    """How far the size axis may grow: a default range to :data:`MAX_EXTENDED_SIZE` when needed,
    a range the user gave not at all."""
    from cogtestbed.planning.space import MAX_EXTENDED_SIZE

    given = subjects if size_name == "subjects" else runs
    return MAX_EXTENDED_SIZE if given is None else None


def _with_lapse_fit(spec: Any, lapse_fit: str | None) -> Any:
    """The study fitted with ``--lapse-fit`` (a model target's per-subject MLE with a lapse term, as
    ``cogtestbed fit --lapse`` fits it); refused in one line for a metric or test target."""
    if lapse_fit is None:
        return spec
    from cogtestbed.inference.lapse_text import lapse_option
    from cogtestbed.studies.study_kinds import PowerStudy

    if not isinstance(spec, PowerStudy):
        raise InputError("`lapse_fit` sets how a model target's per-subject MLE is fitted: it goes with `model` and "
                         "`effect`")
    return spec.model_copy(update={"lapse_fit": lapse_option(lapse_fit, "lapse_fit")})


def _searched(exp: Any, design: list[str] | Mapping[str, Any] | None, trials: Sizes | None
              ) -> tuple[dict[str, Any], Sizes | None, Any]:
    """(fixed design fields, the trials searched, the searched design field's axis or None) of ``design`` and
    ``trials``: ``design`` typed (``{FIELD: VALUE}``, a list of integers on the field searched:
    :func:`~cogtestbed.studies.sizes.plan_design_fields`) or the command line's ``NAME=VALUE`` items
    (:func:`~cogtestbed.studies.sizes.plan_design`)."""
    from cogtestbed.planning.space import Axis
    from cogtestbed.studies.sizes import plan_design, plan_design_fields

    fixed, swept, searched = (plan_design_fields(exp, design) if isinstance(design, Mapping)
                              else plan_design(exp, design))
    if swept != (None,):  # a list on the trials field: the trial counts searched
        if trials is not None:
            raise InputError("`trials` and a `design` list both size the run; give one of them")
        trials = Sizes.of(list(swept), "trials")
    elif trials is not None and exp.trials_field is not None and exp.trials_field in fixed:
        raise InputError(f"`trials` and `design` {exp.trials_field}={fixed[exp.trials_field]} both set the trials of "
                         "a run; give one of them")
    return fixed, trials, None if searched is None else Axis(*searched)


def _attach_looks(payload: dict[str, Any], result: Any, pricer: Any, exp: Any, looks: int | str, spending: str,
                  futility: bool, seq_sims: int | None, workers: int, null: str | None, say: Any,
                  null_sims: int | None = None, binding: bool = False, mc_se: float = 0.03) -> None:
    """The sequential plan of ``plan --looks`` at the chosen design (its searched field fixed):
    ``seq_sims`` studies under the effect (default: as many as give ``mc_se`` at the target power;
    ``--looks auto``: :data:`~cogtestbed.planning.kinds.sequential.seqplan.DEFAULT_SEQ_SIMS`, as a search
    picks among many rules)."""
    import dataclasses

    from cogtestbed.planning.kinds.sequential.seqpayload import attach_sequential
    from cogtestbed.planning.kinds.sequential.seqplan import DEFAULT_SEQ_SIMS, default_sims
    from cogtestbed.planning.space import spec_at

    result = dataclasses.replace(result, spec=spec_at(result.spec, result.chosen.point))
    if seq_sims is None:
        seq_sims = DEFAULT_SEQ_SIMS if looks == "auto" else default_sims(result.target, mc_se)
    if looks == "auto":
        from cogtestbed.planning.kinds.sequential.seqauto import attach_auto

        attach_auto(payload, result, pricer, exp, seq_sims, workers, null, say, null_sims, binding)
        return
    attach_sequential(payload, result, pricer, exp, int(looks), spending, futility,
                      seq_sims, workers, null, say=say, null_sims=null_sims, binding=binding)


def looks_option(looks: int | str | None) -> int | str | None:
    """``looks`` as K (an integer) or ``"auto"``; anything else refused in one line."""
    if looks is None or looks == "auto" or (isinstance(looks, int) and not isinstance(looks, bool)):
        return looks
    if isinstance(looks, str) and looks.strip().isdigit():
        return int(looks)
    raise InputError(f"`looks` must be an integer from 2 (a sequential design looks at least twice) or auto, "
                     f"got {looks!r}")


def check_sequential_options(looks: int | str | None, spending: str, futility: bool, null: str | None,
                              seq_sims: int | None, precision: Effect | str | None, test: str | None,
                              null_sims: int | None = None, binding: bool = False) -> None:
    """The options of a sequential plan go with ``--looks``, and ``--looks`` with a power target:
    an option that would be ignored is refused in one line."""
    if binding and not (looks == "auto" or futility):
        raise InputError("`binding_futility` makes futility stops count in the type-I error: it goes with `futility` "
                         "or `looks` auto")
    if looks is None and null_sims is not None:
        raise InputError("`null_sims` shapes a sequential plan: add `looks` K (or drop it)")
    if looks is None:
        given = [name for name, on in (("`spending`", spending != "obrien-fleming"), ("`futility`", futility),
                                       ("`null`", null is not None), ("`seq_sims`", seq_sims is not None)) if on]
        if given:
            raise InputError(f"{', '.join(given)} shape a sequential plan: add `looks` K (or drop them)")
        return
    from cogtestbed.planning.kinds.sequential.seqoptions import check_looks

    if looks == "auto":
        given = [name for name, on in (("`spending`", spending != "obrien-fleming"), ("`futility`", futility)) if on]
        if given:
            raise InputError(f"`looks` auto searches {' and '.join(given)}: drop {'them' if len(given) > 1 else 'it'}")
    else:
        check_looks(int(looks), spending)
    if precision:
        raise InputError("`looks` plans a sequential test of a target power; `precision` plans a fixed design's "
                         "estimate: use one of them")
    if null is not None and test is None:
        raise InputError("`null` names the agent under which a test's null holds: it goes with `test`")


def _say_look_estimate(planner: Any, say: Say, max_seconds: int | None) -> None:
    """The plan's up-front estimate per look (:func:`cogtestbed.planning.estimate.plan_look_line`),
    and its search refused when it may run past ``max_seconds`` (:func:`~.budget.check_time`: the other axes
    at their top, one simulation of the smallest design timed and scaled by size)."""
    from cogtestbed.planning import estimate
    from cogtestbed.planning.budget import check_time
    from cogtestbed.planning.kinds.power.power_sims import DECIDE_MAX_SIMS
    from cogtestbed.planning.plan import FIRST_BATCH

    if say is None and max_seconds is None:
        return
    size, others = planner.size, planner.others
    top = {a.name: a.values[-1] for a in others}
    smallest = planner.point(size.values[0], {a.name: a.values[0] for a in others})
    timed = estimate.timed_simulation(planner.spec, smallest)
    if timed is None:
        return

    def units(v: int) -> float:
        return estimate.design_units(planner.spec, planner.exp, planner.point(v, top))

    if max_seconds is not None:
        cost = estimate.study_seconds(planner, smallest, planner.point(size.values[-1], top), timed[0])
        check_time(max_seconds, cost(size.values[0]), cost, size.name, size.values, planner.target, planner.mc_se,
                   planner.power.workers, planner.point(size.values[0], top).label(size.name, planner.spec))
    line = estimate.plan_look_line(planner.spec, planner.exp, smallest, planner.point(size.values[-1], top),
                                   FIRST_BATCH, DECIDE_MAX_SIMS, planner.power.workers, timed)
    if line is not None and say is not None:
        say(line)


def _pilot_and_lapses(spec: Any, exp: Any, pilot: Path | None, llm: list[str], given_base: dict[str, float],
                      given_params: dict[str, float], invalid_rate: float | None,
                      random_rate: float, say: Say = None) -> tuple[Any, Any]:
    """The study with the pilot's fitted parameters and the expected invalid and random answers
    (``--invalid-rate``, else the pilot's rate) simulated as lapses; and the pilot read (or None)."""
    from cogtestbed.planning.plan_report import MAX_INVALID_RATE, apply_pilot, read_pilot

    pilot_info = read_pilot(pilot, exp, spec) if pilot is not None else None
    if pilot_info is not None and pilot_info.llm is not None and pilot_info.llm not in llm:
        warning = (f"warning: the pilot in {pilot} ran {pilot_info.llm}, not {' or '.join(llm)}: its invalid "
                   f"rate, tokens per call and fitted parameters are {pilot_info.llm}'s")
        if say is not None:
            say(warning)
        else:
            import warnings

            warnings.warn(warning, stacklevel=3)
    if pilot_info is not None:
        spec = apply_pilot(spec, exp, pilot_info, given_base, given_params)
    rate = invalid_rate if invalid_rate is not None else (pilot_info.invalid_rate if pilot_info else 0.0)
    if rate > MAX_INVALID_RATE:
        source = "`invalid_rate`" if invalid_rate is not None else f"the pilot in {pilot}"
        raise InputError(f"{source} gives {rate:.0%} invalid answers (more than {MAX_INVALID_RATE:.0%}): fix the "
                         "prompt or the answer settings first, or plan for an expected rate with `invalid_rate`")
    check_informative(rate, random_rate, "`invalid_rate`" if invalid_rate is not None else "the pilot's invalid rate")
    if rate > 0 or random_rate > 0:
        from cogtestbed.lapse import Lapse

        spec = spec.model_copy(update={"lapse": Lapse(invalid=rate, random=random_rate)})
    return spec, pilot_info


def _check_two_groups(looks: int | str | None, fit: str, people: str | None) -> None:
    """A model parameter's difference between two groups is planned as a fixed design, with the MLE
    or (two LLMs) the hierarchical fit; anything else refused in one line."""
    if looks is not None:
        raise InputError("`looks` plans a sequential test of one group's effect; a difference between two groups is "
                         "planned as a fixed design (drop `looks`)")
    if people and fit != "mle":
        raise InputError(f"{people} is planned with the per-subject MLE (the hierarchical fit of a human sample is "
                         "not planned yet): drop `fit` hierarchical")


def _with_human(spec: Any, exp: Any, human: Any, given_base: Mapping[str, float], as_base: bool,
                read_table: ReadTable, trials: Sizes | None) -> tuple[Any, Sizes]:
    """(the two-group study with its first group the fixed sample ``human`` (a trial table of the
    experiment, or a path to one), fitted once; its fitted medians the simulated LLM's base
    (``--base`` overrides them) unless ``as_base`` is false (a ``--population`` gives the base), the
    trials searched: the sample's own trials per subject, :func:`human_trials`; other ``trials`` are
    refused before the sample is fitted, as a population's people refuse them, :func:`equal_trials`).
    ``read_table(exp, human, source, sessions)``: :func:`cogtestbed.api.core.read_table`."""
    from cogtestbed.studies.model_studies import reference_sample

    table, _ = read_table(exp, human, "auto", None)  # each subject of the sample one unit: never pooled
    given = isinstance(human, (str, os.PathLike))
    source = str(human) if given else "the human sample"
    trials = equal_trials(trials, human_trials(table), f"the `human` sample {source}")
    # the plan's sentences name the data set (its file's name), not where it sits on this machine
    ref = reference_sample(exp.model(spec.models[0]), spec.effect, table, Path(human).name if given else source)
    if not as_base:
        return spec.model_copy(update={"reference": ref}), trials
    return spec.model_copy(update={"reference": ref, "base": {**ref.medians, **given_base}}), trials


def _target(llm: list[str], model: str | None, effect: Effect | None, metric: str | None, test: str | None,
            precision: Effect | None, people: str | None = None) -> tuple[Effect | None, Effect | None]:
    """(the effect, the precision target (parameter, half-width) or None) of the options; one clear
    error for any other mix.  A precision target plans a zero effect of its parameter."""
    from cogtestbed.planning.sizes import Effect

    target = None
    if precision is not None:
        if effect is not None or metric is not None or test is not None or model is None:
            raise InputError("`precision` PARAM=HALFWIDTH goes with `model` M (and no `effect`, `metric` or `test`)")
        target, effect = precision, Effect(precision.name, 0.0)
    elif not llm:
        raise InputError("a power target is priced by an LLM: give `llm` BACKEND:MODEL (or plan for `precision`, "
                         "which costs designs in trials without one)")
    if effect is not None and model is None:
        raise InputError("`effect` needs `model` (the model whose parameter carries the effect)")
    if model is not None and effect is None:
        raise InputError("`model` goes with `effect` NAME=SIZE")
    _check_groups(llm, effect, metric, precision, people)
    return effect, target


def _check_groups(llm: list[str], effect: Effect | None, metric: str | None, precision: Effect | None,
                  people: str | None) -> None:
    """The groups a target compares checked (part of :func:`_target`): one or two ``--llm`` (two
    compare in a metric or a model parameter), people (``--human``, or ``--population`` beside one
    ``--llm``: the option named by ``people``) one group beside one LLM's parameter."""
    if not 1 <= len(llm) <= 2 and precision is None:
        raise InputError(f"`llm` takes one model, or two for a difference between two LLMs; got {len(llm)}")
    if len(llm) == 2 and metric is None and effect is None:
        raise InputError("two `llm` compare two LLMs: in a metric (`metric` M `compare` A B) or in a model "
                         "parameter (`model` M `effect` NAME=DIFFERENCE)")
    if people and (effect is None or precision is not None):
        raise InputError(f"{people} compares a model parameter between an LLM and people: it goes with `model` M "
                         "`effect` NAME=DIFFERENCE")
    if people and len(llm) != 1:
        raise InputError(f"{people} is one group; the LLM compared with it is one `llm`")


def _plan_precision(spec: Any, exp: Any, parameter: str, halfwidth: float, assurance: float, runs: Sizes | None,
                    trials: Sizes | None, llm: list[str], seed: int, max_tokens: int | None, temperature: float | None,
                    reask: int, prices: Path | None, field_axis: Any = None, allow_unpriced: bool = False,
                    say: Say = None, batch: bool = False,
                    reasoning: dict[str, Any] | None = None) -> dict[str, Any]:
    """``plan --precision``: the cheapest design meeting the precision target
    (:mod:`cogtestbed.planning.kinds.precision.precision`); saved as ``precision.json`` (``plan.json``,
    which ``run --plan`` executes, belongs to power plans)."""
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.planning.kinds.precision.precision import PrecisionPlanner, precision_payload
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.space import Axis, declared_runs, parse_range, trials_values
    from cogtestbed.studies.study_data import design_for_trials

    if len(llm) > 1:
        raise InputError("`precision` prices one LLM: give `llm` once")
    if field_axis is not None:
        if trials is not None:
            raise InputError(f"`trials` and `design` {field_axis.name}=a,b,c: plan searches one size of the design "
                             f"at a time; fix the trials field with `design` {exp.trials_field}=N")
        trials_axis = field_axis
    elif exp.trials_field is None:
        if trials is not None:
            raise InputError(f"experiment {exp.name} has a fixed number of trials per run (no trials field)")
        trials_axis = Axis("trials", (int(design_for_trials(exp, None, spec.design).n_trials),))
    else:
        trials_axis = Axis("trials", trials_values(spec, exp, trials))
    pooled = exp.pooling_unit == "session"
    if runs is not None and not pooled:
        raise InputError(f"experiment {exp.name} pools subjects, not sessions: `runs` needs an experiment whose "
                         "pooling unit is the session")
    runs_axis = Axis("runs", (parse_range(runs, None, "runs") or declared_runs(spec, exp)) if pooled else (1,))
    pricer = Pricer(exp, (llm[0],), seed=seed, max_tokens=max_tokens,
                    temperature=resolve_temperature(exp.decoding, temperature)[0], reask=reask,
                    prices=prices, allow_unpriced=allow_unpriced, batch=batch, **(reasoning or {})) if llm else None
    planner = PrecisionPlanner(spec, exp, parameter, halfwidth, assurance, trials_axis, runs_axis, pricer,
                               on_progress=say)
    if say is not None:
        say(planner.estimate_line())
    return precision_payload(planner.plan(), planner)
