"""The ``monitor`` plan kind: an anytime-valid monitor of a model parameter's effect, planned and
priced beside the fixed design (and the group-sequential one, with ``looks``) at equal power.

The statistic is the one the fixed plan tests: each subject's MLE of the effect on the test's scale, less
its value before the effect (one LLM), or a pair's difference, the second group's subject less the first's
(two LLMs: subjects enter in pairs, one per group); for a metric difference between two settings (two LLMs),
a pair of units' difference of the metric's per-unit values (:func:`metric_pool`).  The test
(:func:`choose_test`, fixed from the plan's simulation before any data) is a betting e-process of
:mod:`~cogtestbed.planning.kinds.monitor.eprocess`: for one LLM the mean test on the range the parameter's declared
bounds give the contrast (:func:`statistic_bounds`; a log-scale parameter bounded at 0 has none, so it is
refused) against a null interval covering the MLE's simulated bias; for two LLMs the test of symmetry about 0,
exact when the two are exchangeable and needing no bounds.  It is looked at after every unit; it stops when
``K_t ≥ 1/α`` (efficacy) or at the cap (futility), the smallest size at which it reaches the target power.

Validation (:func:`operate`, :func:`designs_on_pools`): per hypothesis pools of simulated units at the fixed
plan's design (:mod:`~cogtestbed.planning.kinds.monitor.monitor_pools`), split into ``BATCHES`` disjoint sub-pools;
each simulated study is a random ordering of one sub-pool's units, so each is exactly a study of i.i.d. units
(a random permutation of i.i.d. draws is i.i.d.) while the fits are reused across studies.  The studies of
one sub-pool share units, so the Monte-Carlo SEs are the larger of the binomial one and the spread between
sub-pools.  The test, its cap and the group-sequential design (:mod:`~cogtestbed.planning.kinds.monitor.monitor_gs`)
are chosen on *choosing* pools; every printed figure is measured on *measuring* pools of other seed streams.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds import PlanContext, Planned
from cogtestbed.planning.kinds.monitor.monitor_checks import check_monitor, statistic_bounds
from cogtestbed.planning.kinds.monitor.monitor_file import sealed
from cogtestbed.planning.kinds.monitor.monitor_gs import GS_LOOKS
from cogtestbed.planning.kinds.monitor.monitor_pools import (
    BATCHES,
    POOL_FACTOR,
    Pools,
    choose_size,
    draw_pools,
    hypothesis_pool,
    metric_pool,
    monitor_streams,
    null_studies,
    pool_seeds,
    rate_and_se,
    studies,
    subject_pool,
    unit_array,
    upper_bound,
)

#: The largest size a monitor is simulated to, as a multiple of the fixed design's.
MAX_FACTOR = 3.0


def operate(eff: np.ndarray, eff_which: np.ndarray, nul: np.ndarray, nul_which: np.ndarray, lo: float, hi: float,
            level: float, power: float, planned: float | None = None, halfwidth: float = 0.0,
            scale: float | None = None, cap: int | None = None, futility: float | None = None) -> dict[str, Any]:
    """The monitor's operating characteristics on simulated studies (rows; every subject a look): the cap
    (given, else the smallest size with power ≥ ``power`` under the effect, else the largest simulated), power,
    the null's rejection rate at every look up to the cap and beyond (one-sided 95 % upper bound), expected
    sizes.  The test: the mean's (null 0 ± ``halfwidth``) on ``[lo, hi]``, or with ``scale`` symmetry about 0
    (:func:`~cogtestbed.planning.kinds.monitor.eprocess.tested_scale`), with the ``planned`` bet.  ``futility``: an
    e-value at or below which the monitor stops without rejecting (Wald's lower boundary; stopping early
    only removes rejections, so the type-I guarantee stands; the any-look null rate ignores it)."""
    t_eff, f_eff = _crossings(eff, lo, hi, level, planned, halfwidth, scale, futility)
    t_nul, f_nul = _crossings(nul, lo, hi, level, planned, halfwidth, scale, futility)
    r_eff, r_nul = _rejecting(t_eff, f_eff), _rejecting(t_nul, f_nul)
    length = eff.shape[1]
    by_size = np.array([((r_eff > 0) & (r_eff <= n)).mean() for n in range(1, length + 1)])
    reached = np.flatnonzero(by_size >= power)
    if cap is None:
        cap = int(reached[0] + 1) if reached.size else length
    cap = min(int(cap), length)
    stop_eff, stop_nul = _stops(r_eff, f_eff, cap), _stops(r_nul, f_nul, cap)
    pw, pw_se = rate_and_se((r_eff > 0) & (r_eff <= cap), eff_which)
    rej, rej_se = rate_and_se((r_nul > 0) & (r_nul <= cap), nul_which)
    anytime, any_se = rate_and_se(t_nul > 0, nul_which)
    e_n, e_se = rate_and_se(stop_eff, eff_which)
    n_n, n_se = rate_and_se(stop_nul, nul_which)
    return {"cap": cap, "reached": bool(reached.size), "longest": length, "power": pw, "power_se": pw_se,
            "null_rejection": rej, "null_rejection_se": rej_se, "null_upper": upper_bound(rej, rej_se, nul.shape[0]),
            "null_rejection_any": anytime, "null_rejection_any_se": any_se,
            "null_upper_any": upper_bound(anytime, any_se, nul.shape[0]),
            "expected_effect": e_n, "expected_effect_se": e_se, "expected_null": n_n, "expected_null_se": n_se,
            "effect_studies": int(eff.shape[0]), "null_studies": int(nul.shape[0]),
            "paths": {"rejected": (r_eff > 0) & (r_eff <= cap), "stop": stop_eff}}


def _crossings(x: np.ndarray, lo: float, hi: float, level: float, planned: float | None, halfwidth: float,
               scale: float | None, futility: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Per study (row) the 1-based look at which ``K_t ≥ 1/level`` first, and at which ``K_t ≤ futility``
    first (0: never)."""
    from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, log_capital, tested_scale

    y, m, width = tested_scale(x, lo, hi, halfwidth, scale)
    log_k = log_capital(y, m, planned=planned, halfwidth=width)
    if futility is None:
        return first_crossing(log_k, level), np.zeros(x.shape[0], int)
    low = log_k <= math.log(futility)
    return first_crossing(log_k, level), np.where(low.any(axis=-1), low.argmax(axis=-1) + 1, 0)


