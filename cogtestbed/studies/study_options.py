"""Every option of the study workflows (``cogtestbed recover | model-recovery | sbc | power |
metric-validity | study``; :func:`cogtestbed.recover`, ...), declared once: one request
per study, grouped into small sub-objects.  The command line's options and help panels and the ``ct.``
functions' keywords are made from these declarations (:mod:`cogtestbed.request`).

A type is what the ``ct.`` function accepts; ``cli_type`` what the command line parses (a size grid
as text: ``"10,20,40"`` is the same grid as ``(10, 20, 40)``).  A default is spelled as the command line
shows it where the two differ only in spelling (``subjects="50"``).  Imports nothing heavy: the command
line builds its help from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from cogtestbed.bounds import Cost
from cogtestbed.option_groups import (
    AgentParams,
    AgentSetting,
    Assured,
    Base,
    BetweenSubjects,
    Chains,
    CognitiveModel,
    Compared,
    DaskScheduler,
    Effect,
    FitMethod,
    FormSD,
    HeadlineMetric,
    Importer,
    InputPath,
    JsonOutput,
    LapseTerm,
    Level,
    MaxDraws,
    MetricTest,
    Output,
    Overwrite,
    PopulationSource,
    PromptForms,
    Seed,
    Sessions,
    SubjectCount,
    Workers,
)
from cogtestbed.request import as_items, as_text, group, option, variant
from cogtestbed.simulate_options import (
    EXPERIMENT_ARGUMENT,
    OPTIONAL_EXPERIMENT_ARGUMENT,
    DesignFields,
    ExperimentName,
    Lapses,
)

#: :class:`~cogtestbed.option_groups.CognitiveModel` as the command's positional argument (``fit MODEL``).
MODEL_ARGUMENT = {"model": {"argument": True}}
#: The help of a study's experiment, its first positional argument (``recover [EXPERIMENT] --model MODEL``, as
#: ``plan`` and ``check-design`` take them).
EXPERIMENT_OF_MODEL = {"experiment": "Experiment name, e.g. instrumental-learning. Default: the one experiment "
                                     "declaring the model."}
#: Sizes as :func:`cogtestbed.recover` takes them: a count, a list of counts, or the command line's text.
Sizes = int | Sequence[int] | str | None
#: ``NAME=VALUE`` settings: a mapping, or the command line's items.
Assignments = Mapping[str, float] | Sequence[str] | None
#: A design: a mapping of fields, or ``--design NAME=VALUE`` items as the command line spells them.
Design = Mapping[str, Any] | Sequence[str] | None

TRIALS_HELP = ("Trials in one run of the whole design (its n_trials: every block, condition, session and repetition), "
               "comma list; reached by scaling the experiment's trials field. Default: the design's own. The same "
               "sizes in the design's terms: --design FIELD=a,b,c.")
ONE_TRIALS_HELP = ("Trials in one run of the whole design (its n_trials), reached by scaling the trials field. "
                   "Default: the design's own.")


@dataclass(frozen=True, kw_only=True)
class SubjectGrid:
    """The subjects of each simulated data set: a grid of counts."""

    #: ``subjects``: a grid of counts, not one count (``simulate``, ``run``) or a range a plan searches
    subject_grid: Sizes = option("50", name="subjects", record=as_text, cli_type=str,
                                 help="Subjects per data set (comma list).")


@dataclass(frozen=True, kw_only=True)
class DesignTrials:
    """The trials of one run of the whole design: a grid of counts."""

    #: ``trials``: a design's trials (a grid), not an adaptive session's length or a range a plan searches
    design_trials: Sizes = option(None, name="trials", record=as_text, cli_type=str | None, help=TRIALS_HELP)


@dataclass(frozen=True, kw_only=True)
class OneDesignTrials(variant(DesignTrials, present={"design_trials": {"cli_type": int | None, "max": 1_000_000}},  # type: ignore[misc]
                              helps={"design_trials": ONE_TRIALS_HELP})):
    """The trials of one run of the whole design, one count on the command line (model recovery, SBC)."""


@dataclass(frozen=True, kw_only=True)
class RunsGrid:
    """The runs of the design each simulated data set holds: a grid of counts."""

    #: ``runs``: a grid of counts, not one count of sessions (``sbc``, ``model-recovery``) or a plan's range
    runs_grid: Sizes = option("1", name="runs", record=as_text, cli_type=str,
                              help="Sessions each subject plays, pooled in the fit (comma list; experiments that pool "
                                   "sessions).")


@dataclass(frozen=True, kw_only=True)
class SessionsPerSubject:
    """The sessions each simulated subject plays: one count."""

    #: ``runs``: one count of sessions, not a grid of runs (``recover``, ``power``) or a plan's range
    sessions_per_subject: int = option(1, name="runs", min=1, max=1_000, cost=Cost(
        "sessions per subject", note="each a whole session simulated and fitted"),
                                       help="Sessions per subject (experiments that pool sessions).")


@dataclass(frozen=True, kw_only=True)
class Reps:
    """The simulated data sets (replications) of a study."""

    reps: int = option(100, min=1, max=100_000, cost=Cost("simulated data sets",
                                                          note="each simulated and fitted in full"),
                       help="Simulated data sets.")


@dataclass(frozen=True)
class StudyRun(Seed, Workers, Overwrite, JsonOutput, DaskScheduler, Output):
    """Where and how a study runs, and where it is written (every study command's own options)."""


@dataclass(frozen=True)
class StudyForms(variant(PromptForms, present={"assigned_forms": {"api": False}}),  # type: ignore[misc]
                 variant(FormSD, present={"form_sd": {"api": False}})):  # type: ignore[misc]
    """A study across prompt forms: the command line's ``--forms`` of ``recover`` and ``power``, and
    :func:`cogtestbed.form_study`'s (:class:`FormStudyRequest`)."""


@dataclass(frozen=True)
class RecoverSizes(SubjectGrid, DesignTrials, DesignFields, RunsGrid, Reps):
    """The simulated data sets."""


@dataclass(frozen=True)
class RecoverFit(AgentParams, FitMethod, Chains, LapseTerm, Assured, PopulationSource):
    """How the true parameters are drawn and the model fitted."""

    #: ``sampler``: how the true parameters are drawn, not an MCMC sampler (``population build --sampler``)
    truth_sampler: str = option(
        "prior", name="sampler", help="prior (hierarchical prior) or uniform (--population: the population's draws).")
    fix: Assignments = option(None, record=as_items, cli_type=list[str] | None, flags=("--fix",),
                              help="Hold model parameter NAME=VALUE fixed.")
    #: ``precision``: a recovery's tolerance on each parameter, not a plan's precision target (``plan --precision``)
    tolerance: Assignments = option(
        None, name="precision", record=as_items, cli_type=list[str] | None, flags=("--precision",),
        help="PARAM=HALFWIDTH (repeatable): the tolerance a recovered estimate must meet; the verdict calls PARAM "
             "recovered well only where a share >= --assurance of the estimates lies within it. Default: none (r, "
             "RMSE and bias reported, r >= 0.8 convention named).")


@dataclass(frozen=True)
class RecoverRequest(
        variant(ExperimentName, present=OPTIONAL_EXPERIMENT_ARGUMENT, helps=EXPERIMENT_OF_MODEL),  # type: ignore[misc]
        variant(CognitiveModel, defaults={"model": MISSING},  # type: ignore[misc]
                helps={"model": "Model name, e.g. rw-pm or cbn-3p."})):
    """Parameter recovery, as ``cogtestbed recover`` and :func:`cogtestbed.recover` take it."""

    sizes: RecoverSizes = group(RecoverSizes, "Sizes")
    fit: RecoverFit = group(RecoverFit, "Truth and fit")
    lapses: Lapses = group(Lapses, "Lapses")
    forms: StudyForms = group(StudyForms, "Prompt forms")
    run: StudyRun = group(StudyRun, "Run and output")


@dataclass(frozen=True)
class ModelRecoverySizes(
        variant(SubjectCount, defaults={"subject_count": 30}, helps={"subject_count": ""}),  # type: ignore[misc]
        OneDesignTrials,
        DesignFields, SessionsPerSubject, variant(Reps, defaults={"reps": 50}, helps={"reps": ""})):  # type: ignore[misc]
    """The simulated data sets."""


@dataclass(frozen=True)
class HierarchicalFit(AgentParams, variant(Chains, defaults={"draws": 500, "chains": 2})):  # type: ignore[misc]
    """The fit (the hierarchical one's draws and chains)."""



@dataclass(frozen=True)
class ModelRecoveryRequest(FitMethod, variant(ExperimentName, present=OPTIONAL_EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                                                helps=EXPERIMENT_OF_MODEL)):
    """Model recovery, as ``cogtestbed model-recovery`` and :func:`cogtestbed.model_recovery` take it."""

    models: Sequence[str] = option(cli_type=list[str], flags=("--model",),
                                   help="Candidate model (repeatable, at least two), e.g. --model rw --model rw-pm.")
    sizes: ModelRecoverySizes = group(ModelRecoverySizes, "Sizes")
    fit: HierarchicalFit = group(HierarchicalFit, "Fit")
    run: StudyRun = group(StudyRun, "Run and output")


@dataclass(frozen=True)
class SbcSizes(
        variant(SubjectCount, defaults={"subject_count": 20}, helps={"subject_count": ""}),  # type: ignore[misc]
        OneDesignTrials,
        DesignFields, SessionsPerSubject, variant(Reps, helps={"reps": "Simulated data sets (prior draws)."})):  # type: ignore[misc]
    """The simulated data sets (prior draws)."""


@dataclass(frozen=True)
class SbcRequest(
        variant(ExperimentName, present=OPTIONAL_EXPERIMENT_ARGUMENT, helps=EXPERIMENT_OF_MODEL),  # type: ignore[misc]
        variant(CognitiveModel, defaults={"model": MISSING},  # type: ignore[misc]
                helps={"model": "Model with a PyMC version, e.g. rw-pm or cbn-3p."})):
    """Simulation-based calibration, as ``cogtestbed sbc`` and :func:`cogtestbed.sbc` take it."""

    sizes: SbcSizes = group(SbcSizes, "Sizes")
    fit: HierarchicalFit = group(HierarchicalFit, "Fit")
    backend: str = option("auto", help="NUTS implementation: auto, nutpie or pymc.")
    run: StudyRun = group(StudyRun, "Run and output")


@dataclass(frozen=True)
class PowerTarget(
        variant(Effect, helps={  # type: ignore[misc]
            "effect": "NAME=SIZE, a model parameter or contrast, e.g. optimism_bias=0.2 (0: the type-I error rate)."}),
        HeadlineMetric, MetricTest, AgentSetting, Compared, Level):
    """What the study must detect: a model parameter or contrast, a metric difference or a declared test."""

    sweep: str | None = option(
        None, help="NAME=a,b,c: an agent parameter (or design field) whose values each get a rate (with --test or "
                   "--metric), e.g. leak=0,0.1: at 0 the false-positive rate, above it the power. Default: none.")
    groups: int = option(
        1, min=1, max=2,
        help="With --effect: 1 tests the effect against 0 in one group; 2 tests the parameter's difference between "
             "two groups of --subjects each (e.g. two LLMs), the second's median moved by the effect; with "
             "--population the first group is the population's people, their number fixed).")
    # last: the field's name is the declaring function's, so no option() follows it in this class body
    option: Mapping[str, Any] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--option",),
        help="Metrics option NAME=VALUE of the experiment (repeatable; with --metric / --test), e.g. t2_bins=10.")


