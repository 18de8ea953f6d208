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

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

__version__ = "0.1.0"

#: Public name → the module defining it (imported on first access).
_PUBLIC: dict[str, str] = {
    "experiments": "cogtestbed.api.core",
    "get_experiment": "cogtestbed.api.core",
    "simulate": "cogtestbed.api.core",
    "simulate_file": "cogtestbed.api.core",
    "metrics": "cogtestbed.api.core",
    "MetricsReport": "cogtestbed.metrics_result",
    "fit": "cogtestbed.api.core",
    "check": "cogtestbed.api.core",
    "export": "cogtestbed.api.export",
    "fit_and_save": "cogtestbed.api.fitting",
    "describe": "cogtestbed.api.describe",
    "phenotype": "cogtestbed.api.phenotype",
    "Phenotype": "cogtestbed.api.phenotype",
    "recover": "cogtestbed.api.studies",
    "power": "cogtestbed.api.studies",
    "sbc": "cogtestbed.api.studies",
    "model_recovery": "cogtestbed.api.studies",
    "metric_validity": "cogtestbed.api.studies",
    "study": "cogtestbed.api.studies",
    "form_study": "cogtestbed.api.studies",
    "Study": "cogtestbed.api.studies",
    "true_parameters": "cogtestbed.api.studies",
    "estimates": "cogtestbed.api.studies",
    "plot_recovery": "cogtestbed.api.studies",
    "plan": "cogtestbed.api.plan",
    "population": "cogtestbed.api.population",
    "populations": "cogtestbed.api.population",
    "population_from_fit": "cogtestbed.api.population",
    "build_population": "cogtestbed.api.population",
    "plan_forms": "cogtestbed.api.form_plan",
    "Plan": "cogtestbed.api.plan",
    "run": "cogtestbed.api.run",
    "PairedRun": "cogtestbed.api.run",
    "looks": "cogtestbed.api.looks",
    "LookReplay": "cogtestbed.api.looks",
    "monitor": "cogtestbed.api.monitor",
    "MonitorPath": "cogtestbed.api.monitor",
    "transcript_nll": "cogtestbed.api.transcripts",
    "participant_nll": "cogtestbed.api.transcripts",
    "heldout_nll": "cogtestbed.api.transcripts",
    "transcript_table": "cogtestbed.api.transcripts",
    "validate": "cogtestbed.api.transcripts",
    "identifiability": "cogtestbed.identifiability",
    "DesignInformation": "cogtestbed.identifiability",
    # the result types of the functions above (what ct.fit, ct.check, ct.run, ... return)
    "BayesFit": "cogtestbed.inference.hierarchical",
    "ConformanceReport": "cogtestbed.conformance.suite",
    "CheckResult": "cogtestbed.conformance.suite",
    "RunResult": "cogtestbed.llm_adapters.runs.config",
    "Figures": "cogtestbed.api.figures",
    "HeldOut": "cogtestbed.inference.heldout",
    "Population": "cogtestbed.inference.population",
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
    module = _PUBLIC.get(name)
    if module is None:  # an error class, named by ct.errors (cogtestbed.api.errors.ERRORS)
        errors = _importlib.import_module("cogtestbed.api.errors")
        if name not in errors.ERRORS:
            raise AttributeError(f"module 'cogtestbed' has no attribute {name!r}")
        module = errors.ERRORS[name]
    value = getattr(_importlib.import_module(module), name)
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
        return _importlib.import_module("cogtestbed.api.core").experiments

    @experiments.setter
    def experiments(self, module: _types.ModuleType) -> None:
        self.__dict__["_experiments_package"] = module

    @property
    def errors(self) -> _typing.Any:
        return _importlib.import_module("cogtestbed.api.errors")

    @errors.setter
    def errors(self, module: _types.ModuleType) -> None:
        self.__dict__["_errors_module"] = module


_sys.modules[__name__].__class__ = _Package
