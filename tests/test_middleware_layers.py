"""The LLM middleware's wrappers, one concern each (issue 73): each alone, then their order in the stack."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("tenacity")
pytest.importorskip("aiolimiter")

from cogtestbed.llm_adapters.clients.base import BackendError, GenerateRequest, Generation, LLMClient  # noqa: E402
from cogtestbed.llm_adapters.middleware.cache import Cached, CachedClient, ResponseCache  # noqa: E402
from cogtestbed.llm_adapters.middleware.layers import (  # noqa: E402
    CURRENT_SUBJECT,
    Admission,
    Booked,
    RateLimited,
    SubjectTicket,
)
from cogtestbed.llm_adapters.middleware.limits import Budget, BudgetExhausted, Need, RateLimiter  # noqa: E402
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy, call_with_retries  # noqa: E402

REQUEST = GenerateRequest("Which machine?", max_tokens=5)


class Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status_code = status


class Fake(LLMClient):
    """Answers "A" (3 prompt tokens, 1 out) after failing with the given statuses, one per request."""

    backend, model = "fake", "m"

    def __init__(self, events: list[str], http: bool = False, fail: tuple[int, ...] = ()) -> None:
        self.events, self.http, self.fail = events, http, list(fail)

    async def agenerate(self, request: GenerateRequest) -> Generation:
        async def send() -> Generation:
            self.events.append("send")
            if self.fail:
                raise Refused(self.fail.pop(0))
            return Generation(text="A", prompt_tokens=3, completion_tokens=1)

        if not self.http:
            return await send()
        return await call_with_retries(send, RetryPolicy(attempts=3, initial=0.001, max_wait=0.001), ())


class Recording(RateLimiter):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def acquire(self, tokens: int) -> None:
        self.events.append(f"acquire {tokens}")


class LoggedBudget(Budget):
    def __init__(self, events: list[str], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.events = events

    def reserve(self, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        self.events.append("reserve")
        return super().reserve(*args, **kw)  # type: ignore[arg-type]

    def settle(self, booking, prompt_tokens, completion_tokens, succeeded, reasoning_tokens=None):  # type: ignore[no-untyped-def]
        self.events.append(f"settle {prompt_tokens} {completion_tokens} {succeeded}")
        super().settle(booking, prompt_tokens, completion_tokens, succeeded, reasoning_tokens)


def test_the_cache_answers_a_repeat_without_a_call(tmp_path: Path) -> None:
    events: list[str] = []
    cached = Cached(Fake(events), ResponseCache(tmp_path / "c.sqlite"))
    first, again = asyncio.run(cached.agenerate(REQUEST)), asyncio.run(cached.agenerate(REQUEST))
    assert events == ["send"] and cached.hits == 1
    assert (first.cached, again.cached, again.text) == (False, True, "A")


def test_admission_holds_a_subjects_worst_case_once_before_its_first_call() -> None:
    events: list[str] = []
    asked: list[int] = []

    def remaining() -> Need:
        asked.append(1)
        return Need(calls=4)

    async def play(client: Admission, ticket: SubjectTicket) -> None:
        CURRENT_SUBJECT.set(ticket)
        await client.agenerate(REQUEST)
        await client.agenerate(REQUEST)

    budget = Budget(max_calls=10)
    ticket = SubjectTicket(0, remaining)
    asyncio.run(play(Admission(Fake(events), budget), ticket))
    assert budget.held == {0: Need(4.0, 0.0)} and ticket.admitted and len(asked) == 1 and events == ["send"] * 2
    with pytest.raises(BudgetExhausted, match="subject 0 needs up to 4 calls"):  # never fits: no call made
        asyncio.run(play(Admission(Fake(events := []), Budget(max_calls=3)), SubjectTicket(0, remaining)))
    assert events == []
    unlimited = Budget()
    asyncio.run(play(Admission(Fake([]), unlimited), SubjectTicket(0, remaining)))
    assert unlimited.held == {}  # an unlimited budget admits nobody


def test_booked_settles_each_call_at_its_reported_usage() -> None:
    budget = Budget(max_calls=5)
    asyncio.run(Booked(Fake([]), budget).agenerate(REQUEST))
    assert (budget.calls, budget.prompt_tokens, budget.completion_tokens, budget.booked) == (1, 3, 1, Need())
    with pytest.raises(Refused):  # a local call that fails bills nothing
        asyncio.run(Booked(Fake([], fail=(500,)), budget).agenerate(REQUEST))
    assert (budget.calls, budget.booked) == (1, Need())
    # over HTTP every request is booked, but one answered with an error status (a 500, a 429, a 503 retried;
    # a refused 400) bills nothing and is no call
    asyncio.run(Booked(Fake([], http=True, fail=(500,)), budget).agenerate(REQUEST))
    assert (budget.calls, budget.prompt_tokens) == (2, 6)
    with pytest.raises(BackendError):
        asyncio.run(Booked(Fake([], http=True, fail=(400,)), budget).agenerate(REQUEST))
    assert (budget.calls, budget.booked) == (2, Need())


def test_unbilled_retries_of_an_endpoint_failing_every_other_request_use_no_call() -> None:
    """A budget of exactly the calls needed is enough where every other request is answered 429 or 503 (before:
    each retry was a call, and such a run stopped at half its subjects)."""
    budget = Budget(max_calls=4)
    for status in (429, 503, 429, 503):
        asyncio.run(Booked(Fake([], http=True, fail=(status,)), budget).agenerate(REQUEST))
    assert (budget.calls, budget.spent.calls, budget.stopped) == (4, 4, None)
    assert budget.free() == Need(0.0, float("inf"))


def test_a_call_in_flight_when_the_run_was_killed_costs_its_worst_case_but_is_no_call() -> None:
    """After a kill -9 with one call in flight, the resumed run asks that call again: its ledger booking is charged
    at its worst case in USD (the provider may have billed it) but is no call, so a budget of exactly the run's
    calls still finishes it (before: the orphan was one call and the last subject was refused)."""
    from cogtestbed.llm_adapters.middleware.limits import read_ledger

    ledger = [json.dumps({"id": "a-0", "reserve_usd": 0.5}), json.dumps({
        "id": "a-0", "settle_usd": 0.25, "calls": 1, "prompt_tokens": 3, "completion_tokens": 1, "answered": 1}),
        json.dumps({"id": "a-1", "reserve_usd": 0.5})]  # killed with a-1 in flight
    spend = read_ledger(ledger)
    assert (spend.calls, spend.cost, spend.answered) == (1, 0.75, 2)
    budget = Budget(max_calls=2, spent=spend)
    assert budget.free().calls == 1  # the repeated call fits


def test_rate_limited_waits_before_every_request() -> None:
    events: list[str] = []
    client = Fake(events, http=True, fail=(503,))
    worst = client.prompt_token_bound(REQUEST.prompt) + REQUEST.max_tokens
    asyncio.run(RateLimited(client, Recording(events)).agenerate(REQUEST))
    assert events == [f"acquire {worst}", "send"] * 2


def test_a_request_larger_than_the_token_bucket_still_goes() -> None:
    """A request of 1,000 tokens against a bucket of 1 takes the whole bucket: aiolimiter refuses an amount above
    its capacity (ValueError), so asking for the request's own 1,000 would never go; no time is measured."""
    limiter = RateLimiter(tokens_per_min=60)  # a bucket of 1 token a second
    assert limiter._tokens is not None and limiter._tokens.max_rate == 1.0
    with pytest.raises(ValueError):
        asyncio.run(limiter._tokens.acquire(1000))
    asyncio.run(limiter.acquire(1000))  # goes


