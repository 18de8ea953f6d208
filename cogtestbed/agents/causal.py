"""Synthetic reasoners for the collider task (after Dettki 2025, the CBN closed forms of App. A.3),
each with a numba batch path.

Every agent maps the 11 Roman tasks to probabilities p_t and answers through one shared
**response model** (all agents have its parameters):

* with probability ``pi0`` / ``pi100`` / ``pi50`` the rating is exactly 0 / 100 / 50 (endpoint
  and slider-start anchors: human ratings cluster there, Fig. B.2);
* otherwise y = p_t + noise: Gaussian with SD ``noise_sd`` on the probability scale (clipped to
  [0, 1]), or on the logit scale when ``logit_noise`` = 1 (logit-normal), or Beta(κ·p, κ·(1−p))
  when ``kappa`` > 0 (precision κ);
* the rating 100·y is rounded to multiples of ``round_to`` when ``round_to`` > 0 (1: integers,
  5: the multiples of 5 LLMs favour).

Agents (parameter names in brackets):

=================  ==========================================================================
``cbn``            leaky noisy-OR CBN (b, m1, m2, pc1, pc2), the normative reasoner
``rule``           deterministic rule follower: b = 0, m = 1, pC = .5 (EA ≈ .5, MV = 0, LAD = 1)
``weak-ea``        CBN with weak explaining away: VI ← VI + w·(VIII − VI), VII ← VII + w7·(VIII − VII)
``associative``    Markov violator: causes correlated by ``rho`` (latent common factor, changes
                   IV–XI) and IV/V shifted by ±``delta``/2
``conservative``   regression to the middle: p ← λ·p + (1 − λ)·0.5 (``lam``)
``logistic``       logistic-link CBN: e(c1, c2) = σ(w0 + w1·c1 + w2·c2), priors pc1, pc2
``distraction``    CBN whose answers are replaced by a uniform rating with probability
                   1 − exp(−γ·filler_words/100) (``gamma``): more filler, more noise
=================  ==========================================================================

Randomness: three uniforms per judgment (u1: mixture component, u2/u3: the noise draw, via
Box–Muller, or seeding a splitmix64 stream for the Beta draw), so the batch kernel and the
step path produce identical tables for the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.causal import (
    EXPERIMENT,
    ITEM_TASK,
    CausalDesign,
    CausalSessions,
    filler_words_table,
)
from cogtestbed.inference.cbn import N_TASKS, logistic_probs, noisy_or_probs, task_probs_general
from cogtestbed.interpreted import kernel
from cogtestbed.numerics import gamma_draw, logit, sigmoid, splitmix64_next, std_normal
from cogtestbed.parameters import Parameter, ParameterSet

# ----------------------------------------------------------------------------- parameters
RESPONSE_PARAMS = (
    Parameter("noise_sd", 0.0, 5.0, 0.1, "SD of the Gaussian judgment noise (probability or logit scale)"),
    Parameter("logit_noise", 0.0, 1.0, 0.0, "1: noise on the logit scale (logit-normal), 0: additive"),
    Parameter("kappa", 0.0, 1e4, 0.0, "Beta precision; > 0 replaces the Gaussian noise"),
    Parameter("pi0", 0.0, 1.0, 0.0, "probability of an exact 0"),
    Parameter("pi100", 0.0, 1.0, 0.0, "probability of an exact 100"),
    Parameter("pi50", 0.0, 1.0, 0.0, "probability of an exact 50 (slider start)"),
    Parameter("round_to", 0.0, 100.0, 0.0, "round ratings to multiples of this (0: no rounding)"),
)
RESPONSE_NAMES = tuple(p.name for p in RESPONSE_PARAMS)
CBN_PARAMS = (
    Parameter.unit("b", 0.2, "leak"),
    Parameter.unit("m1", 0.7, "strength of the queried cause"),
    Parameter.unit("m2", 0.7, "strength of the alternative cause"),
    Parameter.unit("pc1", 0.5, "prior of the queried cause"),
    Parameter.unit("pc2", 0.5, "prior of the alternative cause"),
)
KIND = {"cbn": 0, "rule": 1, "weak-ea": 2, "associative": 3, "conservative": 4, "logistic": 5,
        "distraction": 6}


# ----------------------------------------------------------------------------- kernels
@njit(cache=True)
def agent_probs(kind: int, th: np.ndarray, out: np.ndarray) -> None:
    """The 11 task probabilities of an agent of ``kind`` with model parameters ``th``."""
    if kind == 1:
        noisy_or_probs(0.0, 1.0, 1.0, 0.5, 0.5, out)
        return
    if kind == 5:
        logistic_probs(th[0], th[1], th[2], th[3], th[4], out)
        return
    b, m1, m2, q, r = th[0], th[1], th[2], th[3], th[4]
    if kind == 3:
        rho = th[6]
        cov = rho * math.sqrt(q * (1 - q) * r * (1 - r))
        # keep the joint a distribution (Fréchet bounds)
        cov = min(cov, min(q, r) - q * r)
        cov = max(cov, max(0.0, q + r - 1) - q * r)
        p11 = q * r + cov
        p10 = q - p11
        p01 = r - p11
        p00 = 1 - q - r + p11
        e00 = b
        e01 = 1 - (1 - b) * (1 - m2)
        e10 = 1 - (1 - b) * (1 - m1)
        e11 = 1 - (1 - b) * (1 - m1) * (1 - m2)
        task_probs_general(e00, e01, e10, e11, p11, p10, p01, p00, out)
        delta = th[5]
        out[3] = min(1.0, max(0.0, out[3] + 0.5 * delta))
        out[4] = min(1.0, max(0.0, out[4] - 0.5 * delta))
        return
    noisy_or_probs(b, m1, m2, q, r, out)
    if kind == 2:
        w, w7 = th[5], th[6]
        vi, vii, viii = out[5], out[6], out[7]
        out[5] = vi + w * (viii - vi)
        out[6] = vii + w7 * (viii - vii)
    elif kind == 4:
        lam = th[5]
        for t in range(N_TASKS):
            out[t] = lam * out[t] + (1 - lam) * 0.5


#: Distance from 0 and 1 inside which a Beta response draw is kept (see :func:`respond`).
BETA_INTERIOR_EPS = 1e-9


@njit(cache=True)
def respond(p: float, resp: np.ndarray, u1: float, u2: float, u3: float, lapse: float) -> float:
    """Rating (0–100) for task probability ``p`` (module docstring; ``resp`` in
    :data:`RESPONSE_NAMES` order; ``lapse`` = probability of a uniform rating)."""
    sd, logit_noise, kappa, pi0, pi100, pi50, round_to = (resp[0], resp[1], resp[2], resp[3],
                                                          resp[4], resp[5], resp[6])
    if lapse > 0.0 and u1 >= 1.0 - lapse:
        y = u2
    else:
        if lapse > 0.0:
            u1 = u1 / (1.0 - lapse)
        if u1 < pi0:
            y = 0.0
        elif u1 < pi0 + pi100:
            y = 1.0
        elif u1 < pi0 + pi100 + pi50:
            y = 0.5
        elif kappa > 0.0:
            pc = min(max(p, 1e-6), 1 - 1e-6)
            state = np.uint64(int(u2 * 4503599627370496.0)) * np.uint64(1048573) + np.uint64(
                int(u3 * 4503599627370496.0))
            state, ga = gamma_draw(pc * kappa, state)
            state, gb = gamma_draw((1 - pc) * kappa, state)
            if ga + gb > 0:
                y = ga / (ga + gb)
            else:  # both draws underflowed (κ → 0): the Beta's limit, Bernoulli(pc)
                state, u = splitmix64_next(state)
                y = 1.0 if u < pc else 0.0
            # keep the Beta part strictly inside (0, 1): exact 0 / 100 ratings come only from the
            # endpoint mixtures, as the zero-one-inflated Beta likelihood assumes (a Beta draw that
            # rounds to 1.0 in floating point would otherwise be scored as an endpoint; SBC caught it)
            y = min(max(y, BETA_INTERIOR_EPS), 1.0 - BETA_INTERIOR_EPS)
        else:
            z = std_normal(u2, u3)
            if logit_noise >= 0.5:
                pc = min(max(p, 1e-9), 1 - 1e-9)
                y = sigmoid(logit(pc) + sd * z)
            else:
                y = min(1.0, max(0.0, p + sd * z))
    rating = 100.0 * y
    if round_to > 0.0:
        rating = min(100.0, max(0.0, round(rating / round_to) * round_to))
    return rating


@njit(cache=True)
def simulate_kernel(kind: int, theta: np.ndarray, resp: np.ndarray, gamma: np.ndarray,
                    task: np.ndarray, filler: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Ratings of N subjects × T judgments (``uniforms``: (N, 3T), three per judgment)."""
    n, t_max = task.shape
    out = np.empty((n, t_max))
    probs = np.empty(N_TASKS)
    for i in range(n):
        agent_probs(kind, theta[i], probs)
        for t in range(t_max):
            lapse = 1.0 - math.exp(-gamma[i] * filler[i, t] / 100.0) if gamma[i] > 0 else 0.0
            out[i, t] = respond(probs[task[i, t]], resp[i], uniforms[i, 3 * t],
                                uniforms[i, 3 * t + 1], uniforms[i, 3 * t + 2], lapse)
    return out


