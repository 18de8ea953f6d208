"""Group-sequential plans: the whole fit–test–stop procedure simulated with synthetic agents.

``cogtestbed plan … --looks K`` extends a fixed plan (:mod:`cogtestbed.planning.plan`) with a
group-sequential design (Jennison & Turnbull 2000, ch. 7): the run looks at its data after equal
shares ``n_k ≈ k/K · N`` of the size axis (subjects for a model target, runs for a metric or test
target), computes the *same* statistic the fixed plan's power study computes on the units finished
so far, and stops for efficacy when ``|Z_k| ≥ b_k`` (Lan–DeMets α-spending of α/2 per side,
:mod:`cogtestbed.planning.kinds.sequential.sequential`) or, with ``--futility``, for futility when the statistic
in the effect's direction falls below ``a_k`` (non-binding β-spending bounds).

The statistic: ``Z_k = sign(estimate) · Φ⁻¹(1 − p_k/2)`` from the fixed test's two-sided p-value
(the one-sample t-test on per-subject MLEs of the contrast; the Welch test of a metric difference;
the test a metrics function reports).  These Z are only approximately the canonical jointly normal
sequence the bounds assume: a t-test on few subjects at the first look, parameters near their bounds,
a test whose p-value has a resolution floor (a permutation p of 1/(B+1) caps ``|Z|``) all distort
it.  The bounds are therefore *not* trusted: the procedure is simulated exactly as the run executes it
(the same fitter and test at each look, lapses at the planned invalid rate) under the null and the
target effect, and its type-I error, power, stopping look, cost and estimate bias are measured; and
the efficacy bounds are *calibrated* on a simulated null (:mod:`cogtestbed.planning.kinds.sequential.seqsim`): the
spending function fixes their shape across looks, and one shift sets their level so that null studies
with their own seeds reject in the effect's direction at α/2 with futility obeyed (futility is then
binding).  The type-I error is measured on other null studies.

Simulation (:mod:`cogtestbed.planning.kinds.sequential.seqsim`): each subject is simulated and fitted once
(per-subject MLE fits are independent) and every look of every candidate maximum size is the t-test
on a prefix of the stored per-subject estimates; a replicate is extended only while some candidate
still runs it (with calibrated bounds every replicate is extended to the largest size instead, so
that the fixed test can be calibrated and measured on the same studies: the saving at equal type-I
error, :mod:`cogtestbed.planning.kinds.sequential.seqfair`). The candidate maximum sizes run from
:data:`MIN_FACTOR` to :data:`MAX_FACTOR` times the fixed plan's size; the chosen one minimises the
expected cost under the target effect subject to type-I error ≤ α (point estimate on fresh null
studies) and power ≥ target. Costs are linear in sessions at a fixed trial count, so candidates are
ranked by expected sessions and the chosen design's every look is then priced exactly with the
dry-run :class:`~cogtestbed.planning.pricing.Pricer`
(:mod:`cogtestbed.planning.kinds.sequential.seqpayload`, which also writes the plan's ``sequential`` section;
a run's own looks are :mod:`cogtestbed.planning.kinds.sequential.runlooks`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.sequential.seqoptions import check_looks
from cogtestbed.planning.kinds.sequential.seqpaths import (  # the bounds and paths the simulation shares
    CONTINUE,
    EFFICACY,
    EFFICACY_OTHER,
    Boundaries,
    boundaries,
)
from cogtestbed.planning.kinds.sequential.sequential import Spending
from cogtestbed.studies.study_kinds import MetricPowerStudy, PlannedStudy, PowerStudy
from cogtestbed.timings import cpu_seconds

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
        raise InputError("a sequential plan of a test needs `null` AGENT[:p=v,...]: the agent under which the test's "
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
    reps, cols = z.shape[0], np.asarray(columns, dtype=np.intp)
    codes = bounds.codes_all(z[:, cols], dirn)  # every look's codes at once; a path stops at its first decision
    stop = np.argmax(codes != CONTINUE, axis=1)  # the last look always decides
    at_stop = codes[np.arange(reps), stop]
    rejected = (at_stop == EFFICACY) if effect_dirn else ((at_stop == EFFICACY) | (at_stop == EFFICACY_OTHER))
    units = np.asarray(bounds.sizes)[stop]
    est_stop = est[np.arange(reps), cols[stop]]
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
    #: the chosen candidate's operating characteristics under the effect on the studies that chose it (its
    #: ``effect`` is then measured on fresh ones: :func:`measure_fresh`); None: not chosen
    search_effect: Operating | None = None

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
    #: the fair fixed comparator (:func:`~cogtestbed.planning.kinds.sequential.seqfair.fair_fixed`: the fixed
    #: test calibrated to α on the same calibration null studies, its type-I error on the same fresh
    #: null studies); None where uncalibrated (no calibration null studies)
    fair: dict[str, Any] | None = None


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
    (reported with its one-sided upper bound; with ``calibrate=False`` they also require ≤ α).

    ``sims`` studies are simulated under the effect; ``null_sims`` (default: at least
    :data:`MIN_NULL_SIMS`) fresh null studies measure the type-I error.  With ``calibrate`` (the
    default) each maximum size's efficacy bound in the effect's direction is shifted so that
    ``null_sims`` calibration null studies (their own seeds) reject in that direction at rate α/2 (α
    for an undirected statistic) with futility obeyed
    (:func:`~cogtestbed.planning.kinds.sequential.seqsim.calibrate_shift`; its MC error by bootstrap)."""
    import time

    from cogtestbed.planning.kinds.sequential.seqsim import Rule, Simulator

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
    if chosen is not None:
        measure_fresh(chosen, columns[next(i for i, c in enumerate(cands) if c is chosen)], sim, spec, dirn)
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


