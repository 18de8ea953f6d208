"""Spending limits: rate limits (requests and tokens per minute) and a call budget (the prices it
spends at: :mod:`~cogtestbed.llm_adapters.clients.prices`).

Both are shared by every subject of a run and only touched from the run's event loop, so a
check and the update that follows it cannot interleave with another subject's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cogtestbed.errors import BudgetError, InputError
from cogtestbed.llm_adapters.clients.prices import Price

if TYPE_CHECKING:
    from aiolimiter import AsyncLimiter


class BudgetExhausted(BudgetError, RuntimeError):
    """A new call would exceed ``--max-calls`` or ``--max-cost``; the run stops cleanly."""


#: Service requests (HTTP requests that are no model call: a batch API's uploads, polls and downloads) one
#: invocation of a run may make (``--max-service-requests``): 24 h of polls at the default 30 s (2,880) for
#: a few waves.  A run stopped by it resumes where it stopped.
DEFAULT_MAX_SERVICE_REQUESTS = 10_000


def _bucket(rate_per_min: float) -> AsyncLimiter:
    """A leaky bucket (aiolimiter) draining ``rate_per_min / 60`` per second and holding one second's
    worth (at least 1): calls are spread evenly instead of a whole minute's quota bursting at the start."""
    from aiolimiter import AsyncLimiter  # the llm extra's, as the backends that need a limit are

    if rate_per_min <= 0:
        raise InputError("rate limits must be positive")
    per_second = rate_per_min / 60.0
    capacity = max(1.0, per_second)
    return AsyncLimiter(capacity, capacity / per_second)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits (either may be ``None``)."""

    def __init__(self, requests_per_min: float | None = None,
                 tokens_per_min: float | None = None) -> None:
        self._requests = _bucket(requests_per_min) if requests_per_min else None
        self._tokens = _bucket(tokens_per_min) if tokens_per_min else None

    async def acquire(self, tokens: int) -> None:
        """Wait until one request of about ``tokens`` tokens fits both limits (a request larger than
        the bucket still goes, once the bucket is empty)."""
        if self._requests is not None:
            await self._requests.acquire(1)
        if self._tokens is not None:
            await self._tokens.acquire(min(tokens, self._tokens.max_rate))


#: Share of a subject's simulated worst-case prompt tokens added when it is admitted: the
#: simulation answers every step validly (random actions), so a real history whose answers render
#: longer still fits its reservation.
SUBJECT_PROMPT_MARGIN = 0.25


@dataclass(frozen=True)
class Need:
    """A worst case: new calls and USD (``usd`` is 0 without a price)."""

    calls: float = 0.0
    usd: float = 0.0

    def __add__(self, other: Need) -> Need:
        return Need(self.calls + other.calls, self.usd + other.usd)

    def __sub__(self, other: Need) -> Need:
        return Need(self.calls - other.calls, self.usd - other.usd)

    def clip(self) -> Need:
        return Need(max(0.0, self.calls), max(0.0, self.usd))

    def covers(self, other: Need) -> bool:
        return other.calls <= self.calls + 1e-9 and other.usd <= self.usd + 1e-12


@dataclass
class Booking:
    """One call's worst case, booked before the call: ``held`` of it came from its subject's
    admission, the rest from the free budget."""

    worst: Need
    subject: int | None
    held: Need
    ledger_id: str


@dataclass
class Spend:
    """What a run directory has paid for so far (all invocations)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    #: Calls that may have been answered (billed): not those the server refused with an error status.
    answered: int = 0
    #: Hidden reasoning tokens the server reported, part of ``completion_tokens``.
    reasoning_tokens: int = 0
    #: Answered calls whose usage did not say how many of their tokens were hidden reasoning
    #: (``completion_tokens_details`` omitted): where any, the run's count of hidden tokens is unknown.
    reasoning_unknown: int = 0

    def reasoning(self) -> int | None:
        """The hidden reasoning tokens of these calls; None (unknown, never 0) where a call's count was not reported."""
        return None if self.reasoning_unknown else self.reasoning_tokens


