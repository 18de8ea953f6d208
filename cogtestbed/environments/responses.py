"""What a step asks for and what it gets back: the response kinds, answers, parse results and
phases of the environment contract (:class:`~cogtestbed.environments.base.TextEnv`).

A trial is one or more :class:`Phase` s, each with its action space, parser and response kind
(:class:`TextResponse`: free text read by the environment's parser; :class:`ScoredResponse`:
a distribution over continuations, answered with a :class:`ScoredAnswer`).  A parser returns a
:class:`ParseResult`: an action, or ``None`` with the reason it failed.  An environment also
declares how an answer ends (:class:`AnswerDefaults`) and, where scored steps are sampled, what
that costs (:class:`SamplingNote`).  Every name here is importable from
:mod:`cogtestbed.environments.base` too (and from :mod:`cogtestbed.extend`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from cogtestbed.errors import InputError


@dataclass(frozen=True)
class ParseResult:
    """Outcome of parsing one answer: an action, or ``None`` with the reason it failed."""

    action: Any | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def success(cls, action: Any) -> ParseResult:
        return cls(action=action, error=None)

    @classmethod
    def failure(cls, reason: str) -> ParseResult:
        return cls(action=None, error=reason)


@dataclass(frozen=True)
class TextResponse:
    """Response kind of a step answered in free text and read by the environment's parser.

    This is the default: a step whose observation carries no ``"response"`` key is a text step.
    """

    kind: ClassVar[str] = "text"


@dataclass(frozen=True)
class ScoredResponse:
    """Response kind of a step answered with a probability distribution over ``continuations``.

    An LLM subject obtains the exact teacher-forced log-probability of each continuation after
    the prompt (``LLMClient.score``); a backend that cannot score is sampled ``n_samples`` times
    at temperature 1 and the empirical distribution is recorded as an estimate (with its N).
    A synthetic subject returns the same :class:`ScoredAnswer`.
    """

    continuations: tuple[str, ...]
    #: Completions drawn where a backend cannot score (the estimate records this N).
    n_samples: int = 100
    #: Score the prompt as raw text even on a chat model: the continuation completes the text
    #: itself (a next-token probe), so no chat template is applied.
    raw: bool = False
    kind: ClassVar[str] = "scored"

    def __post_init__(self) -> None:
        if len(self.continuations) < 2:
            raise InputError("a scored response needs at least two continuations")
        if len(set(self.continuations)) != len(self.continuations):
            raise InputError(f"continuations must be distinct, got {self.continuations!r}")
        if self.n_samples < 1:
            raise InputError("n_samples must be at least 1")


ResponseKind = TextResponse | ScoredResponse


@dataclass(frozen=True)
class SamplingNote:
    """What answering a design's scored steps by sampling costs a subject that cannot score.

    An environment declares it (:meth:`TextEnv.sampling_note`); a run prints ``message`` (one line)
    before its first call and records :meth:`as_json` in its manifests.  ``detail`` holds the
    figures the message states (e.g. the expected sampling error of each metric), unrounded.
    """

    n_samples: int
    message: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"kind": "sampled-estimate", "n_samples": int(self.n_samples), "message": self.message,
                "detail": dict(self.detail)}


@dataclass(frozen=True)
class AnswerDefaults:
    """How an LLM's answer ends when a run sets neither ``--stop`` nor ``--max-tokens``: its stop
    strings, its most tokens, and where the choice comes from (``source``, recorded in the run's
    manifest).  Declared by the environment (:meth:`TextEnv.answer_defaults`), whose prompt asks
    for the answer's form."""

    stop: tuple[str, ...]
    max_tokens: int
    source: str

    def __post_init__(self) -> None:
        if self.max_tokens < 1 or not all(self.stop):
            raise InputError("answer defaults need max_tokens >= 1 and non-empty stop strings")


#: One line of at most 8 tokens: the answers of most experiments (a letter, a number, a word).
ONE_LINE = AnswerDefaults(("\n",), 8, "this project's default: a one-line answer (stop at a newline), "
                          "at most 8 tokens")


