"""Synthetic agents for the restless bandit: ``random`` (CogBench's) and ``kalman`` (a Kalman-filter
chooser that reports its own probability that the chosen machine is the better one).

Each trial has two steps (choice, then confidence); every step consumes ``draws_per_trial``
uniforms.

* ``random``: CogBench's ``rdm_choice_agent`` (F iff u < 0.5) and ``rdm_confidence_agent``
  (uniform integer 1–99 read as 0.XX).
* ``kalman``: one Kalman filter per arm (prior N(50, 20²), observation sd 8, random-walk drift
  ``drift_sd`` per trial, which lets it track the unannounced switches).  Choice: J iff
  u < σ(β·(m_J − m_F)).  Confidence, reported *before* the outcome is seen (CogBench asks both
  questions on the same prompt): P(chosen is best) = Φ((m_c − m_o)/√(v_c + v_o)), passed through
  a miscalibration map σ(κ·logit P + δ + σ_c·z) and rounded to two decimals in [0.01, 0.99].
  κ = 1, δ = 0, σ_c = 0 is calibrated to its own beliefs; σ_c > 0 degrades meta-cognitive
  sensitivity, κ ≠ 1 / δ ≠ 0 distort calibration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.restless import CONFIDENCE, EXPERIMENT, RestlessDesign, RestlessSessions
from cogtestbed.inference.restless import (
    KALMAN_PARAMETERS,
    PRIOR_MEAN,
    PRIOR_SD,
    kalman_confidence,
    kalman_update,
)
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import RANDOM, LapseDraws, step_lapse, unit_lapse
from cogtestbed.numerics import sigmoid, std_normal
from cogtestbed.parameters import ParameterSet, per_subject


@njit(cache=True, inline="always")
def random_confidence(u: float) -> float:
    return (1.0 + np.floor(99.0 * u)) / 100.0


@njit(cache=True, inline="always")
def kalman_choice(m0: float, m1: float, beta: float, u: float) -> int:
    x = beta * (m1 - m0)
    return 1 if u < sigmoid(x) else 0


@njit(cache=True)
def simulate_restless_kernel(rewards: np.ndarray, n_trials: np.ndarray, drift: np.ndarray,
                             beta: np.ndarray, gain: np.ndarray, bias: np.ndarray,
                             noise: np.ndarray, uniforms: np.ndarray, dpt: int, random: bool,
                             lapse_kind: np.ndarray, lapse_u: np.ndarray,
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play N sessions; returns (action, reward, valid, played) of shape (N, 2·T_max).

    ``action`` holds the arm on choice steps and the confidence on confidence steps (floats, as
    the environment records a trial with a continuous phase).  The agent reads ``dpt`` uniforms
    per step it answers, in order.  Lapses (:mod:`cogtestbed.lapse`) cover a whole trial
    (``lapse_kind`` per trial, ``lapse_u`` per step; no rows: none): an invalid trial stops at its choice (no
    confidence question, no outcome learnt), a random one answers the arm ⌊2u⌋ and a confidence
    uniform on [0, 1] and learns from the random arm's reward.
    """
    n = rewards.shape[0]
    steps = 2 * rewards.shape[1]
    action = np.full((n, steps), np.nan)
    reward = np.full((n, steps), np.nan)
    valid = np.zeros((n, steps), dtype=np.bool_)
    played = np.zeros((n, steps), dtype=np.bool_)
    m = np.empty(2)
    v = np.empty(2)
    for i in range(n):
        m[:] = PRIOR_MEAN
        v[:] = PRIOR_SD * PRIOR_SD
        cursor = 0
        for t in range(n_trials[i]):
            s = 2 * t
            kind = unit_lapse(lapse_kind, i, t)
            u = uniforms[i, cursor]
            cursor += dpt
            a = (0 if u < 0.5 else 1) if random else kalman_choice(m[0], m[1], beta[i], u)
            a = step_lapse(kind, lapse_u, i, s, a, 2)
            played[i, s] = True
            if a < 0:
                continue
            r = rewards[i, t, a]
            uc = uniforms[i, cursor]
            if random:
                c = random_confidence(uc)
            else:
                z = std_normal(uc, uniforms[i, cursor + 1])
                c = kalman_confidence(m[a], v[a], m[1 - a], v[1 - a], gain[i], bias[i], noise[i], z)
            cursor += dpt
            if kind == RANDOM:  # uniform over the confidence phase's range [0, 1]
                c = 0.0 + lapse_u[i, s + 1] * (1.0 - 0.0)
            if not random:
                kalman_update(m, v, a, r, drift[i])
            action[i, s] = a
            reward[i, s] = r
            action[i, s + 1] = c
            reward[i, s + 1] = 0.0
            valid[i, s] = valid[i, s + 1] = played[i, s + 1] = True
    return action, reward, valid, played


