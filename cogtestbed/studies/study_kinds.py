"""One typed, validated model per study kind; :data:`StudySpec` is their discriminated union.

Every kind shares the :class:`Study` fields (experiment, sizes, design, reps, seed, the agents'
settings and lapses).  The four *model* kinds (:class:`ModelStudy`: recovery, model recovery,
SBC, power) simulate from named models and fit them; the four *metric* kinds
(:class:`MetricStudy`: metric validity, metric power, test size, test power) score one agent with
the experiment's metrics function.  ``kind`` picks the class: :func:`study_spec` builds the right
one from keyword fields, :func:`load_study` from JSON (the payload a worker process receives).
Each class lays out its own independent *tasks* (:meth:`Study.tasks`) and says which
distribution its true parameters come from (:attr:`Study.true_distribution`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from cogtestbed.errors import InputError
from cogtestbed.inference.population import Population
from cogtestbed.lapse import Lapse

Kind = Literal["recovery", "model-recovery", "sbc", "power",
               "metric-validity", "metric-power", "test-size", "test-power"]
Method = Literal["mle", "hierarchical"]
#: Kinds that simulate from models and fit them; the others score agents with the metrics function.
MODEL_KINDS = ("recovery", "model-recovery", "sbc", "power")
#: Kinds whose tasks at every design cell use common random numbers (:meth:`Study.stream` = the
#: repetition): repetition r of 10 and of 40 runs (or subjects) draws the same subjects and answers,
#: the larger design's data extending the smaller's, so the power curve over sizes varies by the
#: design, not by which random numbers each size drew (monotone in size up to Monte-Carlo error),
#: as the planner's designs always did (one cell each, index = repetition).
CRN_KINDS = ("power", "metric-power", "test-size", "test-power")
#: A task: its index (= seed stream) and the design cell and repetition it runs.
Task = dict[str, Any]


class Study(BaseModel):
    """Fields of every study kind (validated, frozen; JSON round-trips: no NaN or infinite number,
    which JSON cannot carry)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: Kind
    experiment: str
    #: Trials per session; ``None`` keeps the design's default (set through the spec's
    #: ``trials_field``, :func:`~cogtestbed.studies.driver.design_for_trials`).
    trials: tuple[int | None, ...] = (None,)
    #: Runs: sessions each simulated subject plays and the model pools (model studies, only where
    #: the experiment pools sessions); for metric studies the runs (units) the metric is computed
    #: over per agent setting, e.g. CogBench's 100 two-step runs of one LLM.
    runs: tuple[int, ...] = (1,)
    #: Extra design fields (e.g. ``{"visits_per_casino": 48}``).
    design: dict[str, Any] = Field(default_factory=dict)
    reps: int = Field(20, ge=1)
    seed: int = 0
    #: Agent parameters: for model studies those the model lacks (override the generator's
    #: ``fixed``, e.g. response noise); for metric studies the agent's base setting.
    params: dict[str, float] = Field(default_factory=dict)
    #: Invalid and random answers of the simulated subjects (:mod:`cogtestbed.lapse`).
    lapse: Lapse | None = None

    @model_validator(mode="after")
    def _sizes(self) -> Study:
        for name in ("subjects", "runs", "trials"):
            bad = [n for n in getattr(self, name, (1,)) if n is not None and n < 1]
            if bad:
                raise InputError(f"{name} must be at least 1, got {bad[0]}")
        if not getattr(self, "subjects", (1,)) or not self.runs or not self.trials:
            raise InputError("subjects, runs and trials need at least one value each")
        return self

    @property
    def true_distribution(self) -> str:
        """Which distribution the true parameters come from (stated in every verdict)."""
        return "fixed agent settings"

    def tasks(self) -> list[Task]:
        """Independent units of work, in a fixed order (index = seed stream, :meth:`stream`)."""
        raise NotImplementedError

    def stream(self, task: Mapping[str, Any]) -> int:
        """The seed stream of ``task`` (``SeedSequence([seed, stream])``): its index, so every task
        draws its own random numbers; for the power kinds (:data:`CRN_KINDS`) its repetition, so a
        power curve's sizes share common random numbers."""
        return int(task["rep"]) if self.kind in CRN_KINDS else int(task["index"])

    def at_point(self, subjects: int, runs: int, trials: int | None, reps: int) -> Self:
        """This study at one design point with ``reps`` repetitions (``subjects`` where it has them)."""
        update: dict[str, Any] = {"runs": (runs,), "trials": (trials,), "reps": reps}
        if "subjects" in type(self).model_fields:
            update["subjects"] = (subjects,)
        return self.model_copy(update=update)