# ----------------------------------------------------------------------------- agents
class ColliderAgent(SyntheticAgent[CausalDesign, CausalSessions]):
    """Shared step and batch paths; subclasses set :attr:`kind` and their model parameters."""

    experiment: ClassVar[str] = EXPERIMENT
    draws_per_trial: ClassVar[int] = 3
    kind: ClassVar[int] = 0
    #: CPU µs a step interpreted with ``kappa`` > 0 (two Gamma draws per answer).  Measured 26 Nov 2026
    #: by ``benchmarks/bench_first_call.py --interpreted-cost`` (its kappa cases; cbn and logistic): 30–31 at
    #: kappa 0.05 and 1, 24 at 20 and 1e4; 3.5 at kappa 0, within the base figure.
    KAPPA_STEP_US: ClassVar[float] = 35.0
    #: Model parameters in kernel order (response parameters follow).
    model_params: ClassVar[tuple[str, ...]] = ()
    #: Extra slots of the kernel's θ vector (name or None → 0).
    theta_layout: ClassVar[tuple[str | None, ...]] = ("b", "m1", "m2", "pc1", "pc2", None, None)

    def _reset_state(self) -> None:
        pass

    @classmethod
    def interpreted_cost_us(cls, design: CausalDesign | None, params: Mapping[str, Any]) -> float:
        """:attr:`KAPPA_STEP_US` for the subjects with ``kappa`` > 0 (Beta response noise), the base figure
        for the others."""
        beta = cls.share_of_subjects(params, "kappa", lambda kappa: kappa > 0.0)
        return float(cls.interpreted_step_us + beta * (cls.KAPPA_STEP_US - cls.interpreted_step_us))

    def _theta(self, values: Mapping[str, Any]) -> np.ndarray:
        return np.array([float(values[k]) if k is not None else 0.0 for k in self.theta_layout])

    def task_probabilities(self) -> np.ndarray:
        """The agent's 11 task probabilities (I…XI) before response noise."""
        out = np.empty(N_TASKS)
        agent_probs(self.kind, self._theta(self.params), out)
        return out

    def act(self, obs: Mapping[str, Any]) -> float:
        u = self.uniforms()
        p = self.task_probabilities()[int(obs["task"])]
        resp = np.array([self.params[k] for k in RESPONSE_NAMES])
        gamma = self.params.get("gamma", 0.0)
        lapse = 1.0 - math.exp(-gamma * float(obs["filler_words"]) / 100.0) if gamma > 0 else 0.0
        return float(respond(p, resp, float(u[0]), float(u[1]), float(u[2]), lapse))

    @classmethod
    def simulate_batch(cls, design: CausalDesign, sessions: CausalSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        n = sessions.n_subjects
        full = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)) for k, v in params.items()}
        theta = np.column_stack([full[k] if k is not None else np.zeros(n) for k in cls.theta_layout])
        resp = np.column_stack([full[k] for k in RESPONSE_NAMES])
        gamma = np.ascontiguousarray(full["gamma"]) if "gamma" in full else np.zeros(n)
        task = ITEM_TASK[sessions.item]
        filler = filler_words_table(design)[sessions.variant, sessions.cb]
        ratings = kernel(simulate_kernel)(cls.kind, np.ascontiguousarray(theta), np.ascontiguousarray(resp),
                                  gamma, np.ascontiguousarray(task),
                                  np.ascontiguousarray(filler, dtype=np.float64),
                                  np.ascontiguousarray(uniforms))
        return Outcomes(action=ratings, reward=np.full(ratings.shape, np.nan),
                        valid=np.ones(ratings.shape, dtype=bool))


