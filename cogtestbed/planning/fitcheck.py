"""``plan --fit hierarchical``: the design searched with the hierarchical fit the researcher reports.

A hierarchical fit (PyMC through nutpie, :func:`cogtestbed.inference.hierarchical.fit_hierarchical`)
of one simulated study takes seconds to minutes where a per-subject MLE takes milliseconds, so the
plan first searches designs with the per-subject MLE's t-test (hundreds of studies per design) and
then searches the size axis (subjects) with the hierarchical test, cheaply (:func:`search_hierarchical`):

* **start** at the MLE's chosen size and fit ``sims`` (default :data:`HIERARCHICAL_SIMS`) fresh
  studies there (seeds of their own: ``seed +`` :data:`FIT_SEED_OFFSET`; each size's study ``k``
  has the same seed, so sizes share their random numbers), simulated exactly as the power study
  simulates them and fitted hierarchically, as ``cogtestbed fit MODEL RUN/trials.parquet --method
  hierarchical`` fits a run.  The test is the power study's hierarchical test
  (:func:`cogtestbed.studies.model_studies.task_power`): the effect's contrast of the
  population-level parameters, rejected when its central (1 − α) posterior interval excludes 0;
* **step** (:func:`step_size`): below the target power, up; above it by more than
  :data:`DOWN_MARGIN_Z` binomial SEs (at the target, ``sims`` studies), down; by the normal
  approximation in √N (power ``Φ(δ√N − z_{α/2})``: ``√N' = √N · (z_{α/2} + z_target) / (z_{α/2} +
  Φ⁻¹(power))``, at most a factor :data:`MAX_STEP_FACTOR` in N), never onto a size tried; a step
  past a size that already brackets the answer (a failing size below a passing one) bisects the
  bracket instead; at most :data:`MAX_STEPS` steps;
* **decide** each size by a sequential test (:mod:`~cogtestbed.planning.kinds.power.sizetest`):
  batches of ``sims`` studies, at most :data:`SIZE_LOOKS`; the size passes when the one-sided lower
  Clopper–Pearson bound of its power (at 1 − 0.05/:data:`SIZE_LOOKS`) reaches the target, fails when
  the upper bound falls below it or when it is still undecided after the last batch.  A failing size
  steps up, a passing one down (as above, from its measured power);
* **choose** the smallest size that passed (none: the largest tried, and the plan says the target was
  not reached).  The plan's design, cost and power are then the hierarchical ones.  Measured at the
  chosen size: the test's power, the bias of the posterior median against the effect it estimates
  (the contrast at the population medians, :func:`population_effect`) and the interval's coverage,
  each with its Monte-Carlo SE.

The test makes the choice safe, not cheap: simulated on a known power curve
(``benchmarks/studies/size_search_error.py``), the chosen size's true power is below the target in
0.7 % of searches (accepting a size on its point estimate instead: 29 % with 8 studies a
size, 36 % with 20), at the price of a size ~1.4 × the true 80 % size on average and ~4 × the fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
from cogtestbed.planning.kinds.power.sizetest import SizeTest
from cogtestbed.planning.space import MAX_EXTENDED_SIZE
from cogtestbed.studies.study_kinds import PowerStudy

#: Fresh studies ``plan --fit hierarchical`` fits per batch at a size it tries, by default (each a PyMC fit).
HIERARCHICAL_SIMS = 20
#: Batches a size may get before its sequential test decides (:mod:`~cogtestbed.planning.kinds.power.sizetest`).
SIZE_LOOKS = 3
#: Added to the study's seed for the hierarchical search's studies (seeds neither the MLE's search
#: nor the recovery's fresh studies used).
FIT_SEED_OFFSET = 9_999_991
#: Posterior draws, tuning steps and chains of each hierarchical fit of the search (the plan's study defaults;
#: the run's own ``cogtestbed fit --method hierarchical`` defaults to more).
FIT_DRAWS, FIT_TUNE, FIT_CHAINS = 500, 500, 2
#: Most steps the size search takes after the MLE's size (so at most ``MAX_STEPS + 1`` sizes, each
#: ``--fit-sims`` hierarchical fits): the project's choice, a bracket and two refinements.
MAX_STEPS = 3
#: A size whose measured power exceeds the target by this many binomial SEs (at the target, with
#: ``--fit-sims`` studies: 0.09 at 0.8 and 20) is stepped down; nearer the target the search stops.
DOWN_MARGIN_Z = 1.0
#: Most one step changes the size by: a factor of 2 up or 1/2 down (the normal step from a power
#: of 0 or 1 measured on few studies is unbounded).
MAX_STEP_FACTOR = 2.0
#: Smallest and largest size the search tries (a hierarchical fit needs several subjects; the fixed
#: search's own limit above).
MIN_SIZE, MAX_SIZE = 3, MAX_EXTENDED_SIZE


def population_effect(spec: PowerStudy, model: Any) -> float:
    """The effect at the population medians the power study simulates (the estimand of the
    hierarchical test's population contrast, less its value before the effect; two groups: the
    second group's minus the first's)."""
    from cogtestbed.studies.model_studies import population_medians, population_null

    assert spec.effect is not None
    medians = population_medians(spec, model)
    shifted = float(np.asarray(model.contrast(spec.effect, {k: np.array([v]) for k, v in medians.items()}))[0])
    # one group: against its value before the effect, as the test; two groups: the first group's
    return shifted - population_null(spec, model)


@dataclass
class HierarchicalSearch:
    """The outcome of :func:`search_hierarchical`: the chosen design, its hierarchical power, every
    size tried (``tried``: size → power estimate) and ``plan.json``'s ``fit_check`` (``check``)."""

    point: Any
    estimate: Any
    tried: dict[int, Any]
    #: the study as the search simulated and fitted it (method hierarchical, its seed and draws)
    spec: Any = None
    check: dict[str, Any] = field(default_factory=dict)


