"""The fair fixed comparator of a sequential design: the fixed plan's test with
its critical values calibrated on the same calibration null studies, and to the same level, as the
sequential bounds, so that a saving is stated at equal type-I error.  Used by ``plan --looks auto``
(:mod:`cogtestbed.planning.kinds.sequential.seqauto`) and ``plan --looks K``
(:mod:`cogtestbed.planning.kinds.sequential.seqplan`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.studies.study_kinds import PlannedStudy, PowerStudy

#: Smallest size at which the fair fixed comparator is evaluated, as a multiple of the fixed plan's size.
FIXED_MIN_FACTOR = 0.5


# ----------------------------------------------------------------------------- the fair fixed comparator
def fair_fixed(eff_z: np.ndarray, cal_z: np.ndarray, nul_z: np.ndarray, sizes: Sequence[int], dirn: float,
               level: float, target: float) -> dict[str, Any]:
    """The fixed test at every size with its critical values in and against the effect's direction
    each calibrated on the calibration null studies to ``level``/2 (``level`` for an undirected
    statistic): power on the effect studies, type-I error on the search null studies, and the
    smallest size reaching ``target`` power (None with a reason when none does)."""
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift

    side = level / 2 if dirn else level
    z_nom = float(stats.norm.isf(level / 2))
    rows = []
    for i, n in enumerate(sizes):
        toward_cal = toward(cal_z[:, i], dirn)
        crit = z_nom + calibrate_shift(toward_cal - z_nom, side)
        other = z_nom + calibrate_shift(-toward_cal - z_nom, side) if dirn else crit
        power = float(np.mean(toward(eff_z[:, i], dirn) >= crit))
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


def toward(z: np.ndarray, dirn: float) -> np.ndarray:
    """Z toward the effect's direction ``dirn`` (±1; ``|Z|`` when undirected, 0), a non-finite Z as 0."""
    z = np.where(np.isfinite(z), z, 0.0)
    return np.abs(z) if dirn == 0 else z * dirn


def fixed_reject_rate(z: np.ndarray, dirn: float, crit: float, z_nom: float) -> float:
    """Rejection rate of the fixed test: ``Z·d ≥ crit`` or ``Z·d ≤ −z_nom`` (``|Z| ≥ crit`` undirected;
    ``z_nom``: the critical value against the effect's direction)."""
    t = toward(z, dirn)
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


# ----------------------------------------------------------------------------- honest figures
#: Confidence of the one-sided upper bound on a fresh type-I error (Clopper–Pearson; the project's choice).
UPPER_CONFIDENCE = 0.95
#: Bootstrap replicates of the smoothed comparator's size and of the saving (percentile intervals).
BOOT = 400


def upper_bound(hits: int, n: int, confidence: float = UPPER_CONFIDENCE) -> float:
    """One-sided Clopper–Pearson upper confidence bound of a rate from ``hits`` of ``n`` (1 when n = 0):
    :func:`~cogtestbed.planning.kinds.power.sizetest.upper_bound` at error 1 − ``confidence``."""
    from cogtestbed.planning.kinds.power.sizetest import upper_bound as cp_upper

    return cp_upper(hits, n, 1 - confidence)


def type1_check(hits: int, n: int, alpha: float) -> dict[str, Any]:
    """A fresh type-I estimate with its upper bound and the acceptance "upper bound ≤ α" (by how much not)."""
    rate = hits / n if n else float("nan")
    ub = upper_bound(hits, n)
    return {"rate": rate, "hits": int(hits), "sims": int(n), "upper": ub, "confidence": UPPER_CONFIDENCE,
            "alpha": alpha, "meets": bool(ub <= alpha), "excess": max(0.0, ub - alpha)}


def type1_words(check: Mapping[str, Any]) -> str:
    """``type-I 0.040 (40/1,000), one-sided 95% upper bound 0.052: > alpha .05 by 0.002`` in one phrase."""
    verdict = (f"<= alpha {check['alpha']:g}" if check["meets"] else
               f"NOT <= alpha {check['alpha']:g} (by {check['excess']:.3f})")
    return (f"type-I {check['rate']:.4f} ({check['hits']}/{check['sims']:,}), one-sided "
            f"{100 * check['confidence']:.0f}% upper bound {check['upper']:.4f}: {verdict}")