@dataclass(frozen=True)
class PowerSizes(
        variant(SubjectGrid, defaults={"subject_grid": "10,20,40,80"},  # type: ignore[misc]
                helps={"subject_grid": "Subjects grid (comma list; --effect)."}),
        variant(RunsGrid, defaults={"runs_grid": None}, present={"runs_grid": {"cli_type": str | None}}, helps={  # type: ignore[misc]
            "runs_grid": "Runs grid (comma list): sessions per subject, pooled in its fit (--effect; default 1), or "
                         "runs of the design each simulated study computes the test over, pooled (--test; default 1: "
                         "one subject) or per setting (--metric; default 10)."}),
        DesignTrials, DesignFields):
    """The sizes each get a rate, and the simulated studies per size."""

    sims: int = option(200, min=1, max=100_000, cost=Cost("simulated studies per cell",
                                                          note="each simulated and fitted in full"),
                       help="Simulated studies per cell.")


@dataclass(frozen=True)
class PowerSubjects(HierarchicalFit, FitMethod, BetweenSubjects, Base, PopulationSource):
    """The simulated subjects and their fit."""


@dataclass(frozen=True)
class PowerRequest(variant(ExperimentName, helps={"experiment": "Experiment (with --effect)."})):  # type: ignore[misc]
    """A power study, as ``cogtestbed power`` and :func:`cogtestbed.power` take it."""

    target: str = option(argument=True, help="Model (with --effect) or experiment (with --metric / --test).")
    goal: PowerTarget = group(PowerTarget, "Target")
    sizes: PowerSizes = group(PowerSizes, "Sizes")
    subjects_fit: PowerSubjects = group(PowerSubjects, "Simulated subjects and fit")
    lapses: Lapses = group(Lapses, "Lapses")
    forms: StudyForms = group(StudyForms, "Prompt forms")
    run: StudyRun = group(StudyRun, "Run and output")


