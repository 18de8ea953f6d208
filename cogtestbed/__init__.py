"""cogtestbed: synthetic agents with known parameters, run through the same environments a real
LLM steps through, analysed by the same fitters.

The library is the front door: ``import cogtestbed as ct`` gives the functions every command of
the command line is a thin layer over (keyword names follow the options)::

    import cogtestbed as ct

    trials = ct.simulate("instrumental-learning", "rw-pm", subjects=40, seed=1)
    mle = ct.fit("instrumental-learning", trials, model="rw-pm")                 # one row per subject
    post = ct.fit("instrumental-learning", trials, model="rw-pm", method="hierarchical")
    study = ct.recover("instrumental-learning", "rw-pm", subjects=40, reps=20)   # .table .verdict .plot()
    plan = ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2},
                   llm="openai:gpt-4o-mini", subjects=(10, 80))                  # .chosen .frontier .save()
    report = ct.check("instrumental-learning")                                   # .passed .table()

Experiment authors import their building blocks from :mod:`cogtestbed.extend`.  Names are
imported on first use (``cogtestbed --help`` loads no numerical package).  ``dir(ct)`` lists the
public functions, their result types (``ct.Study``, ``ct.Plan``, ``ct.BayesFit``,
``ct.ConformanceReport``, ``ct.RunResult``, ...) and ``ct.errors``, the namespace of every error
class (each is still ``ct.InputError``, ``from cogtestbed import InputError`` and, for those
defined there, ``from cogtestbed.errors import InputError``).

One argument order (docs/api.md): the experiment first (None or left out: inferred), then the data a
function reads, then the model(s) or target it is about; everything else by keyword:
``ct.fit(experiment, table, model)``, ``ct.fit_and_save(experiment, path, model, output=...)``,
``ct.recover(experiment, model)``, ``ct.model_recovery(experiment, models)``,
``ct.power(experiment, target)``, ``ct.sbc(experiment, model)``, ``ct.form_study(experiment, model,
forms=...)``.  The earlier model-first calls (``ct.recover("rw-pm")``,
``ct.recover("softmax", experiment=SPEC)``) keep working.

Layers: :mod:`cogtestbed.environments` (gymnasium tasks with rendered prompts and parsers),
:mod:`cogtestbed.agents` (synthetic subjects with numba batch paths),
:mod:`cogtestbed.inference` (published metrics, MLE and hierarchical fits),
:mod:`cogtestbed.llm_adapters` (real models as subjects), :mod:`cogtestbed.studies` (recovery,
calibration, power), :mod:`cogtestbed.planning` (plans, a folder per plan kind), :mod:`cogtestbed.runs`,
:mod:`cogtestbed.conformance` (the conformance suite), :mod:`cogtestbed.api` (the
functions below).
"""

import sys as _sys
import types as _types
import typing as _typing

__version__ = "0.1.0"


def _api_core() -> _types.ModuleType:
    from cogtestbed.api import core
    return core


def _metrics_result() -> _types.ModuleType:
    from cogtestbed import metrics_result
    return metrics_result


def _api_export() -> _types.ModuleType:
    from cogtestbed.api import export
    return export


def _api_fitting() -> _types.ModuleType:
    from cogtestbed.api import fitting
    return fitting


def _api_describe() -> _types.ModuleType:
    from cogtestbed.api import describe
    return describe


def _api_phenotype() -> _types.ModuleType:
    from cogtestbed.api import phenotype
    return phenotype


def _api_studies() -> _types.ModuleType:
    from cogtestbed.api import studies
    return studies


def _api_plan() -> _types.ModuleType:
    from cogtestbed.api import plan
    return plan


def _api_population() -> _types.ModuleType:
    from cogtestbed.api import population
    return population


def _api_form_plan() -> _types.ModuleType:
    from cogtestbed.api import form_plan
    return form_plan


def _api_run() -> _types.ModuleType:
    from cogtestbed.api import run
    return run


def _api_looks() -> _types.ModuleType:
    from cogtestbed.api import looks
    return looks


def _api_monitor() -> _types.ModuleType:
    from cogtestbed.api import monitor
    return monitor


def _api_transcripts() -> _types.ModuleType:
    from cogtestbed.api import transcripts
    return transcripts


