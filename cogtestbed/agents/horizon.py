"""Synthetic agents for the horizon task: ``random`` (CogBench's) and ``info-bonus`` (the model of
:mod:`cogtestbed.inference.horizon`: information bonus A_h and temperature T_h per horizon).

* ``random``: CogBench's coin toss — F (arm 0) iff u < 0.5.
* ``info-bonus``: at every free choice, P(J) = σ((m_J − m_F + A_h·ΔI + b)/T_h) from the sample
  means and observation counts so far (forced trials included); J iff u < P(J).  At T_h = 0 the
  choice is the limit, the argmax (a tie: P(J) = ½).

Games have 1 or 6 free choices, so the number of steps varies; the step path reads each game's
row of pre-drawn uniforms (``SyntheticAgent.reset(rng, uniforms=...)``) so that it meets the same
random numbers as the batch path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.base import NO_ACTION, Outcomes
from cogtestbed.environments.horizon import EXPERIMENT, HorizonDesign, HorizonSessions
from cogtestbed.inference.horizon import PARAMETERS, info_diff, prob_j
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import LapseDraws, step_lapse, unit_lapse
from cogtestbed.parameters import ParameterSet, per_subject


@njit(cache=True)
def simulate_horizon_kernel(horizon: np.ndarray, forced: np.ndarray, rewards: np.ndarray,
                            bonus_h1: np.ndarray, bonus_h6: np.ndarray, temp_h1: np.ndarray,
                            temp_h6: np.ndarray, bias: np.ndarray, uniforms: np.ndarray,
                            random: bool, lapse_kind: np.ndarray, lapse_u: np.ndarray,
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play N games; returns (action, reward, valid, played) of shape (N, max_steps).

    Lapses (:mod:`cogtestbed.lapse`, per free choice; no rows: none): an invalid choice is recorded
    without a reward and adds nothing to the sample means; a random one, ⌊2u⌋, is paid and
    observed like any other."""
    n, n_forced = forced.shape
    steps = uniforms.shape[1]
    action = np.full((n, steps), NO_ACTION, dtype=np.int64)
    reward = np.full((n, steps), np.nan)
    valid = np.zeros((n, steps), dtype=np.bool_)
    played = np.zeros((n, steps), dtype=np.bool_)
    sums = np.zeros(2)
    counts = np.zeros(2)
    for i in range(n):
        sums[:] = 0.0
        counts[:] = 0.0
        for t in range(n_forced):
            a = forced[i, t]
            sums[a] += rewards[i, t, a]
            counts[a] += 1.0
        h6 = horizon[i] > 1
        for t in range(horizon[i]):
            u = uniforms[i, t]
            if random:
                a = 0 if u < 0.5 else 1
            else:
                dm = sums[1] / counts[1] - sums[0] / counts[0]
                di = info_diff(counts[0], counts[1])
                p = prob_j(dm, di, bonus_h6[i] if h6 else bonus_h1[i],
                           temp_h6[i] if h6 else temp_h1[i], bias[i])
                a = 1 if u < p else 0
            a = step_lapse(unit_lapse(lapse_kind, i, t), lapse_u, i, t, a, 2)
            played[i, t] = True
            if a < 0:
                continue
            r = rewards[i, n_forced + t, a]
            sums[a] += r
            counts[a] += 1.0
            action[i, t] = a
            reward[i, t] = r
            valid[i, t] = True
    return action, reward, valid, played


class _HorizonAgent(KernelLapsingAgent[HorizonDesign, HorizonSessions]):
    experiment: ClassVar[str] = EXPERIMENT
    draws_per_trial: ClassVar[int] = 1
    #: CPU µs a step interpreted.  Measured 26 Nov 2026 by ``benchmarks/bench_first_call.py --interpreted-cost``:
    #: random 21.8, info-bonus 25.0 (a session is 6 steps: the per-session overhead weighs).
    interpreted_step_us: ClassVar[float] = 30.0
    _random: ClassVar[bool] = False

    def _reset_state(self) -> None:
        pass

    @classmethod
    def simulate_batch_lapsed(cls, design: HorizonDesign, sessions: HorizonSessions,
                              params: Mapping[str, np.ndarray], uniforms: np.ndarray,
                              lapse: LapseDraws) -> Outcomes:
        n = sessions.n_subjects

        def arr(name: str) -> np.ndarray:
            return per_subject(params.get(name, 0.0) if not cls._random else 1.0, n)

        action, reward, valid, played = kernel(simulate_horizon_kernel)(
            sessions.horizon, sessions.forced, np.ascontiguousarray(sessions.rewards),
            arr("bonus_h1"), arr("bonus_h6"), arr("temperature_h1"), arr("temperature_h6"),
            arr("bias"), np.ascontiguousarray(uniforms), cls._random,
            np.ascontiguousarray(lapse.kind), np.ascontiguousarray(lapse.u[..., 0]),
        )
        return Outcomes(action=action, reward=reward, valid=valid, played=played)


class RandomAgent(_HorizonAgent):
    """CogBench's random agent: F iff u < 0.5 on every free choice."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    _random: ClassVar[bool] = True

    def act(self, obs: Mapping[str, Any]) -> int:
        return 0 if float(self.uniforms()[0]) < 0.5 else 1


class InfoBonusAgent(_HorizonAgent):
    """Information bonus A_h and logistic temperature T_h per horizon, side bias b."""

    name: ClassVar[str] = "info-bonus"
    parameters: ClassVar[ParameterSet] = PARAMETERS

    def act(self, obs: Mapping[str, Any]) -> int:
        u = float(self.uniforms()[0])
        counts, sums = np.asarray(obs["counts"], float), np.asarray(obs["sums"], float)
        p = self.params
        h6 = int(obs["horizon"]) > 1
        dm = sums[1] / counts[1] - sums[0] / counts[0]
        pj = prob_j(dm, info_diff(counts[0], counts[1]), p["bonus_h6"] if h6 else p["bonus_h1"],
                    p["temperature_h6"] if h6 else p["temperature_h1"], p["bias"])
        return 1 if u < pj else 0


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, InfoBonusAgent)}
