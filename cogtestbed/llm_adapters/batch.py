"""Batch mode (``cogtestbed run --batch``): a run's requests go through the provider's batch API at its
batch price — OpenAI's Batch API (a JSONL file uploaded to ``/v1/files``, ``/v1/batches`` created and
polled, the output and error files downloaded) or Anthropic's Message Batches
(``/v1/messages/batches`` created and polled, its results JSONL read).

**Packing.**  Where no prompt depends on an answer (the environment's ``answer_independent``), every
first ask of every subject and step is sent ahead in one batch (:meth:`BatchClient.fetch_ahead`, called
by :func:`~cogtestbed.llm_adapters.runner.send_ahead`): one turnaround for the whole run.

**Waves.**  Otherwise subjects play as in any run (:func:`~cogtestbed.llm_adapters.runner.play_subjects`, all of
them at once), but a new request does not travel alone: :class:`BatchClient` holds it until every
subject still playing waits for an answer (or, where some subject waits on something else, until no
new request has come for ``linger`` seconds), then submits all of them in one batch.  So wave k holds
step k of every session: experiments whose next prompt depends on the previous answer (bandits,
two-step) run their independent sessions in parallel waves, one batch per step.

**Results** are matched to requests by ``custom_id`` (never by order).  A line that failed for a reason
that may pass (a server error, a rate limit, a request the batch's window expired before running, a
cancelled one, a line missing from the results) is asked again in the next wave, at most
:data:`MAX_SUBMISSIONS` times in all; one the provider refused (a bad request) fails its subject's
call with the provider's message, as a refused HTTP request does.

**Every end.**  A batch may end ``completed``, ``expired``, ``cancelled`` or ``failed``, vanish (HTTP 404
after it was created), or return result lines that are corrupt, missing, without usage, doubled or also
in the error file.  Whatever the end, every answer is kept, every line is booked at what the provider
billed — its worst case, with one warning line, where that cannot be known (gone, corrupt, missing, no
usage) — and what has no answer is asked again; a ``custom_id`` answered twice differently is refused
(its call fails with one line naming the id; ``--resume`` asks it again).  :func:`batch_turnarounds`
counts the batches a run waits for, one after another.

**Budget.**  Every line is booked at its worst case (:meth:`Budget.reserve`) before its batch is
submitted, and settled with the usage its result reports (at the batch price: ``--batch`` prices the
run with the price table's ``batch_discount``).  A line the provider never ran (expired, cancelled)
bills nothing; a line that errored is a call with no tokens, as a failed HTTP request is; a re-asked
line is booked again.  The batch API's own requests (upload, create, polls, downloads, each retry) bill
nothing and are no calls, but each is counted against the budget's bound on service requests
(:meth:`Budget.service_request`, ``--max-service-requests``: beyond it the run stops, resumable) and
reported (``batch.http_requests`` and ``budget.service_requests`` in ``run.json``).  A wave whose batch
may exist when the run stops or fails (its ``submit`` line written) keeps its bookings open in the ledger
(charged at their worst case), since the provider runs and bills it anyway; ``--resume`` collects it and
settles them at the usage reported.

**Resuming after a kill.**  Before anything of a wave is sent, ``RUN_DIR/batches.jsonl`` gets a
``submit`` line with every request of the wave (its custom id, cache key, request, and the ledger id
of its booking); right after the provider accepts the batch, a ``created`` line with the batch id;
when every result is in the response cache, a ``done`` line.  ``--resume`` first finishes the waves
without a ``done`` line: it polls the recorded batch (or, killed between submission and the
``created`` line, finds it by the wave's tag in OpenAI's batch metadata; Anthropic's batches carry
no metadata, so there the wave is counted as never sent), stores its answers in the cache and
settles their bookings in the ledger with the usage reported.  The replay that follows finds those
answers in the cache: no request is lost and none is sent twice.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import os
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogtestbed.errors import DataError, InputError
from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoringNotSupported,
)
from cogtestbed.llm_adapters.clients.prices import Price
from cogtestbed.llm_adapters.limits import Booking, Budget, BudgetExhausted
from cogtestbed.llm_adapters.retry import call_with_retries

logger = logging.getLogger(__name__)

#: The run directory's record of its batches (see module docstring).
BATCH_FILE = "batches.jsonl"
#: Seconds between two polls of a batch (``--poll-every``): providers finish most batches within
#: minutes to hours and ask clients not to poll in a tight loop.
DEFAULT_POLL_SECONDS = 30.0
#: Seconds without a new request after which a wave is submitted although some subject still
#: playing has not asked yet (it waits on something else, e.g. its budget admission).
DEFAULT_LINGER_SECONDS = 2.0
#: Most times one request is submitted (its first batch and the follow-ups of a failed line).
MAX_SUBMISSIONS = 4
#: The batch window both providers offer (OpenAI's only ``completion_window``; Anthropic's fixed 24 h):
#: hours a provider may take to end one batch (OpenAI's ``completion_window`` 24h; Anthropic's 24 h).
BATCH_WINDOW_HOURS = 24
COMPLETION_WINDOW = f"{BATCH_WINDOW_HOURS}h"

__all__ = ["BATCH_FILE", "BatchClient", "BatchRecord", "batch_price", "batch_report", "batch_turnarounds",
           "unfinished_batches"]


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
            raise InputError(f"--batch: the server at {self.client.where} has no batch API ({route} answered "
                             f"HTTP {exc.status}); run without --batch") from None

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


def _json_lines(text: str, where: str) -> tuple[list[dict[str, Any]], list[str]]:
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


def _merge(outcomes: dict[str, LineOutcome], cid: str, new: LineOutcome) -> None:
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


def _retryable(status: int | None) -> bool:
    return status is None or status in (408, 409, 429) or status >= 500


class OpenAIBatches(Provider):
    """OpenAI's Batch API: upload a JSONL file (purpose ``batch``), create the batch on the client's
    endpoint, poll ``GET /v1/batches/{id}``, read the output file (answered lines) and the error file
    (failed lines, and ``batch_expired`` / ``batch_cancelled`` ones)."""

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return (self.client._openai.APIConnectionError,)

    def line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": self.client.endpoint,
                "body": self.client.request_body(request)}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        sdk = self.client._client()
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        uploaded = await self.create_call(lambda: sdk.files.create(file=("requests.jsonl", data), purpose="batch"),
                                          "batch file upload", "POST /v1/files")
        batch = await self.create_call(lambda: sdk.batches.create(
            input_file_id=uploaded.id, endpoint=self.client.endpoint, completion_window=COMPLETION_WINDOW,
            metadata={"cogtestbed_tag": tag}), "batch create", "POST /v1/batches")
        return str(batch.id)

    async def find(self, tag: str) -> str | None:
        sdk = self.client._client()
        page = await self.call(lambda: sdk.batches.list(limit=100), "batch list")
        for batch in getattr(page, "data", []):
            if (batch.metadata or {}).get("cogtestbed_tag") == tag:
                return str(batch.id)
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.batches.retrieve(batch_id), "batch poll")
        counts = batch.request_counts
        state = str(batch.status)
        reason = None
        if state == "failed":
            errors = getattr(batch, "errors", None)
            data = getattr(errors, "data", None) or []
            reason = "; ".join(f"{getattr(e, 'code', None)}: {getattr(e, 'message', None)}"
                               for e in data) or "no reason"
        return BatchStatus(state, state in END_STATES, count_of(getattr(counts, "total", None)),
                           count_of(getattr(counts, "completed", None)), count_of(getattr(counts, "failed", None)),
                           reason)

    async def _file(self, file_id: str | None) -> tuple[list[dict[str, Any]], list[str]]:
        if not file_id:
            return [], []
        sdk = self.client._client()
        content = await self.call(lambda: sdk.files.content(file_id), "batch results download")
        return _json_lines(content.text, f"{self.client.spec}: batch file {file_id}")

    async def results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.batches.retrieve(batch_id), "batch retrieve for its files")
        out: dict[str, LineOutcome] = {}
        corrupt: list[str] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            items, bad = await self._file(file_id)
            corrupt += bad
            for item in items:
                request = requests.get(item["custom_id"])
                if request is not None:
                    _merge(out, item["custom_id"], self._outcome(item, request))
        for cid in corrupt:
            if cid in requests:
                _merge(out, cid, LineOutcome(retry="a corrupt result line", billed=True, unknown_usage=True))
        return out

    def _outcome(self, item: Mapping[str, Any], request: GenerateRequest) -> LineOutcome:
        error, response = item.get("error"), item.get("response")
        if isinstance(error, dict):  # not run: batch_expired, batch_cancelled, request_timeout
            return LineOutcome(retry=f"{error.get('code')}: {error.get('message')}")
        if not isinstance(response, dict) or not isinstance(response.get("status_code"), int):
            return LineOutcome(retry="a result line without a response", billed=True, unknown_usage=True)
        status, body = response["status_code"], response.get("body")
        if status != 200:
            message = body.get("error", {}).get("message") if isinstance(body, dict) else None
            line = f"HTTP {status}: {message or 'no message'}"
            return LineOutcome(retry=line, billed=True) if _retryable(status) else LineOutcome(error=line)
        try:
            return LineOutcome(self.client.generation(self.client.parse_body(body), request), billed=True)
        except (ValueError, BackendError) as exc:
            return LineOutcome(retry=str(exc), billed=True, unknown_usage=True)


class AnthropicBatches(Provider):
    """Anthropic's Message Batches: create with the requests inline, poll until ``ended``, read the
    results (``succeeded`` / ``errored`` / ``canceled`` / ``expired`` per custom id)."""

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return (self.client._anthropic.APIConnectionError,)

    def line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.client.request_body(request)}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        sdk = self.client._client()
        batch = await self.create_call(lambda: sdk.messages.batches.create(requests=lines), "batch create",
                                       "POST /v1/messages/batches")
        return str(batch.id)

    async def status(self, batch_id: str) -> BatchStatus:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.messages.batches.retrieve(batch_id), "batch poll")
        c = batch.request_counts
        parts = [count_of(getattr(c, k, None)) for k in ("processing", "succeeded", "errored", "canceled", "expired")]
        total = None if None in parts else sum(p for p in parts if p is not None)
        failed = None if None in parts[2:] else sum(p for p in parts[2:] if p is not None)
        state = str(batch.processing_status)
        return BatchStatus(state, state == "ended", total, parts[1], failed)

    async def results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        sdk = self.client._client()

        async def read() -> list[Any]:  # the SDK retrieves the batch for its results_url, then reads that
            self.count("batch retrieve for its results")
            items = []
            try:
                async for item in await sdk.messages.batches.results(batch_id):
                    items.append(item)
            except ValueError as exc:  # a line that is not JSON: the rest of the file cannot be read
                logger.warning("%s: batch %s: a result line is not JSON (%s); the requests without a result "
                               "are booked at their worst case and asked again", self.client.spec, batch_id, exc)
            return items

        out: dict[str, LineOutcome] = {}
        for item in await self.call(read, "batch results download"):
            request = requests.get(str(getattr(item, "custom_id", "")))
            if request is None:
                continue
            _merge(out, item.custom_id, self._outcome(item.result, request))
        return out

    def _outcome(self, result: Any, request: GenerateRequest) -> LineOutcome:
        if result.type == "succeeded":
            try:
                return LineOutcome(self.client.generation(result.message, request), billed=True)
            except (AttributeError, TypeError, ValueError) as exc:
                return LineOutcome(retry=f"a result line that is not a message ({exc})", billed=True,
                                   unknown_usage=True)
        if result.type == "errored":
            err = result.error.error
            line = f"{err.type}: {err.message}"
            retry = err.type in ("api_error", "overloaded_error", "rate_limit_error", "timeout_error")
            return LineOutcome(retry=line, billed=True) if retry else LineOutcome(error=line)
        return LineOutcome(retry=f"{result.type} before it ran")  # canceled, expired: never run


def provider_for(client: LLMClient) -> Provider:
    """The batch API of ``client``'s backend (ValueError for a backend without one)."""
    if client.backend == "openai":
        return OpenAIBatches(client)
    if client.backend == "anthropic":
        return AnthropicBatches(client)
    raise InputError(f"--batch needs a hosted backend with a batch API (openai:, anthropic:), not {client.spec}")