def _identifiability() -> _types.ModuleType:  # the module, not ct.identifiability (its function)
    from cogtestbed.identifiability import DesignInformation
    return _sys.modules[DesignInformation.__module__]


def _inference_hierarchical() -> _types.ModuleType:
    from cogtestbed.inference import hierarchical
    return hierarchical


def _conformance_suite() -> _types.ModuleType:
    from cogtestbed.conformance import suite
    return suite


def _llm_adapters_runs_config() -> _types.ModuleType:
    from cogtestbed.llm_adapters.runs import config
    return config


def _api_figures() -> _types.ModuleType:
    from cogtestbed.api import figures
    return figures


def _inference_heldout() -> _types.ModuleType:
    from cogtestbed.inference import heldout
    return heldout


def _inference_population() -> _types.ModuleType:
    from cogtestbed.inference import population
    return population


def _api_errors() -> _types.ModuleType:
    from cogtestbed.api import errors
    return errors


#: Public name → the loader of the module defining it (imported on first access).
_PUBLIC: dict[str, _typing.Callable[[], _types.ModuleType]] = {
    "experiments": _api_core,
    "get_experiment": _api_core,
    "simulate": _api_core,
    "simulate_file": _api_core,
    "metrics": _api_core,
    "MetricsReport": _metrics_result,
    "fit": _api_core,
    "check": _api_core,
    "export": _api_export,
    "fit_and_save": _api_fitting,
    "describe": _api_describe,
    "phenotype": _api_phenotype,
    "Phenotype": _api_phenotype,
    "recover": _api_studies,
    "power": _api_studies,
    "sbc": _api_studies,
    "model_recovery": _api_studies,
    "metric_validity": _api_studies,
    "study": _api_studies,
    "form_study": _api_studies,
    "Study": _api_studies,
    "true_parameters": _api_studies,
    "estimates": _api_studies,
    "plot_recovery": _api_studies,
    "plan": _api_plan,
    "population": _api_population,
    "populations": _api_population,
    "population_from_fit": _api_population,
    "build_population": _api_population,
    "plan_forms": _api_form_plan,
    "Plan": _api_plan,
    "run": _api_run,
    "PairedRun": _api_run,
    "looks": _api_looks,
    "LookReplay": _api_looks,
    "monitor": _api_monitor,
    "MonitorPath": _api_monitor,
    "transcript_nll": _api_transcripts,
    "participant_nll": _api_transcripts,
    "heldout_nll": _api_transcripts,
    "transcript_table": _api_transcripts,
    "validate": _api_transcripts,
    "identifiability": _identifiability,
    "DesignInformation": _identifiability,
    "BayesFit": _inference_hierarchical,
    "ConformanceReport": _conformance_suite,
    "CheckResult": _conformance_suite,
    "RunResult": _llm_adapters_runs_config,
    "Figures": _api_figures,
    "HeldOut": _inference_heldout,
    "Population": _inference_population,
}

#: The names ``dir(ct)`` lists (the errors are under ``ct.errors``).
__all__ = [
    "__version__", "errors", "BayesFit", "CheckResult", "ConformanceReport", "Figures", "HeldOut", "LookReplay",
    "MetricsReport", "PairedRun", "Phenotype", "Plan", "RunResult", "Study", "check", "describe", "estimates",
    "experiments", "export", "fit", "fit_and_save", "form_study", "get_experiment", "heldout_nll", "looks",
    "metric_validity", "metrics", "model_recovery", "participant_nll", "phenotype", "plan", "plan_forms",
    "plot_recovery", "power", "recover", "run", "sbc", "simulate", "simulate_file", "study", "transcript_nll",
    "transcript_table", "true_parameters", "validate",
    "Population", "build_population", "population", "population_from_fit", "populations",
    "MonitorPath", "monitor",
    "DesignInformation", "identifiability",
]

