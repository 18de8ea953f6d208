"""The one-LLM RW± optimism monitor against its composite null over the declared nuisance region: type-I at
every point of a fresh grid (offset from the choosing grid, plus the region's corners) with a look after every
subject up to 3× the cap, and power / expected subjects under the plan's effect beside the fixed t-test.

Roles and seeds: the *choosing* role (``seed``) measures the null interval on the choosing grid
(:func:`~cogtestbed.planning.kinds.monitor.monitor_composite.composite_null`), fixes the Kelly bet, the cap (the
smallest size with power ≥ 0.8 on choosing studies) and the fixed t-test's size; every printed rate comes from
*measuring* pools of other seeds (``SeedSequence([seed, 95, role, k])``).  Studies are random orderings of one
of 10 disjoint sub-pools of a pool simulated once per point: the MC SE is the larger of the binomial and the
between-sub-pool one, the upper bound the larger of rate + 1.645 SE and Clopper–Pearson's.

``python benchmarks/studies/monitor_composite.py [--studies 2000] [--per-point 200] [--seed 0] [--quick]``
(a simulated subject's MLE costs ≈ 0.3 CPU s: the full table, 13 points × 10 sub-pools × 3× the cap, is hours of
CPU; ``--quick``: 4 points, small pools, a reduced check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, kelly_bet, log_capital, tested_scale
from cogtestbed.planning.kinds.monitor.monitor_composite import center_width, composite_null, grid, point_pool
from cogtestbed.planning.kinds.monitor.monitor_pools import rate_and_se, studies, subject_pool, upper_bound

sys.path.insert(0, str(Path(__file__).parent))
from monitor_null import POWER, question  # noqa: E402

BATCHES = 10


def seed_of(seed: int, role: int, k: int) -> int:
    return int(np.random.SeedSequence([seed, 95, role, k]).generate_state(1)[0] >> 1)


def crossings(x: np.ndarray, lo: float, hi: float, interval: list[float], bet: float, level: float) -> np.ndarray:
    c, w = center_width(interval)
    y, m, width = tested_scale(x - c, lo - c, hi - c, w)
    return first_crossing(log_capital(y, m, planned=bet, halfwidth=width), level)


def fixed_null(nul: np.ndarray, n: int | None, level: float) -> str:
    """The two-sided t-test against 0 at ``n`` (the equal-power fixed comparator): its rejection rate on the
    null studies' first ``n`` subjects (it is not valid over the region: the MLE's null mean is not 0)."""
    return "-" if n is None else f"{(stats.ttest_1samp(nul[:, :n], 0.0, axis=1).pvalue < level).mean():.4f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--per-point", type=int, default=200)
    ap.add_argument("--level", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batches", type=int, default=BATCHES, help="sub-pools per measuring pool")
    ap.add_argument("--max-length", type=int, default=180, help="the longest cap considered")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    from cogtestbed.planning.kinds.monitor.monitor_kind import _model_statistic

    exp, spec = question()
    lo, hi, _ = _model_statistic(spec)
    per = 40 if a.quick else a.per_point
    comp = composite_null(spec, None, 1, a.seed, n=per, points=(2, 2) if a.quick else (4, 3))
    interval = comp["interval"]
    c, w = center_width(interval)
    rng = np.random.default_rng(np.random.SeedSequence([a.seed, 95, 9]))
    c_eff = subject_pool(spec, None, 1, 200 if a.quick else 1000, seed_of(a.seed, 0, 0))
    print(f"effect pool: mean {np.nanmean(c_eff):+.4f}, sd {np.nanstd(c_eff):.4f}", flush=True)
    y, m, width = tested_scale(c_eff - c, lo - c, hi - c, w)
    bet = kelly_bet(y, m, width)
    length = 60 if a.quick else a.max_length
    choose, _ = studies(c_eff, 200 if a.quick else 1000, min(length, c_eff.size), rng, batches=1)
    t = crossings(choose, lo, hi, interval, bet, a.level)
    by_n = np.array([((t > 0) & (t <= n)).mean() for n in range(1, choose.shape[1] + 1)])
    cap = int(np.flatnonzero(by_n >= POWER)[0] + 1) if (by_n >= POWER).any() else choose.shape[1]
    print(f"RW± optimism {spec.effect_size:g}, one LLM; composite null over "
          + ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in comp["region"].items())
          + f": interval [{interval[0]:+.4f}, {interval[1]:+.4f}] ({len(comp['points'])} choosing points × {per} "
          f"subjects, margin {comp['margin_se']:g} SE); cap {cap}, Kelly bet {bet:.3f}")
    for p in comp["points"]:
        print(f"  choosing point alpha {p['alpha']:.3g} beta {p['beta']:.3g}: null mean {p['mean']:+.4f}"
              f"±{p['se']:.4f}")
    reps = 200 if a.quick else a.studies
    span = 3 * cap
    nb = 2 if a.quick else a.batches
    m_eff = subject_pool(spec, None, 1, nb * span, seed_of(a.seed, 1, 0))
    eff, which = studies(m_eff, reps, span, rng, batches=nb)
    t_e = crossings(eff, lo, hi, interval, bet, a.level)
    pw, pw_se = rate_and_se((t_e > 0) & (t_e <= cap), which)
    e_n, e_se = rate_and_se(np.where((t_e > 0) & (t_e <= cap), t_e, cap), which)
    fixed = [(n, (stats.ttest_1samp(eff[:, :n], 0.0, axis=1).pvalue < a.level).mean()) for n in range(3, span)]
    n_eq = next((n for n, p in fixed if p >= pw), None)
    top = [(n, (stats.ttest_1samp(eff[:, :n], interval[1], axis=1, alternative="greater").pvalue < a.level).mean())
           for n in range(3, span)]
    n_top = next((n for n, p in top if p >= pw), None)
    print(f"under the effect ({reps} studies): power {pw:.3f}±{pw_se:.3f}, E[n] {e_n:.1f}±{e_se:.1f}; the fixed "
          f"two-sided t-test against 0 reaches that power at n {n_eq}: monitor "
          + ("-" if n_eq is None else f"{100 * (e_n / n_eq - 1):+.1f}% against it")
          + f"; the fixed one-sided t-test against the interval's upper end at n {n_top}: monitor "
          + ("-" if n_top is None else f"{100 * (e_n / n_top - 1):+.1f}% against it"), flush=True)
    print(f"  {'null point':<28} {'to cap':>8} {'upper':>8} {'to 3xcap':>10} {'upper':>8} {'studies':>7} "
          f"{'t-test@' + str(n_eq):>11}")
    points = grid(comp["region"], (2, 2)) if a.quick else grid(comp["region"], (4, 4), offset=True)
    for k, point in enumerate(points):
        pool = point_pool(spec, None, 1, nb * span, seed_of(a.seed, 2, k), point)
        nul, nw = studies(pool, reps, span, rng, batches=nb)
        tn = crossings(nul, lo, hi, interval, bet, a.level)
        r, r_se = rate_and_se((tn > 0) & (tn <= cap), nw)
        ra, ra_se = rate_and_se(tn > 0, nw)
        print(f"  alpha {point['alpha']:<6.3g} beta {point['beta']:<12.3g} {r:>8.4f} {upper_bound(r, r_se, reps):>8.4f}"
              f" {ra:>10.4f} {upper_bound(ra, ra_se, reps):>8.4f} {reps:>7} {fixed_null(nul, n_eq, a.level):>11}",
              flush=True)


if __name__ == "__main__":
    main()