class Budget:
    """The call and cost limits of a run, never exceeded (neither by a call nor by a subject).

    Invariant, checked before every booking: ``spent + booked + held <= limit`` in calls and in
    USD, where ``booked`` are the worst cases of the calls in flight and ``held`` the unused
    admissions of running subjects.

    * **A call** books its worst case before it is made — the prompt's token upper bound
      (:meth:`LLMClient.prompt_token_bound`: exact where the model's tokenizer is known, else the
      conservative bound documented there) plus ``max_tokens`` of output — and :meth:`settle`
      replaces the booking by the usage the backend reports.  A reported usage above the
      booking (a server that ignores ``max_tokens``) stops the run at once.
    * **A subject** is admitted (:meth:`admit`) at its first call that is not in the cache, for its
      whole remaining worst case; admissions are decided in subject order, and a subject that does
      not fit waits for running subjects to give back what they did not use, and is refused only
      when nothing is running.  So the budget is never spent on a subject that cannot finish.
      Calls of an admitted subject draw on its admission.
    * **A service request** — an HTTP request that is not a model call (a batch API's upload, create,
      polls, listing and downloads, each retry included) — bills no tokens and is no call, but is
      counted (:meth:`service_request`) against its own bound, ``max_service_requests`` per
      invocation (:data:`DEFAULT_MAX_SERVICE_REQUESTS` unless given); beyond it the run stops
      (:class:`BudgetExhausted`), resumable.
    * ``spent`` carries the earlier invocations of a run directory (``--resume`` continues the
      same budget); ``ledger`` receives one JSON event per booking and per settlement, so that a
      killed run's in-flight calls are charged at their worst case when it resumes.
    """

    def __init__(self, max_calls: int | None = None, max_cost: float | None = None,
                 price: Price | None = None, spent: Spend | None = None,
                 ledger: Callable[[dict[str, object]], None] | None = None,
                 max_service_requests: int | None = DEFAULT_MAX_SERVICE_REQUESTS) -> None:
        if max_service_requests is not None and max_service_requests < 0:
            raise InputError(f"`max_service_requests` must be a count >= 0, got {max_service_requests}")
        if max_cost is not None and price is None:
            raise InputError("`max_cost` needs a price for the model: add it to the price table "
                             "(`prices` FILE)")
        self.max_calls, self.max_cost, self.price = max_calls, max_cost, price
        self.spent = spent or Spend()
        self.ledger = ledger
        #: This invocation's new calls and usage (the run's totals are in ``spent``).
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        #: This invocation's hidden reasoning tokens (part of ``completion_tokens``) as the backend reported them,
        #: and its answered calls whose backend did not report them.
        self.reasoning_tokens = self.reasoning_unknown = 0
        #: This invocation's service requests (:meth:`service_request`) and their bound (None: unbounded).
        self.service_requests, self.max_service_requests = 0, max_service_requests
        self.cost = 0.0
        self.booked = Need()
        self.held: dict[int, Need] = {}
        self.stopped: str | None = None
        self._next_id = 0
        self._token = uuid.uuid4().hex[:12]  # ledger ids unique across invocations
        self._resolved: set[int] = set()
        self._closed = False
        self._changed: asyncio.Condition | None = None

    # -- limits ------------------------------------------------------------------------------
    @property
    def limited(self) -> bool:
        return self.max_calls is not None or self.max_cost is not None

    @property
    def limit(self) -> Need:
        return Need(math.inf if self.max_calls is None else float(self.max_calls),
                    math.inf if self.max_cost is None else float(self.max_cost))

    def committed(self) -> Need:
        held = sum(self.held.values(), Need())
        return Need(self.spent.calls, self.spent.cost) + self.booked + held

    def free(self) -> Need:
        """What no call and no subject has claimed yet."""
        return (self.limit - self.committed()).clip()

    @property
    def counts_tokens(self) -> bool:
        """Whether a call's tokens change what it costs this budget (only where the model has a price:
        without one, a call's worst case is one call, whatever its prompt)."""
        return self.price is not None

    def call_cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return self.price.cost(prompt_tokens, completion_tokens) if self.price else 0.0

    def worst(self, prompt_tokens: int, max_tokens: int) -> Need:
        return Need(1.0, self.call_cost(prompt_tokens, max_tokens))

    def describe(self, need: Need) -> str:
        """``need`` in words: its calls, and its cost where the model has a price (an unlimited
        dimension of what is left reads "unlimited")."""
        calls = "unlimited calls" if math.isinf(need.calls) else f"{need.calls:.0f} calls"
        if self.price is None:
            return calls
        usd = "unlimited USD" if math.isinf(need.usd) else f"${need.usd:.4f}"
        return f"{calls}, {usd}"

    # -- subjects ----------------------------------------------------------------------------
    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def admit(self, subject: int, need: Need) -> None:
        """Hold ``need`` for ``subject`` (see class docstring); :class:`BudgetExhausted` if it can
        never fit.  Lower-numbered subjects are decided first, so the same budget admits the same
        subjects whatever the concurrency."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: all(j in self._resolved for j in range(subject)))
            while True:
                if not self._closed and self.free().covers(need):
                    self.held[subject] = need
                    self._resolved.add(subject)
                    cond.notify_all()
                    return
                if self._closed or not self.held:  # nothing running will give anything back
                    self._closed = True
                    self._resolved.add(subject)
                    cond.notify_all()
                    self.stopped = self.stopped or (
                        f"budget: subject {subject} needs up to {self.describe(need)} and "
                        f"{self.describe(self.free())} is left (max_calls={self.max_calls}, "
                        f"max_cost={self.max_cost})")
                    raise BudgetExhausted(self.stopped)
                await cond.wait()

    async def finish(self, subject: int) -> None:
        """``subject`` is done (complete or stopped): give back what it held."""
        cond = self._condition()
        async with cond:
            self.held.pop(subject, None)
            self._resolved.add(subject)
            cond.notify_all()

    # -- calls -------------------------------------------------------------------------------
    def reserve(self, prompt_tokens: int, max_tokens: int, subject: int | None = None) -> Booking:
        """Book one call's worst case (``prompt_tokens`` must be an upper bound)."""
        worst = self.worst(prompt_tokens, max_tokens)
        held = Need()
        if subject is not None and subject in self.held:
            held = Need(min(worst.calls, self.held[subject].calls), min(worst.usd, self.held[subject].usd))
        extra = worst - held
        if self.stopped and self.stopped.startswith("overrun"):
            raise BudgetExhausted(self.stopped)
        if not self.free().covers(extra):
            self.stopped = self.stopped or (
                f"max_calls={self.max_calls} reached" if extra.calls > self.free().calls + 1e-9
                else f"max_cost={self.max_cost} would be exceeded")
            raise BudgetExhausted(self.stopped)
        if subject is not None and subject in self.held:
            self.held[subject] = self.held[subject] - held
        self.booked = self.booked + worst
        booking = Booking(worst, subject, held, f"{self._token}-{self._next_id}")
        self._next_id += 1
        self._log({"id": booking.ledger_id, "reserve_usd": worst.usd})
        return booking

    def settle(self, booking: Booking, prompt_tokens: int, completion_tokens: int,
               succeeded: bool, reasoning_tokens: int | None = None) -> None:
        """Replace the booking by the reported usage (a failed call is not billed).  A count that is not
        a non-negative number is taken at the booking's worst case: a server's usage never credits.
        ``reasoning_tokens``: the hidden tokens among ``completion_tokens`` where the backend reports them
        (recorded in the ledger; they are billed as the completion tokens they are part of)."""
        if not (prompt_tokens >= 0 and completion_tokens >= 0):  # NaN fails too
            prompt_tokens, completion_tokens = self._worst_tokens(booking)
        self.booked = (self.booked - booking.worst).clip()
        real = Need(1.0, self.call_cost(prompt_tokens, completion_tokens)) if succeeded else Need()
        for totals in (self, self.spent):
            totals.calls += int(succeeded)
            totals.cost += real.usd
        if real.usd > booking.worst.usd + 1e-12:
            self.stopped = (f"overrun: a call cost ${real.usd:.6f}, above its booked worst case "
                            f"${booking.worst.usd:.6f} (the server reported more tokens than the bound)")
        # what the call did not use goes back to its subject's admission
        if booking.subject is not None and booking.subject in self.held:
            back = Need(min(booking.held.calls, (booking.worst - real).clip().calls),
                        min(booking.held.usd, (booking.worst - real).clip().usd))
            self.held[booking.subject] = self.held[booking.subject] + back
        self._settled(booking.ledger_id, real.usd, succeeded, prompt_tokens, completion_tokens, reasoning_tokens,
                      int(succeeded and prompt_tokens + completion_tokens > 0), self, self.spent)

    def settle_orphan(self, ledger_id: str, worst_usd: float, prompt_tokens: int, completion_tokens: int,
                      billed: bool, reasoning_tokens: int | None = None) -> None:
        """Settle a booking an earlier invocation made and never settled (it was killed with the call in
        flight: batch mode collects such calls on ``--resume``).  :func:`read_ledger` counted it in
        ``spent`` at its worst case (``worst_usd``) and as no call; this replaces that by the usage
        reported (one call where the provider ran it, none and nothing billed where it did not)."""
        real = self.call_cost(prompt_tokens, completion_tokens) if billed else 0.0
        self.spent.cost += real - worst_usd
        self.spent.calls += 1 if billed else 0
        self.spent.answered -= 0 if billed else 1
        self._settled(ledger_id, real, billed, prompt_tokens, completion_tokens, reasoning_tokens, int(billed),
                      self.spent)

    def _settled(self, ledger_id: str, usd: float, billed: bool, prompt_tokens: int, completion_tokens: int,
                 reasoning_tokens: int | None, answered: int, *totals: Budget | Spend) -> None:
        """Add a billed call's tokens to ``totals`` and write its settlement to the ledger."""
        hidden, unknown = _reasoning_counts(billed, reasoning_tokens)
        for t in totals if billed else ():
            t.prompt_tokens += prompt_tokens
            t.completion_tokens += completion_tokens
            t.reasoning_tokens += hidden
            t.reasoning_unknown += unknown
        self._log({"id": ledger_id, "settle_usd": usd, "calls": int(billed),
                   "prompt_tokens": prompt_tokens if billed else 0,
                   "completion_tokens": completion_tokens if billed else 0,
                   **({"reasoning_tokens": hidden} if hidden else {}),
                   **({"reasoning_unknown": 1} if unknown else {}), "answered": answered})

    def _worst_tokens(self, booking: Booking) -> tuple[int, int]:
        """Tokens that cost the booking's worst case (all of it as output where the model has a price)."""
        if self.price is None or self.price.output <= 0:
            return 0, 0
        return 0, math.ceil(booking.worst.usd * 1e6 / self.price.output)

    def _log(self, event: dict[str, object]) -> None:
        if self.ledger is not None:
            self.ledger(event)

    def service_request(self, what: str) -> None:
        """Count one service request (``what``: e.g. "batch poll") before it is sent; :class:`BudgetExhausted`
        (the run stops, resumable) where it would exceed ``max_service_requests``."""
        if self.max_service_requests is not None and self.service_requests >= self.max_service_requests:
            self.stopped = (f"the run made {self.service_requests} service requests (the batch API's uploads, "
                            f"polls and downloads), its limit `max_service_requests` {self.max_service_requests}; "
                            f"the next ({what}) was not sent")
            raise BudgetExhausted(self.stopped)
        self.service_requests += 1

    def summary(self) -> dict[str, object]:
        """``run.json``'s budget statistics.  ``prompt_tokens``, ``completion_tokens``, ``reasoning_tokens``,
        ``total_calls`` and ``total_cost_usd`` cover the whole run directory (every invocation, from the
        ledger); ``new_*`` and ``cost_usd`` this invocation.  A count of hidden reasoning tokens is None
        (unknown, never 0) where an answered call's usage did not report it (``reasoning_unknown_calls``)."""
        return {"new_calls": self.calls, "service_requests": self.service_requests,
                "max_service_requests": self.max_service_requests, "prompt_tokens": self.spent.prompt_tokens,
                "completion_tokens": self.spent.completion_tokens, "reasoning_tokens": self.spent.reasoning(),
                "reasoning_unknown_calls": self.spent.reasoning_unknown,
                "new_prompt_tokens": self.prompt_tokens, "new_completion_tokens": self.completion_tokens,
                "new_reasoning_tokens": None if self.reasoning_unknown else self.reasoning_tokens,
                "cost_usd": round(self.cost, 6) if self.price else None, "stopped": self.stopped,
                "max_calls": self.max_calls, "max_cost": self.max_cost,
                "total_calls": self.spent.calls,
                "total_cost_usd": round(self.spent.cost, 6) if self.price else None}


