"""Plan an LLM study before spending: the cheapest design that reaches a target power, in dollars.

``cogtestbed plan`` joins the two halves the testbed already has: the generic power driver
(:mod:`cogtestbed.studies.driver`, any of its three power forms: a model parameter or contrast,
a metric difference between two settings, a statistical test the metrics function reports) answers
in subjects × runs × trials, and the dry run of an LLM run (:func:`cogtestbed.llm_adapters.runs.pricing.dry_run`)
answers in calls, tokens and dollars.  A :class:`Planner` searches the design space the experiment
declares and prices every design it simulates with that very dry run.

The design space it searches (subjects or runs, runs per subject, trials per session, read from
the :class:`~cogtestbed.experiments.spec.ExperimentSpec`) is :mod:`~cogtestbed.planning.space`;
the power at a design, simulated in growing batches, :mod:`~cogtestbed.planning.kinds.power.power_sims`;
the prices, :mod:`~cogtestbed.planning.pricing`; the recovery at the chosen design,
:mod:`~cogtestbed.planning.recovery`.

Search (sequential, after Bosch-style sequential Monte-Carlo power: each design gets simulations
in growing batches until its power is clearly above or below the target):

1. every combination of the non-size axes on a coarse grid is visited in order of its cost per
   session; its size axis is searched upwards from the smallest size (doubling; once two sizes
   have failed, to where the probit curve fitted to them reaches the target, if nearer), then by
   interpolated bisection (probit of power linear in √size, the shape of a t-test's power curve) down to
   :data:`REFINE_REL` of the size — only up to the largest size cheaper than the best design so far
   (and than ``max_cost``), which prunes most combinations without a single simulation;
2. the non-size axes are refined once around the best combination (midpoints of the coarse grid);
3. the cheapest design that reaches the target gets simulations until its Monte-Carlo SE
   √(p(1−p)/sims) is at most ``mc_se`` (binomial SE), in batches of half its simulations that stop
   early once it is clearly below the target; should it fall below the target, the next cheapest
   candidate is taken.

Every simulated design is priced exactly, through the same dry run as ``cogtestbed run --dry-run``
(:class:`~cogtestbed.planning.pricing.Pricer`), so a plan's calls, tokens and dollars equal
that command's by construction.  While searching, combinations are ordered and pruned by their
cost per session.

Invalid answers: an expected invalid-answer rate (and rate of uniformly random answers) enters the
simulation as a :class:`~cogtestbed.lapse.Lapse` of every simulated subject, so the power
accounts for the trials a real LLM loses.  A pilot run directory supplies the measured invalid
rate, the measured tokens per call and, for a model-level target, the population medians of the
model fitted to the pilot (the base of the power simulation).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import CogtestbedError, InputError
from cogtestbed.formatting import rate_text
from cogtestbed.planning.ceiling import Ceiling, people_ceiling
from cogtestbed.planning.kinds.power.power_sims import DECIDE_MAX_SIMS, DECIDE_Z, Estimate, PowerEvaluator, decided
from cogtestbed.planning.pricing import Cost, Pricer, cost_key
from cogtestbed.planning.recovery import recovery_at
from cogtestbed.planning.space import Axis, Point, sessions_per_llm
from cogtestbed.studies.driver import check_study
from cogtestbed.studies.study_data import design_for_trials
from cogtestbed.studies.study_kinds import PlannedStudy, PowerStudy
from cogtestbed.timings import cpu_seconds

#: Largest Monte-Carlo SE of the power at the chosen design (binomial SE √(p(1−p)/sims)).
DEFAULT_MC_SE = 0.03

#: Simulations of a design's first look; later looks double them.
FIRST_BATCH = 24
#: Failed sizes of a combination after which the size ladder follows the fitted probit curve
#: instead of doubling (two points determine its intercept and slope).
EXTRAPOLATE_AFTER = 2

#: Power the last failed size must reach before the curve is extrapolated (below it, the fitted
#: slope rests on a handful of detections and may undershoot by far).
EXTRAPOLATE_FROM = 0.2

#: Most simulations spent on the chosen design while bringing its MC SE down to ``mc_se``.
MAX_FINAL_SIMS = 1000


#: The size axis is refined until the bracket is at most this fraction of the passing size.
REFINE_REL = 0.1


#: Added to the study's seed for the fresh studies at the chosen design that measure its recovery
#: (effect bias, coverage): seeds no power simulation of the search used.
FRESH_SEED_OFFSET = 7_777_777


#: The sizes a plan searches with an option of their own; any other axis is a design field (``--design NAME=a,b,c``).
OWN_OPTION_AXES = ("subjects", "runs", "trials")


def range_flag(axis: str) -> str:
    """The option that gives axis ``axis`` a wider range, as a plan's notes name it."""
    return f"--{axis}" if axis in OWN_OPTION_AXES else f"--design {axis}=a,b,c"


