"""The experiment spec: one declaration per experiment, read by every generic layer.

An experiment is fully described by one :class:`ExperimentSpec`, declared as the module-level
``SPEC`` of ``cogtestbed/experiments/<name>.py`` (``-`` in the name becomes ``_`` in the module
name) and discovered by :mod:`cogtestbed.registry`.  The pieces it names live where every other
experiment keeps them:

============================  ====================================================================
piece                          where
============================  ====================================================================
trial table: name, schema      ``tables/<family>.py`` (``EXPERIMENT``, ``SCHEMA``)
environment + design           ``environments/<family>.py`` (a :class:`~cogtestbed.environments.base.TextEnv`)
synthetic agents               ``agents/<family>.py`` (:class:`~cogtestbed.agents.base.SyntheticAgent`)
cognitive models + metrics     ``inference/<family>.py`` (:class:`~cogtestbed.inference.base.CognitiveModel`)
importers of published data    ``data/<source>.py``
the spec itself                ``experiments/<name>.py``
============================  ====================================================================

Generic code (simulation, CLI, studies, LLM runs, the conformance suite) reads only the spec and
the contracts of those pieces; it never branches on an experiment's name.

**What a declaration imports.**  Reading a file and computing its metrics or fitting a model needs
the trial table's schema (``tables/<family>.py``), the importers, the metrics function and the
models, none of which builds an environment.  The environment and the agents (gymnasium, pydantic
designs, the prompts) are therefore loaded, not imported: ``env_cls=lazy(load_env)`` and
``agents=lazy(load_agents)`` (functions that import the piece and return it; a plugin may name
one as ``"module:Class"``) are called on first access of ``spec.env_cls`` / ``spec.agents``
(:class:`Lazy`), and the spec checks itself against them then; ``table_schema`` gives the schema
the environment declares, so that :attr:`ExperimentSpec.schema` needs no environment.  A piece
may always be given as the object itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.experiments._importer import Importer as Importer
from cogtestbed.experiments._names import UnknownNameError as UnknownNameError
from cogtestbed.metrics_result import METRICS_RESULT_KEYS as METRICS_RESULT_KEYS
from cogtestbed.metrics_result import METRICS_UNITS as METRICS_UNITS
from cogtestbed.metrics_result import WELCH_PER_UNIT
from cogtestbed.metrics_result import MetricComparison as MetricComparison
from cogtestbed.metrics_result import MetricOption as MetricOption
from cogtestbed.metrics_result import MetricsResult as MetricsResult
from cogtestbed.metrics_result import MetricsUnit as MetricsUnit
from cogtestbed.metrics_result import headline_problems as headline_problems
from cogtestbed.metrics_result import metrics_result as metrics_result
from cogtestbed.metrics_result import metrics_result_problems as metrics_result_problems

if TYPE_CHECKING:  # the spec module stays import-light; the pieces are imported by spec modules
    import pandas as pd

    from cogtestbed.agents.base import SyntheticAgent
    from cogtestbed.environments.base import Design, TextEnv
    from cogtestbed.environments.forms import PromptForm
    from cogtestbed.experiments._adaptive import AdaptiveDecl
    from cogtestbed.inference.base import CognitiveModel
    from cogtestbed.schema import TrialSchema

#: What a study pools over: a subject's own trials, or several sessions (runs) of one agent.
PoolingUnit = Literal["subject", "session"]
#: Kinds of declared study (see :class:`StudyDecl`).
StudyKind = Literal[
    "recovery", "model-recovery", "sbc", "power",
    "metric-validity", "metric-power", "test-size", "test-power",
]
STUDY_KINDS: tuple[str, ...] = (
    "recovery", "model-recovery", "sbc", "power",
    "metric-validity", "metric-power", "test-size", "test-power",
)


@dataclass(frozen=True)
class Lazy:
    """A piece of an experiment imported on first use: a loader (a function of no argument that
    imports the piece and returns it), or, for a piece outside this package, its name
    ``"package.module:attribute"``."""

    target: str | Callable[[], Any]

    def __post_init__(self) -> None:
        if callable(self.target):
            return
        module, colon, attribute = self.target.partition(":")
        if not (module and colon and attribute):
            raise InputError(f"a lazy piece is named 'package.module:attribute', got {self.target!r}")

    def load(self) -> Any:
        """The named object (one clear error where the module or the attribute does not exist)."""
        if callable(self.target):
            return self.target()
        module_name, _, attribute = self.target.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise ImportError(f"cannot import {self.target!r}: {exc}") from exc
        for part in attribute.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise ImportError(f"cannot import {self.target!r}: {module_name} has no {attribute!r}") from None
        return obj


def lazy(target: str | Callable[[], Any]) -> Any:
    """A piece of an :class:`ExperimentSpec` (``env_cls``, ``agents``) imported on first access
    instead of at declaration: a loader function, or ``"package.module:attribute"`` (see the module
    docstring).  Typed ``Any`` so that it stands for the piece in a declaration."""
    return Lazy(target)


class _LazyField:
    """A field of :class:`ExperimentSpec` whose declared value may be :class:`Lazy`.

    The declared value is kept in the instance's ``__dict__`` under the field's name; reading the
    field imports every lazy piece of the spec at once and checks the declaration against them
    before returning the piece.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, spec: ExperimentSpec | None, owner: type | None = None) -> Any:
        if spec is None:
            return self
        value = spec.__dict__[self.name]
        if isinstance(value, Lazy):
            spec._load_pieces()
            value = spec.__dict__[self.name]
        return value

    def __set__(self, spec: ExperimentSpec, value: Any) -> None:  # only the dataclass __init__ reaches it
        spec.__dict__[self.name] = value


