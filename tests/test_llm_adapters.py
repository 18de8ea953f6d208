"""LLM adapters with real components: the tiny local model, a real HTTP server on 127.0.0.1
speaking the OpenAI and Anthropic APIs, the official SDKs, SQLite, and the CLI as a subprocess."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
openai = pytest.importorskip("openai")

from cogtestbed.environments.base import NO_ACTION  # noqa: E402
from cogtestbed.llm_adapters import LLMAgent, ScoringNotSupported, make_client  # noqa: E402
from cogtestbed.llm_adapters.clients.anthropic_client import AnthropicClient  # noqa: E402
from cogtestbed.llm_adapters.clients.base import BackendError, GenerateRequest  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient  # noqa: E402
from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient  # noqa: E402
from cogtestbed.llm_adapters.clients.prices import PriceTable  # noqa: E402
from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache  # noqa: E402
from cogtestbed.llm_adapters.middleware.limits import Budget, Need, RateLimiter  # noqa: E402
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy  # noqa: E402
from cogtestbed.llm_adapters.runs.config import RunConfig  # noqa: E402
from cogtestbed.llm_adapters.runs.pricing import dry_run  # noqa: E402
from cogtestbed.llm_adapters.runs.runner import run_experiment  # noqa: E402
from cogtestbed.llm_adapters.servers.server import Fault  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.simulation import run_stepwise, seed_streams  # noqa: E402

FAST_RETRY = RetryPolicy(attempts=4, initial=0.02, max_wait=0.2)
PROMPT = "Q: Which machine do you choose? A: Machine"


def run_in_process(tmp: Path, client, *, subjects=2, seed=3, design=None, cache=None, resume=False,
                   budget=None, add_budget=None, **config_kw):
    exp = get_experiment("instrumental-learning")
    design = design or exp.env_cls.design_cls()
    config = RunConfig(experiment=exp.name, llm=client.spec, base_url=None,
                       mode="chat" if client.chat else "completions", n_subjects=subjects, seed=seed,
                       design=design.model_dump(mode="json"), **config_kw)
    cached = CachedClient(client, ResponseCache(cache or tmp / "cache.sqlite"), budget)
    return asyncio.run(run_experiment(exp, design, cached, config, tmp / "run", resume=resume,
                                      add_budget=add_budget)), cached


# ----------------------------------------------------------------------------- scoring
def direct_logprob(model: HFClient, context: str, continuation: str) -> float:
    """log P(continuation | context) straight from the logits (the test's own computation)."""
    tok = model.tokenizer
    ctx = tok(context)["input_ids"]
    joint = tok(context + continuation)["input_ids"]
    assert joint[: len(ctx)] == ctx
    ids = torch.tensor([joint])
    with torch.no_grad():
        logits = model.hf_model(ids).logits[0].double()
    total = 0.0
    for pos in range(len(ctx), len(joint)):
        total += float(torch.log_softmax(logits[pos - 1], -1)[joint[pos]])
    return total


def test_score_equals_direct_computation_from_logits(tiny):
    context = "The probability is equal to"
    conts = [" 1", " 0.5", " heads", " tails please", "!"]
    result = tiny.score(context, conts)
    for s in result.scores:
        assert s.logprob == pytest.approx(direct_logprob(tiny, context, s.continuation), abs=1e-4)
        assert s.logprob == pytest.approx(sum(s.token_logprobs))
        assert "".join(s.tokens) == s.continuation  # leading space kept inside the tokens
    assert any(len(s.tokens) > 1 for s in result.scores)  # multi-token outcomes are summed
    z = sum(math.exp(v) for v in result.logprobs)
    assert result.total_prob == pytest.approx(z)
    assert result.mass_outside == pytest.approx(1 - z)


def test_mass_outside_sums_to_one_over_the_whole_vocabulary(tiny):
    # Every single-token continuation that round-trips through the tokenizer: with the rest of
    # the vocabulary the listed mass plus mass_outside is 1; over all tokens it is the whole mass.
    context = "Machine"
    tok = tiny.tokenizer
    singles = []
    for i in range(2, len(tok)):
        text = tok.decode([i])
        if tiny.continuation_ids(tiny.encode(context), context, text, False)[0] == [i]:
            singles.append(text)
    result = tiny.score(context, singles[:50])
    assert result.mass_outside is not None
    assert result.total_prob + result.mass_outside == pytest.approx(1.0)
    # Overlapping events (one continuation a prefix of another): no mass_outside.
    assert tiny.score(context, [" 1", " 1."]).mass_outside is None


def test_generate_is_greedy_deterministic_and_honours_stop(tiny, tiny_chat):
    a = tiny.generate(PROMPT, max_tokens=6, top_logprobs=3)
    b = tiny.generate(PROMPT, max_tokens=6)
    assert a.text == b.text and a.completion_tokens == 6 and a.prompt_tokens > 0
    assert len(a.logprobs) == 6 and all(len(t.top) >= 1 for t in a.logprobs)
    cut = a.text[2:4]
    stopped = tiny.generate(PROMPT, max_tokens=6, stop=[cut])
    assert stopped.text == a.text[: a.text.find(cut)] and stopped.finish_reason == "stop"
    # Sampling: the seed decides.
    s1 = tiny.generate(PROMPT, max_tokens=6, temperature=1.0, seed=1)
    assert s1.text == tiny.generate(PROMPT, max_tokens=6, temperature=1.0, seed=1).text
    # Instruct path: the chat template is applied; base models get the raw text.
    assert tiny_chat.render("hi").startswith("<s><|user|>\nhi\n<|assistant|>")
    assert tiny.render("hi") == "hi"
    with pytest.raises(ValueError, match="completion model"):
        tiny.render([{"role": "user", "content": "hi"}])


def test_prompt_token_counts_are_the_generations_and_each_prompt_is_tokenised_once(tiny, tiny_chat):
    """The bill and the bound of a text prompt equal the prompt tokens a generation reports; a
    prompt counted before (a dry run counts each request twice) is not tokenised again."""
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "A"},
            {"role": "user", "content": PROMPT}]
    for client, prompt in ((tiny, PROMPT), (tiny_chat, PROMPT), (tiny_chat, chat)):
        reported = client.generate(prompt, max_tokens=1).prompt_tokens
        encoded: list[str] = []
        real = client.encode
        client.encode = lambda text, encoded=encoded, real=real, **kw: (  # type: ignore[method-assign]
            encoded.append(text) or real(text, **kw))
        try:
            client._counted.clear()
            assert client.billed_prompt_tokens(prompt) == (reported, True)
            assert client.prompt_token_bound(prompt) == reported
            assert len(encoded) == 1
        finally:
            del client.encode
    # the mode is part of the key: one model's completion and chat copies count the same text apart
    plain = tiny_chat.with_chat(False)
    assert plain.prompt_token_bound(PROMPT) == len(tiny_chat.encode(PROMPT)) < tiny_chat.prompt_token_bound(PROMPT)
    with pytest.raises(ValueError, match="completion model"):
        plain.prompt_token_bound(chat)


