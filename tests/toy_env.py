"""A small two-phase experiment used by the contract tests: elicit a probability, then score a
Yes/No/Defer judgement over three continuations (the shape of a belief-coherence trial)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.environments.base import (
    Design,
    Outcomes,
    ParseResult,
    Phase,
    ScoredResponse,
    Sessions,
    TextEnv,
)
from cogtestbed.environments.parsing import parse_decimal_digits
from cogtestbed.schema import TrialSchema, Values
from cogtestbed.trials import finish_table, scored_columns

STATEMENTS = ("it rains tomorrow", "the coin lands heads", "the train is late")
JUDGEMENTS = (" Yes", " No", " Defer")


class ToyDesign(Design):
    n_questions: int = 2
    #: Continuations of the scored judgement.
    judgements: tuple[str, ...] = JUDGEMENTS
    #: An invalid probability skips the judgement (the trial's later phase needs it).
    gate: bool = True
    #: Completions drawn where a backend cannot score.
    n_samples: int = 40

    @property
    def n_trials(self) -> int:
        return self.n_questions


@dataclass(frozen=True)
class ToySessions(Sessions):
    statement: np.ndarray  # (N, T) int64 index into STATEMENTS


class ElicitJudgeEnv(TextEnv[ToyDesign, ToySessions]):
    """Phase 0 elicits P(statement) as two decimals; phase 1 is a scored Yes/No/Defer bet."""

    experiment: ClassVar[str] = "toy-elicit-judge"
    design_cls: ClassVar[type[Design]] = ToyDesign
    action_dtype: ClassVar[Any] = np.float64
    #: A probability (phase 0) or a judgement index (phase 1); nothing is paid.
    table_schema: ClassVar[TrialSchema] = TrialSchema(action=Values("number", low=0.0, high=float(len(JUDGEMENTS) - 1)),
                                                      reward=Values("float", low=0.0, high=0.0))

    def __init__(self, design: ToyDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        self.observation_space = spaces.Dict({"trial": spaces.Discrete(self.design.n_trials + 1),
                                              "prompt": self.prompt_space(500)})
        self.declare_phases(
            Phase("elicit", spaces.Box(0.0, 1.0, shape=(), dtype=np.float64), self.parse_probability,
                  skip_rest_if_invalid=self.design.gate),
            Phase("judge", spaces.Discrete(len(self.design.judgements)), self.parse_judgement,
                  response=ScoredResponse(self.design.judgements, n_samples=self.design.n_samples)),
        )

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return 2 * design.n_trials

    @classmethod
    def sample_sessions(cls, design: ToyDesign, n: int, rng: np.random.Generator) -> ToySessions:
        return ToySessions(statement=rng.integers(0, len(STATEMENTS), size=(n, design.n_trials)))

    def _start(self) -> None:
        """No rendering state: every phase is a fresh prompt."""

    def _play(self, action: Any) -> float:
        return 0.0

    def _statement(self) -> str:
        assert self.session is not None
        return STATEMENTS[int(self.session.statement[0, min(self.trial, self.design.n_trials - 1)])]

    def _observation(self) -> dict[str, Any]:
        done = self._terminated()
        return {"trial": self.trial, "prompt": "(session finished)" if done else self.render_prompt()}

    def render_prompt(self) -> str:
        if self.phase_index == 0:
            return f"Q: What is the probability that {self._statement()}?\nA: 0."
        return f"Q: Would you bet that {self._statement()}? Answer Yes, No or Defer.\nA:"

    def parse_probability(self, text: str) -> ParseResult:
        return parse_decimal_digits(text)

    def parse_judgement(self, text: str) -> ParseResult:
        """The continuation the answer starts with (the longest, ignoring surrounding spaces)."""
        head = (text or "").strip()
        options = [(len(c.strip()), k) for k, c in enumerate(self.design.judgements)
                   if c.strip() and head.startswith(c.strip())]
        if not options:
            return ParseResult.failure(f"expected one of {self.design.judgements}, got {text!r}")
        return ParseResult.success(max(options)[1])

    @classmethod
    def trials_table(cls, design: ToyDesign, sessions: ToySessions, outcomes: Outcomes, *,
                     agent: str = "unknown", params: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
        shape = (sessions.n_subjects, design.n_trials)
        scored = None if outcomes.scored is None else outcomes.scored[:, 1::2]
        stimulus = {"statement": sessions.statement,
                    **scored_columns(scored, len(design.judgements), shape, prefix="judge")}
        raw = outcomes.raw_response[:, 0::2] if outcomes.raw_response is not None else None
        return finish_table(cls.experiment, {**stimulus, "action": outcomes.action[:, 0::2],
                                             "reward": outcomes.reward[:, 0::2], "valid": outcomes.valid[:, 0::2],
                                             "raw_response": raw}, agent=agent, params=params)