def critical_at(null_z: np.ndarray, dirn: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per size (columns of ``null_z``), the fixed test's critical values in and against the effect's
    direction, each calibrated on the null paths to reject at ``level``/2 (``level`` undirected)."""
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift

    side = level / 2 if dirn else level
    z_nom = float(stats.norm.isf(side))
    crit, other = [], []
    for i in range(null_z.shape[1]):
        along = toward(null_z[:, i], dirn)
        crit.append(z_nom + calibrate_shift(along - z_nom, side))
        other.append(z_nom + calibrate_shift(-along - z_nom, side) if dirn else crit[-1])
    return np.asarray(crit), np.asarray(other)


def _probit_fit(sizes: np.ndarray, hits: np.ndarray, reps: int) -> tuple[float, float]:
    """Binomial MLE of power(n) = Φ(a + b·√n) (b > 0 in practice: the normal-theory power curve of a
    test whose noncentrality grows with √n; Cohen 1988, ch. 2) from ``hits`` of ``reps`` per size."""
    from scipy.optimize import minimize
    from scipy.special import log_ndtr  # what stats.norm.logcdf/logsf compute, without their per-call overhead

    x = np.sqrt(sizes.astype(float))
    p = np.clip(hits / reps, 0.5 / reps, 1 - 0.5 / reps)
    b0, a0 = np.polyfit(x, stats.norm.ppf(p), 1)

    misses = reps - hits  # the same terms as written out per call, computed once (~1,200 fits a plan)

    def nll(theta: np.ndarray) -> float:
        eta = theta[0] + theta[1] * x
        return -float((hits * log_ndtr(eta) + misses * log_ndtr(-eta)).sum())

    fit = minimize(nll, np.array([a0, b0]), method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-9})
    return float(fit.x[0]), float(fit.x[1])


def _size_at(a: float, b: float, target: float) -> float:
    if b <= 0:
        return float("inf")
    return float(((stats.norm.ppf(target) - a) / b) ** 2)


def smoothed_comparator(eff_z: np.ndarray, null_z: np.ndarray, sizes: Sequence[int], dirn: float, level: float,
                        target: float, seed: int = 0, boot: int = BOOT, workers: int = 1) -> dict[str, Any]:
    """The fixed comparator's size as an estimate: the fixed test at every size
    ``sizes`` (columns of the paths) with its critical values calibrated on ``null_z`` to ``level``
    (the sequential design's measured type-I error), its power on the effect paths ``eff_z``
    smoothed by a monotone probit curve in √n (:func:`_probit_fit`), and the size where the curve
    reaches ``target``, with a percentile bootstrap interval over the effect studies (``boot``
    replicates, their probit fits in a fork pool of ``workers``; the null paths' calibration is held fixed)."""
    sizes_a = np.asarray(sizes, int)
    crit, other = critical_at(null_z, dirn, level)
    hit = np.stack([toward(eff_z[:, i], dirn) >= crit[i] for i in range(sizes_a.size)], axis=1)
    reps = hit.shape[0]
    a, b = _probit_fit(sizes_a, hit.sum(axis=0), reps)
    n_star = _size_at(a, b, target)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 47]))
    weights = rng.multinomial(reps, np.full(reps, 1 / reps), size=boot)
    boot_n = curve_sizes(sizes_a, weights @ hit, reps, target, workers)
    lo, hi = np.percentile(boot_n, [2.5, 97.5])
    return {"level": level, "size": n_star, "interval": [float(lo), float(hi)], "probit": [a, b],
            "sizes": [int(n) for n in sizes_a], "power": [float(v) for v in hit.mean(axis=0)],
            "critical": [float(c) for c in crit], "critical_other": [float(c) for c in other],
            "effect_sims": int(reps), "null_sims": int(null_z.shape[0]), "bootstrap": boot, "boot_sizes": boot_n,
            "method": ("the fixed test with its critical values calibrated on the null studies to the sequential "
                       "design's measured type-I error; its power at every size on the same effect studies smoothed "
                       "by a probit curve in sqrt(n), the size where it reaches the target power, 95% percentile "
                       f"bootstrap interval over the effect studies ({boot} replicates)")}


