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
import functools
import io
import json
import os
import platform
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionArray

from cogtestbed.errors import InputError
from cogtestbed.outputs import atomic_write_bytes, new_file_mode, write_failure
from cogtestbed.schema import TrialTableError, refuse_duplicated_column_names

PARAM_PREFIX = "param_"
MANIFEST_SUFFIX = ".manifest.json"
SCHEMA_VERSION = 1


def _is_arrow_list(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type))


def arrow_lists_as_arrow_dtype(arrow_type: pa.DataType) -> pd.ArrowDtype | None:
    """``types_mapper`` of :func:`read_table`: a list column reads back as the ``pd.ArrowDtype`` a
    :func:`lists` column has; every other column as pandas reads it by default."""
    return pd.ArrowDtype(arrow_type) if _is_arrow_list(arrow_type) else None


def table_to_parquet(frame: pd.DataFrame, where: str | os.PathLike[str] | io.BytesIO) -> None:
    """Write ``frame`` as Parquet that plain ``pandas.read_parquet`` reads back.

    pandas records an Arrow list column's dtype by a name it cannot parse again
    (``list<item: double>[pyarrow]``), so a table with :func:`lists` columns written by
    ``DataFrame.to_parquet`` would not read back without cogtestbed.  Here those columns are
    recorded as the object columns of lists pandas has always written: plain pandas reads their
    cells as arrays, :func:`read_table` as ``pd.ArrowDtype`` lists again.
    """
    import pyarrow.parquet as pq  # Parquet's file layer (and its TLS stack) only where a file is written or read

    pq.write_table(_arrow_table(frame), where)


def _arrow_table(frame: pd.DataFrame, schema: pa.Schema | None = None) -> pa.Table:
    """``frame`` as Arrow (with ``schema``: the first chunk's, which every later chunk keeps), its list
    columns recorded as pandas' object columns of lists (:func:`table_to_parquet`)."""
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    if schema is not None:
        return table
    lists = {field.name for field in table.schema if _is_arrow_list(field.type)}
    if lists:
        meta = json.loads(table.schema.metadata[b"pandas"])
        for column in meta["columns"]:
            if column["name"] in lists:
                column["numpy_type"], column["metadata"] = "object", None
        table = table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode()})
    return table


def chunks_to_parquet(frames: Iterable[pd.DataFrame], where: str | os.PathLike[str],
                      on_chunk: Callable[[pd.DataFrame], None] | None = None) -> int:
    """Write ``frames`` (chunks of one table, in order) as one Parquet file, a row group or more each,
    holding one chunk in memory at a time; it reads back as :func:`table_to_parquet` of their
    concatenation.  Later chunks take the first chunk's schema (a column that is all missing in a chunk
    keeps its type).  ``on_chunk`` sees each chunk before it is written.  Returns the rows written."""
    import pyarrow.parquet as pq

    writer: pq.ParquetWriter | None = None
    rows = 0
    try:
        for frame in frames:
            if on_chunk is not None:
                on_chunk(frame)
            table = _arrow_table(frame, None if writer is None else writer.schema)
            if writer is None:
                writer = pq.ParquetWriter(where, table.schema)
            writer.write_table(table)
            rows += len(frame)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise InputError("no subjects to write: the simulation gave no chunk")
    return rows


def read_table(where: str | os.PathLike[str]) -> pd.DataFrame:
    """A Parquet table written by :func:`table_to_parquet`, list columns as ``pd.ArrowDtype``."""
    import pyarrow.parquet as pq

    return pq.read_table(where).to_pandas(types_mapper=arrow_lists_as_arrow_dtype)


