"""``cogtestbed serve`` (issue 72): the project's OpenAI-compatible server as a command, with its emulators;
the old module paths still run it, with one deprecation line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from cogtestbed.cli.serve import MAX_BODY_BYTES, MAX_GENERATION_SECONDS, MAX_QUEUE, ServeRequest

pytest.importorskip("starlette")
pytest.importorskip("transformers")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # the default suite starts `cogtestbed serve` in tests/test_llm_border.py (alias listed, SIGTERM)
def test_serve_answers_one_request_and_stops_on_sigterm() -> None:
    """Started on 127.0.0.1 on a free port: it lists the model and its reasoning alias, answers one
    completion with the requested length, and exits 0 on the first SIGTERM."""
    import httpx

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", "serve", "--model", "tiny-random", "--host",
                             "127.0.0.1", "--port", str(port), "--reasoning-as", "o3"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:  # the model loads first
            try:
                models = httpx.get(f"{url}/models", timeout=1)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        assert [m["id"] for m in models.json()["data"]] == ["tiny-random", "o3"]
        answer = httpx.post(f"{url}/completions", json={"model": "tiny-random", "prompt": "Hello", "max_tokens": 3,
                                                          "seed": 1}, timeout=60).json()
        assert answer["usage"]["completion_tokens"] == 3 and answer["choices"][0]["finish_reason"] == "length"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_refuses_bad_options_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    assert run_cli(["serve", "--model", "m", "--drop", "--delay", "1", "--fail-rate", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --status, --drop and --delay are different faults: give one of them"
    assert run_cli(["serve"]) == 2
    assert "Missing option '--model'" in capsys.readouterr().err


def test_the_commands_defaults_are_the_servers() -> None:
    from cogtestbed.llm_adapters.servers import checks

    assert (MAX_BODY_BYTES, MAX_GENERATION_SECONDS, MAX_QUEUE) == (checks.MAX_BODY_BYTES,
                                                                   checks.MAX_GENERATION_SECONDS, checks.MAX_QUEUE)
    assert ServeRequest().max_body == checks.MAX_BODY_BYTES
