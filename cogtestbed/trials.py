"""The trial table: one row per trial, the same schema for synthetic, LLM and imported data.

Columns every table has:

=================  ====================================================================
``experiment``     registry name of the experiment
``subject``        subject index (CogBench "run" for imported data)
``session``        session index within a subject (0 unless a subject plays several)
``trial``          trial index within the session, from 0
(stimulus)         the experiment's stimulus fields (documented on its environment)
``action``         the parsed action (nullable integer, or nullable float for rating tasks;
                   missing when the answer was invalid)
``reward``         the reward received (NaN when the answer was invalid)
``valid``          whether the answer parsed
``raw_response``   the subject's raw text (LLMs; missing for synthetic agents)
``parse_error``    why the answer did not parse (missing when valid)
``agent``          agent / model name
``param_<name>``   generating parameters, for synthetic subjects
=================  ====================================================================

Experiments with a scored phase add that phase's distribution with :func:`scored_columns`:
``<prefix>_p<k>`` (probability of continuation k, renormalised over the continuations),
``<prefix>_method`` (``"exact"`` teacher-forced scores or ``"sampled"``) and ``<prefix>_n`` (the
number of samples of a sampled estimate; NaN for an exact score).

Tables are saved as Parquet next to a JSON manifest (config, seed, package versions) with an
atomic write: a failed run never leaves a half-written file.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cogtestbed.outputs import atomic_write_bytes, new_file_mode

#: Columns every trial table starts with, in this order.
ID_COLUMNS = ("experiment", "subject", "session", "trial")
#: Outcome columns every trial table has, after the stimulus fields.
OUTCOME_COLUMNS = ("action", "reward", "valid", "raw_response", "parse_error", "agent")
PARAM_PREFIX = "param_"
MANIFEST_SUFFIX = ".manifest.json"
SCHEMA_VERSION = 1


class TrialTableError(ValueError):
    """A table does not follow the trial-table schema."""


def validate_trials(trials: pd.DataFrame, experiment: str | None = None, source: str | os.PathLike[str] | None = None,
                    file_columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Check the table against the schema of its experiment; return it unchanged or raise
    :class:`TrialTableError` (one line naming ``source``, the column, row and value).

    The common columns are checked here; each experiment named in the ``experiment`` column is
    then checked against the schema its environment declares (:mod:`cogtestbed.schema`).  With
    ``experiment`` given, a table of another experiment is refused.  ``file_columns`` maps table
    columns to the names the source file gives them (an importer's), used in the message.
    """
    where = f"{source}: " if source is not None else ""
    missing = [c for c in (*ID_COLUMNS, *OUTCOME_COLUMNS) if c not in trials.columns]
    if missing:
        raise TrialTableError(f"{where}trial table lacks required columns: {', '.join(missing)}")
    if trials.empty:
        return trials
    names = [str(n) for n in pd.unique(trials["experiment"].astype("string").dropna())]
    if not names:
        raise TrialTableError(f"{where}trial table has no experiment name")
    if experiment is not None and any(n != experiment for n in names):
        raise TrialTableError(f"{where}holds trials of experiment {', '.join(sorted(names))}, not {experiment}")
    if trials.duplicated(["experiment", "subject", "session", "trial"]).any():
        raise TrialTableError(f"{where}trial table has duplicated (experiment, subject, session, trial) rows")
    from cogtestbed.registry import get_experiment  # the registry imports environments, which import this module
    from cogtestbed.schema import check_table

    for name in names:
        spec = get_experiment(name)
        rows = trials if len(names) <= 1 else trials[trials["experiment"].astype("string") == name]
        check_table(rows, spec.env_cls.table_schema, spec.name, None if source is None else str(source),
                    file_columns)
    return trials


def param_columns(trials: pd.DataFrame) -> list[str]:
    """The ``param_*`` columns of a table."""
    return [c for c in trials.columns if c.startswith(PARAM_PREFIX)]