class _PrefixChecks:
    """The degenerate-answer rule (:func:`cogtestbed.no_data.null_unidentified`) for every prefix of
    one table (subject ids below n), found once: each unit's reason is its own answers' (so a
    prefix's degenerate units are the table's below n), and once a prefix's valid answers take
    enough distinct values every longer prefix's do."""

    def __init__(self, trials: pd.DataFrame, min_distinct: int) -> None:
        from cogtestbed.no_data import degenerate_units, valid_answers

        answers = valid_answers(trials)
        self.answers = answers.to_numpy()
        self.answer_subject = trials.loc[answers.index, "subject"].to_numpy()
        self.units = degenerate_units(trials, min_distinct)
        self.min_distinct = min_distinct
        self.identified_from: float = float("inf")  # the smallest n known to identify

    def at(self, n: int) -> tuple[str | None, dict[Any, str]] | None:
        """(the table-level reason, the degenerate units) of the prefix of units below ``n``; None
        where it holds no valid answer (the rule leaves its result as it is)."""
        from cogtestbed.no_data import degenerate_reason

        reason = None
        if n < self.identified_from:
            below = self.answers[self.answer_subject < n]
            if below.size == 0:
                return None
            reason = degenerate_reason(below, self.min_distinct)
            if reason is None:
                self.identified_from = n
        return reason, {u: r for u, r in self.units.items() if u < n}


