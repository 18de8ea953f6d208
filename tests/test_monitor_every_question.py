"""`run --monitor` for every question `plan --monitor` answers: one LLM (the composite-null mean test, subject
by subject), two LLMs (a parameter's difference, pair by pair: tests/test_monitor_pair_run.py) and a metric
difference between two LLMs (pair by pair) execute as planned and `looks` replays them; the questions it does
not answer (an LLM against people; a metric difference with one LLM) are refused in one line at `plan` and at
`run`, never run as another design.  Offline: tiny random local models, which answer nothing valid, so each
unit's value is substituted where the test needs evidence (the calls, the records and the stop are real)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from monitor_support import recorded_steps

from cogtestbed.cli import run_cli

LLMS = ("hf:tiny-random", "hf:tiny-random-chat")


def _plan(path: Path, experiment: str, llms: list[str], trials: int | None, monitor: dict[str, Any],
          **top: Any) -> Path:
    from cogtestbed.planning.kinds.monitor.monitor_file import sealed
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment(experiment)
    design = sealed({"experiment": exp.name, "level": 0.05, "outside": "stop", **monitor})
    run = {"experiment": exp.name, "llms": llms, "subjects": monitor["cap"], "seed": 0,
           "design": design_for_trials(exp, trials, {}).model_dump(mode="json"), "max_tokens": 4,
           "temperature": 0.0, "reask": 0, "max_calls": None, "max_cost": None, "monitor": design}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name,
                                                "monitor": {"cap": monitor["cap"]}, "run": run, **top}))
    return path / "plan.json"


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_one_llm_composite_null_monitor_runs_subject_by_subject_and_looks_replays_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """One LLM, the plan kind's composite null: every subject a look against the stored null interval, the
    e-value crossing 1/α stops the run; the run's own trial table replays every step."""
    import cogtestbed.runs.monitor_run as monitor_run

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setattr(monitor_run, "unit_value", lambda exp, design, table, unit: 1.0)
    interval = [-0.31, 0.09]
    plan = _plan(tmp_path / "plan", "instrumental-learning", [LLMS[0]], 4, {
        "model": "rw-pm", "effect": "optimism_bias", "scale": "natural", "null_value": 0.0, "lapse_fit": None,
        "pairs": False, "bounds": [-1.0, 1.0], "cap": 12, "planned_bet": 1.8, "halfwidth": 0.2,
        "null_center": -0.11, "null_interval": interval, "nuisance_region": {"alpha": [0.05, 0.95],
                                                                           "beta": [1.0, 30.0]},
        "symmetry_scale": None, "futility": 0.3})
    out = tmp_path / "run"
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out)]) == 0
    steps = recorded_steps(out)
    assert [s["subject"] for s in steps] == list(range(1, len(steps) + 1)) and 2 <= len(steps) < 12
    assert steps[-1]["decision"] == "efficacy" and steps[-1]["e_value"] >= 20
    assert all(s["e_value"] < 20 for s in steps[:-1])
    assert steps[-1]["lower"] > steps[0]["lower"]  # the confidence sequence narrows as subjects come in
    capsys.readouterr()
    assert run_cli(["looks", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reproduced"] is True


def test_a_metric_difference_monitor_runs_pair_by_pair_and_looks_replays_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A metric difference between two LLMs (the temporal-discounting score): one session of each LLM a step,
    the symmetry test on the pair's difference, stopping at the boundary; `looks` replays it.  The plan keeps the
    group-sequential design it was compared with (`plan --monitor --looks K`): the run still executes the
    monitor, not the looks."""
    import pandas as pd

    import cogtestbed.runs.monitor_run as monitor_run

    def difference(exp: Any, design: Any, tables: Any, unit: int) -> float:
        assert all((t["subject"] == unit).any() for t in tables)  # both LLMs played this session
        return 4.0

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setattr(monitor_run, "pair_value", difference)
    plan = _plan(tmp_path / "plan", "temporal-discounting", list(LLMS), None, {
        "metric": "score", "metric_options": {}, "pairs": True, "bounds": None, "cap": 10, "planned_bet": 1.5,
        "halfwidth": 0.0, "symmetry_scale": 3.0, "futility": None},
        sequential={"statistic": {"kind": "metric-power"}, "design": {"sizes": [3, 6, 9]}})
    out = tmp_path / "run"
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out)]) == 0
    assert not (out / "looks.jsonl").exists()
    steps = recorded_steps(out)
    assert steps[-1]["decision"] == "efficacy" and 2 <= len(steps) < 10
    assert [s["subject"] for s in steps] == list(range(1, len(steps) + 1))
    for d in (out / "1-hf-tiny-random", out / "2-hf-tiny-random-chat"):  # no session bought after the stop
        assert pd.read_parquet(d / "trials.parquet")["subject"].nunique() == len(steps)
    capsys.readouterr()
    assert run_cli(["looks", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reproduced"] is True


def test_a_metric_difference_monitor_with_one_llm_is_refused_at_plan_and_at_run(
        tmp_path: Path, no_simulation: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["plan", "temporal-discounting", "--metric", "score", "--compare", "hyperbolic:k=0.01",
                    "hyperbolic:k=0.05", "--llm", "openai:gpt-4o-mini", "--monitor"]) == 2
    assert "a monitored metric difference is run pair by pair" in _one_line_error(capsys)
    plan = _plan(tmp_path / "plan", "temporal-discounting", list(LLMS), None, {
        "metric": "score", "metric_options": {}, "pairs": True, "bounds": None, "cap": 3, "planned_bet": 1.5,
        "halfwidth": 0.0, "symmetry_scale": 3.0, "futility": None})
    assert run_cli(["run", "--monitor", str(plan), "--llm", LLMS[0], "-o", str(tmp_path / "one")]) == 2
    assert "run it with both LLMs" in _one_line_error(capsys)
    assert not (tmp_path / "one").exists()


def test_an_llm_against_people_is_not_monitored_refused_in_one_line(
        no_simulation: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2",
                    "--llm", "openai:gpt-4o-mini", "--population", "human:cogbench-instrumental",
                    "--monitor"]) == 2
    assert "a monitor plan does not take --population" in _one_line_error(capsys)


def test_a_monitor_dearer_than_its_fixed_design_by_more_than_the_bar_recommends_the_fixed_design() -> None:
    from cogtestbed.planning.kinds.monitor.monitor_kind import DEARER_BAR, _equal_power_lines, recommended

    eq = {"test": "t-test", "fixed_size": 12.2, "fixed_size_se": 0.4, "sequential_power": 0.81,
          "sequential_power_se": 0.02, "fixed_size_whole": 13, "fixed_power": 0.82, "fixed_power_se": 0.01}
    dear = {"equal_power": eq, "saving": -0.25, "saving_se": 0.05, "saving_null": -1.0, "saving_null_se": 0.1}
    assert DEARER_BAR == 0.10 and recommended(dear) == "fixed"
    assert recommended({**dear, "saving": -0.05}) == "monitor" and recommended({**dear, "saving": 0.2}) == "monitor"
    lines = _equal_power_lines(dear, "subjects")
    assert lines[-1].startswith("  recommended: the fixed design") and "costs 25.0% more subjects" in lines[-1]
    assert not any("recommended" in x for x in _equal_power_lines({**dear, "saving": -0.05}, "subjects"))
    assert recommended({"saving": -0.3}) == "monitor"  # a saving not measured at equal power decides nothing


def test_a_composite_plan_shows_the_fixed_design_valid_for_its_null() -> None:
    from cogtestbed.planning.kinds.monitor.monitor_kind import _valid_fixed_row

    fm = {"n": 80, "power": 0.772, "power_se": 0.055, "null_rejection": 0.047, "null_upper": 0.069,
          "test": "one-sided t-test against +0.0891", "null_studies": "effect studies re-centered there"}
    row, note = _valid_fixed_row({"fixed_measured": fm, "dollars_per_unit": 0.5})
    assert row.split()[:4] == ["fixed,", "valid", "80", "80"] and "$40.0000" in row and "0.772±0.055" in row
    assert "one-sided t-test against +0.0891" in note and "not valid over the nuisance region" in note
    assert _valid_fixed_row({"fixed_measured": {k: v for k, v in fm.items() if k != "test"}}) == []
