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

import hashlib
import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from cogtestbed.errors import DataError, InputError
from cogtestbed.llm_adapters.clients.base import (
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoreResult,
    ScoringNotSupported,
    canonical_json,
)
from cogtestbed.llm_adapters.middleware.layers import CURRENT_SUBJECT as CURRENT_SUBJECT
from cogtestbed.llm_adapters.middleware.layers import Admission, Booked, Layer, RateLimited
from cogtestbed.llm_adapters.middleware.layers import SubjectTicket as SubjectTicket
from cogtestbed.llm_adapters.middleware.limits import Budget, RateLimiter
from cogtestbed.llm_adapters.middleware.retry import RETRY_LOG
from cogtestbed.redact import redact, redact_json

T = TypeVar("T")
CACHE_FORMAT = 1


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
            f"deleting that file (its responses are asked again) or give another with `cache`")

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


class Cached(Layer):
    """The response cache in front of ``inner``: a request answered before is answered from the
    :class:`ResponseCache` (no call, no cost, no wait); a new answer is redacted and stored as it
    arrives, with the retries it needed (:data:`~.retry.RETRY_LOG`) on the answer returned.

    A run directory's own answers are not cache hits: ``paid`` holds the keys its earlier invocations
    paid for (read from its ledger, :func:`~.limits.read_paid_keys`), and the first replay of each is
    a call of the run, as in the uninterrupted run (a resumed or monitored run's summary counts what
    was paid, not what was replayed); ``record_paid`` receives the key of each new answer before it is
    stored (the run's ledger)."""

    def __init__(self, inner: LLMClient, cache: ResponseCache, shared: bool = False) -> None:
        super().__init__(inner)
        #: ``shared``: keys without the endpoint (:func:`cache_key`): answers shared across servers.
        self.cache, self.shared, self.hits = cache, shared, 0
        self.paid: set[str] = set()
        self.record_paid: Callable[[str], None] | None = None

    def _replayed_own(self, key: str) -> bool:
        """Whether a stored answer is this run's own call: fetched ahead by its batch in this invocation, or paid
        by an earlier invocation of its run directory (each such key once)."""
        fresh: set[str] = getattr(self.base, "fetched_ahead", set())
        ahead, earlier = key in fresh, key in self.paid
        fresh.discard(key)
        self.paid.discard(key)
        if ahead:
            self._new_answer(key)  # a batch's answer, paid by this invocation
        return ahead or earlier

    def _new_answer(self, key: str) -> None:
        if self.record_paid is not None:
            self.record_paid(key)

    async def agenerate(self, request: GenerateRequest) -> Generation:
        self.check_images(request.n_images)
        key = cache_key(self.base, request, self.shared)
        stored = self.cache.get(key)
        if stored is not None:
            own = self._replayed_own(key)  # this run's call (fetched ahead, paid earlier), not a cache hit
            self.hits += not own
            try:
                return Generation.from_json(stored, cached=not own)
            except (KeyError, TypeError, ValueError) as exc:
                raise self.cache.corrupt(key, f"not a stored response: {type(exc).__name__}: {exc}") from None
        generation, retries = await retried(lambda: self.inner.agenerate(request))
        generation.text = redact(generation.text)  # what a server echoes is never stored or shown
        self._new_answer(key)
        self.cache.put(key, self.base, request, generation)
        generation.retries = retries
        return generation

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        key, request = score_key(self.base, context, continuations, raw, self.shared)
        stored = self.cache.get(key)
        if stored is not None:
            own = self._replayed_own(key)
            self.hits += not own
            try:
                return ScoreResult.from_json(stored, cached=not own)
            except (KeyError, TypeError, ValueError) as exc:
                raise self.cache.corrupt(key, f"not a stored score: {type(exc).__name__}: {exc}") from None
        result, retries = await retried(lambda: self.inner.ascore(context, continuations, raw))
        refuse_nonfinite(result)
        self._new_answer(key)
        self.cache.put_json(key, self.base, request, result.to_json())
        result.retries = retries
        return result


async def retried(call: Callable[[], Awaitable[T]]) -> tuple[T, list[str]]:
    """``call()``'s result and the retries it needed (:data:`~.retry.RETRY_LOG`)."""
    retries: list[str] = []
    log = RETRY_LOG.set(retries)
    try:
        return await call(), retries
    finally:
        RETRY_LOG.reset(log)


class CachedClient(Cached):
    """The client a run talks to, and the one place its wrappers are composed, outermost first: the
    cache (a cached answer costs nothing and waits for nothing), the subject's admission
    (:class:`~.layers.Admission`), each request's booking in ``budget`` (:class:`~.layers.Booked`),
    the rate limits (:class:`~.layers.RateLimited`), then ``inner``, the backend (:attr:`base`)."""

    def __init__(self, inner: LLMClient, cache: ResponseCache, budget: Budget | None = None,
                 limiter: RateLimiter | None = None, shared: bool = False) -> None:
        self.budget, self.limiter = budget or Budget(), limiter or RateLimiter()
        super().__init__(Admission(Booked(RateLimited(inner, self.limiter), self.budget), self.budget), cache, shared)


def refuse_nonfinite(result: ScoreResult) -> None:
    """ScoringNotSupported (this request's score refused, never cached) where a log-probability of
    ``result`` is NaN or infinite: a backend that returns one has no score to give."""
    import math

    for score in result.scores:
        values = [score.logprob, *score.token_logprobs]
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
            raise ScoringNotSupported(f"the backend gave continuation {score.continuation!r} a non-finite "
                                      f"log-probability ({score.logprob})")
