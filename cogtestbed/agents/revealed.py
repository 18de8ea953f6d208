"""Synthetic subjects of the revealed-belief family, each with a numba batch path.

=====================  ======================================================================
``rational``           the rational observer: q = p* on RevB, all mass on the correct MCQ answer
``dissonant``          the softmax agent of :mod:`cogtestbed.inference.revealed_model` (τ, β_first,
                       β_label, β_anchor, β_round, β_mid, κ; StaA θ, β_pos; Dirichlet ``noise``);
                       it answers with the exact distribution (``method="exact"``)
``dissonant-sampler``  the same agent behind a sample-only API: the design's ``n_samples`` draws
                       per step (at most :data:`SAMPLER_N`), recorded as the empirical
                       distribution (``method="sampled"``, its N)
=====================  ======================================================================

Randomness: the dissonant agent draws one uniform per step (it seeds a splitmix64 stream for
the Dirichlet draw when ``noise`` > 0); the sampler draws :data:`SAMPLER_N` uniforms per step
and uses the first ``n_samples`` of them (inverse-CDF multinomial draws), so every sample count
of a sweep plays the same random stream.  The batch kernel and the step path call the same per-step function, so the
tables are identical for the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes, ScoredAnswer
from cogtestbed.environments.revealed import (
    DEFAULT_N_SAMPLES,
    EXPERIMENT,
    RevealedDesign,
    RevealedSessions,
    item_arrays,
)
from cogtestbed.environments.revealed_items import MAX_OUTCOMES
from cogtestbed.errors import InputError
from cogtestbed.inference.revealed_model import DISSONANT_PARAMETERS, SMOOTH_EPS, eta_row
from cogtestbed.interpreted import kernel
from cogtestbed.numerics import gamma_draw, log_softmax, splitmix64_next
from cogtestbed.parameters import ParameterSet

#: Uniforms the sample-only agent consumes per step: the most samples per item it can draw (this
#: project's noise-floor table, not the paper's, uses N = 100, 500, 1000); the design's
#: ``n_samples`` says how many it draws.
SAMPLER_N = 1000
MODE_RATIONAL, MODE_EXACT, MODE_SAMPLED = 0, 1, 2


@njit(cache=True)
def log_gamma_draw(a: float, state: np.uint64) -> tuple[np.uint64, float]:
    """ln of a Gamma(a, 1) draw, in log space so that tiny shapes do not underflow: for a < 1,
    G(a) = G(a + 1)·U^(1/a) (Marsaglia & Tsang 2000), i.e. ln G = ln G(a + 1) + ln U / a."""
    if a < 1.0:
        state, u = splitmix64_next(state)
        state, g = gamma_draw(a + 1.0, state)
        return state, math.log(g) + math.log(u) / a
    state, g = gamma_draw(a, state)
    return state, math.log(g)


@njit(cache=True)
def step_logprobs(mode: int, w: np.ndarray, channel: int, k: int, base: np.ndarray, feat: np.ndarray,
                  correct: int, u: np.ndarray, out: np.ndarray) -> None:
    """The answer's log-probabilities of one step into ``out[:k]`` (module docstring)."""
    if mode == MODE_RATIONAL:
        if channel == 1:
            for j in range(k):
                out[j] = 0.0 if j == correct else -np.inf
            return
        keep = np.empty(k)
        for j in range(k):
            keep[j] = base[j] if feat[5, j] == 0.0 else -np.inf
        lq = log_softmax(keep)
        for j in range(k):
            out[j] = lq[j]
        return
    eta = np.empty(k)
    eta_row(w, channel, k, base, feat, correct, eta)
    lq = log_softmax(eta)
    if mode == MODE_EXACT:
        nu = w[9]
        if nu <= 0.0 or not math.isfinite(1.0 / nu):  # ν → 0: the Dirichlet's limit, its mean
            for j in range(k):
                out[j] = lq[j]
            return
        state = np.uint64(int(u[0] * 9007199254740992.0))
        lg = np.empty(k)
        for j in range(k):
            qs = (1.0 - k * SMOOTH_EPS) * math.exp(lq[j]) + SMOOTH_EPS
            state, lg[j] = log_gamma_draw(qs / nu, state)
        lx = log_softmax(lg)
        for j in range(k):
            out[j] = lx[j]
        return
    # sampled: inverse-CDF draws
    counts = np.zeros(k)
    cdf = np.empty(k)
    acc = 0.0
    for j in range(k):
        acc += math.exp(lq[j])
        cdf[j] = acc
    for i in range(u.shape[0]):
        x = u[i] * acc
        j = 0
        while j < k - 1 and cdf[j] <= x:
            j += 1
        counts[j] += 1.0
    n = float(u.shape[0])
    for j in range(k):
        out[j] = math.log(counts[j] / n) if counts[j] > 0 else -np.inf


