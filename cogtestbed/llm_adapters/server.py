"""A small OpenAI-compatible (and Anthropic-Messages-compatible) HTTP server for local models.

Serves :class:`~cogtestbed.llm_adapters.hf.HFClient` models with starlette + uvicorn::

    python -m cogtestbed.llm_adapters.server --model tiny-random --port 8000
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
import logging
import re
import signal
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.base import (
    IMAGES_KEY,
    NEUTRAL_SAMPLING,
    NEUTRAL_SAMPLING_EXTRAS,
    GenerateRequest,
    Generation,
    decode_data_url,
)
from cogtestbed.llm_adapters.hf import HFClient
from cogtestbed.llm_adapters.reasoning_emulator import (
    ReasoningModel,
    anthropic_refusal,
    format_answer,
    last_user_text,
    openai_refusal,
)


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
            raise InputError(f"the fault rate must be in [0, 1], got {rate:g}")
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
    #: Hidden reasoning tokens billed (part of ``completion_tokens``) by a model acting as a reasoning model
    #: (:mod:`.reasoning_emulator`).
    reasoning_tokens: int = 0

    def bill(self, usage: Mapping[str, Any], hidden: int = 0) -> None:
        self.answered += 1
        self.prompt_tokens += int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        self.reasoning_tokens += hidden


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


#: Largest request body accepted, in bytes (a larger one is refused with 413 before it is read
#: whole): far above any prompt of this package's experiments (images included), far below what
#: would exhaust the server's memory.  ``--max-body`` changes it.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Longest generation of one request, in seconds (``transformers``' ``max_time``: generation stops
#: there and the answer ends with ``finish_reason: "length"``).  ``--max-seconds`` changes it.
MAX_GENERATION_SECONDS = 60.0
#: Most tokens one request may ask for (``max_tokens``); more is refused with 400.
MAX_TOKENS_LIMIT = 4096
#: Seconds a SIGTERM waits for requests in flight before the server exits anyway (:func:`main`).
SHUTDOWN_GRACE_SECONDS = 3.0
#: Most log-probability alternatives per token: OpenAI's limit, on both routes (chat's
#: ``top_logprobs`` and completions' ``logprobs``); more is refused with 400.
MAX_TOP_LOGPROBS = 20
#: Most requests the server holds at once (one computing per model, the others waiting for it); one
#: more gets 429 with ``Retry-After`` at once (:class:`_Gate`).  ``--max-queue`` changes it.  With
#: one generation at a time per model, ``max_tokens`` capped and the body capped, this bounds the
#: server's memory: the models, one generation's logits per model and ``MAX_QUEUE`` bodies.
MAX_QUEUE = 16
#: Roles a chat message may have: OpenAI's, less ``tool``/``function`` (this server calls no tools);
#: ``developer`` is read as ``system`` (OpenAI's newer name for it).
CHAT_ROLES = ("system", "developer", "user", "assistant")
#: Roles of the Anthropic Messages API (the system prompt is the top-level ``system`` field).
ANTHROPIC_ROLES = ("user", "assistant")


class RequestError(ValueError):
    """A request the server refuses: ``status`` (4xx, or 503 when busy), an OpenAI-style error body
    and, for a busy server, ``retry_after`` seconds (sent as ``Retry-After``)."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.retry_after = status, param, retry_after


