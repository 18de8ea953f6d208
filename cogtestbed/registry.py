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

import contextlib
import functools
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.errors import InputError
from cogtestbed.experiments import spec as _spec_module
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    Generator,
    Importer,
    MetricsSpec,
    StudyDecl,
    UnknownNameError,
)
from cogtestbed.metrics_result import MetricOption
from cogtestbed.plugins import Registry

if TYPE_CHECKING:
    import pandas as pd

#: The package of the experiment modules, the package of :mod:`cogtestbed.experiments.spec`
#: (``cogtestbed.experiments`` as an attribute of the package is the public function listing
#: experiment names: :mod:`cogtestbed`).
_experiments_pkg = sys.modules[_spec_module.__package__ or ""]
#: Entry-point group through which other distributions register experiments: the package's name,
#: ``cogtestbed.experiments``.
ENTRY_POINT_GROUP = _experiments_pkg.__name__

#: The registry's type name (an experiment *is* its spec).
Experiment = ExperimentSpec

__all__ = [
    "ENTRY_POINT_GROUP", "EXPERIMENTS", "Experiment", "ExperimentSpec", "Generator", "Importer", "MetricOption",
    "MetricsSpec", "StudyDecl", "UnknownNameError", "experiment_names", "get_experiment", "read_trials",
    "register", "trials_manifest", "validate_table", "write_trials",
]


def _module_name(name: str) -> str:
    return name.replace("-", "_")


def _builtin() -> dict[str, Any]:
    """Experiments declared in this package (module names, not imported), alphabetical: name → loader."""
    names = sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(_experiments_pkg.__path__)
                   if not m.name.startswith("_") and m.name != "spec")
    return {name: functools.partial(_import_spec, name) for name in names}


def _import_spec(name: str) -> Any:
    return importlib.import_module(f"{_experiments_pkg.__name__}.{_module_name(name)}").SPEC


def _as_spec(name: str, loaded: Any) -> ExperimentSpec:
    """A loaded module's ``SPEC`` (or the spec itself), checked."""
    spec = getattr(loaded, "SPEC", loaded)
    if not isinstance(spec, ExperimentSpec):
        raise TypeError(f"experiment {name!r} does not declare an ExperimentSpec (got {type(spec).__name__})")
    if spec.name != name:
        raise InputError(f"experiment module {name!r} declares a spec named {spec.name!r}")
    return spec


#: The experiments: the package's own, the plug-ins' (:data:`ENTRY_POINT_GROUP`) and those registered in this
#: process (:func:`register`), one :class:`~cogtestbed.plugins.Registry` (the pattern backends and plan kinds share).
EXPERIMENTS: Registry[ExperimentSpec] = Registry(
    "experiment", ENTRY_POINT_GROUP, _builtin, _as_spec,
    unknown=lambda name, names: UnknownNameError("experiment", name, names))


def experiment_names() -> list[str]:
    """Every registered experiment: the package's own first (alphabetical), then plug-ins, then
    those registered in this process (:func:`register`)."""
    return EXPERIMENTS.names()


def register(spec: ExperimentSpec) -> ExperimentSpec:
    """Register ``spec`` in this process under its name, so that everything that looks an
    experiment up by name (simulation, studies and their forked workers, LLM runs) finds it;
    returns it.  Registering the same object again, or the spec a name already resolves to (the
    package's own, an installed plug-in's), is a no-op; another experiment under a registered name
    is refused."""
    if not isinstance(spec, ExperimentSpec):
        raise TypeError(f"register takes an ExperimentSpec, got {type(spec).__name__}")
    return EXPERIMENTS.register(spec.name, spec)


def get_experiment(name: str) -> ExperimentSpec:
    """The registered experiment called ``name`` (clear error listing valid names)."""
    return EXPERIMENTS.get(name)


