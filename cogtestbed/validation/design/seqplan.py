"""Group-sequential plans: the whole fit–test–stop procedure simulated with synthetic agents.

``cogtestbed plan … --looks K`` extends a fixed plan (:mod:`cogtestbed.validation.design.plan`) with a
group-sequential design (Jennison & Turnbull 2000, ch. 7): the run looks at its data after equal
shares ``n_k ≈ k/K · N`` of the size axis (subjects for a model target, runs for a metric or test
target), computes the *same* statistic the fixed plan's power study computes on the units finished
so far, and stops for efficacy when ``|Z_k| ≥ b_k`` (Lan–DeMets α-spending of α/2 per side,
:mod:`cogtestbed.validation.design.sequential`) or, with ``--futility``, for futility when the statistic
in the effect's direction falls below ``a_k`` (non-binding β-spending bounds).

The statistic: ``Z_k = sign(estimate) · Φ⁻¹(1 − p_k/2)`` from the fixed test's two-sided p-value
(the one-sample t-test on per-subject MLEs of the contrast; the Welch test of a metric difference;
the test a metrics function reports).  These Z are only approximately the canonical jointly normal
sequence the bounds assume: a t-test on few subjects at the first look, parameters near their bounds,
a test whose p-value has a resolution floor (a permutation p of 1/(B+1) caps ``|Z|``) all distort
it.  The bounds are therefore *not* trusted: the procedure is simulated exactly as the run executes it
(the same fitter and test at each look, lapses at the planned invalid rate) under the null and the
target effect, and its type-I error, power, stopping look, cost and estimate bias are measured; and
the efficacy bounds are *calibrated* on a simulated null (:mod:`cogtestbed.validation.design.seqsim`): the
spending function fixes their shape across looks, and one shift sets their level so that null studies
with their own seeds reject in the effect's direction at α/2 with futility obeyed (futility is then
binding).  The type-I error is measured on other null studies.

Simulation (:mod:`cogtestbed.validation.design.seqsim`): each subject is simulated and fitted once
(per-subject MLE fits are independent) and every look of every candidate maximum size is the t-test
on a prefix of the stored per-subject estimates; a replicate is extended only while some candidate
still runs it (with calibrated bounds every replicate is extended to the largest size instead, so
that the fixed test can be calibrated and measured on the same studies: the saving at equal type-I
error, :mod:`cogtestbed.validation.design.seqfair`). The candidate maximum sizes run from
:data:`MIN_FACTOR` to :data:`MAX_FACTOR` times the fixed plan's size; the chosen one minimises the
expected cost under the target effect subject to type-I error ≤ α (point estimate on fresh null
studies) and power ≥ target. Costs are linear in sessions at a fixed trial count, so candidates are
ranked by expected sessions and the chosen design's every look is then priced exactly with the
dry-run :class:`Pricer`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.timings import cpu_seconds
from cogtestbed.validation.design.seqfair import type1_check
from cogtestbed.validation.design.seqpaths import (  # the bounds and paths the simulation shares
    CONTINUE,
    EFFICACY,
    EFFICACY_OTHER,
    Boundaries,
    boundaries,
    first_units,
    z_from_p,
)
from cogtestbed.validation.design.sequential import Spending, check_spending
from cogtestbed.validation.studies.study_kinds import MetricPowerStudy, PlannedStudy, PowerStudy, StatTestStudy

#: Simulated sequential studies per hypothesis (target effect, null; as many calibration nulls) of
#: :func:`plan_sequential`; ``plan --looks`` takes as many as give its ``--mc-se`` at the target
#: power (:func:`default_sims`) unless ``--seq-sims`` says.
DEFAULT_SEQ_SIMS = 1000
#: The fewest simulated sequential studies per hypothesis ``plan --looks`` takes by default.
MIN_SEQ_SIMS = 100
#: The fewest simulated null studies a sequential plan calibrates its bounds on, and the fewest fresh
#: null studies its type-I error is measured on (1,000: an MC SE of 0.007 at α = .05; the level is
#: set by the α/2·N most extreme calibration paths, so 100–178 let 2–4 paths decide it).
MIN_NULL_SIMS = 1000
#: Bootstrap resamples of the calibration paths giving the MC error (SD) of the calibrated shift.
SHIFT_BOOTSTRAP = 200
#: The smallest maximum size considered, as a multiple of the fixed plan's size (calibrated bounds
#: can reach the target power below it).
MIN_FACTOR = 0.8
#: The largest maximum size considered, as a multiple of the fixed plan's size (group-sequential
#: designs need 1.0–1.3× the fixed size at their nominal level; calibrated bounds spend the level
#: nominal bounds with futility leave unspent: RW± chose 1.04–1.19×).
MAX_FACTOR = 1.25
#: Candidate maximum sizes lie on a grid of this share of the fixed plan's size (every size when that
#: step rounds to 1 unit, i.e. fixed sizes below 150; the fixed size itself is always a candidate):
#: neighbours 1 % apart cost 1 % apart and differ in power by Monte-Carlo noise only, while every
#: candidate's looks are prefixes each simulated path is tested at (1,279 runs: 47 candidates, not 577).
MAX_GRID_STEP = 0.01
#: Simulated statistic paths per hypothesis kept in plan.json for the report's plot.
PLOT_PATHS = 40
#: Most looks a plan may take.
MAX_LOOKS = 20


def check_looks(looks: int, spending: str) -> None:
    """Refuse a look count or spending function the design cannot use (one line)."""
    if not 2 <= looks <= MAX_LOOKS:
        raise InputError(f"--looks must be an integer from 2 to {MAX_LOOKS} (a sequential design looks at least "
                         f"twice), got {looks}")
    check_spending(spending)


def default_sims(power: float, mc_se: float) -> int:
    """Sequential studies per hypothesis giving the fixed plan's Monte-Carlo SE at the target power
    (``p(1 − p)/SE²``), at least :data:`MIN_SEQ_SIMS`."""
    return max(MIN_SEQ_SIMS, math.ceil(power * (1 - power) / mc_se ** 2))


def look_sizes(n_max: int, looks: int) -> tuple[int, ...]:
    """Units finished at each look: ``round(k/K · n_max)``, at least 2 and strictly increasing."""
    if n_max < 2 * looks:
        raise InputError(f"{looks} looks need a maximum size of at least {2 * looks} units, got {n_max}")
    return tuple(max(2, round(n_max * k / looks)) for k in range(1, looks + 1))


# ----------------------------------------------------------------------------- the null of each target
def null_spec(spec: PlannedStudy, null_agent: str | None = None) -> PlannedStudy:
    """The study under the null: effect 0 (model), both settings the first (metric difference), or
    the named null agent (a test: ``AGENT[:p=v,…]``, e.g. a coherent agent for a coherence test)."""
    if isinstance(spec, PowerStudy):
        return spec.model_copy(update={"effect_size": 0.0})
    if isinstance(spec, MetricPowerStudy):
        return spec.model_copy(update={"compare": (spec.compare[0], spec.compare[0])})
    if null_agent is None:
        raise InputError("a sequential plan of a test needs --null AGENT[:p=v,...]: the agent under which the test's "
                         "null holds (its type-I error is measured there)")
    from cogtestbed.parameters import parse_agent

    name, params = parse_agent(null_agent)
    return spec.model_copy(update={"agent": name, "params": params})


def direction(spec: PlannedStudy) -> float:
    """The effect's sign for a model target (+1/−1), 0 (two-sided) for a metric difference or a test."""
    if isinstance(spec, PowerStudy):
        return float(np.sign(spec.effect_size)) or 1.0
    return 0.0


