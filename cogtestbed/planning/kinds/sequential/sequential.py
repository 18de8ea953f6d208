"""Group-sequential boundaries: α-spending efficacy bounds and non-binding β-spending futility bounds.

A group-sequential design looks at the data K times, after fixed shares ``t_1 < … < t_K = 1`` of
the maximum information, and stops early when the standardised statistic ``Z_k`` crosses a bound.
Under the canonical joint distribution (Jennison & Turnbull 2000, §3.1) ``Z_k √I_k`` is a Brownian
motion with drift θ observed at information ``I_k``: ``Z_k`` are jointly normal with
``corr(Z_j, Z_k) = √(t_j / t_k)`` (j ≤ k) and mean ``θ √I_k``.

Efficacy bounds follow Lan & DeMets (1983): a spending function ``α(t)`` gives the type-I error
spent by look k, and bound ``b_k`` solves ``P_0(continue to k, Z_k ≥ b_k) = α(t_k) − α(t_{k−1})``.
The crossing probabilities are computed by the recursive numerical integration of Armitage,
McPherson & Rowe (1969) (Jennison & Turnbull 2000, ch. 19): the sub-density of ``Z_k`` on the
continuation region is propagated on a grid and integrated with Simpson's rule.  Efficacy bounds
ignore futility (futility is *non-binding*: a run may continue past a futility bound without
inflating the type-I error).

Spending functions (one-sided α):

* Lan–DeMets O'Brien–Fleming type: ``α(t) = 2 − 2 Φ(z_{1−α/2} / √t)`` (Lan & DeMets 1983);
* Lan–DeMets Pocock type: ``α(t) = α ln(1 + (e − 1) t)`` (Lan & DeMets 1983);
* Hwang–Shih–DeCani family ``hsd:γ``: ``α(t) = α (1 − e^{−γt}) / (1 − e^{−γ})`` (``α t`` at γ = 0;
  Hwang, Shih & DeCani 1990): γ = −4 is close to O'Brien–Fleming, γ = 1 to Pocock.

The same functions of β spend the type-II error for futility bounds ``a_k`` at a given drift
(``P_θ(continue to k, Z_k < a_k) = β(t_k) − β(t_{k−1})``; the last look's futility bound is its
efficacy bound: at the last look a run that does not reject accepts).

Tested against published tables (DeMets & Lan 1994; gsDesign's ``sfLDOF``/``sfLDPocock``) in
``tests/test_sequential.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from scipy import optimize, special, stats

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.sequential.seqoptions import (  # the names, checked before numpy is imported
    SPENDING_FUNCTIONS,
    Spending,
    hsd_gamma,
)
from cogtestbed.planning.kinds.sequential.seqoptions import check_spending as check_spending

#: Grid points per unit of Z in the recursive integration (odd total for Simpson's rule); with
#: 60 points per unit the bounds agree with published tables to 1e-4.
GRID_PER_UNIT = 60
#: The continuation region's far end: the density below −LOWER_EDGE (plus the drift) is < 1e-15.
LOWER_EDGE = 8.5


def spent(t: np.ndarray | float, alpha: float, spending: Spending) -> np.ndarray:
    """Error spent by information fraction ``t`` under a Lan–DeMets spending function."""
    t_arr = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if spending == "obrien-fleming":
        z = stats.norm.isf(alpha / 2.0)
        with np.errstate(divide="ignore"):
            out = 2.0 * stats.norm.sf(z / np.sqrt(t_arr))
        return np.where(t_arr > 0, out, 0.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t_arr)
    gamma = hsd_gamma(spending)
    if gamma is not None:
        if abs(gamma) < 1e-12:
            return alpha * t_arr
        return alpha * np.expm1(-gamma * t_arr) / np.expm1(-gamma)
    raise InputError(f"unknown spending function {spending!r}; choose one of {', '.join(SPENDING_FUNCTIONS)}")


def _simpson_weights(n: int, step: float) -> np.ndarray:
    """Composite Simpson weights of ``n`` (odd) equally spaced points."""
    w = np.ones(n)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w * step / 3.0


def _grid(low: float, high: float, per_unit: int = GRID_PER_UNIT) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights covering [low, high]."""
    n = max(int(math.ceil((high - low) * per_unit)), 2)
    n += 1 - n % 2  # Simpson's rule needs an odd number of points
    z = np.linspace(low, high, n)
    return z, _simpson_weights(n, (high - low) / (n - 1))


@dataclass(frozen=True)
class _Step:
    """The transition from look k−1 to look k: Z_k | Z_{k−1}=u ~ N(u·ratio + shift, scale²)."""

    ratio: float
    shift: float
    scale: float