def saving_estimate(smooth: Mapping[str, Any], unit_cost: float, look_costs: Sequence[float], stop_look: np.ndarray,
                    seed: int = 0) -> dict[str, Any]:
    """The expected saving as an estimate with its interval: 1 − E[cost of the sequential design under
    the effect] / cost of the smoothed comparator's size (costs linear in units at the plan's trial
    count: ``unit_cost`` per unit), each side bootstrapped over its own studies (independent sets),
    95% percentile interval."""
    looks = len(look_costs)
    stop = np.asarray(stop_look, int)
    costs = np.asarray(look_costs, float)
    exp_cost = float(np.mean(costs[stop]))
    fixed_cost = smooth["size"] * unit_cost
    rng = np.random.default_rng(np.random.SeedSequence([seed, 4747]))
    boot_n = np.asarray(smooth["boot_sizes"], float)
    counts = rng.multinomial(stop.size, np.bincount(stop, minlength=looks) / stop.size, size=boot_n.size)
    boot_exp = counts @ costs / stop.size
    pct = 100 * (1 - boot_exp / (boot_n * unit_cost))
    lo, hi = np.percentile(pct, [2.5, 97.5])
    return {"percent": 100 * (1 - exp_cost / fixed_cost), "interval": [float(lo), float(hi)],
            "expected_cost_key": exp_cost, "fixed_cost_key": fixed_cost, "fixed_size": smooth["size"],
            "fixed_size_interval": smooth["interval"], "level": smooth["level"]}


def _hits(eff_z: np.ndarray, crit: np.ndarray, dirn: float) -> np.ndarray:
    """Per size, the effect paths ``eff_z`` on which the fixed test (critical values ``crit`` per size) rejects."""
    return np.asarray((toward(eff_z, dirn) >= crit[None, :]).sum(axis=0))


def curve_sizes(sizes: np.ndarray, hits: np.ndarray, reps: int, target: float, workers: int = 1) -> np.ndarray:
    """Per row of ``hits`` (rejections of ``reps`` studies at each size), the size where its probit power curve
    (:func:`_probit_fit`) reaches ``target``; the rows' fits split over a fork pool of ``workers`` (a plan's
    bootstraps fit about 1,200 curves)."""
    from cogtestbed.studies.driver import map_split

    return np.asarray(map_split(_curve_rows, np.asarray(hits), workers, sizes, reps, target), float)


def _curve_rows(hits: np.ndarray, sizes: np.ndarray, reps: int, target: float) -> np.ndarray:
    return np.array([_size_at(*_probit_fit(sizes, h, reps), target) for h in hits])


