"""The demo's pilot across prompt forms → forms plan (issue 42 item 6), on simulated sessions
standing in for SmolLM2's (the real model runs in test_cli_process's demo job)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import cogtestbed.api.demo_real as real
import cogtestbed.runs.real_model as real_model
from cogtestbed.environments.forms import FormDesign
from cogtestbed.registry import get_experiment, write_trials
from cogtestbed.simulation import simulate


def _fake_sessions(params: dict[str, float], sd: float, visits: int) -> Any:
    """A stand-in for run_session: RW± subjects across the pilot's forms, written where the run writes."""
    def run_session(client: Any, name: str, mode: str, run_dir: Path, cache: Path, *, seed: int, subjects: int,
                    forms: tuple[int, ...], **design: Any) -> Any:
        assert mode == "completions" and name == real.PILOT_EXPERIMENT and design == {"visits_per_casino": 2}
        table = simulate(name, "rw-pm", subjects, seed, params, forms=FormDesign(forms, {"alpha_pos": sd}),
                         design=get_experiment(name).design_cls(visits_per_casino=visits))  # type: ignore[call-arg]
        write_trials(table, run_dir / "trials.parquet", {"experiment": name})
        summary = SimpleNamespace(trials=len(table), calls=len(table), seconds=1.0, valid_rate=1.0,
                                  as_json=lambda: {"trials": len(table)})
        return None, summary
    return run_session


CLIENT = SimpleNamespace(spec="hf:smollm2-135m", with_chat=lambda chat: None)


def test_an_identified_pilot_gives_the_form_sd_and_the_plan_choice(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_model, "run_session",
                        _fake_sessions({"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0}, 1.5, 24))
    monkeypatch.setattr(real, "FORMS_PILOT", {"forms": 4, "subjects": 24, "visits_per_casino": 2})
    out = real.forms_pilot(CLIENT, tmp_path, seed=2)
    plan = out["json"]["plan"]
    sc = plan["scales"]
    assert sc["identified"] and sc["source"].startswith("pilot: 4 forms × 24 subjects")
    assert "--forms 1,2,4,8 --pilot" in out["json"]["command"] and "NOT" not in out["verdict"]
    assert f"SD τ = {sc['tau']:.3g} [" in out["verdict"] and "from the pilot" in out["verdict"]
    chosen = plan["chosen"]
    assert (chosen is None and "no count of forms reaches power 0.8" in out["verdict"]) or \
        f"{chosen['forms']} forms × {chosen['subjects_per_form']} subjects" in out["verdict"]
    assert out["tables"] and list(out["tables"][0][1]["forms"]) == [2, 4, 8]


def test_a_pilot_stuck_at_the_bounds_prints_no_form_sd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions of 4 trials: the estimates sit at their bounds, so the report says the pilot does not
    identify the form SD, prints no estimate, and plans for the stated assumption instead."""
    monkeypatch.setattr(real_model, "run_session",
                        _fake_sessions({"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0}, 0.15, 1))
    monkeypatch.setattr(real, "FORMS_PILOT", {"forms": 2, "subjects": 8, "visits_per_casino": 2})
    out = real.forms_pilot(CLIENT, tmp_path, seed=1)
    body = out["json"]
    assert body["identified"] is False and body["problems"] and "plan" not in body
    assert "does NOT identify the form SD, so no estimate is reported" in out["verdict"]
    assert "from the pilot" not in out["verdict"] and "ASSUMED form SD (`--form-sd alpha_pos=0.15`" in out["verdict"]
    assert body["assumed_plan"]["scales"]["source"].startswith("simulated")
