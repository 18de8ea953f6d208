"""The environment contract shared by every experiment.

An experiment is a :class:`gymnasium.Env` whose observation carries both the structured state a
synthetic agent needs and ``prompt``, the exact text an LLM would see (rendered from the history
as the seed paper does).  Every environment owns :meth:`TextEnv.parse`, which turns an LLM answer
into an action or a :class:`ParseResult` failure with its reason: nothing is ever silently
replaced by a random choice.  Ground truth the subject must not see lives in ``info``.

Randomness is split in two so that a synthetic subject and an LLM subject with the same seed meet
the *same* realised session:

* :meth:`TextEnv.sample_sessions` draws the stochastic design (orderings, labels, pre-sampled
  outcomes) for ``n`` subjects at once from one :class:`numpy.random.Generator`;
* ``reset(options={"session": ...})`` plays one of those pre-drawn sessions, and ``reset(seed=s)``
  draws a single session from ``default_rng(s)``.
"""

from __future__ import annotations

import string
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, Self, TypeVar

import gymnasium as gym
import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict

#: Action passed to :meth:`TextEnv.step` when the subject gave no valid answer.  The trial is
#: recorded as invalid and the episode moves on; the environment never substitutes a choice.
NO_ACTION = -1

#: Characters a rendered prompt may contain (used for the gymnasium ``Text`` space).
PROMPT_CHARSET = frozenset(string.printable)


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
            raise ValueError("a scored response needs at least two continuations")
        if len(set(self.continuations)) != len(self.continuations):
            raise ValueError(f"continuations must be distinct, got {self.continuations!r}")
        if self.n_samples < 1:
            raise ValueError("n_samples must be at least 1")


ResponseKind = TextResponse | ScoredResponse


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
            raise ValueError(f"method must be 'exact' or 'sampled', got {self.method!r}")
        if self.method == "sampled" and (self.n_samples is None or self.n_samples < 1):
            raise ValueError("a sampled answer needs n_samples >= 1")

    @property
    def probabilities(self) -> np.ndarray:
        """The distribution renormalised over the continuations (log-sum-exp)."""
        lp = np.asarray(self.logprobs, dtype=np.float64)
        top = np.max(lp)
        if not np.isfinite(top):
            raise ValueError("a scored answer needs at least one finite log-probability")
        w = np.exp(lp - top)
        return w / w.sum()

    @classmethod
    def from_counts(cls, counts: np.ndarray) -> ScoredAnswer:
        """A sampled estimate from counts of each continuation among N draws."""
        counts = np.asarray(counts, dtype=np.float64)
        n = int(counts.sum())
        if n < 1:
            raise ValueError("no sample matched any continuation")
        with np.errstate(divide="ignore"):
            return cls(np.log(counts / n), method="sampled", n_samples=n)