def _rejecting(t: np.ndarray, f: np.ndarray) -> np.ndarray:
    """The look at which a study rejects: its efficacy crossing where no futility stop came first (0: none)."""
    return np.where((t > 0) & ((f == 0) | (t < f)), t, 0)


def _stops(r: np.ndarray, f: np.ndarray, cap: int) -> np.ndarray:
    """Where each study stops: at its rejection, its futility stop or the cap, whichever comes first."""
    first = np.where(r > 0, r, np.where(f > 0, f, cap))
    return np.minimum(first, cap)


#: Futility e-values the plan chooses from on its choosing pools (None: stop at the cap only).
FUTILITY_CANDIDATES: tuple[float | None, ...] = (None, 0.05, 0.1, 0.2, 0.3, 0.5)
#: The choosing pools' power must clear the target by this much: the rule with the smallest expected size of
#: several is the one whose power the choosing pools read highest (a futility boundary's power levels off).
POWER_MARGIN = 0.03


def choose_futility(c_eff: np.ndarray, c_nul: np.ndarray, lo: float, hi: float, level: float, power: float,
                    rule: tuple[float | None, float, float | None]) -> tuple[float | None, dict[str, Any]]:
    """The futility boundary (:data:`FUTILITY_CANDIDATES`) and cap with the smallest expected size under the
    effect among those reaching ``power`` + :data:`POWER_MARGIN` on the choosing studies (``c_eff``, ``c_nul``;
    none reaching it: no boundary)."""
    zeros, need = np.zeros(c_eff.shape[0], int), min(power + POWER_MARGIN, 0.99)
    bet, width, scale = rule
    tried = [(fut, operate(c_eff, zeros, c_nul, np.zeros(c_nul.shape[0], int), lo, hi, level, need, bet, width,
                           scale, futility=fut)) for fut in FUTILITY_CANDIDATES]
    reached = [t for t in tried if t[1]["reached"]]
    return min(reached, key=lambda t: t[1]["expected_effect"]) if reached else tried[0]


def monitor_section(spec: Any, chosen: Mapping[str, Any], power: float, sims: int, seed: int,
                    say: Any = None, group_sequential: bool = True) -> dict[str, Any]:
    """The ``monitor`` section of a plan: bounds, the rule, its operating characteristics at the fixed
    design's trials, expected subjects and dollars beside the fixed design's, the saving with its MC SE, and
    (``group_sequential``) the group-sequential design of :mod:`~cogtestbed.planning.kinds.monitor.monitor_gs`.
    ``spec``: the fixed plan's study, a model effect or a metric difference between two settings
    (:func:`~cogtestbed.planning.kinds.monitor.monitor_pools.draw_pools`).  The rule is chosen on the choosing pools,
    every printed figure measured on fresh measuring pools (:mod:`~cogtestbed.planning.kinds.monitor.monitor_pools`)."""
    from cogtestbed.planning.kinds.monitor.monitor_composite import (
        GRID_POINTS,
        SUBJECTS_PER_POINT,
        composite_null,
        has_region,
    )

    metric = getattr(spec, "metric", None) is not None
    n_plan = n_fix = int(chosen["runs"] if metric else chosen["subjects"])
    trials, runs = chosen.get("trials"), 1 if metric else int(chosen.get("runs") or 1)
    length = max(4, math.ceil(MAX_FACTOR * n_fix))
    composite = None
    if not metric and spec.groups == 1 and has_region(spec):
        if say is not None:
            say("monitor: the null mean of the per-subject statistic over the declared nuisance region "
                f"({GRID_POINTS[0] * GRID_POINTS[1]} points, {SUBJECTS_PER_POINT} simulated subjects each)")
        composite = composite_null(spec, trials, runs, seed)
        valid = valid_fixed_guess(spec, trials, runs, seed, composite, power)
        length = max(length, math.ceil(MAX_FACTOR * valid))
        n_fix = max(n_fix, math.ceil(valid))  # the fixed and group-sequential rows: the tests valid for this null
    pool_n = BATCHES * POOL_FACTOR * length
    groups = 2 if metric else spec.groups
    if say is not None:
        say(f"monitor: {2 * (pool_n + choose_size(pool_n)) * groups} simulated {'runs' if metric else 'subjects'} "
            f"at the fixed design's trials (choosing and measuring pools), {sims} studies per hypothesis looked at "
            f"after every unit up to {length}")
    choose = draw_pools(spec, trials, runs, choose_size(pool_n), seed, CHOOSE_ROLE)
    measure = draw_pools(spec, trials, runs, pool_n, seed, REPORT_ROLE)
    out = designs_on_pools(spec, choose, measure, n_fix, length, power, sims, seed, group_sequential, composite)
    out.update({"fixed_subjects": n_plan, "saving_fixed_plan": 1.0 - out["expected_effect"] / n_plan,
                "saving_fixed_plan_se": out["expected_effect_se"] / n_plan})
    per_unit = float(chosen["dollars"]) / n_plan if chosen.get("dollars") is not None else None
    out.update({"trials": trials, "runs": runs, "dollars_per_unit": per_unit,
                **{f"dollars_{k}": None if per_unit is None else per_unit * out[f"expected_{k}"]
                   for k in ("effect", "null")},
                "dollars_cap": None if per_unit is None else per_unit * out["cap"]})
    return out


#: Units of the pilot pool (under the effect, the pilot seed stream) that sizes a composite-null monitor.
PILOT_UNITS = 400
#: The longest study a composite-null monitor is simulated to, in units.
LONGEST_COMPOSITE = 400