@dataclass(frozen=True)
class MetricsSpec:
    """The published metrics of an experiment: a plain function of the trial table.

    ``fn(trials, **options) -> MetricsResult``; ``unit`` names the per-unit key of the result;
    ``headline`` lists the keys of ``result["metrics"]`` that studies may target (metric validity
    and metric power); ``options`` the keyword options ``fn`` accepts; ``tests`` the statistical
    tests of the headline that can be computed alone: ``tests[name](trials, **options)`` returns
    what ``fn(trials, **options)["metrics"][name]`` holds, without the cost of the other metrics
    (the test-size and test-power studies call it); ``paired_by`` the per-unit rows two models run
    on the same sessions are paired on (result key, id fields; default the unit rows by
    ``subject``).  Calling the spec checks the shape of what ``fn`` returns (one clear error
    naming every problem).
    """

    fn: Callable[..., Any]
    unit: MetricsUnit = "per_subject"
    headline: tuple[str, ...] = ()
    options: Mapping[str, MetricOption] = field(default_factory=dict)
    tests: Mapping[str, Callable[..., Mapping[str, Any]]] = field(default_factory=dict)
    #: Options that make ``fn`` cheap while still running every code path (fewer bootstrap
    #: resamples and permutations), used by the quick conformance checks; empty when ``fn`` is cheap.
    smoke_options: Mapping[str, Any] = field(default_factory=dict)
    paired_by: tuple[str, tuple[str, ...]] | None = None
    #: Other names of headline keys, as the paper writes them (``T1c`` for ``t1_lr``); matched
    #: without regard to case by :meth:`resolve`.
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: ``prefixes(trials, sizes, **options)``: what ``fn`` returns on the first n units (subject
    #: ids below n) of ``trials``, for each n of ``sizes``, computed together (sums over units
    #: accumulated once: a sequential plan tests many prefixes of each simulated table), or
    #: ``None`` for a unit whose result is computed by ``fn`` itself; None: ``fn`` on each prefix.
    prefixes: Callable[..., list[Any]] | None = None
    #: Keys of the headline metrics and of the unit rows that are estimated through a model and so
    #: not identified by answers without variation: null (with the reason and a flag) where the
    #: valid answers of the table, or of a unit's row, take fewer than :attr:`min_distinct_answers`
    #: values (:func:`cogtestbed.no_data.null_unidentified`, the one rule of every experiment).
    #: Descriptive metrics (a reward rate, a mean, an error) keep their values.
    unidentified: tuple[str, ...] = ()
    min_distinct_answers: int = 2
    #: How a difference in a headline metric between two groups is tested, or why it cannot be
    #: (:class:`~cogtestbed.metrics_result.MetricComparison`), where it is not the default: a Welch
    #: t-test on the metric's per-unit values (:meth:`comparability`).  Read before any simulation.
    comparisons: Mapping[str, MetricComparison] = field(default_factory=dict)

    def comparability(self, metric: str) -> MetricComparison:
        """How a difference in headline ``metric`` (or its alias) between two groups is tested: the
        declared :attr:`comparisons` entry, else a Welch t-test on its per-unit values."""
        return self.comparisons.get(self.resolve(metric), WELCH_PER_UNIT)

    def check_comparable(self, metric: str, experiment: str) -> None:
        """Refuse, from the declaration alone (before any simulation, in one line), a difference in
        ``metric`` between two groups that :meth:`comparability` declares untestable: why, and the
        metrics of ``experiment`` that can be compared."""
        how = self.comparability(metric)
        if how.comparable:
            return
        can = [m for m in self.headline if self.comparability(m).comparable]
        raise InputError(f"`metric` {metric!r} of {experiment} cannot be compared between two groups: {how.reason}; "
                         + (f"comparable: {', '.join(can)}" if can else "none of its metrics can be"))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.comparisons) - set(self.headline))
        if unknown:
            raise InputError(f"comparisons name metrics that are not headline metrics: {', '.join(unknown)}")

    def _checked(self, result: Any, trials: pd.DataFrame) -> MetricsResult:
        """``result`` of ``fn`` on ``trials`` under the rules of every experiment: degenerate
        answers null what they do not identify, non-finite headlines are null."""
        from cogtestbed.no_data import null_nonfinite, null_unidentified

        return cast(MetricsResult, null_nonfinite(null_unidentified(
            dict(result), trials, self.unidentified, self.min_distinct_answers, self.unit)))

    def on_prefixes(self, trials: pd.DataFrame, sizes: Sequence[int], **options: Any) -> list[MetricsResult]:
        """This spec called on the first n units of ``trials`` (subject ids below n) for each n of
        ``sizes``: through :attr:`prefixes` where the experiment has it (same values to rounding),
        else one call per prefix."""
        from cogtestbed.schema import canonical_rows

        fast = self.prefixes(canonical_rows(trials), list(sizes), **options) if self.prefixes is not None else None
        subject = trials["subject"].to_numpy()
        valid = trials["valid"].fillna(False).to_numpy(dtype=bool) if "valid" in trials.columns else None
        checks = _PrefixChecks(trials, self.min_distinct_answers) if fast is not None else None
        out = []
        for i, n in enumerate(sizes):
            has_data = valid is not None and bool(valid[subject < n].any())
            if fast is None or fast[i] is None or not has_data or checks is None:  # no data: the spec's own result
                out.append(self(trials[subject < n], **options))
            else:  # the rule of _checked, from the table's answers found once
                out.append(self._prefix_checked(fast[i], checks.at(n)))
        return out

    def _prefix_checked(self, result: MetricsResult, found: tuple[str | None, dict[Any, str]] | None
                        ) -> MetricsResult:
        """:meth:`_checked`'s rule on a prefix's fast result, from the answers :class:`_PrefixChecks` found."""
        from cogtestbed.no_data import apply_unidentified, null_nonfinite

        out = dict(result) if found is None else apply_unidentified(
            dict(result), self.unidentified, found[0], found[1], self.unit)
        return cast(MetricsResult, null_nonfinite(out))

    def resolve(self, name: str) -> str:
        """The headline key ``name`` or its alias names (unchanged when it is neither)."""
        if name in self.headline:
            return name
        folded = {k.lower(): v for k, v in self.aliases.items()} | {k.lower(): k for k in self.headline}
        return folded.get(name.lower(), name)

    def test_result(self, name: str, trials: pd.DataFrame, **options: Any) -> dict[str, Any]:
        """What this spec returns on ``trials`` for the statistical test ``name``, computed alone
        where the experiment declares it (:attr:`tests`: a fraction of the cost) and under the same
        rules as the whole result: no valid answer, degenerate answers
        (:func:`cogtestbed.no_data.null_unidentified`: ``metrics[name]`` null with the reason where
        ``name`` is among :attr:`unidentified`) and non-finite values; ``{"metrics": {name: ...},
        "flags": [...], ...}``.  Without a test of that name alone, the whole result."""
        from cogtestbed.no_data import no_data_result, null_nonfinite, null_unidentified, valid_rows
        from cogtestbed.schema import canonical_rows

        alone = self.tests.get(name)
        if alone is None:
            return dict(self(trials, **options))
        if valid_rows(trials) == 0:
            return no_data_result(trials, (name,), self.unit)
        result = {"metrics": {name: dict(alone(canonical_rows(trials), **options))}, "flags": []}
        keys = (name,) if name in self.unidentified else ()
        return null_nonfinite(null_unidentified(result, trials, keys, self.min_distinct_answers, self.unit))

    def __call__(self, trials: pd.DataFrame, **options: Any) -> MetricsResult:
        from cogtestbed.no_data import no_data_result, valid_rows
        from cogtestbed.schema import canonical_rows  # rows in one order: results never depend on the file's

        if valid_rows(trials) == 0:  # no data, no number (cogtestbed.no_data)
            return cast(MetricsResult, no_data_result(trials, self.headline, self.unit))
        raw = self.fn(canonical_rows(trials), **options)
        problems = metrics_result_problems(raw, self.unit)
        if problems:
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            raise TypeError(f"metrics function {name} does not return a MetricsResult: " + "; ".join(problems))
        return self._checked(raw, trials)


