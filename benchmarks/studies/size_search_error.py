"""How often the plan's size searches pick a size below their target (issue 47 item 4).

Simulates the searches themselves — the package's own search code, on a cheap surrogate whose true
curve is known — and prints, for each rule, the share of searches whose chosen size's *true* rate is
below the target (target: ≤ 5 %), with its one-sided 95 % upper bound, the mean number of studies
(fits) or subjects a search spends, and the chosen size against the true threshold:

* **hierarchical size search** (``plan --fit hierarchical``:
  :func:`cogtestbed.planning.fitcheck.search_sizes` and ``choose_size``):
  the true power Φ(δ√n − z_{α/2}) with its 80 % point at ``--threshold`` units; each study is a uniform U_k
  shared by every size (the search's studies share seeds across sizes), rejecting when U_k < power(n);
  the search starts at the MLE plan's size, drawn uniformly from 0.8–1.3 × the threshold (the MLE's
  t-test and the hierarchical test differ in power).  Rules: before issue 47 (the point estimate, 8 and
  20 studies per size) and now (the sequential test of :mod:`cogtestbed.planning.kinds.power.sizetest`,
  batches of 20 studies, at most 3);
* **precision search** (``plan --precision``: :class:`cogtestbed.planning.kinds.precision.precision.PrecisionPlanner`'s
  ``_first_passing`` on a trials axis 20–500 by 4): the true assurance 2Φ(h√t/σ) − 1 with its 0.9 point
  at ``--trials-threshold`` trials; each subject within the halfwidth with that probability.  Rules:
  before (Wilson interval re-checked every 40 subjects up to 400, the point estimate deciding) and now
  (the sequential test, 10 looks).

The surrogate is exact for what the rules see (binomial counts at known rates); a real study's
power curve is only approximately probit in √n, which does not enter the rules' error (they test
each size's own rate).  ``python benchmarks/studies/size_search_error.py [--searches 2000]``
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.planning import fitcheck
from cogtestbed.planning.kinds.power.power_sims import Estimate
from cogtestbed.planning.kinds.precision import precision
from cogtestbed.planning.kinds.sequential.seqfair import upper_bound
from cogtestbed.planning.space import Axis, Point

TARGET, LEVEL = 0.8, 0.05


def power_curve(threshold: float) -> Any:
    delta = (stats.norm.isf(LEVEL / 2) + stats.norm.ppf(TARGET)) / math.sqrt(threshold)
    return lambda n: float(stats.norm.cdf(delta * math.sqrt(n) - stats.norm.isf(LEVEL / 2)))


def hierarchical(searches: int, threshold: float, sims: int, new: bool, seed: int) -> dict[str, Any]:
    power = power_curve(threshold)
    rng = np.random.default_rng(seed)
    bad = fits = 0
    chosen_sizes = []
    for _ in range(searches):
        u = rng.random(1000)
        start = int(round(threshold * rng.uniform(0.8, 1.3)))

        def measure(n: int, k: int = sims, u: np.ndarray = u) -> Estimate:
            return Estimate(int((u[:k] < power(n)).sum()), k)

        tried = fitcheck.search_sizes(measure, start, TARGET, sims, LEVEL,
                                      test=fitcheck.size_test(TARGET) if new else None)
        size, _reached = fitcheck.choose_size(tried, TARGET)
        bad += power(size) < TARGET
        fits += sum(e.sims for e in tried.values())
        chosen_sizes.append(size)
    return _row(bad, searches, fits / searches, np.asarray(chosen_sizes) / threshold)


class _Surrogate(precision.PrecisionPlanner):
    """The precision planner's search on a known assurance curve (no model is simulated)."""

    def __init__(self, curve: Any, trials: Axis, assurance: float, rng: np.random.Generator, new: bool) -> None:
        self.curve, self.assurance, self.halfwidth, self.rng, self.new = curve, assurance, 1.0, rng, new
        self.trials, self.runs, self.shares, self.say = trials, Axis("runs", (1,)), {}, (lambda _m: None)

    def label(self, point: Point) -> str:
        return str(point.trials)

    def _batch(self, point: Point, k: int, n: int = precision.BATCH) -> tuple[np.ndarray, np.ndarray]:
        inside = self.rng.random(n) < self.curve(point.trials)
        return np.zeros(n), np.where(inside, 0.0, 2.0)

    def passes(self, point: Point) -> bool:
        if self.new:
            return super().passes(point)
        share = self.shares.setdefault(point, precision.Share())  # the rule before issue 47
        while True:
            lo, hi = share.interval
            if share.n and (share.n >= precision.MAX_SUBJECTS or lo >= self.assurance or hi < self.assurance):
                return share.rate >= self.assurance
            _t, e = self._batch(point, share.n // precision.BATCH)
            share.hits += int((np.abs(e) <= self.halfwidth).sum())
            share.n += e.size


def precision_search(searches: int, t_star: float, assurance: float, new: bool, seed: int) -> dict[str, Any]:
    z = stats.norm.ppf((1 + assurance) / 2)  # 2Φ(c√t) − 1 = assurance at t*: c = z / √t*
    c = z / math.sqrt(t_star)

    def curve(t: int) -> float:
        return float(2 * stats.norm.cdf(c * math.sqrt(t)) - 1)

    axis = Axis("trials", tuple(range(20, 501, 4)))
    rng = np.random.default_rng(seed)
    bad = subjects = 0
    chosen = []
    for _ in range(searches):
        planner = _Surrogate(curve, axis, assurance, rng, new)
        point = planner._first_passing(1)
        t = point.trials if point is not None else axis.values[-1]
        bad += curve(int(t or 0)) < assurance
        subjects += sum(s.n for s in planner.shares.values())
        chosen.append(t)
    return _row(bad, searches, subjects / searches, np.asarray(chosen, float) / t_star)


def _row(bad: int, n: int, spent: float, ratio: np.ndarray) -> dict[str, Any]:
    return {"underpowered": bad / n, "upper95": upper_bound(bad, n), "searches": n, "spent": spent,
            "chosen_over_threshold": float(np.mean(ratio)), "chosen_over_threshold_q90": float(np.quantile(ratio, .9))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--searches", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=24.0, help="units at which the true power is 0.8")
    ap.add_argument("--trials-threshold", type=float, default=96.0, help="trials at which the true assurance is Q")
    ap.add_argument("--assurance", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=47)
    a = ap.parse_args()
    start = time.perf_counter()
    print(f"underpowered picks (chosen size's true rate below the target) in {a.searches:,} simulated searches")
    for label, sims, new in (("hierarchical, before (point estimate, 8 studies a size)", 8, False),
                             ("hierarchical, before (point estimate, 20 studies a size)", 20, False),
                             ("hierarchical, now (sequential test, batches of 20, at most 3)", 20, True)):
        r = hierarchical(a.searches, a.threshold, sims, new, a.seed)
        print(f"{label}: {r['underpowered']:.3f} (upper 95% {r['upper95']:.3f}); {r['spent']:.1f} fits a search; "
              f"chosen / true 80% size {r['chosen_over_threshold']:.2f} "
              f"(90th pct {r['chosen_over_threshold_q90']:.2f})")
    for label, new in (("precision, before (Wilson re-checked every 40 subjects, point estimate)", False),
                       ("precision, now (sequential test, 10 looks)", True)):
        r = precision_search(a.searches, a.trials_threshold, a.assurance, new, a.seed)
        print(f"{label}: {r['underpowered']:.3f} (upper 95% {r['upper95']:.3f}); {r['spent']:.0f} subjects a "
              f"search; chosen / true {a.assurance:g} trials {r['chosen_over_threshold']:.2f} "
              f"(90th pct {r['chosen_over_threshold_q90']:.2f})")
    print(f"({time.perf_counter() - start:.0f} s; surrogate curves: power 80% at {a.threshold:g} units, assurance "
          f"{a.assurance:g} at {a.trials_threshold:g} trials)")


if __name__ == "__main__":
    main()
