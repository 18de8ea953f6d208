"""The server's request checks: its limits, each field read and checked (a refusal is a
:class:`RequestError`, answered with an OpenAI-style error body), the body read within its limit, and the
chat messages of both APIs turned into :class:`~cogtestbed.llm_adapters.clients.base.GenerateRequest` messages."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    IMAGES_KEY,
    NEUTRAL_SAMPLING,
    NEUTRAL_SAMPLING_EXTRAS,
    decode_data_url,
)

#: Largest request body accepted, in bytes (a larger one is refused with 413 before it is read
#: whole): far above any prompt of this package's experiments (images included), far below what
#: would exhaust the server's memory.  ``--max-body`` changes it.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Deepest nesting of lists and objects a request body may have (a chat request nests 5 levels, image
#: parts included); a deeper one is refused with 400, never parsed into a ``RecursionError``.
MAX_JSON_DEPTH = 32
#: Longest generation of one request, in seconds (``transformers``' ``max_time``: generation stops
#: there and the answer ends with ``finish_reason: "length"``).  ``--max-seconds`` changes it.
MAX_GENERATION_SECONDS = 60.0
#: Most tokens one request may ask for (``max_tokens``); more is refused with 400.
MAX_TOKENS_LIMIT = 4096
#: Most log-probability alternatives per token: OpenAI's limit, on both routes (chat's
#: ``top_logprobs`` and completions' ``logprobs``); more is refused with 400.
MAX_TOP_LOGPROBS = 20
#: Most requests the server holds at once (one computing per model, the others waiting for it); one
#: more gets 429 with ``Retry-After`` at once (:class:`~.admission.Gate`).  ``--max-queue`` changes it.  With
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


def body_field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None,
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


def checked_max_tokens(body: Mapping[str, Any], *names: str, default: int = 16, minimum: int = 1) -> int:
    for name in names:
        value = body_field(body, name, int)
        if value is not None:
            if not minimum <= value <= MAX_TOKENS_LIMIT:
                raise RequestError(400, f"{name!r} must be in [{minimum}, {MAX_TOKENS_LIMIT}], got {value}", name)
            return int(value)
    return default


def checked_temperature(body: Mapping[str, Any]) -> float:
    value = float(body_field(body, "temperature", (int, float), 0.0))
    if not 0.0 <= value <= 2.0:  # NaN fails too
        raise RequestError(400, f"'temperature' must be in [0, 2], got {value}", "temperature")
    return value


def check_plain_sampling(body: Mapping[str, Any]) -> None:
    """Refuse (400) a sampling field this server does not implement set to anything but "off": it
    samples plain softmax at the temperature (:data:`~cogtestbed.llm_adapters.clients.base.NEUTRAL_SAMPLING`
    and its extras are accepted; ``top_k`` -1 is vLLM's "off"), never silently otherwise."""
    for key, off in {**NEUTRAL_SAMPLING, **NEUTRAL_SAMPLING_EXTRAS}.items():
        value = body_field(body, key, (int, float))
        if value is not None and value != off and not (key == "top_k" and value == -1):
            raise RequestError(400, f"{key!r} = {value} is not supported: this server samples plain softmax at "
                               f"the temperature (send {key}: {off} or leave it out)", key)


def checked_stops(body: Mapping[str, Any], key: str = "stop") -> tuple[str, ...]:
    stop = body_field(body, key, (str, list), ())
    stops = (stop,) if isinstance(stop, str) else tuple(stop)
    if not all(isinstance(x, str) for x in stops):
        raise RequestError(400, f"{key!r} must be a string or a list of strings", key)
    return stops


def checked_messages(body: Mapping[str, Any], roles: tuple[str, ...] = CHAT_ROLES) -> list[dict[str, Any]]:
    """The request's messages, checked: a non-empty list of ``{role, content}`` objects whose roles
    are among ``roles`` (else 400 naming the message)."""
    messages = body_field(body, "messages", list, required=True)
    if not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                               and isinstance(m.get("content"), str | list) for m in messages):
        raise RequestError(400, "'messages' must be a non-empty list of {role, content} objects", "messages")
    for k, m in enumerate(messages):
        if m["role"] not in roles:
            raise RequestError(400, f"messages[{k}].role {json.dumps(m['role'])[:40]} is not supported; "
                               f"roles: {', '.join(roles)}", f"messages[{k}].role")
    return [dict(m) for m in messages]