def joint_saving(paths: Mapping[str, np.ndarray], fresh_rejected: np.ndarray, stop_look: np.ndarray,
                 look_costs: Sequence[float], unit_cost: float, sizes: Sequence[int], dirn: float, alpha: float,
                 target: float, seed: int = 0, boot: int = BOOT, workers: int = 1) -> dict[str, Any]:
    """The saving's intervals from a joint resampling of every set of studies: in
    each of ``boot`` replicates the fresh null studies (the sequential design's measured level), the
    comparator's null studies (``paths["null"]``: its critical values at that level), the effect
    studies at the fixed sizes (``paths["effect"]``: the power curve and the comparator's size) and
    the fresh effect studies (``stop_look``: the sequential design's expected cost) are resampled
    together and every figure recomputed; 95 % percentile intervals.  Two savings: against the fixed
    test at the sequential design's measured level (``at_level``) and against the fixed plan a
    researcher would run, the fixed test at nominal ``alpha`` (``nominal``: its critical value
    z_{1−α/2}, its size from the same probit curve); the replicates' probit fits in a fork pool of ``workers``."""
    eff, null = np.asarray(paths["effect"], float), np.asarray(paths["null"], float)
    rejected, stop = np.asarray(fresh_rejected, bool), np.asarray(stop_look, int)
    costs, sizes_a = np.asarray(look_costs, float), np.asarray(sizes, int)
    z_nom = float(stats.norm.isf(alpha / 2 if dirn else alpha))
    nominal = np.full(sizes_a.size, z_nom)

    rng = np.random.default_rng(np.random.SeedSequence([seed, 6868]))
    draws = [None] + [(rng.integers(len(eff), size=len(eff)), rng.integers(len(null), size=len(null)),
                       rng.integers(rejected.size, size=rejected.size), rng.integers(stop.size, size=stop.size))
                      for _ in range(boot)]
    from cogtestbed.studies.driver import map_split

    sets = map_split(_joint_counts, draws, workers, eff, null, rejected, stop, costs, nominal, dirn)
    exp_cost = np.array([c for c, _, _ in sets])
    n_fit = curve_sizes(sizes_a, np.array([h for _, a, b in sets for h in (a, b)]), len(eff), target, workers)
    n_level, n_nominal = n_fit[0::2], n_fit[1::2]
    with np.errstate(divide="ignore", invalid="ignore"):
        figs = np.column_stack([100 * (1 - exp_cost / (n_level * unit_cost)),
                                100 * (1 - exp_cost / (n_nominal * unit_cost)), n_nominal])
    (at_level, at_nominal, n_nominal0), arr = figs[0], figs[1:]
    ok = np.isfinite(arr).all(axis=1)
    lo, hi = np.percentile(arr[ok], [2.5, 97.5], axis=0) if ok.any() else (np.full(3, np.nan),) * 2
    method = (f"joint percentile bootstrap ({boot} replicates): fresh null studies (the sequential level), the "
              "comparator's null studies (its critical values), the effect studies (power curve, comparator size) "
              "and the fresh effect studies (expected cost) resampled together, every figure recomputed")
    return {"at_level": {"percent": float(at_level), "interval": [float(lo[0]), float(hi[0])]},
            "nominal": {"percent": float(at_nominal), "interval": [float(lo[1]), float(hi[1])], "alpha": alpha,
                        "critical": z_nom, "fixed_size": float(n_nominal0),
                        "fixed_size_interval": [float(lo[2]), float(hi[2])]},
            "replicates": int(ok.sum()), "method": method}


def _joint_counts(draws: Sequence[Any], eff: np.ndarray, null: np.ndarray, rejected: np.ndarray, stop: np.ndarray,
                  costs: np.ndarray, nominal: np.ndarray, dirn: float) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Per replicate of :func:`joint_saving` (its resampling indices; None: the studies as drawn): the sequential
    design's expected cost and the fixed test's rejections per size at the measured level and at nominal alpha."""
    out = []
    for d in draws:
        e, n0, rej, st = (eff, null, rejected, stop) if d is None else (eff[d[0]], null[d[1]], rejected[d[2]],
                                                                        stop[d[3]])
        crit, _ = critical_at(n0, dirn, max(float(rej.mean()), 1e-4))
        out.append((float(costs[st].mean()), _hits(e, crit, dirn), _hits(e, nominal, dirn)))
    return out


def assumptions(spec: PlannedStudy, trials: int | None, runs: int,
                fit: str = "the fixed plan's per-subject MLEs") -> list[str]:
    """The data-generating model every simulated calibration of this plan rests on:
    the bounds' level holds for studies drawn from it, not in general (``fit``: the per-subject estimate the look
    statistic's t-test is on)."""
    out = []
    if isinstance(spec, PowerStudy):
        lapse = spec.lapse
        out.append(f"subjects follow the {spec.models[0]} model: {spec.true_distribution}")
        out.append("lapses: " + (f"invalid {lapse.invalid:g}, random {lapse.random:g} per step" if lapse is not None
                                 and (lapse.invalid or lapse.random) else "none (every simulated answer follows the "
                                 "model)"))
        out.append(f"each subject plays {trials} trials x {runs} run(s); the look statistic is the t-test on {fit} "
                   "of the subjects finished at the look")
    else:
        out.append(f"the simulated study as specified ({type(spec).__name__}): the agents and parameters named, "
                   "their statistic as the fixed plan computes it")
    out.append("the null: the same with the effect removed; type-I error is estimated on studies drawn from this "
               "model, so it holds for data like these, not in general (see the robustness check)")
    return out