def _numbered(cells: list[dict[str, Any]]) -> list[Task]:
    return [{"index": i, **cell} for i, cell in enumerate(cells)]


# ----------------------------------------------------------------------------- model kinds
class ModelStudy(Study):
    """A study that simulates from models and fits them."""

    #: Model(s): one for recovery / power / SBC, the candidates for model recovery.
    models: tuple[str, ...]
    method: Method = "mle"
    #: Simulated subjects per data set.
    subjects: tuple[int, ...] = (50,)
    #: The fitted models' lapse term (:func:`~cogtestbed.inference.base.with_lapse`): None (none),
    #: ``"fit"`` (ε fitted, recovered against the simulated random-answer rate) or a fixed ε.
    lapse_fit: Literal["fit"] | float | None = None
    # -- Bayesian fits
    draws: int = Field(1000, ge=1)
    tune: int = Field(1000, ge=0)
    chains: int = Field(4, ge=1)
    sampler_backend: Literal["auto", "nutpie", "pymc"] = "auto"
    #: A population (the posterior of a hierarchical fit's group parameters, e.g. a human
    #: data set's) the simulated subjects are drawn from (:mod:`cogtestbed.inference.population`):
    #: each simulated data set takes one posterior draw, its subjects scattered by that draw's SDs.
    from_population: Population | None = None

    @model_validator(mode="after")
    def _models(self) -> ModelStudy:
        kind = getattr(self, "kind", "")
        if not self.models:
            raise InputError(f"a {kind} study needs a model")
        repeated = sorted({m for m in self.models if self.models.count(m) > 1})
        if repeated:
            raise InputError(f"model {', '.join(repeated)} is named twice: model recovery compares different "
                             "candidate models (a model against itself always ties)")
        if kind != "model-recovery" and len(self.models) != 1:
            raise InputError(f"a {kind} study takes exactly one model, got {len(self.models)}")
        if isinstance(self.lapse_fit, float) and not 0.0 <= self.lapse_fit < 1.0:
            raise InputError(f"a fixed lapse rate must be in [0, 1), got {self.lapse_fit}")
        pop = self.from_population
        if pop is not None and kind != "model-recovery" and self.models[0] != pop.model:
            raise InputError(f"population {pop.name} is of model {pop.model}: its parameters are not "
                             f"{self.models[0]}'s (use `model` {pop.model})")
        if pop is not None and pop.experiment != self.experiment:
            raise InputError(f"population {pop.name} is of experiment {pop.experiment}, not {self.experiment}")
        return self

    @property
    def subject(self) -> str:
        """What the study is about: its models."""
        return ", ".join(self.models)

    @property
    def generators(self) -> tuple[str, ...]:
        """The models data are simulated from (every candidate in model recovery)."""
        return self.models[:1]

    def tasks(self) -> list[Task]:
        """Subjects x trials x runs x generating model x repetition, in that order."""
        return _numbered([{"n_subjects": n, "trials": trials, "runs": runs, "generator": gen, "rep": rep}
                          for n in self.subjects for trials in self.trials for runs in self.runs
                          for gen in self.generators for rep in range(self.reps)])


