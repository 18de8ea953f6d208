"""Issue 39, the LLM border: prices, secrets, cache identity and the project's own server.

Every server here is on 127.0.0.1; nothing calls a hosted API."""

from __future__ import annotations

import contextlib
import json
import math
import re
from pathlib import Path

import pytest
from study_scripts import load_study

from cogtestbed.cli import run_cli
from cogtestbed.llm_adapters.clients.prices import Price, PriceError, PriceTable, UnpricedModel, require_price

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------- prices
@pytest.mark.parametrize(("entry", "named"), [
    ("input = -1.0\noutput = 2.0", "input must be a finite number >= 0, got -1.0"),
    ("input = nan\noutput = 2.0", "input must be a finite number >= 0, got nan"),
    ("input = 1.0\noutput = inf", "output must be a finite number >= 0, got inf"),
    ('input = "2.5"\noutput = 2.0', "input must be a number (USD per million tokens), got '2.5'"),
    ("input = true\noutput = 2.0", "input must be a number"),
    ("input = 1.0", "needs output"),
    ("input = 1.0\noutput = 2.0\nouput = 3.0", "unknown field(s) ouput"),
    ("input = 1.0\noutput = 2.0\nbatch_discount = 1.0", "batch_discount is the share taken off, in [0, 1)"),
    ("input = 1.0\noutput = 2.0\nbatch_discount = -0.5", "batch_discount must be a finite number >= 0"),
])
def test_a_price_that_is_not_a_price_is_refused(tmp_path: Path, entry: str, named: str) -> None:
    table = tmp_path / "p.toml"
    table.write_text(f'["openai:x"]\n{entry}\n')
    with pytest.raises(PriceError, match=re.escape(named)):
        PriceTable(table)


def test_the_packaged_table_prices_every_model_family_the_docs_name() -> None:
    table = PriceTable()
    named = set()
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        named |= set(re.findall(r"\b((?:openai|anthropic):(?:gpt|claude|o\d)[A-Za-z0-9.-]*[A-Za-z0-9])",
                                path.read_text()))
    families = ["openai:gpt-4o", "openai:gpt-4o-mini", "openai:gpt-4.1", "openai:gpt-4.1-mini", "openai:o1",
                "openai:o3", "openai:o3-mini", "openai:o4-mini", "anthropic:claude-3-5-sonnet-20241022",
                "anthropic:claude-3-5-haiku-latest", "anthropic:claude-sonnet-4-20250514",
                "anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-1"]
    unpriced = {"openai:gpt-5-pro"}  # named in the capability table as unpriced: no source read for its price
    for spec in sorted((named | set(families)) - unpriced):
        price = table.lookup(spec)
        assert price is not None, spec
        assert price.input > 0 and price.output >= price.input and price.batch_discount == 0.5, spec
    assert table.lookup("anthropic:claude-3-5-sonnet-latest") == Price(3.0, 15.0, 0.5)
    assert table.lookup("openai:gpt-4o-mini-2024-07-18") == Price(0.15, 0.60, 0.5)  # the longer pattern wins
    batch = table.lookup("openai:gpt-4o")
    assert batch is not None and batch.batch() == Price(1.25, 5.0)
    assert Price(1.0, 2.0).batch() is None  # no batch price known
    # checked 2026-11-25 against Anthropic's batch page and model overview (prices.toml names the sources)
    for spec in ("anthropic:claude-opus-4-20250514", "anthropic:claude-opus-4-1", "anthropic:claude-opus-4-1-20250805",
                 "anthropic:claude-opus-4-0"):
        assert table.lookup(spec) == Price(15.0, 75.0, 0.5), spec
    assert table.lookup("anthropic:claude-haiku-4-5") == Price(1.0, 5.0, 0.5)
    # Opus 4.5 and later: no official price found (third parties: $5/$25), so unpriced, never Opus 4's
    assert table.lookup("anthropic:claude-opus-4-5") is None and table.lookup("anthropic:claude-opus-4-6") is None
    assert all(table.lookup(spec) is None for spec in unpriced)  # never gpt-5's price


