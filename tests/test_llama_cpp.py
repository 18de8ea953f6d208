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
    from cogtestbed.llm_adapters.clients.base import BackendUnavailable
    from cogtestbed.llm_adapters.servers.llama_cpp import llama_python

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
    # the target: valid rates within 10 points in completions mode.  Both routes send the same
    # request (identical prompt tokens, sampling named explicitly) and llama.cpp serves the float32 copy of
    # the GGUF the in-process route computes with (measured: 83 % on both, 24 of 24 raw answers identical;
    # the Q4_1 file as shipped, multiplied with 8-bit activations, gives 42 %: `--weights shipped`)
    assert report["served_weights"] == "float32"
    assert completions["valid_in_process"] > 0.5 and completions["valid_difference_points"] <= 10.0, completions
    assert report["summary"]["max_valid_difference_points_completions"] <= 10.0
    for key in (("instrumental-learning", "completions"), ("instrumental-learning", "chat"), ("collider", "chat")):
        row = rows[key]
        assert row["raw_answers_compared"] == row["text_calls"][0] == row["text_calls"][1] > 0, row
        # float32 on both sides: greedy choices agree step for step (a near-tie may still split one)
        assert row["raw_answers_identical"] >= row["raw_answers_compared"] - 1, row


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