def _steps(fractions: np.ndarray, drift: float) -> list[_Step]:
    """Transitions between looks for a drift θ√I_max (the mean of Z at t = 1)."""
    steps = [_Step(0.0, drift * math.sqrt(fractions[0]), 1.0)]
    for prev, cur in zip(fractions[:-1], fractions[1:], strict=True):
        ratio = math.sqrt(prev / cur)
        increment = cur - prev
        steps.append(_Step(ratio, drift * increment / math.sqrt(cur), math.sqrt(increment / cur)))
    return steps


class _Recursion:
    """Sub-density of Z_k on the continuation region, propagated look by look."""

    def __init__(self, fractions: np.ndarray, drift: float, per_unit: int = GRID_PER_UNIT) -> None:
        self.steps = _steps(fractions, drift)
        self.per_unit = per_unit
        self.points: np.ndarray | None = None  # grid of the previous look's continuation region
        self.density: np.ndarray | None = None  # sub-density times Simpson weights on it

    def _mean_scale(self, k: int) -> tuple[np.ndarray, float]:
        step = self.steps[k]
        if self.points is None:
            return np.array([step.shift]), step.scale
        return self.points * step.ratio + step.shift, step.scale

    def _mass(self) -> np.ndarray:
        return np.ones(1) if self.density is None else self.density

    def upper(self, k: int, bound: float) -> float:
        """P(continued to look k, Z_k ≥ bound)."""
        mean, scale = self._mean_scale(k)
        return float(self._mass() @ special.ndtr((mean - bound) / scale))

    def lower(self, k: int, bound: float) -> float:
        """P(continued to look k, Z_k < bound)."""
        mean, scale = self._mean_scale(k)
        return float(self._mass() @ special.ndtr((bound - mean) / scale))

    def advance(self, k: int, low: float, high: float) -> None:
        """Move to look k with continuation region (low, high)."""
        mean, scale = self._mean_scale(k)
        # the sub-density is a mixture of N(mean_i, scale²): beyond LOWER_EDGE SDs it is < 1e-15
        low = max(low, float(np.min(mean)) - LOWER_EDGE * scale)
        high = min(high, float(np.max(mean)) + LOWER_EDGE * scale)
        if high <= low:
            self.points, self.density = np.array([low]), np.zeros(1)
            return
        z, w = _grid(low, high, self.per_unit)
        # the normal kernel exp(−u²/2)/(scale·√(2π)), u = (z − mean)/scale, computed in place (the same
        # values as the expression written out, without its three temporary matrices)
        u = np.subtract.outer(z, mean)
        u /= scale
        kernel = np.multiply(u, -0.5)
        kernel *= u
        np.exp(kernel, out=kernel)
        kernel /= scale * math.sqrt(2.0 * math.pi)
        dens = kernel @ self._mass()
        self.points, self.density = z, dens * w


def _solve(probability: Callable[[float], float], target: float) -> float:
    """The bound where the monotone crossing probability ``probability(bound)`` equals ``target``."""
    return float(optimize.brentq(lambda b: probability(b) - target, -12.0, 40.0, xtol=1e-10))


def _check_fractions(fractions: Sequence[float] | np.ndarray) -> np.ndarray:
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)):
        raise InputError("information fractions must be a non-empty list of numbers")
    if np.any(np.diff(t) <= 0) or t[0] <= 0 or abs(t[-1] - 1.0) > 1e-12:
        raise InputError(f"information fractions must increase strictly within (0, 1] and end at 1, got {list(t)}")
    return t


def efficacy_bounds(fractions: Sequence[float], alpha: float, spending: Spending = "obrien-fleming",
                    per_unit: int = GRID_PER_UNIT) -> np.ndarray:
    """One-sided efficacy bounds ``b_k`` on the Z scale (Lan & DeMets 1983), futility ignored
    (``per_unit``: grid points per unit of Z of the recursive integration)."""
    if not 0.0 < alpha < 0.5:
        raise InputError(f"alpha must lie in (0, 0.5), got {alpha}")
    t = _check_fractions(fractions)
    increments = np.diff(np.concatenate([[0.0], spent(t, alpha, spending)]))
    recursion = _Recursion(t, 0.0, per_unit)
    bounds = np.empty(t.size)
    for k, inc in enumerate(increments):
        # a look that spends (next to) nothing never stops: its bound is +∞ in effect
        bounds[k] = _solve(partial(recursion.upper, k), inc) if inc > 1e-15 else np.inf
        recursion.advance(k, -np.inf, min(bounds[k], 40.0))
    return bounds