def _field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None,
           required: bool = False) -> Any:
    """``body[name]`` checked to be of ``kind`` (a bool is not a number), else :class:`RequestError`."""
    if name not in body or body[name] is None:
        if required:
            raise RequestError(400, f"missing required parameter: {name!r}", name)
        return default
    value = body[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise RequestError(400, f"{name!r} must be {names}, got {json.dumps(value)[:80]}", name)
    return value


def _max_tokens(body: Mapping[str, Any], *names: str, default: int = 16, minimum: int = 1) -> int:
    for name in names:
        value = _field(body, name, int)
        if value is not None:
            if not minimum <= value <= MAX_TOKENS_LIMIT:
                raise RequestError(400, f"{name!r} must be in [{minimum}, {MAX_TOKENS_LIMIT}], got {value}", name)
            return int(value)
    return default


def _temperature(body: Mapping[str, Any]) -> float:
    value = float(_field(body, "temperature", (int, float), 0.0))
    if not 0.0 <= value <= 2.0:  # NaN fails too
        raise RequestError(400, f"'temperature' must be in [0, 2], got {value}", "temperature")
    return value


def _plain_sampling(body: Mapping[str, Any]) -> None:
    """Refuse (400) a sampling field this server does not implement set to anything but "off": it
    samples plain softmax at the temperature (:data:`~cogtestbed.llm_adapters.base.NEUTRAL_SAMPLING`
    and its extras are accepted; ``top_k`` -1 is vLLM's "off"), never silently otherwise."""
    for key, off in {**NEUTRAL_SAMPLING, **NEUTRAL_SAMPLING_EXTRAS}.items():
        value = _field(body, key, (int, float))
        if value is not None and value != off and not (key == "top_k" and value == -1):
            raise RequestError(400, f"{key!r} = {value} is not supported: this server samples plain softmax at "
                               f"the temperature (send {key}: {off} or leave it out)", key)


def _stops(body: Mapping[str, Any], key: str = "stop") -> tuple[str, ...]:
    stop = _field(body, key, (str, list), ())
    stops = (stop,) if isinstance(stop, str) else tuple(stop)
    if not all(isinstance(x, str) for x in stops):
        raise RequestError(400, f"{key!r} must be a string or a list of strings", key)
    return stops


def _messages(body: Mapping[str, Any], roles: tuple[str, ...] = CHAT_ROLES) -> list[dict[str, Any]]:
    """The request's messages, checked: a non-empty list of ``{role, content}`` objects whose roles
    are among ``roles`` (else 400 naming the message)."""
    messages = _field(body, "messages", list, required=True)
    if not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                               and isinstance(m.get("content"), str | list) for m in messages):
        raise RequestError(400, "'messages' must be a non-empty list of {role, content} objects", "messages")
    for k, m in enumerate(messages):
        if m["role"] not in roles:
            raise RequestError(400, f"messages[{k}].role {json.dumps(m['role'])[:40]} is not supported; "
                               f"roles: {', '.join(roles)}", f"messages[{k}].role")
    return [dict(m) for m in messages]


def _top_logprobs(body: Mapping[str, Any], name: str) -> int | None:
    """``body[name]`` (the number of log-probability alternatives per token) in [0,
    :data:`MAX_TOP_LOGPROBS`], OpenAI's bounds; None when absent."""
    k = _field(body, name, int)
    if k is not None and not 0 <= k <= MAX_TOP_LOGPROBS:
        raise RequestError(400, f"{name!r} must be in [0, {MAX_TOP_LOGPROBS}], got {k}", name)
    return k


def _one_choice(body: Mapping[str, Any]) -> None:
    """Refuse (400) ``n`` or ``best_of`` other than 1: this server answers one choice per request,
    never fewer than asked in silence."""
    for key in ("n", "best_of"):
        value = _field(body, key, int)
        if value is not None and value != 1:
            raise RequestError(400, f"{key!r} = {value} is not supported: this server returns one choice per "
                               f"request (send {key}: 1 or leave it out, and send {value} requests)", key)


def _include_usage(body: Mapping[str, Any]) -> bool:
    options = _field(body, "stream_options", dict, {})
    return bool(options.get("include_usage"))


def _pieces(text: str) -> list[str]:
    """``text`` cut into the pieces a stream sends (each word with the white space before it)."""
    return re.findall(r"\s*\S+|\s+", text) or [""]


