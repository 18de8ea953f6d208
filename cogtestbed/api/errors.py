"""``ct.errors``: every error class the library raises, in one namespace.

The base kinds (:class:`~cogtestbed.errors.CogtestbedError`, ``InputError``, ``DataError``,
``BudgetError``, ``ResumeMismatch``) are defined in :mod:`cogtestbed.errors`, the bottom of the
layer order; the specific classes beside the code that raises them (``RunDirError`` in the run
folder, ``TrialTableError`` in the schema, ...).  This module names them all, each imported on
first access::

    import cogtestbed as ct

    try:
        ct.fit("instrumental-learning", "missing.csv", model="rw-pm")
    except ct.errors.DataError as exc:
        print(exc)

Each class is the same object as ``ct.NAME`` and, for the base kinds, as
``cogtestbed.errors.NAME`` (still importable from there).  Every other name of
:mod:`cogtestbed.errors` is reached here too, so ``import cogtestbed.errors as errors`` (which
Python resolves through the package attribute ``ct.errors``) finds what it found before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any


def _module_of(cls: type) -> ModuleType:
    return sys.modules[cls.__module__]


def _errors() -> ModuleType:
    from cogtestbed.errors import BudgetError
    return _module_of(BudgetError)


def _llm_adapters_runs_rundir() -> ModuleType:
    from cogtestbed.llm_adapters.runs.rundir import RunDirError
    return _module_of(RunDirError)


def _llm_adapters_clients_prices() -> ModuleType:
    from cogtestbed.llm_adapters.clients.prices import PriceError
    return _module_of(PriceError)


def _llm_adapters_clients_base() -> ModuleType:
    from cogtestbed.llm_adapters.clients.base import BackendError
    return _module_of(BackendError)


def _outputs() -> ModuleType:
    from cogtestbed.outputs import OutputError
    return _module_of(OutputError)


def _planning_plan() -> ModuleType:
    from cogtestbed.planning.plan import PlanInfeasible
    return _module_of(PlanInfeasible)


def _parameters() -> ModuleType:
    from cogtestbed.parameters import ParameterError
    return _module_of(ParameterError)


def _experiments_spec() -> ModuleType:
    from cogtestbed.experiments.spec import UnknownNameError
    return _module_of(UnknownNameError)


def _schema() -> ModuleType:
    from cogtestbed.schema import TrialTableError
    return _module_of(TrialTableError)


def _data_rows() -> ModuleType:
    from cogtestbed.data.rows import DataFormatError
    return _module_of(DataFormatError)


def _no_data() -> ModuleType:
    from cogtestbed.no_data import DegenerateAnswers
    return _module_of(DegenerateAnswers)


def _memory() -> ModuleType:
    from cogtestbed.memory import MemoryLimitError
    return _module_of(MemoryLimitError)


def _environments_forms() -> ModuleType:
    from cogtestbed.environments.forms import FormError
    return _module_of(FormError)


def _inference_population() -> ModuleType:
    from cogtestbed.inference.population import PopulationError
    return _module_of(PopulationError)


def _study_errors() -> ModuleType:
    from cogtestbed.study_errors import ConformanceError
    return _module_of(ConformanceError)


#: Error class → the loader of the module that defines it (imported on first access).
ERRORS: dict[str, Callable[[], ModuleType]] = {
    "CogtestbedError": _errors,
    "InputError": _errors,
    "DataError": _errors,
    "BudgetError": _errors,
    "ResumeMismatch": _errors,
    "RunDirError": _llm_adapters_runs_rundir,
    "PriceError": _llm_adapters_clients_prices,
    "UnpricedModel": _llm_adapters_clients_prices,
    "BackendError": _llm_adapters_clients_base,
    "WriteFailed": _outputs,
    "PlanInfeasible": _planning_plan,
    "ParameterError": _parameters,
    "UnknownNameError": _experiments_spec,
    "TrialTableError": _schema,
    "DataFormatError": _data_rows,
    "RepeatedSessionError": _data_rows,
    "DegenerateAnswers": _no_data,
    "BackendUnavailable": _llm_adapters_clients_base,
    "LLMError": _llm_adapters_clients_base,
    "MemoryLimitError": _memory,
    "OutputError": _outputs,
    "FormError": _environments_forms,
    "PopulationError": _inference_population,
    "WorkerDied": _study_errors,
    "ConformanceError": _study_errors,
}

__all__ = [
    "BackendError", "BackendUnavailable", "BudgetError", "CogtestbedError", "ConformanceError", "DataError",
    "DataFormatError", "DegenerateAnswers", "FormError", "InputError", "LLMError", "MemoryLimitError", "OutputError",
    "ParameterError", "PlanInfeasible", "PopulationError", "PriceError", "RepeatedSessionError", "ResumeMismatch",
    "RunDirError", "TrialTableError", "UnknownNameError", "UnpricedModel", "WorkerDied", "WriteFailed",
]

if TYPE_CHECKING:
    from cogtestbed.data.rows import DataFormatError, RepeatedSessionError
    from cogtestbed.environments.forms import FormError
    from cogtestbed.errors import BudgetError, CogtestbedError, DataError, InputError, ResumeMismatch
    from cogtestbed.experiments.spec import UnknownNameError
    from cogtestbed.inference.population import PopulationError
    from cogtestbed.llm_adapters.clients.base import BackendError, BackendUnavailable, LLMError
    from cogtestbed.llm_adapters.clients.prices import PriceError, UnpricedModel
    from cogtestbed.llm_adapters.runs.rundir import RunDirError
    from cogtestbed.memory import MemoryLimitError
    from cogtestbed.no_data import DegenerateAnswers
    from cogtestbed.outputs import OutputError, WriteFailed
    from cogtestbed.parameters import ParameterError
    from cogtestbed.planning.plan import PlanInfeasible
    from cogtestbed.schema import TrialTableError
    from cogtestbed.study_errors import ConformanceError, WorkerDied


def __getattr__(name: str) -> Any:
    """An error class, imported from its module on first access; any other name of the base
    module :mod:`cogtestbed.errors` from there."""
    load = ERRORS.get(name, _errors)
    try:
        value = getattr(load(), name)
    except AttributeError:
        raise AttributeError(f"module 'cogtestbed.errors' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})