# ----------------------------------------------------------------------------- operating characteristics
@dataclass
class Operating:
    """The simulated procedure under one hypothesis: rejections, stopping looks, units, estimates.
    ``reference``: the estimate a full-size study centres on (None: the mean of ``estimate_full``)."""

    rejected: np.ndarray  # bool per replicate
    stop_look: np.ndarray  # 0-based look of stopping per replicate
    units: np.ndarray  # units used per replicate
    estimate_stop: np.ndarray
    estimate_full: np.ndarray
    reference: float | None = None

    @property
    def sims(self) -> int:
        return int(self.rejected.size)

    @property
    def rate(self) -> float:
        return float(self.rejected.mean())

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(p * (1 - p) / self.sims)

    def stop_distribution(self, looks: int) -> list[float]:
        return [float(x) for x in np.bincount(self.stop_look, minlength=looks)[:looks] / self.sims]

    def summary(self, looks: int) -> dict[str, Any]:
        stop = self.estimate_stop[np.isfinite(self.estimate_stop)]
        full = self.estimate_full[np.isfinite(self.estimate_full)]
        ref = self.reference if self.reference is not None else (float(np.mean(full)) if full.size else None)
        at_stop = float(np.mean(stop)) if stop.size else None
        return {"rejection_rate": self.rate, "mc_se": self.mc_se, "sims": self.sims,
                "stop_look": self.stop_distribution(looks), "expected_units": float(self.units.mean()),
                "mean_estimate_at_stop": at_stop, "reference_estimate": ref,
                "stopping_bias": None if at_stop is None or ref is None else at_stop - ref}


def operate(bounds: Boundaries, z: np.ndarray, est: np.ndarray, columns: Sequence[int], dirn: float,
            effect_dirn: float | None, reference: float | None = None) -> Operating:
    """Run the stopping rule (:meth:`Boundaries.codes`) on simulated paths. ``columns[k]``: the path
    column of look k (read only while a path runs).  ``effect_dirn``: under the effect, only
    rejections in that direction count (None: every rejection)."""
    reps, looks = z.shape[0], len(bounds.sizes)
    rejected, alive = np.zeros(reps, bool), np.ones(reps, bool)
    stop = np.full(reps, looks - 1)
    counted = (EFFICACY,) if effect_dirn else (EFFICACY, EFFICACY_OTHER)
    for k in range(looks):
        codes = bounds.codes(k, z[:, columns[k]], dirn)
        done = alive & (codes != CONTINUE)
        rejected |= done & np.isin(codes, counted)
        stop[done] = k
        alive &= ~done
    units = np.asarray(bounds.sizes)[stop]
    est_stop = est[np.arange(reps), np.asarray(columns)[stop]]
    return Operating(rejected, stop, units, est_stop, est[:, columns[-1]], reference)


@dataclass
class Candidate:
    """One maximum size with its bounds and its operating characteristics under both hypotheses
    (``null``: measured on simulated null studies independent of any calibration)."""

    bounds: Boundaries
    null: Operating
    effect: Operating
    cost: list[Any] = field(default_factory=list)  # Cost of each look's cumulative design
    #: under the null with futility obeyed (its stopping looks and cost), where ``null`` ignores
    #: futility (the type-I error of non-binding futility); None: ``null`` obeys it
    null_obeyed: Operating | None = None

    def passes(self, level: float, target: float) -> bool:
        """Type-I error measured on fresh null studies at most α (its point estimate: no MC
        tolerance above α) and power at least the target."""
        return self.null.rate <= level and self.effect.rate >= target


@dataclass
class SequentialResult:
    chosen: Candidate | None
    candidates: list[Candidate]
    z_effect: np.ndarray  # paths at the chosen design's looks (for the report; NaN after a path stops)
    z_null: np.ndarray
    seconds: float
    sims: int
    calibration_sims: int = 0
    subjects: int = 0  # units simulated and fitted (model targets)
    cpu_seconds: float = 0.0
    #: (rejections, studies) of the fixed design's test on fresh null studies (None: not yet measured)
    fixed_null: tuple[int, int] | None = None
    #: the fair fixed comparator (:func:`~cogtestbed.validation.design.seqfair.fair_fixed`: the fixed
    #: test calibrated to α on the same calibration null studies, its type-I error on the same fresh
    #: null studies); None where uncalibrated (no calibration null studies)
    fair: dict[str, Any] | None = None


