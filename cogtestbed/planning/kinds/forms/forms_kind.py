"""The ``forms`` plan kind (``cogtestbed plan --forms``, ``ct.plan(..., forms=...)``): the number of prompt forms
and the subjects per form chosen jointly by dollars
(:func:`~cogtestbed.planning.kinds.forms.form_plan.plan_forms_study`),
its request checked before anything is simulated (:func:`check_forms`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds import PlanContext, Planned


def _items(value: Any) -> list[str]:
    from cogtestbed.studies.options import assignment_items

    return assignment_items(value)


def forms_counts(forms: str | Sequence[int] | None) -> list[int]:
    """``forms`` as counts of forms (``"1,2,4,8"`` or a list)."""
    from cogtestbed.environments.forms import FormError

    if forms is None:
        raise FormError("`forms` takes counts of forms, e.g. 1,2,4,8")
    parts = [p.strip() for p in forms.split(",") if p.strip()] if isinstance(forms, str) else [str(f) for f in forms]
    if not parts or not all(p.isdigit() for p in parts):
        raise FormError(f"`forms` takes counts of forms, e.g. 1,2,4,8, got {forms!r}")
    return [int(p) for p in parts]


def forms_effect(model: str | None, effect: Any) -> tuple[str, float]:
    """The one ``(NAME, SIZE)`` a forms plan plans for."""
    from cogtestbed.environments.forms import FormError
    from cogtestbed.parameters import parse_assignments

    given = dict(effect) if isinstance(effect, Mapping) else parse_assignments(_items(effect), "`effect`")
    if model is None or not given:
        raise FormError("`forms` needs `model` and `effect` NAME=SIZE")
    if len(given) != 1:
        raise InputError(f"`effect` takes one NAME=SIZE, got {len(given)}")
    name, size = next(iter(given.items()))
    return name, float(size)


def refuse_metric_target(target: Any, facts: Any) -> None:
    """A forms plan of a metric or test target, refused in one line that says why and names the nearest
    plannable questions: the forms' spread enters the plan as a random effect on a model parameter's
    per-subject MLE; a metric comparison tests the two groups' per-run estimates by permutation, whose
    exact null has no term for a shift shared by one form's runs."""
    what = (f"`metric` {target.metric}" if getattr(target, "metric", None) is not None
            else f"`test` {target.test}" if getattr(target, "test", None) is not None else None)
    if what is None:
        return
    models = ", ".join(facts.models) if facts.models else None
    raise InputError(
        f"`forms` plans wording as a random effect on a model parameter's per-subject estimate; {what} is tested "
        "by a permutation of per-run estimates, which has no term for a shift shared by one form's runs: plan "
        f"the same {what} without `forms` and `form_sd` (one form per LLM)"
        + (f", or `forms` with `model` ({models}) and `effect` NAME=SIZE" if models else ""))


def form_sd_of(form_sd: Any) -> dict[str, float]:
    """``form_sd`` as ``{PARAM: SD}``."""
    from cogtestbed.environments.forms import parse_form_sd

    return dict(form_sd) if isinstance(form_sd, Mapping) else parse_form_sd(list(form_sd) if form_sd else None)


def check_forms(exp: Any, req: Any) -> None:
    """The refusals of a forms plan reachable from its request alone (before any simulation): counts, the
    effect, the model and every parameter ``effect`` and ``form_sd`` name (the model's parameters listed).
    ``exp``: the experiment, or its shipped facts (:mod:`~cogtestbed.planning.facts`)."""
    from cogtestbed.planning.facts import facts_of
    from cogtestbed.planning.request_checks import check_answerable

    facts = facts_of(exp)
    tg = req.target
    refuse_metric_target(tg, facts)
    if req.people.population is not None:
        raise InputError("`forms` plans prompt forms around the model's medians; `population` is not planned with "
                         "forms yet: drop one")
    forms_counts(req.prompt_forms.forms)
    name, _ = forms_effect(tg.model, tg.effect)
    check_answerable(req)
    if req.simulated.pilot is None and not req.prompt_forms.form_sd:
        raise InputError("a forms plan needs `form_sd` PARAM=SD (the wording effect to plan for) or `pilot`")
    if tg.model not in facts.models:
        raise InputError(f"`model` {tg.model!r} is no model of {facts.name}: choose one of {', '.join(facts.models)}")
    model = facts.model(tg.model)
    names = list(model.parameters.names)
    contrasts = list(model.contrasts)
    if name not in names + contrasts:
        raise InputError(f"`effect` {name}: model {tg.model} has parameters {', '.join(names)}"
                         + (f" and contrasts {', '.join(contrasts)}" if contrasts else ""))
    form_sd = form_sd_of(req.prompt_forms.form_sd)
    unknown = [p for p in form_sd if p not in names]
    if unknown:
        raise InputError(f"`form_sd` {', '.join(unknown)}: model {tg.model} has parameters {', '.join(names)} (a form "
                         "shifts a parameter of the model, not a contrast)")
    _check_agent(facts, tg.model, [*form_sd, *([name] if name in names else [])])


