"""The wrappers between a run and its backend, one concern each: :class:`Layer` (forward
everything to the wrapped client), :class:`Admission` (a subject's worst case held before its first new
call), :class:`Booked` (each request booked in the :class:`~.limits.Budget` and settled at the usage
it reports) and :class:`RateLimited` (each request waits for the :class:`~.limits.RateLimiter`).  The
response cache is the outermost one (:class:`~.cache.Cached`); :class:`~.cache.CachedClient` composes them.

A wrapper that acts on requests acts on every HTTP request of a hosted backend (the first try and
each retry, through :data:`~.retry.REQUEST_GATE`, inside the gates of the wrappers above it), on the
whole call of a local one, and never on a backend that books its own requests (batch mode).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from cogtestbed.llm_adapters.clients.base import (
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoreResult,
    reasoning_tokens,
)
from cogtestbed.llm_adapters.middleware.limits import Budget, Need, RateLimiter
from cogtestbed.llm_adapters.middleware.retry import REQUEST_GATE, status_code

T = TypeVar("T")
Send = Callable[[], Awaitable[Any]]


@dataclass
class SubjectTicket:
    """The subject whose calls the current task makes: admitted to the budget, for its
    ``remaining()`` worst case, at its first call that is not in the cache."""

    index: int
    remaining: Callable[[], Need]
    admitted: bool = False


#: The subject of the running task (set by the runner; None outside a run).
CURRENT_SUBJECT: ContextVar[SubjectTicket | None] = ContextVar("cogtestbed_subject", default=None)


def current_subject() -> int | None:
    """The index of the running task's subject (None outside a run)."""
    ticket = CURRENT_SUBJECT.get()
    return None if ticket is None else ticket.index


class Layer(LLMClient):
    """A client wrapping ``inner``: everything it does not override is ``inner``'s."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.backend, self.model, self.http = inner.backend, inner.model, inner.http
        self.chat, self.can_score, self.vision = inner.chat, inner.can_score, inner.vision
        self.chars_per_token = inner.chars_per_token
        #: Batch mode books each line it submits: the wrappers that book requests leave it alone.
        self.books_itself: bool = getattr(inner, "books_itself", False)

    @property
    def base(self) -> LLMClient:
        """The backend at the bottom of the stack."""
        inner = self.inner
        return inner.base if isinstance(inner, Layer) else inner

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def endpoint_identity(self) -> dict[str, Any] | None:
        return self.inner.endpoint_identity()

    def check_images(self, n_images: int) -> None:
        self.inner.check_images(n_images)

    def check_ready(self) -> None:
        self.inner.check_ready()

    async def apreflight(self) -> None:
        await self.inner.apreflight()

    async def agenerate(self, request: GenerateRequest) -> Generation:
        return await self.inner.agenerate(request)

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        return await self.inner.ascore(context, continuations, raw)

    def score_requests(self, n_continuations: int) -> int:
        return self.inner.score_requests(n_continuations)

    def prompt_token_bound(self, prompt: Prompt) -> int:
        return self.inner.prompt_token_bound(prompt)

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return self.inner.count_tokens(text)

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        return self.inner.billed_prompt_tokens(prompt)

    async def aclose(self) -> None:
        await self.inner.aclose()


class RequestLayer(Layer):
    """A wrapper acting on each request of a call (see module docstring): :meth:`each` around
    ``send``, given the request's worst case (``bound`` prompt tokens, ``max_tokens`` out)."""

    async def each(self, send: Send, bound: int, max_tokens: int) -> Any:
        raise NotImplementedError

    async def around(self, call: Callable[[], Awaitable[T]], bound: int, max_tokens: int) -> T:
        """``call()`` with :meth:`each` around every request it makes."""
        if self.books_itself:
            return await call()
        if not self.http:
            result: T = await self.each(call, bound, max_tokens)
            return result
        outer = REQUEST_GATE.get()

        async def gate(send: Send) -> Any:
            mine: Send = lambda: self.each(send, bound, max_tokens)  # noqa: E731
            return await (mine() if outer is None else outer(mine))

        token = REQUEST_GATE.set(gate)
        try:
            return await call()
        finally:
            REQUEST_GATE.reset(token)

    async def agenerate(self, request: GenerateRequest) -> Generation:
        bound = self.inner.prompt_token_bound(request.prompt)
        return await self.around(lambda: self.inner.agenerate(request), bound, request.max_tokens)

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """One request per continuation over HTTP (:meth:`LLMClient.score_requests`), each at most
        the context and the longest continuation in and one token out; a local model's call at most
        that once per continuation in and one token per continuation out."""
        longest = max((len(c.encode()) for c in continuations), default=0)
        bound = self.inner.prompt_token_bound(context) + longest
        worst = (bound, 1) if self.http else (bound * len(continuations), len(continuations))
        return await self.around(lambda: self.inner.ascore(context, continuations, raw), *worst)


class Admission(Layer):
    """Admit the current subject (:data:`CURRENT_SUBJECT`) to a limited :class:`Budget` for its whole
    remaining worst case before its first call reaches the backend (:meth:`Budget.admit`)."""

    def __init__(self, inner: LLMClient, budget: Budget) -> None:
        super().__init__(inner)
        self.budget = budget

    async def admit(self) -> None:
        ticket = CURRENT_SUBJECT.get()
        if ticket is not None and self.budget.limited and not ticket.admitted:
            await self.budget.admit(ticket.index, ticket.remaining())
            ticket.admitted = True

    async def agenerate(self, request: GenerateRequest) -> Generation:
        await self.admit()
        return await self.inner.agenerate(request)

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        await self.admit()
        return await self.inner.ascore(context, continuations, raw)


class Booked(RequestLayer):
    """Book each request's worst case in the :class:`Budget` before it is sent (which raises
    :class:`~.limits.BudgetExhausted` to stop the run) and settle it with the usage it reports (its
    worst case where it reports none).  An HTTP request that fails is settled at its worst case (one
    that timed out or lost its connection may still have been billed) unless the server answered
    with an error status: a 429, a 503 or a refused request bills nothing and is no call, so the
    retries of an endpoint that fails every other request do not use up ``max_calls``; a local
    call that fails bills nothing."""

    def __init__(self, inner: LLMClient, budget: Budget) -> None:
        super().__init__(inner)
        self.budget = budget

    async def each(self, send: Send, bound: int, max_tokens: int) -> Any:
        booking = self.budget.reserve(bound, max_tokens, current_subject())
        usage, counted, hidden = (bound, max_tokens), self.http, None
        try:
            response = await send()
            usage, hidden, counted = reported_usage(response, bound, max_tokens), reported_reasoning(response), True
            return response
        except Exception as exc:
            status = status_code(exc) if self.http else None
            if status is not None:  # the server answered with an error: nothing billed, no call
                usage, counted = (0, 0), False
            raise
        finally:
            self.budget.settle(booking, *usage, succeeded=counted, reasoning_tokens=hidden)


class RateLimited(RequestLayer):
    """Wait for the :class:`RateLimiter` before each request (one request of its worst-case tokens)."""

    def __init__(self, inner: LLMClient, limiter: RateLimiter) -> None:
        super().__init__(inner)
        self.limiter = limiter

    async def each(self, send: Send, bound: int, max_tokens: int) -> Any:
        await self.limiter.acquire(bound + max_tokens)
        return await send()


def reported_usage(response: Any, bound: int, max_tokens: int) -> tuple[int, int]:
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