def pool_runs(table: pd.DataFrame, by: str = "agent") -> pd.DataFrame:
    """Relabel a table's runs (its ``subject``, ``session`` pairs) as sessions of one subject per
    value of ``by`` (the agent): the pooling :func:`~cogtestbed.simulation.as_sessions` does for
    simulated runs, applied to imported data (CogBench's runs of one LLM scored as one participant).

    Subjects are numbered in order of first appearance of ``by``; sessions in the order of the
    runs within it.
    """
    keys = table[by].astype(str) if by in table.columns else pd.Series("", index=table.index)
    unit = pd.factorize(keys, sort=False)[0]
    run = pd.factorize(pd.MultiIndex.from_arrays([table["subject"], table["session"]]), sort=False)[0]
    frame = pd.DataFrame({"unit": unit, "run": run}, index=table.index)
    first_run = frame.drop_duplicates("run").groupby("unit")["run"].rank(method="dense").astype(np.int64) - 1
    session = frame["run"].map(pd.Series(first_run.to_numpy(), index=frame.drop_duplicates("run")["run"]))
    return table.assign(subject=unit.astype(np.int64), session=session.to_numpy(dtype=np.int64))


@functools.lru_cache(maxsize=256)
def categorical_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The ``CategoricalDtype`` of ``categories`` (unordered), built once per process."""
    return pd.CategoricalDtype(list(categories))


# ----------------------------------------------------------------------------- typed columns
def strings(codes: np.ndarray, vocabulary: Sequence[str | None]) -> ExtensionArray:
    """The ``string`` column ``vocabulary[codes]`` (None: missing) over every row of ``codes``
    (flattened): Arrow's take of the vocabulary, without a Python object per row."""
    flat = np.asarray(codes).reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= len(vocabulary)):
        raise InputError(f"string codes must lie in 0..{len(vocabulary) - 1}")
    taken = pa.array(list(vocabulary), type=pa.large_string()).take(pa.array(flat.astype(np.int64, copy=False)))
    return pd.arrays.ArrowStringArray(pa.chunked_array([taken]))


def categories(codes: np.ndarray, vocabulary: Sequence[str | None]) -> pd.Categorical:
    """The ``category`` column ``vocabulary[codes]`` (None: missing; an entry may repeat) over every row
    of ``codes`` (flattened), its categories the distinct present entries, sorted: one small code per
    row, for text drawn from a small set (a ``string`` column copies every row's bytes)."""
    names = sorted({v for v in vocabulary if v is not None})
    where = {v: k for k, v in enumerate(names)}
    lookup = np.array([-1 if v is None else where[v] for v in vocabulary], dtype=np.int64)
    small = lookup.astype(np.min_scalar_type(-max(len(names), 1)))
    return pd.Categorical.from_codes(small.take(np.asarray(codes).reshape(-1)), dtype=categorical_dtype(tuple(names)),
                                     validate=False)


def lists(values: np.ndarray | pa.Array, offsets: np.ndarray) -> ExtensionArray:
    """A list column (one list of numbers or strings per row, of varying length): row i's list is
    ``values[offsets[i]:offsets[i + 1]]`` (``offsets``: one more than the rows, non-decreasing from 0),
    held as an Arrow ``list`` column (``pd.ArrowDtype(pa.list_(...))``); a cell reads back as a list."""
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 1:
        raise InputError(f"a list column needs one offset more than its rows, got shape {offsets.shape}")
    return pd.arrays.ArrowExtensionArray(_list_array(values, offsets, offsets.size - 1))


def coded_lists(codes: np.ndarray, vocabulary: Sequence[Sequence[Any]]) -> ExtensionArray:
    """The list column whose row i is ``vocabulary[codes[i]]`` (codes flattened): an item's outcome
    labels, its ground-truth distribution, from a small vocabulary of lists."""
    return pd.arrays.ArrowExtensionArray(_coded_list_array(np.asarray(codes).reshape(-1),
                                                           tuple(tuple(v) for v in vocabulary)))