def step_size(n: int, power: float, sims: int, target: float, level: float, tried: Mapping[int, float],
              top: int = MAX_SIZE) -> int | None:
    """The next size the search tries after measuring ``power`` on ``sims`` studies at size ``n``
    (``tried``: every size measured so far and its power, ``n`` included), or None to stop: at the
    target within :data:`DOWN_MARGIN_Z` SEs, no untried size left between a failing and a passing
    size, or a step past ``top`` (the module docstring's rule)."""
    from scipy import stats

    margin = DOWN_MARGIN_Z * math.sqrt(target * (1 - target) / sims)
    up = power < target
    if not up and power < target + margin:
        return None
    z_a = float(stats.norm.isf(level / 2))
    now = z_a + float(stats.norm.ppf(min(max(power, 0.5 / sims), 1 - 0.5 / sims)))  # δ√N at the measured power
    want = z_a + float(stats.norm.ppf(target))
    factor = min(MAX_STEP_FACTOR, max(1 / MAX_STEP_FACTOR, (want / now) ** 2 if now > 0 else MAX_STEP_FACTOR))
    if up:  # above n, below the smallest size that reached the target
        bound = min((m for m, pw in tried.items() if pw >= target and m > n), default=None)
        lo, hi = n + 1, top if bound is None else bound - 1
        proposal = math.ceil(n * factor)
    else:  # below n, above the largest size that fell short
        bound = max((m for m, pw in tried.items() if pw < target and m < n), default=None)
        lo, hi = MIN_SIZE if bound is None else bound + 1, n - 1
        proposal = math.floor(n * factor)
    lo, hi = max(lo, MIN_SIZE), min(hi, top)
    if lo > hi:
        return None
    if bound is not None and not lo <= proposal <= hi:  # the step overshoots a size that brackets the answer
        proposal = (lo + hi) // 2  # bisect the bracket instead
    nxt = min(max(proposal, lo), hi)
    return None if nxt in tried else nxt


@dataclass
class Decided:
    """A size's power estimate with its sequential test's decision (:func:`measure_decided`)."""

    estimate: Any
    passed: bool

    @property
    def rate(self) -> float:
        return float(self.estimate.rate)

    @property
    def hits(self) -> int:
        return int(self.estimate.hits)

    @property
    def sims(self) -> int:
        return int(self.estimate.sims)

    @property
    def mc_se(self) -> float:
        return float(self.estimate.mc_se)


def size_test(target: float) -> SizeTest:
    """The hierarchical search's per-size test: at most :data:`SIZE_LOOKS` batches of ``--fit-sims`` studies."""
    return SizeTest(target, SIZE_LOOKS)


def measure_decided(measure: Callable[[int, int], Any], n: int, sims: int, test: SizeTest) -> Decided:
    """Size ``n``'s power measured in batches of ``sims`` studies (``measure(n, k)``: the estimate on the
    first k studies) until ``test`` decides."""
    for look in range(1, test.looks + 1):
        est = measure(n, look * sims)
        passed = test.decide(int(est.hits), int(est.sims), look == test.looks, test.looks * sims)
        if passed is not None:
            return Decided(est, passed)
    raise AssertionError("unreachable: the last look decides")