def _sse(chunks: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """Server-sent events: one ``data:`` line per chunk, then ``data: [DONE]`` (OpenAI's stream)."""
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _completion_chunks(head: dict[str, Any], text: str, finish: str | None, usage: dict[str, int] | None,
                       include_usage: bool) -> Iterator[dict[str, Any]]:
    """A completion as ``text_completion`` stream chunks; the last piece carries ``finish_reason``."""
    pieces = _pieces(text)
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        yield {**head, "choices": [{"index": 0, "text": piece, "logprobs": None,
                                    "finish_reason": finish if last else None}],
               **({"usage": None} if include_usage else {})}
    if include_usage:
        yield {**head, "choices": [], "usage": usage}


def _chat_chunks(head: dict[str, Any], text: str, finish: str | None, usage: dict[str, int] | None,
                 include_usage: bool) -> Iterator[dict[str, Any]]:
    """A chat answer as ``chat.completion.chunk`` stream chunks: the role, the content's pieces, the
    finish reason, and (``stream_options.include_usage``) a last chunk with no choices and the usage."""
    extra = {"usage": None} if include_usage else {}
    yield {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                "finish_reason": None}], **extra}
    for piece in _pieces(text):
        yield {**head, "choices": [{"index": 0, "delta": {"content": piece}, "logprobs": None,
                                    "finish_reason": None}], **extra}
    yield {**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}], **extra}
    if include_usage:
        yield {**head, "choices": [], "usage": usage}


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body: ``{"error": {message, type, param, code}}``."""
    kind = ("rate_limit_error" if status == 429 else "invalid_request_error" if status < 500 else "server_error")
    code = {405: "method_not_allowed", 413: "request_too_large", 429: "rate_limit_exceeded",
            503: "server_busy"}.get(status, "model_not_found" if status == 404 and param == "model" else None)
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error_response(exc: RequestError) -> Any:
    from starlette.responses import JSONResponse

    headers = None if exc.retry_after is None else {"retry-after": f"{exc.retry_after:g}"}
    return JSONResponse(error_body(exc.status, str(exc), exc.param), status_code=exc.status, headers=headers)


def _guarded(handler: Any) -> Any:
    """``handler`` answering every refused or malformed request with a 4xx OpenAI-style error body,
    and a failure of the server itself with a 500 one (its traceback logged, never sent)."""
    from starlette.responses import JSONResponse

    async def endpoint(request: Any) -> Any:
        try:
            return await handler(request)
        except RequestError as exc:
            return _error_response(exc)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:  # a malformed part of the body
            message = f"malformed request: {str(exc).strip(chr(39) + chr(34))}"
            return JSONResponse(error_body(400, message), status_code=400)
        except Exception as exc:  # a bug or a model failure: logged here, answered as OpenAI does
            logging.getLogger(__name__).exception("request to %s failed", request.url.path)
            return JSONResponse(error_body(500, f"the server failed: {type(exc).__name__}"), status_code=500)
    return endpoint


class _Gate:
    """The server's admission control: at most ``max_queue`` requests held at once (a request
    beyond gets 429 with ``Retry-After`` at once), one model computation at a time per model, and a
    request waits at most ``wait`` seconds for its model (then 503 with ``Retry-After``).  Together
    with ``max_tokens`` capped and the generation time bounded (``max_seconds``), no request holds the
    server beyond its own limits, and the memory stays bounded (:data:`MAX_QUEUE`)."""

    def __init__(self, max_queue: int, wait: float) -> None:
        if max_queue < 1 or not wait > 0:
            raise InputError(f"max_queue must be >= 1 and wait > 0, got {max_queue} and {wait}")
        self.max_queue, self.wait = max_queue, wait
        self.held = 0
        # one lock per (event loop, model): an asyncio lock belongs to the loop that first waits on it
        self._locks: weakref.WeakKeyDictionary[Any, dict[int, asyncio.Lock]] = weakref.WeakKeyDictionary()

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """Hold one of the ``max_queue`` places for the request's whole handling, or refuse (429)."""
        if self.held >= self.max_queue:
            raise RequestError(429, f"the server is busy: {self.held} requests held, the limit is {self.max_queue}; "
                               "retry after 1 s", retry_after=1)
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1

    @asynccontextmanager
    async def model(self, client: Any) -> AsyncIterator[None]:
        """The model's turn: wait for it at most :attr:`wait` seconds (503 beyond)."""
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        lock = locks.setdefault(id(client), asyncio.Lock())
        try:
            await asyncio.wait_for(lock.acquire(), self.wait)
        except TimeoutError:
            raise RequestError(503, f"the server is busy: the model stayed busy for {self.wait:g} s; retry later",
                               retry_after=self.wait) from None
        try:
            yield
        finally:
            lock.release()


