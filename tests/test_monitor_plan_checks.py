"""A hand-edited monitor plan is checked in full before ``run`` buys its first call, and a subject's statistic
outside the plan's bounds is clipped as the plan declares or stops the run in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cogtestbed.cli import run_cli
from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor, monitor_digest, sealed
from cogtestbed.runs.monitor_run import steps

DESIGN = {"experiment": "instrumental-learning", "model": "rw-pm", "effect": "optimism_bias", "scale": "natural",
          "null_value": 0.0, "lapse_fit": None, "bounds": [-1.0, 1.0], "level": 0.05, "cap": 6,
          "planned_bet": 1.2, "halfwidth": 0.05, "symmetry_scale": None, "outside": "stop"}
#: A port nothing listens on: a run that tried a call would fail there, not with the plan's refusal.
NOWHERE = "http://127.0.0.1:9/v1"


def _plan(path: Path, monitor: dict[str, Any]) -> Path:
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment("instrumental-learning")
    run = {"experiment": exp.name, "llms": ["openai:tiny-random"], "subjects": 6, "seed": 0,
           "design": design_for_trials(exp, 8, {}).model_dump(mode="json"), "max_tokens": 4, "temperature": 0.0,
           "reask": 0, "max_calls": None, "max_cost": None, "monitor": monitor}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name, "run": run}))
    return path / "plan.json"


@pytest.mark.parametrize(("edit", "message"), [
    ({"level": math.nan}, "level must be a finite number"),
    ({"level": 1.5}, "level must lie in (0, 1)"),
    ({"planned_bet": math.nan}, "planned_bet must be a finite number"),
    ({"planned_bet": 40.0}, "would stake more than the capital"),
    ({"bounds": [1.0, -1.0]}, "lo < hi"),
    ({"bounds": [-1.0, math.inf]}, "bounds must be a finite number"),
    ({"bounds": [0.2, 1.0]}, "must lie strictly inside the bounds"),
    ({"halfwidth": -0.1}, "must lie strictly inside the bounds"),
    ({"symmetry_scale": 0.0}, "symmetry_scale must be positive"),
    ({"cap": 2.5}, "cap must be a whole number"),
    ({"outside": "ignore"}, "outside must be one of clip, stop"),
])
def test_a_bad_hand_edited_plan_is_refused_before_any_call(tmp_path, monkeypatch, capsys, edit, message):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    plan, out = _plan(tmp_path / "plan", sealed({**DESIGN, **edit})), tmp_path / "run"
    code = run_cli(["run", "--monitor", str(plan), "-o", str(out), "--mode", "completions", "--base-url", NOWHERE])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "run.monitor" in err and len(err.splitlines()) == 1, err
    assert not (out / "trials.parquet").exists()


def test_an_edit_the_digest_does_not_cover_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    edited = {**sealed(DESIGN), "bounds": [-0.01, 0.01]}  # narrowed by hand, the digest left as planned
    for monitor, message in ((edited, "was edited after it was planned"),
                             ({k: v for k, v in DESIGN.items()}, "has no `digest`")):
        plan = _plan(tmp_path / "plan", monitor)
        code = run_cli(["run", "--plan", str(plan), "-o", str(tmp_path / "run"), "--base-url", NOWHERE])
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and len(err.splitlines()) == 1, err


def test_the_digest_is_the_designs_own_content():
    design = sealed(DESIGN)
    assert design["digest"] == monitor_digest(design) == monitor_digest(DESIGN)
    assert monitor_digest({**DESIGN, "cap": 7}) != design["digest"]
    assert checked_monitor(design, "w") == design


def test_an_observation_outside_the_bounds_stops_or_is_clipped_as_declared():
    narrow = {**DESIGN, "bounds": [-0.02, 0.02], "halfwidth": 0.0, "planned_bet": None}
    with pytest.raises(InputError, match=r"subject 2's statistic 0\.6 lies outside the plan's bounds"):
        steps(narrow, [0.01, 0.6, 0.6])  # unchecked, 0.6 on [-0.02, 0.02] bet the e-value to 10^5 at once
    clipped = steps({**narrow, "outside": "clip"}, [0.01, 0.6, 0.6])
    assert [s["observation"] for s in clipped] == [0.01, 0.02, 0.02]
    assert clipped == steps({**narrow, "outside": "clip"}, [0.01, 0.02, 0.02])
    assert all(s["e_value"] < 20 for s in clipped)


def test_ct_monitor_gives_the_e_values_the_stop_and_the_interval_of_a_users_values(tmp_path):
    import doctest

    import cogtestbed as ct
    import cogtestbed.api.monitor as public_monitor

    assert "monitor" in dir(ct) and "MonitorPath" in dir(ct)
    assert doctest.testmod(public_monitor, raise_on_error=False).failed == 0  # the docstring's example runs
    values = [0.6, 0.5, 0.7, 0.6, 0.55, 0.65, 0.6, 0.7]
    path = ct.monitor(values, bounds=(-0.2, 1.0))
    assert path.stop == 7 and path.decision == "efficacy" and path.e_values[-1] >= 20 > path.e_values[-2]
    assert path.steps == steps({"bounds": [-0.2, 1.0], "level": 0.05, "cap": 8, "planned_bet": None}, values)[:7]
    assert 0 < path.interval[0] < 0.6 < path.interval[1]  # the confidence sequence has left the null
    capped = ct.monitor([0.1, None, -0.1], bounds=(-1.0, 1.0), cap=3)
    assert capped.stop == 3 and capped.decision == "futility" and capped.steps[1]["observation"] is None
    assert ct.monitor([0.1], bounds=(-1.0, 1.0)).decision == "continue"  # no cap: only a rejection stops
    # a plan's monitor: the plan file is checked (its digest) and its bet, null and cap used
    plan = _plan(tmp_path / "plan", sealed(DESIGN))
    by_plan = ct.monitor(values, plan=plan)
    assert by_plan.steps == steps(DESIGN, values)[:by_plan.stop or len(values)]
    with pytest.raises(InputError, match="edited after it was planned"):
        ct.monitor(values, plan=_plan(tmp_path / "edited", {**sealed(DESIGN), "level": 0.5}))
    with pytest.raises(InputError, match="lo < hi"):
        ct.monitor(values, bounds=(1.0, -1.0))
    with pytest.raises(InputError, match="outside the plan's bounds"):
        ct.monitor([3.0], bounds=(-1.0, 1.0))
