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
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionArray

from cogtestbed.outputs import atomic_write_bytes, new_file_mode

if TYPE_CHECKING:
    from cogtestbed.experiments.spec import ExperimentSpec

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
                    file_columns: Mapping[str, str] | None = None,
                    spec: ExperimentSpec | None = None) -> pd.DataFrame:
    """Check the table against the schema of its experiment; return it unchanged or raise
    :class:`TrialTableError` (one line naming ``source``, the column, row and value).

    The common columns are checked here; each experiment named in the ``experiment`` column is
    then checked against the schema its environment declares (:mod:`cogtestbed.schema`).  With
    ``experiment`` given, a table of another experiment is refused.  ``file_columns`` maps table
    columns to the names the source file gives them (an importer's), used in the message.
    ``spec``: the :class:`~cogtestbed.experiments.spec.ExperimentSpec` that produced the table (a
    run of an experiment that is not registered, e.g. one built in a script, is checked against it).
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
        declared = spec if spec is not None and spec.name == name else get_experiment(name)
        rows = trials if len(names) <= 1 else trials[trials["experiment"].astype("string") == name]
        check_table(rows, declared.env_cls.table_schema, declared.name, None if source is None else str(source),
                    file_columns)
    return trials


def param_columns(trials: pd.DataFrame) -> list[str]:
    """The ``param_*`` columns of a table."""
    return [c for c in trials.columns if c.startswith(PARAM_PREFIX)]


@dataclass(frozen=True)
class CodedStrings:
    """A string stimulus column given as integer ``codes`` into a ``vocabulary`` (None: missing).

    The column is built without one Python object per row (the vocabulary is taken by code in
    Arrow); the table holds the same ``string`` column as the equivalent object array would give.
    """

    codes: np.ndarray
    vocabulary: tuple[str | None, ...]

    @classmethod
    def encode(cls, values: np.ndarray) -> CodedStrings:
        """Codes of a (small) string array into its sorted distinct values; index ``codes`` with
        trial-level indices to spread them over the table without touching strings."""
        vocabulary, codes = np.unique(np.asarray(values), return_inverse=True)
        return cls(codes.reshape(np.shape(values)), tuple(str(v) for v in vocabulary))

    def take(self, *index: Any) -> CodedStrings:
        """The same vocabulary at ``codes[index]``."""
        return CodedStrings(self.codes[index], self.vocabulary)

    def where(self, condition: np.ndarray, other: CodedStrings) -> CodedStrings:
        """Elementwise ``self`` where ``condition`` else ``other`` (same vocabulary)."""
        if other.vocabulary != self.vocabulary:
            raise ValueError("CodedStrings.where needs one vocabulary")
        return CodedStrings(np.where(condition, self.codes, other.codes), self.vocabulary)


@dataclass(frozen=True)
class CodedNumbers:
    """A numeric stimulus column given as integer ``codes`` into a table of ``values``: the column
    is ``values[codes]``, looked up after the kept rows are chosen (columns sharing one ``codes``
    array share that choice)."""

    codes: np.ndarray
    values: np.ndarray


#: A stimulus column: an (n_subjects, n_trials) array, :class:`CodedStrings`, :class:`CodedNumbers`, a
#: flat pandas array, or None for a text column with nothing recorded (all missing, like ``raw_response``).
Column: TypeAlias = np.ndarray | pd.Categorical | ExtensionArray | CodedStrings | CodedNumbers | None


def finish_table(
    experiment: str,
    stimulus: Mapping[str, Column],
    action: np.ndarray,
    reward: np.ndarray,
    valid: np.ndarray,
    *,
    agent: str,
    raw_response: np.ndarray | None = None,
    parse_error: np.ndarray | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    subject_offset: int = 0,
    keep: np.ndarray | None = None,
    session: np.ndarray | ExtensionArray | None = None,
    trial: np.ndarray | ExtensionArray | None = None,
    action_valid: np.ndarray | None = None,
    after_action: Mapping[str, Column] | None = None,
    trailing: Mapping[str, Column] | None = None,
) -> pd.DataFrame:
    """Assemble a trial table from (n_subjects, n_trials) arrays in the schema's column order.

    Columnar: every column is built from whole arrays and the frame is constructed once, without
    a Python step per row.  ``params`` maps parameter names to per-subject arrays of shape
    (n_subjects,).  ``keep`` (n_subjects, n_trials) keeps only the rows where it is True (steps a
    session never reached); ``trial`` still counts positions within the session.  ``action_valid``
    marks where ``action`` is present when that differs from ``valid`` (default ``valid``).
    ``after_action`` columns go between ``action`` and ``reward``; ``trailing`` columns go last.
    Stimulus values are (n_subjects, n_trials) arrays (object / unicode arrays become ``string``
    columns), :class:`CodedStrings`, flat pandas arrays of n_subjects × n_trials rows, or None
    (a text column with nothing recorded).
    """
    n_subjects, n_trials = np.shape(action)
    n = n_subjects * n_trials
    # the kept rows' numbers with their subject and position (numba: imported where used)
    rows: np.ndarray | None = None
    row_subject: np.ndarray | None = None
    row_position: np.ndarray | None = None
    if keep is not None:
        from cogtestbed.columns import kept_rows

        rows, row_subject, row_position = kept_rows(np.asarray(keep, dtype=bool).reshape(n_subjects, n_trials))
    col = _ColumnMaker(n, rows)
    cols: dict[str, Any] = {
        "experiment": _constant_category(experiment, col.n_rows),
        "subject": (np.repeat(np.arange(subject_offset, subject_offset + n_subjects, dtype=np.int64), n_trials)
                    if row_subject is None else row_subject + subject_offset if subject_offset else row_subject),
        "session": np.zeros(col.n_rows, dtype=np.int64) if session is None else col.index(session),
        "trial": (col.index(trial) if trial is not None
                  else np.tile(np.arange(n_trials, dtype=np.int64), n_subjects) if row_position is None
                  else row_position),
    }
    for name, values in stimulus.items():
        cols[name] = col(values)
    flat_valid = col.numeric(np.asarray(valid, dtype=bool).reshape(n))
    present = flat_valid if action_valid is None else col.numeric(np.asarray(action_valid, dtype=bool).reshape(n))
    flat_action = np.asarray(action).reshape(n)  # _masked_action makes the column a fresh array
    cols["action"] = _masked_action(flat_action if rows is None else flat_action.take(rows), present,
                                    fresh=rows is not None)
    for name, values in (after_action or {}).items():
        cols[name] = col(values)
    cols["reward"] = col.numeric(np.asarray(reward, dtype=np.float64).reshape(n))
    cols["valid"] = flat_valid
    cols["raw_response"] = col.text(raw_response)
    cols["parse_error"] = col.text(parse_error)
    cols["agent"] = _constant_category(agent, col.n_rows)
    for name, per_subject in (params or {}).items():
        values = np.asarray(per_subject, dtype=np.float64)
        cols[PARAM_PREFIX + name] = (np.repeat(values, n_trials) if row_subject is None
                                     else np.broadcast_to(values, (n_subjects,)).take(row_subject))
    for name, values in (trailing or {}).items():
        cols[name] = col(values)
    # every column is a fresh array owned by the table, so no copy (nor block consolidation)
    return pd.DataFrame(cols, copy=False)


class _ColumnMaker:
    """Flattens (n_subjects, n_trials) arrays into fresh, row-filtered table columns."""

    def __init__(self, n: int, rows: np.ndarray | None) -> None:
        self.n, self.rows = n, rows
        self.n_rows = n if rows is None else len(rows)
        self._codes: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def codes(self, codes: np.ndarray) -> np.ndarray:
        """The kept rows of a codes array, chosen once per array (coded columns often share one)."""
        hit = self._codes.get(id(codes))
        if hit is None or hit[0] is not codes:
            hit = (codes, self.numeric(np.asarray(codes, dtype=np.int64).reshape(self.n)))
            self._codes[id(codes)] = hit
        return hit[1]

    def index(self, values: np.ndarray | ExtensionArray) -> Any:
        """An int64 id column (``session``, ``trial``) from (n_subjects, n_trials) values or a
        fresh flat column (:func:`fresh_column`)."""
        if isinstance(values, ExtensionArray):
            return self(values)
        return self.numeric(np.asarray(values, dtype=np.int64).reshape(self.n))

    def numeric(self, flat: np.ndarray) -> np.ndarray:
        """The kept rows of a flat array, as a fresh array the table may own."""
        if self.rows is not None:
            return flat.take(self.rows)
        return flat if flat.flags.owndata and flat.base is None else flat.copy()

    def __call__(self, values: Column) -> Any:
        if values is None:
            return self.text(None)
        if isinstance(values, CodedStrings):
            return _coded_string_array(self.codes(values.codes), values.vocabulary)
        if isinstance(values, CodedNumbers):
            return np.asarray(values.values).take(self.codes(values.codes))  # take: faster than indexing
        if isinstance(values, (pd.Categorical, ExtensionArray)):
            if len(values) != self.n:
                raise ValueError(f"a flat stimulus column needs {self.n} rows, got {len(values)}")
            return values if self.rows is None else values.take(self.rows)
        given = np.asarray(values)
        flat = given.reshape(self.n)
        if flat.dtype.kind in "OUS":
            return _string_array(self.numeric(flat))
        if self.rows is None and not np.may_share_memory(flat, given):
            return flat  # reshaping a strided view already copied it: the copy is the table's own
        return self.numeric(flat)

    def text(self, values: np.ndarray | None) -> Any:
        """A nullable string column; an absent one is all-missing (built without a Python loop)."""
        if values is None:
            return pd.arrays.ArrowStringArray(pa.chunked_array([pa.nulls(self.n_rows, pa.large_string())]))
        return _string_array(self.numeric(np.asarray(values, dtype=object).reshape(self.n)))


def _masked_action(flat: np.ndarray, present: np.ndarray, fresh: bool = False) -> Any:
    """The ``action`` column (a fresh array): nullable integer (nullable float for ratings),
    missing where not ``present``.  ``fresh``: ``flat`` is already the table's own (taken rows)."""
    absent = ~present
    if flat.dtype.kind == "f":
        if not absent.any():  # the same column as the general case below, in fewer passes
            values = flat if fresh else flat.copy()
            return pd.arrays.FloatingArray(values, np.isnan(values))
        values = np.where(present, flat, 0.0)
        return pd.arrays.FloatingArray(values, absent | np.isnan(values))
    values = flat.astype(np.int64, copy=not fresh) if not absent.any() else np.where(present, flat, 0)
    return pd.arrays.IntegerArray(values.astype(np.int64, copy=False), absent)