def valid_fixed_guess(spec: Any, trials: int | None, runs: int, seed: int, composite: Mapping[str, Any],
                      power: float) -> float:
    """The size of the fixed test valid for the composite null (the one-sided t-test of the mean against the
    null interval's end in the effect's direction) at ``power``, by the normal approximation on a pilot pool
    under the effect (:data:`PILOT_UNITS`, the pilot seed stream): the monitor is simulated to
    :data:`MAX_FACTOR` times it (the fixed plan's own size is the t-test against 0, which that null does not
    allow), at most :data:`LONGEST_COMPOSITE` units."""
    from scipy import stats

    from cogtestbed.planning.kinds.sequential.seqplan import direction

    pilot = draw_pools(spec, trials, runs, PILOT_UNITS, seed, "pilot", null=False).effect
    pilot = pilot[np.isfinite(pilot)]
    dirn = direction(spec) or 1.0
    end = float(composite["interval"][1] if dirn > 0 else composite["interval"][0])
    gap = dirn * (float(pilot.mean()) - end) if pilot.size > 1 else 0.0
    if not gap > 0:
        return LONGEST_COMPOSITE / MAX_FACTOR
    z = float(stats.norm.isf(spec.level) + stats.norm.ppf(power))
    return min(LONGEST_COMPOSITE / MAX_FACTOR, (z * float(pilot.std(ddof=1)) / gap) ** 2 + 2)


def designs_on_pools(spec: Any, choose: Pools, measure: Pools, n_fix: int, length: int, power: float, sims: int,
                     seed: int, group_sequential: bool = True,
                     composite: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The monitor (and the group-sequential design) at ``n_fix`` units of the fixed design: the test and its
    cap chosen on ``choose``'s studies, every operating characteristic measured on ``measure``'s (pools of
    disjoint seed streams: refused otherwise).  ``composite``: a one-LLM mean test's null interval over the
    declared nuisance region (:func:`~cogtestbed.planning.kinds.monitor.monitor_composite.composite_null`)
    instead of the bias simulated at the plan's population."""
    from cogtestbed.planning.kinds.monitor.monitor_composite import center_width
    from cogtestbed.planning.kinds.monitor.monitor_gs import fixed_measured
    from cogtestbed.planning.kinds.monitor.monitor_gs import group_sequential as gs_design
    from cogtestbed.planning.kinds.sequential.seqplan import direction

    if choose.seed_set() & measure.seed_set() or choose.role == measure.role:
        raise InputError("the monitor's choosing and measuring pools must come from disjoint seed streams")
    metric = getattr(spec, "metric", None) is not None
    groups = 2 if metric else spec.groups
    unit = "pair of runs" if metric else "pair" if groups == 2 else "subject"
    if metric:
        lo, hi = -math.inf, math.inf
        label = f"per-unit {spec.metric} of {spec.agent} {_setting(spec.compare[1])} less {_setting(spec.compare[0])}"
    else:
        lo, hi, label = _model_statistic(spec)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7_474]))
    c_eff, _ = studies(choose.effect, sims, length, rng, batches=1)
    c_nul, _ = null_studies(choose.null, sims, length, rng, batches=1, mirror=groups == 2)
    eff, eff_which = studies(measure.effect, sims, length, rng)
    nul, nul_which = null_studies(measure.null, sims, length, rng, mirror=groups == 2)
    c = 0.0 if composite is None else center_width(composite["interval"])[0]  # the null interval's center
    test = choose_test(choose.effect - c, choose.null - c, lo - c, hi - c, groups,
                       None if composite is None else composite)
    rule = (test["planned_bet"], test["halfwidth"], test["symmetry_scale"])
    futility, picked = choose_futility(c_eff - c, c_nul - c, lo - c, hi - c, spec.level, power, rule)
    ops = {**operate(eff - c, eff_which, nul - c, nul_which, lo - c, hi - c, spec.level, power, *rule,
                     cap=picked["cap"], futility=futility), "reached": picked["reached"], "futility": futility,
           "null_center": c}
    paths = ops.pop("paths")
    both = np.concatenate([choose.effect, choose.null, measure.effect, measure.null])
    finite = both[np.isfinite(both)]
    outside = int(((finite < lo - 1e-9) | (finite > hi + 1e-9)).sum())
    bounded = math.isfinite(lo)
    dirn = direction(spec)
    fixed_test = _fixed_test(spec, metric)
    out = {"method": test["method"], "statistic": label, "unit": unit, "fixed_test": fixed_test,
           "bounds": [lo, hi] if bounded else None, "null": 0.0, **test, "level": spec.level, "target_power": power,
           "property": test["property"] + (f"; {outside} of {finite.size} simulated estimates outside "
                                           f"[{lo:g}, {hi:g}]" if bounded else ""),
           "outside": outside, "pool_mean_null": float(np.nanmean(measure.null)),
           "missing": float(np.mean(~np.isfinite(both))), **ops, "fixed_subjects": n_fix,
           "pools": {p.role: {"seeds": list(p.seeds), "units": int(p.effect.size)} for p in (choose, measure)},
           "fixed_measured": fixed_measured(eff, nul, eff_which, nul_which, min(n_fix, length), spec.level, dirn),
           "saving_fixed_plan": 1.0 - ops["expected_effect"] / n_fix,
           "saving_fixed_plan_se": ops["expected_effect_se"] / n_fix}
    end = None if composite is None else float(composite["interval"][1 if dirn >= 0 else 0])
    out.update(_equal_power(measure, paths, eff_which, ops, length, fixed_test, spec.level, dirn, seed, end))
    out["recommended"] = recommended(out)
    out["protocol"] = _report(seed, measure, out)
    if end is not None:  # the fixed and group-sequential designs valid for the composite null
        _valid_designs(out, (choose, measure), (c_eff, eff, eff_which), end, dirn, (min(n_fix, length), n_fix),
                       spec.level, power, group_sequential)
    elif group_sequential and n_fix >= 2 * GS_LOOKS:
        out["group_sequential"] = gs_design(c_eff, c_nul, eff, nul, eff_which, nul_which, n_fix, spec.level, power,
                                            dirn)
    for design in (out, out.get("group_sequential") or {}):  # shown, never offered, above the level
        if design:
            design["offered"] = bool(design["null_upper"] <= spec.level)
    return out


