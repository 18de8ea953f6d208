"""Synthetic coin-guess subjects: ``softmax`` (the model's choice rule) and ``random``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.extend import Outcomes, ParameterSet, SyntheticAgent, per_subject

from .environments.coin import CoinDesign, CoinSessions
from .models import PARAMETERS, evidence, p_heads_coin


@njit(cache=True)
def softmax_kernel(heads: np.ndarray, flips: float, beta: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Guesses of N subjects on (N, T) trials: heads coin iff u < σ(β·L) (one uniform a trial)."""
    n, t_max = heads.shape
    out = np.empty((n, t_max), np.int64)
    for i in range(n):
        for t in range(t_max):
            ev = (2.0 * heads[i, t] - flips) * 0.8472978603872037  # log(0.7 / 0.3)
            out[i, t] = 1 if uniforms[i, t] < p_heads_coin(beta[i], ev) else 0
    return out


def _outcomes(sessions: CoinSessions, action: np.ndarray) -> Outcomes:
    reward = (action == sessions.heads_coin).astype(np.float64)
    return Outcomes(action=action.astype(np.int64), reward=reward, valid=np.ones(action.shape, dtype=bool),
                    played=np.ones(action.shape, dtype=bool))


class SoftmaxAgent(SyntheticAgent[CoinDesign, CoinSessions]):
    name: ClassVar[str] = "softmax"
    parameters: ClassVar[ParameterSet] = PARAMETERS
    draws_per_trial: ClassVar[int] = 1

    def _reset_state(self) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> int:
        ev = float(evidence(np.array([float(obs["heads"])]), np.array([float(obs["flips"])]))[0])
        return 1 if float(self.uniforms()[0]) < p_heads_coin(float(self.params["beta"]), ev) else 0

    @classmethod
    def simulate_batch(cls, design: CoinDesign, sessions: CoinSessions, params: Mapping[str, np.ndarray],
                       uniforms: np.ndarray) -> Outcomes:
        beta = per_subject(params["beta"], sessions.n_subjects)
        action = softmax_kernel(np.ascontiguousarray(sessions.heads), float(design.n_flips), beta,
                                np.ascontiguousarray(uniforms))
        return _outcomes(sessions, action)


class RandomAgent(SyntheticAgent[CoinDesign, CoinSessions]):
    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    draws_per_trial: ClassVar[int] = 1

    def _reset_state(self) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> int:
        return 1 if float(self.uniforms()[0]) < 0.5 else 0

    @classmethod
    def simulate_batch(cls, design: CoinDesign, sessions: CoinSessions, params: Mapping[str, np.ndarray],
                       uniforms: np.ndarray) -> Outcomes:
        return _outcomes(sessions, (np.asarray(uniforms) < 0.5).astype(np.int64))


AGENTS: dict[str, type[SyntheticAgent[Any, Any]]] = {a.name: a for a in (SoftmaxAgent, RandomAgent)}
