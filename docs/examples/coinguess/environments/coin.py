"""The coin-guess environment: a prompt per trial, one two-way answer, no feedback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.extend import (
    VERBATIM,
    Design,
    Outcomes,
    ParseResult,
    Phase,
    PromptForm,
    Sessions,
    TextEnv,
    TrialSchema,
    finish_table,
    paraphrase,
)

from ..tables.coin import MAX_FLIPS, SCHEMA

#: P(heads) of the heads coin (the tails coin: 1 minus it).
P_HEADS = 0.7
ANSWERS = {"heads": 1, "tails": 0}


class CoinDesign(Design):
    """``n_trials`` guesses of ``n_flips`` flips each."""

    n_guesses: int = 40
    n_flips: int = 5

    @property
    def n_trials(self) -> int:
        return self.n_guesses


@dataclass(frozen=True)
class CoinSessions(Sessions):
    heads_coin: np.ndarray  # (N, T) bool: the heads coin was flipped
    heads: np.ndarray  # (N, T) int64: heads seen


_INTRO = ("You will see how often a coin landed heads. The coin is either a heads coin, which lands heads "
          "70% of the time, or a tails coin, which lands heads 30% of the time; both are equally likely.")
_QUESTION = "Which coin was it?"
PROMPT_FORMS: tuple[PromptForm, ...] = (
    VERBATIM,
    paraphrase(1, "ours: the introduction reworded", (
        _INTRO, "A coin is flipped several times. It is a heads coin (heads 70% of the time) or a tails coin "
                "(heads 30% of the time), each with probability one half.")),
    paraphrase(2, "ours: the question reworded", (_QUESTION, "Was it the heads coin or the tails coin?")),
    paraphrase(3, "ours: the result sentence reworded", ("It landed heads", "Heads came up")),
    paraphrase(4, "ours: introduction and question reworded", (
        _INTRO, "Each coin here is one of two kinds: a heads coin (70% heads) or a tails coin (30% heads), "
                "equally likely."), (_QUESTION, "Which kind of coin was flipped?")),
)


class CoinGuessEnv(TextEnv[CoinDesign, CoinSessions]):
    """Observation: ``trial``, ``heads``, ``flips`` and ``prompt``; action 1 (heads coin) or 0."""

    design_cls: ClassVar[type[Design]] = CoinDesign
    table_schema: ClassVar[TrialSchema] = SCHEMA
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    answer_prefix: ClassVar[str] = "The"
    #: One-shot guesses without feedback: lapses apply after the batch run.
    answer_independent: ClassVar[bool] = True

    def __init__(self, design: CoinDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        self.observation_space = spaces.Dict({"trial": spaces.Discrete(self.design.n_trials + 1),
                                              "heads": spaces.Discrete(MAX_FLIPS + 1),
                                              "flips": spaces.Discrete(MAX_FLIPS + 1),
                                              "prompt": self.prompt_space(1000)})
        self.declare_phases(Phase("answer", spaces.Discrete(2), self.parse_answer))

    @classmethod
    def sample_sessions(cls, design: CoinDesign, n: int, rng: np.random.Generator) -> CoinSessions:
        heads_coin = rng.random((n, design.n_trials)) < 0.5
        p = np.where(heads_coin, P_HEADS, 1.0 - P_HEADS)
        heads = rng.binomial(design.n_flips, p).astype(np.int64)
        return CoinSessions(heads_coin=heads_coin, heads=heads)

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return design.n_trials

    def _start(self) -> None:
        """Nothing to prepare: every guess is a fresh prompt."""

    def _cur(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    def _play(self, action: Any) -> float:
        assert self.session is not None
        return float(int(action) == int(self.session.heads_coin[0, self._cur()]))

    def _observation(self) -> dict[str, Any]:
        assert self.session is not None
        done = self.t >= self.design.n_trials
        return {"trial": self.t, "heads": int(self.session.heads[0, self._cur()]), "flips": self.design.n_flips,
                "prompt": "(session finished)" if done else self.render_prompt()}

    def render_prompt(self) -> str:
        assert self.session is not None
        k, n = int(self.session.heads[0, self._cur()]), self.design.n_flips
        return (f"{_INTRO}\n\nQ: The coin was flipped {n} times. It landed heads {k} times. {_QUESTION} "
                "Answer heads coin or tails coin.\n\nA: The")

    def parse_answer(self, text: str) -> ParseResult:
        """``heads`` or ``tails`` as the first word (``" heads coin"``); anything else is invalid."""
        words = text.strip().lower().split()
        if not words:
            return ParseResult.failure("empty answer")
        word = words[0].strip(".,;:!")
        if word not in ANSWERS:
            return ParseResult.failure(f"expected heads or tails, got {words[0][:20]!r}")
        return ParseResult.success(ANSWERS[word])

    @classmethod
    def trials_table(cls, design: CoinDesign, sessions: CoinSessions, outcomes: Outcomes, *, agent: str = "unknown",
                     params: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
        n, t = sessions.heads.shape
        columns = {"heads": sessions.heads, "flips": np.full((1, t), design.n_flips, dtype=np.int64),
                   "heads_coin": sessions.heads_coin, "action": outcomes.action,
                   "reward": np.where(outcomes.valid, outcomes.reward, np.nan), "valid": outcomes.valid,
                   "raw_response": outcomes.raw_response, "parse_error": outcomes.parse_error}
        return finish_table(cls.experiment, {k: v for k, v in columns.items() if v is not None}, agent=agent,
                            params=params)