def at_null_end(effect: tuple[np.ndarray, np.ndarray, np.ndarray], means: tuple[float, float], end: float,
                dirn: float, n: int, level: float) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The fixed test valid for a composite null (the one-sided t-test of "mean ≤ ``end``", the interval's end in
    the effect's direction ``dirn``) at ``n`` units, measured on the measuring studies, and the arguments of
    :func:`~cogtestbed.planning.kinds.monitor.monitor_gs.group_sequential` (less ``power`` and ``dirn``, then 1)
    on the same test, one-sided at ``level``.  ``effect``: the choosing studies, the measuring studies and their
    sub-pools; ``means``: the choosing and measuring pools' means under the effect.  The null studies of both
    designs are the effect studies re-centered on ``end`` (the location-shift null at the interval's end, the
    worst case of the region for a one-sided test): the choosing ones calibrate, the measuring ones report."""
    from cogtestbed.planning.kinds.monitor.monitor_gs import fixed_measured

    c_eff, eff, eff_which = effect
    c_mean, m_mean = means
    c_nul, nul = dirn * (c_eff - c_mean), dirn * (eff - m_mean)
    c_eff, eff = dirn * (c_eff - end), dirn * (eff - end)
    # one-sided at level: the two-sided test at 2·level in the effect's direction (now +1), on the type-I side too
    fixed = fixed_measured(eff, nul, eff_which, eff_which, n, 2 * level, 1.0, null_dirn=1.0)
    fixed["test"], fixed["null_studies"] = f"one-sided t-test against {end:+.4f}", "effect studies re-centered there"
    return fixed, (c_eff, c_nul, eff, nul, eff_which, eff_which, n, 2 * level)


def _valid_designs(out: dict[str, Any], pools: tuple[Pools, Pools], effect: tuple[np.ndarray, np.ndarray, np.ndarray],
                   end: float, dirn: float, sizes: tuple[int, int], level: float, power: float,
                   group_sequential: bool) -> None:
    """Into ``out``: the fixed design (``fixed_measured``) and the group-sequential one valid for a composite null
    whose interval ends at ``end`` on the effect's side (:func:`at_null_end`; ``sizes``: the fixed test's size
    and the plan's, which sizes the group-sequential design)."""
    from cogtestbed.planning.kinds.monitor.monitor_gs import group_sequential as gs_design

    means = (float(np.nanmean(pools[0].effect)), float(np.nanmean(pools[1].effect)))
    fixed, (ce, cn, me, mn, ew, nw, size, lvl) = at_null_end(effect, means, end, dirn or 1.0, sizes[0], level)
    out["fixed_measured"] = fixed
    if group_sequential and sizes[1] >= 2 * GS_LOOKS:
        out["group_sequential"] = {**gs_design(ce, cn, me, mn, ew, nw, size, lvl, power, 1.0, one_sided=True),
                                   "test": fixed["test"], "null_studies": fixed["null_studies"]}


#: The pools that choose the rule and those every printed figure is measured on
#: (:func:`~cogtestbed.planning.kinds.monitor.monitor_pools.pool_seeds`).
CHOOSE_ROLE, REPORT_ROLE = "choose", "measure"
#: The monitor's printed figures (each reported through the evaluation protocol).
REPORTED = ("power", "null_rejection", "null_rejection_any", "expected_effect", "expected_null", "saving",
            "saving_null")


def _fixed_test(spec: Any, metric: bool) -> str:
    """The test a researcher runs on the fixed design: the metric's declared comparison, the parameter's
    two-group test (Welch, or rank where declared), the one-sample t-test for one LLM."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import two_group_test

    exp = get_experiment(spec.experiment)
    if metric:
        return str(exp.metrics.comparability(spec.metric).test)
    return two_group_test(exp.model(spec.models[0]), spec.effect) if spec.groups == 2 else "t-test"


def _equal_power(measure: Pools, paths: Mapping[str, np.ndarray], which: np.ndarray, ops: Mapping[str, Any],
                 length: int, test: str, level: float, dirn: float, seed: int,
                 null_end: float | None = None) -> dict[str, Any]:
    """The saving against the fixed test sized for the monitor's own power on the reporting pools
    (:func:`~cogtestbed.planning.equal_power.equal_power_saving`), under the effect and the null.
    ``null_end``: a composite null's interval end in the effect's direction; the comparator is then the fixed
    test valid for that null, the one-sided t-test of the mean against it."""
    from cogtestbed.planning.equal_power import equal_power_saving, power_curve

    if measure.effect_parts is None or measure.effect_parts.size == 0:
        return {}
    sizes = np.arange(2, length + 1)
    rng = monitor_streams(seed).generator("reporting", 95)
    parts = measure.effect_parts if null_end is None else measure.effect_parts - null_end
    if null_end is not None:  # one-sided at level: the two-sided test at 2·level in the effect's direction
        test, level, dirn = f"one-sided t-test against {null_end:+.4f}", 2 * level, dirn or 1.0
    hits, hit_which = power_curve(parts, BATCHES, sizes, "t-test" if null_end is not None else test, level,
                                  dirn, rng)
    eq = equal_power_saving(paths["rejected"], paths["stop"], which, hits, hit_which, sizes)
    n_star = eq["fixed_size"]
    null_saving = 1.0 - ops["expected_null"] / n_star if n_star > 0 else math.nan
    rel = eq["fixed_size_se"] / n_star if n_star > 0 else math.nan
    null_se = math.hypot(ops["expected_null_se"] / n_star, (1 - null_saving) * rel) if n_star > 0 else math.nan
    return {"equal_power": {**eq, "test": test}, "saving": eq["saving"], "saving_se": eq["saving_se"],
            "saving_interval": eq["interval"], "saving_null": null_saving, "saving_null_se": null_se}


def _report(seed: int, measure: Pools, out: Mapping[str, Any]) -> dict[str, Any]:
    """Every printed figure through the evaluation protocol's reporting stream (refused where the measuring
    pools are not the reporting stream's): the streams' seeds and the figures reported."""
    streams = monitor_streams(seed)
    chosen = streams.choosing(2) + streams.choosing(2, pilot=True)
    streams.reporting(2)
    for name in REPORTED:
        if name in out:
            streams.report(name, out[name], out.get(name + "_se", math.nan), measure.seeds)
    return {"choosing": list(chosen), "reporting": list(measure.seeds),
            "reported": [r.name for r in streams.reported]}


def monitor_protocol(seed: int) -> Any:
    """The monitor kind's evaluation protocol (:attr:`~cogtestbed.planning.kinds.PlanKind.protocol`):
    the pools it draws for :data:`CHOOSE_ROLE` and :data:`REPORT_ROLE`, and its figures reported from the
    latter's seeds."""
    streams = monitor_streams(seed)
    pool_seeds(seed, CHOOSE_ROLE, streams)
    pool_seeds(seed, "pilot", streams)
    reported = pool_seeds(seed, REPORT_ROLE, streams)
    for name in REPORTED:
        streams.report(name, 0.0, 0.0, reported)
    return streams


def _model_statistic(spec: Any) -> tuple[float, float, str]:
    """A model effect's statistic: its bounds (a pair difference's, or less the null value) and its label."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import effect_scale

    model = get_experiment(spec.experiment).model(spec.models[0])
    scale = effect_scale(model, spec.effect)
    lo, hi = statistic_bounds(model, spec.effect, scale)
    lo, hi = (lo - hi, hi - lo) if spec.groups == 2 else (lo - _null(spec, model), hi - _null(spec, model))
    return lo, hi, (f"per-{'pair difference of the' if spec.groups == 2 else 'subject'} MLE of {spec.effect} "
                    f"({scale} scale) less its null value")


def _setting(setting: Mapping[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in setting.items()) or "(base)"


#: Candidate scales of the symmetry test's transform, as quantiles of the simulated |statistic| under the effect.
SCALE_QUANTILES = (0.3, 0.5, 0.7, 0.85, 0.95)
#: Normal quantile of the bias bound of a one-LLM statistic's null mean (two-sided 95 %).
BIAS_Z = 1.96


def choose_test(eff_pool: np.ndarray, nul_pool: np.ndarray, lo: float, hi: float, groups: int,
                composite: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The test the plan fixes before any data, from its simulation (``eff_pool``, ``nul_pool``: the statistic
    under the effect and the null):

    * **two LLMs** (a pair's difference): the test of symmetry about 0 — under the null the two LLMs are
      exchangeable, so ``D = X_B − X_A`` and ``−D`` have one distribution and every odd bounded function of
      ``D`` has conditional mean 0, exactly, with no bound on ``D`` and no estimator bias (it cancels);
      :func:`~cogtestbed.planning.kinds.monitor.eprocess.symmetric_unit` at the scale (:data:`SCALE_QUANTILES` of
      ``|D|``) whose Kelly bet grows fastest under the effect;
    * **one LLM**: the mean test on ``[lo, hi]`` against the null interval ``0 ± δ``, ``δ`` the per-subject
      MLE's bias under the null as simulated (``|mean| + 1.96 SE`` of ``nul_pool``): the estimator is not
      unbiased at a finite design, and a Kelly-sized bet against exactly 0 would turn that bias into false
      rejections (the premise "conditional mean 0 under H0" would not hold).  With ``composite`` (the null
      interval over the declared nuisance region, the pools already shifted by its center) the null interval
      is ``0 ± its half-width`` instead: valid for every LLM of the region, not only the plan's population.

    Each with the exact Kelly bet on the simulated effect (:func:`~cogtestbed.planning.kinds.monitor.eprocess.
    kelly_bet`) mixed with the hedged aGRAPA process."""
    from cogtestbed.planning.kinds.monitor.eprocess import HEDGE_WEIGHT, kelly_bet, symmetric_unit, tested_scale

    eff, nul = eff_pool[np.isfinite(eff_pool)], nul_pool[np.isfinite(nul_pool)]
    mean, se = float(nul.mean()), float(nul.std(ddof=1) / math.sqrt(nul.size))
    mix = (f"the exact Kelly bet on the plan's simulated effect ({1 - HEDGE_WEIGHT:g}) mixed with the hedged "
           f"aGRAPA process ({HEDGE_WEIGHT:g}; Waudby-Smith & Ramdas 2023, c = 1/2), every unit a look"
           + ("; confidence sequence {m: K_t(m) < 1/alpha} of the mean" if math.isfinite(hi - lo) else ""))
    if groups == 2:
        best = (-math.inf, 1.0, 0.0)
        for q in SCALE_QUANTILES:
            s = float(np.quantile(np.abs(eff), q))
            if not s > 0:
                continue
            y = symmetric_unit(eff, s)
            bet = kelly_bet(y, 0.5)
            best = max(best, (float(np.mean(np.log1p(bet * (y - 0.5)))), s, bet))
        g = 2 * symmetric_unit(nul, best[1]) - 1
        return {"test": "symmetry", "symmetry_scale": best[1], "halfwidth": 0.0, "planned_bet": best[2],
                "growth": best[0],
                "method": f"betting e-process for symmetry about 0 on clip(D/{best[1]:.3g}, -1, 1): {mix}",
                "property": f"under the null the two LLMs are exchangeable, so the pair difference D is symmetric "
                            f"about 0 and clip(D/s, -1, 1) has conditional mean 0 exactly (no bounds needed); "
                            f"simulated null: its mean {g.mean():+.4f} ± {g.std(ddof=1) / math.sqrt(g.size):.4f}, "
                            f"mean of D {mean:+.4f} ± {se:.4f}"}
    if composite is not None:
        return _composite_test(eff, lo, hi, composite, mix)
    width = abs(mean) + BIAS_Z * se
    y, m, w = tested_scale(eff, lo, hi, width)
    bet = kelly_bet(y, m, w)
    faced = m + w if bet >= 0 else m - w
    return {"test": "mean", "symmetry_scale": None, "halfwidth": width, "planned_bet": bet,
            "growth": float(np.mean(np.log1p(bet * (y - faced)))),
            "method": f"betting e-process for the mean against the null interval 0 ± {width:.4f}: {mix}",
            "null_scope": "population",
            "property": f"every observation lies in [{lo:g}, {hi:g}] (the parameters' declared bounds) and under "
                        f"the null its mean lies in 0 ± {width:.4f} (the per-subject MLE's null mean at the plan's "
                        f"simulated population, {mean:+.4f} ± {se:.4f}, widened by {BIAS_Z} SE; no nuisance region "
                        "is declared, so an LLM without the effect but unlike that population is not covered)"}


def _composite_test(eff: np.ndarray, lo: float, hi: float, composite: Mapping[str, Any], mix: str) -> dict[str, Any]:
    """The one-LLM mean test against the composite null interval (``eff``, ``lo``, ``hi`` shifted by its
    center): the Kelly bet faces the interval's end in the effect's direction."""
    from cogtestbed.planning.kinds.monitor.eprocess import kelly_bet, tested_scale
    from cogtestbed.planning.kinds.monitor.monitor_composite import center_width

    a, b = composite["interval"]
    width = center_width(composite["interval"])[1]
    y, m, w = tested_scale(eff, lo, hi, width)
    bet = kelly_bet(y, m, w)
    faced = m + w if bet >= 0 else m - w
    region = ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in composite["region"].items())
    means = [p["mean"] for p in composite["points"]]
    return {"test": "mean", "symmetry_scale": None, "halfwidth": width, "planned_bet": bet,
            "growth": float(np.mean(np.log1p(bet * (y - faced)))), "null_interval": [a, b],
            "nuisance_region": composite["region"], "composite": dict(composite),
            "method": f"betting e-process for the mean against the composite null interval [{a:+.4f}, {b:+.4f}]: "
                      f"{mix}",
            "property": f"every observation lies in [{lo + (a + b) / 2:g}, {hi + (a + b) / 2:g}] (the "
                        f"parameters' declared bounds) and, for an LLM without the effect anywhere in the "
                        f"declared nuisance region ({region}; {composite['null_model']} parameters), each "
                        f"subject's null mean lies in [{a:+.4f}, {b:+.4f}] (the null means at "
                        f"{len(means)} grid points ran {min(means):+.4f} to {max(means):+.4f}, widened by "
                        f"{composite['margin_se']:g} MC SE for MC and grid interpolation error); subjects "
                        "at different points of the region are covered"}