# ----------------------------------------------------------------------------- HTTP backends
def test_openai_adapter_against_a_real_server(server, tiny, tiny_chat):
    url, _ = server
    comp = OpenAIClient("tiny-random", base_url=url, mode="completions", retry=FAST_RETRY)
    direct = tiny.generate(PROMPT, max_tokens=6, stop=["\n"])
    via_http = comp.generate(PROMPT, max_tokens=6, stop=["\n"], top_logprobs=2)
    assert via_http.text == direct.text
    assert via_http.prompt_tokens == direct.prompt_tokens
    assert [t.token for t in via_http.logprobs] and via_http.logprobs[0].logprob <= 0
    # Exact scoring through echo + logprobs matches the local score.
    context, conts = "The probability is equal to", [" 1", " 0.5", " heads"]
    remote, local = comp.score(context, conts), tiny.score(context, conts)
    assert remote.logprobs == pytest.approx(local.logprobs, abs=1e-4)
    assert remote.mass_outside is None  # only top-k over HTTP
    chat = OpenAIClient("tiny-random-chat", base_url=url, mode="chat", retry=FAST_RETRY)
    assert chat.generate("hello", max_tokens=5).text == tiny_chat.generate("hello", max_tokens=5).text
    with pytest.raises(ScoringNotSupported):
        chat.score("x", ["y"])


def test_anthropic_adapter_against_a_real_server(server, tiny_chat):
    url, _ = server
    claude = AnthropicClient("tiny-random-chat", base_url=url.removesuffix("/v1"), retry=FAST_RETRY)
    reply = claude.generate("hello", max_tokens=5, stop=["\n"])
    assert reply.text == tiny_chat.generate("hello", max_tokens=5, stop=["\n"]).text
    assert reply.prompt_tokens > 0
    with pytest.raises(ScoringNotSupported):
        claude.score("x", ["y"])


