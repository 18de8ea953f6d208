"""Anytime-valid monitoring of a bounded per-subject statistic: a betting e-process and its
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

**What a plan adds** (:func:`log_capital`'s ``planned``, ``halfwidth``): the hedged process alone learns the
bet from the data and so bets small for the first tens of subjects, when a plan's stopping decisions are
made.  A plan knows the statistic's simulated distribution under its effect, so it fixes the exact
log-optimal constant bet on it (:func:`kelly_bet`; Kelly 1956) before the first subject and bets
``1 − HEDGE_WEIGHT`` of the capital on it, the rest on the hedged process (a mixture of test
(super)martingales is one, so validity is untouched).  A null interval ``m ± halfwidth`` makes it a test of
the composite null "the mean lies in the interval": each bet faces the interval's end on its side, every
factor's expectation is ≤ 1 for every mean inside, and the process is a non-negative supermartingale under
all of them (a per-subject MLE is biased at a finite design: its null mean is not exactly the parameter's).
For a statistic symmetric about 0 under the null (a pair difference of two exchangeable LLMs),
:func:`symmetric_unit` bets on an odd bounded transform instead: every odd function of a symmetric variable
has conditional mean 0, so no bounds on the statistic are needed at all.

**The property validity needs**: each observation lies in ``[lo, hi]`` and, under the null, its conditional
mean lies in the null interval — or, for the symmetry test, is symmetric about 0 given the past.  No
normality, no variance assumption: a per-subject MLE bounded by its parameter's declared range, skewed, piled
at a bound, is covered.  A missing estimate (a subject without a valid trial) is no observation: it is
skipped, as the fixed plan's test drops it.

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
#: Largest fraction of the ruin-free range a plan's constant Kelly bet may take (its factor stays ≥ 1 − this).
KELLY_TRUNCATION = 0.99
#: Share of the capital on the hedged aGRAPA process when a plan fixes a Kelly bet (the rest on that bet).
HEDGE_WEIGHT = 0.1
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
    """The Gaussian-approximate constant bet for a planned shift of the mean (rescaled scale) with the
    statistic's SD ``sd`` there: ``shift / (sd² + shift²)`` truncated to ``[−c/(1−m), c/m]`` (positive: betting
    on a larger mean).  Plans use the exact :func:`kelly_bet` on their simulated statistic instead."""
    bet = shift / (sd * sd + shift * shift) if sd > 0 or shift != 0 else 0.0
    return float(np.clip(bet, -c / (1.0 - m), c / m))


def kelly_bet(y: np.ndarray, m: float, halfwidth: float = 0.0, c: float = KELLY_TRUNCATION) -> float:
    """The log-optimal (Kelly 1956) constant bet on the distribution of the rescaled observations ``y`` (a
    plan's simulated statistic under its effect; NaN dropped) against the null mean ``m`` (``± halfwidth``,
    the end of the null interval the bet's direction faces): ``argmax_λ mean log(1 + λ (y − m±))`` over
    ``[0, c/m₊]`` when ``y``'s mean is above ``m₊ = m + halfwidth``, over ``[−c/(1 − m₋), 0]`` when below
    ``m₋ = m − halfwidth``, else 0.  On a Bernoulli(p) sample it is Kelly's fraction ``(p − m) / (m(1 − m))``.
    The objective is concave in λ, so a bounded scalar search finds it."""
    from scipy.optimize import minimize_scalar

    y = np.asarray(y, float)
    y = y[np.isfinite(y)]
    if y.size == 0:
        return 0.0
    up, down = m + halfwidth, m - halfwidth
    if y.mean() > up:
        d, top = y - up, c / up
    elif y.mean() < down:
        d, top = down - y, c / (1.0 - down)
    else:
        return 0.0
    res = minimize_scalar(lambda lam: -float(np.mean(np.log1p(lam * d))), bounds=(0.0, top), method="bounded",
                          options={"xatol": 1e-7})
    return float(res.x if y.mean() > up else -res.x)


def symmetric_unit(x: np.ndarray, scale: float) -> np.ndarray:
    """The odd bounded transform of a statistic symmetric about 0 under the null, on [0, 1] with null mean 1/2:
    ``(clip(x/scale, −1, 1) + 1) / 2`` (NaN stays NaN).  If ``x`` is symmetric about 0 given the past, every odd
    function of it has conditional mean 0, whatever its tails: a pair difference of two exchangeable LLMs'
    subjects needs no bounds at all, and ``scale`` (fixed by the plan) tunes the bet to the statistic's spread."""
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"a symmetric monitor needs a positive finite scale, got {scale}")
    return (np.clip(np.asarray(x, float) / scale, -1.0, 1.0) + 1.0) / 2.0


def tested_scale(x: np.ndarray, lo: float, hi: float, halfwidth: float = 0.0,
                 scale: float | None = None) -> tuple[np.ndarray, float, float]:
    """What the e-process bets on, for a statistic ``x`` in ``[lo, hi]`` whose null value is 0: with ``scale``,
    the symmetry test's :func:`symmetric_unit` (null mean 1/2, no half-width); else ``x`` rescaled, the null
    0's place on it and the half-width rescaled.  Returns ``(y, m, halfwidth)`` for :func:`log_capital`."""
    if scale is not None:
        return symmetric_unit(x, scale), 0.5, 0.0
    return rescale(x, lo, hi), -lo / (hi - lo), halfwidth / (hi - lo)


