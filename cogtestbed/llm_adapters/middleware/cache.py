"""The response cache (SQLite in WAL mode) and :class:`CachedClient`, the client a run talks to.

A response is stored under ``sha256`` of the canonical JSON of (backend, model, the model's
fingerprint, the endpoint, the full request: prompt, max_tokens, temperature, stop, seed,
top_logprobs).  The endpoint (:meth:`LLMClient.endpoint_identity`) is the server's address and,
where the server lists it, the served model's identity: two servers that serve different models
under one name (a restarted server, llama.cpp / vLLM / Ollama aliases) never share answers.  A
cache shared across endpoints is asked for explicitly (``shared=True``, ``run --share-cache``):
then the key is the model's name alone, as for a hosted model that is the same behind any
address.  No credential is ever part of a key.  Every response is committed as soon as it arrives; WAL makes each
commit atomic, so a process killed at any point leaves every earlier response readable and no
half-written one.  Replaying a run against the cache reproduces its trial table exactly, which
is how ``--resume`` works.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cogtestbed.errors import DataError, InputError
from cogtestbed.llm_adapters.clients.base import (
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoreResult,
    ScoringNotSupported,
    canonical_json,
    reasoning_tokens,
)
from cogtestbed.llm_adapters.middleware.limits import Budget, Need, RateLimiter
from cogtestbed.llm_adapters.middleware.retry import REQUEST_GATE, RETRY_LOG, status_code
from cogtestbed.redact import redact, redact_json

CACHE_FORMAT = 1


@dataclass
class SubjectTicket:
    """The subject whose calls the current task makes: admitted to the budget, for its
    ``remaining()`` worst case, at its first call that is not in the cache."""

    index: int
    remaining: Callable[[], Need]
    admitted: bool = False


#: The subject of the running task (set by the runner; None outside a run).
CURRENT_SUBJECT: ContextVar[SubjectTicket | None] = ContextVar("cogtestbed_subject", default=None)


def _key(client: LLMClient, request: dict[str, Any], shared: bool) -> str:
    payload: dict[str, Any] = {"format": CACHE_FORMAT, "backend": client.backend, "model": client.model,
                               "fingerprint": client.fingerprint, "request": request}
    endpoint = None if shared else client.endpoint_identity()
    if endpoint is not None:  # a local model has none: its keys are what they always were
        payload["endpoint"] = endpoint
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def cache_key(client: LLMClient, request: GenerateRequest, shared: bool = False) -> str:
    """The key of a generation: backend, model, fingerprint, endpoint (unless ``shared``), request."""
    return _key(client, request.to_json(), shared)


def score_key(client: LLMClient, context: Prompt, continuations: Sequence[str],
              raw: bool, shared: bool = False) -> tuple[str, dict[str, Any]]:
    """(cache key, request JSON) of a score call: backend, model, fingerprint, endpoint (unless
    ``shared``), context, continuations and the raw flag."""
    request = {"score": {"context": context if isinstance(context, str) else [dict(m) for m in context],
                         "continuations": list(continuations), "raw": raw}}
    return _key(client, request, shared), request


class CacheCorrupt(DataError):
    """A row of the response cache cannot be read back (one line naming the file and the remedy)."""


class ResponseCache:
    """Key → response JSON in one SQLite file (WAL; one commit per response).

    A write the disk refuses (full, quota, I/O) is :class:`~cogtestbed.outputs.WriteFailed` naming
    the cache file: every response stored before it stays (one commit each), so the same command
    run again answers them from the cache.  A row that cannot be read back is
    :class:`CacheCorrupt`, naming the file and how to rebuild it.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise InputError(f"the response cache {self.path} is a directory; give the path of a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0,
                                      check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, backend TEXT, "
                "model TEXT, request TEXT, response TEXT, created TEXT)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the response cache {self.path}: {exc}") from exc

    def corrupt(self, key: str, why: str) -> CacheCorrupt:
        """The error of an unreadable row ``key`` (``why``): names the file and how to rebuild it."""
        return CacheCorrupt(
            f"the response cache {self.path} has an unreadable row (key {key[:12]}…: {why}); rebuild it by "
            f"deleting that file (its responses are asked again) or give another with --cache")

    def _execute(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        """``db.execute``; a disk that refuses the write is WriteFailed naming the cache file."""
        try:
            return self.db.execute(sql, args)
        except sqlite3.Error as exc:
            from cogtestbed.outputs import write_failure

            failed = write_failure(exc, f"the response cache {self.path}")
            if failed is None:
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
                    raise self.corrupt("-", str(exc)) from exc
                raise
            raise failed from exc

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError) as exc:
            raise self.corrupt(key, f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise self.corrupt(key, f"a JSON {type(value).__name__}, not an object")
        return value

    def put(self, key: str, client: LLMClient, request: GenerateRequest,
            generation: Generation) -> None:
        """Store ``generation`` under ``key``, every string of it redacted (:func:`cogtestbed.redact.redact_json`)."""
        self._execute(
            "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
            (key, client.backend, client.model, canonical_json(request.to_json()),
             canonical_json(redact_json(generation.to_json())), datetime.now(UTC).isoformat(timespec="seconds")),
        )

    def put_json(self, key: str, client: LLMClient, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Store any JSON response (score calls) under ``key``, every string of it redacted."""
        self._execute(
            "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
            (key, client.backend, client.model, canonical_json(request), canonical_json(redact_json(response)),
             datetime.now(UTC).isoformat(timespec="seconds")),
        )

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.db.close()


class CachedClient(LLMClient):
    """Wraps a backend with the cache, the budget and the rate limits.

    A cached response costs nothing and waits for nothing; a new call first admits its subject
    (:data:`CURRENT_SUBJECT`) to the :class:`Budget` if it is not yet admitted, books its
    worst-case cost (which raises :class:`BudgetExhausted` to stop the run), then waits for the
    :class:`RateLimiter`, then calls the backend and stores the response.
    """

    def __init__(self, inner: LLMClient, cache: ResponseCache, budget: Budget | None = None,
                 limiter: RateLimiter | None = None, shared: bool = False) -> None:
        self.inner, self.cache = inner, cache
        #: Keys without the endpoint (:func:`cache_key`): answers shared across servers.
        self.shared = shared
        self.budget = budget or Budget()
        self.limiter = limiter or RateLimiter()
        self.backend, self.model = inner.backend, inner.model
        self.chat, self.can_score, self.vision = inner.chat, inner.can_score, inner.vision
        self.chars_per_token = inner.chars_per_token
        self.hits = 0

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def endpoint_identity(self) -> dict[str, Any] | None:
        return self.inner.endpoint_identity()

    async def agenerate(self, request: GenerateRequest) -> Generation:
        self.inner.check_images(request.n_images)
        key = cache_key(self.inner, request, self.shared)
        stored = self.cache.get(key)
        if stored is not None:
            # an answer this run's batch fetched ahead (batch mode) is a call of this run, not a cache hit
            fresh: set[str] = getattr(self.inner, "fetched_ahead", set())
            ahead = key in fresh
            if ahead:
                fresh.discard(key)
            else:
                self.hits += 1
            try:
                return Generation.from_json(stored, cached=not ahead)
            except (KeyError, TypeError, ValueError) as exc:
                raise self.cache.corrupt(key, f"not a stored response: {type(exc).__name__}: {exc}") from None
        bound = self.inner.prompt_token_bound(request.prompt)
        subject = await self._admitted()
        retries: list[str] = []
        log = RETRY_LOG.set(retries)
        try:
            if self.inner.http:  # each HTTP request (first try and every retry) is booked by the gate
                with self._gate(bound, request.max_tokens, subject):
                    generation = await self.inner.agenerate(request)
            elif getattr(self.inner, "books_itself", False):  # batch mode books each line it submits
                generation = await self.inner.agenerate(request)
            else:
                generation = await self._one_call(lambda: self.inner.agenerate(request), bound,
                                                  request.max_tokens, subject)
            generation.text = redact(generation.text)  # what a server echoes is never stored or shown
            self.cache.put(key, self.inner, request, generation)
            generation.retries = retries
        finally:
            RETRY_LOG.reset(log)
        return generation

    async def _one_call(self, call: Callable[[], Any], bound: int, max_tokens: int, subject: int | None) -> Any:
        """A backend call that is not an HTTP request (a local model): one booking, settled with
        the usage it reports (its worst case where it reports none)."""
        booking = self.budget.reserve(bound, max_tokens, subject)
        ok, usage, hidden = False, (bound, max_tokens), None
        try:
            await self.limiter.acquire(bound + max_tokens)
            result = await call()
            usage, hidden = _reported_usage(result, bound, max_tokens), reported_reasoning(result)
            ok = True
        finally:
            self.budget.settle(booking, *usage, succeeded=ok, reasoning_tokens=hidden)
        return result

    @contextlib.contextmanager
    def _gate(self, bound: int, max_tokens: int, subject: int | None) -> Iterator[None]:
        """Book every HTTP request of the calls made inside (:data:`REQUEST_GATE`): its worst case
        (``bound`` prompt tokens, ``max_tokens`` out) before it is sent, waiting for the rate limits;
        settled with the usage the server reports, and at its worst case when it fails (a request
        that timed out or lost its connection may still have been billed; one the server answered
        with an error status is a call that bills nothing)."""
        async def gate(send: Callable[[], Awaitable[Any]]) -> Any:
            booking = self.budget.reserve(bound, max_tokens, subject)
            usage, counted, hidden = (bound, max_tokens), True, None
            try:
                await self.limiter.acquire(bound + max_tokens)
                response = await send()
                usage, hidden = _reported_usage(response, bound, max_tokens), reported_reasoning(response)
                return response
            except Exception as exc:
                status = status_code(exc)
                if status is not None:  # the server answered with an error: nothing billed
                    usage = (0, 0)
                    # a request refused outright (a bad request, key or model) ends the call: not a call made
                    counted = status in (408, 429) or status >= 500
                raise
            finally:
                self.budget.settle(booking, *usage, succeeded=counted, reasoning_tokens=hidden)

        token = REQUEST_GATE.set(gate)
        try:
            yield
        finally:
            REQUEST_GATE.reset(token)

    async def _admitted(self) -> int | None:
        """Admit the current subject to a limited budget before its first new call; its index."""
        ticket = CURRENT_SUBJECT.get()
        if ticket is None:
            return None
        if self.budget.limited and not ticket.admitted:
            await self.budget.admit(ticket.index, ticket.remaining())
            ticket.admitted = True
        return ticket.index

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """A score through the cache and the budget: one call per HTTP request the backend makes
        (:meth:`LLMClient.score_requests`: one per continuation, each at most the context and the
        longest continuation in, one token out), retries included."""
        key, request = score_key(self.inner, context, continuations, raw, self.shared)
        stored = self.cache.get(key)
        if stored is not None:
            self.hits += 1
            try:
                return ScoreResult.from_json(stored, cached=True)
            except (KeyError, TypeError, ValueError) as exc:
                raise self.cache.corrupt(key, f"not a stored score: {type(exc).__name__}: {exc}") from None
        subject = await self._admitted()
        retries: list[str] = []
        log = RETRY_LOG.set(retries)
        try:
            if self.inner.http:
                with self._gate(self.score_request_bound(context, continuations), 1, subject):
                    result = await self.inner.ascore(context, continuations, raw)
            else:
                estimate = self.score_token_bound(context, continuations)
                result = await self._one_call(lambda: self.inner.ascore(context, continuations, raw), estimate,
                                              len(continuations), subject)
            refuse_nonfinite(result)
            self.cache.put_json(key, self.inner, request, result.to_json())
            result.retries = retries
        finally:
            RETRY_LOG.reset(log)
        return result

    def score_request_bound(self, context: Prompt, continuations: Sequence[str]) -> int:
        """Prompt tokens of one scoring request, bounded: the context and the longest continuation."""
        longest = max((len(c.encode()) for c in continuations), default=0)
        return self.inner.prompt_token_bound(context) + longest

    def score_requests(self, n_continuations: int) -> int:
        return self.inner.score_requests(n_continuations)

    def score_token_bound(self, context: Prompt, continuations: Sequence[str]) -> int:
        """Prompt tokens of a score call, bounded: context and continuation once per continuation
        (a server scores each continuation with its own request)."""
        longest = max((len(c.encode()) for c in continuations), default=0)
        return (self.inner.prompt_token_bound(context) + longest) * len(continuations)

    def prompt_token_bound(self, prompt: Prompt) -> int:
        return self.inner.prompt_token_bound(prompt)

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return self.inner.count_tokens(text)

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        return self.inner.billed_prompt_tokens(prompt)

    async def aclose(self) -> None:
        await self.inner.aclose()


def refuse_nonfinite(result: ScoreResult) -> None:
    """ScoringNotSupported (this request's score refused, never cached) where a log-probability of
    ``result`` is NaN or infinite: a backend that returns one has no score to give."""
    import math

    for score in result.scores:
        values = [score.logprob, *score.token_logprobs]
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
            raise ScoringNotSupported(f"the backend gave continuation {score.continuation!r} a non-finite "
                                      f"log-probability ({score.logprob})")


def _reported_usage(response: Any, bound: int, max_tokens: int) -> tuple[int, int]:
    """(prompt, completion) tokens a response reports — a :class:`Generation`, or an SDK response's
    ``usage`` (OpenAI's prompt/completion tokens, Anthropic's input/output tokens) — each at its
    worst case (``bound``, ``max_tokens``) where the response reports none."""
    usage = getattr(response, "usage", response)

    def read(*names: str) -> int | None:
        for name in names:
            value = getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
        return None  # none, or not a token count (negative, NaN): the worst case, never a credit

    prompt = read("prompt_tokens", "input_tokens")
    completion = read("completion_tokens", "output_tokens")
    return (bound if prompt is None else prompt, max_tokens if completion is None else completion)


def reported_reasoning(response: Any) -> int | None:
    """The hidden reasoning tokens a response reports (a :class:`Generation`'s ``reasoning_tokens``, or an
    OpenAI SDK response's ``usage.completion_tokens_details.reasoning_tokens``); None where it reports none
    or a value that is not a count."""
    value = response.reasoning_tokens if isinstance(response, Generation) else reasoning_tokens(
        getattr(response, "usage", None))
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