@dataclass(frozen=True)
class ScoredAnswer:
    """The answer to a :class:`ScoredResponse` step.

    ``logprobs[k]`` is log P(continuation k | prompt) as the subject gave it (teacher-forced and
    unnormalised for an exact score; log of the sample share for an estimate, ``-inf`` where a
    continuation was never drawn).  ``mass_outside`` is the probability outside the listed
    continuations where known.  ``method`` is ``"exact"`` or ``"sampled"``; ``n_samples`` the N
    of a sampled estimate.
    """

    logprobs: np.ndarray
    method: str = "exact"
    mass_outside: float | None = None
    n_samples: int | None = None

    def __post_init__(self) -> None:
        if self.method not in ("exact", "sampled"):
            raise InputError(f"method must be 'exact' or 'sampled', got {self.method!r}")
        if self.method == "sampled" and (self.n_samples is None or self.n_samples < 1):
            raise InputError("a sampled answer needs n_samples >= 1")

    @property
    def probabilities(self) -> np.ndarray:
        """The distribution renormalised over the continuations (log-sum-exp)."""
        lp = np.asarray(self.logprobs, dtype=np.float64)
        top = np.max(lp)
        if not np.isfinite(top):
            raise InputError("a scored answer needs at least one finite log-probability")
        w = np.exp(lp - top)
        return w / w.sum()

    @classmethod
    def from_counts(cls, counts: np.ndarray, n_drawn: int | None = None) -> ScoredAnswer:
        """A sampled estimate from counts of each continuation among the draws.

        ``n_drawn`` is the number of completions drawn (default: the matched ones); draws that
        matched no continuation give ``mass_outside`` = unmatched / ``n_drawn``.
        """
        counts = np.asarray(counts, dtype=np.float64)
        matched = int(counts.sum())
        if matched < 1:
            raise InputError("no sample matched any continuation")
        n = matched if n_drawn is None else int(n_drawn)
        if n < matched:
            raise InputError(f"n_drawn={n} is below the {matched} matched samples")
        with np.errstate(divide="ignore"):
            return cls(np.log(counts / matched), method="sampled", n_samples=n,
                       mass_outside=(n - matched) / n)


@dataclass(frozen=True)
class Phase:
    """One response within a trial: its action space, parser and response kind.

    ``parse`` turns the completion of this phase's prompt into an action (usually a bound method
    of the environment, since what is offered can depend on the trial).  ``skip_rest_if_invalid``
    marks a phase whose answer the trial's later phases need (a choice that a confidence report
    refers to): when its answer is invalid the remaining phases of the trial are not asked.
    """

    name: str
    action_space: spaces.Space[Any]
    parse: Callable[[str], ParseResult]
    response: ResponseKind = field(default_factory=TextResponse)
    skip_rest_if_invalid: bool = False


class ResponseKindSpace(spaces.Space[Any]):
    """Gymnasium space of the ``response`` observation entry: one of the declared response kinds."""

    def __init__(self, kinds: tuple[ResponseKind, ...], seed: int | None = None) -> None:
        if not kinds:
            raise InputError("at least one response kind is needed")
        self.kinds = tuple(dict.fromkeys(kinds))
        super().__init__(shape=None, dtype=None, seed=seed)

    def contains(self, x: Any) -> bool:
        return any(x == k for k in self.kinds)

    def sample(self, mask: Any = None, probability: Any = None) -> ResponseKind:
        return self.kinds[int(self.np_random.integers(len(self.kinds)))]

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ResponseKindSpace({self.kinds!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResponseKindSpace) and self.kinds == other.kinds

    __hash__ = None  # type: ignore[assignment]



def uniform_simplex_logprobs(u: np.ndarray) -> np.ndarray:
    """Log-probabilities of a point drawn uniformly on the simplex (flat Dirichlet) from one
    uniform per coordinate: normalised standard exponentials −log u (Devroye 1986, XI.4)."""
    e = -np.log(np.clip(np.asarray(u, dtype=np.float64), 1e-300, 1.0))
    return np.log(e) - np.log(e.sum())


def box_action_value(action: Any, space: spaces.Box, phase: str) -> float:
    """A continuous answer as a float, checked against the phase's bounds (one clear error)."""
    try:
        value = float(np.asarray(action, dtype=np.float64))
    except (TypeError, ValueError):
        raise InputError(f"invalid action {action!r} for phase {phase!r}: expected a number") from None
    low, high = float(np.min(space.low)), float(np.max(space.high))
    if not low <= value <= high:
        raise InputError(f"invalid action {action!r} for phase {phase!r}: expected a number in [{low:g}, {high:g}]")
    return value


def scored_action_value(action: ScoredAnswer, phase: Phase) -> int:
    """Index of the most probable continuation of a :class:`ScoredAnswer` (checked for size)."""
    response = phase.response
    assert isinstance(response, ScoredResponse)
    if not isinstance(action, ScoredAnswer):
        raise InputError(f"phase {phase.name!r} is scored: expected a ScoredAnswer, got {action!r}")
    if np.shape(action.logprobs) != (len(response.continuations),):
        raise InputError(f"phase {phase.name!r} scores {len(response.continuations)} continuations, "
                         f"the answer has {np.size(action.logprobs)} log-probabilities")
    return int(np.argmax(action.probabilities))
