"""Synthetic observers for magnitude estimation (Ma, Wang & Fountas 2025, Sec. 3.2–3.3, App. A.13).

Units: every agent works on the session's normalised scale u = (x − a)/W of a session range
[a, a + W] and answers y = a + W·v, so one parameter set means the same thing in every task and
session (``mu_p`` is a position in the range, ``sigma_dec`` a fraction of W).  The log (Weber)
agent works on log(x + LOG_EPS) instead.

=========================  =====================================================================
``linear``                 v = w·u + b + σ_dec·z                            (w, b, sigma_dec)
``static-bayes``           v = (1 − w_prior)·u + w_prior·mu_p + σ_dec·z     (Eq. of Sec. 3.2)
``static-bayes-log``       the same on log(x + ε): log-normal answers (Weber–Fechner)
``static-bayes-gain``      v = g·[(1 − w)u + w·mu_p] + δ + σ_dec·z          (+ gain, offset)
``kalman``                 random-walk Kalman filter on the true x (q/r, σ_dec); μ0 = session
                           midpoint, P0 = KALMAN_P0·r, reset at every session
``observer``               Bayesian observer with sensory noise σ(modality, blur) and prior
                           precision growing with the context window and steering: the BCS
                           ablation shifts *emerge* (blur ⇒ τ_x↓, long context / steering ⇒ τ_p↑)
``ablation-inconsistent``  static Bayes whose w_prior *drops* by ``shift`` in every BCS ablation
``prior-dominant``         static Bayes with w_prior ∈ [0.9, 1] (BCS's s_a = 0 regime)
``combiner-*``             unimodal answers u + ε_text / u + ε_image; text+image answers fuse
                           them with weight α on text: ``equal`` (½), ``alpha`` (fixed α),
                           ``optimal`` (reliability weight σ_i²/(σ_t² + σ_i²)) and
                           ``underweight`` (λ times the optimal text weight: too much weight on
                           a poor image, like GPT-5 Mini on the maze task, App. A.12)
=========================  =====================================================================

Perceptual noise (observer, combiners) is *frozen*: a deterministic normal draw from the
stimulus's render seed and the channel (text / image), so the same picture is misperceived the
same way in the unimodal and multimodal sessions (what makes the cue-combination weights
identifiable, Sec. 3.3).  Decision noise σ_dec·z uses the trial's two uniforms (Box–Muller), so
the numba batch path and the step path produce identical tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.magnitude import (
    CONDITIONS,
    EXPERIMENT,
    MODALITIES,
    NUMERICAL_BIAS,
    MagnitudeDesign,
    MagnitudeSessions,
    step_arrays,
)
from cogtestbed.numerics import std_normal
from cogtestbed.parameters import Parameter, ParameterSet

#: [gap] ε of the log transform x' = log(x + ε) (App. A.13 does not give it).
LOG_EPS = 0.01
#: [gap] Kalman initial variance P0 in units of r (μ0 is the session midpoint; reset per session).
KALMAN_P0 = 1.0
#: Context window at which the observer's prior precision equals 1/prior_sd².
OBSERVER_REF_CONTEXT = 10.0
#: Condition codes of the BCS ablations and of biased steering (indices into CONDITIONS).
_BCS = np.array([CONDITIONS.index(c) for c in ("verbal", "numerical", "noise-constant",
                                               "noise-gradual", "context-long")], dtype=np.int64)
_STEERED = np.array([CONDITIONS.index(c) for c in ("verbal", "numerical", "numerical-biased")], dtype=np.int64)
_BIASED = CONDITIONS.index("numerical-biased")
_TEXT, _IMAGE, _BOTH = (MODALITIES.index(m) for m in ("text", "image", "text+image"))

KIND = {"linear": 0, "static-bayes": 1, "static-bayes-log": 2, "static-bayes-gain": 3, "kalman": 4,
        "observer": 5, "ablation-inconsistent": 6, "prior-dominant": 1, "combiner-equal": 8,
        "combiner-alpha": 9, "combiner-optimal": 10, "combiner-underweight": 11}


# ----------------------------------------------------------------------------- parameters
def _sigma_dec(default: float = 0.1) -> Parameter:
    return Parameter("sigma_dec", 0.0, 5.0, default, "decision noise SD (fraction of the session width)",
                     prior_mean=math.log(0.1), prior_sd=0.7, transform="log", search_floor=1e-4)


def _w_prior(lower: float = 0.0, default: float = 0.3) -> Parameter:
    return Parameter("w_prior", lower, 1.0, default, "prior weight τ_p/(τ_p + τ_x)", prior_mean=-0.5,
                     prior_sd=1.2, transform="logit")


MU_P = Parameter("mu_p", -1.0, 2.0, 0.5, "prior mean (position in the session range)", prior_mean=0.5,
                 prior_sd=0.3)
_SIGMA_TEXT = Parameter("sigma_text", 0.0, 2.0, 0.15, "text sensory noise SD (fraction of W)",
                        prior_mean=math.log(0.15), prior_sd=0.5, transform="log", search_floor=1e-4)
_SIGMA_IMAGE = Parameter("sigma_image", 0.0, 2.0, 0.1, "image sensory noise SD at no blur (fraction of W)",
                         prior_mean=math.log(0.1), prior_sd=0.5, transform="log", search_floor=1e-4)


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always")
def frozen_normal(seed: int, channel: int) -> float:
    """A standard normal fixed by (render seed, channel): splitmix64 (Steele et al. 2014) → two
    uniforms → Box–Muller."""
    z = np.uint64(seed) ^ (np.uint64(channel + 1) * np.uint64(0x9E3779B97F4A7C15))
    out = np.zeros(2)
    for k in range(2):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        r = z
        r = (r ^ (r >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        r = (r ^ (r >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        r = r ^ (r >> np.uint64(31))
        out[k] = float(r >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return std_normal(out[0], out[1])


@njit(cache=True, inline="always")
def _in(code: int, codes: np.ndarray) -> bool:
    for c in codes:  # noqa: SIM110 - a loop numba compiles (no generator any())
        if c == code:
            return True
    return False


@njit(cache=True)
def observer_weight(p: np.ndarray, modality: int, blur: float, context: int, condition: int) -> tuple[float, float]:
    """(w_prior, sensory variance) of the observer: τ_x from the modality and blur, τ_p from the
    context window and steering (parameters sigma_text, sigma_image, blur_gain, prior_sd,
    context_gain, steering_gain)."""
    var_t = p[0] * p[0]
    var_i = p[1] * p[1] + (p[2] * blur) ** 2
    if modality == _TEXT:
        tau_x = 1.0 / var_t
    elif modality == _IMAGE:
        tau_x = 1.0 / var_i
    else:
        tau_x = 1.0 / var_t + 1.0 / var_i
    tau_p = (max(context, 1) / OBSERVER_REF_CONTEXT) ** p[4] / (p[3] * p[3])
    if _in(condition, _STEERED):
        tau_p *= 1.0 + p[5]
    return tau_p / (tau_p + tau_x), 1.0 / tau_x


@njit(cache=True)
def perceived(p: np.ndarray, u: float, modality: int, blur: float, seed: int) -> float:
    """Frozen noisy percept on the normalised scale (fused by precision for text+image)."""
    e_t = p[0] * frozen_normal(seed, 0)
    sd_i = math.sqrt(p[1] * p[1] + (p[2] * blur) ** 2)
    e_i = sd_i * frozen_normal(seed, 1)
    if modality == _TEXT:
        return u + e_t
    if modality == _IMAGE:
        return u + e_i
    wt = (1.0 / (p[0] * p[0])) / (1.0 / (p[0] * p[0]) + 1.0 / (sd_i * sd_i))
    return u + wt * e_t + (1.0 - wt) * e_i


@njit(cache=True)
def respond(kind: int, p: np.ndarray, x: float, lo: float, hi: float, blur: float, context: int,
            condition: int, modality: int, trial: int, seed: int, mu: float, P: float,
            u1: float, u2: float) -> tuple[float, float, float]:
    """One answer of an agent of ``kind`` with parameters ``p``: (y, Kalman mean, Kalman variance).

    Shared by the batch kernel and the step path (bitwise-identical answers)."""
    W = hi - lo
    u = (x - lo) / W
    z = std_normal(u1, u2)
    if kind == 0:  # linear
        return lo + W * (p[0] * u + p[1] + p[2] * z), mu, P
    if kind == 1:  # static Bayes (and prior-dominant)
        return lo + W * ((1.0 - p[0]) * u + p[0] * p[1] + p[2] * z), mu, P
    if kind == 2:  # static Bayes on log(x + ε)
        prior = max(lo + W * p[1], 0.0)
        lv = (1.0 - p[0]) * math.log(x + LOG_EPS) + p[0] * math.log(prior + LOG_EPS) + p[2] * z
        return math.exp(lv) - LOG_EPS, mu, P
    if kind == 3:  # static Bayes + gain stage
        return lo + W * (p[2] * ((1.0 - p[0]) * u + p[0] * p[1]) + p[3] + p[4] * z), mu, P
    if kind == 4:  # Kalman random walk, r = 1 on the normalised scale
        if trial == 0:
            mu, P = 0.5, KALMAN_P0
        P = P + p[0]
        K = P / (P + 1.0)
        mu = mu + K * (u - mu)
        P = (1.0 - K) * P
        return lo + W * (mu + p[1] * z), mu, P
    if kind == 5:  # observer
        w, _ = observer_weight(p, modality, blur, context, condition)
        m = 0.5 + (NUMERICAL_BIAS if condition == _BIASED else 0.0)
        return lo + W * ((1.0 - w) * perceived(p, u, modality, blur, seed) + w * m + p[6] * z), mu, P
    if kind == 6:  # ablation-inconsistent
        w = p[0]
        if _in(condition, _BCS):
            w = max(w - p[2], 0.0)
        return lo + W * ((1.0 - w) * u + w * p[1] + p[3] * z), mu, P
    # combiners: p = (sigma_text, sigma_image, sigma_dec[, alpha | lambda])
    pt = u + p[0] * frozen_normal(seed, 0)
    pi = u + p[1] * frozen_normal(seed, 1)
    if modality == _TEXT:
        v = pt
    elif modality == _IMAGE:
        v = pi
    else:
        w_opt = p[1] * p[1] / (p[0] * p[0] + p[1] * p[1])
        a = 0.5 if kind == 8 else p[3] if kind == 9 else w_opt if kind == 10 else p[3] * w_opt
        v = a * pt + (1.0 - a) * pi
    return lo + W * (v + p[2] * z), mu, P


@njit(cache=True)
def simulate_kernel(kind: int, params: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    blur: np.ndarray, context: np.ndarray, condition: np.ndarray, modality: np.ndarray,
                    trial: np.ndarray, seed: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Answers (n_subjects, n_steps) of every subject (``params``: (n_subjects, n_params))."""
    n, steps = x.shape
    out = np.empty((n, steps))
    for i in range(n):
        mu, P = 0.5, KALMAN_P0
        p = params[i]
        for s in range(steps):
            out[i, s], mu, P = respond(kind, p, x[i, s], lo[i, s], hi[i, s], blur[i, s], context[i, s],
                                       condition[i, s], modality[i, s], trial[i, s], seed[i, s], mu, P,
                                       uniforms[i, 2 * s], uniforms[i, 2 * s + 1])
    return out


