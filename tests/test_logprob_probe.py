"""Scoring you can trust (issue 39): the log-probability probe refuses a server whose echoed
log-probabilities are shifted or missing, and an error saying log-probabilities are unsupported
(whatever its HTTP status) falls back to sampling at once, without retries."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.llm_adapters.clients.logprob_probe import (
    PROBE_CONTEXT,
    PROBE_CONTINUATION,
    check_consistency,
    probe_scoring,
    says_logprobs_unsupported,
)

REVEALED = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
            "--design", "n_samples=3")
LLAMA_CPP_500 = "logprobs is not supported for models created with logits_all=False"


def test_errors_saying_logprobs_are_unsupported_are_recognised() -> None:
    for message in (LLAMA_CPP_500, "HTTP 500: logprobs is not supported", "echo is not supported",
                    "This model does not support logprobs", "prompt_logprobs are disabled on this server",
                    "HTTP 400: 'logprobs' not available for this model"):
        assert says_logprobs_unsupported(message), message
    for message in ("HTTP 503: overloaded", "HTTP 500: Internal Server Error", "injected fault",
                    "logprobs must be an integer", "the model cannot be loaded"):
        assert not says_logprobs_unsupported(message), message


def test_consistency_of_echoed_and_generated_logprobs() -> None:
    top = {" yes": -0.7, " no": -1.2, " a": -3.0}
    assert check_consistency(top, [" yes"], [-0.72])[0]
    ok, why, checks = check_consistency(top, [" yes"], [-17.3])  # a shifted echo: nats apart
    assert not ok and "nats apart" in why and checks["difference"] == pytest.approx(16.6)
    assert check_consistency(top, [" maybe"], [-5.0])[0]  # outside the top: below its lowest
    ok, why, _ = check_consistency(top, [" maybe"], [-0.1])  # outside the top yet more likely than all
    assert not ok and "above every one" in why
    assert not check_consistency(top, [" yes"], [2.5])[0]  # not a log-probability
    assert not check_consistency({}, [" yes"], [-0.7])[0]  # nothing to compare with
    assert not check_consistency(top, [], [])[0]


#: Broken echoes: how each moves the tiny model's echoed prompt log-probabilities, and what the probe says.
BROKEN_ECHOES = {
    # each token carries the next one's (the first token gets one)
    "back": (lambda v: v[1:] + [v[-1]], "first echoed token"),
    # each token carries the previous one's (the second token gets none)
    "forward": (lambda v: [None] + v[:-1], "after the first no log-probability"),
    # values of another distribution (a temperature of 4): more likely than the server's own top tokens
    "scaled": (lambda v: [None if x is None else x / 4 for x in v], "above every one"),
}


def _broken(tiny: Any, how: str) -> Any:
    """The tiny model whose echoed prompt log-probabilities are moved as :data:`BROKEN_ECHOES` says."""
    model = copy.copy(tiny)
    move = BROKEN_ECHOES[how][0]

    def prompt_logprobs(text: str) -> list[tuple[str, int, float | None]]:
        rows = tiny.prompt_logprobs(text)
        moved = move([v for _, _, v in rows])
        return [(t, o, v) for (t, o, _), v in zip(rows, moved, strict=True)]

    model.prompt_logprobs = prompt_logprobs
    return model


@pytest.mark.parametrize("how", sorted(BROKEN_ECHOES))
def test_a_server_with_misaligned_echoed_logprobs_is_scored_by_sampling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        tiny: Any, how: str) -> None:
    from cogtestbed.llm_adapters.servers.server import serve

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    with serve({"tiny-random": _broken(tiny, how)}) as url:
        res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode",
                                       "completions", "--base-url", url, "--subjects", "1",
                                       "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "exact scoring refused" in line]
    assert len(lines) == 1  # said in one line
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["scoring"]["method"] == "sampled"
    assert BROKEN_ECHOES[how][1] in run["scoring"]["probe"]  # and why
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert set(calls["kind"]) == {"sample"}


def test_the_local_server_passes_the_probe(server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           tiny: Any) -> None:
    url, _ = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode", "completions",
                                   "--base-url", url, "--subjects", "1", "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["scoring"]["method"] == "exact" and "passed the scoring probe" in run["scoring"]["probe"]
    checks = run["scoring"]["probe_checks"]
    # the value compared is the model's own: log P(" yes" | "The answer is") teacher-forced in process
    exact = tiny.score_sync(PROBE_CONTEXT, [PROBE_CONTINUATION], raw=True).scores[0].token_logprobs[0]
    assert checks["echoed_logprob"] == pytest.approx(exact, abs=1e-6)


class _NoLogprobs(BaseHTTPRequestHandler):
    """llama.cpp's server without ``--logits_all``: HTTP 500 to any request for log-probabilities."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        payload = json.dumps({"error": {"message": LLAMA_CPP_500, "type": "internal_server_error",
                                        "code": 500}}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def no_logprobs_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NoLogprobs)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _NoLogprobs.requests = []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_http_500_saying_logprobs_are_unsupported_is_not_retried(no_logprobs_server: str) -> None:
    from cogtestbed.llm_adapters.clients.base import ScoringNotSupported
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    client = OpenAIClient("smollm2", base_url=no_logprobs_server, mode="completions")

    async def go() -> Any:
        try:
            with pytest.raises(ScoringNotSupported, match="logprobs is not supported"):
                await client.ascore("The answer is", [" yes"])
            return await probe_scoring(client)
        finally:
            await client.aclose()

    probe = asyncio.run(go())
    assert not probe.ok and "log-probabilities are unsupported" in probe.reason
    assert len(_NoLogprobs.requests) == 2  # one scoring request, one probe request: no retry of either
