"""A plan request's refusals that read the request alone (and an experiment's shipped facts), before anything
is simulated (:func:`~cogtestbed.planning.request.check_target` calls them): a question no design answers
(:func:`check_answerable`), options a target never reads (:func:`check_behaviour_target`), and the simulated
subjects of a model target (:func:`check_simulated_subjects`).  Each refusal is one line naming the fields.

Imports nothing heavy: these run before the experiment's module is imported.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.planning.plan_options import PlanRequest
from cogtestbed.planning.sizes import Effect, Sizes, assignments

#: The least share of answers a plan simulates as informative (neither invalid nor random): below it no design
#: detects anything (the rule of ``plan_report.MAX_INVALID_RATE``, 90 % invalid, for both lapses together).
MIN_INFORMATIVE_SHARE = 0.1


#: A run directory's trial table (``llm_adapters.runs.config.TRIALS_FILE``, which imports numpy and pandas).
RUN_TRIALS_FILE = "trials.parquet"


def pilot_trials(path: str | os.PathLike[str]) -> Path:
    """The trial table of the pilot run in ``path``, or FileNotFoundError (one line) where the run has none."""
    trials = Path(path) / RUN_TRIALS_FILE
    if not trials.exists():
        raise FileNotFoundError(f"`pilot`: no {RUN_TRIALS_FILE} in {path} (run `cogtestbed run ... -o {path}` first)")
    return trials


def check_sources(req: PlanRequest) -> None:
    """The population and the pilot run a plan reads, found before anything heavy is imported (the lines the
    loaded plan gives): a ``population`` naming no shipped population and no file, a ``pilot`` without its
    run's trial table."""
    from cogtestbed.inference.population_source import population_path

    if isinstance(req.people.population, str | os.PathLike):
        population_path(req.people.population)
    if req.simulated.pilot is not None and not Path(req.simulated.pilot).is_file():  # a file: a forms plan's table
        pilot_trials(req.simulated.pilot)


def check_design_names(facts: Any, req: PlanRequest) -> None:
    """Refuse, from the experiment's facts (its ``design_fields``: before its module is imported), a ``design``
    item naming no field of its design, with the line the loaded experiment gives (a comma list: the searched
    field's refusal; a value: the design's).  A design of another shape is left to the loaded experiment."""
    design = req.sizes.design
    if not facts.design_fields or not design:
        return
    items = [f"{k}={v}" for k, v in design.items()] if isinstance(design, Mapping) \
        else [design] if isinstance(design, str) else [str(item) for item in design]
    for item in items:
        name, _, text = item.partition("=")
        name = name.strip()
        if not name or name in facts.design_fields:
            continue
        if "," in text and not text.strip().startswith(("[", "{", '"')):
            raise InputError(f"{name!r} is not a design field of {facts.name}; valid: {', '.join(facts.design_fields)}")
        raise InputError(f"design of {facts.name}: {name}: Extra inputs are not permitted")


def check_answerable(req: PlanRequest) -> None:
    """Refuse a power question no design can answer, before any simulation (each of these ran on to the largest
    size before): a zero effect, two equal settings compared, answers almost all invalid or random.  (A target
    power at or below the level is answered, honestly, by the smallest design: tests use it to run a plan fast.)"""
    tg, sim = req.target, req.simulated
    effect = Effect.of(tg.effect, "effect")
    if effect is not None and effect.size == 0:
        raise InputError(f"`effect` {effect.name}=0 is no effect: every design detects it at the test's level, "
                         "never at a power; give a nonzero size")
    if tg.compare is not None and tg.metric is not None:
        from cogtestbed.parameters import parse_agent

        if parse_agent(tg.compare[0]) == parse_agent(tg.compare[1]):
            raise InputError(f"`compare` {tg.compare[0]} and {tg.compare[1]} are one setting: no difference to "
                             "detect; compare two settings")
    invalid = sim.invalid_rate if sim.invalid_rate is not None else (None if sim.pilot is not None else 0.0)
    if invalid is not None and invalid + sim.random_rate <= 1.0:  # the pilot's rate: checked once it is read
        check_informative(invalid, sim.random_rate, "`invalid_rate`")