ParamMap = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Generator:
    """How data *from a model* are simulated: by which agent, with which agent parameters.

    A model and its generating agent often share names and parameters (``rw-pm``); where they
    differ (the collider's ``cbn-3p`` model, b/m/p_c, is generated by the 12-parameter ``cbn``
    agent with m1 = m2 = m and pC1 = pC2 = p_c), ``params`` maps model parameter arrays to agent
    parameter arrays.  ``fixed`` holds agent parameters the model does not have (response noise,
    say), which otherwise keep the agent's defaults.
    """

    agent: str
    params: ParamMap | None = None
    fixed: Mapping[str, float] = field(default_factory=dict)

    def agent_params(self, model_params: Mapping[str, Any]) -> dict[str, Any]:
        """Agent parameters for the given model parameter values (scalars or arrays)."""
        mapped = dict(self.params(model_params)) if self.params is not None else dict(model_params)
        return {**dict(self.fixed), **mapped}


@dataclass(frozen=True)
class StudyDecl:
    """A study an experiment declares valid and meaningful for itself.

    ``recovery`` / ``sbc`` / ``power`` name a ``model`` (and a ``parameter`` or contrast for power);
    ``model-recovery`` names the candidate ``models``; ``metric-validity`` sweeps ``parameter`` of
    ``agent`` over ``values`` and checks that ``metric`` moves monotonically (``direction``);
    ``metric-power`` detects a difference in ``metric`` between the two agent settings of
    ``compare``; ``test-size`` / ``test-power`` measure how often the statistical ``test`` (a key
    of the metrics result whose value carries a ``p_value`` or ``reject``) rejects under ``agent``.
    ``runs`` / ``trials`` / ``subjects`` / ``design`` (design fields) give the design the study is
    meaningful at (``trials``: the design's ``n_trials``, which the study driver reaches through
    the spec's ``trials_field``; to set that field itself, use ``design``); ``sampler``
    (``prior`` or ``uniform`` on ``ranges``) and ``fixed`` say where the true model parameters of
    recovery / model-recovery come from; ``values`` holds a power study's effect size, or the
    values a metric-power / test-size / test-power study sweeps ``parameter`` over (an agent
    parameter or a design field); ``metric_options`` are the metrics options the study's metric or
    test is computed with (the cheaper settings a rejection rate needs, say).
    """

    kind: StudyKind
    description: str = ""
    model: str | None = None
    models: tuple[str, ...] = ()
    agent: str | None = None
    parameter: str | None = None
    values: tuple[float, ...] = ()
    metric: str | None = None
    test: str | None = None
    compare: tuple[Mapping[str, float], Mapping[str, float]] | None = None
    direction: Literal["increasing", "decreasing", "any"] = "any"
    runs: tuple[int, ...] = ()
    trials: tuple[int, ...] = ()
    params: Mapping[str, float] = field(default_factory=dict)
    subjects: tuple[int, ...] = ()
    sampler: Literal["prior", "uniform"] = "prior"
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    fixed: Mapping[str, float] = field(default_factory=dict)
    design: Mapping[str, Any] = field(default_factory=dict)
    metric_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in STUDY_KINDS:
            raise InputError(f"unknown study kind {self.kind!r}; choose one of: {', '.join(STUDY_KINDS)}")