def _prompt_tokens(client: HFClient, request: GenerateRequest, raw: bool) -> int:
    """The prompt tokens ``client`` would read for ``request`` (what a generation bills)."""
    if raw:
        return len(client.encode(str(request.prompt)))
    return client.billed_prompt_tokens(request.prompt)[0]


async def _check_length(client: HFClient, request: GenerateRequest, raw: bool = False) -> int:
    """The request's prompt tokens, refused (400) when there are none or when prompt and
    ``max_tokens`` exceed the model's context (as OpenAI refuses them)."""
    n = await asyncio.to_thread(_prompt_tokens, client, request, raw)
    if n == 0:
        raise RequestError(400, "the prompt is empty: it has no tokens", "prompt" if raw else "messages")
    limit = client.context_length
    if limit is not None and n + request.max_tokens > limit:
        raise RequestError(400, f"this model's maximum context length is {limit} tokens; the request asks for "
                           f"{n} prompt + {request.max_tokens} completion tokens", "max_tokens")
    return n


def _completion_fields(body: Mapping[str, Any]) -> tuple[str, int | None, bool, int]:
    """(prompt, logprobs, echo, max_tokens) of a completions request, checked; ``max_tokens`` may be 0
    with ``echo`` (the prompt scored, nothing generated)."""
    prompt = _field(body, "prompt", (str, list), required=True)
    if isinstance(prompt, list):
        if len(prompt) != 1 or not isinstance(prompt[0], str):
            raise RequestError(400, "prompt must be one string", "prompt")
        prompt = prompt[0]
    if not prompt:
        raise RequestError(400, "'prompt' must be a non-empty string", "prompt")
    k = _top_logprobs(body, "logprobs")
    _one_choice(body)
    echo = bool(_field(body, "echo", bool, False))
    return prompt, k, echo, _max_tokens(body, "max_tokens", minimum=0 if echo else 1)


