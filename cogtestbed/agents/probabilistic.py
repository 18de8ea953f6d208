"""Synthetic agents for probabilistic reasoning: ``random`` (CogBench's) and
``generalised-bayes`` (the model of :mod:`cogtestbed.inference.probabilistic`).

* ``random``: CogBench's ``random_fct`` — a uniform integer 1–99 read as 0.XX (one uniform u per
  judgement: k = 1 + ⌊99·u⌋).
* ``generalised-bayes``: reports σ(β0 + β1·logit P(left) + β2·logit P(ball | left) + σ·z) with
  z standard normal from two uniforms (Box–Muller); β1 = β2 = 1, β0 = σ = 0 is Bayes-optimal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.probabilistic import (
    EXPERIMENT,
    ProbabilisticDesign,
    ProbabilisticSessions,
    bayes_posterior,
)
from cogtestbed.inference.probabilistic import PARAMETERS, report
from cogtestbed.interpreted import kernel
from cogtestbed.parameters import ParameterSet, per_subject


@njit(cache=True)
def random_estimate(u: float) -> float:
    """CogBench's random answer: integer k ~ U{1..99}, reported as k/100."""
    return (1.0 + np.floor(99.0 * u)) / 100.0


@njit(cache=True)
def simulate_gb_kernel(prior: np.ndarray, lh: np.ndarray, red: np.ndarray, beta_prior: np.ndarray,
                       beta_lik: np.ndarray, bias: np.ndarray, noise_sd: np.ndarray,
                       uniforms: np.ndarray) -> np.ndarray:
    """Reports of N generalised-Bayes subjects on (N, T) judgements (2 uniforms each)."""
    n, t_max = prior.shape
    out = np.empty((n, t_max))
    for i in range(n):
        for t in range(t_max):
            lik = lh[i, t] if red[i, t] else 1.0 - lh[i, t]
            out[i, t] = report(beta_prior[i], beta_lik[i], bias[i], noise_sd[i], prior[i, t], lik,
                               uniforms[i, 2 * t], uniforms[i, 2 * t + 1])
    return out


def _outcomes(sessions: ProbabilisticSessions, estimate: np.ndarray) -> Outcomes:
    likelihood = np.where(sessions.red, sessions.lh, 1.0 - sessions.lh)
    reward = 1.0 - np.abs(bayes_posterior(sessions.prior, likelihood) - estimate)
    n, t = estimate.shape
    return Outcomes(action=np.asarray(estimate, dtype=np.float64), reward=reward,
                    valid=np.ones((n, t), dtype=bool), played=np.ones((n, t), dtype=bool))


class RandomAgent(SyntheticAgent[ProbabilisticDesign, ProbabilisticSessions]):
    """CogBench's random agent: a uniform integer 1–99 as the probability in hundredths."""

    name: ClassVar[str] = "random"
    interpreted_step_us: ClassVar[float] = 65.0  # measured 60: see the base class
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    draws_per_trial: ClassVar[int] = 1

    def _reset_state(self) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> float:
        return float(random_estimate(float(self.uniforms()[0])))

    @classmethod
    def simulate_batch(cls, design: ProbabilisticDesign, sessions: ProbabilisticSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        estimate = (1.0 + np.floor(99.0 * uniforms)) / 100.0
        return _outcomes(sessions, estimate)


class GeneralisedBayesAgent(SyntheticAgent[ProbabilisticDesign, ProbabilisticSessions]):
    """Generalised-Bayes reporter with Gaussian log-odds noise (β1, β2, β0, σ)."""

    name: ClassVar[str] = "generalised-bayes"
    interpreted_step_us: ClassVar[float] = 70.0  # measured 67 (a judgement's urn arithmetic): see the base class
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = PARAMETERS
    draws_per_trial: ClassVar[int] = 2

    def _reset_state(self) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> float:
        u = self.uniforms()
        prior, lh = float(obs["prior"]), float(obs["lh"])
        lik = lh if int(obs["red"]) else 1.0 - lh
        p = self.params
        return float(report(p["beta_prior"], p["beta_likelihood"], p["bias"], p["noise_sd"],
                            prior, lik, float(u[0]), float(u[1])))

    @classmethod
    def simulate_batch(cls, design: ProbabilisticDesign, sessions: ProbabilisticSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        n = sessions.n_subjects

        def arr(name: str) -> np.ndarray:
            return per_subject(params[name], n)

        estimate = kernel(simulate_gb_kernel)(
            np.ascontiguousarray(sessions.prior), np.ascontiguousarray(sessions.lh),
            np.ascontiguousarray(sessions.red), arr("beta_prior"), arr("beta_likelihood"),
            arr("bias"), arr("noise_sd"), np.ascontiguousarray(uniforms),
        )
        return _outcomes(sessions, estimate)


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, GeneralisedBayesAgent)}
