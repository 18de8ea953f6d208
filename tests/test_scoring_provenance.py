"""Provenance that tells the truth (issue 48 item 4): ``run.json`` counts the scored steps of each method
and says why steps planned exact were sampled; a run that abandons exact scoring mid-run says so in one
line; non-finite log-probabilities are refused per request and never cached; vLLM's HTTP 422 "Extra inputs
are not permitted" for ``echo`` is "unsupported"."""

from __future__ import annotations

import asyncio
import copy
import json
import math
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.llm_adapters.clients.logprob_probe import PROBE_CONTEXT, PROBE_CONTINUATION, says_logprobs_unsupported

REVEALED = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
            "--design", "n_samples=3")
#: vLLM's answer to ``echo`` on a build whose request schema has no such field (FastAPI's validation error).
VLLM_422 = {"object": "error", "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'echo'), "
            "'msg': 'Extra inputs are not permitted', 'input': True}]", "type": "BadRequestError", "code": 422}


def _breaks_after_the_probe(tiny: Any, every: int) -> Any:
    """The tiny model whose echoed log-probabilities pass the probe but are shifted (the first token gets
    one) for the subjects' scoring requests — every ``every``-th of them (counted by distinct text)."""
    model = copy.copy(tiny)
    seen: dict[str, int] = {}

    def prompt_logprobs(text: str) -> list[tuple[str, int, float | None]]:
        rows = tiny.prompt_logprobs(text)
        if text == PROBE_CONTEXT + PROBE_CONTINUATION:
            return rows
        n = seen.setdefault(text, len(seen))
        if n % every:
            return rows
        values = [v for _, _, v in rows]
        return [(t, o, v) for (t, o, _), v in zip(rows, values[1:] + [values[-1]], strict=True)]

    model.prompt_logprobs = prompt_logprobs
    return model


@pytest.mark.parametrize("every", [1, 4])
def test_a_run_that_abandons_exact_scoring_mid_run_says_so_and_counts_each_method(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny: Any, every: int) -> None:
    from cogtestbed.llm_adapters.servers.server import serve

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    with serve({"tiny-random": _breaks_after_the_probe(tiny, every)}) as url:
        res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode",
                                       "completions", "--base-url", url, "--subjects", "2",
                                       "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "exact scoring abandoned mid-run" in line]
    assert len(lines) == 1, res.stderr  # said in one line, once
    scoring = json.loads((tmp_path / "run" / "run.json").read_text())["scoring"]
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    steps = calls[calls["kind"].isin(["score", "sample"])].groupby(["subject", "step"])["score_method"].first()
    assert scoring["planned_method"] == "exact" and "passed the scoring probe" in scoring["probe"]
    assert scoring["steps"] == {"exact": int((steps == "exact").sum()), "sampled": int((steps == "sampled").sum())}
    assert scoring["calls"] == {"score": int((calls["kind"] == "score").sum()),
                                "sample": int((calls["kind"] == "sample").sum())}
    assert scoring["steps"]["sampled"] > 0
    assert scoring["method"] == ("sampled" if every == 1 else "mixed"), scoring
    if every == 4:
        assert scoring["steps"]["exact"] > 0
    assert all("first echoed token" in f["reason"] for f in scoring["fallbacks"])
    assert sum(f["steps"] for f in scoring["fallbacks"]) == scoring["steps"]["sampled"]
    sampled = calls[calls["kind"] == "sample"]
    assert sampled["score_fallback"].str.contains("first echoed token").all()  # each row says why


def test_the_probe_s_verdict_alone_is_method_exact_with_counts(server: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode", "completions",
                                   "--base-url", url, "--subjects", "1", "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    assert "abandoned" not in res.stderr
    scoring = json.loads((tmp_path / "run" / "run.json").read_text())["scoring"]
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert scoring["method"] == scoring["planned_method"] == "exact" and "fallbacks" not in scoring
    assert scoring["steps"]["sampled"] == 0 and scoring["steps"]["exact"] > 0
    assert scoring["calls"] == {"score": len(calls), "sample": 0}


def test_non_finite_logprobs_are_refused_per_request_and_never_cached(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A local model whose scores come back NaN / -inf for some continuations: those steps are sampled
    (with why), the values never reach the cache or the trial table."""
    from cogtestbed.llm_adapters.clients.base import ContinuationScore, ScoreResult
    from cogtestbed.llm_adapters.clients.hf import HFClient

    real = HFClient.ascore
    bad = iter([math.nan, -math.inf] * 1000)

    async def ascore(self: Any, context: Any, continuations: Any, raw: bool = False) -> ScoreResult:
        result = await real(self, context, continuations, raw)
        if len(context) % 2:
            value = next(bad)
            first = result.scores[0]
            result.scores[0] = ContinuationScore(first.continuation, value, first.tokens, [value])
        return result

    monkeypatch.setattr(HFClient, "ascore", ascore)
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "hf:tiny-random", "--subjects", "2",
                                   "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    scoring = json.loads((tmp_path / "run" / "run.json").read_text())["scoring"]
    assert scoring["steps"]["sampled"] > 0 and scoring["method"] in ("mixed", "sampled"), scoring
    assert all("non-finite log-probability" in f["reason"] for f in scoring["fallbacks"])
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        stored = " ".join(str(row) for row in db.execute("SELECT * FROM responses"))
    assert "NaN" not in stored and "Infinity" not in stored
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    exact = calls[calls["kind"] == "score"]["score_logprobs"]
    assert len(exact) and all(math.isfinite(v) for row in exact for v in row)  # (a sampled share may be log 0)


def test_a_non_finite_echoed_logprob_is_refused_by_the_http_client() -> None:
    from cogtestbed.llm_adapters.clients.base import ScoringNotSupported
    from cogtestbed.llm_adapters.clients.openai_client import _continuation_from_echo

    lp = SimpleNamespace(tokens=["The", " answer", " yes"], text_offset=[0, 3, 10],
                         token_logprobs=[None, -1.0, float("nan")])
    with pytest.raises(ScoringNotSupported, match="non-finite log-probability"):
        _continuation_from_echo("The answer", " yes", lp)


def test_vllm_s_422_extra_inputs_for_echo_is_unsupported() -> None:
    assert says_logprobs_unsupported(f"HTTP 422: {VLLM_422['message']}")
    assert not says_logprobs_unsupported("HTTP 422: Extra inputs are not permitted ('body', 'temperature')")


class _Vllm422(BaseHTTPRequestHandler):
    """A vLLM build without ``echo``: 422 to every request that carries it; ``requests`` counts them."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        payload = json.dumps(VLLM_422).encode()
        self.send_response(422)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def vllm_422() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Vllm422)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Vllm422.requests = []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_422_for_echo_is_scoring_not_supported_without_retries(vllm_422: str) -> None:
    from cogtestbed.llm_adapters.clients.base import ScoringNotSupported
    from cogtestbed.llm_adapters.clients.logprob_probe import probe_scoring
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    client = OpenAIClient("m", base_url=vllm_422, mode="completions")

    async def go() -> Any:
        try:
            with pytest.raises(ScoringNotSupported, match="Extra inputs are not permitted"):
                await client.ascore("The answer is", [" yes"])
            return await probe_scoring(client)
        finally:
            await client.aclose()

    probe = asyncio.run(go())
    assert not probe.ok and "unsupported" in probe.reason
    assert len(_Vllm422.requests) == 2  # one scoring request, one probe request: neither retried