async def _read_json(request: Any, limit: int) -> dict[str, Any]:
    """The request's JSON object, read at most ``limit`` bytes far: 413 beyond, 400 if not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes")
    data = bytearray()
    async for chunk in request.stream():
        data.extend(chunk)
        if len(data) > limit:
            raise RequestError(413, f"request body exceeds the limit of {limit} bytes")
    try:
        body = json.loads(bytes(data))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(400, f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    return body


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
    (:class:`_Gate`: 429 beyond, 503 after waiting ``max_seconds`` for the model).  The models named
    in ``reasoning`` act as reasoning models (:mod:`.reasoning_emulator`)."""
    billing = billing if billing is not None else Billing()
    reasoning = dict(reasoning or {})
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    for client in models.values():
        client.max_time = max_seconds
    gate = _Gate(max_queue, max_seconds)

    def model_of(body: dict[str, Any]) -> HFClient:
        name = _field(body, "model", str, required=True)
        if name not in models:
            raise RequestError(404, f"model {name!r} not served; available: {', '.join(models)}", "model")
        return models[name]

    def billed(usage: dict[str, int]) -> dict[str, int]:
        billing.bill(usage)
        return usage

    def answer(body: dict[str, Any], payload: dict[str, Any], chunks: Any) -> Response:
        if not _field(body, "stream", bool, False):
            return JSONResponse(payload)
        return StreamingResponse(_sse(chunks), media_type="text/event-stream")

    async def list_models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            # root: the model behind the served name (as vLLM lists an alias's weights)
            {"id": name, "object": "model", "owned_by": "cogtestbed", "root": client.model}
            for name, client in models.items()]})

    async def completions(request: Request) -> Response:
        async with gate.admit():
            body = await _read_json(request, max_body)
            client = model_of(body)
            prompt, k, echo, max_tokens = _completion_fields(body)
            _plain_sampling(body)
            req = GenerateRequest(prompt, max(1, max_tokens), _temperature(body), _stops(body),
                                  _field(body, "seed", int), None if k is None else max(1, k))
            async with gate.model(client):
                n_prompt = await _check_length(client, req, raw=True)
                if max_tokens == 0:  # echo only: the prompt scored, nothing generated
                    gen = Generation("", n_prompt, 0, "length")
                else:
                    gen = await client.agenerate(req, raw=True)
                echoed = (await asyncio.to_thread(client.prompt_logprobs, prompt)
                          if echo and billing.logprobs else None)
        if not billing.logprobs:  # a server that cannot score answers without log-probabilities
            k = None
        text, logprobs = gen.text, _completion_logprobs(gen, len(prompt)) if k is not None else None
        if echoed is not None:
            text = prompt + text
            logprobs = _echoed(echoed, logprobs)
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": body["model"]}
        usage = billed(_usage(gen))
        return answer(body, {**head, "choices": [{"index": 0, "text": text, "logprobs": logprobs,
                                                  "finish_reason": gen.finish_reason}], "usage": usage},
                      _completion_chunks(head, text, gen.finish_reason, usage, _include_usage(body)))

    async def chat_completions(request: Request) -> Response:
        async with gate.admit():
            body = await _read_json(request, max_body)
            client = model_of(body)
            if body["model"] in reasoning:
                async with gate.model(client):
                    return await _reasoned_chat(body, client, reasoning[body["model"]], billing)
            if not client.chat:
                raise RequestError(400, f"model {body['model']!r} has no chat template; use /v1/completions",
                                   "model")
            want = _field(body, "logprobs", bool, False)
            _plain_sampling(body)
            _one_choice(body)
            top = _top_logprobs(body, "top_logprobs")
            req = GenerateRequest([_openai_message(m) for m in _messages(body)],
                                  _max_tokens(body, "max_completion_tokens", "max_tokens"), _temperature(body),
                                  _stops(body), _field(body, "seed", int), max(1, top or 1) if want else None)
            async with gate.model(client):
                await _check_length(client, req)
                gen = await client.agenerate(req)
        logprobs = _chat_logprobs(gen) if want else None
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"]}
        usage = billed(_usage(gen))
        return answer(body, {**head, "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                                                  "logprobs": logprobs, "finish_reason": gen.finish_reason}],
                             "usage": usage},
                      _chat_chunks({**head, "object": "chat.completion.chunk"}, gen.text, gen.finish_reason, usage,
                                   _include_usage(body)))

    async def messages(request: Request) -> Response:
        async with gate.admit():
            body = await _read_json(request, max_body)
            client = model_of(body)
            if body["model"] in reasoning and body.get("thinking") is not None:
                async with gate.model(client):
                    return await _thinking_message(body, client, reasoning[body["model"]], billing)
            if _field(body, "stream", bool, False):  # refused, not ignored: a streaming client would wait for events
                raise RequestError(400, "this server does not stream /v1/messages; send stream: false", "stream")
            msgs = [_anthropic_message(m) for m in _messages(body, ANTHROPIC_ROLES)]
            system = _field(body, "system", str)
            if system:
                msgs.insert(0, {"role": "system", "content": system})
            _field(body, "max_tokens", int, required=True)
            req = GenerateRequest(msgs, _max_tokens(body, "max_tokens"), _temperature(body),
                                  _stops(body, "stop_sequences"))
            async with gate.model(client):
                await _check_length(client, req)
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
        return _error_response(RequestError(status, f"{request.method} {request.url.path}: "
                                            f"{getattr(exc, 'detail', 'failed')}"))

    app = Starlette(routes=[
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/completions", _guarded(completions), methods=["POST"]),
        Route("/v1/chat/completions", _guarded(chat_completions), methods=["POST"]),
        Route("/v1/messages", _guarded(messages), methods=["POST"]),
    ], exception_handlers={HTTPException: http_error})
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
            raise InputError(f"unknown fault kind {fault.kind!r}")