class SampledStudy(ModelStudy):
    """A model study whose true parameters are drawn by a sampler (recovery, model recovery)."""

    #: How true parameters are drawn: ``prior`` = the hierarchical prior (a new population per
    #: rep), ``uniform`` = independent uniform draws on ``ranges`` (default: the prior's central
    #: 90 % on the natural scale).
    sampler: Literal["prior", "uniform", "population"] = "prior"
    ranges: dict[str, tuple[float, float]] = Field(default_factory=dict)
    #: Model parameters held fixed at these values (e.g. ``{"beta": 5}``).
    fixed: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _population_sampler(self) -> SampledStudy:
        if (self.sampler == "population") != (self.from_population is not None):
            raise InputError("sampler 'population' draws from a population: give both (`population` NAME sets it)")
        if self.from_population is not None and self.kind == "model-recovery":
            raise InputError("model recovery draws each candidate model's parameters from its prior; a population "
                             "is of one model")
        return self

    @property
    def true_distribution(self) -> str:
        if self.from_population is not None:
            return (f"draws from population {self.from_population.label} (one posterior draw of its group parameters "
                    "per rep)")
        if self.sampler == "prior":
            return "draws from the hierarchical prior (a new population per rep)"
        ranges = ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in self.ranges.items())
        return "independent uniform draws" + (f" ({ranges}; others on the prior's central 90%)"
                                              if ranges else " on the prior's central 90%")


class RecoveryStudy(SampledStudy):
    """Parameter recovery: true vs estimated parameters (r, bias, RMSE, interval coverage)."""

    kind: Literal["recovery"] = "recovery"
    #: Hierarchical recovery with the prior sampler: also score the population medians.
    population: bool = False


class ModelRecoveryStudy(SampledStudy):
    """Model recovery: the confusion matrix of the best-fitting model per generating model."""

    kind: Literal["model-recovery"] = "model-recovery"

    @model_validator(mode="after")
    def _candidates(self) -> ModelRecoveryStudy:
        if len(self.models) < 2:
            raise InputError("model recovery needs at least two models")
        return self

    @property
    def generators(self) -> tuple[str, ...]:
        return self.models


class SbcStudy(ModelStudy):
    """Simulation-based calibration: ranks of the truth among posterior draws (Talts et al. 2018)."""

    kind: Literal["sbc"] = "sbc"

    @model_validator(mode="after")
    def _bayesian(self) -> SbcStudy:
        if self.method != "hierarchical":
            raise InputError("SBC needs posterior draws: use method='hierarchical'")
        if self.from_population is not None:
            raise InputError("SBC draws from the model's own prior; a population is not its prior")
        return self

    @property
    def true_distribution(self) -> str:
        return "draws from the hierarchical prior"


