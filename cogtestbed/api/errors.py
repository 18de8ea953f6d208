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

import importlib
from typing import TYPE_CHECKING, Any

#: Error class → the module that defines it (imported on first access).
ERRORS: dict[str, str] = {
    "CogtestbedError": "cogtestbed.errors",
    "InputError": "cogtestbed.errors",
    "DataError": "cogtestbed.errors",
    "BudgetError": "cogtestbed.errors",
    "ResumeMismatch": "cogtestbed.errors",
    "RunDirError": "cogtestbed.llm_adapters.runs.rundir",
    "PriceError": "cogtestbed.llm_adapters.clients.prices",
    "UnpricedModel": "cogtestbed.llm_adapters.clients.prices",
    "BackendError": "cogtestbed.llm_adapters.clients.base",
    "WriteFailed": "cogtestbed.outputs",
    "PlanInfeasible": "cogtestbed.planning.plan",
    "ParameterError": "cogtestbed.parameters",
    "UnknownNameError": "cogtestbed.experiments.spec",
    "TrialTableError": "cogtestbed.schema",
    "DataFormatError": "cogtestbed.data.rows",
    "RepeatedSessionError": "cogtestbed.data.rows",
    "DegenerateAnswers": "cogtestbed.no_data",
    "BackendUnavailable": "cogtestbed.llm_adapters.clients.base",
    "LLMError": "cogtestbed.llm_adapters.clients.base",
    "MemoryLimitError": "cogtestbed.memory",
    "OutputError": "cogtestbed.outputs",
    "FormError": "cogtestbed.environments.forms",
    "PopulationError": "cogtestbed.inference.population",
    "WorkerDied": "cogtestbed.study_errors",
    "ConformanceError": "cogtestbed.study_errors",
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
    module = ERRORS.get(name, "cogtestbed.errors")
    try:
        value = getattr(importlib.import_module(module), name)
    except AttributeError:
        raise AttributeError(f"module 'cogtestbed.errors' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})
