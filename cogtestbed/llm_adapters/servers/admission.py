"""The server's admission control (:class:`Gate`) and the context-length check of a request."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import GenerateRequest
from cogtestbed.llm_adapters.clients.hf import HFClient
from cogtestbed.llm_adapters.servers.checks import RequestError


class Gate:
    """The server's admission control: at most ``max_queue`` requests held at once (a request
    beyond gets 429 with ``Retry-After`` at once), one model computation at a time per model, and a
    request waits at most ``wait`` seconds for its model (then 503 with ``Retry-After``).  Together
    with ``max_tokens`` capped and the generation time bounded (``max_seconds``), no request holds the
    server beyond its own limits, and the memory stays bounded (:data:`~.checks.MAX_QUEUE`)."""

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


async def check_length(client: HFClient, request: GenerateRequest, raw: bool = False) -> int:
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


