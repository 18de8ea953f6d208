"""A small OpenAI-compatible (and Anthropic-Messages-compatible) HTTP server for local models.

Serves :class:`~cogtestbed.llm_adapters.hf.HFClient` models with starlette + uvicorn::

    python -m cogtestbed.llm_adapters.server --model tiny-random --port 8000
    cogtestbed run instrumental-learning --llm openai:tiny-random --base-url http://127.0.0.1:8000/v1

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (``prompt``, ``max_tokens``,
``temperature``, ``stop``, ``seed``, ``logprobs``, ``echo``), ``POST /v1/chat/completions``
(``messages``, ``logprobs``/``top_logprobs``) and ``POST /v1/messages`` (Anthropic).  It exists so
that the SDK adapters are tested against a real server, and it can put a local model behind the
same adapter as a hosted one.

:class:`FaultInjector` makes the next requests fail at the HTTP level — a status code with
``Retry-After``, a connection dropped half-way through the response body, or a delay — so that
tests can prove the adapters' retries.  It also fails a seeded random share of the requests, which
the command line exposes::

    python -m cogtestbed.llm_adapters.server --model tiny-random --fail-rate 0.2 --status 503
    python -m cogtestbed.llm_adapters.server --model tiny-random --fail-rate 1 --status 503   # an outage
    python -m cogtestbed.llm_adapters.server --model tiny-random --fail-rate 0.1 --drop       # dropped connections
    python -m cogtestbed.llm_adapters.server --model tiny-random --fail-rate 0.5 --delay 3    # slow answers
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.llm_adapters.base import IMAGES_KEY, GenerateRequest, Generation, decode_data_url
from cogtestbed.llm_adapters.hf import HFClient


@dataclass(frozen=True)
class Fault:
    """``kind``: ``"status"`` (answer ``status`` with ``retry_after``), ``"drop"`` (close the
    connection mid-body) or ``"delay"`` (wait ``seconds``, then answer normally; 0: a request let
    through).  ``echo_credentials``: a ``"status"`` error body that quotes the request's
    ``Authorization`` and ``x-api-key`` headers, as careless servers and proxies do."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    echo_credentials: bool = False


class FaultInjector:
    """A queue of faults applied to the next POST requests, one each, plus a request log.

    With ``rate > 0`` a request the queue leaves alone fails with ``fault`` with probability
    ``rate`` (drawn from a ``numpy`` generator seeded with ``seed``, so a fault pattern repeats).
    """

    def __init__(self, rate: float = 0.0, fault: Fault | None = None, seed: int = 0) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"the fault rate must be in [0, 1], got {rate:g}")
        self.pending: deque[Fault] = deque()
        self.log: list[tuple[float, str, str]] = []  # (time, path, what happened)
        self.rate, self.fault = rate, fault or Fault("status", 503)
        self.rng = np.random.default_rng(seed)

    def add(self, *faults: Fault) -> None:
        self.pending.extend(faults)

    def next(self, path: str) -> Fault | None:
        fault = self.pending.popleft() if self.pending else None
        if fault is None and self.rate > 0 and self.rng.random() < self.rate:
            fault = self.fault
        self.log.append((time.monotonic(), path, "ok" if fault is None else fault.kind))
        return fault


@dataclass
class Billing:
    """What the server was asked and what it would bill: every POST request that reached it
    (``requests``, faulted ones included) and the usage of every answer it produced (``prompt_tokens``,
    ``completion_tokens``: what a hosted API charges).  ``logprobs=False`` makes the completions
    endpoint answer without log-probabilities (a server that cannot score)."""

    requests: int = 0
    answered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: bool = True

    def bill(self, usage: Mapping[str, int | None]) -> None:
        self.answered += 1
        self.prompt_tokens += int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)


class _CountRequests:
    """ASGI middleware counting the POST requests that reach the server (:class:`Billing`)."""

    def __init__(self, app: Any, billing: Billing) -> None:
        self.app, self.billing = app, billing

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.billing.requests += 1
        await self.app(scope, receive, send)


def _echoed(echoed: list[tuple[str, int, float | None]], logprobs: dict[str, Any] | None) -> dict[str, Any] | None:
    """A completion's log-probabilities with the echoed prompt's tokens in front (OpenAI's ``echo``)."""
    if logprobs is None:
        return None
    return {
        "tokens": [t for t, _, _ in echoed] + logprobs["tokens"],
        "text_offset": [o for _, o, _ in echoed] + logprobs["text_offset"],
        "token_logprobs": [v for _, _, v in echoed] + logprobs["token_logprobs"],
        "top_logprobs": [None] * len(echoed) + logprobs["top_logprobs"],
    }


def _chat_logprobs(gen: Any) -> dict[str, Any] | None:
    """A chat completion's ``logprobs`` (OpenAI's ``content`` list), None where the model gave none."""
    if gen.logprobs is None:
        return None
    return {"content": [
        {"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
         "top_logprobs": [{"token": a, "logprob": v, "bytes": list(a.encode())}
                          for a, v in t.top.items()]} for t in gen.logprobs]}