def padded_lists(padded: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets) of the lists whose row i is ``padded[i, :lengths[i]]`` (``padded``: (rows, width))."""
    padded = np.asarray(padded)
    rows, width = padded.shape
    lengths = np.asarray(lengths, dtype=np.int64).reshape(rows)
    if ((lengths < 0) | (lengths > width)).any():
        raise InputError(f"list lengths must lie in 0..{width}")
    offsets = list_offsets(lengths)
    return padded.reshape(-1)[segment_index(np.arange(0, rows * width, width), lengths, offsets)], offsets


def list_offsets(lengths: np.ndarray) -> np.ndarray:
    """Offsets (0, then the cumulative ``lengths``) of lists of the given lengths."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def segment_index(starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Indices ``starts[i] + j`` for j < ``lengths[i]``, row after row (``offsets``: their cumulative
    lengths), built with whole-array steps."""
    index = np.repeat(starts - offsets[:-1], lengths)
    index += np.arange(int(offsets[-1]), dtype=np.int64)
    return index


def masked_action(action: np.ndarray, present: np.ndarray) -> ExtensionArray:
    """The ``action`` column over every row of ``action`` (flattened): nullable integer (nullable float
    for ratings), missing where not ``present`` (and, for ratings, where NaN)."""
    flat = np.asarray(action).reshape(-1)
    present = np.asarray(present, dtype=bool).reshape(-1)
    absent = ~present
    if flat.dtype.kind == "f":
        values = flat.copy() if not absent.any() else np.where(present, flat, 0.0)
        return pd.arrays.FloatingArray(values, absent | np.isnan(values))
    values = flat.astype(np.int64) if not absent.any() else np.where(present, flat, 0).astype(np.int64, copy=False)
    return pd.arrays.IntegerArray(values, absent)


#: A table column (:func:`finish_table`): a 2-D numpy array broadcast to (n_subjects, n_steps) — (n, 1)
#: per subject, (1, T) per step —; a flat array (1-D numpy, or a pandas array such as :func:`strings`,
#: :func:`categories`, :func:`lists` build) of every step's row, or of the kept rows only; or None for
#: a text column with nothing recorded (all missing, like ``raw_response`` of a synthetic agent).
Column: TypeAlias = np.ndarray | ExtensionArray | None


def finish_table(experiment: str, columns: Mapping[str, Column], *, agent: str,
                 params: Mapping[str, np.ndarray] | None = None, keep: np.ndarray | None = None,
                 subject_offset: int = 0) -> pd.DataFrame:
    """Assemble a trial table in the schema's column order from plain arrays (:data:`Column`).

    ``columns``: the table's columns in order, from the stimulus fields through ``action``, ``reward``
    and ``valid`` (required) to any after them.  ``session`` and ``trial``, where given, go first
    (defaults: session 0, the step's position); ``raw_response`` and ``parse_error`` follow ``valid``
    (default: all missing), then ``agent`` and the ``param_<name>`` columns of ``params`` (one value
    per subject), then the rest.  ``action`` is missing where ``valid`` is False, unless given as a
    pandas array (:func:`masked_action`).  Numeric and boolean arrays keep their dtype (``reward``
    float64, ``valid`` bool); object and text arrays become ``string`` columns.

    ``keep``: the rows kept, as an (n_subjects, n_steps) mask or as how many first steps each subject
    keeps (n_subjects integers: sessions that end early).  The table copies the kept cells of 2-D
    arrays; a flat array (and a pandas array) of the kept rows is held as given, as by
    ``pd.DataFrame(..., copy=False)``.
    """
    if not {"action", "reward", "valid"} <= set(columns):
        raise InputError("finish_table needs the columns action, reward and valid")
    rows = _Rows(columns, keep)
    cols: dict[str, Any] = {
        "experiment": _constant_category(experiment, rows.n_rows),
        "subject": rows(np.arange(subject_offset, subject_offset + rows.n_subjects, dtype=np.int64)[:, None]),
        "session": rows(columns["session"]) if "session" in columns else np.zeros(rows.n_rows, dtype=np.int64),
        "trial": rows(columns["trial"]) if "trial" in columns else rows.position(),
    }
    names = [name for name in columns if name not in ("session", "trial")]
    after = names.index("valid") + 1
    for name in names[:after]:
        cols[name] = rows.action(columns) if name == "action" else rows(columns[name])
    cols["reward"] = cols["reward"].astype(np.float64, copy=False)
    cols["valid"] = cols["valid"].astype(bool, copy=False)
    cols["raw_response"] = rows(columns.get("raw_response"), text=True)
    cols["parse_error"] = rows(columns.get("parse_error"), text=True)
    cols["agent"] = _constant_category(agent, rows.n_rows)
    for name, values in (params or {}).items():
        per = np.broadcast_to(np.asarray(values, dtype=np.float64), (rows.n_subjects,))
        cols[PARAM_PREFIX + name] = rows(per[:, None])
    for name in names[after:]:
        if name not in ("raw_response", "parse_error"):
            cols[name] = rows(columns[name])
    return pd.DataFrame(cols, copy=False)


def outcome_columns(outcomes: Any) -> dict[str, Column]:
    """``action``, ``reward``, ``valid``, ``raw_response`` and ``parse_error`` of an
    :class:`~cogtestbed.environments.base.Outcomes`, in table order (for :func:`finish_table`)."""
    return {"action": outcomes.action, "reward": outcomes.reward, "valid": outcomes.valid,
            "raw_response": outcomes.raw_response, "parse_error": outcomes.parse_error}


class _Rows:
    """The kept rows of a table's columns (see :func:`finish_table`)."""

    def __init__(self, columns: Mapping[str, Column], keep: np.ndarray | None) -> None:
        shapes = [np.shape(v) for v in columns.values() if isinstance(v, np.ndarray) and v.ndim == 2]
        self.lengths: np.ndarray | None = None
        self.mask: np.ndarray | None = None
        if keep is not None:
            shapes.append(self._read_keep(keep))
        if not shapes:
            raise InputError("finish_table needs a 2-D column or keep to know the subjects and steps")
        self.n_subjects, self.n_steps = np.broadcast_shapes(*shapes)
        if self.lengths is not None:
            self.n_steps = max(self.n_steps, int(self.lengths.max(initial=0)))
            self.mask = np.arange(self.n_steps)[None, :] < self.lengths[:, None]
        self.n = self.n_subjects * self.n_steps
        self.n_rows = self.n if self.mask is None else int(np.count_nonzero(self.mask))
        self._flat_mask = None if self.mask is None or self.n_rows == self.n else self.mask.reshape(-1)
        self._subjects: np.ndarray | None = None
        self._steps: np.ndarray | None = None

    def _read_keep(self, keep: np.ndarray) -> tuple[int, ...]:
        """Set :attr:`lengths` (a length per subject) or :attr:`mask` (kept cells) from ``keep``; its shape."""
        if np.ndim(keep) == 1:
            self.lengths = np.asarray(keep, dtype=np.int64)
            if self.lengths.size and self.lengths.min() < 0:
                raise InputError("kept lengths must be non-negative")
            return (len(self.lengths), 1)
        self.mask = np.asarray(keep, dtype=bool)
        return self.mask.shape

    def __call__(self, values: Column, text: bool = False) -> Any:
        """The table column of ``values`` (:data:`Column`), kept rows only."""
        if values is None:
            return pd.arrays.ArrowStringArray(pa.chunked_array([pa.nulls(self.n_rows, pa.large_string())]))
        if isinstance(values, pd.arrays.NumpyExtensionArray):
            values = values.to_numpy()
        if isinstance(values, np.ndarray) and values.ndim == 2:
            out = self._broadcast(values)
            if np.may_share_memory(out, values):
                out = out.copy()
        else:
            out = self._flat(values)
        if isinstance(out, np.ndarray) and (text or out.dtype.kind in "OUS"):
            return _string_array(out)
        return out

    def _flat(self, values: Any) -> Any:
        """The kept rows of a flat column of every row or of the kept rows only."""
        if len(values) == self.n_rows:
            return values
        if len(values) == self.n:
            return values if self._flat_mask is None else values[self._flat_mask]
        raise InputError(f"a flat column needs {self.n} rows (or the {self.n_rows} kept), got {len(values)}")

    def _broadcast(self, values: np.ndarray) -> np.ndarray:
        """The kept rows of a 2-D array broadcast to (n_subjects, n_steps): a value per subject repeated
        over its rows, a value per step taken at each row's step, or the whole array's kept cells."""
        n, t = self.n_subjects, self.n_steps
        if values.shape[1] == 1 and t != 1:
            if self._subjects is None:  # the subject of every kept row
                counts = t if self.mask is None else np.count_nonzero(self.mask, axis=1)
                self._subjects = np.repeat(np.arange(n), counts)
            return np.broadcast_to(values[:, 0], (n,)).take(self._subjects)
        if values.shape[0] == 1 and n != 1:
            return self._per_step(np.broadcast_to(values[0], (t,)))
        whole = np.broadcast_to(values, (n, t))
        return whole.reshape(-1) if self._flat_mask is None else whole[self.mask]

    def _per_step(self, step: np.ndarray) -> np.ndarray:
        """A value per step, taken at each kept row's step."""
        if self._flat_mask is None or self.mask is None:
            return np.tile(step, self.n_subjects)
        if self._steps is None:  # the step of every kept row
            self._steps = np.nonzero(self.mask)[1]
        return step.take(self._steps)

    def action(self, columns: Mapping[str, Column]) -> Any:
        """The ``action`` column: missing where ``valid`` is False (a pandas array: as given)."""
        action = columns["action"]
        if not isinstance(action, np.ndarray):
            return self(action)
        return masked_action(self(action), self(columns["valid"]).astype(bool, copy=False))

    def position(self) -> np.ndarray:
        """The step position of every kept row."""
        return self(np.arange(self.n_steps, dtype=np.int64)[None, :])


def _list_array(values: np.ndarray | pa.Array, offsets: np.ndarray, n_rows: int) -> pa.Array:
    """The Arrow list array of rows ``values[offsets[i]:offsets[i + 1]]`` (checked offsets):
    ``list<item>``, or ``large_list<item>`` where the values overflow its 32-bit offsets."""
    offsets = np.asarray(offsets)
    if offsets.shape != (n_rows + 1,):
        raise InputError(f"a list column needs {n_rows + 1} offsets, got shape {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != len(values) or (np.diff(offsets) < 0).any():
        raise InputError("list offsets must rise from 0 to the number of values")
    flat = values if isinstance(values, pa.Array) else pa.array(values)
    if len(values) < 2**31:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat, type=pa.list_(flat.type))
    return pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), flat, type=pa.large_list(flat.type))