@dataclass(frozen=True)
class MetricValidityRequest(
        variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                helps={"experiment": "Experiment name."}),
        variant(RunsGrid, defaults={"runs_grid": "10"},  # type: ignore[misc]
                helps={"runs_grid": "Runs (units) the metric is computed over (comma list)."}),
        DesignTrials, DesignFields, variant(Reps, defaults={"reps": 20}, helps={"reps": "Replications per value."}),  # type: ignore[misc]
        variant(HeadlineMetric, defaults={"metric": MISSING}, helps={"metric": "Headline metric."}),  # type: ignore[misc]
        variant(AgentSetting, defaults={"agent": MISSING},  # type: ignore[misc]
                helps={"agent": "AGENT[:p=v,...]: the agent and its base setting."})):
    """A metric's validity, as ``cogtestbed metric-validity`` and :func:`cogtestbed.metric_validity` take it."""

    parameter: str = option(help="Agent parameter swept.")
    values: Sequence[float] | str = option(record=as_text, cli_type=str, help="Values of the parameter (comma list).")
    direction: str = option("any", help="increasing, decreasing or any.")
    run: StudyRun = group(StudyRun, "Run and output")


@dataclass(frozen=True)
class DeclaredStudyRequest(
        variant(Reps, defaults={"reps": 20}, helps={"reps": "Replications."}),  # type: ignore[misc]
        variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                helps={"experiment": "Experiment name."})):
    """A study the experiment declares, as ``cogtestbed study`` and :func:`cogtestbed.study` take it."""

    #: ``NAME``: a declared study, not a population's name (``population build --name``)
    study: str | None = option(None, argument=True, name="name",
                               help="Declared study (omit to list them), e.g. metric-power or recovery:1.")
    run: StudyRun = group(StudyRun, "Run and output")