def search_sizes(measure: Callable[..., Any], start: int, target: float, sims: int, level: float,
                 max_steps: int = MAX_STEPS, top: int = MAX_SIZE, test: SizeTest | None = None) -> dict[int, Any]:
    """Every size the search tries, in order, with its power estimate: from ``start``, at most
    ``max_steps`` steps of :func:`step_size` (``top``: no size above it, e.g. the largest affordable).
    With ``test`` (the plan's search), ``measure(n, k)`` gives the estimate on k studies and each size is
    measured until ``test`` decides (:func:`measure_decided`; a size reaches the target only if it passes);
    without, ``measure(n)`` (an object with ``rate``, e.g.
    :class:`~cogtestbed.planning.kinds.power.power_sims.Estimate`)
    and the point estimate decides."""
    tried: dict[int, Any] = {}
    n: int | None = min(start, top)
    margin = math.sqrt(target * (1 - target) / sims)
    while n is not None:
        tried[n] = measure(n) if test is None else measure_decided(measure, n, sims, test)
        if len(tried) > max_steps:
            break
        reach = {m: _reaches(e, target) for m, e in tried.items()}
        # a failing size steps up as from a power at most one SE below the target; a passing one steps as measured
        power = tried[n].rate
        if test is not None:
            power = max(power, target) if reach[n] else min(power, target - margin)
        n = step_size(n, power, sims, target, level,
                      {m: (target if r else min(tried[m].rate, target - 1e-9)) for m, r in reach.items()}, top)
    return tried


def _reaches(e: Any, target: float) -> bool:
    passed = getattr(e, "passed", None)
    return bool(passed) if passed is not None else e.rate >= target


def choose_size(tried: Mapping[int, Any], target: float) -> tuple[int, bool]:
    """The smallest size tried that reaches ``target`` (its sequential test passed, or without one its
    measured power reaches it; and True), else the largest tried (and False)."""
    passing = [n for n, e in tried.items() if _reaches(e, target)]
    return (min(passing), True) if passing else (max(tried), False)


def search_hierarchical(spec: PowerStudy, exp: Any, point: Any, size_name: str, target: float,
                        sims: int = HIERARCHICAL_SIMS, workers: int = 1, max_steps: int = MAX_STEPS,
                        price: Callable[[Any], Any] | None = None, top: int = MAX_SIZE,
                        draws: int = FIT_DRAWS, tune: int = FIT_TUNE, chains: int = FIT_CHAINS) -> HierarchicalSearch:
    """The size axis searched with the hierarchical test from the MLE's chosen design ``point`` (the
    module docstring): ``sims`` fresh studies fitted hierarchically per size tried, none above ``top``
    (e.g. the largest within ``--max-cost``: :func:`affordable_top`); ``price`` (a design's
    :class:`~cogtestbed.planning.pricing.Cost`) prices each size tried.  ``check``: ``plan.json``'s
    ``fit_check``."""
    import dataclasses

    start = time.perf_counter()
    hier = spec.model_copy(update={"method": "hierarchical", "seed": spec.seed + FIT_SEED_OFFSET,
                                   "draws": draws, "tune": tune, "chains": chains})
    evaluator = PowerEvaluator(hier, workers, "hierarchical search: fits of fresh studies at")

    def at(n: int) -> Any:
        return dataclasses.replace(point, **{size_name: n})

    costs = {}
    try:
        tried = search_sizes(lambda n, k: evaluator.ensure(at(n), k), getattr(point, size_name), target, sims,
                             spec.level, max_steps, top, size_test(target))
    except BaseException:
        evaluator.close(abort=True)
        raise
    evaluator.close()
    size, reached = choose_size(tried, target)
    if price is not None:
        costs = {n: price(at(n)) for n in tried}
    check = summarise(evaluator.table(at(size)), tried[size].hits, tried[size].sims,
                      population_effect(spec, exp.model(spec.models[0])), spec.level, spec.effect_size,
                      time.perf_counter() - start, draws, tune, chains)
    check.update(search_record(tried, costs, size, reached, target, sims, size_name, getattr(point, size_name),
                               max_steps, top))
    return HierarchicalSearch(at(size), tried[size], tried, hier, check)


def affordable_top(size: int, dollars: float | None, max_cost: float | None) -> int:
    """The largest size within ``max_cost`` dollars when ``size`` costs ``dollars`` (costs are linear
    in sessions at a fixed trial count), at most :data:`MAX_SIZE`; :data:`MAX_SIZE` without a cap or
    a price."""
    if max_cost is None or not dollars:
        return MAX_SIZE
    return max(MIN_SIZE, min(MAX_SIZE, math.floor(max_cost / (dollars / size) + 1e-9)))


