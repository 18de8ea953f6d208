"""What a provider's batch API is to a run: the :class:`Provider` protocol (submit, poll, read results),
a polled batch (:class:`BatchStatus`), one result line's outcome (:class:`LineOutcome`), and how result lines
are read and merged (:mod:`cogtestbed.llm_adapters.middleware.batch`'s docstring: **Results**, **Every end**)."""

from __future__ import annotations

import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    GenerateRequest,
    Generation,
)
from cogtestbed.llm_adapters.middleware.retry import call_with_retries

logger = logging.getLogger(__name__)

#: Most times one request is submitted (its first batch and the follow-ups of a failed line).
MAX_SUBMISSIONS = 4
#: The batch window both providers offer (OpenAI's only ``completion_window``; Anthropic's fixed 24 h):
#: hours a provider may take to end one batch (OpenAI's ``completion_window`` 24h; Anthropic's 24 h).
BATCH_WINDOW_HOURS = 24
COMPLETION_WINDOW = f"{BATCH_WINDOW_HOURS}h"


@dataclass
class LineOutcome:
    """What a batch returned for one request: a generation, or why not — ``retry`` (it may pass
    when asked again) or ``error`` (it will not) — and whether the provider ran it (``billed``);
    ``unknown_usage``: billed, but what it billed is unknown (a corrupt or missing result line, a batch
    that is gone), so it is booked at its worst case; ``conflict``: the results answer it more than
    once, differently (refused, never cached)."""

    generation: Generation | None = None
    retry: str | None = None
    error: str | None = None
    billed: bool = False
    unknown_usage: bool = False
    conflict: str | None = None


#: States in which a batch has ended (OpenAI's; Anthropic's single ``ended`` is mapped to ``ended``).
END_STATES = ("completed", "expired", "cancelled", "failed", "ended")


@dataclass
class BatchStatus:
    """A polled batch: its provider state, whether processing ended, its request counts (None where
    the provider's counts are not counts: they are shown, never trusted) and why it failed."""

    state: str
    ended: bool
    total: int | None
    done: int | None
    failed: int | None
    reason: str | None = None

    def line(self, batch_id: str) -> str:
        def n(v: int | None) -> str:
            return "?" if v is None else str(v)

        why = f" ({self.reason})" if self.reason else ""
        return f"batch {batch_id}: {self.state}{why}, {n(self.done)}/{n(self.total)} answered, {n(self.failed)} failed"


def count_of(value: Any) -> int | None:
    """A request count a batch API reported, or None where it is not a non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


class Provider(ABC):
    """One provider's batch API, through its official SDK (every request with the client's retries)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        #: HTTP requests made to the batch API (upload, create, polls, downloads; every retry).
        self.http_requests = 0
        #: Told of each of them before it is sent (``Budget.service_request``: counted and bounded).
        self.on_request: Callable[[str], None] | None = None

    def count(self, what: str) -> None:
        """One HTTP request to the batch API is about to be sent (refused beyond the budget's bound)."""
        if self.on_request is not None:
            self.on_request(what)
        self.http_requests += 1

    async def call(self, fn: Any, what: str = "batch API request") -> Any:
        """One batch-API request with the client's retry policy (429/5xx/dropped connections); each
        attempt is counted (:meth:`count`)."""
        errors = self.connection_errors()

        async def attempt() -> Any:
            self.count(what)
            return await fn()

        try:
            return await call_with_retries(attempt, self.client.retry, errors, lambda e, d: None)
        except BackendError as exc:
            raise BackendError(f"{self.client.spec} batch API at {self.client.where}: {exc}", exc.status) from None

    async def create_call(self, fn: Any, what: str, route: str) -> Any:
        """:meth:`call` of a request that starts a batch: a server that answers it 404 or 405 has no
        batch API (one line, exit 2: nothing was created)."""
        try:
            return await self.call(fn, what)
        except BackendError as exc:
            if exc.status not in (404, 405):
                raise
            raise InputError(f"`batch`: the server at {self.client.where} has no batch API ({route} answered "
                             f"HTTP {exc.status}); run without `batch`") from None

    @abstractmethod
    def connection_errors(self) -> tuple[type[BaseException], ...]: ...

    @abstractmethod
    def line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        """One request of a batch, in the provider's format."""

    @abstractmethod
    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        """Create the batch; its id."""

    async def find(self, tag: str) -> str | None:
        """The id of a batch created with ``tag`` (None where the provider cannot say)."""
        return None

    @abstractmethod
    async def status(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        """Every result line of an ended batch, by custom id (lines of unknown ids are dropped; a
        custom id answered twice differently is a ``conflict``; one answered and also failed keeps its
        answer; a line that is not JSON but names its custom id is billed at its worst case)."""


_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]+)"')


def json_lines(text: str, where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of a JSONL text with a custom id, and the custom ids named by lines that are
    not such objects (a corrupt line: the provider ran it, its answer is lost).  A corrupt line is one
    warning line, never the end of the batch."""
    out, corrupt = [], []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            item, why = None, f"not JSON ({exc.msg})"
        else:
            why = "no custom_id"
        if isinstance(item, dict) and isinstance(item.get("custom_id"), str):
            out.append(item)
            continue
        named = _CUSTOM_ID.search(raw)
        logger.warning("%s: result line %d is %s%s", where, n, why,
                       f" (custom_id {named.group(1)}: booked at its worst case, asked again)" if named
                       else "; the requests without a result are booked at their worst case and asked again")
        if named:
            corrupt.append(named.group(1))
    return out, corrupt


def merge_outcome(outcomes: dict[str, LineOutcome], cid: str, new: LineOutcome) -> None:
    """Add one result line's outcome: an answer beats a failure of the same request (the provider
    billed it), two different answers are a conflict, a repeated identical answer is one answer."""
    old = outcomes.get(cid)
    if old is None or (old.generation is None and new.generation is not None):
        outcomes[cid] = new
    elif old.generation is not None and new.generation is not None and (
            old.generation.text != new.generation.text):
        outcomes[cid] = LineOutcome(billed=True, unknown_usage=True, conflict=(
            f"custom_id {cid} is answered twice with different answers ({old.generation.text[:40]!r} and "
            f"{new.generation.text[:40]!r})"))


def retryable_status(status: int | None) -> bool:
    return status is None or status in (408, 409, 429) or status >= 500


