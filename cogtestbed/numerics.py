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