def _openai_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message of the OpenAI API (string or content parts with base64 ``image_url`` data
    URLs) as a :class:`GenerateRequest` message."""
    role = "system" if m["role"] == "developer" else m["role"]
    if isinstance(m["content"], str):
        return {"role": role, "content": m["content"]}
    text, images = "", []
    for part in m["content"]:
        if part.get("type") == "text":
            text += part.get("text", "")
        elif part.get("type") == "image_url":
            images.append(decode_data_url(part["image_url"]["url"]))
        else:
            raise InputError(f"unsupported content part {part.get('type')!r}")
    return {"role": role, "content": text, **({IMAGES_KEY: tuple(images)} if images else {})}


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
            raise InputError(f"unsupported content block {block.get('type')!r}")
    return {"role": m["role"], "content": text, **({IMAGES_KEY: tuple(images)} if images else {})}


async def _reasoned_chat(body: dict[str, Any], client: HFClient, emu: ReasoningModel, billing: Billing) -> Any:
    """A chat completion of a model acting as an OpenAI reasoning model (:mod:`.reasoning_emulator`)."""
    from starlette.responses import JSONResponse

    refusal = openai_refusal(body, emu)
    if refusal is not None:
        return JSONResponse(refusal.body, status_code=refusal.status)
    messages = [_openai_message(m) for m in _messages(body)]
    limit = body.get("max_completion_tokens") or emu.max_limit
    effort = body.get("reasoning_effort")
    hidden = min(limit, emu.hidden_tokens(body, effort))
    text, finish, prompt, out = await _emulated_answer(client, emu, messages, limit - hidden)
    usage = {"prompt_tokens": prompt, "completion_tokens": hidden + out, "total_tokens": prompt + hidden + out,
             "completion_tokens_details": {"reasoning_tokens": hidden}}
    billing.bill(usage, hidden)
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
              "finish_reason": finish}
    return JSONResponse({"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                         "created": int(time.time()), "model": body["model"], "choices": [choice], "usage": usage})

async def _thinking_message(body: dict[str, Any], client: HFClient, emu: ReasoningModel, billing: Billing) -> Any:
    """A Messages API answer with extended thinking (:mod:`.reasoning_emulator`)."""
    from starlette.responses import JSONResponse

    refusal = anthropic_refusal(body)
    if refusal is not None:
        return JSONResponse(refusal.body, status_code=refusal.status)
    msgs = [_anthropic_message(m) for m in _messages(body)]
    budget = int(body["thinking"]["budget_tokens"])
    hidden = emu.hidden_tokens(body, None, budget)
    text, finish, prompt, out = await _emulated_answer(client, emu, msgs, int(body["max_tokens"]) - hidden)
    usage = {"input_tokens": prompt, "output_tokens": hidden + out}
    billing.bill(usage, hidden)
    return JSONResponse({
        "id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "thinking", "thinking": f"(emulated: {hidden} hidden tokens)",
                     "signature": "emulated"}, {"type": "text", "text": text}],
        "stop_reason": "max_tokens" if finish == "length" else "end_turn", "stop_sequence": None, "usage": usage})


async def _emulated_answer(client: HFClient, emu: ReasoningModel, messages: list[dict[str, Any]],
                           room: int) -> tuple[str, str, int, int]:
    """(text, finish reason, prompt tokens, answer tokens) of an emulated reasoning model's answer in the
    ``room`` tokens its hidden ones left: :attr:`ReasoningModel.answer`'s text (cut at ``room`` tokens) or
    the served model's; nothing (``length``) where no room is left."""
    prompt = client.billed_prompt_tokens(messages)[0]
    if room <= 0:
        return "", "length", prompt, 0
    if emu.answer is None:
        gen = await client.agenerate(GenerateRequest(messages, min(room, MAX_TOKENS_LIMIT), 0.0))
        return gen.text, gen.finish_reason or "stop", prompt, gen.completion_tokens or 0
    text = emu.answer(last_user_text(messages))
    ids = client.encode(text, rendered_chat=True)
    if len(ids) > room:
        return str(client.tokenizer.decode(ids[:room])), "length", prompt, room
    return text, "stop", prompt, len(ids)


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
          host: str = "127.0.0.1", billing: Billing | None = None, max_body: int = MAX_BODY_BYTES,
          max_seconds: float = MAX_GENERATION_SECONDS, max_queue: int = MAX_QUEUE,
          reasoning: Mapping[str, ReasoningModel] | None = None) -> Iterator[str]:
    """Run the server on a free port of ``host`` in a thread; yield its ``/v1`` base URL (``reasoning``:
    the served names that act as reasoning models, :mod:`.reasoning_emulator`)."""
    with serve_app(create_app(models, faults, billing, max_body, max_seconds, max_queue, reasoning), host) as root:
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
    parser.add_argument("--max-body", type=int, default=MAX_BODY_BYTES, metavar="BYTES",
                        help=f"largest request body; larger ones get 413 (default {MAX_BODY_BYTES})")
    parser.add_argument("--max-seconds", type=float, default=MAX_GENERATION_SECONDS, metavar="SECONDS",
                        help=f"longest generation of one request (default {MAX_GENERATION_SECONDS:g})")
    parser.add_argument("--max-queue", type=int, default=MAX_QUEUE, metavar="N",
                        help=f"most requests held at once, one computing per model; more get 429 (default {MAX_QUEUE})")
    parser.add_argument("--reasoning-as", action="append", default=[], metavar="NAME",
                        help="also serve the first --model as NAME acting as a reasoning model (OpenAI's o-series on "
                        "/v1/chat/completions, extended thinking on /v1/messages): hidden tokens billed, refused "
                        "fields answered with the provider's 400, answers in the form the prompt asks for "
                        "(repeatable; e.g. --reasoning-as o3)")
    args = parser.parse_args(argv)
    if args.max_body < 1 or not 0 < args.max_seconds < float("inf") or args.max_queue < 1:
        parser.error("--max-body, --max-seconds and --max-queue must be positive (and finite)")
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
    """``python -m cogtestbed.llm_adapters.server --model NAME [--port N] [--fail-rate R ...]``.

    The first SIGTERM (or Ctrl-C) stops the server: it stops accepting requests, gives those in flight
    :data:`SHUTDOWN_GRACE_SECONDS`, then exits whatever is still running (a generation in a worker
    thread cannot be interrupted, and would otherwise keep the process alive until it ends)."""
    import os

    import uvicorn

    args = parse_args(argv)
    models = {name: HFClient.from_pretrained(name) for name in args.model}
    first = models[args.model[0]]
    models.update({alias: first for alias in args.reasoning_as})
    reasoning = {alias: ReasoningModel(answer=format_answer) for alias in args.reasoning_as}
    app = create_app(models, fault_injector(args), None, args.max_body, args.max_seconds, args.max_queue, reasoning)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port))
    thread = threading.Thread(target=server.run, daemon=True)  # off the main thread: our signal handlers
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    thread.start()
    while not stop.wait(0.2):
        if not thread.is_alive():  # the server failed to start (port in use...) or ended
            break
    server.should_exit = True
    thread.join(timeout=SHUTDOWN_GRACE_SECONDS)
    os._exit(0 if stop.is_set() else 1)


if __name__ == "__main__":
    main()
