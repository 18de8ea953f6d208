"""Synthetic agents for temporal discounting: ``random`` (CogBench's 50/50 answer on every
question) and ``hyperbolic`` (V = A/(1 + k·D) with a logistic choice rule, see
:mod:`cogtestbed.inference.discounting`).  One uniform per question: Option 1 iff
``u < P(Option 1)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.discounting import (
    EXPERIMENT,
    MAX_QUESTIONS,
    QUESTION_CODES,
    DiscountingDesign,
    DiscountingSessions,
)
from cogtestbed.inference.discounting import (
    HyperbolicModel,
    prob_option1,
    question_tables,
    simulate_staircase_kernel,
)
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import LapseDraws
from cogtestbed.parameters import ParameterSet, per_subject


class _DiscountingAgent(KernelLapsingAgent[DiscountingDesign, DiscountingSessions]):
    experiment: ClassVar[str] = EXPERIMENT
    #: P(Option 1) on every question, or −1 to use the hyperbolic rule.
    p_random: ClassVar[float] = -1.0

    def _reset_state(self) -> None:
        pass

    def prob_option1(self, obs: Mapping[str, Any]) -> float:
        a, d = obs["amounts"], obs["delays"]
        return float(prob_option1(self.params["k"], self.params["temperature"], float(a[0]),
                                  float(d[0]), float(a[1]), float(d[1]), float(obs["scale"])))

    def act(self, obs: Mapping[str, Any]) -> int:
        u = float(self.uniforms()[0])
        p1 = self.p_random if self.p_random >= 0 else self.prob_option1(obs)
        return 0 if u < p1 else 1

    @classmethod
    def simulate_batch_lapsed(
        cls,
        design: DiscountingDesign,
        sessions: DiscountingSessions,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
        lapse: LapseDraws,
    ) -> Outcomes:
        n = sessions.n_subjects
        base, anom = question_tables(design)

        def arr(name: str, default: float) -> np.ndarray:
            return per_subject(params.get(name, default), n)

        actions, valid, played, questions = kernel(simulate_staircase_kernel)(
            base, anom, arr("k", 0.0), arr("temperature", 0.0), np.full(n, cls.p_random),
            np.ascontiguousarray(uniforms[:, :MAX_QUESTIONS]),
            np.ascontiguousarray(lapse.kind[:, :MAX_QUESTIONS]), np.ascontiguousarray(lapse.u[:, :MAX_QUESTIONS, 0]),
        )
        # the codes of the questions asked, which the table would otherwise replay from the answers
        return Outcomes(action=actions, reward=np.where(valid, 0.0, np.nan), valid=valid, played=played,
                        extra={QUESTION_CODES: questions})


class RandomAgent(_DiscountingAgent):
    """CogBench's random agent: Option 1 or 2 with probability ½ on every question."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    p_random: ClassVar[float] = 0.5


class HyperbolicAgent(_DiscountingAgent):
    """Hyperbolic discounter (k per year, choice temperature)."""

    name: ClassVar[str] = "hyperbolic"
    parameters: ClassVar[ParameterSet] = HyperbolicModel.parameters


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, HyperbolicAgent)}
