"""Plan an LLM study before spending: the cheapest design that reaches a target power, in dollars.

``cogtestbed plan`` joins the two halves the testbed already has: the generic power driver
(:mod:`cogtestbed.validation.studies.driver`, any of its three power forms: a model parameter or contrast,
a metric difference between two settings, a statistical test the metrics function reports) answers
in subjects × runs × trials, and the dry run of an LLM run (:func:`cogtestbed.llm_adapters.runs.pricing.dry_run`)
answers in calls, tokens and dollars.  A :class:`Planner` searches the design space the experiment
declares and prices every design it simulates with that very dry run.

Design space (read from the :class:`~cogtestbed.experiments.spec.ExperimentSpec`, never from an
experiment's name):

* the **size** axis: simulated subjects for a model-level target, runs (units per setting) for a
  metric- or test-level target;
* **runs** per subject where a model-level target's experiment pools sessions (``pooling_unit``);
* **trials** per session where the experiment declares a ``trials_field``.

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

Every simulated design is priced exactly: its prompts are rendered by the experiment's own
environment and counted by the model's tokenizer (or the backend's documented fallback), through
the same :func:`~cogtestbed.llm_adapters.runs.pricing.dry_run` as ``cogtestbed run --dry-run``, so a plan's
calls, tokens and dollars equal that command's by construction.  While searching, combinations are
ordered and pruned by their cost per session (the dry run of :data:`UNIT_SESSIONS` sessions).

Invalid answers: an expected invalid-answer rate (and rate of uniformly random answers) enters the
simulation as a :class:`~cogtestbed.lapse.Lapse` of every simulated subject, so the power
accounts for the trials a real LLM loses.  A pilot run directory supplies the measured invalid
rate, the measured tokens per call and, for a model-level target, the population medians of the
model fitted to the pilot (the base of the power simulation).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import CogtestbedError, InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.formatting import rate_text
from cogtestbed.timings import cpu_seconds
from cogtestbed.validation.studies.driver import (
    StudyTaskError,
    check_study,
    fork_pool,
    reraise,
    run_chunk,
    stop_pool,
)
from cogtestbed.validation.studies.study_data import design_for_trials, trials_step
from cogtestbed.validation.studies.study_kinds import MetricPowerStudy, ModelStudy, PlannedStudy, PowerStudy

#: Largest Monte-Carlo SE of the power at the chosen design (binomial SE √(p(1−p)/sims)).
DEFAULT_MC_SE = 0.03
#: Simulations of a design's first look; later looks double them.
FIRST_BATCH = 24
#: A design is called above/below the target once its estimate is this many binomial SEs (at
#: the target) away from it ...
DECIDE_Z = 2.0
#: ... or once it has this many simulations (then its point estimate decides).
DECIDE_MAX_SIMS = 96
#: Failed sizes of a combination after which the size ladder follows the fitted probit curve
#: instead of doubling (two points determine its intercept and slope).
EXTRAPOLATE_AFTER = 2
#: Power the last failed size must reach before the curve is extrapolated (below it, the fitted
#: slope rests on a handful of detections and may undershoot by far).
EXTRAPOLATE_FROM = 0.2
#: Most simulations spent on the chosen design while bringing its MC SE down to ``mc_se``.
MAX_FINAL_SIMS = 1000
#: Sessions rendered to price one session of a design while the search orders and prunes.
UNIT_SESSIONS = 3
#: The size axis is refined until the bracket is at most this fraction of the passing size.
REFINE_REL = 0.1
#: Values of each non-size axis on the coarse grid.
COARSE_POINTS = 5
#: Default trials range: the design's default trial count up to this multiple of it.
TRIALS_SPAN = 5
#: Default size range (subjects, or runs per setting).
DEFAULT_SIZE = (10, 200)
#: The most units (subjects, or runs per setting) a default size range is extended to: while a
#: combination of the other axes fails only for want of size at the range's top (no size up to it
#: reaches the target, and its top costs less than the best design so far), the top is doubled, up
#: to this cap (10× the default top); a range given by the user is not extended (the plan says when
#: its choice sits at an edge).
MAX_EXTENDED_SIZE = 2000
#: Added to the study's seed for the fresh studies at the chosen design that measure its recovery
#: (effect bias, coverage): seeds no power simulation of the search used.
FRESH_SEED_OFFSET = 7_777_777
#: Draws of the simulated population used to compute the population mean of the effect (the
#: estimand of the t-test of a model-level power study) for the coverage of its interval.
ESTIMAND_DRAWS = 100_000
#: Data sets simulated at the chosen design to score per-subject recovery (r, bias, RMSE).
RECOVERY_REPS = 4


class PlanInfeasible(CogtestbedError, ValueError):
    """No design within the budget (and the searched ranges) reaches the target power."""


# ----------------------------------------------------------------------------- design space
@dataclass(frozen=True)
class Axis:
    """One axis of the design space: its name and the values it may take (sorted)."""

    name: str
    values: tuple[int, ...]

    def coarse(self, points: int = COARSE_POINTS) -> tuple[int, ...]:
        """Up to ``points`` values spread evenly (by index) over the axis, ends included."""
        if len(self.values) <= points:
            return self.values
        idx = np.unique(np.round(np.linspace(0, len(self.values) - 1, points)).astype(int))
        return tuple(self.values[i] for i in idx)

    def between(self, a: int, b: int) -> int | None:
        """The allowed value closest to the midpoint of ``a`` and ``b`` strictly between them."""
        inner = [v for v in self.values if min(a, b) < v < max(a, b)]
        if not inner:
            return None
        mid = (a + b) / 2
        return min(inner, key=lambda v: (abs(v - mid), v))


def parse_range(text: str | None, default: tuple[int, int] | None) -> tuple[int, ...] | None:
    """``LO:HI`` (every integer between), ``a,b,c`` (those values) or a single integer."""
    if text is None:
        return None if default is None else tuple(range(default[0], default[1] + 1))
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":", 1))
            if lo < 1 or hi < lo:
                raise ValueError
            return tuple(range(lo, hi + 1))
        values = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise InputError(f"expected LO:HI or comma-separated positive integers, got {text!r}") from None
    if not values or values[0] < 1:
        raise InputError(f"expected LO:HI or comma-separated positive integers, got {text!r}")
    return values


def size_axis_name(spec: PlannedStudy) -> str:
    """``subjects`` for a model-level target, ``runs`` (units per setting) otherwise."""
    return "subjects" if isinstance(spec, ModelStudy) else "runs"


def design_axes(spec: PlannedStudy, exp: ExperimentSpec, subjects: str | None = None, runs: str | None = None,
                trials: str | None = None, field: Axis | None = None) -> tuple[Axis, list[Axis]]:
    """(size axis, other axes) of the design space ``spec``'s experiment declares.

    ``trials`` values must be reachable through the spec's ``trials_field`` (multiples of its step);
    unreachable ones are dropped, and none left is an error.  ``field``: an integer design field
    other than the trials field searched instead of the trials axis (its values from ``--design
    NAME=a,b,c``); the trials field then stays at the design's value.
    """
    size_name = size_axis_name(spec)
    pooled = isinstance(spec, ModelStudy) and exp.pooling_unit == "session"
    if size_name == "subjects":
        size = Axis("subjects", parse_range(subjects, DEFAULT_SIZE) or ())
        if runs is not None and not pooled:
            raise InputError(f"experiment {exp.name} pools subjects, not sessions: --runs needs an experiment "
                             "whose pooling unit is the session")
    else:
        if subjects is not None:
            raise InputError("--subjects sizes a model-level target; a metric or test target is sized in --runs")
        size = Axis("runs", parse_range(runs, DEFAULT_SIZE) or ())
    others: list[Axis] = []
    if pooled:
        others.append(Axis("runs", parse_range(runs, None) or declared_runs(spec, exp)))
    if field is not None:
        if trials is not None:
            raise InputError(f"--trials and --design {field.name}=a,b,c: plan searches one size of the design at a "
                             f"time; fix the trials field with --design {exp.trials_field}=N")
        others.append(field)
    elif exp.trials_field is not None:
        others.append(Axis("trials", trials_values(spec, exp, trials)))
    elif trials is not None:
        raise InputError(f"experiment {exp.name} has a fixed number of trials per run (no trials field)")
    return size, others


def declared_runs(spec: PlannedStudy, exp: ExperimentSpec) -> tuple[int, ...]:
    """Runs per subject of the experiment's declared study of this kind and model (else 1)."""
    for decl in exp.studies_of(spec.kind):
        if decl.runs and (decl.model is None or (isinstance(spec, ModelStudy) and decl.model in spec.models)):
            return tuple(sorted(set(decl.runs)))
    return (1,)