def check_informative(invalid: float, random: float, source: str) -> None:
    """Refuse lapses that leave less than :data:`MIN_INFORMATIVE_SHARE` of the answers informative: ``invalid`` (from
    ``source``: the option or a pilot) and ``random`` (``random_rate``) together."""
    if random > 0 and 1.0 - invalid - random < MIN_INFORMATIVE_SHARE:
        raise InputError(f"`random_rate` {random:.0%} and {source} {invalid:.0%} leave {1.0 - invalid - random:.0%} of "
                         f"the answers informative (less than {MIN_INFORMATIVE_SHARE:.0%}): no design detects anything "
                         "from them")


def given(group: Any, name: str) -> bool:
    """Whether the option ``name`` of the request group ``group`` was given a value other than its default."""
    default = next(f.default for f in dataclasses.fields(group) if f.name == name)
    return bool(getattr(group, name) != default)


def check_simulated_subjects(name: str, model: Any, effect: Effect | None, req: PlanRequest) -> None:
    """The simulated subjects of a model target checked from the request alone (part of
    :func:`~cogtestbed.planning.request.check_target`):
    each ``base`` a parameter of the model within its bounds, each ``params`` one the model's simulated agent takes
    and none that the effect moves (a ``params`` value is every subject's: the effect on it would not be simulated),
    no ``sd_between`` beside a ``population`` (its own SDs scatter the subjects) and at least 2 subjects."""
    sim = req.simulated
    bounds = {p.name: p for p in model.parameters}
    for key, value in assignments(sim.base, "base").items():
        if key not in bounds:
            raise InputError(f"`base` {key}: model {name} has parameters {', '.join(bounds)}")
        p = bounds[key]
        if not p.lower <= float(value) <= p.upper:
            raise InputError(f"`base` {key}={float(value):g} is outside its bounds [{p.lower:g}, {p.upper:g}]")
    params = assignments(sim.params, "params")
    taken = model.agent_params
    unknown = [key for key in params if taken is not None and key not in taken]
    if unknown:
        raise InputError(f"`params` {unknown[0]}: model {name}'s simulated agent ({model.agent}) takes "
                         f"{', '.join(taken)}")
    if effect is not None:
        moved = [key for key, w in shift_of(model, effect.name, 1.0).items() if w != 0]
        fixed = [key for key in params if key in moved]
        if fixed:
            raise InputError(f"`params` {fixed[0]}={float(params[fixed[0]]):g} fixes {fixed[0]} for every simulated "
                             f"subject, so the effect {effect.name}={effect.size:g} (which moves {', '.join(moved)}) "
                             "would not be simulated: set its population median with `base` instead")
    if req.people.population is not None and given(sim, "sd_between"):
        raise InputError("`population` scatters the subjects by its own posterior SDs: drop `sd_between`")
    if effect is not None and req.sizes.subjects is not None and Sizes.of(req.sizes.subjects, "subjects").hi < 2:
        raise InputError("`subjects` 1: a test of per-subject estimates needs at least 2 subjects in a group")


def check_behaviour_target(req: PlanRequest) -> None:
    """A metric or test target simulates the agent settings it names: refuse the options that set a model's
    population (``base``, ``sd_between``), which such a target would silently drop."""
    for name, what in (("base", "medians"), ("sd_between", "spread")):
        if given(req.simulated, name):
            raise InputError(f"`{name}` sets a model's population {what}: a metric or test target simulates the "
                             f"agent settings it names (`compare`, `agent`, `params`); drop `{name}`")


def shift_of(model: Any, effect: str, size: float) -> dict[str, float]:
    """Each parameter of ``model`` moved by ``effect`` = ``size`` (:func:`~cogtestbed.parameters.contrast_shift`, the
    rule the studies simulate)."""
    from cogtestbed.parameters import contrast_shift

    return contrast_shift(model.contrasts, effect, size)


#: Fitters ``plan --fit`` knows: the per-subject MLE (the search's, default) and the hierarchical model.
FIT_METHODS = ("mle", "hierarchical")


