"""``cogtestbed serve``: the project's OpenAI-compatible (and Anthropic-Messages-compatible) server for
local models, with its test emulators (a reasoning model, injected faults) — a thin layer over
:func:`cogtestbed.llm_adapters.servers.server.run_server`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from cogtestbed.bounds import Cost
from cogtestbed.cli.app import app
from cogtestbed.cli.options import request_command
from cogtestbed.request import option

# The server's limits (cogtestbed.llm_adapters.servers.checks: MAX_BODY_BYTES, MAX_GENERATION_SECONDS,
# MAX_QUEUE), repeated here because that module imports numpy and pandas and --help stays light;
# tests/test_serve.py holds them equal.
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_GENERATION_SECONDS = 60.0
MAX_QUEUE = 16


@dataclass(frozen=True)
class ServeRequest:
    """What ``cogtestbed serve`` serves (its options, declared once: :mod:`cogtestbed.request`)."""

    #: ``--model``: the LLMs served, not a cognitive model (``plan --model``)
    served: Sequence[str] | None = option(
        None, name="model", cli_type=list[str] | None, flags=("--model", "-m"), cli_required=True,
        help="Model to serve, under this name: a hub id, a local path, smollm2-135m, tiny-random, tiny-random-chat "
             "or tiny-random-vlm (repeatable).")
    host: str = option("127.0.0.1", help="Address to listen on.")
    port: int = option(8000, min=1, max=65535, help="Port to listen on.")
    reasoning_as: Sequence[str] | None = option(
        None, cli_type=list[str] | None, flags=("--reasoning-as",),
        help="Also serve the first --model as NAME acting as a reasoning model (OpenAI's o-series on "
             "/v1/chat/completions, extended thinking on /v1/messages): hidden tokens billed, refused fields "
             "answered with the provider's 400, answers in the form the prompt asks for (repeatable; e.g. "
             "--reasoning-as o3).")
    max_body: int = option(MAX_BODY_BYTES, min=1, max=2**30, cost=Cost("bytes per request body", bytes=1.0),
                           help="Largest request body in bytes; larger ones get 413.")
    generation_seconds: float = option(MAX_GENERATION_SECONDS, min=0.001, flags=("--max-seconds",),
                                       help="Longest generation of one request, in seconds.")
    max_queue: int = option(MAX_QUEUE, min=1, max=10_000,
                            cost=Cost("requests held at once", note="each with its body in memory"),
                            help="Most requests held at once, one computing per model; more get 429.")
    fail_rate: float = option(0.0, min=0.0, max=1.0,
                              help="Fault injection: share of the POST requests that fail (seeded), in [0, 1].")
    status: int | None = option(None, min=400, max=599,
                                help="Fault injection: fail with this HTTP status (default 503 when no other fault).")
    drop: bool = option(False, flags=("--drop",),
                        help="Fault injection: fail by dropping the connection half-way through the body.")
    delay: float | None = option(None, min=0.0, help="Fault injection: fail by answering after this many seconds.")
    retry_after: float | None = option(None, min=0.0, help="Fault injection: send Retry-After (seconds) with --status.")
    fault_seed: int = option(0, help="Fault injection: seed of the random faults.")


@request_command(app, ServeRequest)
def serve(req: ServeRequest) -> None:
    """Serve local models over an OpenAI-compatible (and Anthropic Messages) HTTP API until Ctrl-C or SIGTERM."""
    from cogtestbed.llm_adapters.servers.server import fault_injector, run_server

    faults = fault_injector(req.fail_rate, req.status, req.drop, req.delay, req.retry_after, req.fault_seed)
    code = run_server(list(req.served or ()), req.host, req.port, faults, req.max_body, req.generation_seconds,
                      req.max_queue, list(req.reasoning_as or ()))
    # a generation still running in a worker thread cannot be interrupted: end the process here
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)
