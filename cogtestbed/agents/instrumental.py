"""Synthetic agents for instrumental learning: ``random``, ``rw`` (Rescorla–Wagner) and ``rw-pm``
(RW± with separate learning rates for positive and negative prediction errors).

Each agent simulates the matching model of :mod:`cogtestbed.inference.instrumental`: the batch path
with its numba kernel, the step path (``act``/``update``) in plain Python with the same operations
(``prob_arm0_python``, ``rw_learning_rate.py_func``). Values start at
0.5 per casino arm; choice: arm 0 iff u < P(arm 0) = σ(β·(V[c,0] − V[c,1])) with one uniform u per
trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.instrumental import (
    EXPERIMENT,
    InstrumentalDesign,
    InstrumentalSessions,
)
from cogtestbed.inference.instrumental import (
    V0,
    RescorlaWagner,
    RescorlaWagnerPM,
    prob_arm0_python,
    rw_learning_rate,
    simulate_rwpm_kernel,
)
from cogtestbed.lapse import LapseDraws
from cogtestbed.parameters import ParameterSet, per_subject


class _BanditAgent(KernelLapsingAgent[InstrumentalDesign, InstrumentalSessions]):
    """Shared state and batch path: a (casino × arm) value table updated by RW±."""

    experiment: ClassVar[str] = EXPERIMENT
    def _reset_state(self) -> None:
        self.values = np.full((4, 2), V0)

    # RW± rates and inverse temperature of this agent
    def _rates(self) -> tuple[float, float, float]:
        raise NotImplementedError

    def act(self, obs: Mapping[str, Any]) -> int:
        c = int(obs["casino"]) - 1
        u = float(self.uniforms()[0])
        beta = self._rates()[2]
        return 0 if u < prob_arm0_python(beta, self.values[c, 0], self.values[c, 1]) else 1

    def update(
        self, obs: Mapping[str, Any], action: Any, reward: float, next_obs: Mapping[str, Any]
    ) -> None:
        if action is None or int(action) < 0:
            return
        c, a = int(obs["casino"]) - 1, int(action)
        alpha_pos, alpha_neg, _ = self._rates()
        delta = reward - self.values[c, a]
        self.values[c, a] += rw_learning_rate.py_func(alpha_pos, alpha_neg, delta) * delta

    @classmethod
    def _batch_rates(cls, params: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    @classmethod
    def simulate_batch_lapsed(
        cls,
        design: InstrumentalDesign,
        sessions: InstrumentalSessions,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
        lapse: LapseDraws,
    ) -> Outcomes:
        n = sessions.n_subjects
        alpha_pos, alpha_neg, beta = (per_subject(x, n) for x in cls._batch_rates(params, n))
        actions, rewards, valid = simulate_rwpm_kernel(
            sessions.casino - 1, sessions.reward_draws, alpha_pos, alpha_neg, beta,
            np.ascontiguousarray(uniforms), design.n_casinos,
            np.ascontiguousarray(lapse.kind), np.ascontiguousarray(lapse.u[..., 0]),
        )
        return Outcomes(action=actions, reward=rewards, valid=valid)


class RandomAgent(_BanditAgent):
    """CogBench's random agent: a 50/50 coin flip each trial (RW kernel with β = 0)."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")

    def _rates(self) -> tuple[float, float, float]:
        return 0.0, 0.0, 0.0

    @classmethod
    def _batch_rates(cls, params: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
        zero = np.zeros(n)
        return zero, zero, zero


class RWAgent(_BanditAgent):
    """Rescorla–Wagner learner with softmax choice (α, β)."""

    name: ClassVar[str] = "rw"
    parameters: ClassVar[ParameterSet] = RescorlaWagner.parameters

    def _rates(self) -> tuple[float, float, float]:
        return self.params["alpha"], self.params["alpha"], self.params["beta"]

    @classmethod
    def _batch_rates(cls, params: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
        return params["alpha"], params["alpha"], params["beta"]


class RWPMAgent(_BanditAgent):
    """RW± learner: α⁺ after positive, α⁻ after negative prediction errors; softmax β."""

    name: ClassVar[str] = "rw-pm"
    parameters: ClassVar[ParameterSet] = RescorlaWagnerPM.parameters

    def _rates(self) -> tuple[float, float, float]:
        return self.params["alpha_pos"], self.params["alpha_neg"], self.params["beta"]

    @classmethod
    def _batch_rates(cls, params: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
        return params["alpha_pos"], params["alpha_neg"], params["beta"]


AGENTS: dict[str, type[SyntheticAgent]] = {
    a.name: a for a in (RandomAgent, RWAgent, RWPMAgent)
}
