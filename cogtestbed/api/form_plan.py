"""A plan over prompt forms: :func:`plan_forms`, the ``forms`` plan kind of :func:`cogtestbed.plan` as a
function of its own options (the number of forms and the subjects per form chosen jointly by dollars,
:func:`~cogtestbed.planning.kinds.forms.form_plan.plan_forms_study`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence  # noqa: F401 - named by the derived keywords' annotations (design)
from typing import Any

from cogtestbed.api.checks import public
from cogtestbed.planning.plan_options import PLAN_FORMS_OPTIONS, PlanRequest
from cogtestbed.request import derive_api


@public(paths=('pilot', 'prices'))
@derive_api(PlanRequest, only=PLAN_FORMS_OPTIONS, required=PLAN_FORMS_OPTIONS[:3])
def plan_forms(experiment: str, **options: Any) -> dict[str, Any]:
    """Plan a study of ``model``'s ``effect`` (``{NAME: SIZE}``) across prompt forms: for each count
    in ``forms`` (``"1,2,4,8"``), the subjects per form that reach ``power`` at ``level`` with the
    forms-aware test (a t test on the form means), the forms' effect SD from ``form_sd`` or a
    ``pilot`` run; with ``llm`` each design is priced by the first LLM's session and the cheapest
    chosen (a reasoning model priced as :func:`cogtestbed.plan` prices it).  The same as
    ``cogtestbed.plan(experiment, forms=..., ...)`` (its ``forms`` kind); returns the plan's payload
    (``scales``, ``designs``, ``chosen``, ``request``; what ``plan --forms --json`` prints).

    Returns
    -------
    Plan
        The forms plan: how many prompt forms and subjects measure the form SD, priced.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.plan_forms("instrumental-learning", model="nope")
    Traceback (most recent call last):
    ...
    cogtestbed.errors.InputError: ...
    """
    from cogtestbed.api.plan import plan

    return plan(experiment, **options).payload