def paid_key_event(key: str) -> dict[str, object]:
    """The ledger's record that the run paid for the answer stored under cache key ``key``."""
    return {"paid_key": key}


def read_paid_keys(lines: Iterable[str]) -> set[str]:
    """The cache keys of the answers a run directory paid for (:func:`paid_key_event`): replayed on
    ``--resume``, they are the run's calls, not cache hits (:class:`~.cache.Cached`)."""
    keys: set[str] = set()
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):  # a line cut by a kill
            event = json.loads(line) if line.strip() else None
            if isinstance(event, dict) and isinstance(event.get("paid_key"), str):
                keys.add(event["paid_key"])
    return keys


def read_ledger(lines: Iterable[str]) -> Spend:
    """The spend recorded by a :class:`Budget` ledger: settled calls at their reported usage,
    calls booked but never settled (the process died mid-call) at their worst case in USD (the
    provider may have billed them) but not as calls: their answer never came, so the resumed run asks
    again and ``max_calls`` still covers what the run needs (a batch's collected orphan is counted
    once it is settled, :meth:`Budget.settle_orphan`)."""
    spend, open_ = Spend(), {}
    for line in lines:
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill: its call was never made
            continue
        key = event.get("id")
        if "reserve_usd" in event:
            open_[key] = float(event["reserve_usd"])
        elif "settle_usd" in event:
            open_.pop(key, None)
            spend.calls += int(event.get("calls", 0))
            spend.answered += int(event.get("answered", event.get("calls", 0)))
            spend.prompt_tokens += int(event.get("prompt_tokens", 0))
            spend.completion_tokens += int(event.get("completion_tokens", 0))
            spend.reasoning_tokens += int(event.get("reasoning_tokens", 0))
            spend.reasoning_unknown += int(event.get("reasoning_unknown", 0))
            spend.cost += float(event["settle_usd"])
    spend.answered += len(open_)
    spend.cost += sum(open_.values())
    return spend


def _reasoning_counts(billed: bool, reasoning_tokens: int | None) -> tuple[int, int]:
    """(hidden reasoning tokens, 1 where a billed call reported none) of a settled call."""
    known = isinstance(reasoning_tokens, int) and reasoning_tokens >= 0
    hidden = reasoning_tokens if billed and known and reasoning_tokens is not None else 0
    return hidden, int(billed and not known)