def simulate_hypothesis(spec: PlannedStudy, trials: int | None, runs: int, n_top: int, sizes: Sequence[int],
                        sims: int, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """``sims`` replicates' whole (Z, estimate) paths to ``n_top`` units, in a fork pool of ``workers``."""
    from cogtestbed.validation.design.seqsim import Simulator

    (paths,) = Simulator(trials, runs, n_top, tuple(sizes), sims, spec.seed, workers).run([(spec, 0, None)])
    return paths.z, paths.est


def candidate_maxima(lo: int, hi: int, fixed_size: int) -> list[int]:
    """The maximum sizes a sequential plan simulates: ``lo`` to ``hi`` in steps of
    :data:`MAX_GRID_STEP` of the fixed size (at least 1), with ``hi`` and the fixed size itself."""
    step = max(1, round(MAX_GRID_STEP * fixed_size))
    grid = set(range(lo, hi + 1, step)) | {hi} | ({fixed_size} if lo <= fixed_size <= hi else set())
    return sorted(grid)


def _candidates(maxima: Sequence[int], looks: int, spec: PlannedStudy, spending: Spending, futility: bool,
                target: float, calibrate: bool) -> list[Boundaries]:
    """Each maximum size's normal-theory bounds: with ``calibrate``, the shape at the planned
    fractions k/K shared by every maximum size (its level is set on the simulated null), else each
    computed at its own rounded look fractions."""
    if not calibrate:
        return [boundaries(look_sizes(m, looks), spec.level, spending, futility, target) for m in maxima]
    shape = boundaries(look_sizes(maxima[-1], looks), spec.level, spending, futility, target,
                       fractions=[k / looks for k in range(1, looks + 1)])
    return [Boundaries(look_sizes(m, looks), spending, spec.level, shape.efficacy, shape.futility) for m in maxima]


def plan_sequential(spec: PlannedStudy, fixed_size: int, trials: int | None, runs: int, looks: int,
                    spending: Spending, futility: bool, target: float, sims: int = DEFAULT_SEQ_SIMS,
                    workers: int = 1, null_agent: str | None = None, max_factor: float = MAX_FACTOR,
                    say: Callable[[str], None] | None = None, calibrate: bool = True,
                    min_factor: float = MIN_FACTOR, null_sims: int | None = None,
                    binding: bool = False) -> SequentialResult:
    """Simulate the sequential procedure at every maximum size from ``min_factor·fixed_size`` to
    ``max_factor·fixed_size`` and choose the one with the least expected units under the effect
    with power ≥ ``target``; its type-I error is measured on fresh null studies that choose nothing
    (issue 47: reported with its one-sided upper bound; with ``calibrate=False`` they also require ≤ α).

    ``sims`` studies are simulated under the effect; ``null_sims`` (default: at least
    :data:`MIN_NULL_SIMS`) fresh null studies measure the type-I error.  With ``calibrate`` (the
    default) each maximum size's efficacy bound in the effect's direction is shifted so that
    ``null_sims`` calibration null studies (their own seeds) reject in that direction at rate α/2 (α
    for an undirected statistic) with futility obeyed
    (:func:`~cogtestbed.validation.design.seqsim.calibrate_shift`; its MC error by bootstrap)."""
    import time

    from cogtestbed.validation.design.seqsim import Rule, Simulator

    start, cpu = time.perf_counter(), cpu_seconds()
    null_sims = null_sims if null_sims is not None else max(MIN_NULL_SIMS, sims)
    check_looks(looks, spending)
    lo = max(2 * looks, min(fixed_size, math.floor(min_factor * fixed_size)))
    n_top = max(lo, math.ceil(max_factor * fixed_size))
    maxima = candidate_maxima(lo, n_top, fixed_size)
    fixed_sizes = _fair_sizes(fixed_size, n_top, calibrate)
    all_sizes = tuple(sorted({n for m in maxima for n in look_sizes(m, looks)} | set(fixed_sizes)))
    col = {n: i for i, n in enumerate(all_sizes)}
    dirn = direction(spec)
    say = say or (lambda _m: None)
    say(f"sequential: {sims} simulated studies under the effect, {null_sims} fresh null studies"
        f"{_calibration_words(calibrate, null_sims)} up to {n_top} units, {looks} looks, {len(maxima)} maximum sizes")
    nominal = _candidates(maxima, looks, spec, spending, futility, target, calibrate)
    columns = tuple(tuple(col[n] for n in b.sizes) for b in nominal)
    sim = Simulator(trials, runs, n_top, all_sizes, sims, spec.seed, workers, width=max(2, lo // looks),
                    whole=bool(fixed_sizes))
    null = null_spec(spec, null_agent)
    nsim = dataclasses.replace(sim, sims=null_sims)
    typed = _type1_rule(binding)
    bounds, cal_z = _calibrate(nsim, null, nominal, columns, dirn, spec, futility, binding, calibrate)
    sim.label = "sequential plan: studies under the effect"
    (eff,) = sim.run([(spec, 0, Rule(tuple(bounds), columns, dirn))])
    nsim.label = "sequential plan: fresh null studies"
    (nul,) = nsim.run([(null, 0, Rule(tuple(typed(b) for b in bounds), columns, dirn))])
    sim.subjects += nsim.subjects
    cands = _scored(bounds, columns, eff, nul, dirn, typed, futility, binding)
    chosen = _chosen(cands, target, calibrate, spec.level)
    shown = chosen or cands[-1]
    cols = [col[n] for n in shown.bounds.sizes]
    fixed = _fixed_from_paths(spec, nul, col.get(fixed_size))
    fair = _fair(eff.z, cal_z, nul.z, [col[n] for n in fixed_sizes], fixed_sizes, dirn, spec.level, target)
    return SequentialResult(chosen, cands, eff.z[:, cols], nul.z[:, cols], time.perf_counter() - start,
                            sims + null_sims, null_sims if calibrate else 0, sim.subjects, cpu_seconds() - cpu,
                            fixed_null=fixed, fair=fair)


def _scored(bounds: Sequence[Boundaries], columns: Sequence[tuple[int, ...]], eff: Any, nul: Any, dirn: float,
            typed: Callable[[Boundaries], Boundaries], futility: bool, binding: bool) -> list[Candidate]:
    """Every maximum size's candidate: its bounds operated on the fresh null studies ``nul`` (as
    ``typed`` counts type-I errors) and on the studies under the effect ``eff``; with non-binding
    futility also the null studies obeying futility (``null_obeyed``)."""
    return [Candidate(b, operate(typed(b), nul.z, nul.est, cols, dirn, None, nul.reference),
                      operate(b, eff.z, eff.est, cols, dirn, dirn or None, eff.reference),
                      null_obeyed=None if binding or not futility else operate(b, nul.z, nul.est, cols, dirn, None,
                                                                               nul.reference))
            for b, cols in zip(bounds, columns, strict=True)]


def _chosen(cands: Sequence[Candidate], target: float, calibrate: bool, level: float) -> Candidate | None:
    """The candidate with the least expected units under the effect (then the smallest maximum) among
    those with power ≥ ``target``, or None.  Calibrated bounds (issue 47): the fresh null studies choose
    nothing, they measure the chosen maximum's type-I error (reported with its upper bound); nominal
    bounds have no calibration set, so there they guard (type-I error ≤ ``level``)."""
    passing = [c for c in cands if c.effect.rate >= target and (calibrate or c.null.rate <= level)]
    return min(passing, key=lambda c: (c.effect.units.mean(), c.bounds.sizes[-1])) if passing else None


def _fair_sizes(fixed_size: int, n_top: int, calibrate: bool) -> list[int]:
    """The sizes the fair fixed comparator is evaluated at (``--looks auto``'s grid), or none for
    uncalibrated bounds (no calibration null studies).  A model target's paths are then simulated
    whole (:attr:`~cogtestbed.validation.design.seqsim.Simulator.whole`: to the largest size, not only
    as far as the procedure goes), so that every path holds every size."""
    from cogtestbed.validation.design.seqfair import FIXED_MIN_FACTOR

    if not calibrate:
        return []
    return candidate_maxima(max(2, min(fixed_size, math.floor(FIXED_MIN_FACTOR * fixed_size))), n_top, fixed_size)


def _fair(eff_z: np.ndarray, cal_z: np.ndarray | None, nul_z: np.ndarray, cols: list[int], sizes: list[int],
          dirn: float, level: float, target: float) -> dict[str, Any] | None:
    """The fair fixed comparator on the plan's own paths: the fixed test calibrated to ``level`` (the
    sequential bounds' level) on the same calibration null studies, its type-I error measured on the
    same fresh null studies as the sequential design's; None where a path lacks a size."""
    from cogtestbed.validation.design.seqfair import fair_fixed

    if cal_z is None or not cols or not all(np.isfinite(z[:, cols]).all() for z in (eff_z, cal_z, nul_z)):
        return None
    fair = fair_fixed(eff_z[:, cols], cal_z[:, cols], nul_z[:, cols], sizes, dirn, level, target)
    fair["level_words"] = "alpha itself, the level the sequential bounds are calibrated to"
    if fair["chosen"] is not None:  # measured on the same fresh null studies as the sequential type-I
        fair["confirm_type1"] = fair["chosen"]["type1"]
    return fair


def _type1_rule(binding: bool) -> Callable[[Boundaries], Boundaries]:
    """The bounds whose rejections count as type-I errors: as they are (binding futility) or without
    futility (non-binding: a run may go on past a futility bound)."""
    return (lambda b: b) if binding else (lambda b: dataclasses.replace(b, futility=None))


def _calibrate(nsim: Any, null: PlannedStudy, nominal: Sequence[Boundaries], columns: Sequence[Sequence[int]],
               dirn: float, spec: PlannedStudy, futility: bool, binding: bool,
               calibrate: bool = True) -> tuple[list[Boundaries], np.ndarray | None]:
    """Each maximum size's bounds shifted to reject at α/2 (α undirected) in the effect's direction on
    ``nsim.sims`` calibration null studies (seed stream 1), futility obeyed only when ``binding``; and
    those studies' Z paths (the fair fixed comparator is calibrated on them too).  Without
    ``calibrate``: the nominal bounds and no paths."""
    from cogtestbed.validation.design.seqsim import Rule, null_scores

    if not calibrate:
        return list(nominal), None
    typed = _type1_rule(binding)
    nsim.label = "sequential plan: calibration null studies"
    (cal,) = nsim.run([(null, 1, Rule(tuple(typed(b) for b in nominal), tuple(map(tuple, columns)), dirn,
                                     calibrating=True))])
    side = spec.level / 2 if dirn else spec.level
    info = {"side_level": side, "null_sims": nsim.sims, "seed_stream": 1, "method": "simulated calibration",
            "futility": ("binding" if binding else "non-binding") if futility else None}
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 40_961]))
    return [_no_crossing(b.with_shift(*_shift_and_error(null_scores(typed(b), cal.z, cols, dirn), side, info, rng)))
            for b, cols in zip(nominal, columns, strict=True)], cal.z


