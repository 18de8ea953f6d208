"""Every name an experiment author needs, in one stable namespace.

An experiment defined in another package (or a notebook) imports its building blocks from here,
never from deep module paths, which may move (CONTRIBUTING.md, "Adding an experiment")::

    from cogtestbed.extend import (ExperimentSpec, MetricsSpec, Parameter, ParameterSet, TextEnv,
                                   TrialSchema, Values, finish_table, metrics_result, ...)

and is checked with ``cogtestbed.check(SPEC)``.  Importing this module imports the pieces (numpy,
numba, gymnasium, pydantic); the command line never imports it.
"""

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
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
from cogtestbed.lapse import Lapse, lapsed_choice, random_choice
from cogtestbed.metrics_result import MetricOption, MetricsResult, metrics_result
from cogtestbed.parameters import Parameter, ParameterError, ParameterSet, per_subject
from cogtestbed.schema import REWARDED, RowRule, TrialSchema, TrialTableError, Values, validate_trials
from cogtestbed.trials import Column, categories, coded_lists, finish_table, lists, outcome_columns, strings

__all__ = [
    "NO_ACTION", "REWARDED", "VERBATIM", "AnswerDefaults", "CognitiveModel", "Column", "Decoding", "Design",
    "ExperimentSpec", "Generator", "Importer", "KernelLapsingAgent", "Lapse", "MetricOption", "MetricsResult",
    "MetricsSpec", "Outcomes", "Parameter", "ParameterError", "ParameterSet", "ParseResult", "Phase", "PromptForm",
    "RowRule", "ScoredResponse", "Sessions", "StudyDecl", "SyntheticAgent", "TextEnv", "TrialSchema",
    "TrialTableError", "Values", "categories", "coded_lists", "finish_table", "lapsed_choice", "lazy", "lists",
    "metrics_result", "outcome_columns", "paraphrase", "per_subject", "random_choice", "same_name_generators",
    "strings", "subject_slices", "validate_trials", "with_lapse",
]
