"""A small OpenAI-compatible (and Anthropic-Messages-compatible) HTTP server for local models.

Serves :class:`~cogtestbed.llm_adapters.clients.hf.HFClient` models with starlette + uvicorn::

    cogtestbed serve --model tiny-random --port 8000
    cogtestbed run instrumental-learning --llm openai:tiny-random --base-url http://127.0.0.1:8000/v1

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (``prompt``, ``max_tokens``,
``temperature``, ``stop``, ``seed``, ``logprobs``, ``echo`` — with ``max_tokens: 0`` nothing is
generated —, ``stream``), ``POST /v1/chat/completions`` (``messages``, ``logprobs``/``top_logprobs``,
``stream`` with ``stream_options.include_usage``) and ``POST /v1/messages`` (Anthropic).  Every
request is checked (:func:`create_app`): a body above ``--max-body`` gets 413, a malformed one a 4xx
with an OpenAI-style error body, a generation stops after ``--max-seconds``; the first SIGTERM
stops the server (:func:`main`).  It exists so
that the SDK adapters are tested against a real server, and it can put a local model behind the
same adapter as a hosted one.

This module holds the routes, the serving and the command line; the request checks are in
:mod:`~.checks`, the answers' shapes in
:mod:`~.responses`, the admission control in
:mod:`~.admission`, the tally in :mod:`~.billing`.
The test emulators it can put in front of a model are in :mod:`~.emulators`.

:class:`~.emulators.faults.FaultInjector` makes the next requests fail at the
HTTP level — a status code with ``Retry-After``, a connection dropped half-way through the response body, or a
delay — so that tests can prove the adapters' retries.  It also fails a seeded random share of the requests,
which the command line exposes::

    cogtestbed serve --model tiny-random --fail-rate 0.2 --status 503
    cogtestbed serve --model tiny-random --fail-rate 1 --status 503  # an outage
    cogtestbed serve --model tiny-random --fail-rate 0.1 --drop  # dropped connections
    cogtestbed serve --model tiny-random --fail-rate 0.5 --delay 3  # slow answers
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import GenerateRequest, Generation
from cogtestbed.llm_adapters.clients.hf import HFClient
from cogtestbed.llm_adapters.servers.admission import Gate, check_length
from cogtestbed.llm_adapters.servers.billing import Billing, CountRequests
from cogtestbed.llm_adapters.servers.checks import (
    ANTHROPIC_ROLES,
    MAX_BODY_BYTES,
    MAX_GENERATION_SECONDS,
    MAX_QUEUE,
    RequestError,
    anthropic_message,
    body_field,
    check_one_choice,
    check_plain_sampling,
    checked_max_tokens,
    checked_messages,
    checked_stops,
    checked_temperature,
    checked_top_logprobs,
    completion_fields,
    error_response,
    guarded,
    openai_message,
    read_json,
    wants_usage,
)
from cogtestbed.llm_adapters.servers.emulators.faults import Fault, FaultInjector, FaultMiddleware
from cogtestbed.llm_adapters.servers.emulators.reasoning import (
    ReasoningModel,
    format_answer,
    reasoned_chat,
    thinking_message,
)
from cogtestbed.llm_adapters.servers.responses import (
    chat_chunks,
    chat_logprobs,
    completion_chunks,
    completion_logprobs,
    sse,
    usage_of,
    with_echoed,
)

#: Seconds a SIGTERM waits for requests in flight before the server exits anyway (:func:`main`).
SHUTDOWN_GRACE_SECONDS = 3.0


def create_app(models: Mapping[str, HFClient], faults: FaultInjector | None = None,
               billing: Billing | None = None, max_body: int = MAX_BODY_BYTES,
               max_seconds: float = MAX_GENERATION_SECONDS, max_queue: int = MAX_QUEUE,
               reasoning: Mapping[str, ReasoningModel] | None = None) -> Any:
    """The ASGI application serving ``models`` (name → client); ``billing`` tallies requests and usage.

    What it implements of the OpenAI API: ``stream`` (server-sent events, the answer generated
    whole and sent in pieces, ``stream_options.include_usage`` adding a last chunk with the usage),
    ``echo`` with ``max_tokens: 0`` (the prompt's log-probabilities, nothing generated), and
    OpenAI's limits: ``top_logprobs``/``logprobs`` in [0, 20], one choice (``n``/``best_of`` other
    than 1 refused), a non-empty prompt, known roles, prompt plus ``max_tokens`` within the model's
    context.  Every refusal is an OpenAI-style JSON error body (4xx; 404 for an unknown model or
    route).  Its own limits: a body limit (``max_body`` bytes, 413), a generation time limit
    (``max_seconds``), and at most ``max_queue`` requests held at once, one computing per model
    (:class:`Gate`: 429 beyond, 503 after waiting ``max_seconds`` for the model).  The models named
    in ``reasoning`` act as reasoning models (:mod:`~.emulators.reasoning`)."""
    billing = billing if billing is not None else Billing()
    reasoning = dict(reasoning or {})
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    for client in models.values():
        client.max_time = max_seconds
    gate = Gate(max_queue, max_seconds)

    def model_of(body: dict[str, Any]) -> HFClient:
        name = body_field(body, "model", str, required=True)
        if name not in models:
            raise RequestError(404, f"model {name!r} not served; available: {', '.join(models)}", "model")
        return models[name]

    def billed(usage: dict[str, int]) -> dict[str, int]:
        billing.bill(usage)
        return usage

    def answer(body: dict[str, Any], payload: dict[str, Any], chunks: Any) -> Response:
        if not body_field(body, "stream", bool, False):
            return JSONResponse(payload)
        return StreamingResponse(sse(chunks), media_type="text/event-stream")

    async def list_models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            # root: the model behind the served name (as vLLM lists an alias's weights)
            {"id": name, "object": "model", "owned_by": "cogtestbed", "root": client.model}
            for name, client in models.items()]})

    async def completions(request: Request) -> Response:
        async with gate.admit():
            body = await read_json(request, max_body)
            client = model_of(body)
            prompt, k, echo, max_tokens = completion_fields(body)
            check_plain_sampling(body)
            req = GenerateRequest(prompt, max(1, max_tokens), checked_temperature(body), checked_stops(body),
                                  body_field(body, "seed", int), None if k is None else max(1, k))
            async with gate.model(client):
                n_prompt = await check_length(client, req, raw=True)
                if max_tokens == 0:  # echo only: the prompt scored, nothing generated
                    gen = Generation("", n_prompt, 0, "length")
                else:
                    gen = await client.agenerate(req, raw=True)
                echoed = (await asyncio.to_thread(client.prompt_logprobs, prompt)
                          if echo and billing.logprobs else None)
        if not billing.logprobs:  # a server that cannot score answers without log-probabilities
            k = None
        text, logprobs = gen.text, completion_logprobs(gen, len(prompt)) if k is not None else None
        if echoed is not None:
            text = prompt + text
            logprobs = with_echoed(echoed, logprobs)
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": body["model"]}
        usage = billed(usage_of(gen))
        return answer(body, {**head, "choices": [{"index": 0, "text": text, "logprobs": logprobs,
                                                  "finish_reason": gen.finish_reason}], "usage": usage},
                      completion_chunks(head, text, gen.finish_reason, usage, wants_usage(body)))

    async def chat_completions(request: Request) -> Response:
        async with gate.admit():
            body = await read_json(request, max_body)
            client = model_of(body)
            if body["model"] in reasoning:
                async with gate.model(client):
                    return await reasoned_chat(body, client, reasoning[body["model"]], billing)
            if not client.chat:
                raise RequestError(400, f"model {body['model']!r} has no chat template; use /v1/completions",
                                   "model")
            want = body_field(body, "logprobs", bool, False)
            check_plain_sampling(body)
            check_one_choice(body)
            top = checked_top_logprobs(body, "top_logprobs")
            req = GenerateRequest([openai_message(m) for m in checked_messages(body)],
                                  checked_max_tokens(body, "max_completion_tokens", "max_tokens"),
                                  checked_temperature(body), checked_stops(body), body_field(body, "seed", int),
                                  max(1, top or 1) if want else None)
            async with gate.model(client):
                await check_length(client, req)
                gen = await client.agenerate(req)
        logprobs = chat_logprobs(gen) if want else None
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"]}
        usage = billed(usage_of(gen))
        return answer(body, {**head, "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                                                  "logprobs": logprobs, "finish_reason": gen.finish_reason}],
                             "usage": usage},
                      chat_chunks({**head, "object": "chat.completion.chunk"}, gen.text, gen.finish_reason, usage,
                                   wants_usage(body)))

    async def messages(request: Request) -> Response:
        async with gate.admit():
            body = await read_json(request, max_body)
            client = model_of(body)
            if body["model"] in reasoning and body.get("thinking") is not None:
                async with gate.model(client):
                    return await thinking_message(body, client, reasoning[body["model"]], billing)
            # refused, not ignored: a streaming client would wait for events
            if body_field(body, "stream", bool, False):
                raise RequestError(400, "this server does not stream /v1/messages; send stream: false", "stream")
            msgs = [anthropic_message(m) for m in checked_messages(body, ANTHROPIC_ROLES)]
            system = body_field(body, "system", str)
            if system:
                msgs.insert(0, {"role": "system", "content": system})
            body_field(body, "max_tokens", int, required=True)
            req = GenerateRequest(msgs, checked_max_tokens(body, "max_tokens"), checked_temperature(body),
                                  checked_stops(body, "stop_sequences"))
            async with gate.model(client):
                await check_length(client, req)
                gen = await client.agenerate(req)
        reason = {"length": "max_tokens", "stop": "end_turn"}.get(gen.finish_reason or "", "end_turn")
        return JSONResponse({
            "id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": "assistant",
            "model": body["model"], "content": [{"type": "text", "text": gen.text}],
            "stop_reason": reason, "stop_sequence": None,
            "usage": billed({"input_tokens": gen.prompt_tokens or 0, "output_tokens": gen.completion_tokens or 0}),
        })

    async def http_error(request: Request, exc: Exception) -> Response:
        """A route or method the server does not have: OpenAI's JSON error shape, not plain text."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        return error_response(RequestError(status, f"{request.method} {request.url.path}: "
                                            f"{getattr(exc, 'detail', 'failed')}"))

    app = Starlette(routes=[
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/completions", guarded(completions), methods=["POST"]),
        Route("/v1/chat/completions", guarded(chat_completions), methods=["POST"]),
        Route("/v1/messages", guarded(messages), methods=["POST"]),
    ], exception_handlers={HTTPException: http_error})
    return CountRequests(app if faults is None else FaultMiddleware(app, faults), billing)