class ReferenceSample(BaseModel):
    """A fixed first group of a two-group power study: a sample that is not simulated (a human
    sample's trial table, fitted once), as the per-subject MLE of the tested parameter or contrast
    on the test's scale (:func:`~cogtestbed.studies.model_studies.effect_scale`).  Any
    source of trial tables (a file, or a human population) becomes one through
    :func:`~cogtestbed.studies.model_studies.reference_sample`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Where the sample came from (a path, a population's name), for reports.
    source: str
    #: Per-subject estimates of the effect, on the test's scale (one per fitted unit).
    values: tuple[float, ...]
    #: The model's population medians fitted to the sample (median of the per-subject MLE): the
    #: simulated group's medians before the effect.
    medians: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _enough(self) -> ReferenceSample:
        if sum(1 for v in self.values if v == v) < 2:
            raise InputError(f"the sample from {self.source} has fewer than 2 fitted subjects: no two-group test")
        return self


class PowerStudy(ModelStudy):
    """Power of a test on a model parameter or contrast (share of simulated studies rejecting):
    one group's effect against 0 (``groups=1``), or the difference between two groups
    (``groups=2``: two LLMs, or an LLM and a fixed ``reference`` sample)."""

    kind: Literal["power"] = "power"
    #: The parameter or contrast tested, and its shift of the population median (``groups=2``: the
    #: second group's median over the first's).
    effect: str
    effect_size: float = 0.0
    #: 1: a one-sample test of the effect against 0; 2: two groups of ``subjects`` each (two LLMs),
    #: the second's medians moved by the effect, their difference tested
    #: (:func:`~cogtestbed.studies.model_studies.task_power`).
    groups: Literal[1, 2] = 1
    #: With ``groups=2``: the first group as a fixed sample (an LLM against a human sample) instead
    #: of simulated subjects; its fitted medians are the simulated group's base.
    reference: ReferenceSample | None = None
    #: With ``groups=2`` and ``from_population``: the first group is this many people drawn afresh
    #: from the population in every simulated study (their number fixed: their data are already
    #: collected), each playing ``people_trials`` trials (None: the design's own), fitted per subject.
    people: int | None = Field(None, ge=2)
    people_trials: int | None = Field(None, ge=1)
    #: Population medians before the effect (defaults otherwise), and the between-subject SD on
    #: the unconstrained scale.
    base: dict[str, float] = Field(default_factory=dict)
    sd_between: float = Field(0.5, ge=0)
    level: float = Field(0.05, gt=0, lt=1)
    #: A calibrated critical p-value of the two-group MLE test (an LLM against people playing fewer
    #: trials: :func:`~cogtestbed.studies.people_level.calibrated_critical_p`): a study
    #: detects where p < ``critical_p`` instead of p < ``level`` (None: ``level``).
    critical_p: float | None = Field(None, gt=0, lt=1)
    #: Model parameters held fixed at these values.
    fixed: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _groups(self) -> PowerStudy:
        if self.reference is not None and self.groups != 2:
            raise InputError("a reference sample is the first of two groups: it needs groups=2")
        if self.reference is not None and self.method != "mle":
            raise InputError("a two-group test against a fixed sample uses its per-subject MLE: use method='mle' "
                             "(the hierarchical fit of a human sample is not planned yet)")
        if self.people is not None and (self.groups != 2 or self.from_population is None or self.reference
                                        is not None or self.method != "mle"):
            raise InputError("people drawn from a population are the first of two groups: they need groups=2, a "
                             "population, no reference sample and method='mle'")
        if self.from_population is not None and self.base:
            raise InputError(f"population {self.from_population.name} gives the population medians: drop `base` "
                             f"({', '.join(self.base)})")
        return self

    @property
    def true_distribution(self) -> str:
        if self.from_population is not None:
            return self._population_distribution(self.from_population)
        base = ", ".join(f"{k}={v:g}" for k, v in self.base.items()) or "defaults"
        spread = f"subjects scattered with SD {self.sd_between:g} on the unconstrained scale"
        if self.groups == 1:
            return f"population medians ({base}) shifted by the effect, {spread}"
        if self.reference is not None:
            return (f"group 1: the {len(self.reference.values)} subjects of {self.reference.source} (fitted once); "
                    f"group 2: their fitted medians ({base}) shifted by the effect, {spread}")
        return f"group 1: population medians ({base}); group 2: shifted by the effect; {spread}"

    def _population_distribution(self, pop: Population) -> str:
        drawn = (f"population {pop.label}: one posterior draw of its group parameters per simulated study, subjects "
                 "scattered by that draw's SDs")
        if self.groups == 1:
            return f"{drawn}, medians shifted by the effect"
        if self.reference is not None:
            return (f"group 1: the {len(self.reference.values)} subjects of {self.reference.source} (their fitted "
                    f"per-subject MLE, fixed); group 2: {drawn}, medians shifted by the effect")
        if self.people is not None:
            played = f" playing {self.people_trials} trials each" if self.people_trials else ""
            return (f"group 1: {self.people} people (their number fixed){played}; group 2: the LLM's subjects; both "
                    f"from {drawn}; group 2's medians shifted by the effect")
        return f"both groups from {drawn}; group 2's medians shifted by the effect"


# ----------------------------------------------------------------------------- metric kinds
class MetricStudy(Study):
    """A study that scores one agent with the experiment's metrics function."""

    agent: str
    #: Options of the experiment's metrics function.
    metric_options: dict[str, Any] = Field(default_factory=dict)
    #: Agent parameter or design field swept over ``values`` (optional for power and test kinds).
    parameter: str | None = None
    values: tuple[float, ...] = ()

    #: Metric studies fit no model: the method named in reports.
    method: ClassVar[str] = "mle"

    @property
    def subject(self) -> str:
        """What the study is about: the agent and its metric or test."""
        return f"{self.agent}: {getattr(self, 'metric', None) or getattr(self, 'test', '')}"

    @property
    def swept(self) -> tuple[float | None, ...]:
        """The values the tasks run at (``(None,)``: no sweep)."""
        return self.values or (None,)

    def tasks(self) -> list[Task]:
        """Trials x runs x swept value x repetition, in that order (one unit per task)."""
        return _numbered([{"n_subjects": 1, "trials": trials, "runs": runs, "value": value, "rep": rep}
                          for trials in self.trials for runs in self.runs for value in self.swept
                          for rep in range(self.reps)])


