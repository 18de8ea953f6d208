"""A monitored run of two LLMs: pair by pair (one session of each LLM a step), the e-value and confidence
sequence recorded after each, stopping at the boundary or the cap; resumed on the same path; replayed by
``looks``; and a plan whose monitor no run executes as planned refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from monitor_support import kill9_after_first_step, recorded_steps

from cogtestbed.cli import run_cli

LLMS = ("hf:tiny-random", "hf:tiny-random-chat")


def _plan(path: Path, cap: int, **extra: Any) -> Path:
    from cogtestbed.planning.kinds.monitor.monitor_file import sealed
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment("instrumental-learning")
    monitor = sealed({"experiment": exp.name, "model": "rw-pm", "effect": "optimism_bias", "scale": "natural",
                      "null_value": 0.0, "lapse_fit": None, "pairs": True, "bounds": [-2.0, 2.0], "level": 0.05,
                      "cap": cap, "planned_bet": 1.9, "halfwidth": 0.0, "symmetry_scale": 0.5, "outside": "stop",
                      **extra})
    run = {"experiment": exp.name, "llms": list(LLMS), "subjects": cap, "seed": 0,
           "design": design_for_trials(exp, 4, {}).model_dump(mode="json"), "max_tokens": 4, "temperature": 0.0,
           "reask": 0, "max_calls": None, "max_cost": None, "monitor": monitor}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name,
                                                "monitor": {"cap": cap}, "run": run}))
    return path / "plan.json"


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pair's difference as if LLM 2's optimism bias were 0.6 above LLM 1's (tiny random models answer
    nothing valid; the calls, the records, the stop and the replay are the real ones).  It reads both
    tables, so a pair exists only once both LLMs played that session."""
    import cogtestbed.runs.monitor_run as monitor_run

    def difference(exp: Any, design: Any, tables: Any, unit: int) -> float:
        assert all((t["subject"] == unit).any() for t in tables)
        return 0.6 - 0.02 * unit

    monkeypatch.setattr(monitor_run, "pair_value", difference)


def test_a_two_llm_monitor_buys_pair_by_pair_stops_at_the_boundary_and_looks_replays_it(
        tmp_path, monkeypatch, capsys, shifted):

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    plan, out = _plan(tmp_path / "plan", 12), tmp_path / "run"
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out)]) == 0
    steps = recorded_steps(out)
    assert [s["subject"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[-1]["decision"] == "efficacy" and 4 <= len(steps) < 12 and steps[-1]["e_value"] >= 20
    assert all(s["decision"] == "continue" and s["e_value"] < 20 for s in steps[:-1])
    assert steps[-1]["lower"] < steps[-1]["estimate"] < steps[-1]["upper"]  # the pair difference's mean
    dirs = [out / "1-hf-tiny-random", out / "2-hf-tiny-random-chat"]
    for d in dirs:  # each LLM played exactly the pairs monitored: no session bought after the stop
        assert pd.read_parquet(d / "trials.parquet")["subject"].nunique() == len(steps)
    err = capsys.readouterr().err
    assert f"pair {len(steps)}: statistic" in err and "efficacy" in err
    assert run_cli(["looks", str(out), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["reproduced"] is True and len(replay["looks"]) == len(steps)
    # an invocation that died after pair 3: --resume continues the same path from pair 4, from the cache
    (out / "monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps[:3]))
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out), "--resume"]) == 0
    assert recorded_steps(out) == steps
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out), "--resume"]) == 0
    assert "nothing to resume" in capsys.readouterr().err
    assert run_cli(["run", "--monitor", str(plan), "-o", str(out)]) == 2  # a fresh run over a monitored one
    assert "already holds a monitored run" in capsys.readouterr().err


def test_a_two_llm_monitor_without_evidence_stops_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    plan, out = _plan(tmp_path / "plan", 3), tmp_path / "run"
    assert run_cli(["run", "--plan", str(plan), "-o", str(out)]) == 0
    # tiny random models answer nothing valid: no pair has a difference, the e-value stays 1
    assert [(s["subject"], s["observation"], s["e_value"], s["decision"]) for s in recorded_steps(out)] == [
        (1, None, 1.0, "continue"), (2, None, 1.0, "continue"), (3, None, 1.0, "futility")]
    assert run_cli(["looks", str(out)]) == 0