def test_retries_on_429_with_retry_after_500_and_dropped_connection(server, tiny_chat):
    url, faults = server
    client = OpenAIClient("tiny-random-chat", base_url=url, mode="chat", retry=FAST_RETRY)
    expected = tiny_chat.generate("hi", max_tokens=4).text
    start = len(faults.log)
    faults.add(Fault("status", 429, retry_after=1.0), Fault("status", 500), Fault("drop"))
    assert client.generate("hi", max_tokens=4).text == expected
    log = faults.log[start:]
    assert [what for _, _, what in log] == ["status", "status", "drop", "ok"]
    assert log[1][0] - log[0][0] >= 1.0  # Retry-After honoured (a floor the client sleeps: no load shortens it)
    assert [name for name, _ in client.retries] == ["RateLimitError", "InternalServerError",
                                                    "APIConnectionError"]
    # A timeout is retried too; a 400 is not; a persistent 500 gives up after `attempts`.
    slow = OpenAIClient("tiny-random-chat", base_url=url, timeout=0.5, retry=FAST_RETRY)
    faults.add(Fault("delay", seconds=1.5))
    assert slow.generate("hi", max_tokens=4).text == expected
    assert slow.retries[0][0] == "APITimeoutError"
    start = len(faults.log)
    faults.add(Fault("status", 400))
    # the last error is one line naming the model and the server, the SDK's error chained
    with pytest.raises(BackendError, match=r"openai:tiny-random-chat at http://127\.0\.0\.1:\d+/v1: HTTP 400") as info:
        client.generate("hi", max_tokens=4)
    assert isinstance(info.value.__cause__, openai.BadRequestError) and info.value.status == 400
    assert len(faults.log) - start == 1
    faults.add(*[Fault("status", 503)] * FAST_RETRY.attempts)
    with pytest.raises(BackendError, match="HTTP 503") as info:
        client.generate("hi", max_tokens=4)
    assert isinstance(info.value.__cause__, openai.InternalServerError)
    assert not faults.pending


# ----------------------------------------------------------------------------- the subject
def test_llm_agent_is_just_another_subject(tiny):
    """run_stepwise (the synthetic agents' loop) plays an LLMAgent; invalid answers are recorded
    with their reason and never replaced; every re-ask is kept."""
    exp = get_experiment("instrumental-learning")
    design = exp.env_cls.design_cls(visits_per_casino=2)
    env = exp.env_cls(design)
    sessions = exp.env_cls.sample_sessions(design, 2, seed_streams(3)[0])
    agents = []

    def make(i):
        agents.append(LLMAgent(tiny, env, temperature=1.0, reask=2, sample_seed=i, subject=i))
        return agents[-1]

    out = run_stepwise(env, sessions, make)
    assert out.played.all()
    attempts = [a for ag in agents for a in ag.attempts]
    for i in range(2):
        for t in range(design.n_trials):
            mine = [a for a in attempts if a.subject == i and a.step == t]
            assert [a.attempt for a in mine] == list(range(len(mine)))
            if out.valid[i, t]:
                assert mine[-1].valid and out.parse_error[i, t] is None
                assert out.raw_response[i, t] == mine[-1].raw_response
            else:
                assert len(mine) == 3 and out.action[i, t] == NO_ACTION
                assert "3 attempts failed" in out.parse_error[i, t]
    assert len({a.raw_response for a in attempts}) > 1  # re-asks are fresh samples


def test_chat_reask_shows_the_model_its_answer(tiny_chat):
    exp = get_experiment("instrumental-learning")
    env = exp.env_cls(exp.env_cls.design_cls(visits_per_casino=1))
    obs, _ = env.reset(seed=0)
    agent = LLMAgent(tiny_chat, env, reask=1)
    asyncio.run(agent.aact(obs))
    if not agent.attempts[0].valid:
        second = agent.request(obs["prompt"], 0, 1, (agent.attempts[0].raw_response, "bad"))
        assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
        assert agent.attempts[1].prompt.count("[assistant]") == 1