def checked_top_logprobs(body: Mapping[str, Any], name: str) -> int | None:
    """``body[name]`` (the number of log-probability alternatives per token) in [0,
    :data:`MAX_TOP_LOGPROBS`], OpenAI's bounds; None when absent."""
    k = body_field(body, name, int)
    if k is not None and not 0 <= k <= MAX_TOP_LOGPROBS:
        raise RequestError(400, f"{name!r} must be in [0, {MAX_TOP_LOGPROBS}], got {k}", name)
    return k


def check_one_choice(body: Mapping[str, Any]) -> None:
    """Refuse (400) ``n`` or ``best_of`` other than 1: this server answers one choice per request,
    never fewer than asked in silence."""
    for key in ("n", "best_of"):
        value = body_field(body, key, int)
        if value is not None and value != 1:
            raise RequestError(400, f"{key!r} = {value} is not supported: this server returns one choice per "
                               f"request (send {key}: 1 or leave it out, and send {value} requests)", key)


def wants_usage(body: Mapping[str, Any]) -> bool:
    options = body_field(body, "stream_options", dict, {})
    return bool(options.get("include_usage"))


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body: ``{"error": {message, type, param, code}}``."""
    kind = ("rate_limit_error" if status == 429 else "invalid_request_error" if status < 500 else "server_error")
    code = {405: "method_not_allowed", 413: "request_too_large", 429: "rate_limit_exceeded",
            503: "server_busy"}.get(status, "model_not_found" if status == 404 and param == "model" else None)
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(exc: RequestError) -> Any:
    from starlette.responses import JSONResponse

    headers = None if exc.retry_after is None else {"retry-after": f"{exc.retry_after:g}"}
    return JSONResponse(error_body(exc.status, str(exc), exc.param), status_code=exc.status, headers=headers)


def guarded(handler: Any) -> Any:
    """``handler`` answering every refused or malformed request with a 4xx OpenAI-style error body,
    and a failure of the server itself with a 500 one (its traceback logged, never sent)."""
    from starlette.responses import JSONResponse

    async def endpoint(request: Any) -> Any:
        try:
            return await handler(request)
        except RequestError as exc:
            return error_response(exc)
        except (KeyError, ValueError, TypeError, AttributeError, RecursionError) as exc:  # a malformed part of the body
            message = f"malformed request: {str(exc).strip(chr(39) + chr(34))}"
            return JSONResponse(error_body(400, message), status_code=400)
        except Exception as exc:  # a bug or a model failure: logged here, answered as OpenAI does
            logging.getLogger(__name__).exception("request to %s failed", request.url.path)
            return JSONResponse(error_body(500, f"the server failed: {type(exc).__name__}"), status_code=500)
    return endpoint


def completion_fields(body: Mapping[str, Any]) -> tuple[str, int | None, bool, int]:
    """(prompt, logprobs, echo, max_tokens) of a completions request, checked; ``max_tokens`` may be 0
    with ``echo`` (the prompt scored, nothing generated)."""
    prompt = body_field(body, "prompt", (str, list), required=True)
    if isinstance(prompt, list):
        if len(prompt) != 1 or not isinstance(prompt[0], str):
            raise RequestError(400, "prompt must be one string", "prompt")
        prompt = prompt[0]
    if not prompt:
        raise RequestError(400, "'prompt' must be a non-empty string", "prompt")
    k = checked_top_logprobs(body, "logprobs")
    check_one_choice(body)
    echo = bool(body_field(body, "echo", bool, False))
    return prompt, k, echo, checked_max_tokens(body, "max_tokens", minimum=0 if echo else 1)


async def read_json(request: Any, limit: int) -> dict[str, Any]:
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
    except RecursionError:  # nested deeper than the parser goes
        raise RequestError(400, f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    if json_depth(body) > MAX_JSON_DEPTH:
        raise RequestError(400, f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels")
    return body


def json_depth(value: Any) -> int:
    """How deep ``value`` (parsed JSON) nests lists and objects (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def openai_message(m: Mapping[str, Any]) -> dict[str, Any]:
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


def anthropic_message(m: Mapping[str, Any]) -> dict[str, Any]:
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