def measure_fresh(chosen: Candidate, cols: Sequence[int], sim: Any, spec: PlannedStudy, dirn: float) -> np.ndarray:
    """Replace the chosen candidate's operating characteristics under the effect (read on the studies that
    chose it) by those on as many fresh studies under the effect (the simulator's stream
    :data:`~cogtestbed.planning.kind_protocols.SEQ_FRESH_STREAM`): the power, expected size and saving the plan
    prints; the choosing studies' kept as ``search_effect``.  Returns the fresh paths' z at the rule's looks."""
    from cogtestbed.planning.kind_protocols import SEQ_FRESH_STREAM
    from cogtestbed.planning.kinds.sequential.seqsim import Rule

    sim.label = "sequential plan: fresh studies under the effect at the chosen design"
    cols = tuple(cols)
    (fresh,) = sim.run([(spec, SEQ_FRESH_STREAM, Rule((chosen.bounds,), (cols,), dirn))])
    chosen.search_effect = chosen.effect
    chosen.effect = operate(chosen.bounds, fresh.z, fresh.est, cols, dirn, dirn or None, fresh.reference)
    return np.asarray(fresh.z[:, list(cols)])


def _chosen(cands: Sequence[Candidate], target: float, calibrate: bool, level: float) -> Candidate | None:
    """The candidate with the least expected units under the effect (then the smallest maximum) among
    those with power ≥ ``target``, or None.  Calibrated bounds: the fresh null studies choose
    nothing, they measure the chosen maximum's type-I error (reported with its upper bound); nominal
    bounds have no calibration set, so there they guard (type-I error ≤ ``level``)."""
    passing = [c for c in cands if c.effect.rate >= target and (calibrate or c.null.rate <= level)]
    return min(passing, key=lambda c: (c.effect.units.mean(), c.bounds.sizes[-1])) if passing else None


def _fair_sizes(fixed_size: int, n_top: int, calibrate: bool) -> list[int]:
    """The sizes the fair fixed comparator is evaluated at (``--looks auto``'s grid), or none for
    uncalibrated bounds (no calibration null studies).  A model target's paths are then simulated
    whole (:attr:`~cogtestbed.planning.kinds.sequential.seqsim.Simulator.whole`: to the largest size, not only
    as far as the procedure goes), so that every path holds every size."""
    from cogtestbed.planning.kinds.sequential.seqfair import FIXED_MIN_FACTOR

    if not calibrate:
        return []
    return candidate_maxima(max(2, min(fixed_size, math.floor(FIXED_MIN_FACTOR * fixed_size))), n_top, fixed_size)


def _fair(eff_z: np.ndarray, cal_z: np.ndarray | None, nul_z: np.ndarray, cols: list[int], sizes: list[int],
          dirn: float, level: float, target: float) -> dict[str, Any] | None:
    """The fair fixed comparator on the plan's own paths: the fixed test calibrated to ``level`` (the
    sequential bounds' level) on the same calibration null studies, its type-I error measured on the
    same fresh null studies as the sequential design's; None where a path lacks a size."""
    from cogtestbed.planning.kinds.sequential.seqfair import fair_fixed

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
    from cogtestbed.planning.kinds.sequential.seqsim import Rule, null_scores

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
    """The calibrated shift (:func:`~cogtestbed.planning.kinds.sequential.seqsim.calibrate_shift`) and its MC
    error: the SD of the shift over :data:`SHIFT_BOOTSTRAP` bootstrap resamples of the calibration paths."""
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift

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


def fixed_type1(spec: PlannedStudy, point: Any, null_agent: str | None, workers: int,
                sims: int = MIN_NULL_SIMS) -> tuple[int, int]:
    """(rejections, studies) of the fixed design ``point``'s own test on ``sims`` null studies (the
    fixed plan's power study of the null: every rejection counts)."""
    from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator

    evaluator = PowerEvaluator(null_spec(spec, null_agent), workers, "sequential plan: the fixed design's test on "
                               "null studies at")
    est = evaluator.ensure_and_close(point, sims)
    return est.hits, est.sims