# ----------------------------------------------------------------------------- runs
def test_run_writes_192_trials_and_a_rerun_is_served_from_the_cache(tmp_path, tiny):
    first, cached = run_in_process(tmp_path / "a", tiny, cache=tmp_path / "c.sqlite")
    t = first.trials
    assert len(t) == 192 and first.status == "complete"
    assert {"raw_response", "valid", "parse_error"} <= set(t.columns)
    assert t["raw_response"].notna().all()
    assert (t["parse_error"].isna() == t["valid"]).all()
    assert first.stats["new_calls"] == 192
    manifest = json.loads((tmp_path / "a/run/trials.parquet.manifest.json").read_text())
    assert manifest["n_rows"] == 192 and manifest["config"]["seed"] == 3
    # Same sessions as synthetic subjects with the same seed.
    sim_sessions = get_experiment("instrumental-learning").env_cls.sample_sessions(
        get_experiment("instrumental-learning").env_cls.design_cls(), 2, seed_streams(3)[0])
    assert (t["casino"].to_numpy().reshape(2, 96) == sim_sessions.casino).all()
    again, cached2 = run_in_process(tmp_path / "b", tiny, cache=tmp_path / "c.sqlite")
    assert again.stats["new_calls"] == 0 and again.stats["cache_hits"] == 192
    pd.testing.assert_frame_equal(again.trials, t)


def test_budget_stops_cleanly_and_resume_finishes_identically(tmp_path, tiny):
    design = get_experiment("instrumental-learning").env_cls.design_cls(visits_per_casino=2)
    stopped, _ = run_in_process(tmp_path, tiny, design=design, budget=Budget(max_calls=11))
    # 11 calls admit one whole subject (8 calls); the second is never started
    assert stopped.status == "stopped" and stopped.stats["new_calls"] == 8
    assert len(stopped.calls) == 8  # every answer so far kept
    assert len(stopped.trials) == 8 and set(stopped.trials["subject"]) == {0}
    manifest = json.loads((tmp_path / "run/trials.parquet.manifest.json").read_text())
    assert manifest["status"] == "stopped" and "subject 1 needs up to 8 calls" in manifest["stop_reason"]
    # the total is the run directory's: resuming without more budget pays for nothing
    again, _ = run_in_process(tmp_path, tiny, design=design, resume=True)
    assert again.status == "stopped" and again.stats["new_calls"] == 0
    resumed, _ = run_in_process(tmp_path, tiny, design=design, resume=True, add_budget=Need(calls=5))
    reference, _ = run_in_process(tmp_path / "ref", tiny, design=design)
    assert resumed.status == "complete" and resumed.stats["new_calls"] == 16 - 8
    assert resumed.stats["total_calls"] == 16 and resumed.stats["max_calls"] == 16
    pd.testing.assert_frame_equal(resumed.trials, reference.trials)
    # the first subject's 8 answers, replayed, were paid by this run: no cache hit (before: "16 calls, 8 from the
    # cache, 8 new" and only this invocation's cost), the calls table as the uninterrupted run's
    assert resumed.stats["cache_hits"] == 0 and not resumed.calls["cached"].any()
    pd.testing.assert_series_equal(resumed.calls["cached"], reference.calls["cached"])
    from cogtestbed.api.run import run_summary

    assert run_summary(resumed, tmp_path / "run").endswith(
        "16 calls, 0 from the cache; paid by this run: 16 calls (8 calls in this invocation)")
    with pytest.raises(ValueError, match="`resume`"):
        run_in_process(tmp_path, tiny, design=design)
    with pytest.raises(ValueError, match="seed"):
        run_in_process(tmp_path, tiny, design=design, seed=4, resume=True)


def test_max_cost_refuses_the_call_that_would_exceed_it():
    price = PriceTable().lookup("openai:gpt-4o-mini")
    budget = Budget(max_cost=price.cost(1000, 10) * 2.5, price=price)
    for _ in range(2):
        booking = budget.reserve(1000, 10)
        budget.settle(booking, 1000, 10, succeeded=True)
    with pytest.raises(Exception, match="max_cost"):
        budget.reserve(1000, 10)
    assert budget.cost <= budget.max_cost
    with pytest.raises(ValueError, match="price"):
        Budget(max_cost=1.0, price=None)


def test_rate_limiter_spaces_requests_and_tokens():
    """On a frozen event-loop clock: a second's worth passes at once, the next waits its share of a second."""
    async def spaced(limiter, tokens, burst):
        loop = asyncio.get_running_loop()
        now = [loop.time()]
        loop.time = lambda: now[0]  # type: ignore[method-assign]  # the buckets read the loop's clock
        for _ in range(burst):
            await limiter.acquire(tokens)  # a full bucket: no wait
        bucket = limiter._requests or limiter._tokens
        amount = 1 if limiter._requests else tokens
        waits = not bucket.has_capacity(amount)
        now[0] += 1.5 * amount / (bucket.max_rate / bucket.time_period)  # 1.5 units drain meanwhile
        return waits, bucket.has_capacity(amount)

    assert asyncio.run(spaced(RateLimiter(requests_per_min=1200), 1, 20)) == (True, True)  # 20/s, burst 20
    assert asyncio.run(spaced(RateLimiter(tokens_per_min=60_000), 1000, 1)) == (True, True)  # 1000 tok/s


