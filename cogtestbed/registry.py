"""The experiment registry: discovers every :class:`~cogtestbed.experiments.spec.ExperimentSpec`.

An experiment is declared once, as the module-level ``SPEC`` of ``cogtestbed/experiments/<name>.py``
(``-`` → ``_``); nothing lists experiments by hand.  Other installed distributions may add
experiments through the ``cogtestbed.experiments`` entry-point group (``name = "pkg.module:SPEC"``
or a module exposing ``SPEC``).  Names are listed without importing any experiment; a spec (and
its environment, agents and models) is imported on first use and cached.

Generic code (simulation, CLI, studies, LLM runs, the conformance suite) looks experiments up here
and dispatches on the contracts; it never branches on an experiment's name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Any

from cogtestbed import experiments as _experiments_pkg
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    Generator,
    Importer,
    MetricOption,
    MetricsSpec,
    StudyDecl,
    UnknownNameError,
)

if TYPE_CHECKING:  # the installed distributions are read only for a plug-in's name
    from importlib.metadata import EntryPoint

#: Entry-point group through which other distributions register experiments.
ENTRY_POINT_GROUP = "cogtestbed.experiments"

#: The registry's type name (an experiment *is* its spec).
Experiment = ExperimentSpec

__all__ = [
    "ENTRY_POINT_GROUP", "Experiment", "ExperimentSpec", "Generator", "Importer", "MetricOption",
    "MetricsSpec", "StudyDecl", "UnknownNameError", "experiment_names", "get_experiment",
]


def _module_name(name: str) -> str:
    return name.replace("-", "_")


@cache
def _builtin_names() -> tuple[str, ...]:
    """Experiments declared in this package (module names, not imported)."""
    return tuple(
        m.name.replace("_", "-")
        for m in pkgutil.iter_modules(_experiments_pkg.__path__)
        if not m.name.startswith("_") and m.name != "spec"
    )


@cache
def _plugin_entry_points() -> dict[str, EntryPoint]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _builtin_names()}


def experiment_names() -> list[str]:
    """Every registered experiment: the package's own first (alphabetical), then plug-ins."""
    return sorted(_builtin_names()) + sorted(_plugin_entry_points())


def _load(name: str) -> Any:
    if name in _builtin_names():
        return importlib.import_module(f"{_experiments_pkg.__name__}.{_module_name(name)}").SPEC
    loaded = _plugin_entry_points()[name].load()
    return getattr(loaded, "SPEC", loaded)


@cache
def get_experiment(name: str) -> ExperimentSpec:
    """The registered experiment called ``name`` (clear error listing valid names)."""
    if name not in _builtin_names():  # the installed distributions are scanned only for a plug-in's name
        names = experiment_names()
        if name not in names:
            raise UnknownNameError("experiment", name, names)
    spec = _load(name)
    if not isinstance(spec, ExperimentSpec):
        raise TypeError(f"experiment {name!r} does not declare an ExperimentSpec (got {type(spec).__name__})")
    if spec.name != name:
        raise ValueError(f"experiment module {name!r} declares a spec named {spec.name!r}")
    return spec
