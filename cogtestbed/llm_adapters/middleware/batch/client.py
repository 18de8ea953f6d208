"""The hosted client whose generations travel in batches (:class:`BatchClient`: packing, waves, polling and
settling; see :mod:`cogtestbed.llm_adapters.middleware.batch`)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogtestbed.errors import DataError, InputError
from cogtestbed.llm_adapters.clients.backends import require_batch_api
from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoringNotSupported,
)
from cogtestbed.llm_adapters.middleware.batch.protocol import MAX_SUBMISSIONS, BatchStatus, LineOutcome, Provider
from cogtestbed.llm_adapters.middleware.batch.record import BATCH_FILE, BatchRecord, open_ledger_ids
from cogtestbed.llm_adapters.middleware.layers import Layer
from cogtestbed.llm_adapters.middleware.limits import Booking, Budget, BudgetExhausted

logger = logging.getLogger(__name__)


#: Seconds between two polls of a batch (``--poll-every``): providers finish most batches within
#: minutes to hours and ask clients not to poll in a tight loop.
DEFAULT_POLL_SECONDS = 30.0
#: Seconds without a new request after which a wave is submitted although some subject still
#: playing has not asked yet (it waits on something else, e.g. its budget admission).
DEFAULT_LINGER_SECONDS = 2.0


def provider_for(client: LLMClient) -> Provider:
    """The batch API of ``client``'s backend (:func:`~cogtestbed.llm_adapters.clients.backends.batch_api`;
    one line for a backend without one)."""
    provider: Provider = require_batch_api(client.backend, client.spec)(client)
    return provider


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


class BatchClient(Layer):
    """A hosted client whose generations travel in batches (see module docstring).

    It books its own requests (:attr:`books_itself`: the response cache leaves the booking to it),
    so that each line is booked when its batch is submitted and booked again when it is re-asked.
    Scoring needs an echo request per continuation that the batch APIs do not serve: scored steps
    are sampled (the run says so).
    """

    def __init__(self, inner: LLMClient, *, poll: float = DEFAULT_POLL_SECONDS,
                 linger: float = DEFAULT_LINGER_SECONDS) -> None:
        if not poll > 0 or not linger > 0:
            raise InputError(f"`poll_every` must be a positive number of seconds, got {poll:g}")
        super().__init__(inner)
        self.provider = provider_for(inner)
        self.can_score, self.http, self.books_itself = False, False, True
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

    # -- delegated (the rest: :class:`~cogtestbed.llm_adapters.middleware.layers.Layer`) ----------------------
    @property
    def base(self) -> LLMClient:
        """This client, the backend of a run's wrappers (what it wraps is the provider's)."""
        return self

    @property
    def system_fingerprints(self) -> set[str]:
        return set(getattr(self.inner, "system_fingerprints", ()))

    @property
    def token_source(self) -> str | None:
        return getattr(self.inner, "token_source", None)

    async def ascore(self, context: Prompt, continuations: Any, raw: bool = False) -> Any:
        raise ScoringNotSupported("batch mode sends no echo + logprobs scoring requests")

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
        wave = self._wave_ahead(requests)
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

    def _wave_ahead(self, requests: list[tuple[int, GenerateRequest]]) -> dict[str, _Pending]:
        """The lines :meth:`fetch_ahead` sends, by cache key: neither cached nor repeated."""
        from cogtestbed.llm_adapters.middleware.cache import cache_key

        assert self.attached is not None
        loop = asyncio.get_running_loop()
        wave: dict[str, _Pending] = {}
        for subject, request in requests:
            key = cache_key(self, request, self.attached.shared)
            if key in wave or self.attached.cache.get(key) is not None:
                continue
            wave[key] = _Pending(request, key, self.inner.prompt_token_bound(request.prompt), subject,
                                 loop.create_future())
        return wave

    # -- generating ------------------------------------------------------------------------------
    async def agenerate(self, request: GenerateRequest) -> Generation:
        """Queue ``request`` for the next wave; its answer when that batch ends."""
        from cogtestbed.llm_adapters.middleware.cache import cache_key
        from cogtestbed.llm_adapters.middleware.layers import CURRENT_SUBJECT

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
        record.write({"event": "submit", "wave": number, "tag": tag,
                      "lines": [_submitted(cid, p) for cid, p in ids.items()]})
        self.stats["waves"] += 1
        self.stats["lines"] += len(lines)
        for p in booked:
            p.in_flight = True
        try:
            batch_id = await self.provider.submit(lines, tag)
        except InputError:  # no batch API: nothing was created, nothing billed
            self._unbook(booked)
            record.write({"event": "done", "wave": number, "created": False})
            raise
        record.write({"event": "created", "wave": number, "batch_id": batch_id})
        outcomes = await self._collect(batch_id, {cid: p.request for cid, p in ids.items()})
        for cid, p in ids.items():
            self._settle(p, outcomes[cid])
        record.write({"event": "done", "wave": number})

    def _unbook(self, booked: list[_Pending]) -> None:
        """Settle unsent lines at nothing: their batch was never created."""
        assert self.attached is not None
        for p in booked:
            self.attached.budget.settle(p.booking, 0, 0, succeeded=False)  # type: ignore[arg-type]
            p.booking, p.in_flight = None, False

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
        out = {**found, **_missing_outcomes(batch_id, status, [cid for cid in requests if cid not in found],
                                            len(requests))}
        self.stats["unknown_usage"] += sum(1 for o in out.values() if o.unknown_usage) + _warn_answers(batch_id, out)
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
                                             "`resume` asks it again"))
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
                "`resume` asks it again"))
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
            gen, usage = outcome.generation, self._recovered_usage(line, outcome)
            if gen is not None:
                self.attached.cache.put_json(line["key"], self, line["request"], gen.to_json())
                self.stats["recovered_answers"] += 1
            if line.get("ledger_id") in open_ids:
                budget.settle_orphan(str(line["ledger_id"]), float(line.get("worst_usd") or 0.0), *usage,
                                     billed=gen is not None or outcome.billed,
                                     reasoning_tokens=None if gen is None else gen.reasoning_tokens)

    def _recovered_usage(self, line: Mapping[str, Any], outcome: LineOutcome) -> tuple[int, int]:
        """The tokens a recovered line settles: its answer's usage, its worst case where that is unknown, else 0."""
        worst = self._worst_tokens(line)
        if outcome.generation is not None:
            return _usage(outcome.generation, *worst)
        return worst if outcome.unknown_usage else (0, 0)

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