class MetricValidityStudy(MetricStudy):
    """A metric's mean and SD per value of an agent parameter; Spearman ρ, monotonicity."""

    kind: Literal["metric-validity"] = "metric-validity"
    metric: str
    direction: Literal["increasing", "decreasing", "any"] = "any"

    @model_validator(mode="after")
    def _sweep(self) -> MetricValidityStudy:
        if self.parameter is None or len(self.values) < 2:
            raise InputError("metric validity sweeps a parameter over at least two values")
        return self


class MetricPowerStudy(MetricStudy):
    """Share of simulated study pairs in which a metric differs between two agent settings."""

    kind: Literal["metric-power"] = "metric-power"
    metric: str
    #: The two agent settings compared (on top of ``params``).
    compare: tuple[dict[str, float], dict[str, float]]
    level: float = Field(0.05, gt=0, lt=1)


class StatTestStudy(MetricStudy):
    """Rejection rate of a statistical test the metrics function reports (``p_value`` / ``reject``)."""

    #: Key of the metrics result holding the test.
    test: str
    level: float = Field(0.05, gt=0, lt=1)


class StatTestSizeStudy(StatTestStudy):
    """The test's rejection rate under an agent setting where its null holds."""

    kind: Literal["test-size"] = "test-size"


class StatTestPowerStudy(StatTestStudy):
    """The test's rejection rate under an agent setting where its null fails."""

    kind: Literal["test-power"] = "test-power"


#: Any study; ``kind`` picks the class.
StudySpec = Annotated[RecoveryStudy | ModelRecoveryStudy | SbcStudy | PowerStudy | MetricValidityStudy
                      | MetricPowerStudy | StatTestSizeStudy | StatTestPowerStudy, Field(discriminator="kind")]
#: The kinds whose outcome is a rejection rate, which the planner sizes.
PlannedStudy = PowerStudy | MetricPowerStudy | StatTestSizeStudy | StatTestPowerStudy
_ADAPTER: TypeAdapter[StudySpec] = TypeAdapter(StudySpec)


def study_spec(**fields: Any) -> StudySpec:
    """The study of kind ``fields["kind"]`` (a :class:`pydantic.ValidationError` for bad fields)."""
    return _ADAPTER.validate_python(fields)


def load_study(text: str | bytes) -> StudySpec:
    """The study a JSON dump (:meth:`pydantic.BaseModel.model_dump_json`) describes."""
    return _ADAPTER.validate_json(text)


def kind_fields(kind: str) -> frozenset[str]:
    """The field names of the study class of ``kind``."""
    cls = {c.model_fields["kind"].default: c for c in _KINDS}[kind]
    return frozenset(cls.model_fields)


_KINDS = (RecoveryStudy, ModelRecoveryStudy, SbcStudy, PowerStudy, MetricValidityStudy, MetricPowerStudy,
          StatTestSizeStudy, StatTestPowerStudy)