def _check_agent(facts: Any, model_name: str, wanted: list[str]) -> None:
    """A forms plan shifts the simulated agent's parameters by the model's names: refuse a parameter the
    model's generator does not pass to its agent under that name (belief-coherence's ``mnl``)."""
    model = facts.model(model_name)
    if model.agent_params is None:
        raise InputError(f"`model` {model_name}: {facts.name} simulates no agent for it, so prompt forms cannot be "
                         "planned for it")
    missing = [p for p in dict.fromkeys(wanted) if p not in model.agent_params]
    if missing:
        raise InputError(f"`form_sd` {', '.join(missing)}: model {model_name}'s simulated agent ({model.agent}) "
                         f"takes {', '.join(model.agent_params)}, not the model's {', '.join(missing)}; a forms plan "
                         f"shifts the agent's parameters by the model's names, so {model_name} cannot be planned with "
                         "forms")


def run_forms(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    """The forms plan's payload (``forms.json``): each count's cheapest design and the choice, a session priced by
    the first LLM (a reasoning model priced as every plan prices it)."""
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.parameters import parse_assignments
    from cogtestbed.planning.kinds.forms.form_plan import plan_forms_study
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.request import hidden_tokens

    tg, lm, sim = req.target, req.llms, req.simulated
    check_forms(exp, req)
    fields = _design_fields(req.sizes.design)
    design_obj = exp.design_cls(**fields) if fields else None
    llms = [lm.llm] if isinstance(lm.llm, str) else list(lm.llm or [])
    pricer = None
    if llms:  # a session priced by the first LLM
        pricer = Pricer(exp, (llms[0],), seed=req.seed, max_tokens=lm.max_tokens,
                        temperature=resolve_temperature(exp.decoding, lm.temperature)[0], reask=lm.reask,
                        prices=None if lm.prices is None else Path(lm.prices), allow_unpriced=lm.allow_unpriced,
                        reasoning_effort=lm.reasoning_effort, thinking_budget=lm.thinking_budget,
                        hidden=hidden_tokens(llms[:1], sim.pilot, lm.assume_reasoning_tokens, lm.thinking_budget,
                                             exp.name))
    merged = {**_assigned(sim.base, "`base`", parse_assignments), **_assigned(sim.params, "`params`",
                                                                             parse_assignments)}
    effect = forms_effect(tg.model, tg.effect)
    payload = plan_forms_study(exp.name, str(tg.model), effect,
                               forms_counts(req.prompt_forms.forms), form_sd_of(req.prompt_forms.form_sd),
                               params=merged, target=tg.power, alpha=tg.level, pricer=pricer, pilot=_pilot(sim.pilot),
                               seed=req.seed, design=design_obj)
    return Planned({**payload, "effect_name": effect[0]}, "subjects")


def _assigned(value: Any, name: str, parse: Any) -> dict[str, float]:
    return {k: float(v) for k, v in value.items()} if isinstance(value, Mapping) else parse(_items(value), name)


def _design_fields(design: Any) -> dict[str, Any]:
    """``design`` (a mapping, or ``NAME=VALUE`` items: ``null`` is none) as the design's fields."""
    if isinstance(design, Mapping):
        return dict(design)
    out: dict[str, Any] = {}
    for item in _items(design):
        name, sep, given = item.partition("=")
        if not sep:
            raise InputError(f"`design` expects NAME=VALUE, got {item!r}")
        out[name.strip()] = None if given.strip() == "null" else given.strip()
    return out


def _pilot(pilot: str | os.PathLike[str] | None) -> Any:
    """The pilot's trial table (a run directory's ``trials.parquet``, or the file), or None."""
    from cogtestbed.registry import read_trials

    if pilot is None:
        return None
    path = Path(pilot)
    return read_trials(path / "trials.parquet" if path.is_dir() else path)
