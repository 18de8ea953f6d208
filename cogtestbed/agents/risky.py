"""Synthetic agents for risky choice: ``random`` (either lottery with probability ½),
``prospect-theory`` (loss aversion λ, curvature α, sensitivity θ) and ``expected-value`` (the
logistic rule on expected values), the deciders of :mod:`cogtestbed.inference.risky`.  One uniform
per trial: the first-named lottery iff ``u < P(first)``.  Choices depend on no earlier answer, so
lapses are applied after the fact (:attr:`RiskyChoiceEnv.answer_independent`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.risky import EXPERIMENT, RiskyDesign, RiskySessions
from cogtestbed.inference.risky import EV_PARAMETERS, PT_PARAMETERS, prob_first, simulate_choices_kernel
from cogtestbed.interpreted import kernel
from cogtestbed.parameters import ParameterSet, per_subject


class _RiskyAgent(SyntheticAgent[RiskyDesign, RiskySessions]):
    experiment: ClassVar[str] = EXPERIMENT
    #: P(first) on every trial, or −1 to use the value rule.
    p_fixed: ClassVar[float] = -1.0
    #: λ and α where the agent fixes them (the expected-value decider: 1 and 1).
    fixed: ClassVar[Mapping[str, float]] = {}

    def _reset_state(self) -> None:
        pass

    def _value(self, name: str) -> float:
        return float(self.fixed.get(name, self.params.get(name, 0.0)))

    def act(self, obs: Mapping[str, Any]) -> int:
        u = float(self.uniforms()[0])
        o = np.asarray(obs["outcomes"], dtype=np.float64)
        p = self.p_fixed if self.p_fixed >= 0 else float(
            prob_first(self._value("lambda"), self._value("alpha"), self._value("theta"), o))
        return 0 if u < p else 1

    @classmethod
    def simulate_batch(cls, design: RiskyDesign, sessions: RiskySessions, params: Mapping[str, np.ndarray],
                       uniforms: np.ndarray) -> Outcomes:
        n, t = sessions.context.shape

        def arr(name: str) -> np.ndarray:
            return per_subject(cls.fixed.get(name, params.get(name, 0.0)), n)

        shown = np.ascontiguousarray(sessions.shown, dtype=np.float64)
        action = kernel(simulate_choices_kernel)(shown, arr("lambda"), arr("alpha"), arr("theta"), cls.p_fixed,
                                         np.ascontiguousarray(uniforms[:, :t]))
        reward = np.where(action == 0, 0.5 * (shown[..., 0] + shown[..., 1]), 0.5 * (shown[..., 2] + shown[..., 3]))
        return Outcomes(action=action, reward=reward, valid=np.ones((n, t), dtype=bool),
                        played=np.ones((n, t), dtype=bool))


class RandomAgent(_RiskyAgent):
    """Either lottery with probability ½ on every trial."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    p_fixed: ClassVar[float] = 0.5


class ProspectTheoryAgent(_RiskyAgent):
    """Prospect-theory decider (λ, α, θ)."""

    name: ClassVar[str] = "prospect-theory"
    parameters: ClassVar[ParameterSet] = PT_PARAMETERS


class ExpectedValueAgent(_RiskyAgent):
    """Expected-value decider with a logistic choice rule (θ; λ = α = 1)."""

    name: ClassVar[str] = "expected-value"
    parameters: ClassVar[ParameterSet] = EV_PARAMETERS
    fixed: ClassVar[Mapping[str, float]] = {"lambda": 1.0, "alpha": 1.0}


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, ProspectTheoryAgent, ExpectedValueAgent)}