def test_a_monitor_plan_is_never_run_as_another_design(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    plan = _plan(tmp_path / "plan", 3)
    assert run_cli(["run", "--monitor", str(plan), "--llm", LLMS[0], "-o", str(tmp_path / "one")]) == 2
    err = capsys.readouterr().err.strip()
    assert "monitors pairs of two LLMs' units: run it with both LLMs" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "one").exists()
    # a monitor plan whose run section does not execute its monitor (as two-LLM plans once were written)
    payload = json.loads(plan.read_text())
    del payload["run"]["monitor"]
    plan.write_text(json.dumps(payload))
    assert run_cli(["run", "--monitor", str(plan), "-o", str(tmp_path / "fixed")]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a monitor plan that no run executes as planned" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "fixed").exists()


@pytest.mark.slow
def test_a_two_llm_discounting_score_monitor_against_the_local_server_resumes_after_kill9(tmp_path, server):
    """The temporal-discounting score between two served models, monitored pair by pair: killed -9 after its
    first recorded pair, resumed on the same path, replayed by ``looks``."""
    import os
    import subprocess
    import sys

    from cogtestbed.planning.kinds.monitor.monitor_file import sealed
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    url, _ = server
    exp = get_experiment("temporal-discounting")
    monitor = sealed({"experiment": exp.name, "metric": "score", "metric_options": {}, "pairs": True,
                      "bounds": None, "level": 0.05, "cap": 4, "planned_bet": 1.5, "halfwidth": 0.0,
                      "symmetry_scale": 3.0, "outside": "stop"})
    run = {"experiment": exp.name, "llms": ["openai:tiny-random", "openai:tiny-random-chat"], "subjects": 4,
           "seed": 0, "design": design_for_trials(exp, None, {}).model_dump(mode="json"), "max_tokens": 4,
           "temperature": 0.0, "reask": 0, "max_calls": None, "max_cost": None, "monitor": monitor}
    (tmp_path / "plan").mkdir()
    plan = tmp_path / "plan" / "plan.json"
    plan.write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name, "run": run}))
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "COGTESTBED_CACHE": str(tmp_path / "cache.sqlite")}
    prices = tmp_path / "prices.toml"  # USD per million tokens: 1000 makes a token cost $0.001
    prices.write_text('["openai:tiny-random"]\ninput = 1000\noutput = 1000\n'
                      '["openai:tiny-random-chat"]\ninput = 1000\noutput = 1000\n')
    args = ["run", "--monitor", str(plan), "-o", str(out), "--mode", "completions", "--base-url", url,
            "--prices", str(prices)]
    before = kill9_after_first_step(args, env, out, 300)
    assert 1 <= len(before) < 4
    done = subprocess.run([sys.executable, "-m", "cogtestbed", *args, "--resume"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    after = recorded_steps(out)
    assert after[: len(before)] == before and [s["subject"] for s in after] == list(range(1, len(after) + 1))
    assert after[-1]["decision"] in ("efficacy", "futility") and (len(after) == 4 or after[-1]["e_value"] >= 20)
    manifests = sorted(out.rglob("run.json"))
    assert manifests
    for path in manifests:  # each model's run is priced from the price file by the tokens of the calls it paid
        stats = json.loads(path.read_text())["stats"]
        calls = pd.read_parquet(path.with_name("calls.parquet"))
        paid = calls[~calls["cached"].astype(bool)]
        assert stats["total_calls"] == len(paid) >= 1  # the kill and the resume repaid no call
        assert stats["total_cost_usd"] > 0
        assert stats["total_cost_usd"] == pytest.approx(
            float((paid["prompt_tokens"] + paid["completion_tokens"]).sum()) * 1e-3, abs=1e-6)
    checked = subprocess.run([sys.executable, "-m", "cogtestbed", "looks", str(out), "--json"], env=env,
                             capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0 and json.loads(checked.stdout)["reproduced"] is True


@pytest.mark.parametrize(("experiment", "kind", "groups"), [
    ("temporal-discounting", "metric-power", 1), ("instrumental-learning", "power", 2),
    ("instrumental-learning", "power", 1)])
def test_a_planned_monitor_is_written_for_the_run_that_executes_it(experiment, kind, groups):
    from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor, monitor_digest
    from cogtestbed.planning.kinds.monitor.monitor_kind import run_settings
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.driver import declared_studies, spec_from_decl

    exp = get_experiment(experiment)
    decl = next(d for _, d in declared_studies(exp) if d.kind == kind)
    spec = spec_from_decl(exp, decl, reps=1) if kind == "metric-power" else \
        spec_from_decl(exp, decl, reps=1, groups=groups)
    pairs = kind == "metric-power" or groups == 2
    mon = {"cap": 7, "bounds": None if kind == "metric-power" else [-1.0, 1.0], "level": 0.05, "planned_bet": 1.2,
           "halfwidth": 0.0 if pairs else 0.03, "symmetry_scale": 2.0 if pairs else None}
    run = run_settings({"subjects": 5, "max_calls": 50, "llms": ["a", "b"] if pairs else ["a"]}, mon, spec,
                       {"subjects": 10})
    design = run["monitor"]
    assert run["subjects"] == 7 and run["max_calls"] == 70  # each LLM's calls per session, times the cap
    assert design["pairs"] is pairs and design["digest"] == monitor_digest(design)
    assert checked_monitor(design, "run.monitor") == design
    assert (design.get("metric") == "score") is (kind == "metric-power")