def _null(spec: Any, model: Any) -> float:
    from cogtestbed.studies.model_studies import one_sample_null

    return one_sample_null(spec.model_copy(update={"effect_size": 0.0}), model)


def run_monitor(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    """The ``monitor`` plan kind: the fixed plan (with ``looks``: and its group-sequential design), then the
    anytime-valid monitor at the chosen design's trials (:func:`monitor_section`)."""
    from cogtestbed.planning.request import run_power, run_sequential
    from cogtestbed.studies.study_kinds import load_study

    planned = (run_sequential if req.sequential.looks is not None else run_power)(exp, req, ctx)
    payload = dict(planned.payload)
    chosen = payload.get("chosen")
    spec: Any = load_study(json.dumps(payload["study"])) if chosen else None
    axis = "runs" if getattr(spec, "metric", None) is not None else "subjects"
    if not chosen or planned.size_name != axis:
        payload["monitor"] = {"reason": f"no fixed design reached the target power on the {axis} axis"}
        return Planned(payload, planned.size_name)
    payload["monitor"] = monitor_section(spec, chosen, req.target.power, req.sequential.monitor_sims, req.seed,
                                         ctx.say, group_sequential=req.sequential.looks is None)
    if isinstance(payload.get("run"), dict):
        payload["run"] = run_settings(payload["run"], payload["monitor"], spec, chosen)
    return Planned(payload, planned.size_name)


def run_settings(run: Mapping[str, Any], mon: Mapping[str, Any], spec: Any,
                 chosen: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's ``run`` section for a monitored run: up to the cap's units per LLM (one LLM: subjects; two:
    pairs, one unit of each LLM a step), each LLM's calls limit scaled to them, and the monitor
    (:mod:`cogtestbed.runs.monitor_run`) under ``monitor``, sealed with the digest of its content
    (with ``looks``, the group-sequential design stays in the payload for comparison; the run executes the
    monitor)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import effect_scale

    cap = int(mon["cap"])
    calls = run.get("max_calls")
    per = None if calls is None else math.ceil(int(calls) / max(int(run["subjects"]), 1))
    rule = {"bounds": None if mon.get("bounds") is None else list(mon["bounds"]), "level": mon["level"], "cap": cap,
            "planned_bet": mon["planned_bet"], "halfwidth": mon.get("halfwidth", 0.0),
            **({"null_center": mon.get("null_center", 0.0), "null_interval": list(mon["null_interval"]),
                "nuisance_region": mon["nuisance_region"]} if mon.get("null_interval") is not None else {}),
            "symmetry_scale": mon.get("symmetry_scale"), "outside": "stop", "futility": mon.get("futility")}
    if getattr(spec, "metric", None) is not None:  # a metric difference: the units are pairs of sessions
        design = {"experiment": spec.experiment, "metric": spec.metric,
                  "metric_options": dict(spec.metric_options or {}), "pairs": True, **rule}
    else:
        model = get_experiment(spec.experiment).model(spec.models[0])
        design = {"experiment": spec.experiment, "model": model.name, "effect": spec.effect,
                  "scale": effect_scale(model, spec.effect), "null_value": _null(spec, model),
                  "lapse_fit": spec.lapse_fit, "pairs": spec.groups == 2, **rule}
    kept = {k: v for k, v in run.items() if k != "sequential"}  # the run executes the monitor, not the looks
    return {**kept, "subjects": cap, "max_calls": None if per is None else per * cap, "monitor": sealed(design)}


def monitor_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    """The plan's text, then the three designs side by side at equal power."""
    from cogtestbed.planning.plan_text import plan_lines

    out = list(plan_lines(payload, size_name))
    return out + design_table(payload)


def _money(x: Any) -> str:
    return "-" if x is None else f"${x:,.4f}"


def design_table(payload: Mapping[str, Any]) -> list[str]:
    """Fixed, group-sequential (where planned) and monitored designs, one row each: subjects expected under
    the effect and the null, the most, dollars, power and type-I error."""
    mon, chosen = payload.get("monitor") or {}, payload.get("chosen") or {}
    if "cap" not in mon:
        return [f"monitor: {mon.get('reason', 'not planned')}"]
    unit, n = mon["unit"], mon.get("fixed_subjects", chosen.get("subjects"))
    units = "pairs of runs" if unit == "pair of runs" else unit + "s"
    at = chosen.get("design") or f"{mon['trials']} trials"
    fixed_test = "(" + mon.get("fixed_test", "t-test") + ")"
    rows = [f"designs at equal power (target {mon['target_power']:.2f}) in {units}, at the fixed design's "
            f"{at}; every row's dollars priced by the fixed plan's dry run:",
            f"  {'design':<16} {'E[n] effect':>14} {'E[n] null':>12} {'max':>5} {'$ effect':>10} {'$ null':>10} "
            f"{'power':>13} {'type-I':>16}",
            f"  {'fixed':<16} {n:>14} {n:>12} {n:>5} {_money(chosen.get('dollars')):>10} "
            f"{_money(chosen.get('dollars')):>10} {chosen['power']:>7.3f}±{chosen['mc_se']:.3f} {fixed_test:>16}"]
    level = mon["level"]
    rows += _valid_fixed_row(mon)
    rows += _sequential_row(payload.get("sequential"), level) or _pooled_sequential_row(mon)
    rows.append(f"  {'monitor':<16} {mon['expected_effect']:>8.1f}±{mon['expected_effect_se']:<5.1f} "
                f"{mon['expected_null']:>12.1f} {mon['cap']:>5} {_money(mon['dollars_effect']):>10} "
                f"{_money(mon['dollars_null']):>10} {mon['power']:>7.3f}±{mon['power_se']:.3f} "
                f"{mon['null_rejection']:>8.4f}≤{mon['null_upper']:.4f}" + _offered(mon['null_upper'], level))
    fut = mon.get("futility")
    rows.append(f"  monitor: {mon['method']}; stops at K_t >= {1 / mon['level']:g}"
                + (f", at K_t <= {fut:g} (futility, chosen on the choosing pools)" if fut else "")
                + f" or at the cap {mon['cap']} "
                f"(futility{'' if mon['reached'] else ': target power not reached by ' + str(mon['longest'])})")
    rows += _null_lines(mon)
    rows += _equal_power_lines(mon, units)
    rows.append(f"  validity needs only: {mon['property']}; null rejection at any look to {mon['longest']} "
                f"{mon['null_rejection_any']:.4f} (upper {mon['null_upper_any']:.4f}; {mon['null_studies']} null "
                f"studies); mean of the null pool {mon['pool_mean_null']:+.4f}")
    rows += _measured_lines(mon)
    if any(row.endswith(NOT_OFFERED) for row in rows):
        rows.append(f"  {NOT_OFFERED}: a design whose type-I error's one-sided 95% upper bound exceeds alpha "
                    f"{level:g} is shown, not offered (measured on {mon['null_studies']} null studies: more "
                    "--monitor-sims measure it closer, or it does exceed alpha)")
    return rows


def _null_lines(mon: Mapping[str, Any]) -> list[str]:
    """What the one-LLM monitor's null covers: every LLM of the declared nuisance region (a composite null), or
    only the plan's simulated population (no region declared); nothing for another test."""
    if mon.get("null_interval") is not None:
        region = ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in mon["nuisance_region"].items())
        return [f"  null: every LLM without the effect in the nuisance region {region}: the statistic's null "
                f"mean within [{mon['null_interval'][0]:+.4f}, {mon['null_interval'][1]:+.4f}] (measured at "
                f"{len(mon['composite']['points'])} points, widened by {mon['composite']['margin_se']:g} MC SE)"]
    if mon.get("null_scope") == "population":
        return [f"  null: the plan's simulated population without the effect (not every LLM without it): the "
                f"statistic's null mean within 0 ± {mon['halfwidth']:.4f} there; no nuisance region is declared "
                "for this effect, so the type-I guarantee is not measured for an LLM unlike that population"]
    return []


#: The mark of a design whose type-I error's upper bound exceeds the level: shown, never offered.
NOT_OFFERED = "NOT OFFERED"


def _offered(upper: float | None, level: float) -> str:
    """The end of a design's row: :data:`NOT_OFFERED` where its type-I error's upper bound ``upper`` exceeds
    ``level``, else nothing."""
    return f"  {NOT_OFFERED}" if upper is not None and upper > level else ""


def _valid_fixed_row(mon: Mapping[str, Any]) -> list[str]:
    """A composite null's fixed design valid for it (the one-sided t-test against the null interval's end, at the
    size reaching the target on the choosing pools; the group-sequential row below tests the same), measured on
    the fresh pools; none for another null."""
    fm = mon.get("fixed_measured") or {}
    if not fm.get("test"):
        return []
    n, per = fm["n"], mon.get("dollars_per_unit")
    money = _money(None if per is None else per * n)
    return [f"  {'fixed, valid':<16} {n:>14} {n:>12} {n:>5} {money:>10} {money:>10} "
            f"{fm['power']:>7.3f}±{fm['power_se']:.3f} {fm['null_rejection']:>8.4f}≤{fm['null_upper']:.4f}",
            f"  fixed, valid: the {fm['test']}, valid for the same null (type-I on the {fm['null_studies']}); the "
            "fixed plan's t-test against 0 above is not valid over the nuisance region"]


def _pooled_sequential_row(mon: Mapping[str, Any]) -> list[str]:
    """The group-sequential design computed on the monitor's pools (:mod:`~cogtestbed.
    planning.kinds.monitor.monitor_gs`), where the plan has none of its own: its row and its boundary."""
    gs = mon.get("group_sequential")
    if not isinstance(gs, Mapping):
        return []
    per = mon.get("dollars_per_unit")
    money = [_money(None if per is None else per * gs[f"expected_{k}"]) for k in ("effect", "null")]
    return [f"  {'group-seq.':<16} {gs['expected_effect']:>8.1f}±{gs['expected_effect_se']:<5.1f} "
            f"{gs['expected_null']:>12.1f} {gs['max']:>5} {money[0]:>10} {money[1]:>10} "
            f"{gs['power']:>7.3f}±{gs['power_se']:.3f} {gs['null_rejection']:>8.4f}≤{gs['null_upper']:.4f}"
            + _offered(gs["null_upper"], mon["level"])]


def _measured_lines(mon: Mapping[str, Any]) -> list[str]:
    """Where the figures come from: the choosing and measuring pools, the group-sequential boundary and the
    fixed test measured on the measuring pools."""
    pools = mon.get("pools")
    if not isinstance(pools, Mapping):
        return []
    out = [f"  chosen on {pools['choose']['units']} simulated units per hypothesis (seeds "
           f"{pools['choose']['seeds']}); every power, type-I and E[n] measured on {pools['measure']['units']} fresh "
           f"ones (seeds {pools['measure']['seeds']})"]
    gs = mon.get("group_sequential")
    if isinstance(gs, Mapping):
        out.append(f"  group-seq.: {gs['boundary']}; looks at {', '.join(map(str, gs['sizes']))}")
    fx = mon.get("fixed_measured")
    if isinstance(fx, Mapping):
        out.append(f"  measured: the fixed t-test at {fx['n']} on the measuring pools: power {fx['power']:.3f}"
                   f"±{fx['power_se']:.3f}, type-I {fx['null_rejection']:.4f}≤{fx['null_upper']:.4f}")
    return out


#: The most a monitor may cost over its fixed design at equal power under the effect and still be recommended.
DEARER_BAR = 0.10


def recommended(mon: Mapping[str, Any]) -> str:
    """``fixed`` where the monitor costs more than :data:`DEARER_BAR` over the fixed test at equal power under the
    effect (its saving below ``-DEARER_BAR`` on the fresh pools), else ``monitor`` (also where no equal-power
    comparison was measured)."""
    saving = mon.get("saving") if mon.get("equal_power") else None
    return "fixed" if saving is not None and math.isfinite(saving) and saving < -DEARER_BAR else "monitor"


def _equal_power_lines(mon: Mapping[str, Any], units: str) -> list[str]:
    """The comparator at equal power (the fixed test sized for the monitor's own fresh power), both powers,
    and the expected savings with their joint intervals."""
    eq = mon.get("equal_power")
    if not isinstance(eq, Mapping) or not math.isfinite(eq.get("fixed_size", math.nan)):
        return ["  expected saving: the fixed test does not reach the monitor's power within the simulated sizes"]
    whole = eq.get("fixed_size_whole")
    return [f"  at equal power: the fixed {eq['test']} needs {eq['fixed_size']:.1f}±{eq['fixed_size_se']:.1f} "
            f"{units} for the monitor's power {eq['sequential_power']:.3f}±{eq['sequential_power_se']:.3f} (its power "
            f"at {whole}: {eq['fixed_power']:.3f}±{eq['fixed_power_se']:.3f}; both on the fresh pools)",
            "  expected saving against it: " + _saving(mon, "effect") + "; " + _saving(mon, "null")] + (
        [f"  recommended: the fixed design. At equal power the monitor costs {-100 * mon['saving']:.1f}% more "
         f"{units} under the effect, over the {100 * DEARER_BAR:g}% its stopping at any time may cost; monitor "
         "only where a look at any time is needed"] if recommended(mon) == "fixed" else [])


def _saving(mon: Mapping[str, Any], under: str) -> str:
    """The expected saving under the effect or the null, in % of the fixed design, with its 95 % MC interval
    (negative: the monitor is dearer)."""
    key = "saving" if under == "effect" else "saving_null"
    if key not in mon:
        return f"under the {under} -"
    x, se = 100 * mon[key], 100 * mon[key + "_se"]
    lo, hi = (x - 1.96 * se, x + 1.96 * se)
    joint = " joint" if under == "effect" else ""
    return f"under the {under} {x:+.1f}% (95%{joint} interval {lo:+.1f}% to {hi:+.1f}%)"


def _sequential_row(seq: Any, level: float) -> list[str]:
    """The group-sequential design's row (its chosen candidate), where the plan has one (marked where its
    type-I error's upper bound exceeds ``level``)."""
    from cogtestbed.planning.kinds.monitor.monitor_pools import upper_bound

    if not isinstance(seq, Mapping) or "design" not in seq:
        return [] if seq is None else ["  group-seq.: no design reached the target (plan.json's `sequential`)"]
    top = seq["design"]["sizes"][-1]
    cand = next((c for c in seq.get("candidates", ()) if c.get("max_subjects") == top), None)
    if cand is None:
        return []
    null = seq["null"]
    upper = upper_bound(null["rejection_rate"], null["mc_se"], null["sims"])
    return [f"  {'group-seq.':<16} {cand['expected_units_effect']:>14.1f} {cand['expected_units_null']:>12.1f} "
            f"{top:>5} {_money(seq['expected']['effect']['dollars']):>10} "
            f"{_money(seq['expected']['null']['dollars']):>10} {cand['power']:>13.3f} "
            f"{null['rejection_rate']:>16.4f}" + _offered(upper, level)]


def write_monitor(payload: Mapping[str, Any], out: Path) -> dict[str, Path]:
    """``plan.json`` (and the fixed plan's report) through the fixed plan's writer; ``monitor.json`` beside."""
    from cogtestbed.outputs import atomic_write_bytes
    from cogtestbed.planning.plan_report import write_plan

    files = write_plan(dict(payload), out)
    dest = out / "monitor.json"
    atomic_write_bytes(dest, lambda tmp: tmp.write_text(json.dumps(payload.get("monitor"), indent=1, default=str)))
    return {**files, "monitor": dest}


__all__ = ["BATCHES", "DEARER_BAR", "MAX_FACTOR", "POOL_FACTOR", "at_null_end", "check_monitor", "choose_test",
           "design_table", "designs_on_pools", "hypothesis_pool", "metric_pool", "monitor_lines", "monitor_protocol",
           "monitor_section", "operate", "rate_and_se", "recommended", "run_monitor", "statistic_bounds", "studies",
           "subject_pool", "unit_array", "upper_bound", "write_monitor"]
