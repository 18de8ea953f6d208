"""A server that echoes the caller's key in every form a careless server or proxy does (a test emulator).

:class:`EchoKey` wraps the project's server (:func:`~cogtestbed.llm_adapters.servers.server.create_app`,
faults included): every JSON answer it lets out quotes the key the request carried
(``Authorization: Bearer …`` or ``x-api-key``) in each of :func:`echo_forms` — raw, split in two,
percent-encoded (upper- and lower-case hex), base64 standard and URL-safe, padded and unpadded, at
each of the three byte alignments — in the answer text (``choices[].text``,
``choices[].message.content``, Anthropic's ``content[].text``), in ``system_fingerprint``, in an
error body's ``message`` (a 429 retried, a 401 that fails the run) and in response headers.  Tests
prove that none of it reaches a file, a cache, a table or a message (:func:`cogtestbed.redact.redact`).
"""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any
from urllib.parse import quote


def echo_forms(key: str) -> list[str]:
    """``key`` in every form :class:`EchoKey` echoes it (see the module docstring)."""
    half = len(key) // 2
    quoted = quote(key, safe="")
    forms = [key, f"{key[:half]} ... {key[half:]}", quoted, quoted.replace("%2F", "%2f").replace("%2B", "%2b"),
             quote(key)]
    data = key.encode()
    for prefix in (b"", b"x", b"xy"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(prefix + data).decode()
            forms += [text, text.rstrip("=")]
    return forms


def _key_of(scope: dict[str, Any]) -> str | None:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    auth = headers.get("authorization", "")
    return auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else headers.get("x-api-key")


def leaked(payload: Any, key: str, turn: int) -> Any:
    """``payload`` (an answer or error body) with ``key``'s forms written into its text fields and a
    ``system_fingerprint`` holding one of them (a different one on each ``turn``)."""
    if not isinstance(payload, dict):
        return payload
    forms = echo_forms(key)
    said = " | ".join(forms)
    if isinstance(payload.get("error"), dict):
        payload["error"]["message"] = f"{payload['error'].get('message')}; you sent {said}"
    for choice in payload.get("choices") or []:
        if isinstance(choice.get("message"), dict):
            choice["message"]["content"] = f"{choice['message'].get('content') or ''} {said}"
        elif isinstance(choice.get("text"), str):
            choice["text"] += f" {said}"
    for block in payload.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            block["text"] += f" {said}"
    if "choices" in payload:
        payload["system_fingerprint"] = f"fp_{forms[turn % len(forms)]}"
    return payload


class EchoKey:
    """ASGI middleware echoing each POST request's key into the JSON answer and its headers (:func:`leaked`);
    streamed answers pass unchanged."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.turn = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        key = _key_of(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if not key:
            await self.app(scope, receive, send)
            return
        self.turn += 1
        start: dict[str, Any] = {}
        body: list[bytes] = []

        async def hold(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            await send_leaked(start, b"".join(body), key, send, self.turn)

        await self.app(scope, receive, hold)


async def send_leaked(start: dict[str, Any], raw: bytes, key: str, send: Any, turn: int) -> None:
    """Send the held answer ``raw`` with ``key`` leaked into it (a JSON body) and into its headers."""
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    with contextlib.suppress(ValueError):  # not JSON (a stream): left as it is
        raw = json.dumps(leaked(json.loads(raw), key, turn)).encode()
    headers += [(f"x-echo-{i}".encode(), form.encode("latin-1")) for i, form in enumerate(echo_forms(key))]
    headers.append((b"content-length", str(len(raw)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": raw})