def _no_crossing(b: Boundaries) -> Boundaries:
    """``b`` with each futility bound at most its look's efficacy bound (a shift down may cross them)."""
    if b.futility is None:
        return b
    return dataclasses.replace(b, futility=tuple(min(a, e) for a, e in zip(b.futility, b.efficacy, strict=True)))


def _calibration_words(calibrate: bool, null_sims: int) -> str:
    return f" and {null_sims} calibration null studies" if calibrate else ""


def _shift_and_error(scores: np.ndarray, side: float, info: Mapping[str, Any],
                     rng: np.random.Generator) -> tuple[float, dict[str, Any]]:
    """The calibrated shift (:func:`~cogtestbed.validation.design.seqsim.calibrate_shift`) and its MC
    error: the SD of the shift over :data:`SHIFT_BOOTSTRAP` bootstrap resamples of the calibration paths."""
    from cogtestbed.validation.design.seqsim import calibrate_shift

    shift = calibrate_shift(scores, side)
    boot = [calibrate_shift(scores[rng.integers(0, scores.size, scores.size)], side) for _ in range(SHIFT_BOOTSTRAP)]
    return shift, {**info, "shift_mc_error": round(float(np.std(boot, ddof=1)), 6)}


def _fixed_from_paths(spec: PlannedStudy, nul: Any, column: int | None) -> tuple[int, int] | None:
    """(rejections, studies) of the fixed design's own test at its size on the fresh null paths, where
    every path holds that size (whole paths: metric and test targets, and model targets whose paths
    are simulated whole for the fair comparator); None otherwise (paths that stop where the procedure
    stops: the fixed design's null is then simulated by the fixed plan)."""
    if column is None:
        return None
    z = nul.z[:, column]
    if not np.isfinite(z).all():
        return None
    crit = float(stats.norm.isf(spec.level / 2))
    return int(np.sum(np.abs(z) >= crit)), int(z.size)


# ----------------------------------------------------------------------------- prices and plan.json
def price_looks(candidate: Candidate, spec: PlannedStudy, pricer: Any, exp: Any, point: Any, size_name: str) -> None:
    """Each look's cumulative design priced with the dry run (``run --dry-run``'s code)."""
    from cogtestbed.progress import beat, tick
    from cogtestbed.validation.design.space import sessions_per_llm
    from cogtestbed.validation.studies.study_data import design_for_trials

    design = design_for_trials(exp, point.trials, spec.design)
    candidate.cost = []
    hb = beat()
    if hb is not None:
        hb.phase("sequential plan: pricing each look (dry run)", len(candidate.bounds.sizes))
    for n in candidate.bounds.sizes:
        at = type(point)(**{**point.as_dict(), size_name: n})
        candidate.cost.append(pricer.exact(design, sessions_per_llm(spec, at)))
        tick()


def price_ahead(pricer: Any, exp: Any, spec: PlannedStudy, point: Any, size_name: str, res: SequentialResult,
                fair: dict[str, Any] | None, workers: int) -> None:
    """Render the chosen design's looks and the fair fixed comparator's size (the prices
    :func:`price_looks` and :func:`fair_payload` then read) side by side on ``workers`` processes
    (:meth:`~cogtestbed.validation.design.pricing.Pricer.price_all`): the same dry runs, each once."""
    from cogtestbed.validation.design.space import sessions_per_llm
    from cogtestbed.validation.studies.study_data import design_for_trials

    if res.chosen is None:
        return
    design = design_for_trials(exp, point.trials, spec.design)
    sizes = [*res.chosen.bounds.sizes, *([fair["chosen"]["size"]] if fair and fair.get("chosen") else [])]
    items = [(design, sessions_per_llm(spec, type(point)(**{**point.as_dict(), size_name: n}))) for n in sizes]
    pricer.price_all(items, workers, "sequential plan: pricing each look and the fixed comparator (dry run)")


def expected(costs: Sequence[Any], stop: Sequence[float], attr: str) -> float | None:
    """Σ_k P(stop at k)·(look k's cumulative ``attr``); None when a look is unpriced."""
    from cogtestbed.validation.design.pricing import money
    values = [getattr(c, attr) if attr != "key" else money(c) for c in costs]
    if any(v is None for v in values):
        return None
    return float(sum(p * v for p, v in zip(stop, values, strict=True)))


