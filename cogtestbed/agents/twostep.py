"""Synthetic agents for the two-step task: ``random`` (CogBench's coin flips), ``hybrid`` (Daw et
al. 2011 model-based / model-free mixture with weight ``w``), ``model-based`` (w = 1) and
``model-free`` (w = 0).

Each agent simulates the matching model of :mod:`cogtestbed.inference.twostep` with the same numba
primitives the likelihood uses; one uniform per step (two per trial): first stage X iff
``u < P(X)``, second stage the planet's first alien iff ``u < P(first)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.twostep import EXPERIMENT, TwoStepDesign, TwoStepSessions
from cogtestbed.inference.twostep import (
    Q0,
    HybridModel,
    ModelBasedModel,
    ModelFreeModel,
    learn,
    simulate_hybrid_kernel,
    stage1_logit,
)
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import LapseDraws
from cogtestbed.numerics import sigmoid
from cogtestbed.parameters import ParameterSet, per_subject

KERNEL_PARAMS = ("w", "alpha", "beta", "lam", "persev")


class _TwoStepAgent(KernelLapsingAgent[TwoStepDesign, TwoStepSessions]):
    """Hybrid learner; subclasses fix some of (w, α, β, λ, p)."""

    experiment: ClassVar[str] = EXPERIMENT
    fixed: ClassVar[dict[str, float]] = {}

    def _value(self, name: str) -> float:
        return float(self.params.get(name, self.fixed.get(name, 0.0)))

    def _reset_state(self) -> None:
        self.qmf = np.full(2, Q0)
        self.q2 = np.full((2, 2), Q0)
        self.prev = -1
        self._a1 = -1
        self._common = 0.7

    def act(self, obs: Mapping[str, Any]) -> int:
        u = float(self.uniforms()[0])
        if int(obs["stage"]) == 0:
            x = stage1_logit(self.qmf, self.q2, self._value("w"), self._value("beta"),
                              self._value("persev"), self.prev, self._common)
            return 0 if u < sigmoid(x) else 1
        s = int(obs["planet"])
        p_first = sigmoid(self._value("beta") * (self.q2[s, 0] - self.q2[s, 1]))
        return 0 if u < p_first else 1

    def update(
        self, obs: Mapping[str, Any], action: Any, reward: float, next_obs: Mapping[str, Any]
    ) -> None:
        if action is None or int(action) < 0:
            if int(obs["stage"]) == 0:
                self.prev = -1  # an unanswered trial breaks stickiness, as in the likelihood kernel
            return
        if int(obs["stage"]) == 0:
            self._a1 = int(action)
            return
        learn(self.qmf, self.q2, self._a1, int(obs["planet"]), int(action), float(reward),
               self._value("alpha"), self._value("lam"))
        self.prev = self._a1

    @classmethod
    def _kernel_params(cls, params: Mapping[str, np.ndarray], n: int) -> list[np.ndarray]:
        return [per_subject(params.get(k, cls.fixed.get(k, 0.0)), n) for k in KERNEL_PARAMS]

    @classmethod
    def simulate_batch_lapsed(
        cls,
        design: TwoStepDesign,
        sessions: TwoStepSessions,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
        lapse: LapseDraws,
    ) -> Outcomes:
        n = sessions.n_subjects
        w, alpha, beta, lam, persev = cls._kernel_params(params, n)
        actions, rewards, valid, played = kernel(simulate_hybrid_kernel)(
            sessions.probs, sessions.transition_u, sessions.reward_u, w, alpha, beta, lam, persev,
            np.ascontiguousarray(uniforms), design.common_prob,
            np.ascontiguousarray(lapse.kind), np.ascontiguousarray(lapse.u[..., 0]),
        )
        return Outcomes(action=actions, reward=rewards, valid=valid, played=played)


class RandomAgent(_TwoStepAgent):
    """CogBench's random agent: a 50/50 coin on both stages (the hybrid kernel with β = 0)."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    fixed: ClassVar[dict[str, float]] = {"w": 0.0, "alpha": 0.0, "beta": 0.0, "lam": 0.0, "persev": 0.0}


class HybridAgent(_TwoStepAgent):
    """Hybrid model-based / model-free learner (w, α, β, λ, perseveration)."""

    name: ClassVar[str] = "hybrid"
    parameters: ClassVar[ParameterSet] = HybridModel.parameters


class ModelBasedAgent(_TwoStepAgent):
    """Purely model-based learner (w = 1)."""

    name: ClassVar[str] = "model-based"
    parameters: ClassVar[ParameterSet] = ModelBasedModel.parameters
    fixed: ClassVar[dict[str, float]] = ModelBasedModel.fixed


class ModelFreeAgent(_TwoStepAgent):
    """Purely model-free learner (w = 0)."""

    name: ClassVar[str] = "model-free"
    parameters: ClassVar[ParameterSet] = ModelFreeModel.parameters
    fixed: ClassVar[dict[str, float]] = ModelFreeModel.fixed


AGENTS: dict[str, type[SyntheticAgent]] = {
    a.name: a for a in (RandomAgent, HybridAgent, ModelBasedAgent, ModelFreeAgent)
}
