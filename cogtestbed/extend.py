"""Every name an experiment author needs, in one stable namespace.

An experiment defined in another package (or a notebook) imports its building blocks from here,
never from deep module paths, which may move (CONTRIBUTING.md, "Adding an experiment")::

    from cogtestbed.extend import (ExperimentSpec, MetricsSpec, Parameter, ParameterSet, TextEnv,
                                   TrialSchema, Values, finish_table, metrics_result, ...)

and is checked with ``cogtestbed.check(SPEC)``, or, in the package's own pytest run, with one test
per conformance check (:func:`parametrize_with_checks`, as scikit-learn's)::

    @parametrize_with_checks([SPEC])
    def test_conformance(spec, check):
        check(spec)

An LLM backend is added the same way as an experiment: :func:`register_backend` in a script, or the
entry-point group ``cogtestbed.backends`` in a distribution (``echo = "mypkg.backend:BACKEND"``, a
:class:`Backend` whose factory returns an :class:`LLMClient`); ``--llm echo:MODEL`` then runs it.  So is a
posterior sampler: :func:`register_sampler` of a :class:`SamplerKind`, or the entry-point group
``cogtestbed.samplers``; ``fit_hierarchical(..., sampler=NAME)`` then runs it.  A plan
kind too: :func:`register_plan_kind` of a :class:`PlanKind`, or the entry-point group
``cogtestbed.plan_kinds``; ``plan --question NAME`` then plans it (CONTRIBUTING.md, "Adding a plan kind").

**The name, once.**  An experiment's name is its spec's ``name``: the environment, the agents and
the models that do not declare ``experiment`` themselves take it from the spec that names them
(:meth:`ExperimentSpec.claim_pieces`), and ``cls.experiment`` is then what ``trials_table`` passes
to :func:`finish_table`.  A piece that declares another name is refused (conformance check
``spec_declaration``).

**The outcome conventions** (:class:`Outcomes`, what a batch kernel returns and the environment
records): arrays of shape (n_subjects, n_trials); ``valid`` False marks an *invalid step*, an answer
that could not be parsed or a lapse of kind :data:`INVALID`: its ``action`` is :data:`NO_ACTION`
(−1; NaN for a float action), nothing is paid (``reward`` is NaN in the table), the agent learns
nothing from it, and the environment does what it does for an unparseable LLM answer (a phase with
``skip_rest_if_invalid`` skips the rest of the trial); ``played`` False marks a step a
variable-length session never reached; a parser never guesses (``ParseResult.failure``).  Metrics
leave invalid steps out and say how many (``n_invalid``, a flag); no data is null with a reason.

**Kernels** (:mod:`cogtestbed.interpreted`): Python code calls an ``@njit`` function as
``kernel(fn)(...)``, so that ``simulate``'s small first run of a process runs it as plain Python and
compiles nothing (``method="auto"``, the same table).

**The lapse protocol** (:mod:`cogtestbed.lapse`): a synthetic subject's lapses are pre-drawn per
(subject, lapse unit) as :class:`LapseDraws` (``kind``: :data:`NORMAL`, :data:`INVALID` or
:data:`RANDOM`; ``u``: the uniforms of a random answer) from their own seeded stream.  A batch
kernel that plays lapses subclasses :class:`KernelLapsingAgent` and implements
``simulate_batch_lapsed(design, sessions, params, uniforms, lapse)``: choose as usual (drawing its
uniforms), read the unit's kind with :func:`unit_lapse` (NORMAL where the draws are empty: lapses
off), apply :func:`step_lapse` / :func:`lapsed_choice` (−1 invalid, :func:`random_choice` random),
then play the recorded answer as the environment does.  An environment whose steps do not depend on
earlier answers sets ``answer_independent = True`` and needs none of this (lapses are applied after
the batch run).  A model's lapse mixture needs only ``lapse_options`` (or ``lapse_log_uniform``).

**A likelihood without a hand gradient.**  A :class:`CognitiveModel` may set ``loglik_kernel``
(``@njit kernel(theta, obs_subject, *arrays) -> ll``) instead of ``pointwise_kernel`` (which also
returns the gradient): the gradient is then taken by finite differences
(:mod:`cogtestbed.inference.numgrad`); the hand gradient is an optional speed-up.

Importing this module imports the pieces (numpy, numba, gymnasium, pydantic); the command line
never imports it.
"""

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.conformance.parametrize import parametrize_with_checks
from cogtestbed.environments.base import (
    NO_ACTION,
    AnswerDefaults,
    Design,
    Outcomes,
    ParseResult,
    Phase,
    ScoredResponse,
    Sessions,
    TextEnv,
)
from cogtestbed.environments.forms import VERBATIM, PromptForm, paraphrase
from cogtestbed.experiments.spec import (
    Decoding,
    ExperimentSpec,
    Generator,
    Importer,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.base import CognitiveModel, subject_slices, with_lapse
from cogtestbed.inference.hierarchical_sampling import register_sampler
from cogtestbed.inference.samplers import SamplerKind, SamplingJob
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import (
    INVALID,
    NORMAL,
    RANDOM,
    Lapse,
    LapseDraws,
    lapsed_choice,
    random_choice,
    step_lapse,
    unit_lapse,
)
from cogtestbed.llm_adapters.clients.backends import Backend, register_backend
from cogtestbed.llm_adapters.clients.base import GenerateRequest, Generation, LLMClient
from cogtestbed.metrics_result import MetricComparison, MetricOption, MetricsResult, metrics_result
from cogtestbed.parameters import Parameter, ParameterError, ParameterSet, per_subject
from cogtestbed.planning.kinds import KindOption, PlanContext, PlanKind, Planned
from cogtestbed.planning.plan_kinds import register_plan_kind
from cogtestbed.schema import REWARDED, RowRule, TrialSchema, TrialTableError, Values, validate_trials
from cogtestbed.trials import Column, categories, coded_lists, finish_table, lists, outcome_columns, strings

__all__ = [
    "INVALID", "NORMAL", "NO_ACTION", "RANDOM", "REWARDED", "VERBATIM", "AnswerDefaults", "Backend", "CognitiveModel",
    "Column", "Decoding", "Design", "ExperimentSpec", "GenerateRequest", "Generation", "Generator", "Importer",
    "KernelLapsingAgent", "KindOption", "LLMClient", "Lapse", "LapseDraws", "MetricComparison", "MetricOption",
    "MetricsResult",
    "MetricsSpec", "Outcomes", "Parameter", "ParameterError", "ParameterSet", "ParseResult", "Phase", "PlanContext",
    "PlanKind", "Planned", "PromptForm", "RowRule", "SamplerKind", "SamplingJob", "ScoredResponse", "Sessions",
    "StudyDecl", "SyntheticAgent", "TextEnv", "TrialSchema", "TrialTableError", "Values", "categories", "coded_lists",
    "finish_table", "kernel", "lapsed_choice", "lazy", "lists", "metrics_result", "outcome_columns",
    "parametrize_with_checks", "paraphrase", "per_subject", "random_choice", "register_backend", "register_plan_kind",
    "register_sampler", "same_name_generators", "step_lapse", "strings", "subject_slices", "unit_lapse",
    "validate_trials", "with_lapse",
]