@njit(cache=True)
def _simulate_kernel(mode: int, w: np.ndarray, item: np.ndarray, channel: np.ndarray, correct: np.ndarray,
                     kk: np.ndarray, base: np.ndarray, feat: np.ndarray, uniforms: np.ndarray,
                     draws: int, used: int, out: np.ndarray) -> None:
    n_sub, n_t = item.shape
    for s in range(n_sub):
        for t in range(n_t):
            i = item[s, t]
            k = kk[i] if channel[s, t] == 0 else 5
            step_logprobs(mode, w[s], channel[s, t], k, base[i], feat[i], correct[s, t],
                          uniforms[s, t * draws:t * draws + used], out[s, t])


def _weights(params: Mapping[str, Any], n: int) -> np.ndarray:
    names = DISSONANT_PARAMETERS.names
    return np.ascontiguousarray(np.stack([np.broadcast_to(np.asarray(params.get(p, 0.0), dtype=np.float64), (n,))
                                          for p in names], axis=1))


class _RevealedAgent(SyntheticAgent[RevealedDesign, RevealedSessions]):
    """Shared step and batch paths (subclasses set :attr:`mode` and the parameters)."""

    experiment: ClassVar[str] = EXPERIMENT
    mode: ClassVar[int] = MODE_EXACT
    draws_per_trial: ClassVar[int] = 1

    def _reset_state(self) -> None:
        pass

    def _w(self) -> np.ndarray:
        return _weights(self.params, 1)[0]

    def act(self, obs: Mapping[str, Any]) -> ScoredAnswer:
        k = int(obs["n_outcomes"]) if obs["channel"] == 0 else 5
        base = np.ascontiguousarray(obs["prior_logp"], dtype=np.float64)
        feat = np.ascontiguousarray(obs["features"], dtype=np.float64)
        out = np.full(MAX_OUTCOMES, np.nan)
        u = self.uniforms()
        if self.mode == MODE_SAMPLED and not hasattr(obs.get("response"), "n_samples"):
            raise InputError(self._no_samples_on_generated())
        used = self.draws_used(int(getattr(obs.get("response"), "n_samples", 0) or 0))
        step_logprobs(self.mode, self._w(), int(obs["channel"]), k, base, feat, int(obs["correct"]),
                      np.ascontiguousarray(u[:used], dtype=np.float64), out)
        return _answer(out[:k], self.mode, used)

    @classmethod
    def _no_samples_on_generated(cls) -> str:
        return (f"agent {cls.name} answers by sampling a scored distribution, and a generated StaA step "
                "(design staa_mode='generated') has none to sample: use staa_mode='scored', or an agent "
                "that answers exactly")

    @classmethod
    def draws_used(cls, n_samples: int) -> int:
        """Uniforms a step uses: all of them, or a sampler's ``n_samples`` (at most its draws)."""
        if cls.mode != MODE_SAMPLED:
            return cls.draws_per_trial
        if not 1 <= n_samples <= cls.draws_per_trial:
            raise InputError(f"agent {cls.name} draws 1 to {cls.draws_per_trial} samples per item, "
                             f"the design asks for n_samples={n_samples}")
        return n_samples

    @classmethod
    def simulate_batch(cls, design: RevealedDesign, sessions: RevealedSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        if cls.mode == MODE_SAMPLED and "staa" in design.channels and design.staa_mode == "generated":
            raise InputError(cls._no_samples_on_generated())  # as the step path refuses it
        arrays = item_arrays(design)
        n, t = sessions.item.shape
        logp = np.full((n, t, MAX_OUTCOMES), np.nan)
        used = cls.draws_used(design.n_samples)
        kernel(_simulate_kernel)(cls.mode, _weights(params, n), sessions.item, sessions.channel, sessions.correct,
                         arrays.n_outcomes, arrays.prior_logp, arrays.features,
                         np.ascontiguousarray(uniforms, dtype=np.float64), cls.draws_per_trial, used, logp)
        k = np.where(sessions.channel == 0, arrays.n_outcomes[sessions.item], 5)
        finite = np.where(np.arange(MAX_OUTCOMES)[None, None, :] < k[..., None], logp, -np.inf)
        action = np.argmax(finite, axis=2)
        sampled = cls.mode == MODE_SAMPLED
        return Outcomes(
            action=action.astype(np.int64), reward=np.full((n, t), np.nan), valid=np.ones((n, t), dtype=bool),
            played=np.ones((n, t), dtype=bool),
            extra={"logprobs": logp, "mass_outside": np.full((n, t), np.nan),
                   "method": np.full((n, t), 1 if sampled else 0, dtype=np.int64),
                   "n_samples": np.full((n, t), used if sampled else 0, dtype=np.int64)},
        )


def _answer(lp: np.ndarray, mode: int, n: int) -> ScoredAnswer:
    if mode == MODE_SAMPLED:
        return ScoredAnswer(lp.copy(), method="sampled", n_samples=n)
    return ScoredAnswer(lp.copy())


class RationalAgent(_RevealedAgent):
    """The rational observer: p* on RevB, the correct answer with probability 1 on StaA."""

    name: ClassVar[str] = "rational"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "rational")
    mode: ClassVar[int] = MODE_RATIONAL
    draws_per_trial: ClassVar[int] = 0