#: Sampling temperature of ``cogtestbed run`` for an experiment whose paper states none (this
#: project's default, never attributed to a paper): greedy decoding.
PROJECT_TEMPERATURE = 0.0


@dataclass(frozen=True)
class Decoding:
    """The decoding settings an experiment's paper used, which ``cogtestbed run`` applies unless
    the command line sets them (``--temperature``), recorded with their ``source`` (the paper's
    section and words) in the run's manifest."""

    temperature: float
    source: str

    def __post_init__(self) -> None:
        if not (np.isfinite(self.temperature) and self.temperature >= 0):
            raise InputError(f"a decoding temperature must be a finite number >= 0, got {self.temperature}")
        if not self.source.strip():
            raise InputError("a decoding default needs its source (the paper's section)")


def resolve_temperature(decoding: Decoding | None, given: float | None) -> tuple[float, str]:
    """(temperature, where it comes from) of a run: the command line's, else the experiment's
    paper's (:class:`Decoding`), else :data:`PROJECT_TEMPERATURE`."""
    if given is not None:
        return float(given), "command line (--temperature)"
    if decoding is not None:
        return decoding.temperature, f"the experiment's paper: {decoding.source}"
    return PROJECT_TEMPERATURE, "this project's default (greedy): the experiment's paper states none"


@dataclass(frozen=True)
class PhenotypeReference:
    """A metric of the behavioural/performance phenotype with its published reference values.

    ``normalised = (x − random) / (human − random)`` (CogBench, Coda-Forno et al. 2024, Fig. 2).
    """

    key: str
    label: str
    kind: Literal["behaviour", "performance"]
    human: float
    random: float
    source_task: str


@dataclass(frozen=True)
class HeadlineQuestion:
    """A question a researcher of the experiment's paper asks first, declared as data: ``plan_args`` are the
    ``cogtestbed plan EXPERIMENT`` arguments that plan it at the paper's design between two LLMs (or an LLM and
    the paper's people); ``benchmarks/bench_plans.py --headline`` plans and times each."""

    name: str
    description: str
    plan_args: tuple[str, ...]

    @classmethod
    def metric(cls, name: str, description: str, metric: str, settings: tuple[str, str], runs: str,
               *extra: str) -> HeadlineQuestion:
        """A metric's difference between two settings (``AGENT:p=v``) run by two LLMs (gpt-4o against
        gpt-4o-mini), its runs per setting searched over ``runs`` (``LO:HI``)."""
        return cls(name, description, ("--metric", metric, "--compare", *settings, *TWO_LLMS, "--runs", runs, *extra))

    @classmethod
    def parameter(cls, name: str, description: str, model: str, effect: str, subjects: str,
                  *extra: str) -> HeadlineQuestion:
        """A model parameter's difference (``NAME=SIZE``) between two LLMs, subjects searched over ``subjects``."""
        return cls(name, description, ("--model", model, "--effect", effect, *TWO_LLMS, "--subjects", subjects,
                                       *extra))


#: The two LLMs a headline question compares (the pair the docs price throughout).
TWO_LLMS = ("--llm", "openai:gpt-4o", "--llm", "openai:gpt-4o-mini")


