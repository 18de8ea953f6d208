"""Reasoning models (issue 49): the capability table, requests that send only what the model accepts,
hidden tokens counted everywhere, truncated answers, and plans priced from a pilot or an assumption — all
against the project's server acting as a reasoning model (no hosted API)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import GenerateRequest
from cogtestbed.llm_adapters.clients.capabilities import (
    DEFAULT_HIDDEN_ALLOWANCE,
    capability_of,
    check_reasoning,
    hidden_allowance,
)
from cogtestbed.llm_adapters.middleware.limits import read_ledger
from cogtestbed.llm_adapters.runs.hidden_tokens import from_assumption, from_pilot
from cogtestbed.llm_adapters.servers.emulators.reasoning import ReasoningModel, format_answer
from cogtestbed.llm_adapters.servers.server import Billing, serve

DESIGN = ["visits_per_casino=2"]  # 8 trials a session


@pytest.fixture(scope="module")
def model():
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.from_pretrained("tiny-random-chat")


def emulated(model, billing: Billing, name: str = "o3"):
    return serve({name: model}, billing=billing, reasoning={name: ReasoningModel(answer=format_answer)})


def test_capability_rows_name_their_source_and_date() -> None:
    o3, gpt4o, sonnet = capability_of("openai:o3"), capability_of("openai:gpt-4o"), capability_of(
        "anthropic:claude-sonnet-4-20250514")
    assert o3 is not None and o3.pattern == "openai:o3*" and o3.sampling == () and not o3.logprobs
    assert o3.limit_field == "max_completion_tokens" and o3.efforts == ("low", "medium", "high")
    assert gpt4o is not None and gpt4o.pattern == "openai:*" and "temperature" in gpt4o.sampling
    assert sonnet is not None and sonnet.reasoning == "thinking" and sonnet.thinking_min == 1024
    assert not sonnet.accepts("temperature", thinking=True) and sonnet.accepts("temperature")
    for cap in (o3, gpt4o, sonnet):
        assert cap.source and cap.checked == "2026-11-25" and cap.status in ("provider", "third-party", "unverified")
    assert capability_of("hf:tiny-random") is None
    assert hidden_allowance(o3, None) == DEFAULT_HIDDEN_ALLOWANCE and hidden_allowance(sonnet, None) is None


def test_reasoning_controls_are_checked_against_the_table() -> None:
    with pytest.raises(InputError, match="takes low, medium, high"):
        check_reasoning("openai:o3", capability_of("openai:o3"), "minimal", None)
    with pytest.raises(InputError, match="takes no reasoning_effort"):
        check_reasoning("openai:gpt-4o", capability_of("openai:gpt-4o"), "low", None)
    with pytest.raises(InputError, match="at least 1024"):
        check_reasoning("anthropic:claude-sonnet-4-0", capability_of("anthropic:claude-sonnet-4-0"), None, 1000)
    with pytest.raises(InputError, match="not a reasoning model"):
        check_reasoning("openai:gpt-4o", capability_of("openai:gpt-4o"), None, 2000)
    check_reasoning("openai:gpt-5-mini", capability_of("openai:gpt-5-mini"), "minimal", None)


def test_requests_send_only_what_the_model_accepts() -> None:
    from cogtestbed.llm_adapters.clients.anthropic_client import AnthropicClient
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    request = GenerateRequest("Q?", 8200, 0.0, ("\n",), None, 3, "high")
    body = OpenAIClient("o3", base_url="http://127.0.0.1:1/v1").request_body(request)
    assert body["max_completion_tokens"] == 8200 and body["reasoning_effort"] == "high"
    for refused in ("temperature", "top_p", "presence_penalty", "frequency_penalty", "stop", "max_tokens",
                    "logprobs", "top_k", "repetition_penalty"):
        assert refused not in body
    plain = OpenAIClient("gpt-4o-mini", base_url="http://127.0.0.1:1/v1").request_body(GenerateRequest("Q?", 8))
    assert plain["temperature"] == 0.0 and plain["top_p"] == 1.0 and plain["max_tokens"] == 8 and "top_k" in plain
    claude = AnthropicClient("claude-sonnet-4-0", base_url="http://127.0.0.1:1")
    thinking = claude.request_body(GenerateRequest("Q?", 1032, 0.0, thinking_budget=1024))
    assert thinking["thinking"] == {"type": "enabled", "budget_tokens": 1024} and "temperature" not in thinking
    assert claude.request_body(GenerateRequest("Q?", 8))["temperature"] == 0.0


def test_reasoning_controls_enter_the_cache_key_only_when_set() -> None:
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.middleware.cache import cache_key

    client = OpenAIClient("o3", base_url="http://127.0.0.1:1/v1")
    plain = GenerateRequest("Q?", 8)
    assert "reasoning_effort" not in plain.to_json() and "thinking_budget" not in plain.to_json()
    keys = {cache_key(client, r) for r in (plain, GenerateRequest("Q?", 8, reasoning_effort="low"),
                                          GenerateRequest("Q?", 8, reasoning_effort="high"))}
    assert len(keys) == 3


def test_the_emulator_refuses_fields_with_openais_error_shape(model) -> None:
    with emulated(model, Billing()) as url:
        for field, value, code in (("temperature", 0, "unsupported_value"), ("top_p", 1.0, "unsupported_parameter"),
                                   ("max_tokens", 8, "unsupported_parameter")):
            answer = httpx.post(f"{url}/chat/completions", json={
                "model": "o3", "messages": [{"role": "user", "content": "Q?"}], field: value})
            assert answer.status_code == 400
            error = answer.json()["error"]
            assert error["param"] == field and error["code"] == code and error["type"] == "invalid_request_error"
        ok = httpx.post(f"{url}/chat/completions", json={
            "model": "o3", "messages": [{"role": "user", "content": "Machine B and Machine J?"}],
            "max_completion_tokens": 2000, "reasoning_effort": "low"}).json()
    usage = ok["usage"]
    hidden = usage["completion_tokens_details"]["reasoning_tokens"]
    assert 48 <= hidden <= 144 and usage["completion_tokens"] > hidden and ok["choices"][0]["message"]["content"] == "B"


def test_a_run_sends_no_refused_field_and_its_ledger_is_the_bill(model, tmp_path: Path, capfd) -> None:
    billing = Billing()
    with emulated(model, billing) as url:
        result = ct.run("instrumental-learning", llm="openai:o3", output=tmp_path / "run", base_url=url, subjects=2,
                        cache=tmp_path / "c.sqlite", design=DESIGN, reasoning_effort="low")
    assert result.status == "complete" and result.trials["valid"].all()
    assert billing.requests == billing.answered == 16  # no request refused
    spend = read_ledger((tmp_path / "run" / "spend.jsonl").read_text().splitlines())
    assert (spend.prompt_tokens, spend.completion_tokens, spend.reasoning_tokens) == (
        billing.prompt_tokens, billing.completion_tokens, billing.reasoning_tokens)
    assert billing.reasoning_tokens > 10 * 16
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert int(calls["reasoning_tokens"].sum()) == billing.reasoning_tokens
    assert result.stats["reasoning_tokens"] == billing.reasoning_tokens
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    cap = manifest["capability"]
    assert cap["not_sent"] == {"temperature": 0.0, "top_p": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
    assert cap["completion_limit"] == {"answer": 8, "hidden_allowance": DEFAULT_HIDDEN_ALLOWANCE,
                                       "total": 8 + DEFAULT_HIDDEN_ALLOWANCE}
    assert manifest["config"]["reasoning_effort"] == "low"
    err = capfd.readouterr().err
    assert err.count("openai:o3 does not take temperature 0, top_p 1") == 1
    hidden = from_pilot(tmp_path / "run", "openai:o3")
    text = hidden.per_call("text")
    assert text.calls == 16 and text.low < text.mean < text.high
    assert text.reasoning_mean == pytest.approx(billing.reasoning_tokens / 16, abs=0.01)
    with pytest.raises(InputError, match="ran openai:o3"):
        from_pilot(tmp_path / "run", "openai:o4-mini")
    with pytest.raises(InputError, match="is a run of instrumental-learning, not of two-step"):
        from_pilot(tmp_path / "run", "openai:o3", "two-step")


def test_an_answer_cut_while_thinking_is_truncated_not_a_parse_error(model, tmp_path: Path) -> None:
    billing = Billing()
    with emulated(model, billing) as url:
        result = ct.run("instrumental-learning", llm="openai:o3", output=tmp_path / "run", base_url=url,
                        cache=tmp_path / "c.sqlite", design=DESIGN, thinking_budget=16)
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert not result.trials["valid"].any()
    assert calls["parse_error"].str.startswith("truncated: the completion limit of 24 tokens").all()
    assert calls["parse_error"].str.contains("raise --thinking-budget").all()
    assert (calls["finish_reason"] == "length").all() and (calls["completion_tokens"] == 24).all()


def test_extended_thinking_against_the_emulator(model, tmp_path: Path) -> None:
    billing = Billing()
    name = "claude-sonnet-4-0"
    with emulated(model, billing, name) as url:
        result = ct.run("instrumental-learning", llm=f"anthropic:{name}", output=tmp_path / "run",
                        base_url=url.removesuffix("/v1"), cache=tmp_path / "c.sqlite", design=DESIGN,
                        thinking_budget=1024)
    assert result.status == "complete" and result.trials["valid"].all() and billing.requests == billing.answered
    spend = read_ledger((tmp_path / "run" / "spend.jsonl").read_text().splitlines())
    assert spend.completion_tokens == billing.completion_tokens > billing.reasoning_tokens > 0
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["capability"]["not_sent"] == {"temperature": 0.0}
    assert manifest["capability"]["completion_limit"]["total"] == 1024 + 8


def test_a_plan_for_a_reasoning_model_needs_a_pilot_or_an_assumption() -> None:
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.registry import get_experiment

    exp = get_experiment("instrumental-learning")
    with pytest.raises(InputError, match=r"^openai:o3 is a reasoning model: .*`assume_reasoning_tokens`"):
        Pricer(exp, ("openai:o3",), seed=0)
    pricer = Pricer(exp, ("openai:o3",), seed=0, hidden=from_assumption("400"))
    cost = pricer.exact(exp.env_cls.design_cls(visits_per_casino=2), 2)
    assert cost.dollars_range is not None and cost.dollars is not None
    low, high = cost.dollars_range
    assert low < cost.dollars < high and high / low == pytest.approx(4, rel=0.2)  # N/2 .. 2N, prompts alike
    assert Pricer(exp, ("openai:gpt-4o-mini",), seed=0).exact(exp.env_cls.design_cls(), 1).dollars_range is None
    with pytest.raises(InputError, match="LOW:HIGH"):
        from_assumption("lots")


def test_the_docs_show_every_row_of_the_capability_table() -> None:
    from cogtestbed.llm_adapters.clients.capabilities import capability_table

    docs = (Path(__file__).resolve().parents[1] / "docs" / "llm-runs.md").read_text()
    missing = [p for p in capability_table() if f"| `{p}` |" not in docs]
    assert missing == [] and "checked 2026-11-25" in docs


def test_a_batch_result_line_reads_its_hidden_tokens() -> None:
    """Batch mode parses each result line with the client's own ``generation`` (llm_adapters/middleware/batch/):
    the hidden tokens of a line's usage reach the generation, and so the ledger."""
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    client = OpenAIClient("o3")
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "o3",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 300, "total_tokens": 340,
                      "completion_tokens_details": {"reasoning_tokens": 298}}}
    gen = client.generation(client.parse_body(body), GenerateRequest("Q?", 8200))
    assert (gen.text, gen.completion_tokens, gen.reasoning_tokens) == ("B", 300, 298)
    assert gen.to_json()["reasoning_tokens"] == 298
    assert "reasoning_tokens" not in client.generation(client.parse_body({**body, "usage": {
        "prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43}}), GenerateRequest("Q?", 8)).to_json()


def test_a_batch_run_of_a_reasoning_model_books_its_hidden_tokens(model, tmp_path: Path) -> None:
    from support.batch_emulator import BatchEmulator, serve_batches

    emulator = BatchEmulator({"o3": model}, polls=1, reasoning={"o3": ReasoningModel(answer=format_answer)})
    with serve_batches(emulator) as url:
        result = ct.run("instrumental-learning", llm="openai:o3", output=tmp_path / "run", base_url=url + "/v1",
                        cache=tmp_path / "c.sqlite", design=DESIGN, batch=True, poll_every=0.01)
    assert result.status == "complete" and result.trials["valid"].all()
    spend = read_ledger((tmp_path / "run" / "spend.jsonl").read_text().splitlines())
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert (spend.prompt_tokens, spend.completion_tokens) == (emulator.tally.prompt_tokens,
                                                               emulator.tally.completion_tokens)
    assert spend.reasoning_tokens == int(calls["reasoning_tokens"].sum()) > 8 * 48