def _coded_list_array(codes: np.ndarray, vocabulary: tuple[tuple[Any, ...], ...]) -> pa.Array:
    """The Arrow list array of ``vocabulary[codes]`` (numbers, or strings), its offsets and values
    gathered with whole-array steps (Arrow's ``take`` on a list array copies row by row)."""
    if codes.size and (codes.min() < 0 or codes.max() >= len(vocabulary)):
        raise InputError(f"list codes must lie in 0..{len(vocabulary) - 1}")
    sizes = np.array([len(v) for v in vocabulary], dtype=np.int64)
    flat = [x for v in vocabulary for x in v]
    words = any(isinstance(x, str) for x in flat)
    lengths = sizes.take(codes)
    offsets = list_offsets(lengths)
    starts = list_offsets(sizes)[:-1].take(codes)
    if words:
        values: np.ndarray | pa.Array = _take_strings(flat, segment_index(starts, lengths, offsets))
    else:
        values = np.array(flat, dtype=np.float64)[segment_index(starts, lengths, offsets)]
    return _list_array(values, offsets, len(codes))


def _take_strings(pool: list[str], index: np.ndarray) -> pa.Array:
    """The Arrow ``string`` array ``pool[index]``: its offsets and bytes gathered with whole-array
    steps from the pool's encoded bytes (no Python object, no per-value copy loop)."""
    encoded = [v.encode() for v in pool]
    sizes = np.array([len(e) for e in encoded], dtype=np.int64)
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    lengths = sizes.take(index)
    offsets = list_offsets(lengths)
    if offsets[-1] >= 2**31:
        return pa.array(pool, type=pa.large_string()).take(pa.array(index))
    taken = data[segment_index(list_offsets(sizes)[:-1].take(index), lengths, offsets)]
    return pa.StringArray.from_buffers(len(index), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(taken))