def futility_bounds(
    fractions: Sequence[float],
    efficacy: Sequence[float],
    drift: float,
    beta: float,
    spending: Spending = "obrien-fleming",
) -> np.ndarray:
    """Non-binding futility bounds ``a_k`` spending β at the alternative's drift (mean of Z at t=1).

    ``a_k`` solves ``P_θ(continued to k, Z_k < a_k) = β(t_k) − β(t_{k−1})`` with the continuation
    region (a_k, b_k); a bound above the efficacy bound is lowered to it, and the last look's futility
    bound is its efficacy bound.
    """
    t = _check_fractions(fractions)
    b = np.asarray(efficacy, dtype=float)
    increments = np.diff(np.concatenate([[0.0], spent(t, beta, spending)]))
    recursion = _Recursion(t, drift)
    bounds = np.empty(t.size)
    for k, inc in enumerate(increments):
        if k == t.size - 1:
            bounds[k] = b[k]
            break
        a = _solve(partial(recursion.lower, k), inc) if inc > 1e-15 else -np.inf
        bounds[k] = min(a, b[k])
        recursion.advance(k, bounds[k], min(b[k], 40.0))
    return bounds


@dataclass(frozen=True)
class Crossing:
    """Probabilities of stopping at each look: for efficacy, for futility, and their totals."""

    efficacy: np.ndarray
    futility: np.ndarray

    @property
    def reject(self) -> float:
        """P(the procedure rejects the null at some look)."""
        return float(self.efficacy.sum())


def crossing_probabilities(
    fractions: Sequence[float],
    efficacy: Sequence[float],
    futility: Sequence[float] | None = None,
    drift: float = 0.0,
    per_unit: int = GRID_PER_UNIT,
) -> Crossing:
    """P(stop for efficacy at k) and P(stop for futility at k) under drift θ√I_max.

    With futility bounds given they are treated as binding here (the probabilities of the
    procedure as it runs when futility is obeyed).  ``per_unit``: grid points per unit of Z (fewer
    is faster and coarser: 20 gives the rejection probability of a 10-look design to 1e-6).
    """
    t = _check_fractions(fractions)
    b = np.asarray(efficacy, dtype=float)
    a = np.full(t.size, -np.inf) if futility is None else np.asarray(futility, dtype=float)
    recursion = _Recursion(t, drift, per_unit)
    up, down = np.zeros(t.size), np.zeros(t.size)
    for k in range(t.size):
        up[k] = recursion.upper(k, min(b[k], 40.0)) if np.isfinite(b[k]) else 0.0
        down[k] = recursion.lower(k, a[k]) if np.isfinite(a[k]) else 0.0
        if k == t.size - 1:
            down[k] = 1.0 - up.sum() - down[:k].sum()
        else:
            recursion.advance(k, a[k], min(b[k], 40.0))
    return Crossing(up, down)


def expected_information(fractions: Sequence[float], crossing: Crossing) -> float:
    """Expected share of the maximum information used: Σ_k t_k · P(stop at k)."""
    t = _check_fractions(fractions)
    stop = crossing.efficacy + crossing.futility
    return float(t @ stop)


# ----------------------------------------------------------------------------- the joint normal, by scipy
def look_covariance(fractions: Sequence[float] | np.ndarray) -> np.ndarray:
    """Covariance of the canonical look statistics: ``corr(Z_j, Z_k) = √(t_j / t_k)`` (j ≤ k)."""
    t = _check_fractions(fractions)
    return np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))


def mvn_reject(fractions: Sequence[float] | np.ndarray, upper: Sequence[float] | np.ndarray,
               lower: Sequence[float] | np.ndarray | None = None,
               drift: float = 0.0, seed: int = 0, eps: float = 1e-6) -> float:
    """P(some look leaves ``(lower_k, upper_k)``) under the canonical joint normal with drift θ√I_max
    (``scipy.stats.multivariate_normal``'s CDF, Genz's quasi-Monte-Carlo integration to ``eps``):
    an independent check of the recursive integration (:func:`crossing_probabilities` ignores
    nothing here: no futility, the region is a rectangle)."""
    t = _check_fractions(fractions)
    dist = stats.multivariate_normal(mean=drift * np.sqrt(t), cov=look_covariance(t), maxpts=100_000 * t.size,
                                     abseps=eps, releps=0.0)
    lo = np.full(t.size, -np.inf) if lower is None else np.asarray(lower, dtype=float)
    inside = float(dist.cdf(np.asarray(upper, dtype=float), lower_limit=lo, rng=np.random.default_rng(seed)))
    return 1.0 - inside


def constant_bounds(looks: int, alpha: float, shape: Literal["pocock", "obrien-fleming"]) -> np.ndarray:
    """The classical two-sided group-sequential bounds at equally spaced looks (Pocock 1977: ``|Z_k| ≥ c``;
    O'Brien & Fleming 1979: ``|Z_k| ≥ c·√(K/k)``) with total type-I error ``alpha``, the constant
    ``c`` solved on :func:`mvn_reject` (scipy's multivariate normal)."""
    t = np.arange(1, looks + 1) / looks
    weight = np.ones(looks) if shape == "pocock" else np.sqrt(1.0 / t)

    def excess(c: float) -> float:
        return mvn_reject(t, c * weight, -c * weight, eps=1e-5) - alpha

    return float(optimize.brentq(excess, 1.5, 5.0, xtol=1e-4)) * weight