# ----------------------------------------------------------------------------- tables of registered experiments
def validate_table(trials: pd.DataFrame, experiment: str | None = None, source: str | os.PathLike[str] | None = None,
                   file_columns: Mapping[str, str] | None = None,
                   spec: ExperimentSpec | None = None) -> pd.DataFrame:
    """Check a table against the schema of each experiment it holds (looked up here by name);
    return it unchanged or raise :class:`~cogtestbed.schema.TrialTableError`.

    With ``experiment`` given, a table of another experiment is refused.  ``spec``: the spec that
    produced the table (a run of an experiment that is not registered, e.g. one built in a script,
    is checked against it).  One experiment's table: :func:`cogtestbed.schema.validate_trials`.
    """
    from cogtestbed.schema import check_table, refuse_others, table_experiments

    names = table_experiments(trials, source)
    if experiment is not None:
        refuse_others(names, experiment, source)
    for name in names:
        declared = spec if spec is not None and spec.name == name else get_experiment(name)
        rows = trials if len(names) <= 1 else trials[trials["experiment"].astype("string") == name]
        check_table(rows, declared.schema, declared.name, None if source is None else str(source), file_columns)
    return trials


def read_trials(path: str | os.PathLike[str], experiment: str | None = None, user_file: bool = False) -> pd.DataFrame:
    """Read a Parquet trial table written by :func:`write_trials` (schema checked; with
    ``experiment`` given, a table of another experiment is refused).  ``user_file``: a file the
    user named, under the input limit (:func:`cogtestbed.memory.reading_input`); a run's own
    table is read as it is."""
    from cogtestbed.memory import reading_input
    from cogtestbed.trials import read_trial_file

    with reading_input(path) if user_file else contextlib.nullcontext():
        table = read_trial_file(path)
    return validate_table(table, experiment, source=Path(path))


def trials_manifest(trials: pd.DataFrame, manifest: Mapping[str, Any],
                    spec: ExperimentSpec | None = None, validate: bool = True) -> dict[str, Any]:
    """The manifest written beside a trial table (the table is validated first, against ``spec``
    where given; see :func:`validate_table`; not where ``validate`` is False: its chunks were)."""
    from cogtestbed.trials import SCHEMA_VERSION, package_versions

    if validate:
        validate_table(trials, spec=spec)
    return {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "n_rows": len(trials),
        **manifest,
    }


def write_trials(trials: pd.DataFrame, path: str | os.PathLike[str], manifest: Mapping[str, Any]) -> Path:
    """Write ``trials`` as Parquet plus ``<path>.manifest.json``; return the Parquet path."""
    from cogtestbed.trials import manifest_path, table_to_parquet, write_files_together

    out = Path(path)
    full_manifest = trials_manifest(trials, manifest)
    write_files_together({out: lambda tmp: table_to_parquet(trials, tmp),
                          manifest_path(out): lambda tmp: tmp.write_text(
                              json.dumps(full_manifest, indent=2, sort_keys=True, default=str))})
    return out


def write_trial_chunks(chunks: Iterable[pd.DataFrame], path: str | os.PathLike[str], manifest: Mapping[str, Any],
                       keep: bool = False) -> tuple[int, pd.DataFrame | None]:
    """:func:`write_trials` of a table given as chunks of whole subjects, in order (each validated, then
    written as row groups of one Parquet file: :func:`cogtestbed.trials.chunks_to_parquet`), holding one
    chunk at a time unless ``keep``; the same files as :func:`write_trials` of their concatenation, but
    for the manifest's time.  Returns (rows written, the concatenated table where ``keep``, else None)."""
    import pandas as pd

    from cogtestbed.trials import chunks_to_parquet, manifest_path, write_files_together

    out = Path(path)
    kept: list[pd.DataFrame] = []
    rows = [0]

    def seen(chunk: pd.DataFrame) -> None:
        validate_table(chunk)
        if keep:
            kept.append(chunk)

    def parquet(tmp: Path) -> None:
        rows[0] = chunks_to_parquet(chunks, tmp, seen)

    def manifest_file(tmp: Path) -> None:  # written after the table: its row count is known then
        full = trials_manifest(pd.DataFrame(), {}, validate=False)
        full = {**full, "n_rows": rows[0], **manifest}
        tmp.write_text(json.dumps(full, indent=2, sort_keys=True, default=str))

    write_files_together({out: parquet, manifest_path(out): manifest_file})
    return rows[0], (pd.concat(kept, ignore_index=True) if keep else None)