# ----------------------------------------------------------------------------- agents
class MagnitudeAgent(SyntheticAgent[MagnitudeDesign, MagnitudeSessions]):
    """Base of the magnitude agents: one numba response function per kind (see :func:`respond`)."""

    experiment: ClassVar[str] = EXPERIMENT
    draws_per_trial: ClassVar[int] = 2
    kind: ClassVar[int]

    def _reset_state(self) -> None:
        self._mu, self._P = 0.5, KALMAN_P0
        self._p = self.parameters.vector(self.params)

    def act(self, obs: Mapping[str, Any]) -> float:
        u1, u2 = self.uniforms()
        y, self._mu, self._P = respond(
            self.kind, self._p, float(obs["x"]), float(obs["range_low"]), float(obs["range_high"]),
            float(obs["blur"]), int(obs["context"]), CONDITIONS.index(obs["condition"]),
            MODALITIES.index(obs["modality"]), int(obs["trial"]), int(obs["render_seed"]),
            self._mu, self._P, float(u1), float(u2))
        return float(y)

    @classmethod
    def simulate_batch(cls, design: MagnitudeDesign, sessions: MagnitudeSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        s = step_arrays(design, sessions)
        n = sessions.n_subjects
        theta = np.ascontiguousarray(np.column_stack(
            [np.broadcast_to(np.asarray(params[k], dtype=np.float64), (n,)) for k in cls.parameters.names]))
        y = simulate_kernel(cls.kind, theta, s.x, s.low, s.high, s.blur, s.context, s.condition, s.modality,
                            s.trial, s.render_seed, np.ascontiguousarray(uniforms, dtype=np.float64))
        return Outcomes(action=y, reward=np.full(y.shape, np.nan), valid=np.ones(y.shape, dtype=bool))


def _agent(name: str, params: tuple[Parameter, ...], doc: str) -> type[MagnitudeAgent]:
    cls = type(name.title().replace("-", "") + "Agent", (MagnitudeAgent,), {
        "name": name, "kind": KIND[name], "parameters": ParameterSet(params, name), "__doc__": doc,
        "__module__": __name__})
    return cls


_COMB = (_SIGMA_TEXT, _SIGMA_IMAGE, _sigma_dec(0.02))
AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (
    _agent("linear", (Parameter("w", -2.0, 3.0, 0.8, "slope", prior_mean=0.8, prior_sd=0.4),
                      Parameter("b", -2.0, 2.0, 0.1, "intercept (fraction of W above the range's low end)",
                                prior_mean=0.1, prior_sd=0.3), _sigma_dec()),
           "Linear observer μ = w·u + b (Sec. 3.2, model 1)."),
    _agent("static-bayes", (_w_prior(), MU_P, _sigma_dec()),
           "Static Bayesian observer μ = (1 − w_prior)·u + w_prior·μ_p (Sec. 3.2, model 2)."),
    _agent("static-bayes-log", (_w_prior(), MU_P, _sigma_dec(0.05)),
           "Static Bayes on log(x + ε) (the Weber variant, App. A.13)."),
    _agent("static-bayes-gain", (_w_prior(), MU_P, Parameter.positive("gain", 1.0, 5.0, "gain g"),
                                 Parameter("offset", -2.0, 2.0, 0.0, "offset δ (fraction of W)", prior_sd=0.3),
                                 _sigma_dec()),
           "Static Bayes with the affine stage μ̃ = g·μ + δ (App. A.13)."),
    _agent("kalman", (Parameter.positive("q_over_r", 0.1, 1e3, "process / measurement noise variance ratio",
                                         prior_mean=math.log(0.1), prior_sd=1.5, search_floor=1e-5),
                      _sigma_dec()),
           "Sequential Bayesian observer: random-walk Kalman filter (Sec. 3.2, model 3)."),
    _agent("observer", (_SIGMA_TEXT, _SIGMA_IMAGE,
                        Parameter("blur_gain", 0.0, 1.0, 0.05, "image noise SD per px of blur"),
                        Parameter.positive("prior_sd", 0.15, 5.0, "prior SD at the reference context"),
                        Parameter("context_gain", 0.0, 3.0, 0.5, "prior precision ∝ (k/10)^context_gain"),
                        Parameter("steering_gain", 0.0, 10.0, 1.0, "prior precision × (1 + gain) when steered"),
                        _sigma_dec(0.05)),
           "Bayesian observer whose sensory and prior precisions depend on the condition."),
    _agent("ablation-inconsistent", (_w_prior(), MU_P, Parameter.unit("shift", 0.2, "drop of w_prior in ablations"),
                                     _sigma_dec()),
           "Static Bayes whose prior weight falls in the BCS ablations (anti-Bayesian shifts)."),
    _agent("prior-dominant", (_w_prior(0.9, 0.95), MU_P, _sigma_dec()),
           "Static Bayes with w_prior > 0.9: answers ignore the stimulus (BCS s_a = 0)."),
    _agent("combiner-equal", _COMB, "Text+image answer = ½(text percept + image percept)."),
    _agent("combiner-alpha", (*_COMB, Parameter.unit("alpha", 0.5, "weight on the text percept")),
           "Text+image answer = α·text + (1 − α)·image."),
    _agent("combiner-optimal", _COMB, "Reliability-weighted fusion w_text = σ_i²/(σ_t² + σ_i²)."),
    _agent("combiner-underweight",
           (*_COMB, Parameter.unit("underweight", 0.3, "fraction λ of the optimal text weight")),
           "Fusion with text weight λ·w_opt: a reliable text cue under-weighted (GPT-5 Mini, App. A.12)."),
)}
