"""Shared scalar numerics for numba kernels: stable logistic functions, log-sum-exp and
Box–Muller normals.

Every kernel in the package (simulation and likelihood alike) uses these, so a parameter
transform or a choice rule means one thing everywhere.  All are ``@njit(inline="always")`` and
callable from plain Python too.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def sigmoid(x: float) -> float:
    """Logistic function 1 / (1 + e^(−x)), evaluated without overflow for either sign of x."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


#: Cody–Waite split of ln 2 (Cody & Waite 1980, "Software Manual for the Elementary Functions"; the
#: two words of fdlibm's ``e_exp.c``): LN2_HI has 32 significant bits, so k·LN2_HI is exact for |k| < 2^21.
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
INV_LN2 = 1.44269504088896338700e00
#: 1.5·2^52: y + ROUND_SHIFTER (|y| < 2^51) holds round(y) in its low mantissa bits, a float-to-integer
#: rounding that vectorises (AVX2 has no packed double-to-int64 conversion).
ROUND_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = int(np.float64(ROUND_SHIFTER).view(np.int64))
_ONE_BITS = int(np.float64(1.0).view(np.int64))
#: |x| at which :func:`exp_neg_approx` stops: beyond it e^(−|x|) ≤ 4.3e-18 and is evaluated at the clamp.
EXP_NEG_CLAMP = 40.0
#: Relative error bound of :func:`exp_neg_approx` (the degree-7 Taylor remainder on |r| ≤ ln 2 / 2 is
#: ≤ 7.4e-9, rounding adds a few ulp).
EXP_NEG_APPROX_ERROR = 1e-8
#: Decisions of :func:`at_least_sigmoid` whose cheap margin is below this are recomputed with the exact
#: :func:`sigmoid`: 50× the worst error of the cheap test (2e-8: twice the error of e^(−|x|)).
SIGMOID_MARGIN = 1e-6


@njit(cache=True, inline="always")
def exp_neg_approx(ax: float) -> float:
    """e^(−ax) for 0 ≤ ax ≤ :data:`EXP_NEG_CLAMP` within :data:`EXP_NEG_APPROX_ERROR` relative (at the clamp
    beyond it; NaN stays NaN).  Not bit-equal to ``math.exp``: used only to bound, never to report, a
    probability.

    Cody–Waite range reduction (Cody & Waite 1980, ch. 6): k = round(ax / ln 2) by the shifter trick,
    r = k·ln 2 − ax in two words, so e^(−ax) = 2^(−k)·e^r with |r| ≤ ln 2 / 2; e^r by its degree-7 Taylor
    polynomial (Horner), 2^(−k) built in the exponent bits.  No table, no branch and no libm call, so a
    loop over lanes calling it vectorises (AVX2: 4 doubles per instruction).
    """
    ax = ax if not ax > EXP_NEG_CLAMP else EXP_NEG_CLAMP
    kd = ax * INV_LN2 + ROUND_SHIFTER
    kf = kd - ROUND_SHIFTER
    r = (kf * LN2_HI - ax) + kf * LN2_LO
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (
        1.0 / 720.0 + r * (1.0 / 5040.0)))))))
    k = np.float64(kd).view(np.int64) - _SHIFTER_BITS
    return p * np.int64(_ONE_BITS - (k << 52)).view(np.float64)


@njit(cache=True, inline="always")
def sigmoid_margin(u: float, x: float) -> float:
    """d with u ≥ σ(x) ⇔ d ≥ 0 wherever |d| > :data:`SIGMOID_MARGIN` (NaN where x is NaN).

    With e = e^(−|x|), u ≥ σ(x) ⇔ u·(1 + e) − (1 if x ≥ 0 else e) ≥ 0 (multiplying by 1 + e > 0); d is
    that difference with e from :func:`exp_neg_approx`, off by at most twice its error (2e-8), so its sign
    is the exact comparison's wherever |d| exceeds the margin.  Branch-free: the choice rule of a
    vectorised kernel, which decides the few calls within the margin with :func:`sigmoid` itself.
    """
    e = exp_neg_approx(abs(x))
    return u * (1.0 + e) - (1.0 if x >= 0.0 else e)


