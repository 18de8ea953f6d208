"""cogtestbed: synthetic agents with known parameters, run through the same environments a real
LLM steps through, analysed by the same fitters.

The library is the front door: ``import cogtestbed as ct`` gives the functions every command of
the command line is a thin layer over (keyword names follow the options)::

    import cogtestbed as ct

    trials = ct.simulate("instrumental-learning", "rw-pm", subjects=40, seed=1)
    mle = ct.fit("instrumental-learning", trials, model="rw-pm")                 # one row per subject
    post = ct.fit("instrumental-learning", trials, model="rw-pm", method="hierarchical")
    study = ct.recover("rw-pm", subjects=40, reps=20)                            # .table .verdict .plot()
    plan = ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2},
                   llm="openai:gpt-4o-mini", subjects=(10, 80))                  # .chosen .frontier .save()
    report = ct.check("instrumental-learning")                                   # .passed .table()

Experiment authors import their building blocks from :mod:`cogtestbed.extend`.  Names are
imported on first use (``cogtestbed --help`` loads no numerical package).

Layers: :mod:`cogtestbed.environments` (gymnasium tasks with rendered prompts and parsers),
:mod:`cogtestbed.agents` (synthetic subjects with numba batch paths),
:mod:`cogtestbed.inference` (published metrics, MLE and hierarchical fits),
:mod:`cogtestbed.llm_adapters` (real models as subjects), :mod:`cogtestbed.validation`
(recovery, calibration, power, plans and the conformance suite), :mod:`cogtestbed.api` (the
functions below).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name → the module defining it (imported on first access).
_PUBLIC: dict[str, str] = {
    "experiments": "cogtestbed.api.core",
    "get_experiment": "cogtestbed.api.core",
    "simulate": "cogtestbed.api.core",
    "metrics": "cogtestbed.api.core",
    "MetricsReport": "cogtestbed.metrics_result",
    "fit": "cogtestbed.api.core",
    "check": "cogtestbed.api.core",
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
    "plan_forms": "cogtestbed.api.form_plan",
    "Plan": "cogtestbed.api.plan",
    "run": "cogtestbed.api.run",
    "PairedRun": "cogtestbed.api.run",
    "looks": "cogtestbed.api.looks",
    "LookReplay": "cogtestbed.api.looks",
    # the typed errors (each one line and exit status 2 on the command line; cogtestbed.errors)
    "CogtestbedError": "cogtestbed.errors",
    "InputError": "cogtestbed.errors",
    "DataError": "cogtestbed.errors",
    "BudgetError": "cogtestbed.errors",
    "ResumeMismatch": "cogtestbed.errors",
    "RunDirError": "cogtestbed.llm_adapters.rundir",
    "PriceError": "cogtestbed.llm_adapters.limits",
    "UnpricedModel": "cogtestbed.llm_adapters.limits",
    "BackendError": "cogtestbed.llm_adapters.base",
    "WriteFailed": "cogtestbed.outputs",
    "PlanInfeasible": "cogtestbed.validation.design.plan",
    "ParameterError": "cogtestbed.parameters",
    "UnknownNameError": "cogtestbed.experiments.spec",
    "TrialTableError": "cogtestbed.schema",
    "DataFormatError": "cogtestbed.data.rows",
    "RepeatedSessionError": "cogtestbed.data.rows",
    "DegenerateAnswers": "cogtestbed.no_data",
    "BackendUnavailable": "cogtestbed.llm_adapters.base",
    "LLMError": "cogtestbed.llm_adapters.base",
    "MemoryLimitError": "cogtestbed.memory",
    "OutputError": "cogtestbed.outputs",
    "FormError": "cogtestbed.environments.forms",
    "WorkerDied": "cogtestbed.validation.errors",
    "ConformanceError": "cogtestbed.validation.errors",
}

__all__ = [
    "__version__", "BackendError", "BackendUnavailable", "BudgetError", "CogtestbedError", "ConformanceError",
    "DataError", "DataFormatError", "DegenerateAnswers", "FormError", "InputError", "LLMError", "LookReplay",
    "MemoryLimitError", "MetricsReport",
    "OutputError", "PairedRun", "ParameterError", "Phenotype", "Plan", "PlanInfeasible", "PriceError",
    "RepeatedSessionError", "ResumeMismatch", "RunDirError", "Study", "TrialTableError", "UnknownNameError",
    "UnpricedModel", "WorkerDied",
    "WriteFailed", "check", "describe", "estimates", "experiments", "fit", "fit_and_save", "form_study",
    "get_experiment", "looks", "metric_validity", "metrics", "model_recovery", "phenotype", "plan", "plan_forms",
    "plot_recovery", "power", "recover", "run", "sbc", "simulate", "study", "true_parameters",
]

if TYPE_CHECKING:
    from cogtestbed.api.core import check, experiments, fit, get_experiment, metrics, simulate
    from cogtestbed.api.describe import describe
    from cogtestbed.api.fitting import fit_and_save
    from cogtestbed.api.form_plan import plan_forms
    from cogtestbed.api.looks import LookReplay, looks
    from cogtestbed.api.phenotype import Phenotype, phenotype
    from cogtestbed.api.plan import Plan, plan
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
    from cogtestbed.data.rows import DataFormatError, RepeatedSessionError
    from cogtestbed.environments.forms import FormError
    from cogtestbed.errors import BudgetError, CogtestbedError, DataError, InputError, ResumeMismatch
    from cogtestbed.experiments.spec import UnknownNameError
    from cogtestbed.llm_adapters.base import BackendError, BackendUnavailable, LLMError
    from cogtestbed.llm_adapters.limits import PriceError, UnpricedModel
    from cogtestbed.llm_adapters.rundir import RunDirError
    from cogtestbed.memory import MemoryLimitError
    from cogtestbed.metrics_result import MetricsReport
    from cogtestbed.no_data import DegenerateAnswers
    from cogtestbed.outputs import OutputError, WriteFailed
    from cogtestbed.parameters import ParameterError
    from cogtestbed.schema import TrialTableError
    from cogtestbed.validation.design.plan import PlanInfeasible
    from cogtestbed.validation.errors import ConformanceError, WorkerDied


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first access."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'cogtestbed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


class _Package(types.ModuleType):
    """The package module, whose ``experiments`` is always the public function
    (:func:`cogtestbed.api.core.experiments`), though the subpackage of the specs is called
    ``cogtestbed.experiments`` too: importing it stores it aside (it is reached through
    ``import cogtestbed.experiments.NAME`` and ``sys.modules``, never as an attribute)."""

    @property
    def experiments(self) -> Any:
        return importlib.import_module("cogtestbed.api.core").experiments

    @experiments.setter
    def experiments(self, module: types.ModuleType) -> None:
        self.__dict__["_experiments_package"] = module


sys.modules[__name__].__class__ = _Package