def sequential_payload(res: SequentialResult, spec: PlannedStudy, fixed_cost: Any, size_name: str,
                       futility: bool, binding: bool = False) -> dict[str, Any]:
    """The ``sequential`` section of ``plan.json``: the design, its simulated operating
    characteristics under the null and the target effect, its costs beside the fixed design's.
    ``binding``: the type-I error obeys futility stops (else it ignores them: non-binding)."""
    from cogtestbed.validation.design.pricing import money
    cand = res.chosen
    if cand is None:
        best = max(res.candidates, key=lambda c: c.effect.rate)
        return {"chosen": None, "reason": (
            f"no maximum size up to {best.bounds.sizes[-1]} {size_name} reaches power {best.effect.rate:.3f} with "
            f"type-I error {best.null.rate:.3f} (target power and type-I at most alpha)"),
            "seconds": round(res.seconds, 2), "simulations": res.sims}
    k = len(cand.bounds.sizes)
    obeyed = cand.null_obeyed or cand.null
    stop1, stop0 = cand.effect.stop_distribution(k), obeyed.stop_distribution(k)
    looks = []
    for i, c in enumerate(cand.cost):
        looks.append({"look": i + 1, size_name: cand.bounds.sizes[i], "efficacy": cand.bounds.efficacy[i],
                      "futility": None if cand.bounds.futility is None else cand.bounds.futility[i],
                      "calls": c.calls, "prompt_tokens": c.prompt_tokens, "dollars": c.dollars,
                      "p_stop_effect": stop1[i], "p_stop_null": stop0[i]})
    exp_key = expected(cand.cost, stop1, "key")
    fixed_key = money(fixed_cost)
    out: dict[str, Any] = {
        "design": {**cand.bounds.as_dict(), "size_axis": size_name, "futility_rule": futility,
                   "futility_binding": bool(futility and binding), "direction": direction(spec),
                   "statistic": statistic_name(spec)},
        "looks": looks,
        "null": {**obeyed.summary(k), "rejection_rate": cand.null.rate, "mc_se": cand.null.mc_se,
                 "type1_check": type1_check(int(cand.null.rejected.sum()), cand.null.sims, spec.level),
                 "type1_futility": None if not futility else (
                     "futility stops obeyed (binding futility)" if binding else
                     "futility stops ignored (non-binding futility: a run may go on past a futility bound)")},
        "effect": cand.effect.summary(k),
        "expected": {
            "effect": {"calls": expected(cand.cost, stop1, "calls"), "prompt_tokens": expected(cand.cost, stop1,
                                                                                               "prompt_tokens"),
                       "dollars": expected(cand.cost, stop1, "dollars"), "cost_key": exp_key},
            "null": {"calls": expected(cand.cost, stop0, "calls"), "dollars": expected(cand.cost, stop0, "dollars"),
                     "cost_key": expected(cand.cost, stop0, "key")}},
        "maximum": {"calls": cand.cost[-1].calls, "prompt_tokens": cand.cost[-1].prompt_tokens,
                    "dollars": cand.cost[-1].dollars, "cost_key": money(cand.cost[-1])},
        "fixed": {"calls": fixed_cost.calls, "prompt_tokens": fixed_cost.prompt_tokens, "dollars": fixed_cost.dollars,
                  "cost_key": fixed_key},
        "saving": {"cost_key": None if exp_key is None else fixed_key - exp_key,
                   "percent": None if exp_key is None or not fixed_key else 100 * (1 - exp_key / fixed_key),
                   **comparison(cand.null.rate, cand.null.sims, res.fixed_null)},
        "candidates": [{"max_" + size_name: c.bounds.sizes[-1], "power": c.effect.rate, "type1": c.null.rate,
                        "expected_units_effect": float(c.effect.units.mean()),
                        "expected_units_null": float((c.null_obeyed or c.null).units.mean())}
                       for c in res.candidates],
        "seconds": round(res.seconds, 2), "cpu_seconds": round(res.cpu_seconds, 2), "simulations": res.sims,
        "calibration_simulations": res.calibration_sims, "units_simulated": res.subjects,
        "note": ("Z_k = sign(estimate)·Φ⁻¹(1 − p_k/2) from the fixed plan's test on the units finished at look k; "
                 "it is only approximately normal across looks (small first looks, bounded parameters, "
                 "p-value resolution floors), so the efficacy bounds' level is set on simulated null studies "
                 + ("(futility obeyed: binding) " if binding else "(futility ignored: non-binding) ")
                 + "and the error rates above are the simulated procedure's, measured on other null studies, "
                 "not the bounds' nominal ones"),
    }
    return out