class PlanInfeasible(CogtestbedError, ValueError):
    """No design within the budget (and the searched ranges) reaches the target power."""


# ----------------------------------------------------------------------------- the planner
@dataclass
class Evaluated:
    point: Point
    estimate: Estimate
    cost: Cost | None = None

    def row(self, size_name: str, spec: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {**self.point.as_dict(), **dict(self.point.fields),
                               "design": self.point.label(size_name, spec),
                               "power": self.estimate.rate, "mc_se": self.estimate.mc_se,
                               "sims": self.estimate.sims}
        if self.cost is not None:
            out.update(calls=self.cost.calls, prompt_tokens=self.cost.prompt_tokens,
                       completion_tokens=self.cost.completion_tokens, dollars=self.cost.dollars,
                       cost_source=self.cost.source)
        return out


@dataclass
class PlanResult:
    """The outcome of :meth:`Planner.plan` (see :func:`plan_payload` for its JSON form)."""

    spec: PlannedStudy
    target: float
    size_name: str
    chosen: Evaluated
    evaluated: list[Evaluated]
    frontier: list[Evaluated]
    recovery: dict[str, Any]
    seconds: float
    cpu_seconds: float
    simulations: int
    pruned: list[dict[str, Any]]
    notes: list[str]
    #: The design axis searched besides the size: ``trials`` or another integer design field (None: neither).
    searched: str | None = "trials"
    #: The fresh studies at the chosen design (:meth:`Planner.fresh_table`): the recovery's and the
    #: calibrated test's power, not the studies that chose the design (None: none simulated).
    fresh: pd.DataFrame | None = None
    #: Local processes its simulations ran on (the plan's later studies run on as many).
    workers: int = 1


class Planner:
    """The sequential design search of the module docstring."""

    def __init__(self, spec: PlannedStudy, pricer: Pricer, size: Axis, others: Sequence[Axis], target: float = 0.8,
                 max_cost: float | None = None, mc_se: float = DEFAULT_MC_SE, workers: int = 1,
                 on_progress: Callable[[str], None] | None = None, extend_to: int | None = None) -> None:
        if not 0 < target < 1:
            raise InputError(f"`power` must be in (0, 1), got {target}")
        if not 0 < mc_se < 0.5:
            raise InputError(f"`mc_se` must be in (0, 0.5), got {mc_se}")
        self.exp = check_study(spec)
        self.spec, self.pricer, self.size, self.others = spec, pricer, size, list(others)
        self.target, self.max_cost, self.mc_se = target, max_cost, mc_se
        self.power = PowerEvaluator(spec, workers)
        self.say = on_progress or (lambda _msg: None)
        self.best: tuple[float, Point] | None = None
        self.passing: dict[Point, Estimate] = {}
        self.pruned: list[dict[str, Any]] = []
        self.unit_costs: dict[tuple[Any, ...], Cost] = {}
        #: The size axis may grow to this top (None: the range given is searched as it is).
        self.extend_to = extend_to
        self.notes: list[str] = []
        #: The power ceiling of a fixed group of people, once shown below the target (:mod:`.ceiling`).
        self.ceiling: Ceiling | None = None
        #: Simulations of each design when its power was last said: a look at a design already decided
        #: (the extended range's search walks its ladder again) reuses its studies and says nothing new.
        self.said: dict[Point, int] = {}

    # -- points and prices ---------------------------------------------------------------
    def point(self, size: int, combo: Mapping[str, int]) -> Point:
        values: dict[str, int | None] = {"subjects": 1, "runs": 1, "trials": None, **combo, self.size.name: size}
        fields = tuple(sorted((k, int(v)) for k, v in combo.items() if k not in ("subjects", "runs", "trials")
                              and v is not None))
        return Point(int(values["subjects"] or 1), int(values["runs"] or 1), values["trials"], fields)

    def design(self, point: Point) -> Any:
        return design_for_trials(self.exp, point.trials, point.design(self.spec.design))

    def unit_cost(self, combo: Mapping[str, int]) -> Cost:
        """Cost of one session of the combination's design (search estimate)."""
        key = (int(combo.get("runs", 1)), combo.get("trials"), self.point(1, combo).fields)
        if key not in self.unit_costs:
            self.unit_costs[key] = self.pricer.per_session(self.design(self.point(1, combo)))
        return self.unit_costs[key]

    def sessions(self, point: Point) -> int:
        return sessions_per_llm(self.spec, point)

    def exact_cost(self, point: Point) -> Cost:
        return self.pricer.priced(self.design(point), self.sessions(point))

    def affordable(self, combo: Mapping[str, int], below_best: bool = True) -> int:
        """Largest size whose estimated cost stays within ``max_cost`` (and below the best so far)."""
        unit = cost_key(self.unit_cost(combo))
        per_size = unit * self.sessions(self.point(1, combo))
        best = self.best[0] if self.best and below_best else None
        bounds = [b for b in (self.max_cost, best) if b is not None]
        if not bounds or per_size <= 0:
            return self.size.values[-1]
        limit = min(bounds) / per_size
        fitting = [v for v in self.size.values if v <= limit]
        return fitting[-1] if fitting else 0

    # -- the sequential look ---------------------------------------------------------------
    def look(self, point: Point) -> Estimate:
        """Simulate ``point`` in doubling batches until it is clearly above/below the target.

        Every simulated design is priced (:meth:`evaluated`), so its dry run starts on the pool's
        workers once its first batch is in (:meth:`Pricer.submit`): the prompts are rendered while
        the search goes on, not one design after another at its end.  A design looked at before
        (:meth:`extend_sizes` searches a combination again from its smallest size) reuses its
        simulations (:meth:`PowerEvaluator.ensure` runs only missing ones) and is not said again."""
        sims = max(FIRST_BATCH, self.power.done.get(point, 0))
        while True:
            est = self.power.ensure(point, sims)
            if self.power.pool is not None:
                self.pricer.submit(self.power.pool, self.design(point), self.sessions(point))
            if decided(est, self.target):
                if self.said.get(point) != est.sims:
                    self.said[point] = est.sims
                    self.say(f"{point.label(self.size.name, self.spec)}: power {rate_text(est.rate, est.sims)}")
                return est
            sims = min(2 * sims, DECIDE_MAX_SIMS)

    def passes(self, point: Point) -> bool:
        est = self.look(point)
        ok = est.rate >= self.target
        if ok:
            self.passing[point] = est
        return ok

    def smallest_passing(self, combo: Mapping[str, int], hi: int) -> int | None:
        """Smallest size (≤ ``hi``) reaching the target: doubling, then the fitted power curve.

        After the doubling ladder brackets the target, a probit curve Φ(a + b·√size) (the shape
        of a t-test's power) is fitted to every simulation of the combination and the smallest size
        it puts at the target is looked at; a miss moves up by :data:`REFINE_REL` (refitting).
        """
        values = [v for v in self.size.values if v <= hi]
        if not values:
            return None
        fail: int | None = None
        x = values[0]
        while not self.passes(self.point(x, combo)):
            fail = x
            if x >= values[-1] or self.people_limited(combo):
                return None
            x = self.next_rung(combo, values, x)
        passing = x
        while fail is not None and passing - fail > max(1, math.ceil(REFINE_REL * passing)):
            guess = self.predicted_size(combo, fail, passing)
            if guess is None:
                break
            if self.passes(self.point(guess, combo)):
                passing = guess
                break
            fail = guess
        return passing

    def fixed_people(self) -> int | None:
        """The number of people of a two-group plan whose first group is a fixed number of people
        (``--population``'s or the ``--human`` sample), else None."""
        spec = self.spec
        if not isinstance(spec, PowerStudy) or spec.groups != 2:
            return None
        if spec.people is not None:
            return int(spec.people)
        return len(spec.reference.values) if spec.reference is not None else None

    def people_limited(self, combo: Mapping[str, int]) -> bool:
        """Whether the fixed people's power ceiling (:func:`~cogtestbed.planning.ceiling.people_ceiling`,
        fitted to every size of ``combo`` simulated so far) is shown below the target; it then holds for
        every LLM design (:attr:`ceiling`), and the search stops."""
        people = self.fixed_people()
        if people is None or self.ceiling is not None:
            return self.ceiling is not None
        looks = [(getattr(p, self.size.name), self.power.estimate(p)) for p in self.power.done
                 if self._in_combo(p, combo)]
        level = float(getattr(self.spec, "level", 0.05))
        found = people_ceiling([n for n, _ in looks], [e.hits for _, e in looks], [e.sims for _, e in looks],
                               self.target, level)
        if found is None or not found.below:
            return False
        self.ceiling = found
        self.say(f"the target is out of reach: {found.words(people, self.target)}")
        return True

    def next_rung(self, combo: Mapping[str, int], values: Sequence[int], x: int) -> int:
        """The size looked at after ``x`` failed: double it, or, once two sizes have failed, the
        size the probit curve fitted to them puts at the target, if that is nearer (an overshoot
        of the doubling ladder costs a look at up to twice the needed size)."""
        doubled = next((v for v in values if v >= 2 * x), values[-1])
        looked = {getattr(p, self.size.name) for p in self.power.done if self._in_combo(p, combo)}
        if len(looked) < EXTRAPOLATE_AFTER or not self.power.estimate(self.point(x, combo)).rate >= EXTRAPOLATE_FROM:
            return doubled
        want = self.target_size(combo)
        if want is None:
            return doubled
        ahead = [v for v in values if x < v <= doubled and v >= want]
        return ahead[0] if ahead else doubled

    def target_size(self, combo: Mapping[str, int]) -> float | None:
        """The size at which the probit curve Φ(a + b·√size), fitted to every simulation of the
        combination, reaches the target (None where the fitted curve does not rise)."""
        looks = [(p, self.power.estimate(p)) for p in self.power.done if self._in_combo(p, combo)]
        sizes = np.array([getattr(p, self.size.name) for p, _ in looks], float)
        hits = np.array([e.hits for _, e in looks], float)
        sims = np.array([e.sims for _, e in looks], float)
        a, b = fit_probit(np.sqrt(sizes), hits, sims)
        if not b > 0:
            return None
        return ((float(stats.norm.ppf(self.target)) - a) / b) ** 2

    def predicted_size(self, combo: Mapping[str, int], fail: int, passing: int) -> int | None:
        """Smallest size strictly inside (fail, passing) the fitted probit curve puts at the target."""
        inner = [v for v in self.size.values if fail < v < passing]
        if not inner:
            return None
        fitted = self.target_size(combo)
        want = math.sqrt(fail * passing) if fitted is None else fitted
        above = [v for v in inner if v >= want]
        return above[0] if above else inner[-1]

    def _in_combo(self, point: Point, combo: Mapping[str, int]) -> bool:
        return all(point.value(k) == v for k, v in combo.items())

    # -- the search ------------------------------------------------------------------------
    def search_combo(self, combo: Mapping[str, int]) -> None:
        hi = self.affordable(combo)
        label = ", ".join(f"{k}={v}" for k, v in combo.items()) or "the design"
        if self.ceiling is not None:
            self.pruned.append({**combo, "reason": "the fixed people's power ceiling is below the target"})
            return
        if hi < self.size.values[0]:
            self.pruned.append({**combo, "reason": "its smallest size costs more than the best design so far"
                                if self.best else "its smallest size costs more than --max-cost"})
            self.say(f"{label}: pruned (cost)")
            return
        size = self.smallest_passing(combo, hi)
        if size is None:
            self.pruned.append({**combo, "reason": f"no size up to {hi} reaches the target",
                                "at_top": hi >= self.size.values[-1] and self.ceiling is None})
            return
        point = self.point(size, combo)
        cost = cost_key(self.exact_cost(point))
        if self.max_cost is not None and cost > self.max_cost:
            return
        if self.best is None or cost < self.best[0]:
            self.best = (cost, point)

    def combos(self, grids: Sequence[Sequence[int]]) -> list[dict[str, int]]:
        names = [a.name for a in self.others]
        out = [dict(zip(names, values, strict=True)) for values in _product(grids)]
        self.price_sessions(out)
        return sorted(out, key=lambda c: cost_key(self.unit_cost(c)) * self.sessions(self.point(1, c)))

    def price_sessions(self, combos: Sequence[Mapping[str, int]]) -> None:
        """One session of each combination's design priced (a dry run each), counted on the heartbeat: on the
        plan's workers where it has more than one (the same dry runs, rendered side by side)."""
        from cogtestbed.planning.pricing import UNIT_SESSIONS
        from cogtestbed.progress import beat, tick

        label = "fixed plan: pricing a session of each design (dry run, each prompt rendered)"
        serial = self.power.workers <= 1
        if not serial:
            self.pricer.price_all([(self.design(self.point(1, c)), UNIT_SESSIONS) for c in combos],
                                  self.power.workers, label)
        hb = beat()
        if hb is not None and len(combos) > 1 and serial:
            hb.phase(label, len(combos))
        for combo in combos:
            self.unit_cost(combo)
            if serial:
                tick()

    def refine_combos(self) -> list[dict[str, int]]:
        """Midpoints of the coarse grid next to the best combination, one axis at a time."""
        if self.best is None:
            return []
        point = self.best[1]
        out = []
        for axis in self.others:
            here = point.value(axis.name)
            coarse = axis.coarse()
            i = coarse.index(here) if here in coarse else None
            if i is None:
                continue
            for j in (i - 1, i + 1):
                if 0 <= j < len(coarse):
                    mid = axis.between(here, coarse[j])
                    if mid is not None:
                        combo = {a.name: point.value(a.name) for a in self.others}
                        combo[axis.name] = mid
                        out.append(combo)
        return out

    def plan(self) -> PlanResult:
        start, cpu0 = time.perf_counter(), cpu_seconds()
        try:
            for combo in self.combos([a.coarse() for a in self.others]):
                self.search_combo(combo)
            for combo in self.refine_combos():
                self.search_combo(combo)
            self.extend_sizes()
            chosen = self.finalise()
            self.notes.extend(self.edge_notes(chosen.point))
            fresh = self.fresh_table(chosen)
            recovery = recovery_at(self.spec, self.exp, chosen.point, fresh)
        except BaseException:  # an interrupt (SIGTERM, Ctrl-C) or an error: the workers end now
            self.power.close(abort=True)
            raise
        self.power.close()
        evaluated = self.evaluated()
        return PlanResult(self.spec, self.target, self.size.name, chosen, evaluated, pareto(evaluated), recovery,
                          time.perf_counter() - start, cpu_seconds() - cpu0, self.power.simulations, self.pruned,
                          self.notes, next((a.name for a in self.others if a.name != "runs"), None), fresh,
                          self.power.workers)

    def fresh_table(self, chosen: Evaluated) -> pd.DataFrame:
        """As many simulated studies at the chosen design as chose it, on seeds of their own
        (:data:`FRESH_SEED_OFFSET`): the effect bias and coverage, and an LLM-against-people plan's
        calibrated test's power, are measured on studies other than those whose power picked the
        design (which favour designs whose estimates ran high).  An LLM against people: its column
        ``llm_values`` holds each study's LLM group (per-subject values on the test's scale), the
        groups the conditional power tests against the real participants (:func:`conditional_groups`), and
        it has as many fresh studies as its calibration has null studies (at least
        :data:`~cogtestbed.studies.people_level.MIN_NULL_STUDIES`), so that the calibrated and nominal tests'
        powers are read to an MC SE near 0.015, not 0.035, and do not move with the seed."""
        from cogtestbed.planning.kinds.power.power_sims import reuses_fits
        from cogtestbed.studies.people_level import null_study_count

        sims = null_study_count(chosen.estimate.sims) if reuses_fits(self.spec) else chosen.estimate.sims
        return one_size_table(self.spec.model_copy(update={"seed": self.spec.seed + FRESH_SEED_OFFSET}),
                              chosen.point, sims, self.power.workers,
                              "fixed plan: fresh studies for the recovery at", self.power.seconds_per_unit)

    def extend_sizes(self) -> None:
        """Double the size axis's top (to :attr:`extend_to`) while a combination failed only for
        want of size at the top, and search those combinations again (their earlier looks are
        reused); then refine around the best combination again."""
        extended = False
        while self.extend_to is not None and self.size.values[-1] < self.extend_to:
            retry = [p for p in self.pruned if p.get("at_top")]
            if not retry:
                break
            top = self.size.values[-1]
            new_top = min(self.extend_to, 2 * top)
            self.size = Axis(self.size.name, (*self.size.values, *range(top + 1, new_top + 1)))
            self.say(f"no size up to {top} {self.size.name} reaches the target for {len(retry)} combination(s) "
                     f"that would be cheaper: the {self.size.name} range is extended to {new_top}")
            self.pruned = [p for p in self.pruned if not p.get("at_top")]
            names = [a.name for a in self.others]
            for entry in retry:
                self.search_combo({k: entry[k] for k in names})
            extended = True
        if extended:
            self.notes.append(f"the {self.size.name} range was extended to {self.size.values[-1]} (cap "
                              f"{self.extend_to}): designs cheaper than the best one below the default top "
                              "needed more")
            for combo in self.refine_combos():
                self.search_combo(combo)

    def edge_notes(self, point: Point) -> list[str]:
        """Where the chosen design sits at an edge of a searched range (a wider range may hold a
        cheaper design), one sentence each."""
        out = []
        size = getattr(point, self.size.name)
        if len(self.size.values) > 1 and size == self.size.values[-1]:
            cap = " (the extension's cap)" if self.extend_to is not None else ""
            out.append(f"the chosen design is at the top of the {self.size.name} range, {size}{cap}: "
                       f"a wider {range_flag(self.size.name)} range may hold a cheaper design")
        for axis in self.others:
            here = point.value(axis.name)
            if len(axis.values) > 1 and here in (axis.values[0], axis.values[-1]):
                end = "top" if here == axis.values[-1] else "bottom"
                out.append(f"the chosen design is at the {end} of the {axis.name} range, {here} "
                           f"({axis.values[0]}-{axis.values[-1]}): a wider {range_flag(axis.name)} range may hold a "
                           "cheaper design")
        return out

    def finalise(self) -> Evaluated:
        """The cheapest passing design whose power stays ≥ target once its MC SE is ≤ ``mc_se``.

        A design that drops below the target with more simulations is replaced by the size the
        refitted power curve of its combination predicts between it and the next passing size.
        """
        failed: set[Point] = set()
        while True:
            candidates = [(cost_key(self.exact_cost(p)), p) for p in self.passing if p not in failed]
            candidates = [c for c in candidates if self.max_cost is None or c[0] <= self.max_cost]
            if not candidates:
                raise PlanInfeasible(self.infeasible_message())
            _, point = min(candidates)
            est = self.top_up(point)
            if est.rate >= self.target:
                return Evaluated(point, est, self.exact_cost(point))
            failed.add(point)
            del self.passing[point]
            self.say(f"{point.label(self.size.name, self.spec)}: {est.rate:.3f} after {est.sims} sims, below target")
            self.step_up(point)

    def step_up(self, point: Point) -> None:
        """Look at the predicted size between a failed design and the next passing one of its combination."""
        combo = {a.name: point.value(a.name) for a in self.others}
        size = getattr(point, self.size.name)
        while True:
            above = [getattr(p, self.size.name) for p in self.passing if self._in_combo(p, combo)
                     and getattr(p, self.size.name) > size]
            top = min(above) if above else self.affordable(combo, below_best=False)
            nxt = self.predicted_size(combo, size, top) if top > size else None
            if nxt is None and top > size and not above:
                nxt = top
            if nxt is None or self.passes(self.point(nxt, combo)):
                return
            size = nxt

    def top_up(self, point: Point) -> Estimate:
        """Simulate ``point`` until its MC SE is ≤ ``mc_se`` (at least the SE a power at the target has)."""
        est = self.power.estimate(point)
        floor = self.target * (1 - self.target)
        while est.sims < MAX_FINAL_SIMS:
            need = math.ceil(max(est.rate * (1 - est.rate), floor) / self.mc_se ** 2)
            if est.sims >= need or self.futile(est):
                break
            est = self.power.ensure(point, min(MAX_FINAL_SIMS, need, est.sims + max(FIRST_BATCH, est.sims // 2)))
        return est

    def futile(self, est: Estimate) -> bool:
        """Whether a design's power is clearly below the target (:data:`DECIDE_Z` binomial SEs at
        the target), so topping it up further cannot make it the chosen design."""
        return est.sims > 0 and self.target - est.rate >= DECIDE_Z * math.sqrt(self.target * (1 - self.target)
                                                                              / est.sims)

    def infeasible_message(self) -> str:
        best = max(self.evaluated(), key=lambda e: e.estimate.rate, default=None)
        budget = f" under ${self.max_cost:g}" if self.max_cost is not None else ""
        where = (f"; the most powerful design simulated, {best.point.label(self.size.name, self.spec)}, reaches "
                 f"{best.estimate.rate:.2f} ± {best.estimate.mc_se:.2f}") if best is not None else ""
        hint = "raise --max-cost, widen the ranges or lower --power" if self.max_cost is not None else \
            "widen the ranges or lower --power"
        people = self.fixed_people()
        if self.ceiling is not None and people is not None:
            where += f"; {self.ceiling.words(people, self.target)}"
            hint = "lower --power, test a larger effect or compare with more people"
        return (f"no design{budget} reaches {self.target:.0%} power for {describe_target(self.spec)} "
                f"(sizes {self.size.values[0]}-{self.size.values[-1]} {self.size.name}){where}: {hint}")

    def evaluated(self) -> list[Evaluated]:
        """Every simulated design with its power and its exact (dry-run) cost; the pricing is a
        heartbeat phase of its own (a large design's dry run renders every prompt)."""
        from cogtestbed.progress import beat, tick

        points = sorted(self.power.done)
        hb = beat()
        if hb is not None:
            hb.phase("fixed plan: pricing every simulated design (dry run, each prompt rendered)", len(points))
        out = []
        for point in points:
            out.append(Evaluated(point, self.power.estimate(point), self.exact_cost(point)))
            tick()
        return out


def one_size_table(spec: PlannedStudy, point: Point, sims: int, workers: int, label: str,
                   seconds_per_unit: float | None = None) -> pd.DataFrame:
    """``sims`` simulated studies of ``spec`` at ``point`` (a plan's fresh or calibration studies: one
    size), the rows a study of that design gives; an LLM against people's also carry each study's
    LLM group (column ``llm_values``: :meth:`PowerEvaluator.llm_values`).  ``seconds_per_unit``: the
    search's last rate, the heartbeat's ETA until the first of these studies is in."""
    evaluator = PowerEvaluator(spec, workers, label, one_size=True)
    evaluator.seconds_per_unit = seconds_per_unit
    evaluator.ensure_and_close(point, sims)
    table = evaluator.table(point)
    if evaluator.reusing:
        table["llm_values"] = pd.Series(evaluator.llm_values(point), index=table.index, dtype=object)
    return table


def level_nulls(result: PlanResult, target: float) -> pd.DataFrame | None:
    """The null studies that measure an LLM-against-people plan's test level at its chosen design (they choose
    nothing: :func:`~cogtestbed.studies.people_level.calibrated_section`'s ``nulls``; as many as its fresh
    studies and at least ``MIN_NULL_STUDIES``, no effect, seeded apart by ``NULL_SEED_OFFSET``), with each study's
    LLM group (``llm_values``), which the conditional null rejection reuses; None where the plan measures no
    level (not such a plan, no fresh studies, or a ``target`` not above 0)."""
    from cogtestbed.planning.kinds.power.power_sims import reuses_fits
    from cogtestbed.studies.people_level import NULL_SEED_OFFSET, null_study_count

    fresh = 0 if result.fresh is None else len(result.fresh)
    if not (reuses_fits(result.spec) and fresh and target > 0.0):
        return None
    return _null_studies(result, NULL_SEED_OFFSET, null_study_count(fresh), "measuring the test's level")


def calibration_nulls(result: PlanResult, count: int) -> pd.DataFrame:
    """``count`` null studies that calibrate an LLM-against-people plan's critical p at its chosen design (they
    choose it and report nothing; run only where its level null studies show the nominal test above α:
    :func:`~cogtestbed.studies.people_level.calibrated_section`'s ``calibrate``), seeded apart by
    ``CALIBRATION_SEED_OFFSET``."""
    from cogtestbed.studies.people_level import CALIBRATION_SEED_OFFSET

    return _null_studies(result, CALIBRATION_SEED_OFFSET, int(count), "calibrating the test")


def _null_studies(result: PlanResult, offset: int, count: int, what: str) -> pd.DataFrame:
    """``count`` studies of the plan's spec with no effect at its chosen design, on ``spec.seed + offset``."""
    null = result.spec.model_copy(update={"effect_size": 0.0, "critical_p": None, "seed": result.spec.seed + offset})
    return one_size_table(null, result.chosen.point, count, result.workers, f"fixed plan: null studies {what} at")


def fit_probit(x: np.ndarray, hits: np.ndarray, sims: np.ndarray) -> tuple[float, float]:
    """Binomial maximum-likelihood fit of P(detect) = Φ(a + b·x) (log-CDFs: no underflow)."""
    from scipy.optimize import minimize

    def nll(theta: np.ndarray) -> float:
        eta = theta[0] + theta[1] * x
        return -float(np.sum(hits * stats.norm.logcdf(eta) + (sims - hits) * stats.norm.logsf(eta)))

    fit = minimize(nll, np.array([-1.0, 0.5]), method="Nelder-Mead",
                   options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000})
    return float(fit.x[0]), float(fit.x[1])


def _product(grids: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for grid in grids:
        out = [(*prefix, v) for prefix in out for v in grid]
    return out


def pareto(evaluated: Iterable[Evaluated]) -> list[Evaluated]:
    """The cost–power frontier: designs with more power than every cheaper design."""
    out: list[Evaluated] = []
    best = -1.0
    for e in sorted(evaluated, key=lambda e: (cost_key(e.cost) if e.cost else math.inf, -e.estimate.rate)):
        if e.estimate.rate > best:
            out.append(e)
            best = e.estimate.rate
    return out


def describe_target(spec: PlannedStudy) -> str:
    if isinstance(spec, PowerStudy) and spec.groups == 2:
        other = "two LLMs" if spec.reference is None else f"an LLM and {spec.reference.source}"
        if spec.people is not None and spec.from_population is not None:
            other = f"an LLM and {spec.people} people of population {spec.from_population.name}"
        return f"a difference in {spec.effect} of {spec.effect_size:g} between {other} ({spec.models[0]})"
    if spec.kind == "power":
        return f"{spec.effect} = {spec.effect_size:g} ({spec.models[0]})"
    if spec.kind == "metric-power":
        return f"a difference in {spec.metric}"
    return f"test {spec.test} under {spec.agent}"
