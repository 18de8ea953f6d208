"""A sequential design's saving against the fixed design a researcher would run instead, at equal power.

The comparator is the plain test on the per-unit values the fixed plan tests (one LLM: the one-sample t-test
of the per-subject MLE less its null value; two LLMs: Welch's t-test, or the rank test where the parameter's
comparison declares one, of the second LLM's units against the first's), sized so that its power equals the
sequential design's own power, both measured on the same reporting pools (fresh simulations that chose
nothing).  Its power curve is measured at every size up to the pools' longest study; the equal-power size is
interpolated where the curve (made non-decreasing) reaches the sequential design's power.  The saving
``1 − E[n] / n*`` and its interval come from one leave-one-sub-pool-out jackknife over both designs' studies
(:func:`~cogtestbed.planning.protocol.jackknife`): a joint interval, the two estimates' correlation
included.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

#: The comparator's simulated studies per size and sub-pool.
STUDIES_PER_POOL = 200


def _t_reject(a: np.ndarray, b: np.ndarray | None, level: float, dirn: float) -> np.ndarray:
    """Per row, whether the two-sided t-test (one sample ``a`` against 0; Welch of ``b`` against ``a``) at
    ``level`` rejects, in the direction ``dirn`` (0: either).  NaN: a unit without a value, left out."""
    from scipy import stats

    def moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = np.isfinite(x).sum(axis=1).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(x, axis=1), np.nanvar(x, axis=1, ddof=1) / n, n

    ma, va, na = moments(a)
    if b is None:
        diff, var, df = ma, va, na - 1
    else:
        mb, vb, nb = moments(b)
        diff, var = mb - ma, va + vb
        with np.errstate(invalid="ignore", divide="ignore"):
            df = var ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = diff / np.sqrt(var)
        p = 2 * stats.t.sf(np.abs(t), df)
    hit = np.isfinite(p) & (p <= level)
    return hit & (np.sign(diff) == dirn) if dirn else hit


def _rank_reject(a: np.ndarray, b: np.ndarray, level: float, dirn: float) -> np.ndarray:
    """Per row, whether the two-sided Mann–Whitney test of ``b`` against ``a`` rejects in the direction ``dirn``."""
    from scipy import stats

    rows = []
    for x, y in zip(a, b, strict=True):
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if x.size < 1 or y.size < 1 or np.ptp(np.r_[x, y]) == 0:
            rows.append(False)
            continue
        p = float(stats.mannwhitneyu(y, x).pvalue)
        side = np.sign(np.median(y) - np.median(x)) if dirn else 0.0
        rows.append(p <= level and (not dirn or side == dirn))
    return np.array(rows, bool)


def power_curve(parts: np.ndarray, batches: int, sizes: np.ndarray, test: str, level: float, dirn: float,
                rng: np.random.Generator, per_pool: int = STUDIES_PER_POOL) -> tuple[np.ndarray, np.ndarray]:
    """The fixed test's rejections at each of ``sizes`` on studies drawn without replacement from each of
    ``batches`` disjoint sub-pools of ``parts`` (rows: units; columns: the first group, and the second for two
    LLMs): ``(hits[size, study], sub-pool of each study)``.  ``test``: ``t-test``/``welch`` or ``rank``."""
    subs = np.array_split(parts, batches)
    which = np.repeat(np.arange(batches), per_pool)
    hits = np.zeros((sizes.size, which.size), bool)
    for b, sub in enumerate(subs):
        order = np.argsort(rng.random((per_pool, sub.shape[0])), axis=1)
        for i, n in enumerate(sizes):
            take = sub[order[:, : int(n)]]  # (studies, n, groups)
            a = take[..., 0]
            other = take[..., 1] if parts.shape[1] == 2 else None
            rej = (_rank_reject(a, other, level, dirn) if test == "rank" and other is not None
                   else _t_reject(a, other, level, dirn))
            hits[i, which == b] = rej
    return hits, which


def size_at(sizes: np.ndarray, power: np.ndarray, target: float) -> float:
    """The size at which the non-decreasing envelope of ``power`` (at ``sizes``) reaches ``target``, linearly
    interpolated between neighbouring sizes; NaN where it never does."""
    env = np.maximum.accumulate(power)
    above = np.flatnonzero(env >= target)
    if not above.size:
        return float("nan")
    i = int(above[0])
    if i == 0 or env[i] == env[i - 1]:
        return float(sizes[i])
    frac = (target - env[i - 1]) / (env[i] - env[i - 1])
    return float(sizes[i - 1] + frac * (sizes[i] - sizes[i - 1]))


def equal_power_saving(rejected: np.ndarray, stop: np.ndarray, which: np.ndarray, hits: np.ndarray,
                       hit_which: np.ndarray, sizes: np.ndarray) -> dict[str, Any]:
    """The sequential design (per fresh effect study: ``rejected``, its size at stopping ``stop``, its
    sub-pool ``which``) against the fixed test's power curve (``hits`` at ``sizes``, studies of sub-pools
    ``hit_which``) at the sequential design's power: the equal-power size ``n*``, the fixed test's power at
    ``ceil(n*)``, the saving ``1 − E[n]/n*`` and a joint jackknife SE over the sub-pools."""
    from cogtestbed.planning.protocol import jackknife

    labels = np.unique(which)

    def estimate(keep: np.ndarray) -> np.ndarray:
        dropped = set(labels[~np.isin(labels, which[keep])].tolist()) if not keep.all() else set()
        mask = ~np.isin(hit_which, list(dropped))
        pw = float(rejected[keep].mean())
        n_star = size_at(sizes, hits[:, mask].mean(axis=1), pw)
        e_n = float(stop[keep].mean())
        return np.array([pw, e_n, n_star, 1.0 - e_n / n_star if n_star > 0 else math.nan])

    full, se = jackknife(estimate, which)
    n_star = full[2]
    at = int(np.searchsorted(sizes, math.ceil(n_star))) if math.isfinite(n_star) else -1
    fixed_pw = hits[at].mean() if 0 <= at < sizes.size else math.nan
    fixed_se = (math.sqrt(fixed_pw * (1 - fixed_pw) / hits.shape[1]) if math.isfinite(fixed_pw) else math.nan)
    z = 1.96
    return {"sequential_power": full[0], "sequential_power_se": se[0], "expected": full[1], "expected_se": se[1],
            "fixed_size": n_star, "fixed_size_se": se[2],
            "fixed_size_whole": int(sizes[at]) if 0 <= at < sizes.size else None,
            "fixed_power": float(fixed_pw), "fixed_power_se": fixed_se,
            "saving": full[3], "saving_se": se[3], "interval": [full[3] - z * se[3], full[3] + z * se[3]],
            "studies_per_size": int(hits.shape[1]),
            "method": "fixed test's power curve and the sequential design's E[n] on the same reporting pools; "
                      "equal-power size interpolated on the curve's non-decreasing envelope; joint 95% interval "
                      "from a leave-one-sub-pool-out jackknife of both"}


__all__ = ["STUDIES_PER_POOL", "equal_power_saving", "power_curve", "size_at"]
