"""The one-LLM RW± optimism monitor against its composite null over the declared nuisance region: type-I at
every point of a fresh grid (offset from the choosing grid, plus the region's corners) with a look after every
subject up to 3× the cap, and power / expected subjects under the plan's effect beside the fixed design valid
for the same null, at equal power.

Roles and seeds: the *choosing* role (``seed``) measures the null interval on the choosing grid
(:func:`~cogtestbed.planning.kinds.monitor.monitor_composite.composite_null`), fixes the Kelly bet and, together,
the futility e-value and the cap (:func:`~cogtestbed.planning.kinds.monitor.monitor_kind.choose_futility`: the
pair with the smallest expected size whose power on the choosing studies clears the target 0.8 by 0.03); every
printed rate comes from *measuring* pools of other seeds (``SeedSequence([seed, 95, role, k])``).  Studies are
random orderings of one of 10 disjoint sub-pools of a pool simulated once per point: the MC SE is the larger of
the binomial and the between-sub-pool one, the upper bound the larger of rate + 1.645 SE and Clopper–Pearson's.

The fixed comparator is the fixed test valid for the same composite null: the one-sided one-sample t-test of
"mean ≤ the interval's upper end" (the effect's side), sized for the monitor's own fresh power on the same
fresh pools (:func:`~cogtestbed.planning.equal_power.equal_power_saving`: a joint 95 % interval from a
leave-one-sub-pool-out jackknife).  The usual two-sided t-test against 0 is printed beside it for contrast: it
is not valid for this null (its null rejection rate at each point is the table's last column).

``python benchmarks/studies/monitor_composite.py [--studies 2000] [--per-point 300] [--max-length 300]
[--seed 0] [--cache DIR] [--quick]`` (about 15 ms CPU a simulated subject: the full table, 13 points × 10
sub-pools × 3× the cap, is about 20 CPU minutes; ``--cache``: keep each simulated pool as a ``.npy`` file and
reuse it; ``--quick``: 4 points, small pools, a reduced check).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import cogtestbed.planning.kinds.monitor.monitor_composite as composite_module
from cogtestbed.planning.equal_power import equal_power_saving, power_curve, size_at
from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, kelly_bet, log_capital, tested_scale
from cogtestbed.planning.kinds.monitor.monitor_composite import center_width, composite_null, grid
from cogtestbed.planning.kinds.monitor.monitor_kind import at_null_end, choose_futility, operate
from cogtestbed.planning.kinds.monitor.monitor_pools import rate_and_se, studies, subject_pool, upper_bound

sys.path.insert(0, str(Path(__file__).parent))
from monitor_null import POWER, question  # noqa: E402

BATCHES = 10


def seed_of(seed: int, role: int, k: int) -> int:
    return int(np.random.SeedSequence([seed, 95, role, k]).generate_state(1)[0] >> 1)


def cached(fn: Callable[..., np.ndarray], folder: str | None, tag: str) -> Callable[..., np.ndarray]:
    """``fn(spec, *args)`` kept as ``folder/tag-KEY.npy`` (KEY: a digest of the study and the arguments) and
    read back on the next call with the same ones; ``folder`` None: ``fn`` itself."""
    if folder is None:
        return fn

    def wrapped(spec: Any, *args: Any) -> np.ndarray:
        key = json.dumps([tag, spec.model_dump(mode="json"), [sorted(a.items()) if isinstance(a, dict) else a
                                                              for a in args]], default=str, sort_keys=True)
        path = Path(folder) / f"{tag}-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npy"
        if path.exists():
            return np.load(path)
        out = fn(spec, *args)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, out)
        return out

    return wrapped


def crossings(x: np.ndarray, lo: float, hi: float, interval: list[float], bet: float, level: float,
              futility: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per study the 1-based look at which the e-value first reaches 1/level, and at which it first falls to
    ``futility`` (0: never)."""
    c, w = center_width(interval)
    y, m, width = tested_scale(x - c, lo - c, hi - c, w)
    log_k = log_capital(y, m, planned=bet, halfwidth=width)
    low = log_k <= math.log(futility) if futility else np.zeros(log_k.shape, bool)
    return first_crossing(log_k, level), np.where(low.any(axis=-1), low.argmax(axis=-1) + 1, 0)


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def effect_rows(spec: Any, lo: float, hi: float, interval: list[float], rule: dict[str, Any], pool: np.ndarray,
                reps: int, nb: int, rng: np.random.Generator, level: float) -> dict[str, Any]:
    """Power and E[n] under the effect on the fresh pool, the valid fixed test at equal power (both powers,
    the cost with its joint interval) and the two-sided t-test against 0 for contrast; returns the operating
    characteristics (``ops``), the equal-power comparison (``eq``), the fresh studies (``eff``, ``which``) and
    the t-test's equal-power size (``n_zero``, the null table's last column)."""
    c, w = center_width(interval)
    cap, fut = rule["cap"], rule["futility"]
    eff, which = studies(pool, reps, cap, rng, batches=nb)
    ops = operate(eff - c, which, eff[:2] - c, which[:2], lo - c, hi - c, level, POWER, rule["bet"], w, None,
                  cap=cap, futility=fut)
    sizes = np.arange(2, min(2 * cap, pool.size // nb) + 1)
    # one-sided t-test of "mean <= the upper end" at level: the two-sided test at 2·level in the effect's direction
    hits, hw = power_curve((pool - interval[1])[:, None], nb, sizes, "t-test", 2 * level, 1.0, rng)
    eq = equal_power_saving(ops["paths"]["rejected"], ops["paths"]["stop"], which, hits, hw, sizes)
    zero_hits, _ = power_curve(pool[:, None], nb, sizes, "t-test", level, 0.0, rng)
    n_zero = size_at(sizes, zero_hits.mean(axis=1), ops["power"])
    lo_i, hi_i = eq["interval"]
    print(f"under the effect ({reps} fresh studies, {pool.size} subjects): monitor power {ops['power']:.3f}"
          f"±{ops['power_se']:.3f}, E[n] {ops['expected_effect']:.1f}±{ops['expected_effect_se']:.1f} (cap {cap})")
    print(f"  the fixed one-sided t-test of mean <= {interval[1]:+.4f} (valid for the same null) at equal power: "
          f"n* {eq['fixed_size']:.1f}±{eq['fixed_size_se']:.1f} (its power at {eq['fixed_size_whole']}: "
          f"{eq['fixed_power']:.3f}±{eq['fixed_power_se']:.3f}; the monitor's {eq['sequential_power']:.3f}"
          f"±{eq['sequential_power_se']:.3f})")
    print(f"  monitor against it: cost {_pct(-eq['saving'])} (joint 95% {_pct(-hi_i)} to {_pct(-lo_i)}); saving "
          f"{_pct(eq['saving'])}")
    print(f"  the two-sided t-test against 0 (not valid for this null) reaches that power at n {n_zero:.1f}")
    return {"ops": ops, "eq": eq, "eff": eff, "which": which,
            "n_zero": None if not math.isfinite(n_zero) else math.ceil(n_zero)}


def comparators(rule: dict[str, Any], found: dict[str, Any], c_pool: np.ndarray, m_pool: np.ndarray, end: float,
                level: float) -> dict[str, Any]:
    """The fixed and the group-sequential designs valid for the same composite null (one-sided t-tests against
    the interval's end ``end``; :func:`~cogtestbed.planning.kinds.monitor.monitor_kind.at_null_end`): the fixed
    size is the smallest reaching the target power on the choosing studies, the group-sequential design is
    calibrated and sized there, and both are measured on the fresh studies of :func:`effect_rows`."""
    from cogtestbed.planning.kinds.monitor.monitor_gs import fixed_size, group_sequential, prefix_table

    choose = rule["studies"]
    n_fix, reached = fixed_size(prefix_table(choose - end), choose.shape[1], 2 * level, POWER, 1.0)
    fixed, gs_args = at_null_end((choose, found["eff"], found["which"]),
                                 (float(np.nanmean(c_pool)), float(np.nanmean(m_pool))), end, 1.0,
                                 min(n_fix, found["eff"].shape[1]), level)
    gs = {**group_sequential(*gs_args, POWER, 1.0, one_sided=True), "test": fixed["test"],
          "null_studies": fixed["null_studies"]}
    print(f"  fixed {fixed['test']}: n {n_fix} (chosen on the choosing studies), power {fixed['power']:.3f}"
          f"±{fixed['power_se']:.3f}, type-I at the interval's end {fixed['null_rejection']:.4f}")
    print(f"  group-sequential ({gs['looks']} looks, max {gs['max']}): E[n] {gs['expected_effect']:.1f}"
          f"±{gs['expected_effect_se']:.1f}, power {gs['power']:.3f}±{gs['power_se']:.3f}, type-I at the "
          f"interval's end {gs['null_rejection']:.4f}", flush=True)
    return {"fixed": {**fixed, "reached": reached}, "group_sequential": gs}


def choose_rule(spec: Any, lo: float, hi: float, interval: list[float], c_eff: np.ndarray, length: int,
                reps: int, rng: np.random.Generator, level: float) -> dict[str, Any]:
    """The Kelly bet, the futility e-value and the cap, all from the choosing pool ``c_eff``."""
    c, w = center_width(interval)
    y, m, width = tested_scale(c_eff - c, lo - c, hi - c, w)
    bet = kelly_bet(y, m, width)
    choose, _ = studies(c_eff, reps, min(length, c_eff.size), rng, batches=1)
    fut, picked = choose_futility(choose - c, choose[:2] - c, lo - c, hi - c, level, POWER, (bet, w, None))
    return {"bet": bet, "futility": fut, "cap": int(picked["cap"]), "reached": bool(picked["reached"]),
            "choose_power": float(picked["power"]), "choose_expected": float(picked["expected_effect"]),
            "studies": choose}


def null_row(point: dict[str, float], nul: np.ndarray, nw: np.ndarray, rule: dict[str, Any], args: tuple[Any, ...],
             n_zero: int | None, level: float) -> tuple[str, dict[str, Any]]:
    """One null point's rejection rates: the design's to the cap (futility stops included), the e-process's at
    any look to 3× the cap, and the two-sided t-test against 0 at ``n_zero``; the line and its figures (with the
    design's expected size there)."""
    from scipy import stats

    cap = rule["cap"]
    t, f = crossings(nul, *args, rule["bet"], level, rule["futility"])
    design = (t > 0) & (t <= cap) & ((f == 0) | (t < f))
    r, r_se = rate_and_se(design, nw)
    ra, ra_se = rate_and_se(t > 0, nw)
    stop = np.minimum(np.where(design, t, np.where(f > 0, f, cap)), cap)
    e_n, e_se = rate_and_se(stop, nw)
    reps = nul.shape[0]
    tz = None if n_zero is None else float((stats.ttest_1samp(nul[:, :n_zero], 0.0, axis=1).pvalue < level).mean())
    tt = "-" if tz is None else f"{tz:.4f}"
    figures = {**point, "rejection": r, "rejection_se": r_se, "upper": upper_bound(r, r_se, reps),
               "rejection_any": ra, "rejection_any_se": ra_se, "upper_any": upper_bound(ra, ra_se, reps),
               "expected": e_n, "expected_se": e_se, "studies": reps, "longest": int(nul.shape[1]),
               "t_test_zero": tz, "t_test_zero_n": n_zero}
    return (f"  alpha {point['alpha']:<6.3g} beta {point['beta']:<12.3g} {r:>8.4f} {figures['upper']:>8.4f}"
            f" {ra:>10.4f} {figures['upper_any']:>8.4f} {reps:>7} {tt:>11}"), figures


def table_row(spec: Any, comp: dict[str, Any], rule: dict[str, Any], found: dict[str, Any], cmp: dict[str, Any],
              nulls: list[dict[str, Any]], args: tuple[float, float, float]) -> dict[str, Any]:
    """The question's row in ``monitor.py``'s JSON-lines format: the monitor, the fixed and the group-sequential
    designs valid for the composite null, the saving at equal power, and the null table (``null_points``); the
    null figures of the row are the worst over the points."""
    from monitor_questions import declared_questions

    from cogtestbed.registry import get_experiment

    lo, hi, level = args
    ops, eq = found["ops"], found["eq"]
    q = next(q for q in declared_questions(get_experiment(spec.experiment), (1,))
             if q.spec is not None and q.spec.effect == spec.effect)
    a, b = comp["interval"]
    worst = max(nulls, key=lambda p: p["upper"])
    worst_any = max(nulls, key=lambda p: p["upper_any"])
    region = ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in comp["region"].items())
    return {"question": q.name, "needs": q.needs, "unit": "subject", "trials": None, "test": "mean",
            "statistic": f"per-subject MLE of {spec.effect} less its null value",
            "method": f"betting e-process for the mean against the composite null interval [{a:+.4f}, {b:+.4f}] "
                      f"(Kelly bet {rule['bet']:.3f}), every subject a look",
            "property": f"every estimate in [{lo:g}, {hi:g}] and, at every point of the nuisance region ({region}), "
                        f"the null mean inside [{a:+.4f}, {b:+.4f}] ({len(comp['points'])} choosing points, "
                        f"{comp['margin_se']:g} MC SE margin)",
            "level": level, "target_power": POWER, "cap": rule["cap"], "futility": rule["futility"],
            "planned_bet": rule["bet"], "null_interval": [a, b], "nuisance_region": comp["region"],
            "choosing_points": comp["points"], "longest": max(p["longest"] for p in nulls),
            **{k: ops[k] for k in ("power", "power_se", "expected_effect", "expected_effect_se")},
            "null_rejection": worst["rejection"], "null_rejection_se": worst["rejection_se"],
            "null_upper": worst["upper"], "null_rejection_any": worst_any["rejection_any"],
            "null_upper_any": worst_any["upper_any"], "null_studies": worst["studies"],
            "expected_null": max(p["expected"] for p in nulls), "null_points": nulls,
            "equal_power": {**eq, "test": f"one-sided t-test against {b:+.4f}"}, "saving": eq["saving"],
            "saving_se": eq["saving_se"], "saving_interval": eq["interval"], **cmp,
            "command": "python benchmarks/studies/monitor_composite.py " + " ".join(sys.argv[1:]),
            "simulated_units": None, "cpu_s": time.process_time()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--per-point", type=int, default=300)
    ap.add_argument("--choose-subjects", type=int, default=2000, help="the choosing pool under the effect")
    ap.add_argument("--level", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batches", type=int, default=BATCHES, help="sub-pools per measuring pool")
    ap.add_argument("--max-length", type=int, default=300, help="the longest cap considered")
    ap.add_argument("--cache", help="a folder keeping each simulated pool (reused on the next run)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", help="append the question's row to this JSON-lines file (`monitor.py table` reads it)")
    a = ap.parse_args()
    from cogtestbed.planning.kinds.monitor.monitor_kind import _model_statistic

    composite_module.point_pool = cached(composite_module.point_pool, a.cache, "point")  # type: ignore[assignment]
    subjects = cached(subject_pool, a.cache, "subject")
    exp, spec = question()
    lo, hi, _ = _model_statistic(spec)
    per = 40 if a.quick else a.per_point
    comp = composite_null(spec, None, 1, a.seed, n=per, points=(2, 2) if a.quick else (4, 3))
    interval = comp["interval"]
    rng = np.random.default_rng(np.random.SeedSequence([a.seed, 95, 9]))
    c_eff = subjects(spec, None, 1, 200 if a.quick else a.choose_subjects, seed_of(a.seed, 0, 0))
    print(f"choosing effect pool: mean {np.nanmean(c_eff):+.4f}, sd {np.nanstd(c_eff):.4f}", flush=True)
    rule = choose_rule(spec, lo, hi, interval, c_eff, 60 if a.quick else a.max_length, 200 if a.quick else 1000, rng,
                       a.level)
    print(f"RW± optimism {spec.effect_size:g}, one LLM; composite null over "
          + ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in comp["region"].items())
          + f": interval [{interval[0]:+.4f}, {interval[1]:+.4f}] ({len(comp['points'])} choosing points × {per} "
          f"subjects, margin {comp['margin_se']:g} SE); Kelly bet {rule['bet']:.3f}, futility at K_t <= "
          f"{rule['futility']}, cap {rule['cap']} (choosing power {rule['choose_power']:.3f}"
          f"{'' if rule['reached'] else ', target not reached'})")
    for p in comp["points"]:
        print(f"  choosing point alpha {p['alpha']:.3g} beta {p['beta']:.3g}: null mean {p['mean']:+.4f}"
              f"±{p['se']:.4f}")
    reps, nb = (200, 2) if a.quick else (a.studies, a.batches)
    m_eff = subjects(spec, None, 1, nb * 2 * rule["cap"], seed_of(a.seed, 1, 0))
    found = effect_rows(spec, lo, hi, interval, rule, m_eff, reps, nb, rng, a.level)
    cmp = comparators(rule, found, c_eff, m_eff, interval[1], a.level)
    n_zero = found["n_zero"]
    span = 3 * rule["cap"]
    print(f"  {'null point':<28} {'to cap':>8} {'upper':>8} {'to 3xcap':>10} {'upper':>8} {'studies':>7} "
          f"{'t-test@' + str(n_zero):>11}", flush=True)
    points = grid(comp["region"], (2, 2)) if a.quick else grid(comp["region"], (4, 4), offset=True)
    nulls: list[dict[str, Any]] = []
    for k, point in enumerate(points):
        pool = composite_module.point_pool(spec, None, 1, nb * span, seed_of(a.seed, 2, k), point)
        nul, nw = studies(pool, reps, span, rng, batches=nb)
        line, figures = null_row(point, nul, nw, rule, (lo, hi, interval), n_zero, a.level)
        print(line, flush=True)
        nulls.append(figures)
    worst = max(nulls, key=lambda p: p["upper"])
    print(f"largest upper bound over the {len(nulls)} null points: {worst['upper']:.4f} to the cap, "
          f"{max(p['upper_any'] for p in nulls):.4f} to 3x the cap (level {a.level:g})")
    if a.out:
        row = table_row(spec, comp, rule, found, cmp, nulls, (lo, hi, a.level))
        with Path(a.out).open("a") as fh:
            fh.write(json.dumps(row, default=float) + "\n")


if __name__ == "__main__":
    main()