def test_the_rate_limits_are_aiolimiters_leaky_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 73, item 4: the token bucket is aiolimiter's (one second's worth each), not a hand-written one."""
    from aiolimiter import AsyncLimiter

    seen: list[tuple[float, float, float]] = []

    async def acquire(self: AsyncLimiter, amount: float = 1) -> None:
        seen.append((self.max_rate, self.time_period, amount))

    monkeypatch.setattr(AsyncLimiter, "acquire", acquire)
    asyncio.run(RateLimiter(requests_per_min=120, tokens_per_min=6000).acquire(250))
    assert seen == [(2.0, 1.0, 1), (100.0, 1.0, 100)]  # a request above the bucket takes the whole bucket

def test_the_stack_books_then_waits_then_sends_each_request_and_caches_the_answer(tmp_path: Path) -> None:
    events: list[str] = []
    client = CachedClient(Fake(events, http=True, fail=(500,)), ResponseCache(tmp_path / "c.sqlite"),
                          LoggedBudget(events), Recording(events))
    worst = client.prompt_token_bound(REQUEST.prompt) + REQUEST.max_tokens
    generation = asyncio.run(client.agenerate(REQUEST))
    once = ["reserve", f"acquire {worst}", "send"]
    assert events == [*once, "settle 0 0 False", *once, "settle 3 1 True"]  # the 500 billed nothing: no call
    assert len(generation.retries) == 1 and client.budget.calls == 1
    asyncio.run(client.agenerate(REQUEST))
    assert len(events) == 8 and client.hits == 1
