"""The server's answers in the APIs' shapes: usage, log-probabilities, and the streamed chunks
(server-sent events)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from cogtestbed.llm_adapters.clients.base import Generation


def with_echoed(echoed: list[tuple[str, int, float | None]], logprobs: dict[str, Any] | None) -> dict[str, Any] | None:
    """A completion's log-probabilities with the echoed prompt's tokens in front (OpenAI's ``echo``)."""
    if logprobs is None:
        return None
    return {
        "tokens": [t for t, _, _ in echoed] + logprobs["tokens"],
        "text_offset": [o for _, o, _ in echoed] + logprobs["text_offset"],
        "token_logprobs": [v for _, _, v in echoed] + logprobs["token_logprobs"],
        "top_logprobs": [None] * len(echoed) + logprobs["top_logprobs"],
    }


def chat_logprobs(gen: Any) -> dict[str, Any] | None:
    """A chat completion's ``logprobs`` (OpenAI's ``content`` list), None where the model gave none."""
    if gen.logprobs is None:
        return None
    return {"content": [
        {"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
         "top_logprobs": [{"token": a, "logprob": v, "bytes": list(a.encode())}
                          for a, v in t.top.items()]} for t in gen.logprobs]}


def stream_pieces(text: str) -> list[str]:
    """``text`` cut into the pieces a stream sends (each word with the white space before it)."""
    return re.findall(r"\s*\S+|\s+", text) or [""]


def sse(chunks: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """Server-sent events: one ``data:`` line per chunk, then ``data: [DONE]`` (OpenAI's stream)."""
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def completion_chunks(head: dict[str, Any], text: str, finish: str | None, usage: dict[str, int] | None,
                       include_usage: bool) -> Iterator[dict[str, Any]]:
    """A completion as ``text_completion`` stream chunks; the last piece carries ``finish_reason``."""
    pieces = stream_pieces(text)
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        yield {**head, "choices": [{"index": 0, "text": piece, "logprobs": None,
                                    "finish_reason": finish if last else None}],
               **({"usage": None} if include_usage else {})}
    if include_usage:
        yield {**head, "choices": [], "usage": usage}


def chat_chunks(head: dict[str, Any], text: str, finish: str | None, usage: dict[str, int] | None,
                 include_usage: bool) -> Iterator[dict[str, Any]]:
    """A chat answer as ``chat.completion.chunk`` stream chunks: the role, the content's pieces, the
    finish reason, and (``stream_options.include_usage``) a last chunk with no choices and the usage."""
    extra = {"usage": None} if include_usage else {}
    yield {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                "finish_reason": None}], **extra}
    for piece in stream_pieces(text):
        yield {**head, "choices": [{"index": 0, "delta": {"content": piece}, "logprobs": None,
                                    "finish_reason": None}], **extra}
    yield {**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}], **extra}
    if include_usage:
        yield {**head, "choices": [], "usage": usage}


def usage_of(gen: Generation) -> dict[str, int]:
    p, c = gen.prompt_tokens or 0, gen.completion_tokens or 0
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def completion_logprobs(gen: Generation, offset: int) -> dict[str, list[Any]]:
    tokens = [t.token for t in gen.logprobs or []]
    offsets, pos = [], offset
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    return {"tokens": tokens, "text_offset": offsets,
            "token_logprobs": [t.logprob for t in gen.logprobs or []],
            "top_logprobs": [t.top for t in gen.logprobs or []]}