def create_app(models: Mapping[str, HFClient], faults: FaultInjector | None = None,
               billing: Billing | None = None) -> Any:
    """The ASGI application serving ``models`` (name → client); ``billing`` tallies requests and usage."""
    billing = billing if billing is not None else Billing()
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"
                                       if status < 500 else "server_error"}},
                            status_code=status, headers=headers)

    def model_of(body: dict[str, Any]) -> HFClient:
        name = str(body.get("model"))
        if name not in models:
            raise KeyError(f"model {name!r} not served; available: {', '.join(models)}")
        return models[name]

    def stops(body: dict[str, Any], key: str = "stop") -> tuple[str, ...]:
        stop = body.get(key) or ()
        return (stop,) if isinstance(stop, str) else tuple(stop)

    def billed(usage: dict[str, int]) -> dict[str, int]:
        billing.bill(usage)
        return usage

    async def list_models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            # root: the model behind the served name (as vLLM lists an alias's weights)
            {"id": name, "object": "model", "owned_by": "cogtestbed", "root": client.model}
            for name, client in models.items()]})

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        client = model_of(body)
        prompt = body.get("prompt", "")
        if isinstance(prompt, list):
            if len(prompt) != 1 or not isinstance(prompt[0], str):
                return error(400, "prompt must be one string")
            prompt = prompt[0]
        k = body.get("logprobs")
        req = GenerateRequest(prompt, int(body.get("max_tokens") or 16),
                              float(body.get("temperature") or 0.0), stops(body), body.get("seed"),
                              None if k is None else max(1, int(k)))
        gen = await client.agenerate(req, raw=True)
        if not billing.logprobs:  # a server that cannot score answers without log-probabilities
            k = None
        text, logprobs = gen.text, _completion_logprobs(gen, len(prompt)) if k is not None else None
        if body.get("echo") and billing.logprobs:
            echoed = await asyncio.to_thread(client.prompt_logprobs, prompt)
            text = prompt + text
            logprobs = _echoed(echoed, logprobs)
        return JSONResponse({
            "id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "text": text, "logprobs": logprobs,
                         "finish_reason": gen.finish_reason}],
            "usage": billed(_usage(gen)),
        })

    async def chat_completions(request: Request) -> JSONResponse:
        body = await request.json()
        client = model_of(body)
        if not client.chat:
            return error(400, f"model {body['model']!r} has no chat template; use /v1/completions")
        want = body.get("logprobs")
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 16
        req = GenerateRequest([_openai_message(m) for m in body["messages"]], int(limit),
                              float(body.get("temperature") or 0.0),
                              stops(body), body.get("seed"),
                              max(1, int(body.get("top_logprobs") or 1)) if want else None)
        gen = await client.agenerate(req)
        logprobs = _chat_logprobs(gen) if want else None
        return JSONResponse({
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                         "logprobs": logprobs, "finish_reason": gen.finish_reason}],
            "usage": billed(_usage(gen)),
        })

    async def messages(request: Request) -> JSONResponse:
        body = await request.json()
        client = model_of(body)
        msgs = [_anthropic_message(m) for m in body["messages"]]
        if body.get("system"):
            msgs.insert(0, {"role": "system", "content": body["system"]})
        req = GenerateRequest(msgs, int(body["max_tokens"]), float(body.get("temperature") or 0.0),
                              stops(body, "stop_sequences"))
        gen = await client.agenerate(req)
        reason = {"length": "max_tokens", "stop": "end_turn"}.get(gen.finish_reason or "", "end_turn")
        return JSONResponse({
            "id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": "assistant",
            "model": body["model"], "content": [{"type": "text", "text": gen.text}],
            "stop_reason": reason, "stop_sequence": None,
            "usage": billed({"input_tokens": gen.prompt_tokens or 0, "output_tokens": gen.completion_tokens or 0}),
        })

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                return await handler(request)
            except (KeyError, ValueError, TypeError) as exc:
                return error(400 if not isinstance(exc, KeyError) else 404, str(exc).strip("'\""))
        return endpoint

    app = Starlette(routes=[
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/completions", guarded(completions), methods=["POST"]),
        Route("/v1/chat/completions", guarded(chat_completions), methods=["POST"]),
        Route("/v1/messages", guarded(messages), methods=["POST"]),
    ])
    return _CountRequests(app if faults is None else _FaultMiddleware(app, faults), billing)