#: ``--sessions`` of a command that imports published files.

@dataclass(frozen=True)
class FitSampling(Chains, MaxDraws, variant(Seed, helps={  # type: ignore[misc]
        "seed": "Seed of the hierarchical sampler's chains (the MLE starts from a fixed grid and uses none)."})):
    """The hierarchical fit's sampling."""

    posterior_predictive: bool = option(
        False, cli=False,
        help="Draw the posterior predictive (replicated choices of a binary-choice model, one step ahead) into the "
             "fit's InferenceData, so az.plot_ppc(fit.idata) plots it (hierarchical).")


@dataclass(frozen=True)
class PosteriorFile:
    """What the written posterior keeps (a fit written to a folder)."""

    log_likelihood: bool = option(
        False, flags=("--log-likelihood/--no-log-likelihood",),
        help="Keep the pointwise log-likelihood in posterior.nc (for LOO/WAIC later; large).")


@dataclass(frozen=True)
class FitTerms(LapseTerm, FitMethod):
    """The fitted model's method and terms (among the command's own options)."""
    form_effects: Sequence[str] | str | None = option(
        None, cli_type=str | None, flags=("--form-effects",),
        help="P1,P2,...: the parameters given a prompt-form effect when the table has a 'form' column "
             "(hierarchical; default: every parameter).")