if _typing.TYPE_CHECKING:  # the error classes (noqa: F401) are ct.NAME too, listed under ct.errors
    from cogtestbed.api import errors
    from cogtestbed.api.core import check, experiments, fit, get_experiment, metrics, simulate, simulate_file
    from cogtestbed.api.describe import describe
    from cogtestbed.api.export import export
    from cogtestbed.api.figures import Figures
    from cogtestbed.api.fitting import fit_and_save
    from cogtestbed.api.form_plan import plan_forms
    from cogtestbed.api.looks import LookReplay, looks
    from cogtestbed.api.monitor import MonitorPath, monitor
    from cogtestbed.api.phenotype import Phenotype, phenotype
    from cogtestbed.api.plan import Plan, plan
    from cogtestbed.api.population import build_population, population, population_from_fit, populations
    from cogtestbed.api.run import PairedRun, run
    from cogtestbed.api.studies import (
        Study,
        estimates,
        form_study,
        metric_validity,
        model_recovery,
        plot_recovery,
        power,
        recover,
        sbc,
        study,
        true_parameters,
    )
    from cogtestbed.api.transcripts import heldout_nll, participant_nll, transcript_nll, transcript_table, validate
    from cogtestbed.conformance.suite import CheckResult, ConformanceReport
    from cogtestbed.data.rows import DataFormatError, RepeatedSessionError  # noqa: F401
    from cogtestbed.environments.forms import FormError  # noqa: F401
    from cogtestbed.errors import BudgetError, CogtestbedError, DataError, InputError, ResumeMismatch  # noqa: F401
    from cogtestbed.experiments.spec import UnknownNameError  # noqa: F401
    from cogtestbed.identifiability import DesignInformation, identifiability
    from cogtestbed.inference.heldout import HeldOut
    from cogtestbed.inference.hierarchical import BayesFit
    from cogtestbed.inference.population import Population
    from cogtestbed.llm_adapters.clients.base import BackendError, BackendUnavailable, LLMError  # noqa: F401
    from cogtestbed.llm_adapters.clients.prices import PriceError, UnpricedModel  # noqa: F401
    from cogtestbed.llm_adapters.runs.config import RunResult
    from cogtestbed.llm_adapters.runs.rundir import RunDirError  # noqa: F401
    from cogtestbed.memory import MemoryLimitError  # noqa: F401
    from cogtestbed.metrics_result import MetricsReport
    from cogtestbed.no_data import DegenerateAnswers  # noqa: F401
    from cogtestbed.outputs import OutputError, WriteFailed  # noqa: F401
    from cogtestbed.parameters import ParameterError  # noqa: F401
    from cogtestbed.planning.plan import PlanInfeasible  # noqa: F401
    from cogtestbed.schema import TrialTableError  # noqa: F401
    from cogtestbed.study_errors import ConformanceError, WorkerDied  # noqa: F401


def __getattr__(name: str) -> _typing.Any:
    """A public name, imported from its module on first access (the error classes, listed under
    ``ct.errors``, stay reachable as ``ct.NAME``)."""
    load = _PUBLIC.get(name)
    if load is None:  # an error class, named by ct.errors (cogtestbed.api.errors.ERRORS)
        errors = _api_errors()
        if name not in errors.ERRORS:
            raise AttributeError(f"module 'cogtestbed' has no attribute {name!r}")
        load = errors.ERRORS[name]
    value = getattr(load(), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (no import helper, no error class: those are under ``ct.errors``)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})


class _Package(_types.ModuleType):
    """The package module, whose ``experiments`` is always the public function
    (:func:`cogtestbed.api.core.experiments`), though the subpackage of the specs is called
    ``cogtestbed.experiments`` too: importing it stores it aside (it is reached through
    ``import cogtestbed.experiments.NAME`` and ``sys.modules``, never as an attribute).  Likewise
    ``errors`` is always :mod:`cogtestbed.api.errors`, the namespace of every error class, which
    holds every name of the base module :mod:`cogtestbed.errors` too (still importable as it is)."""

    @property
    def experiments(self) -> _typing.Any:
        return _api_core().experiments

    @experiments.setter
    def experiments(self, module: _types.ModuleType) -> None:
        self.__dict__["_experiments_package"] = module

    @property
    def errors(self) -> _typing.Any:
        return _api_errors()

    @errors.setter
    def errors(self, module: _types.ModuleType) -> None:
        self.__dict__["_errors_module"] = module


_sys.modules[__name__].__class__ = _Package