class _FaultMiddleware:
    """ASGI middleware applying :class:`FaultInjector` faults before the app sees a request."""

    def __init__(self, app: Any, faults: FaultInjector) -> None:
        self.app, self.faults = app, faults

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        fault = self.faults.next(scope["path"])
        if fault is None:
            await self.app(scope, receive, send)
        elif fault.kind == "delay":
            await asyncio.sleep(fault.seconds)
            await self.app(scope, receive, send)
        elif fault.kind == "status":
            headers = [(b"content-type", b"application/json")]
            if fault.retry_after is not None:
                headers.append((b"retry-after", f"{fault.retry_after:g}".encode()))
            message = "injected fault"
            if fault.echo_credentials:
                sent = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
                message += (f"; you sent authorization: {sent.get('authorization')} and "
                            f"x-api-key: {sent.get('x-api-key')}")
            payload = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
            await send({"type": "http.response.start", "status": fault.status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
        elif fault.kind == "drop":
            # Promise a body, send part of it, then fail: the server closes the connection and
            # the client sees the response cut off (a dropped connection).
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", b"1000")]})
            await send({"type": "http.response.body", "body": b'{"id": "', "more_body": True})
            raise ConnectionAbortedError("injected dropped connection")
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")


def _openai_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message of the OpenAI API (string or content parts with base64 ``image_url`` data
    URLs) as a :class:`GenerateRequest` message."""
    if isinstance(m["content"], str):
        return {"role": m["role"], "content": m["content"]}
    text, images = "", []
    for part in m["content"]:
        if part.get("type") == "text":
            text += part.get("text", "")
        elif part.get("type") == "image_url":
            images.append(decode_data_url(part["image_url"]["url"]))
        else:
            raise ValueError(f"unsupported content part {part.get('type')!r}")
    return {"role": m["role"], "content": text, **({IMAGES_KEY: tuple(images)} if images else {})}


def _anthropic_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A message of the Anthropic Messages API (string or text / base64 image blocks)."""
    if isinstance(m["content"], str):
        return {"role": m["role"], "content": m["content"]}
    text, images = "", []
    for block in m["content"]:
        if block.get("type") == "text":
            text += block.get("text", "")
        elif block.get("type") == "image" and block.get("source", {}).get("type") == "base64":
            images.append(base64.b64decode(block["source"]["data"]))
        else:
            raise ValueError(f"unsupported content block {block.get('type')!r}")
    return {"role": m["role"], "content": text, **({IMAGES_KEY: tuple(images)} if images else {})}


def _usage(gen: Generation) -> dict[str, int]:
    p, c = gen.prompt_tokens or 0, gen.completion_tokens or 0
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _completion_logprobs(gen: Generation, offset: int) -> dict[str, list[Any]]:
    tokens = [t.token for t in gen.logprobs or []]
    offsets, pos = [], offset
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    return {"tokens": tokens, "text_offset": offsets,
            "token_logprobs": [t.logprob for t in gen.logprobs or []],
            "top_logprobs": [t.top for t in gen.logprobs or []]}


@contextmanager
def serve(models: Mapping[str, HFClient], faults: FaultInjector | None = None,
          host: str = "127.0.0.1", billing: Billing | None = None) -> Iterator[str]:
    """Run the server on a free port of ``host`` in a thread; yield its ``/v1`` base URL."""
    with serve_app(create_app(models, faults, billing), host) as root:
        yield f"{root}/v1"


@contextmanager
def serve_app(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Run the ASGI ``app`` on a free port of ``host`` in a thread; yield its root URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", action="append", required=True,
                        help="hub id, local path, smollm2-135m, tiny-random, tiny-random-chat or tiny-random-vlm "
                        "(repeatable)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    faults = parser.add_argument_group("fault injection (a seeded random share of the POST requests)")
    faults.add_argument("--fail-rate", type=float, default=0.0, help="share of requests that fail, in [0, 1]")
    kind = faults.add_mutually_exclusive_group()
    kind.add_argument("--status", type=int, default=None, help="answer this HTTP status (default 503)")
    kind.add_argument("--drop", action="store_true", help="drop the connection half-way through the body")
    kind.add_argument("--delay", type=float, default=None, metavar="SECONDS",
                      help="answer normally after this many seconds")
    faults.add_argument("--retry-after", type=float, default=None, metavar="SECONDS",
                        help="send Retry-After with --status")
    faults.add_argument("--fault-seed", type=int, default=0, help="seed of the random faults")
    args = parser.parse_args(argv)
    if not 0.0 <= args.fail_rate <= 1.0:
        parser.error(f"--fail-rate must be in [0, 1], got {args.fail_rate:g}")
    if args.status is not None and not 400 <= args.status <= 599:
        parser.error(f"--status must be an HTTP error status (400-599), got {args.status}")
    return args


def fault_injector(args: argparse.Namespace) -> FaultInjector | None:
    """The injector the command-line flags describe (None without ``--fail-rate``)."""
    if args.fail_rate <= 0:
        return None
    if args.drop:
        fault = Fault("drop")
    elif args.delay is not None:
        fault = Fault("delay", seconds=args.delay)
    else:
        fault = Fault("status", args.status or 503, retry_after=args.retry_after)
    return FaultInjector(args.fail_rate, fault, args.fault_seed)


def main(argv: list[str] | None = None) -> None:
    """``python -m cogtestbed.llm_adapters.server --model NAME [--port N] [--fail-rate R ...]``."""
    import uvicorn

    args = parse_args(argv)
    models = {name: HFClient.from_pretrained(name) for name in args.model}
    uvicorn.run(create_app(models, fault_injector(args)), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