class Design(BaseModel):
    """Base class of experiment designs: frozen, validated, with the published defaults.

    Subclasses add fields; named variants (paper vs released code) are class methods.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def n_trials(self) -> int:  # pragma: no cover - every design overrides
        raise NotImplementedError


@dataclass(frozen=True)
class Sessions:
    """Pre-drawn stochastic parts of ``n`` sessions: numpy arrays whose first axis is subject.

    Subclasses declare one array field per quantity; :meth:`subject` slices one session out.
    """

    @property
    def n_subjects(self) -> int:
        first = fields(self)[0].name
        return int(np.shape(getattr(self, first))[0])

    def subject(self, i: int) -> Self:
        """Session ``i`` as a one-subject ``Sessions`` (arrays keep a leading axis of 1)."""
        return type(self)(**{f.name: getattr(self, f.name)[i : i + 1] for f in fields(self)})


DesignT = TypeVar("DesignT", bound=Design)
SessionsT = TypeVar("SessionsT", bound=Sessions)


@dataclass
class Outcomes:
    """What happened on each trial of ``n`` sessions, as arrays of shape (n_subjects, n_trials).

    ``action`` holds :data:`NO_ACTION` where the subject gave no valid answer; ``played`` is
    False for steps a variable-length session never reached; ``extra`` holds
    experiment-specific per-step values (e.g. a confidence report).
    """

    action: np.ndarray
    reward: np.ndarray
    valid: np.ndarray
    raw_response: np.ndarray | None = None
    parse_error: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    played: np.ndarray | None = None

    @classmethod
    def empty(cls, n_subjects: int, n_trials: int, action_dtype: Any = np.int64) -> Outcomes:
        """Outcomes of unplayed trials; a float ``action_dtype`` marks missing actions with NaN."""
        float_action = np.dtype(action_dtype).kind == "f"
        return cls(
            action=np.full((n_subjects, n_trials), np.nan if float_action else NO_ACTION,
                           dtype=action_dtype),
            reward=np.full((n_subjects, n_trials), np.nan),
            valid=np.zeros((n_subjects, n_trials), dtype=bool),
            raw_response=np.full((n_subjects, n_trials), None, dtype=object),
            parse_error=np.full((n_subjects, n_trials), None, dtype=object),
            played=np.zeros((n_subjects, n_trials), dtype=bool),
        )

    @classmethod
    def stack(cls, parts: list[Outcomes]) -> Outcomes:
        """Concatenate one-subject outcomes along the subject axis."""

        def cat(name: str) -> np.ndarray:
            return np.concatenate([getattr(p, name) for p in parts], axis=0)

        extra_keys = parts[0].extra.keys() if parts else ()
        return cls(
            action=cat("action"),
            reward=cat("reward"),
            valid=cat("valid"),
            raw_response=cat("raw_response") if parts and parts[0].raw_response is not None else None,
            parse_error=cat("parse_error") if parts and parts[0].parse_error is not None else None,
            extra={k: np.concatenate([p.extra[k] for p in parts], axis=0) for k in extra_keys},
            played=cat("played") if parts and parts[0].played is not None else None,
        )


class TextEnv(gym.Env[dict[str, Any], Any], Generic[DesignT, SessionsT]):
    """Gymnasium environment with a rendered prompt and a parser (see module docstring).

    Subclasses set :attr:`experiment` and :attr:`design_cls`, and implement
    :meth:`sample_sessions`, :meth:`_start`, :meth:`_play`, :meth:`_observation`,
    :meth:`render_prompt`, :meth:`parse` and :meth:`trials_table`.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 - gymnasium declares it mutable
    #: Registry name of the experiment, e.g. ``"instrumental-learning"``.
    experiment: ClassVar[str]
    design_cls: ClassVar[type[Design]]
    #: Text an LLM's completion continues from (CogBench's ``format_answer``).
    answer_prefix: ClassVar[str] = ""
    #: dtype of the recorded action: integer choices by default; tasks whose answer is a number
    #: on a scale (ratings) use ``np.float64`` and mark missing actions with NaN.
    action_dtype: ClassVar[Any] = np.int64

    def __init__(self, design: DesignT | None = None, render_mode: str | None = None) -> None:
        self.design: DesignT = design if design is not None else self.design_cls()  # type: ignore[assignment]
        self.render_mode = render_mode
        self.session: SessionsT | None = None
        self.t = 0
        self.outcomes = Outcomes.empty(1, self.max_steps(self.design), self.action_dtype)

    @classmethod
    def max_steps(cls, design: Design) -> int:
        """Most steps (subject responses) a session can take; sizes the outcome arrays.

        A step is one response of the subject (one LLM call).  Fixed-length tasks have
        ``design.n_trials`` steps; variable-length tasks override this and :meth:`_terminated`.
        """
        return design.n_trials

    def _terminated(self) -> bool:
        """Whether the session is over after ``self.t`` steps."""
        return self.t >= self.max_steps(self.design)

    # -- stochastic design -------------------------------------------------------------
    @classmethod
    @abstractmethod
    def sample_sessions(cls, design: DesignT, n: int, rng: np.random.Generator) -> SessionsT:
        """Draw the stochastic parts of ``n`` sessions (vectorised over subjects)."""

    # -- gymnasium API -------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a session: ``options["session"]`` if given, else one drawn from ``seed``."""
        super().reset(seed=seed)
        if options is not None and "session" in options:
            session = options["session"]
        else:
            session = self.sample_sessions(self.design, 1, self.np_random)
        if session.n_subjects != 1:
            raise ValueError("reset expects a one-subject session; use Sessions.subject(i)")
        self.session = session
        self.t = 0
        self.outcomes = Outcomes.empty(1, self.max_steps(self.design), self.action_dtype)
        self._start()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play ``action`` (or :data:`NO_ACTION`) on the current trial and advance."""
        if self.session is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated():
            raise RuntimeError("episode is over; call reset()")
        t = self.t
        if self._is_no_action(action):
            reward = float("nan")
        else:
            value = self._action_value(action)
            reward = self._play(action)
            self.outcomes.action[0, t] = value
            self.outcomes.valid[0, t] = True
        self.outcomes.reward[0, t] = reward
        self.outcomes.played[0, t] = True  # type: ignore[index]
        self._record(t, action, reward)
        self.t += 1
        terminated = self._terminated()
        obs = self._observation()
        info = self._info()
        return obs, 0.0 if np.isnan(reward) else float(reward), terminated, False, info

    def record_response(self, raw_response: str | None, parse_error: str | None) -> None:
        """Attach an LLM's raw text and parse error to the trial about to be stepped."""
        self.outcomes.raw_response[0, self.t] = raw_response  # type: ignore[index]
        self.outcomes.parse_error[0, self.t] = parse_error  # type: ignore[index]

    def render(self) -> str:
        return str(self._observation()["prompt"])

    @staticmethod
    def _is_no_action(action: Any) -> bool:
        if action is None:
            return True
        if np.ndim(action) != 0 or isinstance(action, (str, bytes)):
            return False
        try:
            value = float(action)
        except (TypeError, ValueError):
            return False  # a structured action (e.g. a rating with a confidence)
        return bool(np.isnan(value)) or value == NO_ACTION

    def _action_value(self, action: Any) -> Any:
        """Check a valid action and return what the outcome table records for it.

        Default: an element of :attr:`action_space`, recorded as an integer.  Environments
        whose actions carry more than one number (e.g. a rating plus a confidence) override it.
        """
        if not self.action_space.contains(action):
            raise ValueError(f"invalid action {action!r} for {self.action_space}")
        return int(action)

    # -- experiment-specific hooks -----------------------------------------------------
    @abstractmethod
    def _start(self) -> None:
        """Prepare rendering state for a fresh session (``self.session`` is set)."""

    @abstractmethod
    def _play(self, action: Any) -> float:
        """Apply a valid action on trial ``self.t`` and return its reward."""

    def _record(self, t: int, action: Any, reward: float) -> None:  # noqa: B027
        """Hook for environments that keep a rendered history (called after every trial)."""

    @abstractmethod
    def _observation(self) -> dict[str, Any]:
        """Structured state plus ``prompt`` for the current trial."""

    def _info(self) -> dict[str, Any]:
        """Hidden ground truth for the current trial (override to add more)."""
        return {"trial": self.t}

    @abstractmethod
    def render_prompt(self) -> str:
        """The exact text an LLM sees on the current trial."""

    @abstractmethod
    def parse(self, text: str) -> ParseResult:
        """Turn an answer (the completion after :attr:`answer_prefix`) into an action."""

    @classmethod
    @abstractmethod
    def trials_table(
        cls,
        design: DesignT,
        sessions: SessionsT,
        outcomes: Outcomes,
        *,
        agent: str = "unknown",
        params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial: the experiment's stimulus fields plus the outcome columns.

        ``params`` maps generating-parameter names to per-subject arrays (synthetic subjects).
        """

    # -- helpers -----------------------------------------------------------------------
    @staticmethod
    def prompt_space(max_length: int) -> spaces.Text:
        """Gymnasium space for a rendered prompt of at most ``max_length`` characters."""
        return spaces.Text(max_length=max_length, min_length=1, charset=PROMPT_CHARSET)
