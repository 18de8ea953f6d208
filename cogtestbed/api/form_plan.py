"""A plan over prompt forms (``cogtestbed plan --forms``): :func:`plan_forms` chooses the number
of forms and the subjects per form jointly by dollars
(:func:`~cogtestbed.validation.design.form_plan.plan_forms_study`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError
from cogtestbed.request import build, derive_api
from cogtestbed.validation.design.plan_options import PLAN_FORMS_OPTIONS, PlanRequest


def _items(value: Mapping[str, Any] | Sequence[str] | str | None) -> list[str]:
    from cogtestbed.validation.studies.options import assignment_items

    return assignment_items(value)


@public(paths=('pilot', 'prices'))
@derive_api(PlanRequest, only=PLAN_FORMS_OPTIONS, required=PLAN_FORMS_OPTIONS[:3])
def plan_forms(experiment: str, **options: Any) -> dict[str, Any]:
    """Plan a study of ``model``'s ``effect`` (``{NAME: SIZE}``) across prompt forms: for each count
    in ``forms`` (``"1,2,4,8"``), the subjects per form that reach ``power`` at ``level`` with the
    forms-aware test (a t test on the form means), the forms' effect SD from ``form_sd`` or a
    ``pilot`` run; with ``llm`` each design is priced by the first LLM's session and the cheapest
    chosen (a reasoning model priced as :func:`cogtestbed.plan` prices it).
    Returns the plan (``scales``, ``rows``, ``chosen``; what ``plan --forms --json`` prints)."""
    from cogtestbed.api.core import design_overrides, get_experiment
    from cogtestbed.environments.forms import FormError, parse_form_sd
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.parameters import parse_assignments
    from cogtestbed.validation.design.form_plan import plan_forms_study
    from cogtestbed.validation.design.pricing import Pricer

    req = build(PlanRequest, {**options, "experiment": experiment})
    tg, lm, sim = req.target, req.llms, req.simulated
    forms, form_sd, model, effect, power, level, seed = (
        req.prompt_forms.forms, req.prompt_forms.form_sd, tg.model, tg.effect, tg.power, tg.level, req.seed)
    llm, prices, allow_unpriced, max_tokens, temperature, reask = (
        lm.llm, lm.prices, lm.allow_unpriced, lm.max_tokens, lm.temperature, lm.reask)
    reasoning_effort, thinking_budget, assume_reasoning_tokens = (
        lm.reasoning_effort, lm.thinking_budget, lm.assume_reasoning_tokens)
    pilot, params, base, design = sim.pilot, sim.params, sim.base, req.sizes.design
    exp = get_experiment(experiment)
    effect_items = _items(effect)
    if model is None or not effect_items:
        raise FormError("plan --forms needs --model and --effect NAME=SIZE")
    counts = _counts(forms if forms is not None else "")
    if len(effect_items) != 1:
        raise InputError(f"--effect takes one NAME=SIZE, got {len(effect_items)}")
    eff = next(iter(parse_assignments(effect_items, "--effect").items()))
    fields = design_overrides(_items(design)) if not isinstance(design, Mapping) else dict(design)
    design_obj = exp.design_cls(**fields) if fields else None
    llms = [llm] if isinstance(llm, str) else list(llm or [])
    pricer = None
    if llms:  # a session priced by the first LLM
        from cogtestbed.validation.design.request import hidden_tokens

        pricer = Pricer(exp, (llms[0],), seed=seed, max_tokens=max_tokens,
                        temperature=resolve_temperature(exp.decoding, temperature)[0], reask=reask,
                        prices=None if prices is None else Path(prices), allow_unpriced=allow_unpriced,
                        reasoning_effort=reasoning_effort, thinking_budget=thinking_budget,
                        hidden=hidden_tokens(llms[:1], pilot, assume_reasoning_tokens, thinking_budget,
                                            exp.name))
    pilot_table = _pilot(pilot)
    sd = dict(form_sd) if isinstance(form_sd, Mapping) else parse_form_sd(list(form_sd) if form_sd else None)
    merged = {**parse_assignments(_items(base), "--base"), **parse_assignments(_items(params), "--param")}
    return plan_forms_study(exp.name, model, eff, counts, sd, params=merged, target=power,
                            alpha=level, pricer=pricer, pilot=pilot_table, seed=seed, design=design_obj)


def _counts(forms: str | Sequence[int]) -> list[int]:
    """``--forms`` as counts of forms (``"1,2,4,8"`` or a list)."""
    from cogtestbed.environments.forms import FormError

    text = forms if isinstance(forms, str) else ",".join(str(int(f)) for f in forms)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise FormError(f"--forms takes counts of forms, e.g. 1,2,4,8, got {text!r}")
    return [int(p) for p in parts]


def _pilot(pilot: str | os.PathLike[str] | None) -> Any:
    """The pilot's trial table (a run directory's ``trials.parquet``, or the file), or None."""
    from cogtestbed.registry import read_trials

    if pilot is None:
        return None
    path = Path(pilot)
    return read_trials(path / "trials.parquet" if path.is_dir() else path)

