"""CONTRIBUTING.md's "Adding a plan kind", followed from outside the package: a kind defined here, registered
through the public registry (``cogtestbed.extend``) with an option of its own; ``ct.plan`` takes that option for
that kind, and refuses it for another kind and an option no kind declares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed.extend import KindOption, PlanContext, PlanKind, Planned, register_plan_kind
from cogtestbed.planning.plan_kinds import unregister_plan_kind


def _budget(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    """Sessions a budget buys at a fixed price a session (the kind's own option)."""
    per_session = ctx.options["dollars_per_session"]
    return Planned({"chosen": {"sessions": int(req.llms.max_cost // per_session), "experiment": exp.name,
                               "dollars_per_session": per_session}}, "subjects")


def _check(exp: Any, req: Any) -> None:
    if req.llms.max_cost is None:
        raise ct.InputError("a budget plan needs `max_cost`")


BUDGET = PlanKind("budget", "how many sessions a budget buys (a test's kind)", _budget, check=_check,
                  accepts=frozenset({"max_cost"}),
                  options=(KindOption("dollars_per_session", 0.25, "what one session costs"),),
                  lines=lambda payload, size: [f"{payload['chosen']['sessions']} sessions"])


@pytest.fixture
def budget() -> Any:
    register_plan_kind(BUDGET)
    try:
        yield BUDGET
    finally:
        unregister_plan_kind("budget")


def test_an_outside_kind_takes_its_own_option(budget: PlanKind, tmp_path: Path) -> None:
    planned = ct.plan("instrumental-learning", question="budget", max_cost=5.0, dollars_per_session=0.5)
    assert planned.kind == "budget" and planned.chosen == {"sessions": 10, "experiment": "instrumental-learning",
                                                           "dollars_per_session": 0.5}
    assert planned.lines() == ["10 sessions"]
    default = ct.plan("instrumental-learning", question="budget", max_cost=5.0)  # the option's default, 0.25
    assert default.chosen["sessions"] == 20 and default.chosen["dollars_per_session"] == 0.25
    files = planned.save(tmp_path / "plan")
    assert json.loads(files["budget"].read_text())["chosen"]["sessions"] == 10


def test_the_kinds_own_option_is_refused_by_another_kind(budget: PlanKind) -> None:
    with pytest.raises(ct.InputError, match=r"a power plan does not take `dollars_per_session`: drop it"):
        ct.plan("instrumental-learning", model="rw-pm", effect="optimism_bias=0.2", dollars_per_session=0.5)


def test_an_option_no_kind_declares_is_refused(budget: PlanKind) -> None:
    with pytest.raises(ct.InputError, match="unexpected keyword argument 'cents_per_session'"):
        ct.plan("instrumental-learning", question="budget", max_cost=5.0, cents_per_session=50)
    # a request option the kind does not read
    with pytest.raises(ct.InputError, match=r"a budget plan does not take `looks`"):
        ct.plan("instrumental-learning", question="budget", max_cost=5.0, looks=3)


def test_without_the_kind_its_option_is_unknown() -> None:
    with pytest.raises(ct.InputError, match="unexpected keyword argument 'dollars_per_session'"):
        ct.plan("instrumental-learning", question="power", dollars_per_session=0.5)


def test_a_kind_may_not_redeclare_a_request_option() -> None:
    clash = PlanKind("clash", "a kind redeclaring `looks`", _budget, options=(KindOption("looks", 2),))
    with pytest.raises(ct.InputError, match="declares looks, already an option of every plan"):
        register_plan_kind(clash)