def _power_statistic(spec: PowerStudy) -> dict[str, Any]:
    """A model-effect plan's look statistic: the one-sample test of the effect on its scale against
    its value before the effect (``null``, ``scale``: what a run's looks subtract and transform)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.model_studies import effect_scale, one_sample_null, one_sample_test_name

    assert spec.effect is not None
    model = get_experiment(spec.experiment).model(spec.models[0])
    return {"kind": "power", "model": spec.models[0], "effect": spec.effect, "effect_size": spec.effect_size,
            "test": one_sample_test_name(spec, model), "lapse_fit": spec.lapse_fit,
            "scale": effect_scale(model, spec.effect), "null": one_sample_null(spec, model)}


def statistic_name(spec: PlannedStudy) -> dict[str, Any]:
    """What the run computes at each look (read back by ``cogtestbed looks``)."""
    if isinstance(spec, PowerStudy):
        return _power_statistic(spec)
    if isinstance(spec, MetricPowerStudy):
        return {"kind": "metric-power", "metric": spec.metric, "test": "difference test of the fixed plan",
                "metric_options": dict(spec.metric_options)}
    assert isinstance(spec, StatTestStudy)
    return {"kind": spec.kind, "test": spec.test, "metric_options": dict(spec.metric_options)}


def _bounds_lines(d: Mapping[str, Any]) -> list[str]:
    """How the bounds were set (analytic or simulated calibration) and the futility rule."""
    cal, out = d.get("calibration"), []
    if cal is None:
        out.append("  analytic bounds (normal theory: the spending function's bounds, not calibrated)")
    elif cal.get("method") == "analytic bounds":
        out.append(f"  analytic bounds (normal theory, the spending function's bounds at k/K): {cal['null_sims']} "
                   f"calibration null studies reject at {cal['nominal_rate']:.3f} ± {cal['nominal_rate_mc_se']:.3f} "
                   f"in the effect's direction, within 2 MC SE of {cal['side_level']:.3f}")
    else:
        err = f" (MC error ± {cal['shift_mc_error']:.3f})" if cal.get("shift_mc_error") is not None else ""
        other = (f" (against it by {cal['shift_other']:+.3f} to reject at {cal['side_level']:.3f} there too)"
                 if cal.get("shift_other") is not None else "")
        out.append(f"  simulated calibration on {cal['null_sims']} null studies: the spending function's bounds "
                   f"moved by {cal['shift']:+.3f}{err} to reject at {cal['side_level']:.3f} in the effect's direction"
                   + other
                   + {"binding": " with futility obeyed (binding)",
                      "non-binding": " ignoring futility (non-binding)"}.get(str(cal.get("futility")), ""))
    if d["futility"] is not None:
        rule = ("binding: type-I error computed with futility stops obeyed" if d.get("futility_binding") else
                "non-binding: type-I error computed ignoring futility stops, so a run may go on past one")
        out.append("  futility bounds " + " ".join(f"{a:.2f}" for a in d["futility"]) + f" ({rule})")
    return out


def sequential_lines(seq: Mapping[str, Any], size_name: str) -> list[str]:
    """The text report of a sequential plan (one line each)."""
    if seq.get("chosen", True) is None:
        return [f"sequential: {seq['reason']}"]
    d, e, n = seq["design"], seq["effect"], seq["null"]
    fut = ", futility" if d["futility"] is not None else ""
    bounds = " ".join(f"{b:.2f}" for b in d["efficacy"])
    out = [f"sequential: {d['looks']} looks at {', '.join(str(s) for s in d['sizes'])} {size_name} "
           f"({d['spending']}{fut}); {'Z·d' if d.get('direction') else '|Z|'} bounds {bounds}"]
    out += list(seq.get("auto", {}).get("lines", []))  # what plan --looks auto searched
    if "auto" not in seq:  # --looks auto's lines name them already
        out += [f"  model: {line}" for line in seq.get("assumptions", [])]
    out += _bounds_lines(d)
    check = n.get("type1_check")
    accept = (f"one-sided {100 * check['confidence']:.0f}% upper bound {check['upper']:.3f}" if check else
              "accepted only at most alpha")
    out.append(f"  power {e['rejection_rate']:.3f} ± {e['mc_se']:.3f} ({e['sims']} studies under the effect), "
               f"type-I {n['rejection_rate']:.3f} ± {n['mc_se']:.3f} ({n['sims']} fresh null studies; {accept})")
    if seq.get("saving", {}).get("statement"):
        out.append("  " + seq["saving"]["statement"])
    out.append("  stops at look (effect): " + " ".join(f"{p:.2f}" for p in e["stop_look"])
               + "; (null): " + " ".join(f"{p:.2f}" for p in n["stop_look"]))
    ex, fx, mx = seq["expected"]["effect"], seq["fixed"], seq["maximum"]
    if ex["dollars"] is not None and fx["dollars"] is not None:
        out.append(f"  expected ${ex['dollars']:.4f} under the effect (${seq['expected']['null']['dollars']:.4f} "
                   f"under the null, at most ${mx['dollars']:.4f}) vs {fx.get('label', 'fixed')} "
                   f"${fx['dollars']:.4f}: saving {seq['saving']['percent']:.1f}%")
    else:
        out.append(f"  expected {ex['cost_key']:,.0f} tokens under the effect vs {fx.get('label', 'fixed')} "
                   f"{fx['cost_key']:,.0f}: saving {seq['saving']['percent']:.1f}%")
    out.append(f"  expected calls {ex['calls']:,.0f} (max {mx['calls']:,}); stopping bias of the estimate "
               f"{e['stopping_bias'] if e['stopping_bias'] is not None else float('nan'):+.4f}")
    return out


def attach_sequential(payload: dict[str, Any], result: Any, pricer: Any, exp: Any, looks: int, spending: Spending,
                      futility: bool, sims: int, workers: int, null_agent: str | None,
                      say: Callable[[str], None] | None = None, null_sims: int | None = None,
                      binding: bool = False) -> dict[str, Any]:
    """Design the sequential version of a fixed plan's chosen design and record it in the payload
    (``payload["sequential"]``; the run section then executes it: its maximum size and its looks).
    ``binding``: futility stops count in the type-I error (else non-binding: they are ignored)."""
    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    res = plan_sequential(spec, getattr(point, size_name), point.trials, point.runs, looks, spending, futility,
                          result.target, sims=sims, workers=workers, null_agent=null_agent, say=say,
                          null_sims=null_sims, binding=binding)
    if res.chosen is not None:
        price_ahead(pricer, exp, spec, point, size_name, res, res.fair, workers)
        price_looks(res.chosen, spec, pricer, exp, point, size_name)
        if res.fixed_null is None:  # paths without the fixed size: its own test on fresh null studies
            res.fixed_null = fixed_type1(spec, point, null_agent, workers, null_sims or MIN_NULL_SIMS)
    if res.fair is not None:  # the saving at equal type-I error (the nominal design's beside it)
        seq = fair_payload(result, res, res.fair, pricer, exp, futility, binding)
        seq["fair_fixed"] = res.fair
    else:
        seq = sequential_payload(res, spec, result.chosen.cost, size_name, futility, binding)
        why = ("the bounds are not calibrated on simulated null studies" if not res.calibration_sims else
               "the simulated paths do not hold every fixed size")
        if "saving" in seq:
            seq["saving"]["comparator"] = "fixed plan's design (its nominal test)"
            seq["saving"]["statement"] = (f"saving stated against the fixed plan's design with its nominal test, not "
                                          f"at equal type-I error ({why}): " + seq["saving"].get("statement", ""))
    if res.calibration_sims:  # issue 47: the model the calibrated bounds rest on
        from cogtestbed.validation.design.seqfair import assumptions

        seq["assumptions"] = assumptions(spec, point.trials, point.runs)
    return record_sequential(payload, seq, res, result, pricer)


def fair_payload(result: Any, res: SequentialResult, fair: dict[str, Any], pricer: Any, exp: Any, futility: bool,
                 binding: bool) -> dict[str, Any]:
    """The ``sequential`` section of plan.json (its looks already priced) with the saving stated
    against the fair fixed comparator ``fair``
    (:func:`~cogtestbed.validation.design.seqfair.fair_fixed`; its chosen size priced here), the
    fixed plan's own design and its saving beside it (``plan_fixed``); against the fixed plan's design
    when ``fair`` has no size in range (the statement says so)."""
    from cogtestbed.validation.design.pricing import money
    from cogtestbed.validation.design.seqfair import fair_statement
    from cogtestbed.validation.design.space import sessions_per_llm
    from cogtestbed.validation.studies.study_data import design_for_trials

    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    chosen_fair = fair["chosen"]
    if chosen_fair is not None:
        at = type(point)(**{**point.as_dict(), size_name: chosen_fair["size"]})
        fair_cost = pricer.exact(design_for_trials(exp, point.trials, spec.design), sessions_per_llm(spec, at))
    else:
        fair_cost = result.chosen.cost
    seq = sequential_payload(res, spec, fair_cost, size_name, futility, binding)
    if res.chosen is None:
        return seq
    plan_key, fair_key, exp_key = money(result.chosen.cost), money(fair_cost), seq["expected"]["effect"]["cost_key"]
    seq["fixed"]["label"] = (f"the fixed design at equal type-I error ({chosen_fair['size']} {size_name})"
                             if chosen_fair else f"the fixed plan's design ({getattr(point, size_name)} {size_name})")
    seq["plan_fixed"] = {"size": getattr(point, size_name), "calls": result.chosen.cost.calls,
                         "dollars": result.chosen.cost.dollars, "cost_key": plan_key,
                         "saving_percent": None if exp_key is None else 100 * (1 - exp_key / plan_key)}
    seq["saving"] = {**seq["saving"], **fair_statement(fair, seq, size_name, res.chosen.null.rate,
                                                       res.chosen.null.sims, getattr(point, size_name), fair_key)}
    return seq


def record_sequential(payload: dict[str, Any], seq: dict[str, Any], res: SequentialResult, result: Any,
                      pricer: Any) -> dict[str, Any]:
    """Put a sequential plan's section into the payload and point the run section at its design."""
    from cogtestbed.validation.design.space import sessions_per_llm

    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    payload["sequential"] = seq
    if res.chosen is not None:
        top = type(point)(**{**point.as_dict(), size_name: res.chosen.bounds.sizes[-1]})
        run = payload["run"]
        run["subjects"] = sessions_per_llm(spec, top)
        calls = res.chosen.cost[-1].per_llm[0]["calls"] if res.chosen.cost[-1].per_llm else None
        run["max_calls"] = None if calls is None else int(calls) * (1 + pricer.reask)
        run["sequential"] = {**seq["design"], "runs_per_subject": point.runs if size_name == "subjects" else 1}
    if res.chosen is not None:  # a sample of simulated statistic paths, for the report's plot
        seq["paths"] = {"effect": _json_paths(res.z_effect[:PLOT_PATHS]), "null": _json_paths(res.z_null[:PLOT_PATHS])}
    return payload