# ----------------------------------------------------------------------------- the record
class BatchRecord:
    """``RUN_DIR/batches.jsonl``: one JSON line per event, each flushed and fsynced before the step it
    records is taken (see module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = self.read(path)

    @staticmethod
    def read(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        events = []
        for raw in path.read_text().splitlines():
            try:
                events.append(json.loads(raw))
            except json.JSONDecodeError:  # a line cut by a kill: its step was never taken
                continue
        return events

    def write(self, event: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(event, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.events.append(event)

    def next_wave(self) -> int:
        return 1 + max((int(e["wave"]) for e in self.events if e.get("event") == "submit"), default=-1)

    def unfinished(self) -> list[dict[str, Any]]:
        """The waves submitted without a ``done`` line: their ``submit`` event, with ``batch_id``
        where a ``created`` line gives it."""
        waves: dict[int, dict[str, Any]] = {}
        for e in self.events:
            kind, wave = e.get("event"), int(e.get("wave", -1))
            if kind == "submit":
                waves[wave] = {**e, "batch_id": None}
            elif kind == "created" and wave in waves:
                waves[wave]["batch_id"] = e.get("batch_id")
            elif kind == "done":
                waves.pop(wave, None)
        return list(waves.values())

    def summary(self) -> dict[str, int]:
        created = [e for e in self.events if e.get("event") == "created"]
        lines = sum(len(e.get("lines", [])) for e in self.events if e.get("event") == "submit")
        return {"batches": len(created), "lines_submitted": lines}


def unfinished_batches(run_dir: Path) -> int:
    """How many batches of the run in ``run_dir`` are still to be collected."""
    return len(BatchRecord(run_dir / BATCH_FILE).unfinished())


def open_ledger_ids(ledger: Path) -> set[str]:
    """Bookings of the ledger never settled (their process died while they were in flight)."""
    open_: set[str] = set()
    if not ledger.exists():
        return open_
    for raw in ledger.read_text().splitlines():
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if "reserve_usd" in event:
            open_.add(str(event.get("id")))
        elif "settle_usd" in event:
            open_.discard(str(event.get("id")))
    return open_


# ----------------------------------------------------------------------------- the client
@dataclass
class _Pending:
    request: GenerateRequest
    key: str
    bound: int
    subject: int | None
    future: asyncio.Future[Generation]
    submissions: int = 0
    booking: Booking | None = None
    reasons: list[str] = field(default_factory=list)
    #: Its wave's ``submit`` line is written: the provider may run (and bill) it whatever happens next.
    in_flight: bool = False


@dataclass
class _Attached:
    """What a run gives the client: where to record, the cache answers go to, the budget."""

    record: BatchRecord
    cache: Any
    budget: Budget
    ledger: Path
    #: Cache keys without the endpoint (``run --share-cache``), as the response cache makes them.
    shared: bool = False


class BatchClient(LLMClient):
    """A hosted client whose generations travel in batches (see module docstring).

    It books its own requests (:attr:`books_itself`: the response cache leaves the booking to it),
    so that each line is booked when its batch is submitted and booked again when it is re-asked.
    Scoring needs an echo request per continuation that the batch APIs do not serve: scored steps
    are sampled (the run says so).
    """

    books_itself = True

    def __init__(self, inner: LLMClient, *, poll: float = DEFAULT_POLL_SECONDS,
                 linger: float = DEFAULT_LINGER_SECONDS) -> None:
        if not poll > 0 or not linger > 0:
            raise InputError(f"--poll-every must be a positive number of seconds, got {poll:g}")
        self.inner, self.provider = inner, provider_for(inner)
        self.backend, self.model, self.chat, self.vision = inner.backend, inner.model, inner.chat, inner.vision
        self.can_score = False
        self.poll, self.linger = poll, linger
        self.pending: list[_Pending] = []
        self.live = 0
        self.attached: _Attached | None = None
        self.stats = {"waves": 0, "lines": 0, "reasked": 0, "expired_or_cancelled": 0, "errored": 0,
                      "unknown_usage": 0, "gone_batches": 0, "recovered_batches": 0, "recovered_answers": 0}
        self._flushing = False
        self._timer: asyncio.TimerHandle | None = None
        #: Cache keys of answers :meth:`fetch_ahead` stored, not yet read by the play.
        self.fetched_ahead: set[str] = set()

    # -- delegated ---------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def endpoint_identity(self) -> dict[str, Any] | None:
        return self.inner.endpoint_identity()

    @property
    def system_fingerprints(self) -> set[str]:
        return set(getattr(self.inner, "system_fingerprints", ()))

    def check_ready(self) -> None:
        self.inner.check_ready()

    async def apreflight(self) -> None:
        await self.inner.apreflight()

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return self.inner.count_tokens(text)

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        return self.inner.billed_prompt_tokens(prompt)

    def prompt_token_bound(self, prompt: Prompt) -> int:
        return self.inner.prompt_token_bound(prompt)

    @property
    def token_source(self) -> str | None:
        return getattr(self.inner, "token_source", None)

    async def ascore(self, context: Prompt, continuations: Any, raw: bool = False) -> Any:
        raise ScoringNotSupported("batch mode sends no echo + logprobs scoring requests")

    async def aclose(self) -> None:
        await self.inner.aclose()

    # -- the run's hooks -----------------------------------------------------------------------
    def attach(self, run_dir: Path, cache: Any, budget: Budget, ledger: Path, shared: bool = False) -> None:
        """Record this run's batches in ``run_dir``; answers go to ``cache`` (keys made as the response
        cache makes them: ``shared`` without the endpoint); lines book ``budget``."""
        self.attached = _Attached(BatchRecord(run_dir / BATCH_FILE), cache, budget, ledger, shared)
        self.provider.on_request = budget.service_request  # every batch-API request counted and bounded

    def subject_finished(self) -> None:
        """A subject stopped playing (``live``: the subjects still playing, set by the run)."""
        self.live -= 1
        self._wake()

    def manifest_entry(self) -> dict[str, Any]:
        """``run.json``'s ``batch`` section: the provider, waves, lines and the batch API's requests."""
        record = self.attached.record.summary() if self.attached else {}
        return {"provider": self.backend, "endpoint": getattr(self.inner, "endpoint", "/v1/messages/batches"),
                "poll_every_s": self.poll, **record, **self.stats, "http_requests": self.provider.http_requests}

    # -- fetching ahead ------------------------------------------------------------------------------
    async def fetch_ahead(self, requests: list[tuple[int, GenerateRequest]]) -> int:
        """Send every ``(subject, request)`` whose prompt depends on no answer in one batch before the
        subjects play (their re-asks and failed lines follow in later waves); the answers go to the
        cache, and the play that follows reads them as this run's calls (:attr:`fetched_ahead`).
        Requests already in the cache and repeats are not sent.  A line the budget refuses is left to
        the play (whose admission decides); any other failure stops the run.  Returns the lines sent."""
        from cogtestbed.llm_adapters.cache import cache_key

        assert self.attached is not None
        loop = asyncio.get_running_loop()
        wave: dict[str, _Pending] = {}
        for subject, request in requests:
            key = cache_key(self, request, self.attached.shared)
            if key in wave or self.attached.cache.get(key) is not None:
                continue
            wave[key] = _Pending(request, key, self.inner.prompt_token_bound(request.prompt), subject,
                                 loop.create_future())
        if not wave:
            return 0
        live, self.live = self.live, 0  # re-asked lines go out at once: no subject plays yet
        self._flushing = True
        try:
            await self._flush(list(wave.values()))
            results = await asyncio.gather(*(p.future for p in wave.values()), return_exceptions=True)
        finally:
            self.live = live
        for p, result in zip(wave.values(), results, strict=True):
            if isinstance(result, Generation):
                self.fetched_ahead.add(p.key)
        failures = [r for r in results if isinstance(r, BaseException) and not isinstance(r, BudgetExhausted)]
        if failures:
            raise failures[0]
        return len(wave)

    # -- generating ------------------------------------------------------------------------------
    async def agenerate(self, request: GenerateRequest) -> Generation:
        """Queue ``request`` for the next wave; its answer when that batch ends."""
        from cogtestbed.llm_adapters.cache import CURRENT_SUBJECT, cache_key

        if self.attached is None:
            raise RuntimeError("a BatchClient answers inside a run (attach() first)")
        ticket = CURRENT_SUBJECT.get()
        loop = asyncio.get_running_loop()
        key = cache_key(self, request, self.attached.shared)
        pending = _Pending(request, key, self.inner.prompt_token_bound(request.prompt),
                           None if ticket is None else ticket.index, loop.create_future())
        self.pending.append(pending)
        self._wake()
        return await pending.future

    def _wake(self) -> None:
        """Submit the waiting requests when every subject still playing waits (else after ``linger``)."""
        if self._flushing or not self.pending:
            return
        waiting = {p.subject for p in self.pending}
        if len(waiting) >= self.live:
            self._start()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.linger, self._start)

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing or not self.pending:
            return
        self._flushing = True
        wave, self.pending = self.pending, []
        # a fresh context: the wave belongs to no subject (no subject ticket, no retry log)
        asyncio.get_running_loop().create_task(self._flush(wave), context=contextvars.Context())

    async def _flush(self, wave: list[_Pending]) -> None:
        try:
            await self._run_wave(wave)
        except BaseException as exc:  # the batch API failed: every call of the wave fails with it
            for p in wave:
                if p.booking is not None and not p.in_flight:
                    assert self.attached is not None
                    self.attached.budget.settle(p.booking, 0, 0, succeeded=False)
                # a line that may be in a batch keeps its booking open in the ledger (charged at its worst
                # case): --resume collects the batch and settles it at the usage reported (recover)
                p.booking = None
                if not p.future.done():
                    p.future.set_exception(exc if isinstance(exc, Exception) else BackendError(str(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._flushing = False
            self._wake()

    def _book(self, wave: list[_Pending]) -> list[_Pending]:
        """Book each line's worst case in subject order; a line the budget refuses fails its call."""
        assert self.attached is not None
        booked = []
        for p in sorted(wave, key=lambda p: (p.subject is None, p.subject or 0)):
            try:
                p.booking = self.attached.budget.reserve(p.bound, p.request.max_tokens, p.subject)
            except BudgetExhausted as exc:
                p.future.set_exception(exc)
                continue
            booked.append(p)
        return booked

    async def _run_wave(self, wave: list[_Pending]) -> None:
        assert self.attached is not None
        record = self.attached.record
        booked = self._book(wave)
        if not booked:
            return
        number, tag = record.next_wave(), uuid.uuid4().hex
        ids = {f"w{number}-{j}": p for j, p in enumerate(booked)}
        lines = [self.provider.line(cid, p.request) for cid, p in ids.items()]  # built before anything is sent
        record.write({"event": "submit", "wave": number, "tag": tag, "lines": [
            {"custom_id": cid, "key": p.key, "request": p.request.to_json(), "bound": p.bound,
             "ledger_id": p.booking.ledger_id if p.booking else None,
             "worst_usd": p.booking.worst.usd if p.booking else 0.0} for cid, p in ids.items()]})
        self.stats["waves"] += 1
        self.stats["lines"] += len(lines)
        for p in booked:
            p.in_flight = True
        try:
            batch_id = await self.provider.submit(lines, tag)
        except InputError:  # no batch API: nothing was created, nothing billed
            for p in booked:
                self.attached.budget.settle(p.booking, 0, 0, succeeded=False)  # type: ignore[arg-type]
                p.booking, p.in_flight = None, False
            record.write({"event": "done", "wave": number, "created": False})
            raise
        record.write({"event": "created", "wave": number, "batch_id": batch_id})
        outcomes = await self._collect(batch_id, {cid: p.request for cid, p in ids.items()})
        for cid, p in ids.items():
            self._settle(p, outcomes[cid])
        record.write({"event": "done", "wave": number})

    async def _collect(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        """Poll ``batch_id`` until it ends (a progress line whenever its counts change); the outcome of
        every request, whatever the batch's end (:meth:`_judged`): completed, expired, cancelled,
        failed, gone (HTTP 404 after it was created), with corrupt or missing result lines."""
        shown = ""
        try:
            while True:
                status = await self.provider.status(batch_id)
                line = status.line(batch_id)
                if line != shown:
                    logger.info("%s", line)
                    shown = line
                if status.ended:
                    break
                await asyncio.sleep(self.poll)
            found = await self.provider.results(batch_id, requests)
        except BackendError as exc:
            if exc.status != 404:
                raise
            logger.warning("%s", f"batch {batch_id} is gone ({exc}): whether the provider ran its {len(requests)} "
                                 "requests is unknown, so each is booked at its worst case and asked again")
            self.stats["gone_batches"] += 1
            return {cid: LineOutcome(retry=f"batch {batch_id} gone (HTTP 404)", billed=True, unknown_usage=True)
                    for cid in requests}
        return self._judged(batch_id, status, requests, found)

    def _judged(self, batch_id: str, status: BatchStatus, requests: Mapping[str, GenerateRequest],
                found: dict[str, LineOutcome]) -> dict[str, LineOutcome]:
        """Every request's outcome: its result line's, or — without one — never run where the batch
        ``failed`` (the provider runs nothing of a batch that fails validation), else billed at its worst
        case (the provider may have run it).  One warning line each for requests without a result,
        answers without usage and conflicting answers."""
        out = dict(found)
        missing = [cid for cid in requests if cid not in found]
        if status.state == "failed":
            logger.warning("%s", f"batch {batch_id} failed ({status.reason}): its {len(missing)} requests without "
                                 "a result are asked again (a failed batch runs nothing)")
            for cid in missing:
                out[cid] = LineOutcome(retry=f"batch failed: {status.reason}")
        elif missing:
            logger.warning("%s", f"batch {batch_id} ({status.state}): {len(missing)} of {len(requests)} requests have "
                                 "no result line: each is booked at its worst case and asked again")
            for cid in missing:
                out[cid] = LineOutcome(retry="no result line for this request", billed=True, unknown_usage=True)
        no_usage = [cid for cid, o in out.items() if o.generation is not None and (
            o.generation.prompt_tokens is None or o.generation.completion_tokens is None)]
        if no_usage:
            logger.warning("%s", f"batch {batch_id}: {len(no_usage)} answers report no usage: each is booked at "
                                 "its worst case")
        for o in out.values():
            if o.conflict:
                logger.warning("%s", f"batch {batch_id}: {o.conflict}: refused (booked at its worst case)")
        self.stats["unknown_usage"] += sum(1 for o in out.values() if o.unknown_usage) + len(no_usage)
        return out

    def _settle(self, p: _Pending, outcome: LineOutcome) -> None:
        """Settle a line's booking, store its answer, and answer its call — or queue it again."""
        assert self.attached is not None and p.booking is not None
        budget, p.submissions = self.attached.budget, p.submissions + 1
        gen = outcome.generation
        if gen is not None:
            prompt, completion = _usage(gen, p.bound, p.request.max_tokens)
            budget.settle(p.booking, prompt, completion, succeeded=True, reasoning_tokens=gen.reasoning_tokens)
            self.attached.cache.put(p.key, self, p.request, gen)  # before the wave's done line
            p.future.set_result(gen)
            return
        usage = (p.bound, p.request.max_tokens) if outcome.unknown_usage else (0, 0)
        budget.settle(p.booking, *usage, succeeded=outcome.billed)
        p.booking = None
        if outcome.conflict is not None:
            self.stats["errored"] += 1
            p.future.set_exception(DataError(f"{self.spec}: batch results refused: {outcome.conflict}; "
                                             "--resume asks it again"))
            return
        if outcome.retry is None:
            self.stats["errored"] += 1
            p.future.set_exception(BackendError(f"{self.spec} batch request refused: {outcome.error}", 400))
            return
        self.stats["errored" if outcome.billed else "expired_or_cancelled"] += 1
        p.reasons.append(outcome.retry)
        if p.submissions >= MAX_SUBMISSIONS:
            p.future.set_exception(BackendError(
                f"{self.spec}: a batch request failed {p.submissions} times (last: {outcome.retry}); "
                "--resume asks it again"))
            return
        self.stats["reasked"] += 1
        p.in_flight = False  # booked and sent again with the next wave
        logger.info("%s: a batch request is asked again in the next wave (%s)", self.spec, outcome.retry)
        self.pending.append(p)

    # -- resuming ----------------------------------------------------------------------------
    async def recover(self) -> None:
        """Finish the waves an earlier invocation left (see module docstring), before the replay:
        whatever the batch's end, its answers go to the cache and every booking still open is settled
        (what was billed, its worst case where that is unknown); what has no answer is asked by the replay."""
        assert self.attached is not None
        record = self.attached.record
        for wave in record.unfinished():
            batch_id = wave["batch_id"] or await self.provider.find(wave["tag"])
            lines = wave.get("lines", [])
            requests = {line["custom_id"]: _request_from_json(line["request"]) for line in lines}
            outcomes: dict[str, LineOutcome] = {}
            if batch_id is not None:
                logger.info("resuming: collecting batch %s of wave %s (%d requests)", batch_id, wave["wave"],
                            len(lines))
                outcomes = await self._collect(batch_id, requests)
                self.stats["recovered_batches"] += 1
            else:
                logger.warning("resuming: wave %s was never accepted by the provider; its %d requests are "
                               "asked again", wave["wave"], len(lines))
            self._settle_recovered(lines, outcomes)
            record.write({"event": "done", "wave": wave["wave"], "recovered": batch_id is not None})

    def _settle_recovered(self, lines: list[dict[str, Any]], outcomes: Mapping[str, LineOutcome]) -> None:
        """Store the recovered answers and settle the open bookings of a recovered wave's ``lines``."""
        assert self.attached is not None
        budget = self.attached.budget
        open_ids = open_ledger_ids(self.attached.ledger)
        for line in lines:
            outcome = outcomes.get(line["custom_id"]) or LineOutcome(retry="not collected")
            gen, worst = outcome.generation, self._worst_tokens(line)
            usage = (_usage(gen, *worst) if gen is not None else worst if outcome.unknown_usage else (0, 0))
            if gen is not None:
                self.attached.cache.put_json(line["key"], self, line["request"], gen.to_json())
                self.stats["recovered_answers"] += 1
            if line.get("ledger_id") in open_ids:
                budget.settle_orphan(str(line["ledger_id"]), float(line.get("worst_usd") or 0.0), *usage,
                                     billed=gen is not None or outcome.billed,
                                     reasoning_tokens=None if gen is None else gen.reasoning_tokens)

    def _worst_tokens(self, line: Mapping[str, Any]) -> tuple[int, int]:
        """A recorded line's worst case in tokens: its prompt bound and ``max_tokens`` (a record made
        before bounds were recorded: its booked worst case in dollars, all of it as output)."""
        assert self.attached is not None
        if isinstance(line.get("bound"), int):
            return int(line["bound"]), int(line["request"]["max_tokens"])
        price = self.attached.budget.price
        if price is None or price.output <= 0:
            return 0, int(line["request"]["max_tokens"])
        return 0, math.ceil(float(line.get("worst_usd") or 0.0) * 1e6 / price.output - 1e-9)


def _usage(gen: Generation, bound: int, max_tokens: int) -> tuple[int, int]:
    """(prompt, completion) tokens a generation reports, each at its worst case where it reports
    none or a value that is not a count."""
    def count(value: Any, worst: int) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else worst

    return count(gen.prompt_tokens, bound), count(gen.completion_tokens, max_tokens)


def _request_from_json(d: Mapping[str, Any]) -> GenerateRequest:
    """A recorded request (images are recorded as digests: only the request's fields are needed here)."""
    prompt = d["prompt"] if isinstance(d["prompt"], str) else tuple(
        {k: v for k, v in m.items() if k != "images"} for m in d["prompt"])
    return GenerateRequest(prompt, int(d["max_tokens"]), float(d["temperature"]), tuple(d.get("stop") or ()),
                           d.get("seed"), d.get("top_logprobs"), d.get("reasoning_effort"), d.get("thinking_budget"))


# ----------------------------------------------------------------------------- pricing
def batch_price(price: Price | None, spec: str) -> Price:
    """The price of ``spec`` in batch mode; ValueError (one line) where the table gives none."""
    batched = None if price is None else price.batch()
    if batched is None:
        raise InputError(f"--batch: the price table has no batch_discount for {spec} (add one with --prices FILE)")
    return batched


def batch_report(report: dict[str, Any], standard: Price) -> dict[str, Any]:
    """A dry run's report, made at the batch price (what the run books and pays), with the standard
    price's cost beside it: ``estimated_cost_usd`` / ``max_cost_usd`` are the batch prices,
    ``standard_estimated_cost_usd`` / ``standard_max_cost_usd`` the same requests at the standard price."""
    import math

    keep = 1.0 - (standard.batch_discount or 0.0)
    out = dict(report)
    standard_usd = standard.cost(report["prompt_tokens"], report["max_completion_tokens"])
    out["standard_estimated_cost_usd"] = round(standard_usd, 4)
    if report.get("max_cost_usd") is not None and keep > 0:
        out["standard_max_cost_usd"] = math.ceil(report["max_cost_usd"] / keep * 1e6 - 1e-6) / 1e6
    if isinstance(out.get("price_usd_per_mtok"), dict):  # the batch price, with the discount it has taken off
        out["price_usd_per_mtok"] = {**out["price_usd_per_mtok"], "batch_discount": standard.batch_discount,
                                     "batch_discount_applied": True}
    turns = batch_turnarounds(report)
    out["batch"] = {
        "discount": standard.batch_discount,
        "price_usd_per_mtok": out.get("price_usd_per_mtok"),
        "standard_price_usd_per_mtok": {"input": standard.input, "output": standard.output},
        **turns,
        "note": ("every request travels in the provider's batch API at its batch price; requests whose prompt "
                 "depends on no answer go out in one batch, across all subjects and steps; an experiment whose "
                 "next prompt depends on the previous answer plays its sessions in parallel waves (wave k holds "
                 "step k of every session), one batch turnaround (up to 24 h) per step; scored steps are sampled "
                 "(batch APIs serve no echo scoring)"),
    }
    if turns["worst_case_wall_hours"] > 24:
        warning = (f"batch mode: {turns['batch_turnarounds']} batch turnarounds, up to "
                   f"{turns['worst_case_wall_hours']:g} h ({turns['worst_case_wall_hours'] / 24:.1f} days) if each "
                   f"takes the provider's {BATCH_WINDOW_HOURS} h window")
        out["warnings"] = [*out.get("warnings", []), warning]
    return out



def batch_turnarounds(report: Mapping[str, Any]) -> dict[str, Any]:
    """How many batches a run waits for, one after another, from its dry run's ``report``: one where
    every prompt depends on no answer (all sent at once: ``answer_independent``), else the longest
    session's requests (its steps are asked one after another, every session's step k in one batch);
    each re-ask (``--reask``) may add one per step.  ``worst_case_wall_hours``: each batch taking the
    provider's :data:`BATCH_WINDOW_HOURS` (a batch line that fails and is asked again adds one more)."""
    steps = int(report.get("longest_session_calls") or 0)
    first = 1 if report.get("answer_independent") else steps
    reasks = int(report.get("calls_with_all_reasks") or 0) // max(int(report.get("calls") or 1), 1) - 1
    worst = first + max(reasks, 0) * steps
    return {"batch_turnarounds": first, "batch_turnarounds_with_all_reasks": worst,
            "worst_case_wall_hours": worst * BATCH_WINDOW_HOURS,
            "turnarounds_note": ("one batch holds every request whose prompt depends on no answer"
                                 if report.get("answer_independent") else
                                 f"one batch per step of the longest session ({steps} requests), all sessions' "
                                 "step k in one batch") + (f"; re-asks may add one per step ({worst} in all)"
                                                             if worst > first else "")}