def list_cells(column: pd.Series | ExtensionArray | np.ndarray) -> list[list[Any]]:
    """The rows of a list column as Python lists, fast for the Arrow list columns tables hold
    (the values converted once, then sliced: no Arrow scalar per row); other columns (an object
    column, as pandas reads a list column back without its dtype) row by row."""
    array = column.array if isinstance(column, pd.Series) else column
    if isinstance(array, pd.arrays.ArrowExtensionArray) and (pa.types.is_list(array.dtype.pyarrow_dtype)
                                                             or pa.types.is_large_list(array.dtype.pyarrow_dtype)):
        out: list[list[Any]] = []
        for chunk in pa.chunked_array(array.__arrow_array__()).chunks:
            bounds = chunk.offsets.to_numpy()
            start = int(bounds[0]) if len(bounds) else 0
            flat = chunk.values.slice(start, int(bounds[-1]) - start).to_numpy(zero_copy_only=False).tolist()
            edges = (bounds - start).tolist()
            out.extend(flat[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True))
        return out
    return [list(v) for v in array]


def _string_array(flat: np.ndarray) -> Any:
    """A ``string`` column from a flat object/unicode array (None and NaN are missing).

    Every row is encoded on its own (tens of ns a row): give strings drawn from a small set of
    values with :func:`strings`.
    """
    if flat.dtype.kind != "O":
        return pd.array(flat, dtype="string")
    try:
        arrow = pa.array(flat, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # non-str objects: pandas converts them with str()
        return pd.array(flat, dtype="string")
    return pd.arrays.ArrowStringArray(pa.chunked_array([arrow]))


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
    return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), dtype=categorical_dtype((value,)), validate=False)