def fixed_type1(spec: PlannedStudy, point: Any, null_agent: str | None, workers: int,
                sims: int = MIN_NULL_SIMS) -> tuple[int, int]:
    """(rejections, studies) of the fixed design ``point``'s own test on ``sims`` null studies (the
    fixed plan's power study of the null: every rejection counts)."""
    from cogtestbed.validation.design.power_sims import PowerEvaluator

    evaluator = PowerEvaluator(null_spec(spec, null_agent), workers, "sequential plan: the fixed design's test on "
                               "null studies at")
    est = evaluator.ensure_and_close(point, sims)
    return est.hits, est.sims


def comparison(seq_rate: float, seq_sims: int, fixed: tuple[int, int] | None) -> dict[str, Any]:
    """The fixed comparator's own type-I error beside the sequential design's, each with its MC SE,
    and whether the saving is stated at equal type-I error (the fixed test's at least the sequential
    one's) or against a more conservative fixed test (then the saving overstates it)."""
    if fixed is None or fixed[1] == 0:
        return {"fixed_type1": None, "fair": None, "statement": "the fixed design's type-I error was not measured"}
    hits, n = fixed
    rate = hits / n
    se = math.sqrt(rate * (1 - rate) / n)
    seq_se = math.sqrt(seq_rate * (1 - seq_rate) / max(seq_sims, 1))
    fair = rate >= seq_rate
    text = (f"fixed design's own type-I error {rate:.3f} ± {se:.3f} ({n:,} null studies) vs sequential "
            f"{seq_rate:.3f} ± {seq_se:.3f}: ")
    text += ("the saving is stated against a fixed test spending at least as much type-I error" if fair else
             "the fixed test is more conservative, so the saving is against a fixed design with less type-I "
             "error (at equal type-I error it is smaller)")
    return {"fixed_type1": rate, "fixed_type1_mc_se": se, "fixed_null_sims": n, "sequential_type1": seq_rate,
            "sequential_type1_mc_se": seq_se, "fair": fair, "statement": text}


def _json_paths(z: np.ndarray) -> list[list[float | None]]:
    """Simulated Z paths for plan.json: None after a path stopped (it was not simulated further)."""
    return [[round(float(v), 3) if math.isfinite(v) else None for v in row] for row in z]