def search_record(tried: Mapping[int, Any], costs: Mapping[int, Any], size: int, reached: bool, target: float,
                  sims: int, size_name: str, start: int, max_steps: int, top: int) -> dict[str, Any]:
    """The search's part of ``fit_check``: each size tried in order with its power ± MC SE (and
    cost), the choice, the hierarchical fits run, and what limits the choice."""
    se_target = math.sqrt(target * (1 - target) / sims)
    from cogtestbed.formatting import wilson

    rows = [{size_name: n, "power": e.rate, "power_mc_se": e.mc_se, "power_interval": list(wilson(e.hits, e.sims)),
             "studies": e.sims, **({} if n not in costs else {"calls": costs[n].calls, "dollars": costs[n].dollars})}
            for n, e in tried.items()]
    why = (f"the smallest {size_name} tried whose sequential test showed power >= {target:g} (its one-sided "
           "lower bound reaches it)" if reached else
           f"no size tried reaches power {target:g} with the hierarchical fit (at most {max_steps} steps"
           + (f", {size_name} up to {top} within --max-cost" if top < MAX_SIZE else "")
           + "): the largest tried is shown, and its power is below the target")
    return {"search": rows, "size_name": size_name, "start_size": start, "chosen_size": size, "reached": reached,
            "fits": int(sum(e.sims for e in tried.values())), "max_steps": max_steps, "chosen_why": why,
            "note": (f"the design searched with the hierarchical fit: from the per-subject MLE's choice ({start} "
                     f"{size_name}), fresh studies fitted hierarchically (each a PyMC fit) in batches of {sims} "
                     f"per size tried, at most {SIZE_LOOKS}, and the population effect's posterior interval tested; "
                     f"{size_test(target).words()}; sizes stepped by the normal approximation "
                     f"in sqrt(N) from each measured power (one batch: power ± {se_target:.2f} at {target:g})")}


def summarise(rows: Any, hits: int, n: int, estimand: float, level: float, effect_size: float,
              seconds: float, draws: int = FIT_DRAWS, tune: int = FIT_TUNE, chains: int = FIT_CHAINS) -> dict[str, Any]:
    """The hierarchical test's figures at one size from its studies' rows (estimate, lo, hi per study)."""
    est = rows["estimate"].to_numpy(float)
    ok = np.isfinite(est)
    power = hits / n if n else float("nan")
    bias = float(np.mean(est[ok]) - estimand) if ok.any() else None
    bias_se = float(np.std(est[ok], ddof=1) / math.sqrt(ok.sum())) if ok.sum() > 1 else None
    has = rows["lo"].notna() & rows["hi"].notna()
    covered = ((rows["lo"] <= estimand) & (estimand <= rows["hi"]))[has]
    cov = float(covered.mean()) if has.any() else None
    return {"fit": "hierarchical", "test": str(rows["test"].iloc[0]) if len(rows) else None, "studies": int(n),
            "power": power, "power_mc_se": math.sqrt(power * (1 - power) / n) if n else None,
            "estimand": estimand, "estimand_kind": "the effect at the population medians",
            "effect_bias": bias, "effect_bias_mc_se": bias_se,
            "bias_share": None if bias is None or not effect_size else abs(bias) / abs(effect_size),
            "coverage": cov, "coverage_mc_se": None if cov is None else math.sqrt(cov * (1 - cov) / int(has.sum())),
            "coverage_level": 1 - level, "draws": draws, "tune": tune, "chains": chains,
            "seconds": round(seconds, 2)}


def fit_check_lines(check: dict[str, Any]) -> list[str]:
    """The hierarchical search in lines for the terminal, report.md and report.html: the sizes tried
    with their power, the choice, then the chosen size's power, bias and coverage, then the note."""
    from cogtestbed.formatting import num

    def pm(p: float, se: float | None, interval: Any = None) -> str:
        text = f"{p:.2f} ± {se:.2f}" if se is not None else f"{p:.2f}"
        return text if interval is None else f"{text} [{interval[0]:.2f}, {interval[1]:.2f}]"

    name = check.get("size_name", "units")
    rows = check.get("search") or []
    out = []
    if rows:
        sizes = " -> ".join(str(r[name]) for r in rows)
        powers = ", ".join(pm(r["power"], r["power_mc_se"], r.get("power_interval")) for r in rows)
        out.append(f"hierarchical search (--fit hierarchical): {name} tried {sizes}: power {powers} (± MC SE "
                   f"[95% Wilson interval]; {'/'.join(str(r['studies']) for r in rows)} fresh studies, "
                   f"{check['fits']} hierarchical fits, {check['seconds']:.0f} s); chosen {check['chosen_size']} "
                   f"{name}, {check['chosen_why']}")
    bias = "no estimate" if check.get("effect_bias") is None else (
        f"{num(check['effect_bias'])} ± {num(check.get('effect_bias_mc_se') or float('nan'))} against "
        f"{num(check['estimand'])}")
    cov = "-" if check.get("coverage") is None else (f"{check['coverage']:.2f} ± {check['coverage_mc_se']:.2f} "
                                                     f"(nominal {check['coverage_level']:.2f})")
    out.append(f"hierarchical fit at the chosen design ({check['studies']} fresh studies): power "
               f"{pm(check['power'], check.get('power_mc_se'))} (MC SE), effect bias {bias}, interval coverage {cov}")
    return [*out, f"  {check['note']}"]
