"""Issue 30's leftovers: a failed sampled step says it sampled, dry runs with the model's own
tokenizer, two-step's request range, memory refused from the design, per-experiment stops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app

REVEALED = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
            "--design", "n_samples=3")


def test_a_failed_sampled_step_records_its_method_in_the_row(server: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random-chat", "--mode", "chat",
                                   "--base-url", url, "--subjects", "1", "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    trials = pd.read_parquet(tmp_path / "run" / "trials.parquet")
    assert len(trials) == 4
    failed = trials[~trials["valid"]]
    assert len(failed) >= 1  # the tiny random model's samples match no continuation
    assert failed["parse_error"].str.contains("none of 3 sampled answers matched").all()
    # every row, failed ones included, says the run sampled N = 3 (not NA / 0)
    assert trials["method"].astype(str).tolist() == ["sampled"] * 4
    assert trials["n_samples"].tolist() == [3] * 4


def test_experiments_declare_their_answer_stop_and_length() -> None:
    from cogtestbed.registry import experiment_names, get_experiment

    defaults = {n: get_experiment(n).env_cls.answer_defaults(get_experiment(n).env_cls.design_cls())
                for n in experiment_names()}
    assert (defaults["belief-coherence"].stop, defaults["belief-coherence"].max_tokens) == (("\n\n",), 64)
    one_line = [n for n, d in defaults.items() if (d.stop, d.max_tokens) == (("\n",), 8)]
    assert sorted(one_line) == sorted(n for n in defaults if n != "belief-coherence")
    collider = get_experiment("collider").env_cls
    cot = collider.answer_defaults(collider.design_cls(prompt_type="cot"))
    conf = collider.answer_defaults(collider.design_cls(prompt_type="numeric_conf"))
    assert (cot.stop, cot.max_tokens, conf.max_tokens) == (("\n",), 512, 64)


def test_smollm2_answers_belief_coherence_with_the_experiments_stop(smollm2: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SmolLM2 answers App. B's two-line format in chat mode ("No: 0.50\\nYes: 0.50"): a newline stop
    cut it to one line (0 of 5 valid); the experiment's own stop (a blank line, 64 tokens) keeps it."""
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    design = ("--design", "n_contexts=1", "--design", "n_reps=1", "--design", "variants=pi0")
    base = ["run", "belief-coherence", "--llm", "hf:smollm2-135m", *design]
    res = CliRunner().invoke(app, [*base, "-o", str(tmp_path / "own")])
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "own" / "run.json").read_text())["config"]
    assert (config["mode"], config["stop"], config["max_tokens"]) == ("chat", ["\n\n"], 64)
    own = pd.read_parquet(tmp_path / "own" / "trials.parquet")
    calls = pd.read_parquet(tmp_path / "own" / "calls.parquet")
    assert len(own) == 5 and int(own["valid"].sum()) >= 2
    assert calls.loc[calls["valid"], "raw_response"].str.count("\n").eq(1).all()  # two lines each
    res = CliRunner().invoke(app, [*base, "--stop", "\\n", "--max-tokens", "8", "-o", str(tmp_path / "newline")])
    assert res.exit_code == 0, res.output
    cut = pd.read_parquet(tmp_path / "newline" / "trials.parquet")
    assert len(cut) == 5 and int(cut["valid"].sum()) == 0


def test_simulate_memory_is_estimated_from_the_design_not_by_simulating_it(monkeypatch: pytest.MonkeyPatch
                                                                         ) -> None:
    import cogtestbed.simulation as sim
    from cogtestbed.registry import get_experiment

    exp = get_experiment("magnitude")
    big = exp.env_cls.design_cls(trials_per_session=200)  # 36,000 steps a session: above MEASURED_STEPS
    assert exp.env_cls.max_steps(big) == 36_000 > sim.MEASURED_STEPS
    simulated: list[Any] = []
    real_simulate = sim.simulate
    monkeypatch.setattr(sim, "simulate", lambda *a, **k: simulated.append(k["design"]) or real_simulate(*a, **k))
    estimate = sim.session_bytes(exp, "linear", design=big)
    assert simulated == [exp.env_cls.design_cls()]  # only the default design (9,000 steps) was simulated
    default = real_simulate(exp, "linear", 1, 0, design=exp.env_cls.design_cls())
    default_bytes = int(default.memory_usage(deep=True).sum())
    assert estimate == -(-default_bytes * 36_000 // 9_000)  # per step of the default design x the steps
    actual = int(real_simulate(exp, "linear", 1, 0, design=big).memory_usage(deep=True).sum())
    assert abs(estimate / actual - 1) < 0.01  # measured: 4,909,304 vs 4,906,076 bytes


def test_an_oversized_simulation_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    from cogtestbed.cli import run_cli

    code = run_cli(["simulate", "restless-bandit", "--agent", "random", "--subjects", "100000000",
                    "-o", str(tmp_path / "t.parquet")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "needs about 3.31 TiB of memory" in lines[0], lines
    assert not (tmp_path / "t.parquet").exists()