@contextmanager
def serve(models: Mapping[str, HFClient], faults: FaultInjector | None = None,
          host: str = "127.0.0.1", billing: Billing | None = None, max_body: int = MAX_BODY_BYTES,
          max_seconds: float = MAX_GENERATION_SECONDS, max_queue: int = MAX_QUEUE,
          reasoning: Mapping[str, ReasoningModel] | None = None) -> Iterator[str]:
    """Run the server on a free port of ``host`` in a thread; yield its ``/v1`` base URL (``reasoning``:
    the served names that act as reasoning models, :mod:`~.emulators.reasoning`).  On exit it stops as
    :func:`serve_app` does, a generation still running being bounded by ``max_seconds``."""
    app = create_app(models, faults, billing, max_body, max_seconds, max_queue, reasoning)
    with serve_app(app, host, stop_within=SHUTDOWN_GRACE_SECONDS + max_seconds + 10) as root:
        yield f"{root}/v1"


@contextmanager
def serve_app(app: Any, host: str = "127.0.0.1", grace: float = SHUTDOWN_GRACE_SECONDS,
              stop_within: float = SHUTDOWN_GRACE_SECONDS + MAX_GENERATION_SECONDS + 10) -> Iterator[str]:
    """Run the ASGI ``app`` on a free port of ``host`` in a thread; yield its root URL.

    On exit the server stops accepting requests, gives those in flight ``grace`` seconds, cancels the rest
    (a client that left, e.g. after its timeout, waits for nothing), and the thread ends once a computation
    still running in a worker thread returns; ``serve_app`` returns only then.  A server thread left running
    would go on computing for no one, holding its model, and at the interpreter's exit its next
    ``asyncio.to_thread`` fails (``RuntimeError: cannot schedule new futures after shutdown``).  Raises
    :class:`RuntimeError` when the thread has not ended within ``stop_within`` seconds."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="critical", lifespan="off")
    config.timeout_graceful_shutdown = max(grace, 0.01)  # type: ignore[assignment]  # typed int; a float works
    server = uvicorn.Server(config)
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
        thread.join(timeout=stop_within)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"the local server on {host}:{port} did not stop within {stop_within:g} s")


def fault_injector(fail_rate: float = 0.0, status: int | None = None, drop: bool = False,
                   delay: float | None = None, retry_after: float | None = None,
                   seed: int = 0) -> FaultInjector | None:
    """The :class:`~.emulators.faults.FaultInjector` that ``cogtestbed serve``'s fault options describe:
    a seeded ``fail_rate`` share of the POST requests answered with HTTP ``status`` (503 by default,
    ``Retry-After: retry_after`` seconds), dropped half-way through the body (``drop``) or answered after
    ``delay`` seconds.  ``None`` without a ``fail_rate``.  Raises :class:`~cogtestbed.errors.InputError` on
    a rate outside [0, 1], a status outside 400-599 or more than one kind of fault."""
    if not 0.0 <= fail_rate <= 1.0:
        raise InputError(f"`fail_rate` must be in [0, 1], got {fail_rate:g}")
    if status is not None and not 400 <= status <= 599:
        raise InputError(f"`status` must be an HTTP error status (400-599), got {status}")
    if sum((status is not None, drop, delay is not None)) > 1:
        raise InputError("`status`, `drop` and `delay` are different faults: give one of them")
    if fail_rate <= 0:
        return None
    if drop:
        fault = Fault("drop")
    elif delay is not None:
        fault = Fault("delay", seconds=delay)
    else:
        fault = Fault("status", status or 503, retry_after=retry_after)
    return FaultInjector(fail_rate, fault, seed)


def run_server(models: Sequence[str], host: str = "127.0.0.1", port: int = 8000,
               faults: FaultInjector | None = None, max_body: int = MAX_BODY_BYTES,
               max_seconds: float = MAX_GENERATION_SECONDS, max_queue: int = MAX_QUEUE,
               reasoning_as: Sequence[str] = ()) -> int:
    """Serve ``models`` (hub ids, local paths or built-in names, :meth:`HFClient.from_pretrained`) on
    ``host:port`` until SIGTERM or Ctrl-C (``cogtestbed serve``); return the exit status (0 when stopped by a
    signal, 1 when the server failed to start, e.g. a port in use, or ended by itself).

    ``reasoning_as``: names under which the first model is also served acting as a reasoning model
    (:mod:`~.emulators.reasoning`: OpenAI's o-series on ``/v1/chat/completions``, extended thinking on
    ``/v1/messages``).  The first signal stops the server: it stops accepting requests and gives those in
    flight :data:`SHUTDOWN_GRACE_SECONDS`; a generation still running in a worker thread then cannot be
    interrupted, so a caller that owns its process ends it with ``os._exit`` (the command line does)."""
    import uvicorn

    if not models:
        raise InputError("give at least one `model`")
    if max_body < 1 or not 0 < max_seconds < float("inf") or max_queue < 1:
        raise InputError("`max_body`, `max_seconds` and `max_queue` must be positive (and finite)")
    clients = {name: HFClient.from_pretrained(name) for name in models}
    first = clients[models[0]]
    clients.update({alias: first for alias in reasoning_as})
    reasoning = {alias: ReasoningModel(answer=format_answer) for alias in reasoning_as}
    app = create_app(clients, faults, None, max_body, max_seconds, max_queue, reasoning)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port))
    thread = threading.Thread(target=server.run, daemon=True)  # off the main thread: our signal handlers
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        thread.start()
        while not stop.wait(0.2):
            if not thread.is_alive():  # the server failed to start (port in use...) or ended
                break
        server.should_exit = True
        thread.join(timeout=SHUTDOWN_GRACE_SECONDS)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stop.is_set() else 1