def trials_values(spec: PlannedStudy, exp: ExperimentSpec, text: str | None) -> tuple[int, ...]:
    """Reachable trial counts in the requested range (default: the design's count to ×5)."""
    base = design_for_trials(exp, None, spec.design).n_trials
    assert exp.trials_field is not None
    step = trials_step(design_for_trials(exp, None, spec.design), exp.trials_field)
    wanted = parse_range(text, (base, TRIALS_SPAN * base)) or ()
    values = tuple(v for v in wanted if v % step == 0)
    if not values:
        raise InputError(f"no trial count in {text!r} is reachable: {exp.name}'s {exp.trials_field} "
                         f"scales a session in steps of {step} trials")
    return values


# ----------------------------------------------------------------------------- designs and costs
@dataclass(frozen=True, order=True)
class Point:
    """One design: simulated subjects, runs (sessions per subject or units per setting), trials,
    and the value of a searched design field other than the trials field (``fields``:
    ``(("n_reps", 3),)``; empty where the plan searches the trials field or nothing)."""

    subjects: int
    runs: int
    trials: int | None
    fields: tuple[tuple[str, int], ...] = ()

    def value(self, name: str) -> int:
        """The point's value on axis ``name`` (subjects, runs, trials or a searched design field; a
        point of a plan that searches an axis has a value on it)."""
        fields = dict(self.fields)
        return fields[name] if name in fields else getattr(self, name)

    def design(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The design fields of this point: ``base`` (the study's fixed fields) with its searched field."""
        return {**base, **dict(self.fields)}

    def label(self, size_name: str, spec: Any = None) -> str:
        """The design in words: subjects, runs and the design named by its fields (with ``spec``:
        ``3 subjects, 40 contexts × 5 repetitions (200 trials per run)``)."""
        parts = [f"{self.subjects} subject{'s' * (self.subjects != 1)}"] if size_name == "subjects" else []
        if size_name == "runs" or self.runs > 1:
            parts.append(f"{self.runs} run{'s' * (self.runs != 1)}")
        if spec is not None:
            from cogtestbed.formatting import FIELD_NOUNS, field_text
            from cogtestbed.registry import get_experiment
            from cogtestbed.validation.studies.report import design_name

            spec = spec_at(spec, self)
            trials = self.trials if self.trials is not None else design_for_trials(
                get_experiment(spec.experiment), None, spec.design).n_trials
            parts.append(design_name(spec, trials))
            # a searched field the design's label does not name (not a count it knows): by name
            parts.extend(field_text(k, v) for k, v in self.fields if k not in FIELD_NOUNS)
        else:
            if self.trials is not None:
                parts.append(f"{self.trials} trials per run")
            parts.extend(f"{k}={v}" for k, v in self.fields)
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """Subjects, runs and trials (the arguments of :class:`Point` but ``fields``)."""
        return {"subjects": self.subjects, "runs": self.runs, "trials": self.trials}


def spec_at(spec: Any, point: Point) -> Any:
    """``spec`` with ``point``'s searched design field set in its design (itself where none is)."""
    return spec.model_copy(update={"design": point.design(spec.design)}) if point.fields else spec


def study_at(spec: PlannedStudy, point: Point, reps: int) -> PlannedStudy:
    """The study ``spec`` at one design point with ``reps`` repetitions."""
    return spec_at(spec, point).at_point(point.subjects, point.runs, point.trials, reps)


def sessions_per_llm(spec: PlannedStudy, point: Point) -> int:
    """Sessions one LLM plays for ``point``: subjects × runs (model level) or runs (per setting)."""
    return point.subjects * point.runs if isinstance(spec, ModelStudy) else point.runs


def n_groups(spec: PlannedStudy) -> int:
    """LLMs (agent settings) a design needs: two for a metric difference and for a parameter's
    difference between two simulated groups (two LLMs), else one (an LLM against a fixed human
    sample is one LLM)."""
    if spec.kind == "metric-power":
        return 2
    if isinstance(spec, PowerStudy) and spec.groups == 2 and spec.reference is None and spec.people is None:
        return 2
    return 1


@dataclass(frozen=True)
class Cost:
    """Calls, tokens and dollars of a design (summed over its LLMs)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    dollars: float | None
    exact_tokens: bool
    #: ``dry-run``: the design's every prompt rendered; ``per-session``: a search estimate.
    source: str
    per_llm: tuple[dict[str, Any], ...] = ()
    #: With ``--batch``: the same requests at the standard price (``dollars`` is the batch price).
    standard_dollars: float | None = None
    #: A reasoning model: (low, high) of ``dollars`` over the interval of its completion tokens per call
    #: (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`); None for any other model.
    dollars_range: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_llm"] = list(self.per_llm)
        return out


@dataclass
class Pricer:
    """Prices designs with :func:`~cogtestbed.llm_adapters.runs.pricing.dry_run` (``run --dry-run``'s code).

    ``llms``: one spec per group (a metric difference compares two LLMs; one spec given prices
    both groups as that model).  ``completion_per_call``: tokens per answer measured in a pilot
    (then ``expected_dollars`` uses it; ``dollars`` always books ``max_tokens`` per call, as the
    dry run does).  ``max_tokens`` ``None``: the experiment's own answer setting for each design
    (:meth:`~cogtestbed.environments.base.TextEnv.answer_defaults`, with its stop strings), as
    ``cogtestbed run`` uses it.
    """

    exp: ExperimentSpec
    llms: tuple[str, ...]
    seed: int
    max_tokens: int | None = None
    temperature: float = 0.0
    reask: int = 0
    prices: Path | None = None
    #: A model without a price is refused (:func:`~cogtestbed.llm_adapters.clients.prices.require_price`) unless
    #: this is set; then its designs are costed in calls and tokens only.
    allow_unpriced: bool = False
    mode: str = "auto"
    #: Price the runs in the provider's batch mode (``run --batch``: :mod:`cogtestbed.llm_adapters.middleware.batch`):
    #: at the table's ``batch_discount``, scored steps sampled; the standard price is kept beside it.
    batch: bool = False
    #: A reasoning model's controls (``run --reasoning-effort / --thinking-budget``) and its completion tokens
    #: per call, measured in a pilot or assumed (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`): without
    #: them a reasoning model is refused in one line.
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    hidden: Any = None
    clients: list[Any] = field(default_factory=list)
    _cache: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    #: Dry runs under way on a pool's workers (:meth:`submit`): (design JSON, sessions) -> future reports.
    _pending: dict[tuple[str, int], Future[tuple[dict[str, Any], ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from cogtestbed.llm_adapters import make_client
        from cogtestbed.llm_adapters.clients.capabilities import capability_of, check_reasoning
        from cogtestbed.llm_adapters.clients.prices import PriceTable, require_price
        from cogtestbed.llm_adapters.runs.hidden_tokens import reasons, refusal

        table = PriceTable(self.prices)
        self.price = [require_price(table, s, self.allow_unpriced) for s in self.llms]
        for spec, price in zip(self.llms, self.price, strict=True):
            check_reasoning(spec, capability_of(spec), self.reasoning_effort, self.thinking_budget)
            if price is not None and self.hidden is None and reasons(spec, self.thinking_budget):
                raise InputError(refusal(spec))
        self.standard = list(self.price)
        built: dict[str, Any] = {}
        for spec in dict.fromkeys(self.llms):
            built[spec] = make_client(spec, mode=self.mode)
        if self.batch:
            from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
            from cogtestbed.llm_adapters.middleware.batch.pricing import batch_price

            built = {spec: BatchClient(client) for spec, client in built.items()}
            self.price = [None if p is None else batch_price(p, s) for p, s in zip(self.price, self.llms, strict=True)]
        self.clients = [built[s] for s in self.llms]

    def run_config(self, llm: str, client: Any, design: Any, n: int) -> Any:
        """The :class:`~cogtestbed.llm_adapters.runs.config.RunConfig` ``cogtestbed run`` builds for it."""
        from cogtestbed.llm_adapters.clients.capabilities import capability_of, hidden_allowance
        from cogtestbed.llm_adapters.runs.config import RunConfig

        answer = self.exp.env_cls.answer_defaults(design)
        return RunConfig(experiment=self.exp.name, llm=llm, base_url=None,
                         mode="chat" if client.chat else "completions", n_subjects=n, seed=self.seed,
                         design=design.model_dump(mode="json"), max_tokens=self.tokens_per_answer(design),
                         temperature=self.temperature, reask=self.reask, stop=answer.stop,
                         reasoning_effort=self.reasoning_effort, thinking_budget=self.thinking_budget,
                         hidden_allowance=hidden_allowance(capability_of(llm), self.thinking_budget))

    def tokens_per_answer(self, design: Any) -> int:
        """Most tokens an answer to ``design`` may take: the given ``max_tokens``, else the experiment's."""
        return self.max_tokens or int(self.exp.env_cls.answer_defaults(design).max_tokens)

    def dry_run(self, group: int, design: Any, n: int) -> dict[str, Any]:
        """``cogtestbed run --dry-run`` of ``n`` sessions of ``design`` for group ``group``'s LLM."""
        return self.reports(design, n)[group]

    def reports(self, design: Any, n: int) -> tuple[dict[str, Any], ...]:
        """Each group's ``run --dry-run`` report of ``n`` sessions of ``design`` (cached): taken from
        the dry runs :meth:`submit` started on a pool, else rendered here, every LLM not yet priced
        from one playthrough of the sessions (:func:`~cogtestbed.llm_adapters.runs.pricing.dry_runs`: each
        report equals that LLM's own dry run)."""
        text = design.model_dump_json()
        self._collect(text, n)
        missing = [g for g in self._first_groups() if (self.llms[g], text, n) not in self._cache]
        if missing:
            from cogtestbed.llm_adapters.runs.pricing import dry_runs

            runs = [(self.clients[g], self.run_config(self.llms[g], self.clients[g], design, n), self.price[g])
                    for g in missing]
            for g, report in zip(missing, dry_runs(self.exp, design, runs, hidden=self.hidden), strict=True):
                standard = self.standard[g]
                if self.batch and standard is not None:
                    from cogtestbed.llm_adapters.middleware.batch.pricing import batch_report

                    report = batch_report(report, standard)
                self._cache[(self.llms[g], text, n)] = report
        return tuple(self._cache[(llm, text, n)] for llm in self.llms)

    def _first_groups(self) -> list[int]:
        """The first group of each distinct LLM (groups with the same LLM share its reports)."""
        return [self.llms.index(llm) for llm in dict.fromkeys(self.llms)]

    def submit(self, pool: Any, design: Any, n: int) -> None:
        """Start the dry runs of ``n`` sessions of ``design`` on ``pool`` (a fork pool,
        :func:`~cogtestbed.validation.studies.driver.fork_pool`), whose workers rebuild this pricer
        from its settings and render the prompts while this process searches on; :meth:`reports`
        takes their reports (identical numbers: the same dry run, seeded the same).  Nothing is
        started for a design already priced, or for an experiment a worker cannot look up by name."""
        from cogtestbed.registry import get_experiment

        text = design.model_dump_json()
        if (text, n) in self._pending or all((llm, text, n) in self._cache for llm in self.llms):
            return
        try:
            if get_experiment(self.exp.name) is not self.exp:
                return
        except CogtestbedError:
            return
        self._pending[(text, n)] = pool.submit(_worker_reports, self._settings(), design, n)

    def price_all(self, items: Sequence[tuple[Any, int]], workers: int, label: str | None = None) -> None:
        """Price every ``(design, sessions)`` of ``items`` (then cached) on a fork pool of up to
        ``workers`` processes, the largest first, counting each on the heartbeat under ``label``;
        with one worker or one design to render, nothing here (:meth:`exact` renders it when asked).
        An interrupt or an error ends the pool's workers at once."""
        from cogtestbed.progress import beat, tick
        from cogtestbed.validation.studies.driver import fork_pool, stop_pool

        todo = {(design.model_dump_json(), n): (design, n) for design, n in items}
        todo = {k: v for k, v in todo.items() if not all((llm, *k) in self._cache for llm in self.llms)}
        if workers <= 1 or len(todo) < 2:
            return
        hb = beat()
        if hb is not None and label is not None:
            hb.phase(label, len(todo))
        order = sorted(todo.values(), key=lambda item: -item[1])
        pool = fork_pool(min(workers, len(order)))
        try:
            for design, n in order:
                self.submit(pool, design, n)
            for design, n in order:
                self.reports(design, n)
                tick()
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)

    def _settings(self) -> tuple[tuple[str, Any], ...]:
        """What a worker needs to build this pricer (the experiment by name)."""
        return (("exp", self.exp.name), ("llms", self.llms), ("seed", self.seed), ("max_tokens", self.max_tokens),
                ("temperature", self.temperature), ("reask", self.reask), ("prices", self.prices),
                ("allow_unpriced", self.allow_unpriced), ("mode", self.mode), ("batch", self.batch),
                ("reasoning_effort", self.reasoning_effort), ("thinking_budget", self.thinking_budget),
                ("hidden", self.hidden))

    def _collect(self, text: str, n: int) -> None:
        """Cache the reports of a dry run :meth:`submit` started (waiting for it); one that failed or
        was cancelled (its pool stopped) is left to :meth:`reports` to render here, which raises
        any error of the design itself as it would without a pool."""
        future = self._pending.pop((text, n), None)
        if future is None:
            return
        try:
            reports = future.result()
        except Exception:  # noqa: BLE001 - rendered again here, where a real error raises with its own traceback
            return
        for llm, report in zip(self.llms, reports, strict=True):
            self._cache.setdefault((llm, text, n), report)

    def exact(self, design: Any, n: int) -> Cost:
        """Every prompt of the design rendered and counted (``run --dry-run`` per LLM, summed)."""
        return _sum_reports(self.reports(design, n), "dry-run")

    def per_session(self, design: Any) -> Cost:
        """Cost of one session (mean of :data:`UNIT_SESSIONS` rendered sessions, per LLM summed)."""
        total = _sum_reports(self.reports(design, UNIT_SESSIONS), "per-session")
        k = UNIT_SESSIONS
        return Cost(total.calls // k, total.prompt_tokens // k, total.completion_tokens // k,
                    None if total.dollars is None else total.dollars / k, total.exact_tokens, "per-session",
                    standard_dollars=None if total.standard_dollars is None else total.standard_dollars / k,
                    dollars_range=None if total.dollars_range is None else (total.dollars_range[0] / k,
                                                                            total.dollars_range[1] / k))


#: Pricers built in this pool worker, by their settings (:meth:`Pricer.submit`).
_WORKER_PRICERS: dict[tuple[tuple[str, Any], ...], Pricer] = {}


def _worker_reports(settings: tuple[tuple[str, Any], ...], design: Any, n: int) -> tuple[dict[str, Any], ...]:
    """A pool worker's :meth:`Pricer.reports` (its pricer built once from ``settings``)."""
    from cogtestbed.registry import get_experiment

    pricer = _WORKER_PRICERS.get(settings)
    if pricer is None:
        kwargs = dict(settings)
        pricer = _WORKER_PRICERS[settings] = Pricer(get_experiment(kwargs.pop("exp")), **kwargs)
    return pricer.reports(design, n)


def _worst(report: Mapping[str, Any], key: str) -> Any:
    """``report[key]``, or its value should the server turn out not to score (the run then samples,
    :func:`~cogtestbed.llm_adapters.runs.runner.decide_scoring`) where that is larger: a plan books the
    worst case of the method that may run."""
    alt = (report.get("if_the_server_cannot_score") or {}).get(key)
    value = report[key]
    return value if alt is None or value is None or alt <= value else alt


def _sum_reports(reports: Sequence[Mapping[str, Any]], source: str) -> Cost:
    dollars = [_worst(r, "estimated_cost_usd") for r in reports]
    standard: list[float | None] = [r.get("standard_estimated_cost_usd") for r in reports]
    return Cost(calls=sum(int(_worst(r, "calls")) for r in reports),
                prompt_tokens=sum(int(r["prompt_tokens"]) for r in reports),
                completion_tokens=sum(int(r["max_completion_tokens"]) for r in reports),
                dollars=None if any(d is None for d in dollars) else float(sum(dollars)),
                exact_tokens=all(r["token_counts"].startswith("exact") for r in reports),
                source=source, per_llm=tuple(dict(r) for r in reports),
                standard_dollars=None if any(d is None for d in standard) else float(sum(d or 0.0 for d in standard)),
                dollars_range=_sum_ranges(reports))


def _sum_ranges(reports: Sequence[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The summed cost range of reports of which one prices a reasoning model (a report without a range
    counts its expected cost at both ends); None where none has a range or a cost is unknown."""
    if not any("estimated_cost_usd_range" in r for r in reports):
        return None
    ranges = [r.get("estimated_cost_usd_range") or [r.get("estimated_cost_usd")] * 2 for r in reports]
    if any(v is None for pair in ranges for v in pair):
        return None
    return float(sum(p[0] for p in ranges)), float(sum(p[1] for p in ranges))


def money(cost: Cost) -> float:
    """The cost's dollars as a plain float (:func:`cost_key`: the number designs are compared by)."""
    return float(cost_key(cost))


def cost_key(cost: Cost) -> float:
    """What "cheapest" minimises: dollars where priced (and not free), else the tokens a run sends and
    receives (a local model's compute)."""
    return cost.dollars if cost.dollars else float(cost.prompt_tokens + cost.completion_tokens)


# ----------------------------------------------------------------------------- power by simulation
@dataclass
class Estimate:
    """Power at one design: rejections / simulations, with the binomial MC SE."""

    hits: int
    sims: int

    @property
    def rate(self) -> float:
        return self.hits / self.sims if self.sims else float("nan")

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(p * (1 - p) / self.sims) if self.sims else float("nan")


def outcome_column(spec: PlannedStudy) -> str:
    """The column of a power task's rows that says whether the simulated study detected the effect."""
    return "rejected" if spec.kind in ("test-size", "test-power") else "detected"


class PowerEvaluator:
    """Simulated power of designs through the generic study tasks, extended in batches.

    Design ``d``'s simulation ``k`` is task ``k`` of the study ``spec`` at ``d`` (seed stream
    ``SeedSequence([seed, k])``), so a design's first ``n`` simulations are the same whenever they
    are run, and designs share their random numbers (common random numbers make the power curve
    over the size axis smoother).  Tasks run in a local fork pool of ``workers`` processes.
    """

    def __init__(self, spec: PlannedStudy, workers: int = 1, label: str | None = None) -> None:
        self.spec, self.workers = spec, max(1, workers)
        #: What its simulations are for, on the heartbeat (None: the fixed plan's search).
        self.label = label
        self.rows: dict[Point, list[pd.DataFrame]] = {}
        self.done: dict[Point, int] = {}
        self.pool: ProcessPoolExecutor | None = None
        self.simulations = 0

    def study_at(self, point: Point, reps: int) -> PlannedStudy:
        return study_at(self.spec, point, reps)

    def estimate(self, point: Point) -> Estimate:
        if point not in self.rows:
            return Estimate(0, 0)
        hits = pd.concat(self.rows[point])[outcome_column(self.spec)].astype(bool)
        return Estimate(int(hits.sum()), int(hits.size))

    def table(self, point: Point) -> pd.DataFrame:
        return pd.concat(self.rows[point], ignore_index=True)

    def ensure(self, point: Point, sims: int) -> Estimate:
        """At least ``sims`` simulations of ``point`` (runs only the missing ones)."""
        from cogtestbed.progress import beat

        have = self.done.get(point, 0)
        if sims > have:
            study = self.study_at(point, sims)
            tasks = study.tasks()[have:sims]
            hb = beat()
            if hb is not None:
                what = self.label or "fixed plan: simulating"
                so_far = f"{len(self.done)} designs and {self.simulations:,} simulated studies so far" \
                    if self.label is None else ""
                hb.phase(f"{what} {point.label(size_axis_name(self.spec))}", len(tasks), so_far)
            self.rows.setdefault(point, []).extend(self._run(study.model_dump_json(), tasks))
            self.done[point] = sims
            self.simulations += len(tasks)
        return self.estimate(point)

    def _run(self, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
        """The tasks' rows; a failed task raises as the study driver raises it (bad input: one line)."""
        try:
            return self._run_tasks(payload, tasks)
        except StudyTaskError as exc:
            raise reraise(exc) from None

    def _run_tasks(self, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
        """The tasks' rows, in chunks (a local fork pool whose workers end with this process);
        each finished task counts on the current heartbeat (:func:`cogtestbed.progress.tick`)."""
        from cogtestbed.progress import tick

        if self.workers == 1 or len(tasks) < 2 * self.workers:
            size = max(1, math.ceil(len(tasks) / 4))
            out = []
            for i in range(0, len(tasks), size):
                out.append(run_chunk(payload, tasks[i:i + size]))
                tick(len(tasks[i:i + size]))
            return out
        first: list[pd.DataFrame] = []
        if self.pool is None:  # the first task here compiles the kernels; forked workers inherit them
            first, tasks = [run_chunk(payload, tasks[:1])], tasks[1:]
            self.pool = fork_pool(self.workers)
        size = math.ceil(len(tasks) / (2 * self.workers))
        futures = {self.pool.submit(run_chunk, payload, tasks[i:i + size]): min(size, len(tasks) - i)
                   for i in range(0, len(tasks), size)}
        for f in as_completed(futures):
            f.result()
            tick(futures[f])
        return [*first, *(f.result() for f in futures)]

    def close(self, abort: bool = False) -> None:
        """Shut the pool down: waiting for its workers, or (``abort``: an interrupt, an error)
        cancelling what is queued and ending the workers now."""
        if self.pool is not None:
            if abort:
                stop_pool(self.pool)
            else:
                self.pool.shutdown()
            self.pool = None

    def ensure_and_close(self, point: Point, sims: int) -> Estimate:
        """:meth:`ensure` ``sims`` simulations at ``point``, then :meth:`close` the pool (ending its
        workers at once if an interrupt or an error stops the simulations)."""
        try:
            est = self.ensure(point, sims)
        except BaseException:
            self.close(abort=True)
            raise
        self.close()
        return est


def decided(est: Estimate, target: float) -> bool:
    """Whether the sequential look may stop: the estimate is :data:`DECIDE_Z` SEs from the target."""
    if est.sims >= DECIDE_MAX_SIMS:
        return True
    return abs(est.rate - target) >= DECIDE_Z * math.sqrt(target * (1 - target) / est.sims)


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


class Planner:
    """The sequential design search of the module docstring."""

    def __init__(self, spec: PlannedStudy, pricer: Pricer, size: Axis, others: Sequence[Axis], target: float = 0.8,
                 max_cost: float | None = None, mc_se: float = DEFAULT_MC_SE, workers: int = 1,
                 on_progress: Callable[[str], None] | None = None, extend_to: int | None = None) -> None:
        if not 0 < target < 1:
            raise InputError(f"--power must be in (0, 1), got {target}")
        if not 0 < mc_se < 0.5:
            raise InputError(f"--mc-se must be in (0, 0.5), got {mc_se}")
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
        return self.pricer.exact(self.design(point), self.sessions(point))

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
        the search goes on, not one design after another at its end."""
        sims = max(FIRST_BATCH, self.power.done.get(point, 0))
        while True:
            est = self.power.ensure(point, sims)
            if self.power.pool is not None:
                self.pricer.submit(self.power.pool, self.design(point), self.sessions(point))
            if decided(est, self.target):
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
            if x >= values[-1]:
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
        if hi < self.size.values[0]:
            self.pruned.append({**combo, "reason": "its smallest size costs more than the best design so far"
                                if self.best else "its smallest size costs more than --max-cost"})
            self.say(f"{label}: pruned (cost)")
            return
        size = self.smallest_passing(combo, hi)
        if size is None:
            self.pruned.append({**combo, "reason": f"no size up to {hi} reaches the target",
                                "at_top": hi >= self.size.values[-1]})
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
        return sorted(out, key=lambda c: cost_key(self.unit_cost(c)) * self.sessions(self.point(1, c)))

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
            recovery = recovery_at(self.spec, self.exp, chosen.point, self.fresh_table(chosen))
        except BaseException:  # an interrupt (SIGTERM, Ctrl-C) or an error: the workers end now
            self.power.close(abort=True)
            raise
        self.power.close()
        evaluated = self.evaluated()
        return PlanResult(self.spec, self.target, self.size.name, chosen, evaluated, pareto(evaluated), recovery,
                          time.perf_counter() - start, cpu_seconds() - cpu0, self.power.simulations, self.pruned,
                          self.notes, next((a.name for a in self.others if a.name != "runs"), None))

    def fresh_table(self, chosen: Evaluated) -> pd.DataFrame:
        """As many simulated studies at the chosen design as chose it, on seeds of their own
        (:data:`FRESH_SEED_OFFSET`): the effect bias and coverage are measured on studies other than
        those whose power picked the design (which favour designs whose estimates ran high)."""
        fresh = PowerEvaluator(self.spec.model_copy(update={"seed": self.spec.seed + FRESH_SEED_OFFSET}),
                               self.power.workers, "fixed plan: fresh studies for the recovery at")
        fresh.ensure_and_close(chosen.point, chosen.estimate.sims)
        return fresh.table(chosen.point)

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
                       f"a wider --{self.size.name} range may hold a cheaper design")
        for axis in self.others:
            here = point.value(axis.name)
            if len(axis.values) > 1 and here in (axis.values[0], axis.values[-1]):
                end = "top" if here == axis.values[-1] else "bottom"
                flag = "--trials" if axis.name == "trials" else f"--{axis.name}"
                out.append(f"the chosen design is at the {end} of the {axis.name} range, {here} "
                           f"({axis.values[0]}-{axis.values[-1]}): a wider {flag} range may hold a cheaper design")
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


# ----------------------------------------------------------------------------- recovery at the design
def recovery_at(spec: PlannedStudy, exp: ExperimentSpec, point: Point, power_rows: pd.DataFrame) -> dict[str, Any]:
    """How well the chosen design recovers what the target is about.

    Model level: per-subject true vs MLE of every parameter and of the effect (r, bias, RMSE) over
    :data:`RECOVERY_REPS` data sets simulated as the power study simulates them, plus the bias of the
    effect's estimate and the coverage of its (1 − level) t-interval across ``power_rows`` (the plan
    passes fresh studies at the design, not those that chose it: :meth:`Planner.fresh_table`),
    both against the population mean of the effect (the t-test's estimand, from
    :data:`ESTIMAND_DRAWS` simulated subjects).  Metric level: mean and SD of the estimated
    difference.  Test level: rejection rate and median p-value.
    """
    if isinstance(spec, PowerStudy):
        return _model_recovery(spec, exp, point, power_rows)
    if isinstance(spec, MetricPowerStudy):
        d = power_rows["difference"].to_numpy(float)
        return {"metric": spec.metric, "mean_difference": float(np.nanmean(d)),
                "sd_difference": float(np.nanstd(d, ddof=1)) if d.size > 1 else float("nan"),
                "mean_a": float(power_rows["estimate_a"].mean()), "mean_b": float(power_rows["estimate_b"].mean())}
    return {"test": spec.test, "rejection_rate": float(power_rows["rejected"].mean()),
            "median_p": float(power_rows["p_value"].median())}


def _model_recovery(spec: PowerStudy, exp: ExperimentSpec, point: Point, rows: pd.DataFrame) -> dict[str, Any]:
    """The model level of :func:`recovery`: per-parameter (and effect) recovery over
    :data:`RECOVERY_REPS` simulated data sets, and the effect's bias and interval coverage across the
    fresh studies ``rows`` against the estimand (:func:`effect_estimand`)."""
    from cogtestbed.validation.studies.model_studies import power_parameters

    assert spec.effect is not None
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, point.trials, point.design(spec.design))
    root = np.random.SeedSequence([spec.seed, 1_000_003])
    pop_seq, *seqs = root.spawn(1 + RECOVERY_REPS)
    population = power_parameters(spec, model, ESTIMAND_DRAWS, np.random.default_rng(pop_seq), each=True)
    estimand = effect_estimand(spec, model, population, pop_seq)
    true_all, est_all = _recovery_draws(spec, exp, model, point, design, seqs)
    per = _parameter_recovery(spec, model, true_all, est_all)
    covered = (rows["lo"] <= estimand) & (estimand <= rows["hi"])
    has = rows["lo"].notna() & rows["hi"].notna()
    two = {"effect_on_test_scale": estimand} if spec.groups == 2 else {}  # the bias's yardstick
    return {"effect": spec.effect, "estimand": estimand, "effect_size": spec.effect_size, **two,
            "effect_bias": float(rows["estimate"].mean() - estimand),
            "effect_bias_mc_se": float(rows["estimate"].std(ddof=1) / math.sqrt(len(rows))) if len(rows) > 1
            else None, "studies": int(len(rows)), "lapse_fit": spec.lapse_fit,
            "random_lapses": spec.lapse is not None and float(spec.lapse.random) > 0,
            "coverage": float(covered[has].mean()) if has.any() else float("nan"),
            "coverage_level": 1 - spec.level, "interval": str(rows["test"].iloc[0]),
            "subjects_scored": int(true_all[model.parameters.names[0]].size), "parameters": per}


def _recovery_draws(spec: PowerStudy, exp: ExperimentSpec, model: Any, point: Point, design: Any,
                    seqs: Sequence[np.random.SeedSequence]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(true, MLE) values of every model parameter, one entry per simulated subject over the data sets
    (one per seed of ``seqs``) simulated at ``point`` (with its ``design``) as the power study simulates
    them and fitted as its test fits them (``--lapse-fit`` included); each subject's estimate aligned
    with its truth."""
    from cogtestbed.validation.studies.model_studies import power_parameters
    from cogtestbed.validation.studies.study_data import fitted_model, seed_of, simulate_model

    true_parts, est_parts = [], []
    for seq in seqs:
        param_seq, sim_seq = seq.spawn(2)
        true = power_parameters(spec, model, point.subjects, np.random.default_rng(param_seq))
        trials = simulate_model(spec, exp, model.name, true, point.subjects, seed_of(sim_seq), design, point.runs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = fitted_model(spec, model).fit_mle(trials)  # the fit the plan's test uses (--lapse-fit)
        order = {s: i for i, s in enumerate(sorted(trials["subject"].unique()))}
        idx = np.array([order[s] for s in fits["subject"]])
        true_parts.append({p: np.asarray(v)[idx] for p, v in true.items()})
        est_parts.append({p: fits[p].to_numpy(float) for p in model.parameters.names})
    true_all = {p: np.concatenate([t[p] for t in true_parts]) for p in model.parameters.names}
    est_all = {p: np.concatenate([e[p] for e in est_parts]) for p in model.parameters.names}
    return true_all, est_all


def _parameter_recovery(spec: PowerStudy, model: Any, true_all: Mapping[str, np.ndarray],
                        est_all: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """r, bias and RMSE (:func:`_r_bias_rmse`) of every free parameter and of the effect (a contrast of
    the parameters when it is none of them); a log-scaled parameter scored as ``log NAME``."""
    assert spec.effect is not None
    names = [*model.parameters.names, spec.effect] if spec.effect not in model.parameters.names else \
        list(model.parameters.names)
    per: dict[str, Any] = {}
    for name in names:
        if name in model.parameters.names:
            t, e = true_all[name], est_all[name]
        else:
            t = np.asarray(model.contrast(name, true_all), float)
            e = np.asarray(model.contrast(name, est_all), float)
        if name in spec.fixed:
            continue
        if name in model.parameters.names and model.parameters[name].transform == "log":
            t, e = np.log(t), np.log(e)  # multiplicative errors (β) are scored on the log scale
            name = f"log {name}"
        per[name] = _r_bias_rmse(t, e)
    return per


def effect_estimand(spec: PowerStudy, model: Any, population: Mapping[str, np.ndarray],
                    seq: np.random.SeedSequence) -> float:
    """What the power study's test estimates, from a large simulated ``population`` (the shifted
    group): its mean on the test's scale
    (:func:`~cogtestbed.validation.studies.model_studies.effect_scale`) minus, for one group, its
    value before the effect (:func:`~cogtestbed.validation.studies.model_studies.one_sample_null`),
    for two groups the first group's (simulated at the base medians, or the fixed reference
    sample's mean)."""
    from cogtestbed.validation.studies.model_studies import effect_scale, on_scale, one_sample_null, power_parameters

    assert spec.effect is not None
    scale = effect_scale(model, spec.effect)
    shifted = float(np.mean(on_scale(model.contrast(spec.effect, population), scale)))
    if spec.groups == 1:
        return shifted - one_sample_null(spec, model)
    if spec.reference is not None:
        return shifted - float(np.nanmean(spec.reference.values))
    base = power_parameters(spec.model_copy(update={"effect_size": 0.0}), model, ESTIMAND_DRAWS,
                            np.random.default_rng(seq.spawn(1)[0]), each=True)
    return shifted - float(np.mean(on_scale(model.contrast(spec.effect, base), scale)))


def _r_bias_rmse(true: np.ndarray, est: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(true) & np.isfinite(est)
    t, e = true[ok], est[ok]
    r = float(np.corrcoef(t, e)[0, 1]) if t.size > 2 and t.std() > 0 and e.std() > 0 else float("nan")
    err = e - t
    return {"r": r, "bias": float(err.mean()) if err.size else float("nan"),
            "rmse": float(np.sqrt((err ** 2).mean())) if err.size else float("nan")}