# ----------------------------------------------------------------------------- manifests
#: The packages whose exact versions determine a table, a fit or a plan: recorded in every
#: artefact that records versions (trial manifests, run.json, plan.json, study summaries, posterior.nc).
NUMERIC_PACKAGES = ("cogtestbed", "numpy", "scipy", "pandas", "numba", "pymc", "pytensor", "arviz",
                    "pyarrow", "gymnasium")
#: Recorded only where the process has imported them (torch is loaded by local-model runs alone).
LOADED_PACKAGES = ("torch", "transformers")


def package_versions(names: Iterable[str] = NUMERIC_PACKAGES) -> dict[str, str]:
    """Exact installed versions of ``names`` (and of :data:`LOADED_PACKAGES` the process has
    imported), with the Python version: the packages that determine a run's output."""
    import sys
    from importlib import metadata

    versions = {"python": platform.python_version()}
    loaded = [name for name in LOADED_PACKAGES if name in sys.modules]
    for name in (*names, *loaded):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def manifest_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + MANIFEST_SUFFIX)


def write_json_atomic(path: Path, obj: Any) -> None:
    from cogtestbed.no_data import json_safe  # NaN / inf as null: the file stays JSON

    atomic_write_bytes(
        path, lambda tmp: tmp.write_text(json.dumps(json_safe(obj), indent=2, sort_keys=True, default=str,
                                                    allow_nan=False))
    )


def write_files_together(writers: Mapping[Path, Any]) -> None:
    """Write several files as one unit: every ``writer(tmp)`` runs first; only when all succeeded
    are the temporary files renamed into place (a failure leaves the old files untouched; a full
    disk is :class:`~cogtestbed.outputs.WriteFailed` naming the file)."""
    tmps: dict[Path, Path] = {}
    path = Path()
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
    except OSError as exc:
        failed = write_failure(exc, path)
        if failed is None:
            raise
        raise failed from exc
    finally:
        for left in tmps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(left)


def read_trial_file(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a Parquet trial table written by :func:`~cogtestbed.registry.write_trials`, unchecked
    (:func:`cogtestbed.schema.validate_trials` checks it); a missing or non-Parquet file is one clear error."""
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no trial table at {p}")
    try:
        names = pq.read_schema(p).names
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise TrialTableError(f"{p} is not a Parquet trial table: {exc}") from exc
    refuse_duplicated_column_names(names, p)
    try:
        return read_table(p)
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise TrialTableError(f"{p} is not a Parquet trial table: {exc}") from exc


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    mp = manifest_path(path)
    if not mp.exists():
        return {}
    return dict(json.loads(mp.read_text()))