def check_fit_request(fit: str, sims: int | None, model_target: bool, looks: int | str | None) -> None:
    """Refuse a fitter ``plan`` cannot plan with (one line): ``fit`` one of :data:`FIT_METHODS`, ``fit_sims`` only
    with the hierarchical fit and at least 2, the hierarchical fit only of a model target (``model_target``) and a
    fixed design (no ``looks``)."""
    if fit not in FIT_METHODS:
        raise InputError(f"`fit` must be one of {', '.join(FIT_METHODS)}, got {fit!r}")
    if sims is not None and fit != "hierarchical":
        raise InputError("`fit_sims` sets how many studies `fit` hierarchical fits: add `fit` hierarchical "
                         "(or drop it)")
    if sims is not None and sims < 2:
        raise InputError(f"`fit_sims` must be at least 2 (a power and a bias need several studies), got {sims}")
    if fit == "mle":
        return
    if not model_target:
        raise InputError("`fit` hierarchical plans a model target's fit: it goes with `model` and `effect` (a metric "
                         "or test target fits no model)")
    if looks is not None:
        raise InputError("`fit` hierarchical plans a fixed design; a sequential plan's looks test per-subject MLEs "
                         "(drop `looks` or `fit` hierarchical)")


def check_agent_settings(spec: Any, exp: Any) -> None:
    """Refuse, before any simulation, an agent setting of a metric or test target outside its parameter's bounds
    (``compare`` A B on top of ``params``, or ``agent``): before, a simulation worker refused it seconds later."""
    compare = getattr(spec, "compare", None)
    if not hasattr(spec, "agent") or not hasattr(spec, "params"):
        return
    from cogtestbed.parameters import check_setting_bounds

    field, settings = ("compare", list(compare)) if compare is not None else ("agent", [])
    bounds = {p.name: p for p in exp.agent(spec.agent).parameters}
    check_setting_bounds(field, spec.agent, spec.params, settings, bounds)


def check_target_mix(req: PlanRequest, llms: list[str]) -> None:
    """The mixes of targets, sizes and LLMs that the study built later refuses, refused from the request alone (so
    in well under a second): two targets at once, ``subjects`` on a metric or test target (sized in ``runs``), a
    precision target priced by two LLMs."""
    tg = req.target
    forms = [name for name, on in (("`effect`", tg.effect), ("`metric`", tg.metric), ("`test`", tg.test)) if on]
    if tg.precision is None and len(forms) > 1:
        raise InputError("power needs exactly one of `effect` NAME=SIZE (model parameter), `metric` M `compare` A B, "
                         f"or `test` KEY `agent` A; got {', '.join(forms)}")
    if tg.model is None and (tg.metric is not None or tg.test is not None) and req.sizes.subjects is not None:
        raise InputError("`subjects` sizes a model-level target; a metric or test target is sized in `runs`")
    if tg.precision is not None and len(llms) > 1:
        raise InputError("`precision` prices one LLM: give `llm` once")


def check_params_keep_effect(spec: Any, exp: Any) -> None:
    """Refuse, on the loaded experiment, a ``params`` value (every simulated subject's) on an agent parameter that the
    effect moves through the model's generator (``cbn-3p``'s ``m`` moves the agent's ``m1`` and ``m2``): the effect on
    it would not be simulated.  The names the model and its agent share are refused from the request alone
    (:func:`check_simulated_subjects`)."""
    effect, params = getattr(spec, "effect", None), getattr(spec, "params", None)
    if effect is None or not params or getattr(spec, "effect_size", 0) == 0:
        return
    name = spec.models[0]
    model, gen = exp.model(name), exp.generator(name)
    base = {p.name: p.default for p in model.parameters}
    moved = {**base, **{k: base[k] + v for k, v in shift_of(model, effect, spec.effect_size).items()}}
    before, after = gen.agent_params(base), gen.agent_params(moved)
    fixed = [k for k in params if k in after and before.get(k) != after[k]]
    if fixed:
        key = fixed[0]
        raise InputError(f"`params` {key}={float(params[key]):g} fixes {key} for every simulated subject, so the "
                         f"effect {effect}={spec.effect_size:g} (which moves the agent's {key}) would not be "
                         "simulated: set the model's population medians with `base` instead")


def check_backends(llm: str | list[str] | tuple[str, ...] | None) -> None:
    """Refuse an ``llm`` of no known backend as such (one line; before, a plan said "no price for ...")."""
    from cogtestbed.llm_adapters.clients.backends import parse_spec

    for spec in [llm] if isinstance(llm, str) else list(llm or []):
        parse_spec(spec)