def finish_table(
    experiment: str,
    stimulus: Mapping[str, np.ndarray],
    action: np.ndarray,
    reward: np.ndarray,
    valid: np.ndarray,
    *,
    agent: str,
    raw_response: np.ndarray | None = None,
    parse_error: np.ndarray | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    subject_offset: int = 0,
) -> pd.DataFrame:
    """Assemble a trial table from (n_subjects, n_trials) arrays in the schema's column order.

    ``params`` maps parameter names to per-subject arrays of shape (n_subjects,).
    """
    n_subjects, n_trials = np.shape(action)
    subject = np.repeat(np.arange(n_subjects) + subject_offset, n_trials)
    trial = np.tile(np.arange(n_trials), n_subjects)
    cols: dict[str, Any] = {
        "experiment": _constant_category(experiment, n_subjects * n_trials),
        "subject": subject.astype(np.int64),
        "session": np.zeros(n_subjects * n_trials, dtype=np.int64),
        "trial": trial.astype(np.int64),
    }
    for name, values in stimulus.items():
        if isinstance(values, pd.Categorical):  # already flat and typed (fast path for big tables)
            cols[name] = values
            continue
        flat = np.asarray(values).reshape(n_subjects * n_trials)
        cols[name] = pd.array(flat, dtype="string") if flat.dtype.kind in "OUS" else flat
    flat_valid = np.asarray(valid, dtype=bool).reshape(-1)
    flat_action = np.asarray(action).reshape(-1)
    if flat_action.dtype.kind == "f":
        # ratings and other numeric answers: nullable float, missing where the answer was invalid
        cols["action"] = pd.array(np.where(flat_valid, flat_action, 0.0), dtype="Float64")
    else:
        cols["action"] = pd.array(np.where(flat_valid, flat_action, 0), dtype="Int64")
    cols["action"][~flat_valid] = pd.NA
    cols["reward"] = np.asarray(reward, dtype=np.float64).reshape(-1)
    cols["valid"] = flat_valid
    cols["raw_response"] = _object_column(raw_response, n_subjects * n_trials)
    cols["parse_error"] = _object_column(parse_error, n_subjects * n_trials)
    cols["agent"] = _constant_category(agent, n_subjects * n_trials)
    for name, per_subject in (params or {}).items():
        cols[PARAM_PREFIX + name] = np.repeat(np.asarray(per_subject, dtype=np.float64), n_trials)
    return pd.DataFrame(cols)


def scored_columns(scored: np.ndarray | None, n_continuations: int, shape: tuple[int, int],
                   prefix: str = "score") -> dict[str, np.ndarray]:
    """Stimulus-style columns holding the :class:`~cogtestbed.environments.base.ScoredAnswer` s of
    a scored phase, from an (n_subjects, n_trials) object array (None where not answered)."""
    probs = np.full((*shape, n_continuations), np.nan)
    method = np.full(shape, None, dtype=object)
    n_samples = np.full(shape, np.nan)
    if scored is not None:
        for idx in np.ndindex(*shape):
            answer: Any = scored[idx]
            if answer is None:
                continue
            probs[idx] = answer.probabilities
            method[idx] = answer.method
            n_samples[idx] = np.nan if answer.n_samples is None else answer.n_samples
    cols: dict[str, np.ndarray] = {f"{prefix}_p{k}": probs[..., k] for k in range(n_continuations)}
    cols[f"{prefix}_method"] = method
    cols[f"{prefix}_n"] = n_samples
    return cols


def _object_column(values: np.ndarray | None, n: int) -> Any:
    """A nullable string column; all-missing columns are built without a Python loop."""
    if values is None:
        return pd.array(pa.nulls(n, pa.large_string()), dtype="string")
    return pd.array(np.asarray(values, dtype=object).reshape(-1), dtype="string")


def _constant_category(value: str, n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[value])


# ----------------------------------------------------------------------------- manifests
def package_versions(names: Iterable[str] = ("cogtestbed", "numpy", "numba", "pandas", "scipy",
                                             "pymc", "gymnasium", "pyarrow")) -> dict[str, str]:
    """Installed versions of the packages that determine a run's output."""
    versions = {"python": platform.python_version()}
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def manifest_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + MANIFEST_SUFFIX)


def write_json_atomic(path: Path, obj: Any) -> None:
    atomic_write_bytes(
        path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str))
    )


def write_trials(
    trials: pd.DataFrame, path: str | os.PathLike[str], manifest: Mapping[str, Any]
) -> Path:
    """Write ``trials`` as Parquet plus ``<path>.manifest.json``; return the Parquet path."""
    validate_trials(trials)
    out = Path(path)
    full_manifest = {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "n_rows": len(trials),
        **manifest,
    }
    write_files_together({out: lambda tmp: trials.to_parquet(tmp, index=False),
                          manifest_path(out): lambda tmp: tmp.write_text(
                              json.dumps(full_manifest, indent=2, sort_keys=True, default=str))})
    return out


def write_files_together(writers: Mapping[Path, Any]) -> None:
    """Write several files as one unit: every ``writer(tmp)`` runs first; only when all succeeded
    are the temporary files renamed into place (a failure leaves the old files untouched)."""
    tmps: dict[Path, Path] = {}
    try:
        for path, write in writers.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
            tmps[path] = Path(name)
            write(tmps[path])
            os.chmod(tmps[path], new_file_mode())
        for path, done in tmps.items():
            os.replace(done, path)
    finally:
        for left in tmps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(left)


def read_trials(path: str | os.PathLike[str], experiment: str | None = None) -> pd.DataFrame:
    """Read a Parquet trial table written by :func:`write_trials` (schema checked; with
    ``experiment`` given, a table of another experiment is refused)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no trial table at {p}")
    try:
        trials = pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise TrialTableError(f"{p} is not a Parquet trial table: {exc}") from exc
    return validate_trials(trials, experiment, source=p)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    mp = manifest_path(path)
    if not mp.exists():
        return {}
    return dict(json.loads(mp.read_text()))
