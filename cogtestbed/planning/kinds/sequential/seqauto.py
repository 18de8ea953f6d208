"""``plan --looks auto``: the cheapest group-sequential design, searched over looks, spending and futility.

The search (Jennison & Turnbull 2000, ch. 7, for the designs; the search is the project's):

* **Candidates**: K = 2…10 looks at ``round(k/K · N)`` units, the spending families of
  :data:`FAMILIES` (O'Brien–Fleming and Pocock types, Hwang–Shih–DeCani γ = −4, −2, 0, 1), futility
  off or on (non-binding β-spending, :func:`~cogtestbed.planning.kinds.sequential.seqpaths.boundaries`), and
  every maximum size N from :data:`MIN_FACTOR` to :data:`MAX_FACTOR` times the fixed plan's size.
* **One set of paths for every candidate**: each study is simulated once, to the largest maximum
  size, and its statistic computed at every size (:class:`~cogtestbed.planning.kinds.sequential.seqsim.Simulator`
  with no stopping rule); every candidate's rule is then applied to the same paths (common random
  numbers: candidates differ by their rule, not by their draws).  Three sets: studies under the
  target effect, *calibration* null studies and *search* null studies (seeds of their own).
* **Bounds**: per candidate, the spending function's bounds at the planned fractions k/K are the
  *analytic bounds* (normal theory: the look statistics jointly normal with corr √(t_j/t_k)) when the
  calibration null studies cannot tell them from it (their rejection rate in the effect's direction,
  futility ignored, within 2 MC SE of α/2); otherwise the bounds are moved by one shift so that the
  calibration null studies reject at exactly α/2 in the effect's direction (*simulated calibration*,
  :func:`~cogtestbed.planning.kinds.sequential.seqsim.calibrate_shift`).  Either way the other direction keeps
  its analytic bound.
* **Futility is non-binding** unless ``binding``: calibration and type-I error ignore futility stops
  (a run may continue past a futility bound without exceeding α); expected costs and power obey them.
  Binding futility (``--binding-futility``) calibrates and measures type-I error with futility obeyed.
* **Choice**: candidates with type-I error ≤ α on the search null studies and power ≥ target are
  ranked by expected units under the target effect (costs are linear in units at a fixed trial
  count); the first :data:`CONFIRM` are then *confirmed* on fresh studies under the effect and fresh
  null studies never used in the search, in that order, and the first that keeps type-I error ≤ α
  (point estimate) and power ≥ target there is chosen.  Its reported error rates are the fresh ones.
* **Statistic**: a model target's simulated subjects are fitted by the coarse-start MLE of
  :data:`~cogtestbed.planning.kinds.sequential.seqfit.AUTO_FIT` (recorded in the design's ``statistic.fit``, which
  ``run --plan``'s looks compute); every set of studies and the fair comparator use it.
* **Fair comparator**: the fixed design at equal type-I error — the fixed plan's test at each size,
  its critical value in the effect's direction calibrated on the *same* calibration null studies to
  α/2 (the other direction analytic, as for the sequential design), so both designs spend α exactly;
  the cheapest size whose power on the effect studies reaches the target.  The saving is stated
  against it (and, for reference, against the fixed plan's own design).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.sequential.seqamortised import AmortisedFit, choose_statistic
from cogtestbed.planning.kinds.sequential.seqfair import (
    FIXED_MIN_FACTOR,
    assumptions,
    critical_at,
    fair_fixed,
    fixed_reject_rate,
    joint_saving,
    mle_equal_power,
    mle_power_curve,
    saving_estimate,
    smoothed_comparator,
    toward,
    type1_check,
    type1_words,
)
from cogtestbed.planning.kinds.sequential.seqfit import AUTO_FIT, SubjectFit
from cogtestbed.planning.kinds.sequential.seqpaths import Boundaries, boundaries
from cogtestbed.planning.kinds.sequential.seqplan import (
    Candidate,
    SequentialResult,
    candidate_maxima,
    direction,
    look_sizes,
    measure_fresh,
    null_spec,
    operate,
)
from cogtestbed.studies.study_kinds import PlannedStudy, PowerStudy

#: Spending families searched (the project's choice: the two Lan–DeMets types and Hwang–Shih–DeCani
#: γ from O'Brien–Fleming-like −4 to Pocock-like 1).
FAMILIES: tuple[str, ...] = ("obrien-fleming", "pocock", "hsd:-4", "hsd:-2", "hsd:0", "hsd:1")
#: Looks searched.
LOOKS: tuple[int, ...] = tuple(range(2, 11))
#: Smallest and largest maximum size searched, as multiples of the fixed plan's size.
MIN_FACTOR, MAX_FACTOR = 0.8, 1.35
#: Margin of the calibrated level below α, in SDs of a fresh type-I estimate (:func:`calibration_level`):
#: z at 90 % (the project's choice; at 1,000 null studies per set α = .05 becomes .0375).
CAL_MARGIN_Z = 1.2816
#: Fresh null studies per calibration null study: the chosen rule's type-I error is measured on
#: ``FRESH_NULL_FACTOR × null_sims`` fresh null studies, so that a rule at exactly the calibrated level (.0375 at
#: 1,000) shows a one-sided 95 % upper bound ≤ α about 90 % of the time (about 65 % on as many fresh as
#: calibration studies; the project's choice).  They choose nothing; they cost a fifth of the plan's fits.
FRESH_NULL_FACTOR = 2
#: Grid points per unit of Z of the searched rules' bounds (``sequential.efficacy_bounds``: within
#: 1e-6 of the default grid's for 2–10 looks, at a ninth of its cost).
SHAPE_GRID = 20
#: Candidates confirmed on fresh studies, in the search's order, until one passes: the cheapest rules
#: sit at the target power on the search's studies, so about half miss it on fresh ones; 24 reach the
#: next larger maxima of the best rules, which keep a margin.
CONFIRM = 24
#: Of those, rules whose search power clears the target by POWER_MARGIN_Z SEs (:func:`to_confirm`).
MARGIN_RULES, POWER_MARGIN_Z = 8, 2.0


@dataclass(frozen=True)
class Shape:
    """One rule without its maximum size: looks, spending, futility, and its bounds at k/K."""

    looks: int
    spending: str
    futility: bool
    bounds: Boundaries


@dataclass
class Scored:
    """A candidate rule at one maximum size with its search figures."""

    shape: Shape
    bounds: Boundaries
    columns: tuple[int, ...]
    method: str  # "analytic bounds" or "simulated calibration"
    power: float
    type1: float
    units: float  # expected units under the effect

    def key(self) -> tuple[float, int, int]:
        return (self.units, self.shape.looks, self.bounds.sizes[-1])


def shapes(level: float, target: float, looks: Sequence[int] = LOOKS, families: Sequence[str] = FAMILIES,
           futility: Sequence[bool] = (False, True), workers: int = 1) -> list[Shape]:
    """Every rule's analytic bounds at the planned fractions k/K (sizes are placeholders), split over a fork pool
    of ``workers`` (each rule's bounds are its own: the same list in the same order)."""
    from cogtestbed.studies.driver import map_split

    combos = [(k, fam, fut, level, target) for k in looks for fam in families for fut in futility]
    return map_split(_shapes_of, combos, workers)


def _shapes_of(combos: Sequence[tuple[int, str, bool, float, float]]) -> list[Shape]:
    return [_shape(*c) for c in combos]


@functools.lru_cache(maxsize=512)
def _shape(looks: int, spending: str, futility: bool, level: float, target: float) -> Shape:
    t = [j / looks for j in range(1, looks + 1)]
    return Shape(looks, spending, futility, boundaries(tuple(range(1, looks + 1)), level, spending, futility, target,
                                                       fractions=t, per_unit=SHAPE_GRID))


def strip_futility(b: Boundaries) -> Boundaries:
    """The same bounds without futility: the procedure whose type-I error a non-binding design reports."""
    return dataclasses.replace(b, futility=None)


def _side_scores(b: Boundaries, z: np.ndarray, cols: Sequence[int], dirn: float, binding: bool) -> np.ndarray:
    from cogtestbed.planning.kinds.sequential.seqsim import null_scores

    return null_scores(b if binding else strip_futility(b), z, cols, dirn)


def fit_bounds(shape: Shape, sizes: tuple[int, ...], cal_z: np.ndarray, cols: Sequence[int], dirn: float,
               side: float, binding: bool, exact: bool = False) -> tuple[Boundaries, str]:
    """A rule's bounds at look sizes ``sizes``: the analytic bounds where the calibration null studies
    agree with normal theory on both sides (each side's rate within 2 MC SE of ``side``), else each
    side shifted to reject at ``side`` on them (against the effect's direction first, futility ignored;
    then in it, futility ignored unless ``binding``); ``exact``: always shifted (no analytic shortcut)."""
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift, null_scores

    base = Boundaries(sizes, shape.spending, shape.bounds.level, shape.bounds.efficacy, shape.bounds.futility)
    up = _side_scores(base, cal_z, cols, dirn, binding)
    n = up.size
    down = null_scores(strip_futility(base), cal_z, cols, -dirn) if dirn else None
    rate = float(np.mean(up >= 0))
    rate_other = None if down is None else float(np.mean(down >= 0))
    se = math.sqrt(side * (1 - side) / n)
    info = {"side_level": side, "null_sims": n, "nominal_rate": round(rate, 6), "nominal_rate_mc_se": round(se, 6),
            "nominal_rate_other": None if rate_other is None else round(rate_other, 6),
            "futility": ("binding" if binding else "non-binding") if shape.futility else None}
    if not exact and abs(rate - side) <= 2 * se and (rate_other is None or abs(rate_other - side) <= 2 * se):
        return dataclasses.replace(base, calibration={**info, "method": "analytic bounds", "shift": 0.0}), \
            "analytic bounds"
    if down is not None:
        shift_other = calibrate_shift(down, side)
        other = tuple(round(b + shift_other, 6) for b in base.efficacy)
        base = dataclasses.replace(base, efficacy_other=other)
        info["shift_other"] = round(shift_other, 6)
        up = _side_scores(base, cal_z, cols, dirn, binding)
    shifted = base.with_shift(calibrate_shift(up, side), {**info, "method": "simulated calibration"})
    if shifted.futility is not None:  # a shift down must not leave a futility bound above its efficacy bound
        fut = tuple(min(a, b) for a, b in zip(shifted.futility, shifted.efficacy, strict=True))
        shifted = dataclasses.replace(shifted, futility=fut)
    return shifted, "simulated calibration"


def calibration_level(level: float, null_sims: int) -> float:
    """The level every rule and the fair fixed test are calibrated to: α less :data:`CAL_MARGIN_Z`
    times the SD of a fresh type-I estimate about a level calibrated on other null studies
    (two independent sets of ``null_sims``: √(2α(1−α)/N)), so that a design calibrated on one set
    keeps its type-I error ≤ α on fresh studies about 90 % of the time.  Both designs get it: the
    comparison stays at equal type-I error."""
    return level - CAL_MARGIN_Z * math.sqrt(2 * level * (1 - level) / null_sims)


def score_all(shape_list: Sequence[Shape], maxima: Sequence[int], col: dict[int, int], eff: Any, cal: Any, nul: Any,
              dirn: float, cal_level: float, binding: bool) -> list[Scored]:
    """Every (rule, maximum size) applied to the same simulated paths, calibrated to ``cal_level``."""
    side = cal_level / 2 if dirn else cal_level
    out = []
    for shape in shape_list:
        for m in maxima:
            if m < 2 * shape.looks:
                continue
            sizes = look_sizes(m, shape.looks)
            cols = tuple(col[n] for n in sizes)
            bounds, method = fit_bounds(shape, sizes, cal.z, cols, dirn, side, binding)
            power_op = operate(bounds, eff.z, eff.est, cols, dirn, dirn or None)
            null_b = bounds if binding else strip_futility(bounds)
            t1 = float(operate(null_b, nul.z, nul.est, cols, dirn, None).rejected.mean())
            out.append(Scored(shape, bounds, cols, method, power_op.rate, t1, float(power_op.units.mean())))
    return out


# ----------------------------------------------------------------------------- the search
@dataclass
class AutoResult:
    """The search's outcome: the chosen design (as :class:`SequentialResult`), the fair fixed
    comparator and what was searched."""

    result: SequentialResult
    fair: dict[str, Any]
    searched: dict[str, Any]
    confirmed: list[dict[str, Any]]
    #: the model the calibration rests on and the type-I error under alternatives
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


def plan_auto(spec: PlannedStudy, fixed_size: int, trials: int | None, runs: int, target: float, sims: int = 1000,
              workers: int = 1, null_agent: str | None = None, null_sims: int | None = None, binding: bool = False,
              say: Callable[[str], None] | None = None, looks: Sequence[int] = LOOKS,
              families: Sequence[str] = FAMILIES, futility: Sequence[bool] = (False, True),
              max_factor: float = MAX_FACTOR, fit: SubjectFit | AmortisedFit | None = None) -> AutoResult:
    """Search looks × spending × futility × maximum size for the cheapest expected design under the
    target effect that keeps type-I error ≤ α and power ≥ ``target``, confirmed on fresh studies
    (module docstring).  ``sims`` studies under the effect and ``null_sims`` (default ``max(1000,
    sims)``) null studies per set; every simulated subject estimated by ``fit`` (model targets: the statistic
    the plan records for its run, :mod:`~cogtestbed.planning.kinds.sequential.seqfit`; None: the amortised estimator
    where it is trained and validated for the plan, else :data:`~cogtestbed.planning.kinds.sequential.seqfit.AUTO_FIT`:
    :func:`~cogtestbed.planning.kinds.sequential.seqamortised.choose_statistic`)."""
    from cogtestbed.planning.kinds.sequential.seqplan import MIN_NULL_SIMS
    from cogtestbed.planning.kinds.sequential.seqsim import Simulator
    from cogtestbed.timings import cpu_seconds

    start, cpu = time.perf_counter(), cpu_seconds()
    say = say or (lambda _m: None)
    null_sims = null_sims if null_sims is not None else max(MIN_NULL_SIMS, sims)
    dirn, level = direction(spec), spec.level
    n_top = max(4, math.ceil(max_factor * fixed_size))
    lo_fixed = max(2, min(fixed_size, math.floor(FIXED_MIN_FACTOR * fixed_size)))
    lo = max(4, min(fixed_size, math.floor(MIN_FACTOR * fixed_size)))
    looks = [k for k in looks if 2 * k <= n_top]
    if not looks:
        raise InputError(f"a sequential design needs a maximum of at least 4 units; the fixed design has {fixed_size}")
    lo_min = max(4, min(lo, math.floor(MIN_FACTOR * lo_fixed)))  # the lowest maximum search() may try
    maxima = candidate_maxima(lo_min, n_top, fixed_size)
    fixed_sizes = candidate_maxima(lo_fixed, n_top, fixed_size)
    sizes = tuple(sorted({n for k in looks for m in maxima if m >= 2 * k for n in look_sizes(m, k)}
                         | set(fixed_sizes)))
    say(f"sequential (--looks auto): {sims} studies under the effect and 2 x {null_sims} null studies simulated "
        f"once each up to {n_top} units; every rule ({len(looks)} look counts x {len(families)} spending "
        f"functions x futility {'on/off' if len(futility) > 1 else ('on' if futility[0] else 'off')}) applied "
        "to the same studies, then the best confirmed on fresh studies")
    null = null_spec(spec, null_agent)
    fit, choice = _statistic(spec, null, fit, trials, runs, say, workers)
    sim = Simulator(trials, runs, n_top, sizes, sims, spec.seed, workers, width=max(2, lo // 4), fit=fit)
    sim.label = "sequential search: studies under the effect"
    (eff,) = sim.run([(spec, 0, None)])
    # subjects=0: the copy must not carry the effect studies' count into its own (they were counted twice)
    nsim = dataclasses.replace(sim, sims=null_sims, subjects=0,
                               label="sequential search: calibration and search null studies")
    cal, nul = nsim.run([(null, 1, None), (null, 0, None)])
    found = search(eff, cal, nul, sizes, maxima, fixed_sizes, lo, level, target, dirn, binding, looks, families,
                   futility, workers)
    passing, fair, searched = found.passing, found.fair, found.searched
    subjects = sim.subjects + nsim.subjects
    col = {n: i for i, n in enumerate(sizes)}
    second = _Second(eff, nul, col, searched["calibration_level"], fixed_sizes)
    chosen, confirmed, conf_sims = _confirm(to_confirm(passing, target, sims), spec, null, sim, null_sims, dirn,
                                            level, target, binding, fair, say, second)
    subjects += conf_sims.subjects
    whose = ("amortised per-subject estimates" if isinstance(fit, AmortisedFit) else
             "coarse-start per-subject MLEs" if fit != SubjectFit() else "the fixed plan's per-subject MLEs")
    extra: dict[str, Any] = {"assumptions": assumptions(spec, trials, runs, whose), "statistic": fit,
                             "statistic_choice": choice}
    if chosen is not None:
        fcols = [col[n] for n in fixed_sizes]
        pooled = np.vstack([cal.z[:, fcols], nul.z[:, fcols]])
        say("sequential (--looks auto): the fixed comparator's size at the chosen design's measured type-I error "
            "(a probit power curve with a bootstrap interval)")
        smooth = smoothed_comparator(eff.z[:, fcols], pooled, fixed_sizes, dirn, max(chosen.null.rate, 1e-4), target,
                                     spec.seed, workers=workers)
        smooth["fresh_type1"] = _comparator_fresh(smooth, conf_sims.c_fixed, fixed_sizes, dirn, level)
        smooth["paths"] = {"effect": eff.z[:, fcols], "null": pooled}  # the joint resampling's (not in plan.json)
        fair["smoothed"] = smooth
        extra["robustness"] = robustness(chosen.bounds, spec, null, sim, null_sims, dirn, binding, level, say)
        subjects += extra["robustness"].pop("_subjects", 0)
    res = _result(chosen, confirmed, conf_sims, time.perf_counter() - start, sims, null_sims, subjects,
                  cpu_seconds() - cpu)
    fair["confirm_type1"] = conf_sims.fixed_type1
    fair["confirm_check"] = conf_sims.fixed_check
    return AutoResult(res, fair, searched, [c["row"] for c in confirmed], extra)


def _statistic(spec: PlannedStudy, null: PlannedStudy, fit: SubjectFit | AmortisedFit | None, trials: int | None,
               runs: int, say: Callable[[str], None], workers: int) -> tuple[SubjectFit | AmortisedFit,
                                                                             dict[str, Any] | None]:
    """The plan's per-subject statistic and what chose it: ``fit`` where given, else the amortised estimator or
    :data:`AUTO_FIT` (:func:`~cogtestbed.planning.kinds.sequential.seqamortised.choose_statistic`; a metric or test
    target has no per-subject statistic: :data:`AUTO_FIT` stands for none)."""
    if fit is not None:
        return fit, None
    if isinstance(spec, PowerStudy) and isinstance(null, PowerStudy):
        return choose_statistic(spec, null, trials, runs, say, workers)
    return AUTO_FIT, None


#: Alternatives of :func:`robustness`: the between-subject SD multiplied by this, and random-answer lapses
#: at this rate (the project's choices: a doubled spread, and Wichmann & Hill 2001's order of lapse rates).
WIDE_SD_FACTOR, LAPSE_RANDOM = 2.0, 0.1
#: Exactly Gaussian look statistics simulated for the robustness check.
GAUSSIAN_PATHS = 200_000


def robustness(bounds: Boundaries, spec: PlannedStudy, null: PlannedStudy, sim: Any, null_sims: int, dirn: float,
               binding: bool, level: float, say: Callable[[str], None]) -> dict[str, Any]:
    """The chosen bounds' type-I error under other data-generating processes than the calibration's
   : exactly Gaussian look statistics (Brownian motion at the looks' information
    fractions), and for a model target null studies with the between-subject SD × :data:`WIDE_SD_FACTOR`
    and with random-answer lapses at :data:`LAPSE_RANDOM` (``null_sims // 2`` each, seed stream 3; every
    subject's contrast against the plan's one-sample null, as the run's looks test it); each with its one-sided
    upper bound, and the worst."""
    b = bounds if binding else strip_futility(bounds)
    sizes = bounds.sizes
    k = len(sizes)
    t = np.asarray(sizes, float) / sizes[-1]
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 4703]))
    steps = rng.normal(size=(GAUSSIAN_PATHS, k)) * np.sqrt(np.diff(np.concatenate([[0.0], t])))
    z = np.cumsum(steps, axis=1) / np.sqrt(t)
    rows = []
    gauss = operate(b, z, np.zeros_like(z), range(k), dirn, None)
    rows.append({"alternative": "Gaussian look statistics (normal theory, Brownian motion at the looks)",
                 **type1_check(int(gauss.rejected.sum()), gauss.sims, level)})
    subjects = 0
    if isinstance(null, PowerStudy):
        from cogtestbed.lapse import Lapse

        lapse = null.lapse or Lapse()
        wide = null.model_copy(update={"sd_between": null.sd_between * WIDE_SD_FACTOR})
        rate = min(1 - lapse.invalid, lapse.random + LAPSE_RANDOM)
        lapsed = null.model_copy(update={"lapse": Lapse(lapse.invalid, rate)})
        rsims = max(100, null_sims // 2)
        say(f"sequential (--looks auto): robustness of the chosen bounds' type-I error: {rsims} null studies with "
            f"the between-subject SD x {WIDE_SD_FACTOR:g} and {rsims} with random-answer lapses {LAPSE_RANDOM:g}")
        from cogtestbed.registry import get_experiment
        from cogtestbed.studies.model_studies import one_sample_null

        plan_null = one_sample_null(null, get_experiment(null.experiment).model(null.models[0]))
        # every contrast against the plan's null, as the run's looks test it (the wider population's own differs)
        rsim = dataclasses.replace(sim, n_top=sizes[-1], sizes=tuple(sizes), sims=rsims, subjects=0, null=plan_null,
                                   label="sequential search: robustness null studies")
        paths = rsim.run([(wide, 3, None), (lapsed, 3, None)])
        subjects = rsim.subjects
        names = (f"between-subject SD x {WIDE_SD_FACTOR:g} ({null.sd_between * WIDE_SD_FACTOR:g})",
                 f"random-answer lapses at {rate:g} per step (not fitted)")
        for name, pth in zip(names, paths, strict=True):
            op = operate(b, pth.z, pth.est, range(k), dirn, None)
            rows.append({"alternative": name, **type1_check(int(op.rejected.sum()), op.sims, level)})
    worst = max(rows, key=lambda r: r["rate"])
    return {"rows": rows, "worst": worst, "_subjects": subjects,
            "note": ("the chosen bounds as calibrated, re-evaluated on null studies of another data-generating "
                     "process; type-I futility " + ("obeyed (binding)" if binding else "ignored (non-binding)"))}


def to_confirm(passing: Sequence[Scored], target: float, sims: int) -> list[Scored]:
    """The rules confirmed on fresh studies, in the search's order: the :data:`CONFIRM` − :data:`MARGIN_RULES`
    cheapest, and the :data:`MARGIN_RULES` cheapest whose search power clears the target by
    :data:`POWER_MARGIN_Z` binomial SEs (the cheapest sit at the target on the search's effect studies,
    the best of many on the same studies, so most fall short on fresh ones: a measured run confirmed none
    of 24 without these)."""
    se = math.sqrt(target * (1 - target) / max(sims, 1))
    margin = [s for s in passing if s.power >= target + POWER_MARGIN_Z * se][:MARGIN_RULES]
    first = list(passing[:CONFIRM - len(margin)])
    return sorted({id(s): s for s in first + margin}.values(), key=Scored.key)


def _comparator_fresh(smooth: Mapping[str, Any], c_fixed: np.ndarray | None, fixed_sizes: Sequence[int],
                      dirn: float, level: float) -> dict[str, Any] | None:
    """The smoothed comparator's type-I error on the fresh null studies at the evaluated size nearest its
    estimated size (its critical values as calibrated): the comparator's own level, with its upper bound."""
    if c_fixed is None or not math.isfinite(smooth["size"]):
        return None
    i = int(np.argmin(np.abs(np.asarray(fixed_sizes, float) - smooth["size"])))
    t = c_fixed[:, i]
    hits = int(round(fixed_reject_rate(t, dirn, smooth["critical"][i], smooth["critical_other"][i]) * t.size))
    return {**type1_check(hits, int(t.size), level), "size": int(fixed_sizes[i])}


@dataclass
class Search:
    """Every rule scored on the search's studies, those meeting α and power (cheapest first), the fair
    fixed comparator and a summary of what was searched."""

    scored: list[Scored]
    passing: list[Scored]
    fair: dict[str, Any]
    searched: dict[str, Any]


def search(eff: Any, cal: Any, nul: Any, sizes: Sequence[int], maxima: Sequence[int], fixed_sizes: Sequence[int],
           lo: int, level: float, target: float, dirn: float, binding: bool, looks: Sequence[int] = LOOKS,
           families: Sequence[str] = FAMILIES, futility: Sequence[bool] = (False, True), workers: int = 1) -> Search:
    """Every rule applied to whole paths (``eff``, ``cal``, ``nul``: objects with ``z`` and ``est``
    arrays, replicates × ``sizes``): the maximum sizes ``maxima`` from ``lo`` (or from
    :data:`MIN_FACTOR` times the fair fixed size, if lower); the fair fixed comparator at ``fixed_sizes``; the
    rules' bounds computed on ``workers`` processes."""
    col = {n: i for i, n in enumerate(sizes)}
    fixed_cols = [col[n] for n in fixed_sizes]
    cal_level = calibration_level(level, int(cal.z.shape[0]))
    fair = fair_fixed(eff.z[:, fixed_cols], cal.z[:, fixed_cols], nul.z[:, fixed_cols], fixed_sizes, dirn,
                      cal_level, target)
    if fair["chosen"] is not None:  # the maxima reach down to MIN_FACTOR times the fair fixed size too
        lo = max(4, min(lo, math.floor(MIN_FACTOR * fair["chosen"]["size"])))
    lo_fixed = fixed_sizes[0]
    shape_list = shapes(cal_level, target, looks, families, futility, workers)
    scored = score_all(shape_list, [m for m in maxima if m >= lo], col, eff, cal, nul, dirn, cal_level, binding)
    # selection-honest: rules are calibrated on ``cal`` and chosen by power and cost alone; the
    # search null studies ``nul`` choose nothing (the chosen rule is re-calibrated on them, then measured on
    # a third, fresh set): their type-I per rule is recorded for reference only
    passing = sorted((s for s in scored if s.power >= target), key=Scored.key)
    edges = []
    if passing and passing[0].bounds.sizes[-1] == sizes[-1]:
        edges.append(f"the cheapest rule's maximum, {sizes[-1]}, is the largest searched: a larger one may be cheaper")
    if fair["chosen"] is not None and fair["chosen"]["size"] == lo_fixed and lo_fixed > 2:
        edges.append(f"the fair fixed size, {lo_fixed}, is the smallest evaluated: a smaller one may reach the power")
    searched = {"looks": list(looks), "spending": list(families), "futility": [bool(f) for f in futility],
                "maximum_sizes": [lo, sizes[-1]], "rules": len(scored), "passing": len(passing), "edges": edges,
                "effect_sims": int(eff.z.shape[0]), "null_sims": int(nul.z.shape[0]), "calibration_level": cal_level,
                "futility_type1": "binding" if binding else "non-binding",
                "analytic": sum(s.method == "analytic bounds" for s in scored)}
    return Search(scored, passing, fair, searched)


@dataclass
class _ConfirmSims:
    subjects: int = 0
    fixed_type1: float | None = None
    fixed_check: dict[str, Any] | None = None
    z_effect: Any = None
    z_null: Any = None
    c_fixed: Any = None  # the fresh null studies' Z at the fixed comparator's sizes (None: not whole there)


@dataclass
class _Second:
    """The search's effect paths and its second null set (``nul``: the search null studies), on which the
    rules chosen on the first set are re-calibrated (selection on one set, calibration on a
    second, type-I measured on a third)."""

    eff: Any
    nul: Any
    col: dict[int, int]
    cal_level: float
    fixed_sizes: Sequence[int]


def recalibrate(s: Scored, nul: Any, dirn: float, side: float, binding: bool) -> Scored:
    """Rule ``s`` (its shape and maximum chosen on the calibration null studies) re-calibrated on the
    second null set ``nul``, each side shifted to reject at exactly ``side`` there (:func:`fit_bounds` with
    ``exact``: the analytic shortcut's 2-SE band would leave a rule anywhere in it, e.g. at type-I .030 for
    a level of .0375, costing power)."""
    bounds, method = fit_bounds(s.shape, s.bounds.sizes, nul.z, s.columns, dirn, side, binding, exact=True)
    return dataclasses.replace(s, bounds=bounds, method=method)


def _confirm(top: Sequence[Scored], spec: PlannedStudy, null: PlannedStudy, sim: Any, null_sims: int, dirn: float,
             level: float, target: float, binding: bool, fair: dict[str, Any],
             say: Callable[[str], None],
             second: _Second | None = None) -> tuple[Candidate | None, list[dict[str, Any]], _ConfirmSims]:
    """The search's best rules, each re-calibrated on the second null set (``second``), on fresh studies
    (seed stream 2) in the search's order: the first with power ≥ target on the fresh effect studies is
    chosen; the fresh null studies choose nothing: they measure the chosen rule's type-I error (and
    the fixed comparator's, its critical values re-calibrated on the second set too)."""
    from cogtestbed.planning.kinds.sequential.seqsim import Rule

    info = _ConfirmSims()
    if not top:
        return None, [], info
    top, fixed_sizes = _on_second_set(top, second, fair, dirn, binding)
    fair_n = fair["chosen"]["size"] if fair["chosen"] else None
    n_top, sizes = _confirm_sizes(top, fair_n, fixed_sizes)
    col = {n: i for i, n in enumerate(sizes)}
    cols = tuple(tuple(col[n] for n in s.bounds.sizes) for s in top)
    fresh_nulls = FRESH_NULL_FACTOR * null_sims
    say(f"sequential (--looks auto): confirming the {len(top)} cheapest rules on {sim.sims} fresh studies under "
        f"the effect and {fresh_nulls} fresh null studies")
    csim = dataclasses.replace(sim, n_top=n_top, sizes=sizes, subjects=0,
                               label="sequential search: confirmation studies under the effect")
    (eff,) = csim.run([(spec, 2, Rule(tuple(s.bounds for s in top), cols, dirn))])
    nsim = dataclasses.replace(csim, sims=fresh_nulls, subjects=0, label="sequential search: fresh null studies")
    # type-I error of a non-binding design ignores futility: the fresh null paths run to the end
    (nul,) = nsim.run([(null, 2, None if not binding else Rule(tuple(s.bounds for s in top), cols, dirn))])
    info.subjects = csim.subjects + nsim.subjects
    _fixed_on_fresh_null(info, nul, col, fair, fair_n, fixed_sizes, dirn, level)
    chosen, rows, picked = choose(top, cols, eff, nul, dirn, level, target, binding)
    if picked is not None and chosen is not None:
        z_fresh = measure_fresh(chosen, cols[picked], csim, spec, dirn)
        info.z_effect, info.z_null = z_fresh, nul.z[:, list(cols[picked])]
    return chosen, rows, info


def _on_second_set(top: Sequence[Scored], second: _Second | None, fair: dict[str, Any], dirn: float,
                   binding: bool) -> tuple[Sequence[Scored], Sequence[int]]:
    """(the rules ``top``, the fair comparator's sizes) for the confirmation: with a second null set,
    each rule re-calibrated on it (:func:`recalibrate`, each side at half its level for a directed
    statistic) and the fair comparator's critical values too (:func:`_recalibrate_fair`); else as
    they are, with no sizes."""
    if second is None:
        return top, ()
    side = second.cal_level / 2 if dirn else second.cal_level
    top = [recalibrate(s, second.nul, dirn, side, binding) for s in top]
    if fair["chosen"] is not None:
        _recalibrate_fair(fair, second, dirn)
    return top, second.fixed_sizes


def _confirm_sizes(top: Sequence[Scored], fair_n: int | None,
                   fixed_sizes: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """(the largest size, every size in order) the confirmation studies are simulated to: each rule's
    look sizes, the fair comparator's chosen size and its grid of sizes."""
    n_top = max([s.bounds.sizes[-1] for s in top] + [fair_n or 0] + list(fixed_sizes))
    sizes = tuple(sorted({n for s in top for n in s.bounds.sizes} | ({fair_n} if fair_n else set())
                         | set(fixed_sizes)))
    return n_top, sizes


def _fixed_on_fresh_null(info: _ConfirmSims, nul: Any, col: Mapping[int, int], fair: dict[str, Any],
                         fair_n: int | None, fixed_sizes: Sequence[int], dirn: float, level: float) -> None:
    """The fixed comparator on the fresh null studies ``nul``, into ``info``: the chosen fair size's
    type-I error at its critical values (with its check against ``level``) and the z of every size
    of its grid (None where a path lacks one)."""
    if fair_n is not None and np.isfinite(nul.z[:, col[fair_n]]).all():
        c = fair["chosen"]
        info.fixed_type1 = fixed_reject_rate(nul.z[:, col[fair_n]], dirn, c["critical"], c["critical_other"])
        n = int(nul.z.shape[0])
        info.fixed_check = type1_check(int(round(info.fixed_type1 * n)), n, level)
    if fixed_sizes:
        fz = nul.z[:, [col[n] for n in fixed_sizes]]
        info.c_fixed = fz if np.isfinite(fz).all() else None


def _recalibrate_fair(fair: dict[str, Any], second: _Second, dirn: float) -> None:
    """The fair fixed comparator's size (chosen on the calibration null studies) with its critical
    values re-calibrated on the second null set, its power on the search's effect studies at them."""
    c = fair["chosen"]
    i = second.col[c["size"]]
    crit, other = critical_at(second.nul.z[:, [i]], dirn, second.cal_level)
    power = float(np.mean(toward(second.eff.z[:, i], dirn) >= crit[0]))
    fair["chosen"] = {**c, "critical": round(float(crit[0]), 6), "critical_other": round(float(other[0]), 6),
                      "power": power, "first_set_critical": c["critical"], "first_set_power": c["power"],
                      "calibrated_on": "the search null studies (the second set: the size was chosen on the first)"}


def choose(top: Sequence[Scored], cols: Sequence[Sequence[int]], eff: Any, nul: Any, dirn: float, level: float,
           target: float, binding: bool) -> tuple[Candidate | None, list[dict[str, Any]], int | None]:
    """``top`` (in order) on fresh paths (columns ``cols[i]`` of rule i): the first with power ≥
    ``target`` on the fresh effect studies (the fresh null studies ``nul`` choose nothing),
    every rule's fresh figures (type-I futility ignored unless ``binding``, with its one-sided upper
    bound), and the chosen one's index."""
    rows, chosen, picked = [], None, None
    for i, (s, c) in enumerate(zip(top, cols, strict=True)):
        effect = operate(s.bounds, eff.z, eff.est, c, dirn, dirn or None, getattr(eff, "reference", None))
        ref = getattr(nul, "reference", None)
        null_t1 = operate(s.bounds if binding else strip_futility(s.bounds), nul.z, nul.est, c, dirn, None, ref)
        obeyed = operate(s.bounds, nul.z, nul.est, c, dirn, None, ref)
        cand = Candidate(s.bounds, null_t1, effect, null_obeyed=obeyed)
        ok = effect.rate >= target
        check = type1_check(int(null_t1.rejected.sum()), null_t1.sims, level)
        row = {"looks": s.shape.looks, "spending": s.shape.spending, "futility": s.shape.futility,
               "maximum": s.bounds.sizes[-1], "bounds": s.method, "search_power": s.power, "search_type1": s.type1,
               "search_expected_units": s.units, "power": effect.rate, "type1": null_t1.rate,
               "type1_upper": check["upper"], "expected_units": float(effect.units.mean()), "passes": ok}
        rows.append({"row": row, "cand": cand})
        if ok and chosen is None:
            chosen, picked = cand, i
    return chosen, rows, picked


def _result(chosen: Candidate | None, confirmed: list[dict[str, Any]], info: _ConfirmSims, seconds: float,
            sims: int, null_sims: int, subjects: int, cpu: float) -> SequentialResult:
    cands = [c["cand"] for c in confirmed]
    empty = np.zeros((0, 0))
    z_e = info.z_effect if info.z_effect is not None else empty
    z_n = info.z_null if info.z_null is not None else empty
    return SequentialResult(chosen, cands, z_e, z_n, seconds, 2 * sims + (2 + FRESH_NULL_FACTOR) * null_sims,
                            null_sims, subjects, cpu)


# ----------------------------------------------------------------------------- plan.json
def attach_auto(payload: dict[str, Any], result: Any, pricer: Any, exp: Any, sims: int, workers: int,
                null_agent: str | None, say: Callable[[str], None] | None, null_sims: int | None,
                binding: bool) -> dict[str, Any]:
    """``plan --looks auto``: the search's design recorded in the payload (its ``sequential``
    section, and the run section pointed at it) as
    :func:`~cogtestbed.planning.kinds.sequential.seqpayload.attach_sequential`
    records a given design."""
    from cogtestbed.planning.kinds.sequential.seqpayload import record_sequential

    res, seq = auto_payload(result, pricer, exp, sims, workers, null_agent, say, null_sims, binding)
    return record_sequential(payload, seq, res, result, pricer)


def auto_payload(result: Any, pricer: Any, exp: Any, sims: int, workers: int, null_agent: str | None,
                 say: Callable[[str], None] | None, null_sims: int | None,
                 binding: bool) -> tuple[SequentialResult, dict[str, Any]]:
    """``plan --looks auto`` at the fixed plan's chosen design: the search, the chosen design's every
    look priced, and the ``sequential`` section of plan.json with the saving stated against the fixed
    design at equal type-I error (and, for reference, against the fixed plan's own design)."""
    from cogtestbed.planning.kinds.sequential.seqpayload import fair_payload, price_ahead, price_looks

    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    auto = plan_auto(spec, getattr(point, size_name), point.trials, point.runs, result.target, sims, workers,
                     null_agent, null_sims, binding, say)
    res, fair = auto.result, auto.fair
    if res.chosen is not None:
        price_ahead(pricer, exp, spec, point, size_name, res, fair, workers)
        price_looks(res.chosen, spec, pricer, exp, point, size_name)
    futility = res.chosen is not None and res.chosen.bounds.futility is not None
    seq = fair_payload(result, res, fair, pricer, exp, futility, binding)
    seq["auto"] = {"searched": auto.searched, "confirmed": auto.confirmed,
                   "fair_fixed": {k: v for k, v in fair.items() if k != "rows"}, "fixed_by_size": fair["rows"]}
    record_fit(seq, spec, auto.extra.get("statistic") or AUTO_FIT, auto.extra.get("statistic_choice"))
    if res.chosen is not None:
        honest_figures(seq, auto, res, result, spec.level, spec.seed, workers)
    seq["auto"]["lines"] = auto_lines(seq)
    if res.chosen is None:
        seq["reason"] = (f"none of the {auto.searched['passing']} rules meeting alpha and power on the search's "
                         f"studies (of {auto.searched['rules']}) kept type-I error <= alpha and power >= "
                         f"{result.target:g} on fresh studies" if auto.searched["passing"] else
                         f"no rule of the {auto.searched['rules']} searched reaches power {result.target:g} with "
                         "type-I error <= alpha")
    return res, seq


def record_fit(seq: dict[str, Any], spec: PlannedStudy, fit: SubjectFit | AmortisedFit = AUTO_FIT,
               choice: Mapping[str, Any] | None = None) -> None:
    """A model target's per-subject statistic (the amortised estimator or
    :data:`~cogtestbed.planning.kinds.sequential.seqfit.AUTO_FIT`) into the design's statistic, which ``run --plan``'s
    looks then compute (``statistic.fit``), what chose it (``auto.statistic_choice``) and its report line."""
    if not isinstance(spec, PowerStudy):
        return
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import fitted_model

    model = fitted_model(spec, get_experiment(spec.experiment).model(spec.models[0]))
    if "statistic" in seq.get("design", {}):
        seq["design"]["statistic"]["fit"] = fit.record(model)
        if isinstance(fit, AmortisedFit):  # the fixed plan's test name, on the amortised estimates
            test = str(seq["design"]["statistic"].get("test", "two-sided one-sample t-test on per-subject MLE"))
            seq["design"]["statistic"]["test"] = test.replace("per-subject MLE", "per-subject amortised estimates")
    whose = "amortised per-subject estimate" if isinstance(fit, AmortisedFit) else "coarse-start per-subject MLE"
    if isinstance(seq.get("note"), str):
        seq["note"] += (f"; the fixed plan's test here (and the fair comparator's) is on the {whose} of the design's "
                        "statistic.fit")
    seq["auto"]["fit"] = fit.words(model)
    if choice is not None:
        seq["auto"]["statistic_choice"] = dict(choice)


def honest_figures(seq: dict[str, Any], auto: AutoResult, res: SequentialResult, result: Any, level: float,
                   seed: int, workers: int = 1) -> None:
    """The selection-honest figures into the ``sequential`` section: the fresh type-I error with its upper bound
    (``null.type1_check``), the saving as an estimate with its interval against the smoothed comparator
    at the sequential design's measured level (``saving.estimate``; costs linear in units, per unit the
    fixed plan's priced design), the data-generating assumptions and the robustness check."""
    from cogtestbed.planning.pricing import money

    if res.chosen is None:
        return
    null = res.chosen.null
    seq["null"]["type1_check"] = type1_check(int(null.rejected.sum()), null.sims, level)
    seq["assumptions"] = auto.extra.get("assumptions", [])
    if "robustness" in auto.extra:
        seq["robustness"] = auto.extra["robustness"]
    smooth = auto.fair.get("smoothed")
    if smooth is None or any(c is None for c in res.chosen.cost) or not math.isfinite(smooth["size"]):
        return
    unit_cost = money(result.chosen.cost) / getattr(result.chosen.point, result.size_name)
    est = saving_estimate(smooth, unit_cost, [money(c) for c in res.chosen.cost], res.chosen.effect.stop_look, seed)
    joint = joint_saving(smooth["paths"], res.chosen.null.rejected, res.chosen.effect.stop_look,
                         [money(c) for c in res.chosen.cost], unit_cost, smooth["sizes"], direction(result.spec),
                         level, result.target, seed, workers=workers)
    est = {**est, "interval": joint["at_level"]["interval"], "interval_method": joint["method"],
           "effect_only_interval": est["interval"]}
    seq["saving"]["estimate"] = {**est, "fixed_type1": smooth.get("fresh_type1"), "method": smooth["method"],
                                 "cost": "costs linear in units at the plan's trials (per unit: the fixed plan's "
                                         "priced design)"}
    curve = mle_power_curve(result.evaluated, result.chosen.point, result.size_name)
    mle = None if curve is None else mle_equal_power(curve, result.target, res.chosen.effect.stop_look,
                                                      [money(c) for c in res.chosen.cost], unit_cost, seed)
    if mle is not None:
        seq["saving"]["mle_equal_power"] = {**mle, "sequential_power": float(res.chosen.effect.rate),
                                            "sequential_power_sims": int(res.chosen.effect.sims)}
    seq["auto"]["fair_fixed"]["smoothed"] = {k: v for k, v in smooth.items() if k not in ("boot_sizes", "paths")}


def auto_lines(seq: Mapping[str, Any]) -> list[str]:
    """What ``--looks auto`` searched and confirmed (text report lines)."""
    a = seq["auto"]["searched"]
    conf = seq["auto"]["confirmed"]
    pick = next((i for i, r in enumerate(conf) if r["passes"]), None)
    level = a.get("calibration_level")
    out = [f"  --looks auto: {a['rules']:,} rules ({a['looks'][0]}-{a['looks'][-1]} looks x {len(a['spending'])} "
           f"spending functions x futility off/on x maximum {a['maximum_sizes'][0]}-{a['maximum_sizes'][1]}) applied "
           f"to the same {a['effect_sims']:,} effect and 2 x {a['null_sims']:,} null studies ({a['analytic']:,} with "
           f"analytic bounds); {a['passing']:,} met alpha and power"
           + (f"; every rule and the fixed comparator calibrated to level {level:.4f} (alpha less a margin "
              "for the calibration's MC error)" if level is not None else "")]
    if seq["auto"].get("fit"):
        out.append(f"  statistic: {seq['auto']['fit']}")
    pick_stat = seq["auto"].get("statistic_choice")
    if pick_stat:
        out.append(f"  statistic chosen: {choice_words(pick_stat)}")
    out += [f"  note: {e}" for e in a.get("edges", [])]
    if pick is not None:
        out.append(f"  chosen: the search's #{pick + 1} of {len(conf)}, each re-calibrated on the search null studies "
                   "(a second set), then confirmed on fresh studies: the first with power >= target there (the fresh "
                   "null studies choose nothing; its error rates below are the fresh ones)")
    check = seq.get("null", {}).get("type1_check")
    if check:
        out.append(f"  fresh {type1_words(check)}")
    est = seq.get("saving", {}).get("estimate")
    if est:
        ft = est.get("fixed_type1")
        out.append(f"  saving estimate {est['percent']:.1f}% [95% {est['interval'][0]:.1f}, {est['interval'][1]:.1f}] "
                   f"against the fixed test at the sequential design's measured type-I {est['level']:.4f}: "
                   f"{est['fixed_size']:.1f} [{est['fixed_size_interval'][0]:.1f}, "
                   f"{est['fixed_size_interval'][1]:.1f}] units from a probit power curve"
                   + (f"; its own fresh {type1_words(ft)} at {ft['size']} units" if ft else "")
                   + (" (interval: joint resampling of null and effect studies)" if est.get("interval_method") else ""))
    mle = seq.get("saving", {}).get("mle_equal_power")
    if mle:
        out.append(f"  saving against the fixed plan's MLE test at nominal alpha and equal power ({mle['power']:.2f}; "
                   f"{mle['fixed_size']:.1f} [{mle['fixed_size_interval'][0]:.1f}, {mle['fixed_size_interval'][1]:.1f}]"
                   f" units from a probit curve through its simulated sizes; sequential power "
                   f"{mle['sequential_power']:.3f} on {mle['sequential_power_sims']:,} fresh studies): "
                   f"{mle['percent']:.1f}% [95% {mle['interval'][0]:.1f}, {mle['interval'][1]:.1f}]")
    for line in seq.get("assumptions", []):
        out.append(f"  model: {line}")
    rob = seq.get("robustness")
    if rob:
        for r in rob["rows"]:
            out.append(f"  robustness: {r['alternative']}: {type1_words(r)}")
        out.append(f"  robustness: worst {rob['worst']['alternative']}: type-I {rob['worst']['rate']:.4f}")
    return out


def choice_words(choice: Mapping[str, Any]) -> str:
    """What chose the plan's per-subject statistic (``auto.statistic_choice``), in a line: the standardized effects
    (in the effect's direction), the null means in SDs, the training's span and R², and the rule."""
    d = choice.get("standardized_effect")
    if not d:
        return f"{choice['chosen']} ({choice.get('reason', '')})"

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    ratio = choice.get("subjects_ratio")
    null = choice.get("null_mean_sd") or {}
    span = choice.get("training_effects") or []
    return (f"{choice['chosen']}: standardized effect {fmt(d['amortised'])} amortised vs {fmt(d['coarse_start_mle'])} "
            f"coarse-start MLE on {choice['validation_subjects']:,} fresh subjects"
            + (f" (subjects needed x {ratio:.2f})" if ratio is not None else "")
            + (f"; null means {fmt(null.get('amortised'))} and {fmt(null.get('coarse_start_mle'))} SDs" if null else "")
            + (f"; trained on {choice['training_subjects']:,} subjects at {span[0]:g} to {span[-1]:g} x the effect"
               if span else "")
            + f"; training R2 {choice['training_r2']:.2f}; {choice['rule']}")