def test_kill9_then_resume_equals_an_uninterrupted_run(tmp_path, tiny):
    """SIGKILL the CLI mid-run, resume, and get exactly the uninterrupted table."""
    cache = tmp_path / "cache.sqlite"
    args = ["run", "instrumental-learning", "--llm", "hf:tiny-random", "--subjects", "2",
            "--seed", "5", "--design", "visits_per_casino=4", "--cache", str(cache),
            "-o", str(tmp_path / "run"), "--rpm", "240"]
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", *args], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    deadline = time.monotonic() + 120
    rows = 0
    while rows < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        if cache.exists():
            try:
                with sqlite3.connect(cache) as db:
                    rows = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            except sqlite3.OperationalError:
                pass
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "run/trials.parquet").exists()  # killed before the end
    assert 10 <= rows < 32
    # the kill needs a process of its own; the resume runs the same CLI in this one (no second start-up)
    from cogtestbed.cli import run_cli

    assert run_cli([*args[:-2], "--resume"]) == 0
    resumed = pd.read_parquet(tmp_path / "run/trials.parquet")
    manifest = json.loads((tmp_path / "run/trials.parquet.manifest.json").read_text())
    stats = manifest["stats"]
    # the answers paid before the kill are this run's calls, not cache hits (at most the one in flight is asked again)
    assert stats["cache_hits"] == 0 and stats["new_calls"] <= 32 - rows + 1 and stats["total_calls"] >= 32
    design = get_experiment("instrumental-learning").env_cls.design_cls(visits_per_casino=4)
    reference, _ = run_in_process(tmp_path / "ref", tiny, seed=5, design=design)
    assert len(resumed) == 32 and not resumed.duplicated(["subject", "trial"]).any()
    pd.testing.assert_frame_equal(resumed, reference.trials)


def test_cli_against_openai_server_never_writes_the_key(tmp_path, server, monkeypatch):
    from cli_runs import in_process

    url, _ = server
    secret = "sk-test-" + "k3y" * 8
    home = tmp_path / "home"
    env = {"OPENAI_API_KEY": secret, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("COGTESTBED_CACHE", raising=False)
    # the command's code in this process (tests/test_cli_process.py starts the real entry point)
    proc = in_process("run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions",
                      "--base-url", url, "--subjects", "1", "--seed", "1", "--design", "visits_per_casino=2",
                      "-o", str(tmp_path / "run"))
    table = pd.read_parquet(tmp_path / "run/trials.parquet")
    assert len(table) == 8 and table["raw_response"].notna().all()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in written)  # the default cache, under XDG_CACHE_HOME
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in proc.stdout + proc.stderr


