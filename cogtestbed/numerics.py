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


#: Step h of the table of e^(−k·h) behind :func:`at_least_sigmoid` (ln 2 / 16: the remainder
#: |r| ≤ h/2 ≈ 0.022 makes the cubic Taylor term's error ≤ r⁴/24·e^|r| < 1e-8, relative).
EXP_TABLE_STEP = math.log(2.0) / 16.0
#: |x| beyond which e^(−|x|) < 4.3e-18 is taken from the table's last entry (absolute error < 1e-17).
EXP_TABLE_CLAMP = 40.0
EXP_TABLE = np.exp(-EXP_TABLE_STEP * np.arange(int(EXP_TABLE_CLAMP / EXP_TABLE_STEP) + 2))
#: Decisions of :func:`at_least_sigmoid` whose cheap margin is below this are recomputed with the exact
#: :func:`sigmoid`: 50× the worst error of the cheap test (2e-8: twice the error of e^(−|x|)).
SIGMOID_MARGIN = 1e-6


@njit(cache=True, inline="always")
def exp_neg_approx(ax: float) -> float:
    """e^(−ax) for ax ≥ 0 within 1e-8 relative (1e-17 absolute beyond :data:`EXP_TABLE_CLAMP`): the
    table entry e^(−k·h) nearest to ax times the cubic Taylor polynomial of e^(−r), r = ax − k·h.
    Not bit-equal to ``math.exp``; used only to bound, never to report, a probability."""
    if not ax < EXP_TABLE_CLAMP:  # also NaN
        ax = EXP_TABLE_CLAMP
    k = int(ax * (1.0 / EXP_TABLE_STEP) + 0.5)
    r = ax - k * EXP_TABLE_STEP
    return EXP_TABLE[k] * (1.0 - r * (1.0 - r * (0.5 - r * (1.0 / 6.0))))


@njit(cache=True, inline="always")
def at_least_sigmoid(u: float, x: float) -> int:
    """1 if ``u >= sigmoid(x)`` else 0, bit for bit, without an exponential on almost every call.

    The choice rule "option 0 iff u < σ(x)" of every two-option softmax agent.  With e = e^(−|x|),
    u ≥ σ(x) ⇔ d = u·(1 + e) − (1 if x ≥ 0 else e) ≥ 0 (multiplying by 1 + e > 0), so d is
    computed from :func:`exp_neg_approx`; where |d| ≤ :data:`SIGMOID_MARGIN` (error bound 2e-8, so a
    fraction ~1e-6 of uniform u) or x is NaN, the exact comparison decides.  Branch-free on the
    common path.
    """
    e = exp_neg_approx(abs(x))
    d = u * (1.0 + e) - (1.0 if x >= 0.0 else e)
    if not abs(d) > SIGMOID_MARGIN or x != x:
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