@dataclass(frozen=True)
class FitUnits(Sessions, Importer):
    """What is read and what one fitted unit is."""

    unit: str = option(
        "auto", flags=("--unit",),
        help="What one fitted unit is: subject (each subject of the file with its sessions), session, agent (the "
             "runs of each agent pooled as one participant) or auto: agent where the experiment pools sessions and "
             "no agent's runs have different true parameters, else subject.")
    separate_runs: bool = option(
        False, flags=("--separate-runs",),
        help="Fit every run (subject of the file) on its own, even where the experiment pools an agent's runs into "
             "one fitted unit (= --unit subject).")


@dataclass(frozen=True)
class FitRequest(Overwrite, JsonOutput, variant(Output, defaults={"output": MISSING}, present={  # type: ignore[misc]
        "output": {"cli_type": Path}}, helps={"output": "Output directory."}), InputPath, ExperimentName,
        variant(CognitiveModel, defaults={"model": MISSING}, present=MODEL_ARGUMENT,  # type: ignore[misc]
                helps={"model": "Model name, e.g. rw-pm."})):
    """A fit written to a folder, as ``cogtestbed fit`` and :func:`cogtestbed.fit_and_save` take it."""

    terms: FitTerms = group(FitTerms, None, defaults={"method": "hierarchical"})
    units: FitUnits = group(FitUnits, "Data and units")
    sampling: FitSampling = group(FitSampling, "Sampling")
    posterior: PosteriorFile = group(PosteriorFile, "Sampling")


@dataclass(frozen=True)
class FitTableRequest:
    """A fit returned, as :func:`cogtestbed.fit` takes it (its experiment, table and model
    positional): the options of :class:`FitRequest` it shares, the MLE by default."""

    terms: FitTerms = group(FitTerms, None)
    units: FitUnits = group(FitUnits, "Data and units")
    sampling: FitSampling = group(FitSampling, "Sampling")


@dataclass(frozen=True)
class FormStudyRequest(
        ExperimentName, variant(CognitiveModel, defaults={"model": MISSING}, present=MODEL_ARGUMENT,  # type: ignore[misc]
                helps={"model": "Model name, e.g. rw-pm."}),
        variant(SubjectGrid, defaults={"subject_grid": 50},  # type: ignore[misc]
                helps={"subject_grid": "Subjects in all, split over the forms."}),
        variant(Reps, helps={"reps": "Simulated studies."}),  # type: ignore[misc]
        variant(DesignTrials, helps={"design_trials": "Refused across forms: the design's trials field is set with "  # type: ignore[misc]
                                                      "design."}),
        Level, Seed, AgentParams, DesignFields, variant(Effect, helps={  # type: ignore[misc]
        "effect": "NAME=SIZE: the forms-aware test's rejection rate beside the naive test's (0: the type-I error "
                  "rate); without it the recovery of the form SD and its interval's coverage."})):
    """A study across prompt forms, as :func:`cogtestbed.form_study` takes it (``recover --forms`` and
    ``power --forms`` call it with their options): the forms' options are :class:`StudyForms`, as on
    the command line."""

    forms: StudyForms = group(StudyForms, "Prompt forms")


#: The options :func:`cogtestbed.form_study` takes (every one of :class:`FormStudyRequest`, the forms' too).
FORM_STUDY_OPTIONS = ("forms", "form_sd", "subjects", "reps", "params", "effect", "design", "trials", "level", "seed")


@dataclass(frozen=True)
class RecoveryPlotRequest:
    """The plot of true against estimated parameters, as :func:`cogtestbed.plot_recovery` takes it
    (no command: ``recover -o DIR`` draws its own)."""

    labels: Sequence[str] | None = option(None, cli=False,
                                          help="One label per fit (default: MLE or hierarchical, by its kind).")
    directory: str | os.PathLike[str] | None = option(
        None, cli=False, help="Folder of recovery.png (default: a temporary one).")
