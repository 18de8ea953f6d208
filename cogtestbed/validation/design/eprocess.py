"""Anytime-valid monitoring of a bounded per-subject statistic (issue 74): a betting e-process and its
confidence sequence.

The test is Waudby-Smith & Ramdas (2023), "Estimating means of bounded random variables by betting",
JRSS-B 86(1): observations ``x_i`` in a known interval ``[lo, hi]`` (rescaled to ``y_i`` in [0, 1]), the
null ``E[y_i | past] = m``, and the hedged capital process (their Sec. 4, eq. 22 with θ = 1/2)

    K_t(m) = ½ Π_{i≤t} (1 + λ⁺_i (y_i − m)) + ½ Π_{i≤t} (1 − λ⁻_i (y_i − m)),

whose bets ``λ±_i ≥ 0`` are *predictable* (computed from ``y_1..y_{i−1}`` only) and truncated to
``c/m`` and ``c/(1−m)`` (c = 1/2, their default) so every factor stays positive.  Under the null each product
is a non-negative martingale with mean 1, so ``K_t`` is too, and Ville's inequality gives
``P(∃t: K_t(m) ≥ 1/α) ≤ α``: the test may be looked at after every subject, stopped at any time, for any
reason, and its type-I error stays ≤ α.  The confidence sequence is ``{m: K_t(m) < 1/α}`` (their Thm. 3),
intersected over time.  The bets are the approximate GRAPA rule (their Sec. 5.3, eq. 26): ``λ_i =
(μ̂_{i−1} − m) / (σ̂²_{i−1} + (μ̂_{i−1} − m)²)`` with ``μ̂_0 = 1/2`` and ``σ̂²_0 = 1/4``, its positive part
betting for a larger mean and its negative part for a smaller one.

**The one property it needs**: each observation lies in ``[lo, hi]`` (and, under the null, has
conditional mean ``m``).  No normality, no variance assumption: a per-subject MLE bounded by its
parameter's declared range, skewed, piled at a bound, is covered.  A missing estimate (a subject
without a valid trial) is no observation: it is skipped, as the fixed plan's test drops it.

Why no library: savvi (PyPI, the only installable candidate checked on CPython 3.11) covers linear
regression and multinomial tests and pulls in cvxpy; confseq (the authors' own, C++/Boost) has no wheel for
3.11; ``expectation`` none at all.  This module is numpy only, vectorised over simulated studies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cogtestbed.errors import InputError

#: Truncation of the bets (Waudby-Smith & Ramdas 2023, Sec. 5: c ∈ (0, 1), 1/2 their default).
TRUNCATION = 0.5
#: Points of the grid over [0, 1] on which a confidence sequence is computed.
CS_GRID = 401


def rescale(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``x`` in ``[lo, hi]`` mapped to [0, 1]; NaN stays NaN (no observation)."""
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InputError(f"a betting e-process needs finite bounds lo < hi, got [{lo}, {hi}]")
    return (np.asarray(x, float) - lo) / (hi - lo)


