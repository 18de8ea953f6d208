"""A monitored run (issue 74) against the local OpenAI-compatible server on 127.0.0.1: subject by subject it
records the e-value and the confidence sequence, stops at the boundary or the cap, resumes after kill -9 on the
same path, and ``cogtestbed looks`` recomputes every step from the trial table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from monitor_support import kill9_after_first_step, recorded_steps

from cogtestbed.cli import run_cli


def _plan(path: Path, cap: int, null_value: float, bounds: tuple[float, float],
          extra: dict[str, Any] | None = None) -> Path:
    from cogtestbed.planning.kinds.monitor.monitor_file import sealed
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment("instrumental-learning")
    monitor = sealed({"experiment": exp.name, "model": "rw-pm", "effect": "optimism_bias", "scale": "natural",
                      "null_value": null_value, "lapse_fit": None, "bounds": list(bounds), "level": 0.05, "cap": cap,
                      "planned_bet": None, **(extra or {})})
    run = {"experiment": exp.name, "llms": ["openai:tiny-random"], "subjects": cap, "seed": 0,
           "design": design_for_trials(exp, 8, {}).model_dump(mode="json"), "max_tokens": 4, "temperature": 0.0,
           "reask": 0, "max_calls": None, "max_cost": None, "monitor": monitor}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name, "run": run}))
    return path / "plan.json"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    values = {"OPENAI_API_KEY": "sk-test", "COGTESTBED_CACHE": str(tmp_path / "cache.sqlite")}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


@pytest.mark.slow
def test_monitored_run_with_no_evidence_stops_at_the_cap(tmp_path, server, env, capsys):
    url, _ = server
    # the tiny random model answers nothing valid: no subject has an estimate, the e-value stays 1
    plan, out = _plan(tmp_path / "plan", 3, 0.0, (-1.0, 1.0)), tmp_path / "run"
    assert run_cli(["run", "--plan", str(plan), "-o", str(out), "--mode", "completions", "--base-url", url]) == 0
    steps = recorded_steps(out)
    assert [(s["subject"], s["observation"], s["e_value"], s["decision"]) for s in steps] == [
        (1, None, 1.0, "continue"), (2, None, 1.0, "continue"), (3, None, 1.0, "futility")]
    assert steps[-1]["lower"] < -0.9 and steps[-1]["upper"] > 0.9  # the confidence sequence is the whole range
    capsys.readouterr()
    assert run_cli(["looks", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reproduced"] is True


@pytest.mark.slow
def test_monitored_run_stops_at_the_boundary_and_looks_reproduces_it(tmp_path, server, env, capsys, monkeypatch):
    import pandas as pd

    import cogtestbed.runs.monitor_run as monitor_run

    url, _ = server
    fit = monitor_run.subject_values

    def shifted(exp: Any, design: Any, table: Any) -> dict[int, float]:
        """Each subject's estimate as if its answers were valid and its optimism bias 0.6 (the tiny model
        answers nothing valid; the run, its calls, its records and the replay are the real ones)."""
        return {s: 0.6 - 0.01 * s for s in fit(exp, design, table)}

    monkeypatch.setattr(monitor_run, "subject_values", shifted)
    plan, out = _plan(tmp_path / "plan", 12, 0.0, (-0.2, 1.0)), tmp_path / "run"
    # `run --monitor PLAN`, the spelling of `run --plan PLAN`
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out), "--mode", "completions", "--base-url", url]) == 0
    steps = recorded_steps(out)
    assert [s["subject"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[-1]["decision"] == "efficacy" and len(steps) < 12 and steps[-1]["e_value"] >= 20
    assert all(s["decision"] == "continue" and s["e_value"] < 20 for s in steps[:-1])
    assert steps[-1]["lower"] > 0  # the confidence sequence has left the null
    assert pd.read_parquet(out / "trials.parquet")["subject"].nunique() == len(steps)  # no call bought after
    capsys.readouterr()
    assert run_cli(["looks", str(out), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["reproduced"] is True and len(replay["looks"]) == len(steps)
    bad = [dict(s) for s in steps]  # a tampered step is caught
    bad[0]["e_value"] *= 2
    (out / "monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in bad))
    assert run_cli(["looks", str(out)]) == 1
    (out / "monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    assert run_cli(["run", "--plan", str(plan), "-o", str(out), "--mode", "completions", "--base-url", url,
                    "--resume"]) == 0  # a resumed stopped run buys nothing
    assert "nothing to resume" in capsys.readouterr().err


@pytest.mark.slow
def test_kill9_then_resume_continues_the_same_path(tmp_path, server, env):
    url, _ = server
    plan, out = _plan(tmp_path / "plan", 4, 0.0, (-1.0, 1.0)), tmp_path / "run"
    args = ["run", "--plan", str(plan), "-o", str(out), "--mode", "completions", "--base-url", url]
    before = kill9_after_first_step(args, {**__import__("os").environ, **env}, out, 180)
    assert 1 <= len(before) < 4
    assert run_cli([*args, "--resume"]) == 0
    after = recorded_steps(out)
    assert after[: len(before)] == before  # the same path, continued
    assert [s["subject"] for s in after] == list(range(1, len(after) + 1))
    assert after[-1]["decision"] in ("efficacy", "futility")
    assert after[-1]["decision"] == "futility" and len(after) == 4  # no valid answer: no evidence, the cap
    assert run_cli(["looks", str(out)]) == 0


def test_steps_decide_and_a_torn_last_line_is_dropped(tmp_path):
    from cogtestbed.errors import InputError
    from cogtestbed.runs.monitor_run import recorded_steps, steps

    design = {"bounds": [-0.2, 1.0], "level": 0.05, "cap": 12, "planned_bet": None}
    rising = steps(design, [0.6] * 12)
    first = next(i for i, s in enumerate(rising) if s["decision"] != "continue")
    assert rising[first]["decision"] == "efficacy" and rising[first]["e_value"] >= 20 > rising[first - 1]["e_value"]
    assert all(a["e_value"] < b["e_value"] for a, b in zip(rising, rising[1:], strict=False))
    # the plan's Kelly bet against a null interval 0 ± 0.1: the same data are weaker evidence against it
    wide = steps({**design, "planned_bet": 1.5, "halfwidth": 0.1}, [0.6] * 12)
    narrow = steps({**design, "planned_bet": 1.5, "halfwidth": 0.0}, [0.6] * 12)
    assert narrow[3]["e_value"] > wide[3]["e_value"] > 1.0
    assert narrow[3]["lower"] == wide[3]["lower"]  # the confidence sequence is the mean's, whatever the null
    flat = steps(design, [float("nan")] * 12)
    assert [s["decision"] for s in flat] == ["continue"] * 11 + ["futility"] and flat[-1]["e_value"] == 1.0
    (tmp_path / "monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in rising[:2]) + '{"subj')
    assert [s["subject"] for s in recorded_steps(tmp_path)] == [1, 2]
    (tmp_path / "monitor.jsonl").write_text(json.dumps(rising[1]) + "\n")
    with pytest.raises(InputError, match="not step 1"):
        recorded_steps(tmp_path)