# ----------------------------------------------------------------------------- which experiment
def _table_experiments(path: Path) -> list[str]:
    """The values of a Parquet trial table's ``experiment`` column (read alone; [] where none)."""
    import pyarrow.parquet as pq

    try:
        if "experiment" not in pq.read_schema(path).names:
            return []
        column = pq.read_table(path, columns=["experiment"]).column("experiment")
    except Exception:  # noqa: BLE001 - not a Parquet table: the reader says so later
        return []
    return sorted({str(v) for v in column.to_pylist() if v is not None})


def _sniffing_experiments(path: Path) -> list[str]:
    """The experiments one of whose importers recognises ``path``."""
    out = []
    for name in experiment_names():
        spec = get_experiment(name)
        for importer in spec.all_importers.values():
            try:
                if importer.sniff(path):
                    out.append(name)
                    break
            except Exception:  # noqa: BLE001,S112 - a sniff that fails recognises nothing
                continue
    return out


def _declaring(model: str) -> list[str]:
    return [name for name in experiment_names() if model in get_experiment(name).models]


#: The experiment :func:`experiment_of` asks first (the commands' default before they read the
#: experiment from the table): where it fits, no other experiment is imported.
FIRST_ASKED = "instrumental-learning"


def _first_fits(path: Path | None, model: str | None) -> bool:
    spec = get_experiment(FIRST_ASKED)
    if model is not None and model not in spec.models:
        return False
    if path is None or path.suffix.lower() == ".parquet":
        return model is not None and (path is None or _table_experiments(path) in ([], [FIRST_ASKED]))
    return any(importer.sniff(path) for importer in spec.importers.values())


def experiment_of(given: str | None = None, path: str | os.PathLike[str] | None = None,
                  model: str | None = None) -> str:
    """The experiment a command works on when the user may leave it out: ``given`` where named;
    else the ``experiment`` column of the trial table at ``path`` (one value); else the
    experiment whose importer recognises ``path``; else the one experiment declaring ``model``.
    ``UnknownNameError``-free: none or several candidates are one ``ValueError`` line naming them
    and ``--experiment``."""
    if given is not None:
        return given
    where = Path(path) if path is not None else None
    if where is not None and not where.exists():
        raise FileNotFoundError(f"no such file: {where}")
    if _first_fits(where, model):
        return FIRST_ASKED
    if where is not None and where.is_file():
        found = _table_experiments(where) if where.suffix.lower() == ".parquet" else _sniffing_experiments(where)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InputError(f"{where} holds several experiments ({', '.join(found)}); name one with `experiment`")
    if model is not None:
        return _owner_of(model, refuse_unknown=where is None, where=where)
    raise _cannot_tell(where, model)


def _cannot_tell(where: Path | None, model: str | None) -> ValueError:
    if where is not None and model is None:
        from cogtestbed.data.psych201 import psych201_defect, unread_reason

        why = unread_reason(where) or psych201_defect(where)
        if why is not None:
            return InputError(why)
    what = " or ".join(x for x in (f"{where}" if where is not None else "", f"model {model!r}" if model else "") if x)
    return ValueError(f"cannot tell the experiment from {what or 'the arguments'}: name the experiment "
                      f"(one of {', '.join(experiment_names())})")


def _owner_of(model: str, refuse_unknown: bool, where: Path | None = None) -> str:
    """The one experiment declaring ``model``; several are one line naming them; none is one line
    listing every model (``refuse_unknown``) or asking for ``--experiment``."""
    owners = _declaring(model)
    if len(owners) == 1:
        return owners[0]
    if len(owners) > 1:
        raise InputError(f"model {model!r} is declared by {', '.join(owners)}; name one with `experiment`")
    if refuse_unknown:
        models = sorted({m for name in experiment_names() for m in get_experiment(name).models})
        raise InputError(f"unknown model {model!r}: choose one of: {', '.join(models)}")
    raise _cannot_tell(where, model)