def log_capital(y: np.ndarray, m: float, c: float = TRUNCATION, planned: float | None = None,
                halfwidth: float = 0.0, hedge: float = HEDGE_WEIGHT) -> np.ndarray:
    """log ``K_t`` after each observation of ``y`` (last axis: the subjects in order; values in [0, 1], NaN
    skipped: its factor is 1) against every null mean in ``[m − halfwidth, m + halfwidth]`` (inside (0, 1)).

    The hedged aGRAPA process bets up against ``m + halfwidth`` and down against ``m − halfwidth``; each factor's
    expectation is ≤ 1 for every mean in the interval, so it is a non-negative supermartingale under the whole
    composite null (with ``halfwidth`` 0: a martingale).  ``planned``: a constant bet fixed before the data
    (:func:`kelly_bet`), betting against the interval's end it faces; the e-process is then the mixture
    ``hedge · hedged + (1 − hedge) · planned`` (a mixture of test supermartingales is one), which grows at
    nearly the Kelly rate where the plan's effect is right and keeps ``hedge`` of its capital on the adaptive
    bets where it is not (a wrong direction, another size)."""
    down_m, up_m = m - halfwidth, m + halfwidth
    if not (halfwidth >= 0.0 and down_m > 0.0 and up_m < 1.0):
        raise InputError(f"the null mean ± its half-width must lie inside (0, 1) on the rescaled scale, got {m} ± "
                         f"{halfwidth}")
    y = np.asarray(y, float)
    mean, var = _running(y)
    seen = np.isfinite(y)
    up = np.clip((mean - up_m) / (var + (mean - up_m) ** 2), 0.0, c / up_m)
    down = np.clip((down_m - mean) / (var + (mean - down_m) ** 2), 0.0, c / (1.0 - down_m))
    log_up = np.cumsum(np.log1p(up * np.where(seen, y - up_m, 0.0)), axis=-1)
    log_down = np.cumsum(np.log1p(-down * np.where(seen, y - down_m, 0.0)), axis=-1)
    hedged = np.logaddexp(log_up, log_down) - np.log(2.0)
    if planned is None or planned == 0.0:
        return hedged
    faced = up_m if planned > 0 else down_m
    fixed = np.cumsum(np.log1p(float(planned) * np.where(seen, y - faced, 0.0)), axis=-1)
    return np.logaddexp(np.log(hedge) + hedged, np.log1p(-hedge) + fixed)


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
                 grid: int = CS_GRID, planned: float | None = None, halfwidth: float = 0.0,
                 scale: float | None = None) -> list[Step]:
    """Every step of a monitor of the observations ``x`` (NaN: a subject without an estimate) in ``[lo, hi]``
    against the mean ``null`` (± ``halfwidth``, the statistic's scale): the e-value (:func:`log_capital` with
    the ``planned`` bet; with ``scale``, the test of symmetry about ``null`` on :func:`symmetric_unit` instead,
    its null mean 1/2), the running (1 − α) confidence sequence ``{m: K_t(m) < 1/α}`` of the hedged process on
    a grid of ``grid`` means (intersected over time) and the estimate (mean of the observations so far).  The
    same function the plan validates and the run records.  Unbounded values (``lo``, ``hi`` infinite) take the
    symmetry test only, without a confidence sequence (``lower``, ``upper`` NaN)."""
    xs = np.asarray(x, float)
    bounded = bool(np.isfinite(lo) and np.isfinite(hi))
    if not bounded and scale is None:
        raise InputError(f"a betting e-process for the mean needs finite bounds lo < hi, got [{lo}, {hi}]")
    y = rescale(xs, lo, hi) if bounded else np.where(np.isfinite(xs), 0.5, np.nan)
    ms = np.linspace(0.0, 1.0, grid)[1:-1] if bounded else np.empty(0)
    log_k = np.array([log_capital(y, float(m)) for m in ms]) if y.size and ms.size else np.empty((ms.size, y.size))
    tested, m0, width = tested_scale(xs - null, lo - null, hi - null, halfwidth, scale)
    log_null = log_capital(tested, m0, planned=planned, halfwidth=width) if y.size else np.empty(0)
    inside = np.logical_and.accumulate(log_k < -np.log(alpha), axis=1)
    steps, rejected = [], False
    for t in range(y.size):
        keep = ms[inside[:, t]]
        lower = lo + (hi - lo) * float(keep.min()) if keep.size else float("nan")
        upper = lo + (hi - lo) * float(keep.max()) if keep.size else float("nan")
        seen = xs[: t + 1][np.isfinite(xs[: t + 1])]
        rejected = rejected or bool(log_null[t] >= -np.log(alpha))
        steps.append(Step(t + 1, int(seen.size), float(np.exp(min(log_null[t], 700.0))), lower, upper,
                          float(seen.mean()) if seen.size else float("nan"), rejected))
    return steps


__all__ = ["CS_GRID", "HEDGE_WEIGHT", "KELLY_TRUNCATION", "TRUNCATION", "Step", "first_crossing", "kelly_bet",
           "log_capital", "monitor_path", "planned_bet", "rescale", "symmetric_unit",
           "tested_scale"]