def fresh_column(values: np.ndarray) -> pd.arrays.NumpyExtensionArray:
    """A numeric column built for one table (an (n_subjects, n_trials) or flat array nobody else
    holds), handed to :func:`finish_table` so that the table takes it as it is, without a copy."""
    return pd.arrays.NumpyExtensionArray(np.ascontiguousarray(values).reshape(-1))


def _string_array(flat: np.ndarray) -> Any:
    """A ``string`` column from a flat object/unicode array (None and NaN are missing).

    Every row is encoded on its own (tens of ns a row): give strings drawn from a small set of
    values as :class:`CodedStrings`.
    """
    if flat.dtype.kind != "O":
        return pd.array(flat, dtype="string")
    try:
        arrow = pa.array(flat, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # non-str objects: pandas converts them with str()
        return pd.array(flat, dtype="string")
    return pd.arrays.ArrowStringArray(pa.chunked_array([arrow]))


def _coded_string_array(codes: np.ndarray, vocabulary: tuple[str | None, ...]) -> Any:
    from cogtestbed.columns import take_strings  # numba: imported where used

    return pd.arrays.ArrowStringArray(pa.chunked_array([take_strings(codes, vocabulary)]))


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


def _constant_category(value: str, n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), dtype=pd.CategoricalDtype([value]))


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


def trials_manifest(trials: pd.DataFrame, manifest: Mapping[str, Any],
                    spec: ExperimentSpec | None = None) -> dict[str, Any]:
    """The manifest written beside a trial table (the table is validated first, against ``spec``
    where given; see :func:`validate_trials`)."""
    validate_trials(trials, spec=spec)
    return {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "n_rows": len(trials),
        **manifest,
    }


def write_trials(
    trials: pd.DataFrame, path: str | os.PathLike[str], manifest: Mapping[str, Any]
) -> Path:
    """Write ``trials`` as Parquet plus ``<path>.manifest.json``; return the Parquet path."""
    out = Path(path)
    full_manifest = trials_manifest(trials, manifest)
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