def test_an_unpriced_model_is_refused_by_one_function_unless_allowed() -> None:
    table = PriceTable()
    with pytest.raises(UnpricedModel, match="no price for openai:my-local-model .* `prices` FILE .* `allow_unpriced`"):
        require_price(table, "openai:my-local-model")
    assert require_price(table, "openai:my-local-model", allow_unpriced=True) is None
    assert require_price(table, "hf:tiny-random") == Price(0.0, 0.0)


def test_dry_run_of_an_unpriced_model_exits_2_naming_prices(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "instrumental-learning", "--llm", "openai:my-local-model", "--base-url",
            "http://127.0.0.1:9/v1", "-o", "unused", "--dry-run"]
    assert run_cli(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--prices" in err[0] and "--allow-unpriced" in err[0]
    assert run_cli([*args, "--allow-unpriced"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["estimated_cost_usd"] is None and report["calls"] > 0
    assert "calls and tokens only" in report["unpriced"]


def test_plan_of_an_unpriced_model_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["plan", "instrumental-learning", "--llm", "anthropic:claude-x", "--model", "rw-pm",
                    "--effect", "alpha_pos=0.2", "--subjects", "10:12"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no price for anthropic:claude-x" in err[0] and "--prices" in err[0]


def test_the_anthropic_dry_run_counts_as_the_docs_say() -> None:
    from cogtestbed.llm_adapters.clients.anthropic_client import AnthropicClient
    from cogtestbed.llm_adapters.clients.base import LLMClient

    pytest.importorskip("anthropic")
    client = AnthropicClient("claude-sonnet-4-5")
    assert client.count_tokens("x" * 35) == (10, False)
    assert LLMClient.chars_per_token == 4.0
    docs = (ROOT / "docs" / "llm-runs.md").read_text()
    assert "3.5 characters a token" in docs and "4 characters a token" in docs
    assert math.isclose(client.chars_per_token, 3.5)


def test_a_users_table_overrides_every_packaged_match(tmp_path: Path) -> None:
    user = tmp_path / "p.toml"
    user.write_text('["openai:gpt-4o-mini"]\ninput = 0\noutput = 0\n["openai:*"]\ninput = 9\noutput = 9\n')
    table = PriceTable(user)
    assert table.lookup("openai:gpt-4o-mini") == Price(0.0, 0.0)  # beats the packaged "openai:gpt-4o-mini*"
    assert table.lookup("openai:gpt-4o") == Price(9.0, 9.0)  # the user's catch-all beats the packaged entry
    assert table.lookup("anthropic:claude-3-5-haiku") == Price(0.8, 4.0, 0.5)


# ---------------------------------------------------------------------------------------- secrets
def test_redact_removes_configured_keys_and_credential_shaped_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from cogtestbed.redact import REDACTED, redact, redact_json

    monkeypatch.setenv("OPENAI_API_KEY", "plain-configured-key-42")
    monkeypatch.setenv("MY_SERVICE_API_KEY", "another-configured-value")
    text = ("auth Bearer abc.DEF-123_xyz failed; key sk-proj-AAAAbbbbCCCC1234 and sk-ant-api03-zzzzYYYY9999; "
            '{"x-api-key": "kkkk-1111-2222"}; Authorization: Basic dXNlcjpwYXNz; api_key=qwertyuiop; '
            "plain-configured-key-42 and another-configured-value")
    out = redact(text)
    for secret in ("abc.DEF-123_xyz", "AAAAbbbbCCCC1234", "zzzzYYYY9999", "kkkk-1111-2222", "dXNlcjpwYXNz",
                   "qwertyuiop", "plain-configured-key-42", "another-configured-value"):
        assert secret not in out, (secret, out)
    assert out.count(REDACTED) == 8 and out.startswith("auth Bearer [REDACTED] failed")
    assert redact("a plain sentence with sk and a Bearer") == "a plain sentence with sk and a Bearer"
    assert redact_json({"e": ["Bearer tok-en-1234"], "n": 3}) == {"e": ["Bearer [REDACTED]"], "n": 3}


KEY = "hunter2-local-key-7f3a9c1b"  # not sk-shaped: removed because it is the configured key


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run_cli(args)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_server_echoing_the_key_never_gets_it_written(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A server that quotes the Authorization header in its error bodies: retried errors (stderr,
    calls.parquet's retry_log) and the error that fails the run (stderr, run.json's error) carry no key,
    and neither does any other file the runs wrote (tables, manifests, ledger, the response cache)."""
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults = server
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = tmp_path / "w"
    base = ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions", "--base-url",
            url, "--design", "visits_per_casino=2", "--cache", str(root / "cache.sqlite"), "--retry-for", "30"]
    echo = Fault("status", 500, retry_after=0, echo_credentials=True)
    faults.add(echo, echo)  # retried: the run completes with two retries logged
    code, said = _run([*base, "-o", str(root / "retried")], capsys)
    assert code == 0, said
    assert "you sent authorization: Bearer [REDACTED]" in said and said.count("retry ") >= 2
    import pandas as pd

    log = " ".join(str(x) for x in pd.read_parquet(root / "retried" / "calls.parquet")["retry_log"].dropna())
    assert "Bearer [REDACTED]" in log
    # a refusal after two answered calls: the run fails, marked failed with the error
    faults.add(Fault("delay"), Fault("delay"), Fault("status", 401, echo_credentials=True))
    code, failed = _run([*base, "--seed", "7", "-o", str(root / "failed")], capsys)
    assert code == 2
    run = json.loads((root / "failed" / "run.json").read_text())
    assert run["status"] == "failed" and "you sent authorization: Bearer [REDACTED]" in run["error"]
    assert KEY not in said + failed
    written = load_study("llm_border").every_written_text(root)  # the study's reader: parquet read back too
    assert KEY not in written
    assert KEY[:12] not in written  # not even a piece of it


# ---------------------------------------------------------------------------------- cache identity
@pytest.fixture(scope="module")
def two_servers(tiny):
    """Two local servers serving different models under the same name ``tiny-random`` (the tiny model
    and one built with another seed): (url, billing) each."""
    from cogtestbed.llm_adapters.clients.hf import HFClient, build_tiny_random
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    other = HFClient(*build_tiny_random(seed=1), "tiny-random-seed1", chat=False)
    billing_a, billing_b = Billing(), Billing()
    with serve({"tiny-random": tiny}, billing=billing_a) as a, serve({"tiny-random": other}, billing=billing_b) as b:
        yield (a, billing_a), (b, billing_b)


def test_two_servers_serving_different_models_under_one_name_share_no_answers(
        two_servers, tiny, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    (a, bill_a), (b, bill_b) = two_servers
    cache = str(tmp_path / "cache.sqlite")

    def args(url: str, out: str, *extra: str) -> list[str]:
        return ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions",
                "--base-url", url, "--design", "visits_per_casino=2", "--subjects", "2", "--cache", cache,
                "-o", str(tmp_path / out), *extra]

    assert _run(args(a, "a"), capsys)[0] == 0
    before = bill_b.requests
    assert _run(args(b, "b"), capsys)[0] == 0
    assert bill_b.requests - before == 16  # every answer asked of the second server (it was 0: issue 39)
    raw = {k: pd.read_parquet(tmp_path / k / "calls.parquet")["raw_response"].tolist() for k in ("a", "b")}
    assert raw["a"] != raw["b"]  # another model's answers, not the first server's
    runs = {k: json.loads((tmp_path / k / "run.json").read_text()) for k in ("a", "b")}
    assert runs["a"]["endpoint"]["url"] == a and runs["b"]["endpoint"]["url"] == b
    assert runs["a"]["endpoint"]["served_model"] == {"id": "tiny-random", "owned_by": "cogtestbed",
                                                     "root": "tiny-random"}
    assert runs["b"]["endpoint"]["served_model"]["root"] == "tiny-random-seed1"
    # --resume against the other server is refused in one line, and the run is left as it was
    code, said = _run([*args(b, "a"), "--resume"], capsys)
    assert code == 2 and len([ln for ln in said.splitlines() if ln.startswith("error:")]) == 1, said
    assert f"was run against {a}, this invocation reaches {b}" in said and "--share-cache" in said
    assert json.loads((tmp_path / "a" / "run.json").read_text())["status"] == "complete"
    # an explicit shared cache: the same model name at another address is served from the cache
    assert _run(args(a, "sa", "--share-cache"), capsys)[0] == 0
    before = bill_b.requests
    assert _run(args(b, "sb", "--share-cache"), capsys)[0] == 0
    assert bill_b.requests == before
    assert pd.read_parquet(tmp_path / "sb" / "calls.parquet")["raw_response"].tolist() == raw["a"]
    # shared, the address may change on --resume, but not the model the server lists under the name
    code, said = _run([*args(b, "sa", "--share-cache"), "--resume"], capsys)
    assert code == 2 and "another model under the same name" in said and "tiny-random-seed1" in said
    from cogtestbed.llm_adapters.servers.server import serve

    with serve({"tiny-random": tiny}) as c:  # the same model at a third address
        assert _run([*args(c, "sa", "--share-cache"), "--resume"], capsys)[0] == 0
    code, said = _run([*args(a, "sa"), "--resume"], capsys)  # a shared run resumed without it
    assert code == 2 and "was started with --share-cache" in said


def test_a_server_listing_another_model_under_the_name_is_refused_on_resume() -> None:
    from cogtestbed.llm_adapters.runs.rundir import endpoint_change

    url = "http://127.0.0.1:8000/v1"
    old = {"url": url, "served_model": {"id": "m", "root": "/models/a"}, "shared_cache": False}
    new = {**old, "served_model": {"id": "m", "root": "/models/b"}}
    assert endpoint_change(old, old) is None
    why = endpoint_change(new, old)
    assert why is not None and "another model under the same name" in why and "/models/b" in why
    assert endpoint_change({**new, "served_model": None}, old) is None  # a server that lists nothing: unknown
    assert endpoint_change(new, None) is None  # a run from before endpoints were recorded


# ------------------------------------------------------------------------------ the project's server
def _openai_sdk(url: str):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=url, api_key="not-needed", max_retries=0)


def test_streaming_through_the_openai_sdk_equals_the_plain_answer(server) -> None:
    url, _ = server
    sdk = _openai_sdk(url)
    common = {"model": "tiny-random", "prompt": "Q: Machine 1 or 2?\nA: Machine", "max_tokens": 12,
              "temperature": 0}
    plain = sdk.completions.create(**common)
    chunks = list(sdk.completions.create(**common, stream=True, stream_options={"include_usage": True}))
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert len(texts) > 1 and "".join(texts) == plain.choices[0].text != ""
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == plain.choices[0].finish_reason
    chat = {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "Pick a machine."}],
            "max_tokens": 12, "temperature": 0}
    plain_chat = sdk.chat.completions.create(**chat)
    stream = list(sdk.chat.completions.create(**chat, stream=True, stream_options={"include_usage": True}))
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert len(stream) > 2 and "".join(pieces) == plain_chat.choices[0].message.content
    assert stream[-1].usage.prompt_tokens == plain_chat.usage.prompt_tokens
    without_usage = list(sdk.chat.completions.create(**chat, stream=True))
    assert all(c.usage is None and c.choices for c in without_usage)


def test_echo_with_max_tokens_0_generates_nothing(server) -> None:
    url, _ = server
    prompt = "Q: Machine 1 or 2?\nA: Machine 2"
    resp = _openai_sdk(url).completions.create(model="tiny-random", prompt=prompt, max_tokens=0, echo=True,
                                              logprobs=1)
    choice = resp.choices[0]
    assert choice.text == prompt and resp.usage.completion_tokens == 0
    assert len(choice.logprobs.tokens) == resp.usage.prompt_tokens and choice.logprobs.token_logprobs[0] is None
    assert "".join(choice.logprobs.tokens) == prompt


@pytest.mark.parametrize(("path", "body", "status", "named"), [
    ("completions", b"{not json", 400, "not valid JSON"),
    ("completions", b"[1, 2]", 400, "must be a JSON object"),
    ("completions", {"model": "tiny-random", "prompt": "x", "max_tokens": "many"}, 400, "'max_tokens' must be int"),
    ("completions", {"model": "tiny-random", "prompt": "x", "max_tokens": -1}, 400, "'max_tokens' must be in"),
    ("completions", {"model": "tiny-random", "prompt": "x", "max_tokens": 0}, 400, "'max_tokens' must be in [1,"),
    ("completions", {"model": "tiny-random", "prompt": "x", "temperature": 9}, 400, "'temperature' must be in"),
    ("completions", {"model": "nope", "prompt": "x"}, 404, "model 'nope' not served"),
    ("completions", {"prompt": "x"}, 400, "missing required parameter: 'model'"),
    ("chat/completions", {"model": "tiny-random-chat"}, 400, "missing required parameter: 'messages'"),
    ("chat/completions", {"model": "tiny-random-chat", "messages": [{"role": "user"}]}, 400, "'messages' must be"),
    ("chat/completions", {"model": "tiny-random-chat", "messages": "hi"}, 400, "'messages' must be list"),
    ("messages", {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "hi"}]}, 400,
     "missing required parameter: 'max_tokens'"),
    ("completions", {"model": "tiny-random", "prompt": "x" * 5000}, 413, "exceeds the limit of 4096 bytes"),
    ("messages", {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                  "stream": True}, 400, "does not stream /v1/messages"),
])
def test_malformed_or_oversized_requests_get_an_openai_style_4xx(tiny, tiny_chat, path: str, body, status: int,
                                                                 named: str) -> None:
    import httpx

    from cogtestbed.llm_adapters.servers.server import serve

    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, max_body=4096) as url:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        resp = httpx.post(f"{url}/{path}", content=content, headers={"content-type": "application/json"})
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert named in error["message"] and error["type"] == "invalid_request_error"


def test_the_generation_time_of_a_request_is_bounded(tiny) -> None:
    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.servers.server import create_app

    create_app({"tiny-random": tiny}, max_seconds=0.5)
    assert tiny.max_time == 0.5
    assert tiny._generate_kwargs(GenerateRequest("x", 4))["max_time"] == 0.5
    tiny.max_time = None
    assert "max_time" not in tiny._generate_kwargs(GenerateRequest("x", 4))


def test_the_server_stops_on_the_first_sigterm_with_a_request_in_flight(tmp_path: Path) -> None:
    import os
    import signal
    import socket
    import subprocess
    import sys
    import threading
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", "serve", "--model", "tiny-random",
                             "--port", str(port), "--fail-rate", "1", "--delay", "300", "--reasoning-as", "o3"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        url = f"http://127.0.0.1:{port}/v1"
        models = None
        for _ in range(600):  # the model loads first
            try:
                models = httpx.get(f"{url}/models", timeout=1)
                if models.status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # the command's options reach the server: the model and its reasoning alias are listed
        assert models is not None and [m["id"] for m in models.json()["data"]] == ["tiny-random", "o3"]
        hung = threading.Thread(target=lambda: _quietly(lambda: httpx.post(
            f"{url}/completions", json={"model": "tiny-random", "prompt": "x"}, timeout=600)), daemon=True)
        hung.start()  # held by the injected 300 s delay when the signal comes
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0  # one signal; uvicorn alone would wait for the request
    finally:
        if proc.poll() is None:
            proc.kill()


def _quietly(call) -> None:
    with contextlib.suppress(Exception):
        call()


# ----------------------------------------------------------------------- a server that sends nonsense
@contextlib.contextmanager
def _nonsense_server(answer: dict):
    """An OpenAI-compatible server on 127.0.0.1 whose completions answer ``answer["body"]`` (bytes) with
    status 200: the test sets what it sends."""
    from cogtestbed.llm_adapters.servers.server import serve_app

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"].endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        else:
            body = answer["body"]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    with serve_app(app) as root:
        yield f"{root}/v1"


def _completion(usage: dict | None = None, choices: list | None = None) -> bytes:
    return json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "text": " 1", "logprobs": None, "finish_reason": "stop"}]
                       if choices is None else choices, "usage": usage}).encode()


@pytest.mark.parametrize(("body", "named"), [
    (_completion(choices=[]), "the server answered without a choice (choices: [])"),
    (_completion()[:40], "not valid JSON"),
])
def test_a_response_without_an_answer_is_one_line_never_a_traceback(tmp_path: Path, capsys, body: bytes,
                                                                    named: str) -> None:
    with _nonsense_server({"body": body}) as url:
        code, said = _run(["run", "instrumental-learning", "--llm", "openai:m", "--mode", "completions",
                           "--base-url", url, "--design", "visits_per_casino=2", "--retry-for", "0",
                           "--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "r")], capsys)
    errors = [ln for ln in said.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1 and named in errors[0], said
    assert "Traceback" not in said


@pytest.mark.parametrize("usage", [{"prompt_tokens": -1000000, "completion_tokens": 2, "total_tokens": 0},
                                   {"prompt_tokens": 5, "completion_tokens": float("nan"), "total_tokens": 0}])
def test_negative_or_nan_usage_is_flagged_and_never_credited(tmp_path: Path, capsys, usage: dict) -> None:
    prices = tmp_path / "p.toml"
    prices.write_text('["openai:m"]\ninput = 1000.0\noutput = 1000.0\n')
    body = json.dumps(json.loads(_completion(usage))).encode()  # NaN is sent as the bare NaN JSON allows
    with _nonsense_server({"body": body}) as url:
        code, said = _run(["run", "instrumental-learning", "--llm", "openai:m", "--mode", "completions",
                           "--base-url", url, "--design", "visits_per_casino=2", "--prices", str(prices),
                           "--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "r")], capsys)
    assert code == 0, said
    flagged = [ln for ln in said.splitlines() if "not a token count" in ln]
    assert len(flagged) == 8 and "Traceback" not in said  # one line per call that reported it
    stats = json.loads((tmp_path / "r" / "run.json").read_text())["stats"]
    assert stats["cost_usd"] > 0 and stats["prompt_tokens"] >= 0  # booked at the worst case, never credited
    import pandas as pd

    calls = pd.read_parquet(tmp_path / "r" / "calls.parquet")
    bad = "prompt_tokens" if usage["prompt_tokens"] < 0 else "completion_tokens"
    assert calls[bad].isna().all()  # recorded as unknown, not as the number sent


def test_a_changed_system_fingerprint_is_a_warning_and_run_json_keeps_both() -> None:
    """OpenAI changes ``system_fingerprint`` when it changes its serving configuration: a resumed run is
    not refused for it, but warned, and ``run.json``'s endpoint records every value seen."""
    from types import SimpleNamespace

    from cogtestbed.llm_adapters.runs.runner import note_fingerprints

    rundir = SimpleNamespace(manifest={"endpoint": {"url": "api.openai.com", "system_fingerprints": ["fp_a"]}})
    warnings: list[dict[str, str]] = []
    note_fingerprints(rundir, SimpleNamespace(base=SimpleNamespace(system_fingerprints={"fp_a"})), warnings)
    assert warnings == [] and rundir.manifest["endpoint"]["system_fingerprints"] == ["fp_a"]
    note_fingerprints(rundir, SimpleNamespace(base=SimpleNamespace(system_fingerprints={"fp_b", "fp_a"})), warnings)
    assert rundir.manifest["endpoint"]["system_fingerprints"] == ["fp_a", "fp_b"]  # both values kept
    assert len(warnings) == 1 and warnings[0]["kind"] == "system_fingerprint"
    assert "fp_a before" in warnings[0]["message"] and "fp_b now" in warnings[0]["message"]
