"""The fixed and the group-sequential design on the monitor's pools: the three designs of a monitor
plan side by side at equal power, the two that are not the monitor computed from the same simulated units.

The statistic at a look is the fixed plan's: the two-sided one-sample t-test on the units so far
(:func:`~cogtestbed.planning.kinds.sequential.seqsim.prefix_z`) — one subject's MLE less its null value (one LLM), or a
pair's difference (two LLMs: the paired form of the fixed plan's two-sample test; with independent groups
the pair difference's variance is the sum of the groups', so the two tests have the same power to within the
t-distribution's degrees of freedom).

The group-sequential design is the planner's (:mod:`~cogtestbed.planning.kinds.sequential.seqplan`): ``K`` looks at
``round(k/K · N)`` units, Lan–DeMets O'Brien–Fleming α-spending bounds at the planned fractions k/K
(:func:`~cogtestbed.planning.kinds.sequential.seqpaths.boundaries`), efficacy only, their level calibrated by one
shift on simulated null studies (:func:`~cogtestbed.planning.kinds.sequential.seqsim.calibrate_shift`: α/2 in the
effect's direction, α for an undirected metric difference); the maximum size ``N`` is the smallest of
:func:`~cogtestbed.planning.kinds.sequential.seqplan.candidate_maxima` reaching the target power.  Calibration and the
choice of ``N`` read the *choosing* pools' studies; power, type-I error and expected sizes are measured on the
*measuring* pools' (:mod:`~cogtestbed.planning.kinds.monitor.monitor_pools`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: Looks of the group-sequential design computed from the pools (where the plan has no ``looks`` of its own).
GS_LOOKS = 3
#: Its spending function (Lan–DeMets O'Brien–Fleming type).
GS_SPENDING = "obrien-fleming"

#: Per row: the t-test's Z at every prefix size 1..length (column n−1: the first n units).
ZTable = Callable[[int], tuple[np.ndarray, np.ndarray]]


def prefix_table(rows: np.ndarray) -> ZTable:
    """A cached :func:`~cogtestbed.planning.kinds.sequential.seqsim.prefix_z` of simulated studies (rows)."""
    from cogtestbed.planning.kinds.sequential.seqsim import prefix_z

    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def at(n: int) -> tuple[np.ndarray, np.ndarray]:
        if n not in cache:
            cache[n] = prefix_z(rows, n)
        return cache[n]

    return at


def fixed_rejects(z: np.ndarray, level: float, dirn: float) -> np.ndarray:
    """The fixed two-sided t-test's rejections from its Z (``|Z| ≥ z_{1−α/2}``), in the effect's direction
    only when ``dirn`` is ±1 (power) or either (``dirn`` 0: type-I error, an undirected metric)."""
    from scipy import stats

    crit = float(stats.norm.isf(level / 2))
    return z * dirn >= crit if dirn else np.abs(z) >= crit


def fixed_size(table: ZTable, length: int, level: float, power: float, dirn: float) -> tuple[int, bool]:
    """The smallest size ≤ ``length`` at which the fixed test reaches ``power`` on the studies of ``table``
    (and whether one does; else ``length``)."""
    for n in range(2, length + 1):
        if fixed_rejects(table(n)[0], level, dirn).mean() >= power:
            return n, True
    return length, False


def group_sequential(choose_eff: np.ndarray, choose_nul: np.ndarray, eff: np.ndarray, nul: np.ndarray,
                     eff_which: np.ndarray, nul_which: np.ndarray, n_fix: int, level: float, power: float,
                     dirn: float, looks: int = GS_LOOKS, one_sided: bool = False) -> dict[str, Any]:
    """The group-sequential design on simulated studies (rows; see the module docstring): ``choose_*`` the
    choosing pools' studies (calibration, the maximum size), ``eff``/``nul`` the measuring pools' with their
    sub-pools (``*_which``, the MC SEs).  ``dirn``: the effect's sign (0: undirected).  ``one_sided``: a
    rejection under the null counts in the effect's direction only (a one-sided test at ``level / 2``)."""
    from cogtestbed.planning.kinds.monitor.monitor_pools import rate_and_se, upper_bound
    from cogtestbed.planning.kinds.sequential.seqpaths import Boundaries, boundaries
    from cogtestbed.planning.kinds.sequential.seqplan import (
        MAX_FACTOR,
        MIN_FACTOR,
        candidate_maxima,
        look_sizes,
        operate,
    )
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift, null_scores

    length = eff.shape[1]
    hi = min(length, max(math.ceil(MAX_FACTOR * n_fix), 2 * looks))
    maxima = candidate_maxima(min(hi, max(2 * looks, math.floor(MIN_FACTOR * n_fix))), hi, n_fix)
    shape = boundaries(look_sizes(maxima[-1], looks), level, GS_SPENDING, False, power,
                       fractions=[k / looks for k in range(1, looks + 1)])
    tables = {name: prefix_table(rows) for name, rows in
              (("cal", choose_nul), ("pick", choose_eff), ("eff", eff), ("nul", nul))}
    side = level / 2 if dirn else level

    def paths(name: str, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        z, est = zip(*(tables[name](n) for n in sizes), strict=True)
        return np.column_stack(z), np.column_stack(est)

    chosen = None
    for m in maxima:
        sizes = look_sizes(m, looks)
        cols = list(range(looks))
        nominal = Boundaries(sizes, GS_SPENDING, level, shape.efficacy, None)
        shift = calibrate_shift(null_scores(nominal, paths("cal", sizes)[0], cols, dirn), side)
        bounds = nominal.with_shift(shift, {"side_level": side, "null_studies": int(choose_nul.shape[0]),
                                            "pools": "choosing"})
        picked = operate(bounds, *paths("pick", sizes), cols, dirn, dirn or None)
        chosen = bounds
        if picked.rate >= power:
            break
    assert chosen is not None
    cols = list(range(looks))
    on_eff = operate(chosen, *paths("eff", chosen.sizes), cols, dirn, dirn or None)
    on_nul = operate(chosen, *paths("nul", chosen.sizes), cols, dirn, dirn if one_sided and dirn else None)
    pw, pw_se = rate_and_se(on_eff.rejected, eff_which)
    rej, rej_se = rate_and_se(on_nul.rejected, nul_which)
    e_n, e_se = rate_and_se(on_eff.units, eff_which)
    n_n, n_se = rate_and_se(on_nul.units, nul_which)
    return {"looks": looks, "spending": GS_SPENDING, "sizes": list(chosen.sizes), "max": int(chosen.sizes[-1]),
            "efficacy": list(chosen.efficacy), "shift": (chosen.calibration or {}).get("shift"),
            "reached": bool(picked.rate >= power), "power": pw, "power_se": pw_se, "null_rejection": rej,
            "null_rejection_se": rej_se, "null_upper": upper_bound(rej, rej_se, nul.shape[0]),
            "expected_effect": e_n, "expected_effect_se": e_se, "expected_null": n_n, "expected_null_se": n_se,
            "boundary": f"Lan-DeMets O'Brien-Fleming alpha-spending, {looks} looks at k/{looks} of the maximum, "
                        f"efficacy only, level calibrated on {choose_nul.shape[0]} null studies of the choosing "
                        "pools"}


def fixed_measured(eff: np.ndarray, nul: np.ndarray, eff_which: np.ndarray, nul_which: np.ndarray, n: int,
                   level: float, dirn: float, null_dirn: float = 0.0) -> dict[str, Any]:
    """The fixed t-test at ``n`` units on the measuring pools' studies: power (in the effect's direction)
    and type-I error (either direction; ``null_dirn`` ±1: that direction only) with their MC SEs."""
    from cogtestbed.planning.kinds.monitor.monitor_pools import rate_and_se, upper_bound
    from cogtestbed.planning.kinds.sequential.seqsim import prefix_z

    pw, pw_se = rate_and_se(fixed_rejects(prefix_z(eff, n)[0], level, dirn), eff_which)
    rej, rej_se = rate_and_se(fixed_rejects(prefix_z(nul, n)[0], level, null_dirn), nul_which)
    return {"n": n, "power": pw, "power_se": pw_se, "null_rejection": rej, "null_rejection_se": rej_se,
            "null_upper": upper_bound(rej, rej_se, nul.shape[0])}


__all__ = ["GS_LOOKS", "GS_SPENDING", "fixed_measured", "fixed_rejects", "fixed_size", "group_sequential",
           "prefix_table"]