# ----------------------------------------------------------------------------- report
def plot_sequential(seq: Mapping[str, Any], out: Any) -> Any:
    """``sequential.png``: bounds with simulated Z paths; expected cost vs the fixed design; the
    stopping-look histogram under the null and the effect."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = seq["design"]
    x = np.asarray(d["sizes"], float)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    for name, colour in (("null", "tab:grey"), ("effect", "tab:blue")):
        for path in seq.get("paths", {}).get(name, []):
            ax.plot(x, np.array(path, dtype=float), color=colour, alpha=0.25, lw=0.8)
    sign = d.get("direction") or 1.0
    b = np.asarray(d["efficacy"]) * sign
    ax.plot(x, b, "r-o", label="efficacy bound")
    ax.plot(x, -np.asarray(d.get("efficacy_other") or d["efficacy"]) * sign, "r-o")
    if d["futility"] is not None:
        ax.plot(x, np.asarray(d["futility"]) * (d["direction"] or 1), "k--s", label="futility bound")
    ax.set_xlabel(d["size_axis"])
    ax.set_ylabel("Z at look (blue: effect, grey: null)")
    ax.legend(fontsize=7)
    ax = axes[1]
    key = "dollars" if seq["fixed"]["dollars"] else "cost_key"
    vals = [seq["fixed"][key], seq["expected"]["effect"][key], seq["expected"]["null"][key], seq["maximum"].get(key)]
    ax.bar(["fixed", "E[effect]", "E[null]", "max"], [v or 0 for v in vals],
           color=["tab:grey", "tab:blue", "tab:green", "tab:red"])
    ax.set_ylabel("USD" if key == "dollars" else "tokens")
    ax.set_title(f"saving under the effect: {seq['saving']['percent']:.1f}%")
    ax = axes[2]
    k = np.arange(1, d["looks"] + 1)
    ax.bar(k - 0.2, seq["effect"]["stop_look"], width=0.4, label="effect")
    ax.bar(k + 0.2, seq["null"]["stop_look"], width=0.4, label="null")
    ax.set_xticks(k)
    ax.set_xlabel("stopping look")
    ax.set_ylabel("share of simulated studies")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "sequential.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report_section(seq: Mapping[str, Any], out: Any) -> dict[str, Any]:
    """The report.html section of a sequential plan."""
    import pandas as pd

    tables = []
    if seq.get("chosen", True) is not None:
        tables.append(("sequential looks", pd.DataFrame(seq["looks"]).set_index("look")))
        tables.append(("sequential maximum sizes simulated", pd.DataFrame(seq["candidates"])))
        plots = [plot_sequential(seq, out)]
    else:
        plots = []
    lines = sequential_lines(seq, seq["design"]["size_axis"] if "design" in seq else "units")
    return {"title": "sequential plan", "verdict": lines[0], "tables": tables, "plots": plots,
            "details": "\n".join(lines[1:]) + ("\n" + seq["note"] if "note" in seq else "")}


# ----------------------------------------------------------------------------- a run's looks
LOOKS_FILE = "looks.jsonl"
SEQUENTIAL_FILE = "sequential.json"


def look_statistic(exp: Any, design: Mapping[str, Any], table: Any, units: int) -> dict[str, Any]:
    """(Z, estimate, p-value) of the plan's test on the first ``units`` subjects of a run's table: the
    same fitter and test the plan simulated (``design``: the plan's ``run.sequential`` section).  A
    metric difference between two LLMs takes ``table`` as the pair (first LLM's, second LLM's)."""
    from cogtestbed.validation.studies.metric_studies import test_outcome

    stat = design["statistic"]
    if stat["kind"] == "metric-power":
        return pair_statistic(exp, stat, table, units)
    part = first_units(table, units)
    if stat["kind"] == "power":
        return _model_statistic(exp, stat, part, units)
    if stat["kind"] in ("test-size", "test-power"):
        result = exp.metrics.test_result(stat["test"], part, **dict(stat.get("metric_options") or {}))
        _, p = test_outcome(result, stat["test"], float(design["level"]))
        if not math.isfinite(p):
            return {**_no_statistic(f"{stat['test']} has no p-value on the first {units} subjects"),
                    "subjects_fitted": int(part["subject"].nunique())}
        return {"statistic": z_from_p(p, 0.0, signed=False), "estimate": p, "p_value": p,
                "subjects_fitted": int(part["subject"].nunique())}
    raise InputError(f"a run executes the looks of a model-effect, metric-difference or test plan, not {stat['kind']}")


def _model_statistic(exp: Any, stat: Mapping[str, Any], part: Any, units: int) -> dict[str, Any]:
    """The one-sample t-test on per-subject MLEs of the contrast (a model-effect plan's look)."""
    from cogtestbed.inference.base import with_lapse

    model = exp.model(stat["model"])
    if not part["valid"].any():  # nothing to fit: no evidence (Z taken as 0 by the rule)
        return {"statistic": None, "estimate": None, "p_value": None, "subjects_fitted": 0,
                "reason": f"no valid trial among the first {units} subjects"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = with_lapse(model, stat.get("lapse_fit")).fit_mle(part).sort_values("subject", kind="stable")
    values = np.asarray(model.contrast(stat["effect"], {p: fits[p].to_numpy(float)
                                                        for p in model.parameters.names}), float)
    # a plan written before the one-sample null was recorded tested the natural-scale contrast against 0
    if stat.get("scale", "natural") == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(values)
    values = values - float(stat.get("null") or 0.0)
    return _t_statistic(values[np.isfinite(values)], units)


def _t_statistic(values: np.ndarray, units: int) -> dict[str, Any]:
    """The one-sample t-test on the per-subject contrasts that exist (a subject without an estimate,
    e.g. no valid trial, is left out, as the plan's simulation leaves it out: :func:`seqsim.prefix_z`);
    fewer than 2, or no spread: a null statistic with its reason (the rule then takes Z as 0)."""
    est = float(np.mean(values)) if values.size else None
    if values.size < 2:
        return {**_no_statistic(f"{values.size} of the first {units} subjects have an estimate; the t-test needs 2"),
                "estimate": est, "subjects_fitted": int(values.size)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_1samp(values, 0.0).pvalue)
    if not math.isfinite(p):
        return {**_no_statistic(f"the {values.size} subjects' estimates do not vary: the t-test has no p-value"),
                "estimate": est, "subjects_fitted": int(values.size)}
    return {"statistic": z_from_p(p, float(est or 0.0), signed=True), "estimate": est, "p_value": p,
            "subjects_fitted": int(values.size)}


def pair_statistic(exp: Any, stat: Mapping[str, Any], tables: Sequence[Any], units: int) -> dict[str, Any]:
    """A metric difference between two LLMs at a look: the metric on each LLM's first ``units``
    sessions and the fixed plan's difference test (:func:`difference_test`: Welch on per-run values,
    else the z-test of two pooled estimates); the estimate is second LLM − first, as the plan's
    ``--compare A B`` is B − A.  No metric for an LLM, or no p-value: a null statistic with its reason."""
    from cogtestbed.validation.studies.metric_studies import difference_test, metric_value

    options = dict(stat.get("metric_options") or {})
    metric = stat["metric"]
    parts = [first_units(t, units) for t in tables]
    values = []
    for i, part in enumerate(parts):
        if not part["valid"].any():
            return _no_statistic(f"no valid trial among LLM {i + 1}'s first {units} sessions")
        values.append(dict(exp.metrics(part, **options)))
    a, b = values
    va, vb = metric_value(a, metric), metric_value(b, metric)
    out = {"value_a": va if math.isfinite(va) else None, "value_b": vb if math.isfinite(vb) else None}
    if not (math.isfinite(va) and math.isfinite(vb)):
        which = " and ".join(f"LLM {i + 1}" for i, v in enumerate((va, vb)) if not math.isfinite(v))
        return {**_no_statistic(f"{metric} is null for {which} on the first {units} sessions"), **out}
    _, p = difference_test(a, b, metric, exp.metrics.unit)
    if not math.isfinite(p):
        return {**_no_statistic(f"the difference test of {metric} has no p-value (zero standard error)"), **out,
                "estimate": vb - va}
    return {"statistic": z_from_p(p, 0.0, signed=False), "estimate": vb - va, "p_value": p,
            "subjects_fitted": units, **out}


def _no_statistic(reason: str) -> dict[str, Any]:
    return {"statistic": None, "estimate": None, "p_value": None, "subjects_fitted": 0, "reason": reason}


def evaluate_look(exp: Any, design: Mapping[str, Any], table: Any, k: int) -> dict[str, Any]:
    """Look ``k`` (0-based) of a run: its statistic, bounds and decision."""
    bounds = Boundaries.from_dict(design)
    units = bounds.sizes[k]
    out = {k_: (None if isinstance(v, float) and not math.isfinite(v) else v)
           for k_, v in look_statistic(exp, design, table, units).items()}
    z = out["statistic"] if out["statistic"] is not None else 0.0
    decision = bounds.decide(k, z, float(design.get("direction", 0.0)))
    return {"look": k + 1, "units": units, **out, "efficacy": bounds.efficacy[k],
            "futility": None if bounds.futility is None else bounds.futility[k], "decision": decision}