@dataclass(frozen=True)
class ExperimentSpec:
    """Everything generic code needs to know about one experiment (see the module docstring).

    ``env_cls`` and ``agents`` may be named with :func:`lazy` (imported on first access);
    ``table_schema`` is the :class:`~cogtestbed.schema.TrialSchema` the environment declares (the
    same object; ``None``: read from the environment).  ``trials_field`` is the integer design
    field ``--trials`` scales (``None``: the trial count is fixed by the paradigm; studies then
    scale ``runs``).  ``pooling_unit`` says whether a subject's data are one session (``subject``)
    or several sessions of one agent pooled for fitting (``session``, CogBench's runs).
    """

    name: str
    citation: str
    description: str
    env_cls: type[TextEnv[Any, Any]]
    agents: Mapping[str, type[SyntheticAgent]]
    metrics: MetricsSpec
    models: Mapping[str, CognitiveModel] = field(default_factory=dict)
    table_schema: TrialSchema | None = None
    generators: Mapping[str, Generator] = field(default_factory=dict)
    importers: Mapping[str, Importer] = field(default_factory=dict)
    pooling_unit: PoolingUnit = "subject"
    #: Sessions of the default simulated subject (``simulate`` without ``sessions``); above 1 where one session of
    #: the default design identifies nothing: then the fewest that identify the experiment's first model, as the
    #: design check finds them (:mod:`cogtestbed.identifiability`; tests/test_identified_sessions.py holds it).
    subject_sessions: int = 1
    trials_field: str | None = None
    studies: tuple[StudyDecl, ...] = ()
    phenotype: tuple[PhenotypeReference, ...] = ()
    #: Conformance checks this experiment is known to fail: check name → the reason (a
    #: documented limitation, not a bug to hide).  The suite reports them as expected failures
    #: and fails when one passes (remove it then).  Keep it empty where possible.
    expected_failures: Mapping[str, str] = field(default_factory=dict)
    #: Decoding settings the paper states (``None``: it states none; ``run`` then decodes greedily).
    decoding: Decoding | None = None
    #: Adaptive sessions: the model and design space that choose each trial
    #: (:class:`~cogtestbed.experiments._adaptive.AdaptiveDecl`), or why the trials cannot be chosen
    #: freely (a one-line reason; ``None``: none declared).
    adaptive: AdaptiveDecl | str | None = None
    #: The paper's headline questions as plans (:class:`HeadlineQuestion`; empty: none declared yet).
    headline_questions: tuple[HeadlineQuestion, ...] = ()

    def __post_init__(self) -> None:
        problems = self._declared_problems()
        self.claim_pieces(models=self.models)
        if not self.has_lazy_pieces:
            self.claim_pieces(self.env_cls, self.agents)
            problems += self._piece_problems(self.env_cls, self.agents)
        if problems:
            raise InputError(f"experiment spec {self.name!r} is inconsistent: " + "; ".join(problems))
        if not self.has_lazy_pieces:
            self._register_adaptive()

    def _register_adaptive(self) -> None:
        """Give the environment its adaptive trial chooser (once the environment is imported)."""
        from cogtestbed.experiments._adaptive import register_adaptive

        register_adaptive(self)

    def claim_pieces(self, env_cls: type | None = None, agents: Mapping[str, type] | None = None,
                     models: Mapping[str, Any] | None = None) -> None:
        """Give the spec's name to each piece that declares no ``experiment`` (the environment
        class, the agent classes, the models' classes), so that the name is declared once, in the
        spec; run on declaration and when the lazy pieces are imported.  A piece that names another
        experiment keeps it (conformance check ``spec_declaration`` reports it)."""
        classes = [env_cls, *(agents or {}).values(), *(type(m) for m in (models or {}).values())]
        for cls in classes:
            if cls is not None and getattr(cls, "experiment", None) is None:
                cls.experiment = self.name  # type: ignore[attr-defined]

    @property
    def has_lazy_pieces(self) -> bool:
        """Whether a piece named with :func:`lazy` is not imported yet."""
        return any(isinstance(self.__dict__[name], Lazy) for name in LAZY_FIELDS)

    def _imported_pieces(self) -> dict[str, Any]:
        """The values of :data:`LAZY_FIELDS`, lazy ones imported (not stored)."""
        return {name: value.load() if isinstance(value, Lazy) else value
                for name, value in ((n, self.__dict__[n]) for n in LAZY_FIELDS)}

    def _load_pieces(self) -> None:
        """Import every lazy piece and check the declaration against them; keep them only when
        consistent (otherwise every access reports the problems)."""
        pieces = self._imported_pieces()
        self.claim_pieces(**pieces)
        problems = self._piece_problems(**pieces)
        if problems:
            raise InputError(f"experiment spec {self.name!r} is inconsistent: " + "; ".join(problems))
        self.__dict__.update(pieces)
        self._register_adaptive()

    # -- self-consistency (checked at declaration; the conformance suite checks behaviour) --
    def problems(self) -> list[str]:
        """Declaration errors: names that do not resolve, models without a generator, … (imports
        the lazy pieces)."""
        pieces = self._imported_pieces()
        self.claim_pieces(**pieces)
        return self._declared_problems() + self._piece_problems(**pieces)

    def _declared_problems(self) -> list[str]:
        """The errors visible without importing the lazy pieces."""
        out = [f"model {model!r} has no generator" for model in self.models if model not in self.generators]
        out += [f"generator declared for unknown model {model!r}" for model in self.generators
                if model not in self.models]
        return out + self._table_and_study_problems()

    def _table_and_study_problems(self) -> list[str]:
        out: list[str] = []
        from cogtestbed.schema import TrialSchema

        if self.table_schema is not None and not isinstance(self.table_schema, TrialSchema):
            out.append(f"table_schema must be a TrialSchema, got {type(self.table_schema).__name__}")
        for study in self.studies:
            out.extend(self._study_problems(study))
        alone = sorted(set(self.metrics.tests) - set(self.metrics.headline))
        if alone:
            out.append(f"metrics tests {alone} are not headline keys {self.metrics.headline}")
        for check, reason in self.expected_failures.items():
            if not str(reason).strip():
                out.append(f"expected failure of {check!r} needs a reason")
        chooser = getattr(self.adaptive, "model", None)
        if chooser is not None and chooser not in self.models:
            out.append(f"adaptive sessions name unknown model {chooser!r}")
        return out

    def _piece_problems(self, env_cls: type[TextEnv[Any, Any]],
                        agents: Mapping[str, type[SyntheticAgent]]) -> list[str]:
        """The errors against the environment and the agents."""
        out: list[str] = []
        for model, gen in self.generators.items():
            if model in self.models and gen.agent not in agents:
                out.append(f"generator of {model!r} names unknown agent {gen.agent!r}")
        out += self._schema_problems(env_cls)
        fields_ = getattr(env_cls.design_cls, "model_fields", {})
        if self.trials_field is not None and self.trials_field not in fields_:
            out.append(f"trials_field {self.trials_field!r} is not a field of {env_cls.design_cls.__name__}")
        for s in self.studies:
            if s.agent is not None and s.agent not in agents:
                out.append(f"{s.kind} study names unknown agent {s.agent!r}")
        return out

    def _schema_problems(self, env_cls: type[TextEnv[Any, Any]]) -> list[str]:
        from cogtestbed.schema import TrialSchema

        declared = getattr(env_cls, "table_schema", None)
        if not isinstance(declared, TrialSchema):
            return [f"{env_cls.__name__} declares no table_schema (a TrialSchema)"]
        if self.table_schema is not None and declared is not self.table_schema:
            return [f"{env_cls.__name__}.table_schema is not the spec's table_schema"]
        return []

    def _study_problems(self, s: StudyDecl) -> list[str]:
        out = []
        for m in (s.model, *s.models):
            if m is not None and m not in self.models:
                out.append(f"{s.kind} study names unknown model {m!r}")
        if s.metric is not None and self.metrics.headline and s.metric not in self.metrics.headline:
            out.append(f"{s.kind} study names metric {s.metric!r}, not among {self.metrics.headline}")
        unknown = sorted(set(s.metric_options) - set(self.metrics.options))
        if unknown:
            out.append(f"{s.kind} study names unknown metrics options {unknown}")
        return out

    # -- look-ups with one clear error -------------------------------------------------
    @property
    def declared_agents(self) -> list[str]:
        """Agents the spec's generators and studies name (all agents where none is named)."""
        named = {g.agent for g in self.generators.values()} | {s.agent for s in self.studies if s.agent}
        return sorted(named) or sorted(self.agents)

    @property
    def design_cls(self) -> type[Design]:
        return self.env_cls.design_cls

    @property
    def prompt_forms(self) -> tuple[PromptForm, ...]:
        """The prompt's declared wordings (form 0: the paper's verbatim prompt), from the environment."""
        return self.env_cls.prompt_forms

    @property
    def schema(self) -> TrialSchema:
        """What this experiment's trial tables hold (declared by its environment; given as
        ``table_schema``, read without importing the environment)."""
        return self.table_schema if self.table_schema is not None else self.env_cls.table_schema

    def read(self, path: Path, source: str = "auto", sessions: str | None = None) -> tuple[pd.DataFrame, str]:
        """Read ``path`` as a trial table (``.parquet``) or through one of the importers
        (``source`` names one; ``auto`` asks each importer's sniff) and validate it against
        :attr:`schema` before anything is computed; returns the table and the source used.
        ``sessions``: what an importer without trial key does with a run that judges a condition
        again (:meth:`Importer.load_as`; None: its default, ``refuse``)."""
        from cogtestbed.memory import reading_input
        from cogtestbed.schema import TrialTableError, validate_trials

        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        if source == "trials" or (source == "auto" and path.suffix == ".parquet"):
            return self._read_trial_table(path, sessions), "trials"
        if source == "auto":
            readers = self.all_importers
            found = next((imp for imp in readers.values() if imp.sniff(path)), None)
            if found is None:
                raise TrialTableError(
                    f"cannot tell what {path} is: not a .parquet trial table and no importer of "
                    f"{self.name} ({', '.join(readers) or 'none'}) recognises it; pass `source`")
            source = found.source
        importer = self.importer(source)
        with reading_input(path):
            table = importer.load_as(path, sessions)
        return validate_trials(table, self.schema, self.name, source=path, file_columns=importer.file_columns), source

    def _read_trial_table(self, path: Path, sessions: str | None) -> pd.DataFrame:
        from cogtestbed.memory import reading_input
        from cogtestbed.schema import validate_trials
        from cogtestbed.trials import read_trial_file

        if sessions is not None:
            raise InputError(f"`sessions` applies to published files read through an importer, not to the "
                             f"trial table {path.name} (its sessions are its own)")
        with reading_input(path):  # a large file: refused in one line with its estimate, or its progress shown
            table = read_trial_file(path)
        return validate_trials(table, self.schema, self.name, source=path)

    def metric_option(self, name: str) -> MetricOption:
        try:
            return self.metrics.options[name]
        except KeyError:
            raise UnknownNameError("metrics option", name, self.metrics.options, self.name) from None

    def agent(self, name: str) -> type[SyntheticAgent]:
        try:
            return self.agents[name]
        except KeyError:
            raise UnknownNameError("agent", name, self.agents, f"experiment {self.name}") from None

    def model(self, name: str) -> CognitiveModel:
        try:
            return self.models[name]
        except KeyError:
            raise UnknownNameError("model", name, self.models, f"experiment {self.name}") from None

    def generator(self, model: str) -> Generator:
        """How to simulate from ``model`` (every declared model has one)."""
        self.model(model)
        return self.generators[model]

    @property
    def all_importers(self) -> dict[str, Importer]:
        """The declared importers and, where none is declared under that name, the ``psych201``
        importer of this experiment's own Psych-201 transcripts (``cogtestbed export --to
        psych201``; :mod:`cogtestbed.experiments._psych201`): every experiment reads them."""
        from cogtestbed.experiments._psych201 import SOURCE, psych201_importer

        if SOURCE in self.importers:
            return dict(self.importers)
        return {**self.importers, **psych201_importer(self.name)}

    def importer(self, source: str) -> Importer:
        """The importer ``source`` (declared, or the ``psych201`` one every experiment has)."""
        readers = self.all_importers
        try:
            return readers[source]
        except KeyError:
            raise UnknownNameError("data source", source, readers, self.name) from None

    def studies_of(self, kind: str) -> tuple[StudyDecl, ...]:
        return tuple(s for s in self.studies if s.kind == kind)


#: Fields of :class:`ExperimentSpec` that may be declared with :func:`lazy`.
LAZY_FIELDS: tuple[str, ...] = ("env_cls", "agents")
for _name in LAZY_FIELDS:  # installed after the dataclass is built: its __init__ stores through them
    setattr(ExperimentSpec, _name, _LazyField(_name))


def same_name_generators(models: Mapping[str, Any], **overrides: Generator) -> dict[str, Generator]:
    """Generators for models simulated by the agent of the same name (plus explicit ones)."""
    gens = {name: Generator(name) for name in models}
    gens.update(overrides)
    return gens