def check_sizes(facts: Any, req: PlanRequest, model_target: bool) -> None:
    """Refuse, from the experiment's facts (:class:`~cogtestbed.planning.facts.ExperimentFacts`: shipped,
    so before its module is imported), the sizes its design cannot take: ``runs`` for a ``model_target`` of an
    experiment that pools no sessions, ``trials`` of an experiment without a trials field, or none of them a
    multiple of its field's step (the refusals :func:`~cogtestbed.planning.space.design_axes` gives).
    With ``design`` given (it may change the step), or people's trials, the loaded experiment decides."""
    sz, pp = req.sizes, req.people
    if model_target and sz.runs is not None and facts.pooling_unit != "session":
        raise InputError(f"experiment {facts.name} pools subjects, not sessions: `runs` needs an experiment whose "
                         "pooling unit is the session")
    if sz.trials is None or sz.design or pp.human is not None or pp.population is not None:
        return
    if facts.trials_field is None:
        raise InputError(f"experiment {facts.name} has a fixed number of trials per run (no trials field)")
    step = facts.trials_step
    trials = Sizes.of(sz.trials, "trials")
    values = trials.values()
    reachable = (any(v % step == 0 for v in values) if isinstance(values, tuple | list)
                 else -(-trials.lo // step) * step <= trials.hi) if step > 0 else True
    if not reachable:
        raise InputError(f"no trial count in {str(trials)!r} is reachable: {facts.name}'s {facts.trials_field} "
                         f"scales a session in steps of {step} trials")


def check_compare_settings(facts: Any, req: PlanRequest) -> None:
    """Refuse, from the experiment's facts (before its module is imported), the agent settings of a metric or test
    target that its study would refuse (the lines :func:`check_agent_settings` and the study's own check give): two
    agents in ``compare``, an agent the experiment lacks, a value outside its parameter's bounds (``compare`` or
    ``agent`` on top of ``params``), a name that is no parameter of the agent, a test the metrics do not report."""
    from cogtestbed.parameters import parse_agent

    tg = req.target
    given = assignments(req.simulated.params, "params")
    if tg.metric is not None and tg.compare is not None and tg.agent is None:
        (name_a, a), (name_b, b) = parse_agent(tg.compare[0]), parse_agent(tg.compare[1])
        if name_a != name_b:
            raise InputError(f"`compare` takes two settings of one agent, got {name_a!r} and {name_b!r}")
        _check_agent_facts(facts, "compare", name_a, given, [a, b])
    elif tg.test is not None and tg.agent is not None and tg.compare is None and tg.metric is None:
        name, params = parse_agent(tg.agent)
        _check_agent_facts(facts, "agent", name, {**given, **params}, [])
        _check_test_facts(facts, facts.resolve(tg.test))


def _check_agent_facts(facts: Any, field_: str, agent: str, params: dict[str, Any],
                       settings: list[dict[str, float]]) -> None:
    """The agent ``agent`` of ``facts``, each of ``settings`` on top of ``params`` within its bounds, and every name
    a parameter of the agent (in the order the loaded checks refuse them)."""
    from cogtestbed.experiments._names import UnknownNameError
    from cogtestbed.parameters import check_parameter_names, check_setting_bounds

    if agent not in facts.agents:
        raise UnknownNameError("agent", agent, list(facts.agents), f"experiment {facts.name}")
    bounds = {p.name: p for p in facts.agents[agent]}
    check_setting_bounds(field_, agent, params, settings, bounds)
    for setting in (params, *settings):
        check_parameter_names(setting, set(bounds), f"agent {agent}")


def _check_test_facts(facts: Any, test: str) -> None:
    """``test`` one the experiment's metrics report (its facts' ``tests``)."""
    from cogtestbed.experiments._names import unknown_test

    if test not in facts.tests:
        raise unknown_test(test, facts.tests, facts.name, facts.aliases)


def check_lapse_fit(req: PlanRequest) -> None:
    """Refuse a ``lapse_fit`` that no fit takes (:func:`~cogtestbed.inference.lapse_text.lapse_option`) or beside a
    metric or test target (no model is fitted), from the request alone."""
    lapse_fit = req.simulated.lapse_fit
    if lapse_fit is None:
        return
    if req.target.model is None:
        raise InputError("`lapse_fit` sets how a model target's per-subject MLE is fitted: it goes with `model` and "
                         "`effect`")
    from cogtestbed.inference.lapse_text import lapse_option

    lapse_option(lapse_fit, "lapse_fit")


def check_design_trials(facts: Any, req: PlanRequest) -> None:
    """Refuse, from the experiment's facts (its ``trials_field``), ``trials`` beside a ``design`` that sets the
    trials of a run too: the field fixed (``FIELD=N``) or searched (its one list, ``FIELD=a,b,c``), the lines
    :func:`~cogtestbed.studies.sizes.plan_design` gives.  A design of any other shape (a malformed or
    repeated item, another list) is left to the loaded experiment, which refuses that first."""
    field_ = facts.trials_field
    design = req.sizes.design
    if req.sizes.trials is None or not design or field_ is None:
        return
    fields = _design_fields(design)
    if fields is None or field_ not in fields:
        return
    value = fields[field_]
    if not isinstance(value, list):
        raise InputError(f"`trials` and `design` {field_}={value} both set the trials of a run; give one of them")
    if len(fields) == 1 and value and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        raise InputError("`trials` and a `design` list both size the run; give one of them")


def _design_fields(design: Any) -> dict[str, Any] | None:
    """``design`` (``{FIELD: VALUE}`` or the command line's ``NAME=VALUE`` items) as its fields, a list where it
    lists integers, when every value but at most one list is plain (no comma) and no name repeats; else None."""
    import json

    if isinstance(design, Mapping):
        out = {k: list(v) if isinstance(v, list | tuple | range) else v for k, v in design.items()}
    else:
        out = {}
        for item in [design] if isinstance(design, str) else list(design):
            name, sep, text = str(item).partition("=")
            name = name.strip()
            if not sep or not name or name in out or text.strip().startswith(("[", "{", '"')):
                return None
            try:
                out[name] = [int(x) for x in text.split(",")] if "," in text else json.loads(text)
            except ValueError:  # a text value (json's error is a ValueError), or a list of no integers
                if "," in text:
                    return None
                out[name] = text
    lists = [k for k, v in out.items() if isinstance(v, list)]
    return out if len(lists) <= 1 else None


def priced_llms(llms: list[str] | tuple[str, ...], prices: Any, allow_unpriced: bool, effort: str | None,
                budget: int | None, hidden: Any) -> list[Any]:
    """Each LLM's price (:func:`~cogtestbed.llm_adapters.clients.prices.require_price`: None where it has none and
    ``allow_unpriced``), its reasoning controls checked against its capability row
    (:func:`~cogtestbed.llm_adapters.clients.capabilities.check_reasoning`), and a priced reasoning model refused
    without its ``hidden`` tokens per call (a pilot's or an assumption): the refusals of
    :class:`~cogtestbed.planning.pricing.Pricer`, which the request alone decides (nothing heavy imported)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of, check_reasoning
    from cogtestbed.llm_adapters.clients.prices import PriceTable, require_price
    from cogtestbed.llm_adapters.runs.hidden_tokens import reasons, refusal

    table = PriceTable(prices)
    price = [require_price(table, spec, allow_unpriced) for spec in llms]
    for spec, one in zip(llms, price, strict=True):
        check_reasoning(spec, capability_of(spec), effort, budget)
        if one is not None and hidden is None and reasons(spec, budget):
            raise InputError(refusal(spec))
    return price


def check_adaptive(exp: Any, req: Any) -> None:
    """The ``adaptive`` kind's refusals from the request: an experiment whose trials cannot be chosen (a learning
    task), a ``model`` other than the experiment's adaptive model (which the plan would have ignored), an LLM of no
    known backend (before: "no price for ...") and an ``adaptive`` parameter its adaptive model lacks (before: after
    "simulating ...").  ``exp``: the experiment, or its shipped facts (:mod:`~cogtestbed.planning.facts`:
    checked before the experiment is imported)."""
    from cogtestbed.experiments._adaptive import adaptive_targets
    from cogtestbed.planning.facts import facts_of

    facts = facts_of(exp)
    if "refused" in facts.adaptive:
        raise InputError(facts.adaptive["refused"])
    name = facts.adaptive["model"]
    model = req.target.model
    if model is not None and model != name:
        raise InputError(f"`model` {model}: {facts.name}'s adaptive sessions are chosen and fitted with its adaptive "
                         f"model {name}: give `model` {name} (or drop it)")
    check_backends(req.llms.llm)
    adaptive_targets(facts.name, name, facts.model(name).parameters.names, req.adaptive_sessions.adaptive)