@njit(cache=True, inline="always")
def at_least_sigmoid(u: float, x: float) -> int:
    """1 if ``u >= sigmoid(x)`` else 0, bit for bit, without an exponential on almost every call.

    The choice rule "option 0 iff u < σ(x)" of every two-option softmax agent: the sign of
    :func:`sigmoid_margin`, and the exact comparison where its margin is below :data:`SIGMOID_MARGIN`
    (a fraction ~1e-6 of uniform u) or x is NaN.
    """
    d = sigmoid_margin(u, x)
    if not abs(d) > SIGMOID_MARGIN:
        return 0 if u < sigmoid(x) else 1
    return int(d >= 0.0)


@njit(cache=True, inline="always")
def log_sigmoid(x: float) -> float:
    """log σ(x) = −log(1 + e^(−x)), stable for large |x|."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def logit(p: float) -> float:
    """log(p / (1 − p))."""
    return math.log(p) - math.log1p(-p)


@njit(cache=True, inline="always")
def std_normal(u1: float, u2: float) -> float:
    """Box–Muller (Box & Muller 1958): a standard normal from two uniforms on [0, 1).

    Uses 1 − u1 inside the logarithm, so u1 = 0 (which a generator can return) is safe.
    """
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True)
def logsumexp(x: np.ndarray) -> float:
    """log Σ exp(x_k), shifted by the maximum; −inf for an empty or all −inf input."""
    if x.shape[0] == 0:
        return -np.inf
    top = x[0]
    for k in range(1, x.shape[0]):
        if x[k] > top:
            top = x[k]
    if not math.isfinite(top):
        return top
    total = 0.0
    for k in range(x.shape[0]):
        total += math.exp(x[k] - top)
    return top + math.log(total)


@njit(cache=True)
def log_softmax(x: np.ndarray) -> np.ndarray:
    """x − logsumexp(x): log-probabilities of a softmax choice rule."""
    return x - logsumexp(x)


@njit(cache=True)
def digamma(x: float) -> float:
    """ψ(x) for x > 0: recurrence up to x ≥ 6, then the asymptotic series (Abramowitz & Stegun
    6.3.6 and 6.3.18; |error| < 1e-12)."""
    acc = 0.0
    while x < 6.0:
        acc -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return acc + math.log(x) - 0.5 / x - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (
        1.0 / 240 - f * (1.0 / 132)))))


# ----------------------------------------------------------------------------- seeded streams
#: splitmix64's increment (2^64 / φ).
SPLITMIX_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def splitmix64_mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function of state ``z`` (Steele, Lea & Flood 2014)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def splitmix64_uniform(z: np.uint64) -> float:
    """The splitmix64 output of state ``z`` as a uniform on [0, 1)."""
    return float(splitmix64_mix(z) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def splitmix64_next(state: np.uint64) -> tuple[np.uint64, float]:
    """Advance a splitmix64 stream: (next state, a uniform on the open interval (0, 1))."""
    state = state + SPLITMIX_GOLDEN
    return state, (float(splitmix64_mix(state) >> np.uint64(11)) + 0.5) / 9007199254740992.0


@njit(cache=True)
def gamma_draw(a: float, state: np.uint64) -> tuple[np.uint64, float]:
    """Gamma(a, 1) by Marsaglia & Tsang (2000); a < 1 via the U^(1/a) boost; a = 0 (a shape that
    underflowed) is the limit, the point mass at 0."""
    if a <= 0.0:
        return state, 0.0
    boost = 1.0
    if a < 1.0:
        state, u = splitmix64_next(state)
        boost = u ** (1.0 / a)
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        state, u1 = splitmix64_next(state)
        state, u2 = splitmix64_next(state)
        x = std_normal(u1, u2)
        t = 1.0 + c * x
        v = t * t * t
        if v <= 0:
            continue
        state, u = splitmix64_next(state)
        if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return state, boost * d * v