def _pset(name: str, extra: tuple[Parameter, ...], base: tuple[Parameter, ...] = CBN_PARAMS,
          **defaults: float) -> ParameterSet:
    resp = tuple(Parameter(p.name, p.lower, p.upper, defaults.get(p.name, p.default), p.description)
                 for p in RESPONSE_PARAMS)
    return ParameterSet(base + extra + resp, name)


class CBNAgent(ColliderAgent):
    """Normative leaky noisy-OR CBN reasoner."""

    name: ClassVar[str] = "cbn"
    kind: ClassVar[int] = 0
    parameters: ClassVar[ParameterSet] = _pset("cbn", ())


class RuleAgent(ColliderAgent):
    """Deterministic rule follower (b = 0, m = 1, pC = .5), the frontier-LLM regime."""

    name: ClassVar[str] = "rule"
    kind: ClassVar[int] = 1
    parameters: ClassVar[ParameterSet] = _pset("rule", (), base=(), noise_sd=0.02)
    theta_layout: ClassVar[tuple[str | None, ...]] = (None,) * 7


class WeakEAAgent(ColliderAgent):
    """Partly ignores the alternative cause when the effect is present (weak explaining away)."""

    name: ClassVar[str] = "weak-ea"
    kind: ClassVar[int] = 2
    parameters: ClassVar[ParameterSet] = _pset("weak-ea", (
        Parameter.unit("w", 0.5, "VI moves this fraction of the way to VIII (1: no explaining away)"),
        Parameter.unit("w7", 0.0, "VII moves this fraction of the way to VIII"),
    ))
    theta_layout: ClassVar[tuple[str | None, ...]] = ("b", "m1", "m2", "pc1", "pc2", "w", "w7")


