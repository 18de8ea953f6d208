"""The power ceiling a fixed group of people puts on a two-group plan (plans that finish).

An LLM compared with a fixed number ``m`` of people (``--population``, ``--human``): however many LLM
subjects are simulated, the people's sampling error stays.  In normal theory the two-sample test's
power at ``n`` LLM subjects is

    P(n) = Φ(δ / √(σ²_people/m + σ²_llm/n) − z_{1−α/2})  =  Φ(1 / √(A + B/n) − z_{1−α/2}),

(the other tail's rejections ignored), rising in ``n`` to the ceiling Φ(1/√A − z_{1−α/2}), where
``A = σ²_people / (m δ²)`` is the people's share of the variance of the estimated difference.  A design
search that doubles the LLM's size toward a target above that ceiling never stops (the λ + 0.5 plan of
an LLM against Spektor et al.'s 30 people did not finish in 23 minutes).

:func:`people_ceiling` fits ``A`` and ``B`` by binomial maximum likelihood to every size of a
combination simulated so far and tests "the ceiling reaches the target" by a one-sided likelihood-ratio
test (the profile likelihood at ``A = A_target``, the largest ``A`` whose ceiling reaches the target,
against the maximum; Wilks: χ²₁, one-sided 5 %, 2.706, at each failed size).  A target exactly at the
ceiling needs an infinite LLM group anyway; with a ceiling of 0.9 and a target of 0.8 a simulated
ladder of 10-160 LLM subjects at 24-48 simulations a size was stopped in 3 of 100 ladders.  ``A`` is
the people's term: it does not depend on the LLM's design (its trials change ``B``), so a rejected
ceiling rules out every LLM design of the search (to normal-theory accuracy; a rank test's power
follows the same shape).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

#: One-sided 5 % point of χ²₁ (the likelihood-ratio test of "ceiling ≥ target", tested at each failed size).
LR_CRITICAL = float(stats.chi2.ppf(0.90, 1))

#: Sizes of a combination simulated before a ceiling is tested (two fix A and B; a third checks them).
MIN_SIZES = 3


@dataclass(frozen=True)
class Ceiling:
    """The fitted power ceiling of a fixed-people plan: its point estimate (``rate``), the
    likelihood-ratio statistic of "ceiling ≥ target" (``lr``) and whether that is rejected (``below``)."""

    rate: float
    lr: float
    below: bool
    sizes: int

    def words(self, people: int, target: float) -> str:
        """``against the fixed 30 people the power levels off at about 0.65 ...`` (one clause)."""
        return (f"against the fixed {people} people the power levels off at about {self.rate:.2f} whatever the "
                f"LLM's size or trials (the curve Φ(1/√(A + B/n) − z) fitted to {self.sizes} sizes; a ceiling of "
                f"{target:.0%} or more rejected by a one-sided likelihood-ratio test at 5 %, LR {self.lr:.1f})")


def _nll(a: float, b: float, n: np.ndarray, hits: np.ndarray, sims: np.ndarray, z: float) -> float:
    eta = 1.0 / np.sqrt(a + b / n) - z
    return -float(np.sum(hits * stats.norm.logcdf(eta) + (sims - hits) * stats.norm.logsf(eta)))


def _profile_b(a: float, n: np.ndarray, hits: np.ndarray, sims: np.ndarray, z: float) -> float:
    """The smallest NLL over ``B ≥ 0`` at fixed ``A`` (``log B`` searched on a bounded interval)."""
    fit = optimize.minimize_scalar(lambda lb: _nll(a, math.exp(lb), n, hits, sims, z), bounds=(-12.0, 12.0),
                                   method="bounded", options={"xatol": 1e-6})
    return min(float(fit.fun), _nll(a, 0.0, n, hits, sims, z))


def people_ceiling(sizes: ArrayLike, hits: ArrayLike, sims: ArrayLike, target: float,
                   level: float = 0.05) -> Ceiling | None:
    """The power ceiling of the module docstring fitted to simulated powers ``hits / sims`` at LLM sizes
    ``sizes`` (None with fewer than :data:`MIN_SIZES` sizes).  ``below``: the target lies above the
    ceiling (the one-sided likelihood-ratio test rejects a ceiling ≥ ``target`` at 5 %)."""
    n, h, s = (np.asarray(v, float) for v in (sizes, hits, sims))
    if len(np.unique(n)) < MIN_SIZES or not 0 < target < 1:
        return None
    z = float(stats.norm.ppf(1 - level / 2))
    theta_target = float(stats.norm.ppf(target)) + z
    a_target = 1.0 / theta_target ** 2
    fit = optimize.minimize_scalar(lambda la: _profile_b(math.exp(la), n, h, s, z), bounds=(-12.0, 8.0),
                                   method="bounded", options={"xatol": 1e-6})
    a_hat, best = math.exp(float(fit.x)), float(fit.fun)
    rate = float(stats.norm.cdf(1.0 / math.sqrt(a_hat) - z))
    # The largest ceiling within "≥ target" is at A = A_target (the profile rises toward the MLE).
    lr = 0.0 if a_hat <= a_target else max(0.0, 2.0 * (_profile_b(a_target, n, h, s, z) - best))
    return Ceiling(rate, lr, bool(a_hat > a_target and lr >= LR_CRITICAL), len(np.unique(n)))


__all__ = ["Ceiling", "LR_CRITICAL", "MIN_SIZES", "people_ceiling"]
