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


def test_the_served_models_own_tokenizer_is_found_only_on_this_machine() -> None:
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.llm_adapters.clients.openai_client import local_tokenizer

    assert local_tokenizer("gpt-4o-mini", None, True) is None  # OpenAI's own API
    assert local_tokenizer("tiny-random", "http://10.1.2.3:8000/v1", False) is None  # another machine
    assert local_tokenizer("some-org/some-model", "http://127.0.0.1:8000/v1", True) is None  # a hub id
    assert local_tokenizer("tiny-random", "http://127.0.0.1:8000/v1", True) is None  # no chat template
    twin = local_tokenizer("tiny-random-chat", "http://localhost:8000/v1", True)
    assert isinstance(twin, HFClient) and twin.chat and twin.model == "tiny-random-chat"


def _dry_and_run(args: list[str], out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    res = CliRunner().invoke(app, [*args, "-o", str(out / "dry"), "--dry-run"])
    assert res.exit_code == 0, res.output
    dry = json.loads(res.stdout)
    res = CliRunner().invoke(app, [*args, "-o", str(out / "run")])
    assert res.exit_code == 0, res.output
    return dry, json.loads((out / "run" / "run.json").read_text())


def test_dry_run_prompt_tokens_are_what_the_local_server_bills(smollm2: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """SmolLM2 behind the local server: the dry run counts prompts with the model's own tokenizer, so
    its prompt tokens and requests are the server's; completions stop before --max-tokens, so billed
    cost is below the dry run's ceiling (booked at max_tokens), never above."""
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    prices = tmp_path / "prices.toml"
    prices.write_text('["openai:smollm2*"]\ninput = 1000.0\noutput = 2000.0\n')
    monkeypatch.setenv("COGTESTBED_PRICES", str(prices))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    billing = Billing()
    with serve({"smollm2-135m": smollm2}, billing=billing) as url:
        args = ["run", "belief-coherence", "--llm", "openai:smollm2-135m", "--mode", "chat", "--base-url", url,
                "--design", "n_contexts=1", "--design", "n_reps=1", "--design", "variants=pi0"]
        dry, run = _dry_and_run(args, tmp_path)
    assert dry["token_counts"].startswith("exact: the served model's own tokenizer (hf:smollm2-135m")
    assert dry["calls"] == billing.requests == run["stats"]["total_calls"] == 5
    assert dry["prompt_tokens"] == billing.prompt_tokens == run["stats"]["prompt_tokens"]
    assert dry["max_completion_tokens"] == 5 * 64 and 0 < billing.completion_tokens < 5 * 64
    billed = (billing.prompt_tokens * 1000.0 + billing.completion_tokens * 2000.0) / 1e6
    assert run["stats"]["total_cost_usd"] == pytest.approx(billed, abs=1e-6)
    assert dry["max_cost_usd"] == dry["estimated_cost_usd"] >= billed
    # the ceiling is met exactly when every answer runs to --max-tokens
    assert dry["max_cost_usd"] == pytest.approx((dry["prompt_tokens"] * 1000.0 + 5 * 64 * 2000.0) / 1e6, abs=1e-4)


def test_two_step_dry_run_gives_the_range_the_run_falls_in(server: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers decide two-step's stages: the dry run books every stage (16 requests for 2 subjects x 4
    days) and also counts the all-invalid playthrough (2: an unparseable first stage skips the second,
    and the unchanged history repeats the subject's first request, served from the cache), which is
    what the tiny random model's run makes."""
    url, faults = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    args = ["run", "two-step", "--llm", "openai:tiny-random", "--mode", "completions", "--base-url", url,
            "--subjects", "2", "--design", "n_days=4", "--allow-unpriced"]
    before = len(faults.log)
    dry, run = _dry_and_run(args, tmp_path)
    requests = len(faults.log) - before
    assert (dry["calls"], dry["calls_if_every_answer_is_invalid"], dry["calls_ceiling"]) == (16, 2, 16)
    assert requests == run["stats"]["total_calls"] == 2 and run["stats"]["invalid_trials"] == 8
    assert "16 requests when every answer is valid" in dry["calls_range"]


def test_a_session_whose_length_depends_on_the_answers_gets_a_request_ceiling() -> None:
    """BART's random valid playthrough stops pumping early (9 requests); a model that always pumps can
    ask every step of the design: calls_ceiling = 2 balloons x 3 types x (128 + 32 + 8) pumps = 336."""
    res = CliRunner().invoke(app, ["run", "bart", "--llm", "hf:tiny-random", "--design", "balloons_per_type=2",
                                   "-o", "unused", "--dry-run"])
    assert res.exit_code == 0, res.output
    dry = json.loads(res.stdout)
    assert (dry["calls"], dry["calls_ceiling"]) == (9, 336)


def test_a_chat_history_that_quotes_answers_stays_under_the_dry_runs_ceiling(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Magnitude's chat history quotes the model's own answers, which the dry run cannot know: its
    prompt tokens are the playthrough's (2,168), the server billed 2,210, and the ceiling that books
    each quoted answer at 3 x max_tokens + 2 tokens holds ($2.338 billed <= $2.400)."""
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    prices = tmp_path / "prices.toml"
    prices.write_text('["openai:tiny-random*"]\ninput = 1000.0\noutput = 2000.0\n')
    monkeypatch.setenv("COGTESTBED_PRICES", str(prices))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    billing = Billing()
    with serve({"tiny-random-vlm": HFClient.tiny_random_vlm()}, billing=billing) as url:
        args = ["run", "magnitude", "--llm", "openai:tiny-random-vlm", "--mode", "chat", "--base-url", url,
                "--subjects", "2", "--design", "task=line-ratio", "--design", "conditions=base", "--design",
                "modalities=image,text+image", "--design", "ranges=short", "--design", "trials_per_session=2"]
        dry, run = _dry_and_run(args, tmp_path)
    billed = (billing.prompt_tokens * 1000.0 + billing.completion_tokens * 2000.0) / 1e6
    assert dry["calls"] == billing.requests == 8 and dry["prompts_are_the_runs"] is False
    # the model's quoted answers (sampled at the paper's 0.7) re-tokenise longer than the playthrough's
    assert dry["prompt_tokens"] == 2168 < billing.prompt_tokens <= 2168 + 4 * (3 * 8 + 2)
    assert run["stats"]["total_cost_usd"] == pytest.approx(billed, abs=1e-6)
    assert dry["max_cost_usd"] == pytest.approx(2.4, abs=1e-6) and dry["max_cost_usd"] >= billed


def test_two_step_all_invalid_count_holds_for_chat_reasks(server: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With --reask 2 on a chat model, a repeated first ask at temperature 0 is served from the cache
    and so is its chain of re-asks (each quotes the cached answer before it): the dry run's all-invalid
    count is the run's HTTP requests (it booked every chat re-ask as new: 41 vs 3 for 20 days)."""
    url, faults = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    args = ["run", "two-step", "--llm", "openai:tiny-random-chat", "--mode", "chat", "--base-url", url,
            "--subjects", "2", "--design", "n_days=4", "--reask", "2", "--allow-unpriced"]
    before = len(faults.log)
    dry, run = _dry_and_run(args, tmp_path)
    requests = len(faults.log) - before
    assert run["stats"]["invalid_trials"] == 8
    # 2 subjects x (1 ask + 2 re-asks) new; the other 3 days' chains come from the cache
    assert dry["calls_if_every_answer_is_invalid"] == requests == run["stats"]["total_calls"] == 6
    assert run["stats"]["cache_hits"] == 18