def _running(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predictable mean and variance of the columns before each (NaN skipped), with the prior
    ``μ̂_0 = 1/2``, ``σ̂²_0 = 1/4`` counted as one observation each."""
    seen = np.isfinite(y)
    v = np.where(seen, y, 0.0)
    n = np.cumsum(seen, axis=-1) - seen + 1.0  # observations before i, plus the prior's one
    s = np.cumsum(v, axis=-1) - v + 0.5
    mean = s / n
    # σ̂²: the prior 1/4 plus Σ (y_j − μ̂_j)², the running mean after j, over n (Waudby-Smith & Ramdas eq. 26)
    mean_after = (np.cumsum(v, axis=-1) + 0.5) / (np.cumsum(seen, axis=-1) + 1.0)
    dev = np.where(seen, (v - mean_after) ** 2, 0.0)
    var = (np.cumsum(dev, axis=-1) - dev + 0.25) / n
    return mean, var


def planned_bet(shift: float, sd: float, m: float, c: float = TRUNCATION) -> float:
    """The constant bet a plan fixes in advance for a planned shift of the mean (rescaled scale) with the
    statistic's SD ``sd`` there: the Kelly bet ``shift / (sd² + shift²)`` truncated to ``[−c/(1−m), c/m]``
    (positive: betting on a larger mean)."""
    bet = shift / (sd * sd + shift * shift) if sd > 0 or shift != 0 else 0.0
    return float(np.clip(bet, -c / (1.0 - m), c / m))


def log_capital(y: np.ndarray, m: float, c: float = TRUNCATION, planned: float | None = None) -> np.ndarray:
    """log ``K_t(m)`` after each observation of ``y`` (last axis: the subjects in order; values in [0, 1],
    NaN skipped: its factor is 1).  ``m`` in (0, 1).  ``planned``: a constant bet fixed before the data
    (:func:`planned_bet`); the e-process is then the average of the hedged aGRAPA process and the planned
    bet's own (an average of test martingales is one), which grows faster where the plan's effect is right."""
    if not 0.0 < m < 1.0:
        raise InputError(f"the null mean must lie inside (0, 1) on the rescaled scale, got {m}")
    y = np.asarray(y, float)
    mean, var = _running(y)
    lam = (mean - m) / (var + (mean - m) ** 2)
    up = np.clip(lam, 0.0, c / m)
    down = np.clip(-lam, 0.0, c / (1.0 - m))
    d = np.where(np.isfinite(y), y - m, 0.0)
    log_up = np.cumsum(np.log1p(up * d), axis=-1)
    log_down = np.cumsum(np.log1p(-down * d), axis=-1)
    hedged = np.logaddexp(log_up, log_down) - np.log(2.0)
    if planned is None:
        return hedged
    fixed = np.cumsum(np.log1p(float(planned) * d), axis=-1)
    return np.logaddexp(hedged, fixed) - np.log(2.0)


def first_crossing(log_k: np.ndarray, alpha: float) -> np.ndarray:
    """1-based index of the first observation at which ``K_t ≥ 1/α`` along the last axis; 0 where never."""
    hit = log_k >= -np.log(alpha)
    return np.where(hit.any(axis=-1), hit.argmax(axis=-1) + 1, 0)


@dataclass(frozen=True)
class Step:
    """The monitor after one subject: the e-value against the null, the confidence sequence for the
    mean (the statistic's own scale, intersected over time) and whether the null is rejected."""

    subjects: int
    observed: int
    e_value: float
    lower: float
    upper: float
    estimate: float
    rejected: bool


def monitor_path(x: Sequence[float], lo: float, hi: float, null: float, alpha: float,
                 grid: int = CS_GRID, planned: float | None = None) -> list[Step]:
    """Every step of a monitor of the observations ``x`` (NaN: a subject without an estimate) in ``[lo, hi]``
    against the mean ``null``: the e-value ``K_t(null)`` (with the ``planned`` bet: :func:`log_capital`), the
    running (1 − α) confidence sequence ``{m: K_t(m) < 1/α}`` of the hedged process on a grid of ``grid``
    means (intersected over time) and the estimate (mean of the observations so far).  The same function
    the plan validates and the run records."""
    y = rescale(np.asarray(x, float), lo, hi)
    m0 = (null - lo) / (hi - lo)
    ms = np.linspace(0.0, 1.0, grid)[1:-1]
    log_k = np.array([log_capital(y, float(m)) for m in ms]) if y.size else np.empty((ms.size, 0))
    log_null = log_capital(y, m0, planned=planned) if y.size else np.empty(0)
    inside = np.logical_and.accumulate(log_k < -np.log(alpha), axis=1)
    steps, rejected = [], False
    for t in range(y.size):
        seen = y[: t + 1][np.isfinite(y[: t + 1])]
        keep = ms[inside[:, t]]
        lower = lo + (hi - lo) * float(keep.min()) if keep.size else float("nan")
        upper = lo + (hi - lo) * float(keep.max()) if keep.size else float("nan")
        rejected = rejected or bool(log_null[t] >= -np.log(alpha))
        steps.append(Step(t + 1, int(seen.size), float(np.exp(min(log_null[t], 700.0))), lower, upper,
                          lo + (hi - lo) * float(seen.mean()) if seen.size else float("nan"), rejected))
    return steps


__all__ = ["CS_GRID", "TRUNCATION", "Step", "first_crossing", "log_capital", "monitor_path", "planned_bet", "rescale"]