def test_dry_run_counts_calls_tokens_and_cost(tmp_path, tiny, capsys):
    from cogtestbed.cli import run_cli

    # the CLI in this process (what a subprocess would add is its start-up, not a check)
    assert run_cli(["run", "instrumental-learning", "--llm", "hf:tiny-random", "--subjects", "2", "--seed", "3",
                    "-o", str(tmp_path / "r"), "--dry-run", "--reask", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calls"] == 192 and report["calls_with_all_reasks"] == 384
    assert report["token_counts"].startswith("exact") and report["estimated_cost_usd"] == 0
    assert report["max_completion_tokens"] == 192 * 8
    assert not (tmp_path / "r").exists()
    # A hosted model needs no key for an estimate; the cost comes from the price table, which a
    # user file overrides.
    exp = get_experiment("instrumental-learning")
    design = exp.env_cls.design_cls()
    config = RunConfig(experiment=exp.name, llm="openai:gpt-4o-mini", base_url=None, mode="chat",
                       n_subjects=1, seed=0, design=design.model_dump(mode="json"))
    hosted = make_client("openai:gpt-4o-mini")
    price = PriceTable().lookup(config.llm)
    report = dry_run(exp, design, hosted, config, price)
    assert report["calls"] == 96 and report["estimated_cost_usd"] > 0
    assert report["estimated_cost_usd"] == pytest.approx(
        price.cost(report["prompt_tokens"], report["max_completion_tokens"]), abs=1e-4)
    prices = tmp_path / "p.toml"
    prices.write_text('["openai:gpt-4o-mini"]\ninput = 0\noutput = 0\n')
    assert dry_run(exp, design, hosted, config, PriceTable(prices).lookup(config.llm))["estimated_cost_usd"] == 0
    assert PriceTable().lookup("openai:some-local-model") is None


@pytest.mark.parametrize(("model", "price"), [
    ("openai:gpt-5", (1.25, 10.0)), ("openai:gpt-5-2025-08-07", (1.25, 10.0)), ("openai:gpt-5.1", (1.25, 10.0)),
    ("openai:gpt-5-mini", (0.25, 2.0)), ("openai:gpt-5-nano", (0.05, 0.40)),
    ("openai:gpt-5-pro", None), ("openai:gpt-5-codex", None), ("openai:gpt-5.2", None)])
def test_gpt5_variants_without_a_read_price_are_unpriced_not_priced_as_gpt5(model: str, price: object) -> None:
    """A price is a source's, never a neighbour's: gpt-5-pro (far dearer than gpt-5), -codex and 5.2
    have no row, so plan and dry runs refuse them naming --prices instead of pricing them as gpt-5."""
    found = PriceTable().lookup(model)
    assert (None if found is None else (found.input, found.output)) == price


#: One experiment per kind of prompt: completion text (a tiny base model), chat with pictures (a tiny
#: vision-language model).  That every experiment's run keeps to its budget is the conformance check
#: ``llm_budget``.
PROMPT_KINDS = {"completion": "instrumental-learning", "chat-images": "magnitude"}


@pytest.mark.parametrize("name", list(PROMPT_KINDS.values()), ids=list(PROMPT_KINDS))
def test_each_kind_of_prompt_runs_through_the_llm_path(tmp_path, tiny, name):
    """A few real calls of a tiny local model, and a budget too small for one whole subject stops the
    run cleanly before any call."""
    exp = get_experiment(name)
    design = exp.env_cls.design_cls()
    # chat prompts need a chat model, pictures a vision-language model (both tiny and local)
    chat = not isinstance(exp.env_cls(design).reset(seed=0)[0]["prompt"], str)
    client = (HFClient.tiny_random_vlm() if exp.env_cls.uses_images(design)
              else HFClient.tiny_random(chat=True) if chat else tiny)
    config = RunConfig(experiment=name, llm=client.spec, base_url=None, mode="chat" if chat else "completions",
                       n_subjects=2, seed=0, design=design.model_dump(mode="json"))
    cached = CachedClient(client, ResponseCache(tmp_path / "c.sqlite"), Budget(max_calls=4))
    result = asyncio.run(run_experiment(exp, design, cached, config, tmp_path / "run"))
    # never more than the budget, and nothing paid for a subject that did not finish
    assert result.stats["new_calls"] <= 4
    unfinished = ~result.calls["subject"].isin(np.flatnonzero(result.complete))
    assert not (unfinished & ~result.calls["cached"]).any()
    if result.status == "stopped":
        assert "needs up to" in result.stats["stopped"]
    # the same client, step by step: real calls, every answer recorded
    env = exp.env_cls(design)
    agent = LLMAgent(CachedClient(client, ResponseCache(tmp_path / "c.sqlite")), env, max_tokens=config.max_tokens,
                     stop=config.stop)
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, _, done, _, _ = env.step(asyncio.run(agent.aact(obs)))
        if done:
            break
    rows = pd.DataFrame([a.as_row() for a in agent.attempts])
    assert len(rows) >= 1 and rows["raw_response"].notna().all()
    assert (rows["valid"] == rows["parse_error"].isna()).all()


def test_bad_llm_specs_give_clear_errors(tmp_path, monkeypatch):
    from cli_runs import in_process

    with pytest.raises(ValueError, match="BACKEND:MODEL"):
        make_client("gpt-4o")
    # No key: one clear error before any call, and no run directory left behind (the command in this process;
    # tests/test_cli_instrumental.py starts the entry point for a refusal).
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    proc = in_process("run", "instrumental-learning", "--llm", "anthropic:claude-x", "-o", str(tmp_path / "y"),
                      check=False)
    assert proc.returncode == 2 and "ANTHROPIC_API_KEY" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "y").exists()


def test_request_validation():
    with pytest.raises(ValueError):
        GenerateRequest("x", max_tokens=0)
    with pytest.raises(ValueError, match="role"):
        GenerateRequest([{"content": "x"}])