class _RestlessAgent(KernelLapsingAgent[RestlessDesign, RestlessSessions]):
    experiment: ClassVar[str] = EXPERIMENT
    _random: ClassVar[bool] = False

    @classmethod
    def simulate_batch_lapsed(cls, design: RestlessDesign, sessions: RestlessSessions,
                              params: Mapping[str, np.ndarray], uniforms: np.ndarray,
                              lapse: LapseDraws) -> Outcomes:
        n = sessions.n_subjects

        def arr(name: str) -> np.ndarray:
            return per_subject(0.0 if cls._random else params[name], n)

        action, reward, valid, played = kernel(simulate_restless_kernel)(
            np.ascontiguousarray(sessions.rewards), sessions.block_lengths.sum(axis=1),
            arr("drift_sd"), arr("beta"), arr("confidence_gain"), arr("confidence_bias"),
            arr("confidence_noise"), np.ascontiguousarray(uniforms), cls.draws_per_trial, cls._random,
            np.ascontiguousarray(lapse.kind), np.ascontiguousarray(lapse.u[..., 0]),
        )
        return Outcomes(action=action, reward=reward, valid=valid, played=played)


class RandomAgent(_RestlessAgent):
    """CogBench's random agent: coin-flip choice, uniform 0.01–0.99 confidence."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    draws_per_trial: ClassVar[int] = 1
    _random: ClassVar[bool] = True

    def _reset_state(self) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> float | int:
        u = float(self.uniforms()[0])
        if int(obs["phase"]) == CONFIDENCE:
            return float(random_confidence(u))
        return 0 if u < 0.5 else 1


class KalmanAgent(_RestlessAgent):
    """Kalman-filter chooser reporting (mis)calibrated P(best) as its confidence."""

    name: ClassVar[str] = "kalman"
    parameters: ClassVar[ParameterSet] = KALMAN_PARAMETERS
    draws_per_trial: ClassVar[int] = 2

    def _reset_state(self) -> None:
        self.m = np.full(2, PRIOR_MEAN)
        self.v = np.full(2, PRIOR_SD * PRIOR_SD)
        self._pending: tuple[int, float] | None = None

    def act(self, obs: Mapping[str, Any]) -> float | int:
        u = self.uniforms()
        p = self.params
        if int(obs["phase"]) == CONFIDENCE:
            a = int(obs["choice"])
            z = std_normal(float(u[0]), float(u[1]))
            return float(kalman_confidence(self.m[a], self.v[a], self.m[1 - a], self.v[1 - a],
                                           p["confidence_gain"], p["confidence_bias"],
                                           p["confidence_noise"], z))
        return int(kalman_choice(self.m[0], self.m[1], p["beta"], float(u[0])))

    def update(self, obs: Mapping[str, Any], action: Any, reward: float,
               next_obs: Mapping[str, Any]) -> None:
        # learn only after the confidence report: both questions precede the outcome
        if int(obs["phase"]) != CONFIDENCE:
            if action is not None and int(action) >= 0:
                self._pending = (int(action), float(reward))
            return
        if self._pending is not None:
            kalman_update(self.m, self.v, self._pending[0], self._pending[1], self.params["drift_sd"])
            self._pending = None


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, KalmanAgent)}
