"""Precision targets: the cheapest design whose per-subject estimate lands within ±halfwidth.

``cogtestbed plan EXPERIMENT --model M --precision PARAM=HALFWIDTH --assurance Q`` asks for the
cheapest design (fewest trials per run, then runs per subject; with ``--llm`` the fewest dollars)
at which P(|estimate − truth| ≤ halfwidth) ≥ Q for one simulated subject's maximum-likelihood
estimate of ``PARAM`` (a model parameter or contrast).  The assurance is estimated by simulation:
subjects are drawn as the power studies draw them (population medians from ``--base``/a pilot, else
the model's defaults, scattered with SD ``sd_between`` on the unconstrained scale,
:func:`~cogtestbed.studies.model_studies.power_parameters`), simulated through the model's
generating agent and fitted one by one; the share within the halfwidth is reported with its 95 %
Wilson interval (its Monte-Carlo uncertainty).  Designs are simulated in batches of :data:`BATCH`
until a sequential test decides (:mod:`~cogtestbed.planning.kinds.power.sizetest`): a design
passes when the one-sided lower Clopper–Pearson bound of its assurance at 1 − 0.025/10 reaches Q, fails
when the upper bound falls below Q, and fails if still undecided after :data:`MAX_SUBJECTS` subjects,
so that a design whose true assurance is below Q passes in at most 2.5 % of searches (the search's
rate, simulated: ``benchmarks/studies/size_search_error.py``).  Had the point estimate
decided and a Wilson interval been re-checked after every batch without adjustment, a design at true
assurance .88 would pass a .9 target 12 % of the time.

The search walks the design axis — the trials axis (the experiment's trials field,
:mod:`cogtestbed.studies.sizes`), or another integer design field given as a list (``--design
n_samples=2,4,8``) — upwards on a coarse grid and bisects between the last design that fails and
the first that passes, for each runs value (experiments that pool sessions).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.formatting import wilson
from cogtestbed.planning.kinds.power.sizetest import SizeTest
from cogtestbed.planning.plan import PlanInfeasible
from cogtestbed.planning.pricing import Pricer, cost_key, cost_range_line, tokens_source
from cogtestbed.planning.space import Axis, Point
from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model
from cogtestbed.studies.study_kinds import PowerStudy

#: Subjects simulated per batch of one design.
BATCH = 40
#: Keys of the seed streams whose subjects choose the design and whose subjects report its assurance
#: (:mod:`~cogtestbed.planning.kind_protocols`).
CHOOSE_KEY, FRESH_KEY = 7_000_003, 7_000_019
#: Most subjects simulated at one design (then the point estimate decides).
MAX_SUBJECTS = 400
#: The default assurance Q.
DEFAULT_ASSURANCE = 0.9
#: The sequential test each design's assurance must pass (:mod:`~cogtestbed.planning.kinds.power.sizetest`):
#: at most MAX_SUBJECTS / BATCH looks.
LOOKS = MAX_SUBJECTS // BATCH


def size_test(target: float) -> SizeTest:
    """The per-design test of the precision search: a look after each batch of :data:`BATCH` subjects."""
    return SizeTest(target, LOOKS)


#: Seed stream of the batches timed for the up-front estimate (apart from every design's batches).
CALIBRATION_STREAM = 999_999


@dataclass
class Share:
    """Subjects within the halfwidth out of those simulated, with the errors themselves."""

    hits: int = 0
    n: int = 0
    errors: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.hits, self.n)

    #: the sequential test's decision (:class:`~cogtestbed.planning.kinds.power.sizetest.SizeTest`): None until decided
    passed: bool | None = None

    def decide(self, target: float) -> bool | None:
        """The sequential test of "assurance ≥ ``target``" after this batch (:func:`size_test`)."""
        self.passed = size_test(target).decide(self.hits, self.n, self.n >= MAX_SUBJECTS, MAX_SUBJECTS)
        return self.passed

    def summary(self) -> dict[str, Any]:
        err = np.asarray(self.errors, float)
        lo, hi = self.interval
        return {"assurance": self.rate, "interval95": [lo, hi], "subjects": self.n, "passed": self.passed,
                "rmse": float(np.sqrt(np.mean(err ** 2))) if err.size else None,
                "bias": float(err.mean()) if err.size else None}


@dataclass
class PrecisionResult:
    """The outcome of :meth:`PrecisionPlanner.plan`."""

    parameter: str
    halfwidth: float
    assurance: float
    chosen: Point
    share: Share
    cost: dict[str, Any]
    evaluated: list[dict[str, Any]]
    seconds: float
    #: The assurance on fresh subjects at the chosen design (the printed one; :meth:`PrecisionPlanner.fresh_share`).
    fresh: Share | None = None


class PrecisionPlanner:
    """Search the trials (and runs) axes for the cheapest design meeting a precision target."""

    def __init__(self, spec: PowerStudy, exp: ExperimentSpec, parameter: str, halfwidth: float, assurance: float,
                 trials: Axis, runs: Axis, pricer: Pricer | None = None,
                 on_progress: Callable[[str], None] | None = None) -> None:
        if not halfwidth > 0:
            raise InputError(f"`precision` halfwidth must be positive, got {halfwidth}")
        if not 0 < assurance < 1:
            raise InputError(f"`assurance` must be in (0, 1), got {assurance}")
        self.spec, self.exp, self.parameter = spec, exp, parameter
        self.halfwidth, self.assurance = halfwidth, assurance
        self.trials, self.runs, self.pricer = trials, runs, pricer
        self.say = on_progress or (lambda _msg: None)
        self.model = exp.model(spec.models[0])
        self.shares: dict[Point, Share] = {}
        self.model.contrast(parameter, {p: 0.0 for p in self.model.parameters.names})  # an unknown name fails here

    # -- one design
    def _batch(self, point: Point, k: int, n: int = BATCH, key: int = CHOOSE_KEY) -> tuple[np.ndarray, np.ndarray]:
        from cogtestbed.studies.model_studies import power_parameters

        entropy = [self.spec.seed, key, point.runs, point.trials or 0, k, *(v for _, v in point.fields)]
        param_seq, sim_seq = np.random.SeedSequence(entropy).spawn(2)
        true = power_parameters(self.spec, self.model, n, np.random.default_rng(param_seq))
        design = design_for_trials(self.exp, point.trials, point.design(self.spec.design))
        table = simulate_model(self.spec, self.exp, self.model.name, true, n, seed_of(sim_seq), design,
                               point.runs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = self.model.fit_mle(table)
        order = {s: i for i, s in enumerate(sorted(table["subject"].unique()))}
        idx = np.array([order[s] for s in fits["subject"]])
        t = np.asarray(self.model.contrast(self.parameter, {p: np.asarray(v)[idx] for p, v in true.items()}), float)
        e = np.asarray(self.model.contrast(self.parameter, {p: fits[p].to_numpy(float)
                                                            for p in self.model.parameters.names}), float)
        return t, e

    def fresh_share(self, point: Point, subjects: int) -> Share:
        """The share within the halfwidth at ``point`` on ``subjects`` fresh subjects (stream
        :data:`FRESH_KEY`: none of them took part in choosing the design): the assurance the plan prints."""
        share = Share()
        for k in range(-(-subjects // BATCH)):
            t, e = self._batch(point, k, key=FRESH_KEY)
            err = e - t
            ok = np.isfinite(err)
            share.hits += int((np.abs(err[ok]) <= self.halfwidth).sum())
            share.n += int(err.size)
            share.errors.extend(err[ok].tolist())
        return share

    def evaluate(self, point: Point) -> Share:
        """The share within the halfwidth at ``point``, simulated until decided."""
        share = self.shares.setdefault(point, Share())
        while share.passed is None and (share.n == 0 or share.decide(self.assurance) is None):
            t, e = self._batch(point, share.n // BATCH)
            err = e - t
            ok = np.isfinite(err)
            share.hits += int((np.abs(err[ok]) <= self.halfwidth).sum())
            share.n += int(err.size)  # a failed fit counts as a miss
            share.errors.extend(err[ok].tolist())
        lo, hi = share.interval
        self.say(f"{self.label(point)}: P(|error| ≤ {self.halfwidth:g}) = {share.rate:.3f} "
                 f"[{lo:.2f}, {hi:.2f}] ({share.n} subjects)")
        return share

    def passes(self, point: Point) -> bool:
        """Whether ``point`` passes its sequential test (not its point estimate)."""
        return bool(self.evaluate(point).passed)

    @property
    def searched(self) -> str | None:
        """The design field searched: the trials field, or the field given as a list."""
        return self.exp.trials_field if self.trials.name == "trials" else self.trials.name

    def label(self, point: Point) -> str:
        return point.label("runs" if point.runs > 1 else "trials", self.spec)

    def estimate_line(self) -> str:
        """The up-front estimate of a batch: at the smallest design one whole batch timed (after a
        two-subject run that loads the compiled code), at the largest a quarter batch timed and
        multiplied by four (its fixed costs counted four times: an estimate on the high side)."""
        from cogtestbed.progress import duration

        small, large = self.at(self.runs.values[0], self.trials.values[0]), \
            self.at(self.runs.values[-1], self.trials.values[-1])
        self._batch(small, CALIBRATION_STREAM, 2)
        timed = []
        for point, n in ((small, BATCH), (large, BATCH // 4)):
            start = time.perf_counter()
            self._batch(point, CALIBRATION_STREAM, n)
            timed.append((time.perf_counter() - start) * BATCH / n)
        return (f"estimate: a batch of {BATCH} subjects takes about {duration(timed[0])} at the smallest design "
                f"and {duration(timed[1])} at the largest here (timed); each design takes 1 to "
                f"{MAX_SUBJECTS // BATCH} batches, each printed as it finishes")

    # -- costs
    def cost(self, point: Point) -> dict[str, Any]:
        """Trials one subject plays (and, with an LLM, the dry run's calls, tokens and dollars)."""
        design = design_for_trials(self.exp, point.trials, point.design(self.spec.design))
        out: dict[str, Any] = {"trials_per_subject": int(design.n_trials) * point.runs}
        if self.pricer is not None:
            c = self.pricer.exact(design, point.runs)
            out.update(calls=c.calls, prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
                       dollars=c.dollars, expected_dollars=c.expected_dollars,
                       dollars_range=None if c.dollars_range is None else list(c.dollars_range),
                       llms=list(self.pricer.llms), **tokens_source(self.pricer))
            out["key"] = cost_key(c)
        else:
            out["key"] = float(out["trials_per_subject"])
        return out

    # -- the search
    def at(self, runs: int, value: int) -> Point:
        """The design with ``runs`` runs and ``value`` on the searched axis (trials or a design field)."""
        if self.trials.name == "trials":
            return Point(1, runs, value)
        return Point(1, runs, None, ((self.trials.name, value),))

    def _first_passing(self, runs: int) -> Point | None:
        values = self.trials.values
        coarse = list(self.trials.coarse())
        lo_idx, hi_idx = -1, None
        for v in coarse:
            if self.passes(self.at(runs, v)):
                hi_idx = values.index(v)
                break
            lo_idx = values.index(v)
        if hi_idx is None:
            return None
        while hi_idx - lo_idx > 1:  # bisect between the last failing and the first passing value
            mid = (lo_idx + hi_idx) // 2
            if self.passes(self.at(runs, values[mid])):
                hi_idx = mid
            else:
                lo_idx = mid
        return self.at(runs, values[hi_idx])

    def plan(self) -> PrecisionResult:
        start = time.perf_counter()
        candidates = [p for r in self.runs.values if (p := self._first_passing(r)) is not None]
        evaluated = [{"design": self.label(p), **p.as_dict(), **dict(p.fields), **s.summary()}
                     for p, s in self.shares.items()]
        if not candidates:
            best = max(self.shares.items(), key=lambda kv: kv[1].rate)
            raise PlanInfeasible(
                f"no design searched reaches P(|{self.parameter} error| ≤ {self.halfwidth:g}) ≥ {self.assurance:g}; "
                f"the best, {self.label(best[0])}, gives {best[1].rate:.2f}: widen the range searched "
                f"(`design` {self.searched}=...) or the runs")
        costed = [(self.cost(p), p) for p in candidates]
        cost, chosen = min(costed, key=lambda cp: (cp[0]["key"], cp[1].runs, cp[1].trials or 0, cp[1].fields))
        fresh = self.fresh_share(chosen, self.shares[chosen].n)
        return PrecisionResult(self.parameter, self.halfwidth, self.assurance, chosen, self.shares[chosen],
                               cost, evaluated, time.perf_counter() - start, fresh)


def precision_payload(result: PrecisionResult, planner: PrecisionPlanner) -> dict[str, Any]:
    """Everything the precision plan found (``--json`` and ``plan.json``)."""
    from cogtestbed.studies.sizes import resolved_designs

    chosen = result.chosen
    designs = resolved_designs(planner.exp, chosen.design(planner.spec.design), (chosen.trials,))
    return {"experiment": planner.exp.name, "model": planner.model.name,
            "target": {"kind": "precision", "scale": "natural", "parameter": result.parameter,
                       "halfwidth": result.halfwidth,
                       "assurance": result.assurance},
            "chosen": {"design": planner.label(chosen), **chosen.as_dict(), **dict(chosen.fields),
                       **result.share.summary(), "resolved": designs[0],
                       **({} if result.fresh is None else {"fresh": result.fresh.summary()})},
            "searched": planner.searched,
            "cost": {k: v for k, v in result.cost.items() if k != "key"},
            "evaluated": result.evaluated, "true_parameters": truths(planner.spec),
            "search": {"seconds": round(result.seconds, 2)}}


def truths(spec: PowerStudy) -> str:
    """Where the simulated subjects' true parameters come from."""
    base = ", ".join(f"{k}={v:g}" for k, v in spec.base.items()) or "the model's defaults"
    return (f"subjects scattered around population medians ({base}) with SD {spec.sd_between:g} on the "
            "unconstrained scale, each within the parameters' bounds")


def precision_line(payload: dict[str, Any]) -> str:
    """One paragraph: the cheapest design, its assurance with the 95 % interval, its cost."""
    t, c, cost = payload["target"], payload["chosen"], payload["cost"]
    c = {**c, **(c.get("fresh") or {})}  # the assurance measured on fresh subjects, where the plan has it
    lo, hi = c["interval95"]
    price = ""
    if "calls" in cost:
        dollars = f"${cost['dollars']:.4g}" if cost.get("dollars") is not None else "no price"
        price = (f"; on {' + '.join(cost['llms'])} one subject costs {cost['calls']} calls, "
                 f"{cost['prompt_tokens']} prompt + {cost['completion_tokens']} completion tokens (max), {dollars}")
    rmse = f", RMSE {c['rmse']:.3g}, bias {c['bias']:+.3g}" if c.get("rmse") is not None else ""
    from cogtestbed.formatting import chosen_design_phrase

    lead = chosen_design_phrase(payload.get("evaluated") or [])
    line = cost_range_line(cost)
    return (f"{lead[0].upper()}{lead[1:]} where P(|{t['parameter']} estimate − truth| ≤ {t['halfwidth']:g}) "
            f"≥ {t['assurance']:g} ({t.get('scale', 'natural')} scale) "
            f"for one subject's MLE ({payload['model']}): {c['design']}; P = {c['assurance']:.3f} "
            f"[95% interval {lo:.2f}, {hi:.2f}] over {c['subjects']} {'fresh ' if 'fresh' in payload['chosen'] else ''}"
            f"simulated subjects{rmse}; "
            f"{cost['trials_per_subject']} trials per subject{price}. True parameters: {payload['true_parameters']}."
            + ("" if line is None else "\n" + line))


__all__ = ["DEFAULT_ASSURANCE", "PrecisionPlanner", "PrecisionResult", "precision_line", "precision_payload"]
