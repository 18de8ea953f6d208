"""The fair fixed comparator of a sequential design (issue 40 item 1): the fixed plan's test with
its critical values calibrated on the same calibration null studies, and to the same level, as the
sequential bounds, so that a saving is stated at equal type-I error.  Used by ``plan --looks auto``
(:mod:`cogtestbed.validation.design.seqauto`) and ``plan --looks K``
(:mod:`cogtestbed.validation.design.seqplan`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

#: Smallest size at which the fair fixed comparator is evaluated, as a multiple of the fixed plan's size.
FIXED_MIN_FACTOR = 0.5


# ----------------------------------------------------------------------------- the fair fixed comparator
def fair_fixed(eff_z: np.ndarray, cal_z: np.ndarray, nul_z: np.ndarray, sizes: Sequence[int], dirn: float,
               level: float, target: float) -> dict[str, Any]:
    """The fixed test at every size with its critical values in and against the effect's direction
    each calibrated on the calibration null studies to ``level``/2 (``level`` for an undirected
    statistic): power on the effect studies, type-I error on the search null studies, and the
    smallest size reaching ``target`` power (None with a reason when none does)."""
    from cogtestbed.validation.design.seqsim import calibrate_shift

    side = level / 2 if dirn else level
    z_nom = float(stats.norm.isf(level / 2))
    rows = []
    for i, n in enumerate(sizes):
        toward_cal = _toward(cal_z[:, i], dirn)
        crit = z_nom + calibrate_shift(toward_cal - z_nom, side)
        other = z_nom + calibrate_shift(-toward_cal - z_nom, side) if dirn else crit
        power = float(np.mean(_toward(eff_z[:, i], dirn) >= crit))
        t1 = fixed_reject_rate(nul_z[:, i], dirn, crit, other)
        rows.append({"size": int(n), "critical": round(crit, 6), "critical_other": round(other, 6), "power": power,
                     "type1": t1})
    reach = [r for r in rows if r["power"] >= target]
    best = reach[0] if reach else None
    return {"rows": rows, "chosen": best, "sims": int(eff_z.shape[0]), "null_sims": int(nul_z.shape[0]),
            "level": level,
            "method": ("the fixed plan's test with its critical values calibrated on the same calibration null "
                       "studies and to the same level as the sequential bounds: equal type-I error"),
            "reason": None if best else f"no size up to {sizes[-1]} reaches power {target:g} at the calibrated level"}


def _toward(z: np.ndarray, dirn: float) -> np.ndarray:
    z = np.where(np.isfinite(z), z, 0.0)
    return np.abs(z) if dirn == 0 else z * dirn


def fixed_reject_rate(z: np.ndarray, dirn: float, crit: float, z_nom: float) -> float:
    """Rejection rate of the fixed test: ``Z·d ≥ crit`` or ``Z·d ≤ −z_nom`` (``|Z| ≥ crit`` undirected;
    ``z_nom``: the critical value against the effect's direction)."""
    t = _toward(z, dirn)
    if dirn == 0:
        return float(np.mean(t >= crit))
    return float(np.mean((t >= crit) | (t <= -z_nom)))


def fair_statement(fair: dict[str, Any], seq: dict[str, Any], size_name: str, seq_type1: float, seq_null: int,
                   plan_size: int, fair_key: float) -> dict[str, Any]:
    """Which fixed design the saving is stated against, and its own error rates."""
    c = fair["chosen"]
    seq_se = math.sqrt(seq_type1 * (1 - seq_type1) / max(seq_null, 1))
    plan_pct = seq["plan_fixed"]["saving_percent"]
    ref = (f"against the fixed plan's own design ({plan_size} {size_name}, its nominal test): "
           + ("n/a" if plan_pct is None else f"{plan_pct:.1f}%"))
    worse = ("; no sequential rule searched is cheaper than this fixed test at equal type-I error: the fixed "
             "design is the cheaper choice here" if seq["saving"].get("percent") is not None
             and seq["saving"]["percent"] < 0 else "")
    if c is None:
        return {"comparator": "fixed plan's design", "fair": None,
                "statement": (f"saving stated against the fixed plan's design: {fair['reason']}, so the fixed test at "
                              f"equal type-I error has no size in range ({ref})")}
    se_p = math.sqrt(c["power"] * (1 - c["power"]) / fair["sims"])
    fresh = fair.get("confirm_type1")
    t1, t1_n = (fresh, seq_null) if fresh is not None else (c["type1"], fair["null_sims"])
    t1_se = math.sqrt(t1 * (1 - t1) / max(t1_n, 1))
    t1_text = f"type-I {t1:.3f} ± {t1_se:.3f} on {t1_n:,} {'fresh' if fresh is not None else 'search'} null studies"
    level_words = fair.get("level_words", "a margin below alpha so that fresh type-I stays <= alpha")
    return {"comparator": "fixed test calibrated to alpha on the same null studies", "fair": True,
            "fixed_size": c["size"], "fixed_critical": c["critical"], "fixed_power": c["power"],
            "fixed_power_mc_se": se_p, "fixed_type1": t1, "fixed_type1_mc_se": t1_se, "fixed_null_sims": t1_n,
            "sequential_type1": seq_type1, "sequential_type1_mc_se": seq_se, "fixed_cost_key": fair_key,
            "statement": (f"saving stated at equal type-I error: against the fixed test calibrated the same way (both "
                          f"to level {fair['level']:.4f} on the same null studies, {level_words}): "
                          f"{c['size']} {size_name}, critical values "
                          f"{c['critical']:.3f} in / {c['critical_other']:.3f} against the effect's direction, "
                          f"power {c['power']:.3f} ± {se_p:.3f}, {t1_text} (sequential: "
                          f"{seq_type1:.3f} ± {seq_se:.3f}); {ref}{worse}")}
