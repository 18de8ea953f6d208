"""The magnitude-estimation observers' parameter sets and equations (Ma, Wang & Fountas 2025,
Sec. 3.2–3.3, App. A.13): written once, here, and read by the agents that simulate them
(:mod:`cogtestbed.agents.magnitude`) and the models that fit them (:mod:`cogtestbed.inference.magnitude`).

Units: every observer works on the session's normalised scale u = (x − a)/W of a session range
[a, a + W] and answers y = a + W·v (see :mod:`cogtestbed.agents.magnitude` for the table of
observers and how their noise is drawn).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cogtestbed.numerics import SPLITMIX_GOLDEN, splitmix64_uniform, std_normal
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.magnitude import CONDITIONS, MODALITIES, NUMERICAL_BIAS

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
    z = np.uint64(seed) ^ (np.uint64(channel + 1) * SPLITMIX_GOLDEN)
    z = z + SPLITMIX_GOLDEN
    u1 = splitmix64_uniform(z)
    z = z + SPLITMIX_GOLDEN
    return std_normal(u1, splitmix64_uniform(z))


@njit(cache=True, inline="always")
def _in(code: int, codes: np.ndarray) -> bool:
    for c in codes:  # noqa: SIM110 - a loop numba compiles (no generator any())
        if c == code:
            return True
    return False


# ----------------------------------------------------------------------------- the static-Bayes equation
# v = (1 − w_prior)·u + w_prior·μ_p (Sec. 3.2, model 2), its line form and its inversion, written once
# here.  Numba kernels call these functions; ``.py_func`` of each takes numpy arrays and pytensor tensors.
@njit(cache=True, inline="always")
def static_bayes_line(w_prior, mu_p):  # type: ignore[no-untyped-def]
    """(slope, intercept) = (1 − w_prior, w_prior·μ_p) of the static-Bayes answer line (Sec. 3.2)."""
    return 1.0 - w_prior, w_prior * mu_p


@njit(cache=True, inline="always")
def static_bayes(u, w_prior, mu_p):  # type: ignore[no-untyped-def]
    """Static-Bayes mean answer v = (1 − w_prior)·u + w_prior·μ_p on the normalised scale (Sec. 3.2)."""
    return (1.0 - w_prior) * u + w_prior * mu_p


@njit(cache=True, inline="always")
def static_bayes_centred(u, u_bar, mean_answer, w_prior):  # type: ignore[no-untyped-def]
    """:func:`static_bayes` through the mean answer at the mean stimulus ū: m + (1 − w_prior)·(u − ū),
    with μ_p = :func:`static_bayes_mu_p` (m, ū, w_prior)."""
    return mean_answer + (1.0 - w_prior) * (u - u_bar)


@njit(cache=True, inline="always")
def static_bayes_w_prior(slope):  # type: ignore[no-untyped-def]
    """Inversion of :func:`static_bayes_line`: w_prior = 1 − slope."""
    return 1.0 - slope


@njit(cache=True, inline="always")
def static_bayes_mu_p(answer, u, w_prior):  # type: ignore[no-untyped-def]
    """Inversion of :func:`static_bayes` for μ_p = (v − (1 − w_prior)·u) / w_prior from the answer v at
    stimulus u (u = 0: μ_p = intercept / w_prior); the caller guards w_prior ≈ 0."""
    return (answer - (1.0 - w_prior) * u) / w_prior


#: Weight a precision-weighted average gives the first of two sources that are both exact
#: (variance 0, e.g. ``sigma_text = prior_sd = 0``): the limit along equal variances.  No paper
#: states it; a named default.
BOTH_EXACT_WEIGHT = 0.5


@njit(cache=True, inline="always")
def variance_weight(var_a: float, var_b: float) -> float:
    """Weight of source a in a precision-weighted average, (1/var_a) / (1/var_a + 1/var_b) =
    var_b / (var_a + var_b), written in variances so the limits are taken: an exact source
    (variance 0, or a variance that underflows) takes all the weight, two exact ones
    :data:`BOTH_EXACT_WEIGHT`."""
    total = var_a + var_b
    if total <= 0.0:
        return BOTH_EXACT_WEIGHT
    return var_b / total


@njit(cache=True)
def observer_weight(p: np.ndarray, modality: int, blur: float, context: int, condition: int) -> tuple[float, float]:
    """(w_prior, sensory variance) of the observer: τ_x from the modality and blur, τ_p from the
    context window and steering (parameters sigma_text, sigma_image, blur_gain, prior_sd,
    context_gain, steering_gain).  In variances (:func:`variance_weight`): a zero noise or
    ``prior_sd = 0`` (a point prior) is the limit, not a division by zero."""
    var_t = p[0] * p[0]
    var_i = p[1] * p[1] + (p[2] * blur) * (p[2] * blur)
    if modality == _TEXT:
        var_x = var_t
    elif modality == _IMAGE:
        var_x = var_i
    else:  # the fused percept: 1/var_x = 1/var_t + 1/var_i
        var_x = var_t * variance_weight(var_t, var_i)
    scale = (max(context, 1) / OBSERVER_REF_CONTEXT) ** p[4]
    if _in(condition, _STEERED):
        scale *= 1.0 + p[5]
    var_p = p[3] * p[3] / scale
    return variance_weight(var_p, var_x), var_x


@njit(cache=True)
def block_constants(kind: int, p: np.ndarray, lo: float, hi: float, blur: float, context: int, condition: int,
                    modality: int) -> tuple[float, float, float, float]:
    """What an agent's answer takes from its parameters and the condition, not from the trial:
    (c0, c1, c2, c3), read by :func:`answer` (constant within a block but for the blur ramp).

    Static Bayes family: c0 = 1 − w_prior, c1 = w_prior·μ_p (log: w_prior·log(prior + ε));
    observer: c0 = 1 − w, c1 = w·m, c2 = image noise SD at this blur, c3 = the percepts'
    precision weight on text; combiners: c0 = the weight α on the text percept."""
    if kind == 0:  # linear
        return p[0], p[1], 0.0, 0.0
    if kind == 1 or kind == 3:  # static Bayes (and prior-dominant), gain variant
        c0, c1 = static_bayes_line(p[0], p[1])
        return c0, c1, 0.0, 0.0
    if kind == 2:  # static Bayes on log(x + ε)
        prior = max(lo + (hi - lo) * p[1], 0.0)
        c0, c1 = static_bayes_line(p[0], math.log(prior + LOG_EPS))
        return c0, c1, 0.0, 0.0
    if kind == 4:  # Kalman: nothing but its state
        return 0.0, 0.0, 0.0, 0.0
    if kind == 5:  # observer
        w, _ = observer_weight(p, modality, blur, context, condition)
        m = 0.5 + (NUMERICAL_BIAS if condition == _BIASED else 0.0)
        sd_i = math.sqrt(p[1] * p[1] + (p[2] * blur) * (p[2] * blur))
        wt = variance_weight(p[0] * p[0], sd_i * sd_i)
        c0, c1 = static_bayes_line(w, m)
        return c0, c1, sd_i, wt
    if kind == 6:  # ablation-inconsistent
        w = p[0]
        if _in(condition, _BCS):
            w = max(w - p[2], 0.0)
        c0, c1 = static_bayes_line(w, p[1])
        return c0, c1, 0.0, 0.0
    # combiners: p = (sigma_text, sigma_image, sigma_dec[, alpha | lambda])
    w_opt = variance_weight(p[0] * p[0], p[1] * p[1])
    return (0.5 if kind == 8 else p[3] if kind == 9 else w_opt if kind == 10 else p[3] * w_opt), 0.0, 0.0, 0.0


@njit(cache=True, inline="always")
def answer(kind: int, p: np.ndarray, c0: float, c1: float, c2: float, c3: float, x: float, log_x: float, lo: float,
           hi: float, modality: int, trial: int, f_text: float, f_image: float, z: float, mu: float,
           P: float) -> tuple[float, float, float]:
    """One answer (y, Kalman mean, Kalman variance) of an agent of ``kind`` from its
    :func:`block_constants`, the stimulus ``x`` (and log(x + ε), read by the log variant only), its
    frozen percept noises (:func:`frozen_normal`, text and image channel; read by the observer and
    the combiners only) and the decision noise ``z``."""
    W = hi - lo
    u = (x - lo) / W
    if kind == 0:  # linear: v = w·u + b + σ_dec·z
        return lo + W * (c0 * u + c1 + p[2] * z), mu, P
    if kind == 1:  # static Bayes: v = (1 − w_prior)·u + w_prior·μ_p + σ_dec·z
        return lo + W * (c0 * u + c1 + p[2] * z), mu, P
    if kind == 2:  # static Bayes on log(x + ε)
        return math.exp(c0 * log_x + c1 + p[2] * z) - LOG_EPS, mu, P
    if kind == 3:  # static Bayes + gain stage
        return lo + W * (p[2] * (c0 * u + c1) + p[3] + p[4] * z), mu, P
    if kind == 4:  # Kalman random walk, r = 1 on the normalised scale
        if trial == 0:
            mu, P = 0.5, KALMAN_P0
        P = P + p[0]
        K = P / (P + 1.0)
        mu = mu + K * (u - mu)
        P = (1.0 - K) * P
        return lo + W * (mu + p[1] * z), mu, P
    if kind == 5:  # observer: percepts fused by precision, then shrunk to the prior mean
        if modality == _TEXT:
            v = u + p[0] * f_text
        elif modality == _IMAGE:
            v = u + c2 * f_image
        else:
            v = u + c3 * (p[0] * f_text) + (1.0 - c3) * (c2 * f_image)
        return lo + W * (c0 * v + c1 + p[6] * z), mu, P
    if kind == 6:  # ablation-inconsistent
        return lo + W * (c0 * u + c1 + p[3] * z), mu, P
    pt = u + p[0] * f_text  # combiners
    pi = u + p[1] * f_image
    if modality == _TEXT:
        v = pt
    elif modality == _IMAGE:
        v = pi
    else:
        v = c0 * pt + (1.0 - c0) * pi
    return lo + W * (v + p[2] * z), mu, P


@njit(cache=True)
def respond(kind: int, p: np.ndarray, x: float, lo: float, hi: float, blur: float, context: int,
            condition: int, modality: int, trial: int, seed: int, mu: float, P: float,
            u1: float, u2: float) -> tuple[float, float, float]:
    """One answer of an agent of ``kind`` with parameters ``p``: (y, Kalman mean, Kalman variance).

    The step path; the batch kernel computes the same :func:`block_constants` once per block and
    the frozen noises once per stimulus, and calls the same :func:`answer` (bitwise-identical
    answers)."""
    c0, c1, c2, c3 = block_constants(kind, p, lo, hi, blur, context, condition, modality)
    f_text, f_image = 0.0, 0.0
    if kind == 5 or kind >= 8:
        f_text, f_image = frozen_normal(seed, 0), frozen_normal(seed, 1)
    log_x = math.log(x + LOG_EPS) if kind == 2 else 0.0
    return answer(kind, p, c0, c1, c2, c3, x, log_x, lo, hi, modality, trial, f_text, f_image, std_normal(u1, u2),
                  mu, P)


@njit(cache=True)
def simulate_kernel(kind: int, params: np.ndarray, x: np.ndarray, seed: np.ndarray, slot: np.ndarray,
                    lo: np.ndarray, hi: np.ndarray, blur: np.ndarray, context: np.ndarray, condition: np.ndarray,
                    modality: np.ndarray, trial: np.ndarray, starts: np.ndarray,
                    uniforms: np.ndarray) -> np.ndarray:
    """Answers (n_subjects, n_steps) of every subject (``params``: (n_subjects, n_params)).

    ``x``, ``seed``: each subject's stimuli (n_subjects, n_slots); the rest is the design's
    per-step schedule (:class:`~cogtestbed.environments.magnitude.Schedule`): step ``s`` shows
    stimulus ``slot[s]``, and blocks start at ``starts``.  Per subject, the frozen percept noises
    (and the log variant's log(x + ε)) are computed once per stimulus (every condition and modality
    shows it again) and the :func:`block_constants` once per block (per trial only while the blur
    changes)."""
    n, n_slots = x.shape
    steps = slot.shape[0]
    out = np.empty((n, steps))
    percepts = kind == 5 or kind >= 8
    want_text, want_image = False, False
    for s in range(steps):
        want_text |= modality[s] != _IMAGE
        want_image |= modality[s] != _TEXT
    f_text = np.zeros(n_slots)
    f_image = np.zeros(n_slots)
    log_x = np.zeros(n_slots)
    for i in range(n):
        p = params[i]
        if kind == 2:
            for k in range(n_slots):
                log_x[k] = math.log(x[i, k] + LOG_EPS)
        if percepts:
            for k in range(n_slots):
                if want_text:
                    f_text[k] = frozen_normal(seed[i, k], 0)
                if want_image:
                    f_image[k] = frozen_normal(seed[i, k], 1)
        mu, P = 0.5, KALMAN_P0
        for b in range(starts.shape[0] - 1):
            first, last = starts[b], starts[b + 1]
            lo_b, hi_b, m_b = lo[first], hi[first], modality[first]
            blur_b = blur[first]
            c0, c1, c2, c3 = block_constants(kind, p, lo_b, hi_b, blur_b, context[first], condition[first], m_b)
            for s in range(first, last):
                if blur[s] != blur_b:
                    blur_b = blur[s]
                    c0, c1, c2, c3 = block_constants(kind, p, lo_b, hi_b, blur_b, context[first], condition[first],
                                                     m_b)
                k = slot[s]
                z = std_normal(uniforms[i, 2 * s], uniforms[i, 2 * s + 1])
                out[i, s], mu, P = answer(kind, p, c0, c1, c2, c3, x[i, k], log_x[k], lo_b, hi_b, m_b, trial[s],
                                          f_text[k], f_image[k], z, mu, P)
    return out


def _observer(name: str, params: tuple[Parameter, ...], doc: str) -> tuple[str, ParameterSet, str]:
    return name, ParameterSet(params, name), doc


_COMB = (_SIGMA_TEXT, _SIGMA_IMAGE, _sigma_dec(0.02))
#: Every observer: name -> (its parameter set, one line on what it does).
OBSERVERS: dict[str, tuple[ParameterSet, str]] = {name: (params, doc) for name, params, doc in (
    _observer("linear", (Parameter("w", -2.0, 3.0, 0.8, "slope", prior_mean=0.8, prior_sd=0.4),
                      Parameter("b", -2.0, 2.0, 0.1, "intercept (fraction of W above the range's low end)",
                                prior_mean=0.1, prior_sd=0.3), _sigma_dec()),
           "Linear observer μ = w·u + b (Sec. 3.2, model 1)."),
    _observer("static-bayes", (_w_prior(), MU_P, _sigma_dec()),
           "Static Bayesian observer μ = (1 − w_prior)·u + w_prior·μ_p (Sec. 3.2, model 2)."),
    _observer("static-bayes-log", (_w_prior(), MU_P, _sigma_dec(0.05)),
           "Static Bayes on log(x + ε) (the Weber variant, App. A.13)."),
    _observer("static-bayes-gain", (_w_prior(), MU_P, Parameter.positive("gain", 1.0, 5.0, "gain g"),
                                 Parameter("offset", -2.0, 2.0, 0.0, "offset δ (fraction of W)", prior_sd=0.3),
                                 _sigma_dec()),
           "Static Bayes with the affine stage μ̃ = g·μ + δ (App. A.13)."),
    _observer("kalman", (Parameter.positive("q_over_r", 0.1, 1e3, "process / measurement noise variance ratio",
                                         prior_mean=math.log(0.1), prior_sd=1.5, search_floor=1e-5),
                      _sigma_dec()),
           "Sequential Bayesian observer: random-walk Kalman filter (Sec. 3.2, model 3)."),
    _observer("observer", (_SIGMA_TEXT, _SIGMA_IMAGE,
                        Parameter("blur_gain", 0.0, 1.0, 0.05, "image noise SD per px of blur"),
                        Parameter.positive("prior_sd", 0.15, 5.0, "prior SD at the reference context"),
                        Parameter("context_gain", 0.0, 3.0, 0.5, "prior precision ∝ (k/10)^context_gain"),
                        Parameter("steering_gain", 0.0, 10.0, 1.0, "prior precision × (1 + gain) when steered"),
                        _sigma_dec(0.05)),
           "Bayesian observer whose sensory and prior precisions depend on the condition."),
    _observer("ablation-inconsistent", (_w_prior(), MU_P, Parameter.unit("shift", 0.2, "drop of w_prior in ablations"),
                                     _sigma_dec()),
           "Static Bayes whose prior weight falls in the BCS ablations (anti-Bayesian shifts)."),
    # s_a = 0 needs the *fitted* w_prior of each ablation cell above 0.9: at the former defaults
    # (w_prior .95, σ_dec .1) a cell's fitted weight has SE ≈ .03 at 3 × 50 trials, so cells fell
    # below 0.9 (under the base cell: s_a = −1) and subjects scored 0, −3, 0.  At .97 / .05 the SE
    # is ≈ .014 and the cells sit 5 SE above 0.9.
    _observer("prior-dominant", (_w_prior(0.9, 0.97), MU_P, _sigma_dec(0.05)),
           "Static Bayes with w_prior > 0.9: answers ignore the stimulus (BCS s_a = 0 at the defaults)."),
    _observer("combiner-equal", _COMB, "Text+image answer = ½(text percept + image percept)."),
    _observer("combiner-alpha", (*_COMB, Parameter.unit("alpha", 0.5, "weight on the text percept")),
           "Text+image answer = α·text + (1 − α)·image."),
    _observer("combiner-optimal", _COMB, "Reliability-weighted fusion w_text = σ_i²/(σ_t² + σ_i²)."),
    _observer("combiner-underweight",
           (*_COMB, Parameter.unit("underweight", 0.3, "fraction λ of the optimal text weight")),
           "Fusion with text weight λ·w_opt: a reliable text cue under-weighted (GPT-5 Mini, App. A.12)."),
)}