class DissonantAgent(_RevealedAgent):
    """The dissonant softmax agent, answering with its exact distribution."""

    name: ClassVar[str] = "dissonant"
    parameters: ClassVar[ParameterSet] = DISSONANT_PARAMETERS
    #: CPU µs a step interpreted with ``noise`` = 0.  Measured 26 Nov 2026 by
    #: ``benchmarks/bench_first_call.py --interpreted-cost``: 21.7.
    interpreted_step_us: ClassVar[float] = 25.0
    #: ... with ``noise`` > 0 (a Gamma draw per option).  Measured 26 Nov 2026 by the same command (its
    #: noise cases): 130–147 at noise 0.01, 136–157 at 0.1, 140–161 at 0.5, 141–161 at 1 (two runs).
    NOISY_STEP_US: ClassVar[float] = 175.0

    @classmethod
    def interpreted_cost_us(cls, design: RevealedDesign | None, params: Mapping[str, Any]) -> float:
        """:attr:`NOISY_STEP_US` for the subjects with Dirichlet ``noise`` > 0, else :attr:`interpreted_step_us`."""
        noisy = cls.share_of_subjects(params, "noise", lambda noise: noise > 0.0)
        return float(cls.interpreted_step_us + noisy * (cls.NOISY_STEP_US - cls.interpreted_step_us))


class DissonantSampler(_RevealedAgent):
    """The dissonant agent behind a sample-only API (the design's ``n_samples`` draws per step)."""

    name: ClassVar[str] = "dissonant-sampler"
    parameters: ClassVar[ParameterSet] = DISSONANT_PARAMETERS
    mode: ClassVar[int] = MODE_SAMPLED
    draws_per_trial: ClassVar[int] = SAMPLER_N
    #: CPU µs a step interpreted: :attr:`STEP_US` plus :attr:`DRAW_US` per sample the design's
    #: ``n_samples`` draws.  Measured 26 Nov 2026 by ``benchmarks/bench_first_call.py --interpreted-cost``
    #: (its n_samples cases): 34 at 1, 127 at 100, 314 at 300, 964 at 1000.  ``interpreted_step_us``
    #: is the figure at the default ``n_samples`` (100).
    STEP_US: ClassVar[float] = 40.0
    DRAW_US: ClassVar[float] = 1.0
    interpreted_step_us: ClassVar[float] = STEP_US + DRAW_US * DEFAULT_N_SAMPLES

    @classmethod
    def interpreted_cost_us(cls, design: RevealedDesign | None, params: Mapping[str, Any]) -> float:
        """:attr:`STEP_US` + :attr:`DRAW_US` × the design's ``n_samples`` (the inverse-CDF draws a step makes)."""
        n_samples = DEFAULT_N_SAMPLES if design is None else design.n_samples
        return float(cls.STEP_US + cls.DRAW_US * n_samples)


def sampler_agent(n: int) -> type[DissonantSampler]:
    """A sample-only dissonant agent that can draw up to ``n`` completions per step (designs with
    ``n_samples`` beyond :data:`SAMPLER_N`)."""
    if n < 1:
        raise InputError("a sampler needs at least one draw per step")
    return type(f"DissonantSampler{n}", (DissonantSampler,), {"draws_per_trial": n})  # its cost: n_samples


AGENTS: dict[str, type[SyntheticAgent]] = {
    "rational": RationalAgent, "dissonant": DissonantAgent, "dissonant-sampler": DissonantSampler,
}
