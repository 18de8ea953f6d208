"""A real third-party server (issue 39): llama.cpp's OpenAI-compatible server (``llama-cpp-python``,
built by ``make test-servers`` into its own venv) serving SmolLM2's GGUF on 127.0.0.1, against the
in-process route on the same sessions (``benchmarks/studies/llama_cpp_route.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from study_scripts import load_study

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    pytest.importorskip("torch")
    from cogtestbed.llm_adapters.base import BackendUnavailable
    from cogtestbed.llm_adapters.llama_cpp import llama_python

    try:
        llama_python()
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    return dict(load_study("llama_cpp_route").main([]))


def test_prompt_tokens_equal_the_servers_usage(report: dict[str, Any]) -> None:
    for row in report["sessions"]:
        assert row["requests"] > 0 and row["prompt_tokens_equal"] == row["requests"], row
    assert report["summary"]["prompt_tokens_equal_to_usage_pct"] == 100.0


def test_valid_rates_and_raw_answers_agree(report: dict[str, Any]) -> None:
    rows = {(r["experiment"], r["mode"]): r for r in report["sessions"]}
    assert set(rows) == {("instrumental-learning", "completions"), ("instrumental-learning", "chat"),
                         ("collider", "chat"), ("revealed-belief", "completions")}
    completions = rows["instrumental-learning", "completions"]
    # the prompt ends "A: Machine": answers parse on both routes.  The target (valid rates within
    # 10 points) is not asserted: measured 83 % in process vs 42 % through llama.cpp, because the first
    # answers differ (" D" vs " 3", near-equal logits under Q4_1 x 8-bit activations) and every later
    # prompt quotes a different history (docs/real-model.md#a-third-party-server-llamacpp)
    assert completions["valid_in_process"] > 0.5 and completions["valid_llama_cpp"] > 0.25, completions
    for key in (("instrumental-learning", "completions"), ("instrumental-learning", "chat"), ("collider", "chat")):
        row = rows[key]
        # the same sessions, step for step; the answers are compared, not required equal: llama.cpp
        # multiplies Q4_1 weights with 8-bit activations, the in-process copy is dequantised to float32,
        # so greedy choices between near-equal tokens differ, and a CogBench history then diverges
        assert row["raw_answers_compared"] == row["text_calls"][0] == row["text_calls"][1] > 0, row


def test_exact_scores_are_within_half_a_nat_or_refused_with_a_message(report: dict[str, Any]) -> None:
    rows = {(r["experiment"], r["mode"]): r for r in report["sessions"]}
    scoring = rows["revealed-belief", "completions"]["scoring"]
    assert scoring["in_process_method"] == ["exact"]
    if scoring["llama_cpp_method"] == "exact":
        assert scoring["within_tolerance"], scoring
    else:  # llama-cpp-python's echo is shifted by one position: the probe refuses it, and says why
        assert scoring["llama_cpp_method"] == "sampled" and scoring["refused_with_message"], scoring
        assert scoring["llama_cpp_probe_checks"]["difference"] > 0.5, scoring  # measured: 8.19 nats
    # without --logits_all the server answers HTTP 500 "logprobs is not supported": sampled, not stopped
    nologits = report["no_logits_all"]
    assert nologits["llama_cpp_method"] == "sampled" and "not supported" in nologits["llama_cpp_probe"], nologits
    assert report["summary"]["exact_scores_within_0.5_nats_or_refused"] is True
