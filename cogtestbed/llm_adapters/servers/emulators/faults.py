"""Fault injection for the project's server: a test emulator of a failing API (not a client feature).

:class:`FaultInjector` makes the next requests to :mod:`~cogtestbed.llm_adapters.servers.server` fail at the
HTTP level — a status code with ``Retry-After``, a connection dropped half-way through the response body, or a
delay — so that tests can prove the adapters' retries; it also fails a seeded random share of the requests
(the server's ``--fail-rate``).  :class:`FaultMiddleware` applies the faults before the app sees a request.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError


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



class FaultMiddleware:
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


