"""Retries for hosted backends: exponential backoff with jitter, honouring ``Retry-After``.

Retried: HTTP 429, 408 and 5xx (Anthropic's 529 "overloaded" included), timeouts and dropped
connections.  Not retried: other 4xx (a bad request or a bad key does not get better by waiting).
When the server sends ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``, the wait is
at least that long.  The SDKs' own retries are switched off so that this one policy applies.

Retries go on for a window (``--retry-for``, default :data:`DEFAULT_RETRY_WINDOW` seconds from the
first try): a retry whose wait would end after the window is not made.  Each retry is logged
(logger ``cogtestbed.llm_adapters.middleware.retry``, shown on stderr by the CLI) and appended to
:data:`RETRY_LOG` when a caller collects them (the response cache does, for ``calls.parquet``).
An error that is not retried, or the last one, is raised as one-line :class:`BackendError`.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base
from tenacity.wait import wait_random_exponential

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import DEFAULT_RETRY_WINDOW, BackendError
from cogtestbed.llm_adapters.clients.logprob_probe import says_logprobs_unsupported
from cogtestbed.redact import redact

T = TypeVar("T")
logger = logging.getLogger(__name__)

#: Wraps every HTTP attempt of the current call (the first try and each retry) when a caller sets
#: one: ``await gate(send)`` books the request before ``send()`` is awaited and settles it after
#: (the response cache's budget does: every HTTP request is booked, :mod:`cogtestbed.llm_adapters.middleware.cache`).
REQUEST_GATE: ContextVar[Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]] | None] = ContextVar(
    "cogtestbed_request_gate", default=None)

#: Where the retries of the current call are collected (one ``"<error>; waited <s>s"`` each), when
#: a caller sets a list.
RETRY_LOG: ContextVar[list[str] | None] = ContextVar("cogtestbed_retry_log", default=None)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry for ``window`` seconds (and at most ``attempts`` tries when given); waits grow as
    ``initial * 2**n`` (full jitter) up to ``max_wait``."""

    attempts: int | None = None
    initial: float = 1.0
    max_wait: float = 30.0
    #: Longest ``Retry-After`` honoured; a longer one fails the call instead of stalling the run.
    max_retry_after: float = 300.0
    window: float = DEFAULT_RETRY_WINDOW

    def __post_init__(self) -> None:
        if self.window < 0:
            raise InputError("the retry window must be >= 0 seconds")
        if self.attempts is not None and self.attempts < 1:
            raise InputError("retry attempts must be >= 1")


def status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait, from the error's HTTP response headers."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


def is_retryable(exc: BaseException, connection_errors: tuple[type[BaseException], ...]) -> bool:
    """429 / 408 / 5xx, or a connection error or timeout of the SDK (``connection_errors``); not an
    error saying log-probabilities are unsupported, whatever its status (llama.cpp answers a 500)."""
    code = status_code(exc)
    if code is not None:
        return (code in (408, 429) or code >= 500) and not says_logprobs_unsupported(describe_error(exc))
    return isinstance(exc, connection_errors)


def _body_message(exc: BaseException) -> str | None:
    """The message of the server's JSON error body (``{"error": {"message": ...}}``), if any."""
    body = getattr(exc, "body", None)
    if not isinstance(body, dict):
        return None
    inner = body.get("error", body)
    return inner.get("message") if isinstance(inner, dict) else str(inner)


def describe_error(exc: BaseException) -> str:
    """One line: the HTTP status and the server's message, or the connection error (redacted:
    :func:`cogtestbed.redact.redact`)."""
    code = status_code(exc)
    message = _body_message(exc) or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if code is None and cause is not None and str(cause):
        message = f"{message} ({str(cause).splitlines()[0]})"
    line = redact(" ".join(str(message).split()))
    return f"HTTP {code}: {line}" if code is not None else line


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    connection_errors: tuple[type[BaseException], ...],
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """Await ``fn()`` under ``policy`` (see module docstring); the last error is raised as
    :class:`BackendError` (its cause chained)."""
    backoff = wait_random_exponential(multiplier=policy.initial, max=policy.max_wait)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = backoff(state)
        asked = retry_after(exc) if exc is not None else None
        if asked is not None:
            if asked > policy.max_retry_after:
                raise exc  # type: ignore[misc]
            delay = max(delay, asked)
        return delay

    def before_sleep(state: RetryCallState) -> None:  # only retries that are really made
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is None:
            return
        delay = state.upcoming_sleep
        note = f"{describe_error(exc)}; waited {delay:.1f}s"
        logger.warning("retry %d: %s", state.attempt_number, note)
        collected = RETRY_LOG.get()
        if collected is not None:
            collected.append(note)
        if on_retry is not None:
            on_retry(exc, delay)

    stop: stop_base = stop_before_delay(policy.window)
    if policy.attempts is not None:
        stop = stop | stop_after_attempt(policy.attempts)
    retrying = AsyncRetrying(
        stop=stop,
        wait=wait,
        before_sleep=before_sleep,
        retry=retry_if_exception(lambda e: is_retryable(e, connection_errors)),
        reraise=True,
    )

    async def attempt() -> T:  # a coroutine function, so tenacity awaits each try
        gate = REQUEST_GATE.get()
        return await fn() if gate is None else cast(T, await gate(fn))

    try:
        result: T = await retrying(attempt)
    except BackendError:
        raise
    except Exception as exc:
        if status_code(exc) is None and not isinstance(exc, connection_errors):
            raise  # not an HTTP or connection failure: a bug, keep its traceback
        raise BackendError(describe_error(exc), status_code(exc)) from exc
    return result
