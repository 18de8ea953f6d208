"""The LLM border (issue 39, items 1, 2 and 5): the figures docs/llm-runs.md quotes, printed.

Everything runs on local servers on 127.0.0.1 (:mod:`cogtestbed.llm_adapters.servers.server`, the tiny
random models); nothing calls a hosted API.

1. Cache identity: two servers serve different models under one name (``tiny-random``: the tiny
   model, and one built with another seed).  A run against the first, then one against the second
   with the same cache: the requests the second server received (0 before issue 39: it was served
   the first server's answers), and with ``--share-cache`` (asked for: 0).
2. Secrets: a server that echoes the Authorization header in its error bodies; a run that retries
   through two such errors and one that fails on one.  Occurrences of the key in stdout/stderr and
   in every file the runs wrote (parquet tables read back).
3. Usage: a server whose answers report ``prompt_tokens: -1000000`` at $1000 per million tokens:
   the run's settled cost (issue 39 found it credited: negative).

    PYTHONPATH=. python benchmarks/studies/llm_border.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The key the echoing server sees (not sk-shaped: removed because it is the configured key).
KEY = "study-configured-key-0123456789"
DESIGN = ("--design", "visits_per_casino=2")


def cli(args: list[str]) -> tuple[int, str]:
    """``cogtestbed ARGS`` in this process: (exit status, stdout + stderr)."""
    from cogtestbed.cli import run_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(args)
    return code, out.getvalue() + err.getvalue()


def run_args(url: str, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions", "--base-url",
            url, *DESIGN, "--subjects", "2", "--cache", str(cache), "-o", str(out), *extra]


def cache_identity(root: Path) -> dict[str, Any]:
    from cogtestbed.llm_adapters.clients.hf import HFClient, build_tiny_random
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    first, other = HFClient.tiny_random(), HFClient(*build_tiny_random(seed=1), "tiny-random-seed1", chat=False)
    bill_a, bill_b = Billing(), Billing()
    with serve({"tiny-random": first}, billing=bill_a) as a, serve({"tiny-random": other}, billing=bill_b) as b:
        cli(run_args(a, root / "a", root / "c.sqlite"))
        cli(run_args(b, root / "b", root / "c.sqlite"))
        keyed = bill_b.requests
        cli(run_args(a, root / "sa", root / "c.sqlite", "--share-cache"))
        cli(run_args(b, root / "sb", root / "c.sqlite", "--share-cache"))
        shared = bill_b.requests - keyed
        code, said = cli([*run_args(b, root / "a", root / "c.sqlite"), "--resume"])
    return {"requests_to_first_server": bill_a.requests, "requests_to_second_server": keyed,
            "requests_to_second_server_with_share_cache": shared,
            "resume_against_the_other_server": {"exit": code,
                                                "error": next(ln for ln in said.splitlines() if "error" in ln)}}


def every_written_text(root: Path) -> str:
    """Every file under ``root`` as text: raw bytes decoded, parquet tables read back (their pages are
    compressed, so a byte grep alone would miss a key in them).  tests/test_llm_border.py uses it too."""
    import pandas as pd

    parts = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts.append(path.read_bytes().decode("latin-1"))
        if path.suffix == ".parquet":
            parts.append(pd.read_parquet(path).to_json())
    return "\n".join(parts)


def secrets(root: Path) -> dict[str, Any]:
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.llm_adapters.servers.server import Fault, FaultInjector, serve

    faults = FaultInjector()
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        with serve({"tiny-random": HFClient.tiny_random()}, faults) as url:
            echo = Fault("status", 500, retry_after=0, echo_credentials=True)
            faults.add(echo, echo)
            code_retried, said_retried = cli(run_args(url, root / "retried", root / "c.sqlite", "--retry-for", "30"))
            faults.add(Fault("delay"), Fault("delay"), Fault("status", 401, echo_credentials=True))
            code_failed, said_failed = cli(run_args(url, root / "failed", root / "c.sqlite", "--seed", "7"))
    finally:
        del os.environ["OPENAI_API_KEY"]
    written = every_written_text(root)
    return {"retried_run_exit": code_retried, "failed_run_exit": code_failed,
            "echoed_errors_shown_redacted": (said_retried + said_failed).count("Bearer [REDACTED]"),
            "key_in_stdout_stderr": (said_retried + said_failed).count(KEY),
            "files_written": sum(1 for p in root.rglob("*") if p.is_file()), "key_in_files": written.count(KEY)}


@contextlib.contextmanager
def negative_usage_server() -> Iterator[str]:
    from cogtestbed.llm_adapters.servers.server import serve_app

    answer = json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "text": " 1", "logprobs": None, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": -1000000, "completion_tokens": 2, "total_tokens": 0}}).encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = (json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                if scope["path"].endswith("/models") else answer)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    with serve_app(app) as root:
        yield f"{root}/v1"


def usage(root: Path) -> dict[str, Any]:
    prices = root / "p.toml"
    prices.write_text('["openai:m"]\ninput = 1000.0\noutput = 1000.0\n')
    with negative_usage_server() as url:
        code, said = cli(["run", "instrumental-learning", "--llm", "openai:m", "--mode", "completions", "--base-url",
                          url, *DESIGN, "--prices", str(prices), "--cache", str(root / "c.sqlite"), "-o",
                          str(root / "r")])
    stats = json.loads((root / "r" / "run.json").read_text())["stats"]
    return {"exit": code, "calls": stats["new_calls"], "cost_usd": stats["cost_usd"],
            "flagged_lines": sum(1 for ln in said.splitlines() if "not a token count" in ln)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, study in (("cache identity", cache_identity), ("secrets", secrets), ("usage", usage)):
            (root / name).mkdir()
            print(f"{name}: {json.dumps(study(root / name))}", flush=True)


if __name__ == "__main__":
    main()