class AssociativeAgent(ColliderAgent):
    """Markov violator: correlated causes (ρ) and a direct IV/V shift (δ)."""

    name: ClassVar[str] = "associative"
    kind: ClassVar[int] = 3
    parameters: ClassVar[ParameterSet] = _pset("associative", (
        Parameter("delta", -1.0, 1.0, 0.1, "IV − V shift (MV) added on top of the CBN"),
        Parameter("rho", -1.0, 1.0, 0.0, "correlation of the two causes"),
    ))
    theta_layout: ClassVar[tuple[str | None, ...]] = ("b", "m1", "m2", "pc1", "pc2", "delta", "rho")


class ConservativeAgent(ColliderAgent):
    """Shrinks every CBN probability toward 0.5 by λ (hedging regime)."""

    name: ClassVar[str] = "conservative"
    kind: ClassVar[int] = 4
    parameters: ClassVar[ParameterSet] = _pset("conservative", (
        Parameter.unit("lam", 0.5, "weight of the CBN probability (1: normative, 0: always 50)"),
    ))
    theta_layout: ClassVar[tuple[str | None, ...]] = ("b", "m1", "m2", "pc1", "pc2", "lam", None)


class LogisticAgent(ColliderAgent):
    """CBN with a logistic link (misspecification check for the noisy-OR fit)."""

    name: ClassVar[str] = "logistic"
    kind: ClassVar[int] = 5
    parameters: ClassVar[ParameterSet] = _pset("logistic", (
        Parameter("w0", -3.0, 3.0, -1.5, "intercept (logit of the leak)"),
        Parameter("w1", -3.0, 3.0, 2.5, "weight of the queried cause"),
        Parameter("w2", -3.0, 3.0, 2.5, "weight of the alternative cause"),
        Parameter.unit("pc1", 0.5, "prior of the queried cause"),
        Parameter.unit("pc2", 0.5, "prior of the alternative cause"),
    ), base=())
    theta_layout: ClassVar[tuple[str | None, ...]] = ("w0", "w1", "w2", "pc1", "pc2", None, None)


class DistractionAgent(ColliderAgent):
    """CBN that lapses to a uniform rating more often the more filler the prompt carries."""

    name: ClassVar[str] = "distraction"
    kind: ClassVar[int] = 6
    parameters: ClassVar[ParameterSet] = _pset("distraction", (
        Parameter("gamma", 0.0, 100.0, 0.5, "lapse rate per 100 filler words"),
    ))


AGENTS: dict[str, type[SyntheticAgent]] = {
    a.name: a for a in (CBNAgent, RuleAgent, WeakEAAgent, AssociativeAgent, ConservativeAgent,
                        LogisticAgent, DistractionAgent)
}