def _missing_outcomes(batch_id: str, status: BatchStatus, missing: list[str], n_requests: int
                      ) -> dict[str, LineOutcome]:
    """The outcomes of the requests without a result line: never run where the batch ``failed``, else billed
    at their worst case; one warning line."""
    if status.state == "failed":
        logger.warning("%s", f"batch {batch_id} failed ({status.reason}): its {len(missing)} requests without "
                             "a result are asked again (a failed batch runs nothing)")
        return {cid: LineOutcome(retry=f"batch failed: {status.reason}") for cid in missing}
    if missing:
        logger.warning("%s", f"batch {batch_id} ({status.state}): {len(missing)} of {n_requests} requests have "
                             "no result line: each is booked at its worst case and asked again")
    return {cid: LineOutcome(retry="no result line for this request", billed=True, unknown_usage=True)
            for cid in missing}


def _warn_answers(batch_id: str, out: Mapping[str, LineOutcome]) -> int:
    """One warning line for the answers that report no usage (their number, returned) and one per conflict."""
    no_usage = [cid for cid, o in out.items() if o.generation is not None and (
        o.generation.prompt_tokens is None or o.generation.completion_tokens is None)]
    if no_usage:
        logger.warning("%s", f"batch {batch_id}: {len(no_usage)} answers report no usage: each is booked at "
                             "its worst case")
    for o in out.values():
        if o.conflict:
            logger.warning("%s", f"batch {batch_id}: {o.conflict}: refused (booked at its worst case)")
    return len(no_usage)


def _submitted(custom_id: str, p: _Pending) -> dict[str, Any]:
    """A submitted line as the wave's record keeps it."""
    return {"custom_id": custom_id, "key": p.key, "request": p.request.to_json(), "bound": p.bound,
            "ledger_id": p.booking.ledger_id if p.booking else None,
            "worst_usd": p.booking.worst.usd if p.booking else 0.0}


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