# ----------------------------------------------------------------------------- the MLE test at equal power
#: Parametric bootstrap replicates of the MLE comparator's size (binomial hits at each searched size).
MLE_COMPARATOR_BOOT = 400


def mle_power_curve(evaluated: Sequence[Any], chosen: Any, size_name: str) -> tuple[np.ndarray, np.ndarray,
                                                                                     np.ndarray] | None:
    """(sizes, hits, studies) of the fixed plan's own test (the plain test on the per-subject MLE) at
    every size it simulated with the chosen design's other settings (its trials, runs and fields); None
    where fewer than two sizes were simulated."""
    others = {k: v for k, v in chosen.as_dict().items() if k != size_name}
    rows = sorted((int(getattr(e.point, size_name)), int(e.estimate.hits), int(e.estimate.sims)) for e in evaluated
                  if {k: v for k, v in e.point.as_dict().items() if k != size_name} == others and e.estimate.sims)
    if len({r[0] for r in rows}) < 2:
        return None
    sizes, hits, sims = (np.array(c, float) for c in zip(*rows, strict=True))
    return sizes, hits, sims


def mle_equal_power(curve: tuple[np.ndarray, np.ndarray, np.ndarray], target: float, stop_look: np.ndarray,
                    look_costs: Sequence[float], unit_cost: float, seed: int = 0,
                    boot: int = MLE_COMPARATOR_BOOT) -> dict[str, Any] | None:
    """The saving against the fixed design a researcher would run: the plan's own test on the per-subject
    MLE, sized for the same ``target`` power as the sequential design (its size where a probit curve in √n,
    :func:`~cogtestbed.planning.plan.fit_probit`, fitted to the fixed plan's simulated sizes
    ``curve``, reaches ``target``), against the sequential design's expected cost on its fresh effect
    studies (``stop_look``, ``look_costs``); a 95 % percentile interval from ``boot`` replicates that
    redraw each size's hits (binomial at its rate) and resample the fresh effect studies together.  None
    where the curve does not rise."""
    from cogtestbed.planning.plan import fit_probit

    sizes, hits, sims = curve
    costs, stop = np.asarray(look_costs, float), np.asarray(stop_look, int)

    def size_of(h: np.ndarray) -> float:
        a, b = fit_probit(np.sqrt(sizes), h, sims)
        return _size_at(a, b, target)

    n0 = size_of(hits)
    if not math.isfinite(n0):
        return None
    rng = np.random.default_rng(np.random.SeedSequence([seed, 9595]))
    reps = []
    for _ in range(boot):
        n_b = size_of(rng.binomial(sims.astype(int), hits / sims).astype(float))
        cost_b = float(costs[stop[rng.integers(stop.size, size=stop.size)]].mean())
        reps.append((100 * (1 - cost_b / (n_b * unit_cost)), n_b))
    arr = np.array([r for r in reps if all(math.isfinite(v) for v in r)])
    lo, hi = np.percentile(arr, [2.5, 97.5], axis=0) if arr.size else (np.full(2, np.nan),) * 2
    exp_cost = float(costs[stop].mean())
    return {"percent": 100 * (1 - exp_cost / (n0 * unit_cost)), "interval": [float(lo[0]), float(hi[0])],
            "fixed_size": n0, "fixed_size_interval": [float(lo[1]), float(hi[1])], "power": target,
            "sizes": [int(s) for s in sizes], "studies": [int(s) for s in sims], "replicates": int(len(arr)),
            "comparator": ("the fixed plan's own test on the per-subject MLE at nominal alpha, sized for the same "
                           "power (a probit curve in sqrt(n) through its simulated sizes)")}
