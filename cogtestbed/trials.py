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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionArray

from cogtestbed.outputs import atomic_write_bytes, new_file_mode
from cogtestbed.schema import TrialTableError

try:  # pandas ≥ 3.0: a frame from finished blocks, without the constructor's inference and checks per column
    from pandas.api.internals import create_dataframe_from_blocks as _frame_from_blocks
except ImportError:  # pragma: no cover - pandas 2
    _frame_from_blocks = None

if TYPE_CHECKING:
    pass

PARAM_PREFIX = "param_"
MANIFEST_SUFFIX = ".manifest.json"
SCHEMA_VERSION = 1


def _is_arrow_list(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type))


def _arrow_lists_as_arrow_dtype(arrow_type: pa.DataType) -> pd.ArrowDtype | None:
    """``types_mapper`` of :func:`read_table`: a list column reads back as the ``pd.ArrowDtype`` a
    :class:`Lists` column has; every other column as pandas reads it by default."""
    return pd.ArrowDtype(arrow_type) if _is_arrow_list(arrow_type) else None


def table_to_parquet(frame: pd.DataFrame, where: str | os.PathLike[str] | io.BytesIO) -> None:
    """Write ``frame`` as Parquet that plain ``pandas.read_parquet`` reads back.

    pandas records an Arrow list column's dtype by a name it cannot parse again
    (``list<item: double>[pyarrow]``), so a table with :class:`Lists` columns written by
    ``DataFrame.to_parquet`` would not read back without cogtestbed.  Here those columns are
    recorded as the object columns of lists pandas has always written: plain pandas reads their
    cells as arrays, :func:`read_table` as ``pd.ArrowDtype`` lists again.
    """
    table = pa.Table.from_pandas(frame, preserve_index=False)
    lists = {field.name for field in table.schema if _is_arrow_list(field.type)}
    if lists:
        meta = json.loads(table.schema.metadata[b"pandas"])
        for column in meta["columns"]:
            if column["name"] in lists:
                column["numpy_type"], column["metadata"] = "object", None
        table = table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode()})
    import pyarrow.parquet as pq  # Parquet's file layer (and its TLS stack) only where a file is written or read

    pq.write_table(table, where)


def read_table(where: str | os.PathLike[str]) -> pd.DataFrame:
    """A Parquet table written by :func:`table_to_parquet`, list columns as ``pd.ArrowDtype``."""
    import pyarrow.parquet as pq

    return pq.read_table(where).to_pandas(types_mapper=_arrow_lists_as_arrow_dtype)


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
        """Codes of a (small) string array into its sorted distinct values, in the smallest
        unsigned integer type that holds them; index ``codes`` with trial-level indices to spread
        them over the table without touching strings."""
        values = np.asarray(values)
        if values.dtype.kind == "U" and values.dtype.itemsize == 4:  # single characters: by code point
            points, codes = np.unique(values.view(np.uint32), return_inverse=True)
            vocabulary = tuple(chr(p) if p else "" for p in points.tolist())
        else:
            distinct, codes = np.unique(values, return_inverse=True)
            vocabulary = tuple(str(v) for v in distinct)
        small = codes.astype(np.min_scalar_type(max(len(vocabulary) - 1, 0)), copy=False)
        return cls(small.reshape(values.shape), vocabulary)

    def take(self, *index: Any) -> CodedStrings:
        """The same vocabulary at ``codes[index]``."""
        return CodedStrings(self.codes[index], self.vocabulary)

    def where(self, condition: np.ndarray, other: CodedStrings) -> CodedStrings:
        """Elementwise ``self`` where ``condition`` else ``other`` (same vocabulary)."""
        if other.vocabulary != self.vocabulary:
            raise ValueError("CodedStrings.where needs one vocabulary")
        return CodedStrings(np.where(condition, self.codes, other.codes), self.vocabulary)


@dataclass(frozen=True)
class CodedCategories:
    """A text stimulus column given as integer ``codes`` into a ``vocabulary`` (None: missing; an
    entry may repeat), held in the table as a ``category`` column of the distinct present
    entries, sorted.

    One byte-sized code per row is all the table builds (a ``string`` column copies every row's
    bytes): for text drawn from a small set, e.g. the wording of a fixed question list.
    """

    codes: np.ndarray
    vocabulary: tuple[str | None, ...]

    def category_codes(self) -> tuple[np.ndarray, pd.CategoricalDtype]:
        """(the category code of every vocabulary entry, −1 where missing, in the smallest signed
        integer type pandas takes for them; the column's dtype)."""
        categories = sorted({v for v in self.vocabulary if v is not None})
        dtype = categorical_dtype(tuple(categories))
        where = {v: k for k, v in enumerate(categories)}
        lookup = np.array([-1 if v is None else where[v] for v in self.vocabulary], dtype=np.int64)
        return lookup.astype(np.min_scalar_type(-max(len(categories), 1))), dtype


@functools.lru_cache(maxsize=256)
def categorical_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The ``CategoricalDtype`` of ``categories`` (unordered), built once per process: building one
    costs ~0.3 ms (an index of the categories, checked for duplicates), a per-table fixed cost."""
    return pd.CategoricalDtype(list(categories))


@dataclass(frozen=True)
class CodedNumbers:
    """A numeric stimulus column given as integer ``codes`` into a table of ``values``: the column
    is ``values[codes]``, looked up after the kept rows are chosen (columns sharing one ``codes``
    array share that choice)."""

    codes: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class PerSubject:
    """A numeric stimulus column constant within each subject's session (a game's horizon, its
    arms' means): ``values`` (n_subjects,), spread over the subject's kept rows (no (n_subjects,
    n_trials) array is built)."""

    values: np.ndarray


@dataclass(frozen=True)
class FirstSteps:
    """The rows a table keeps, given by how many each subject keeps: subject i its first ``lengths[i]``
    of ``n_steps`` steps (sessions that end early).  The ``keep`` of :func:`finish_table` without a
    (n_subjects, n_steps) mask, which is built only where a column needs the kept rows' positions."""

    lengths: np.ndarray
    n_steps: int
    #: rows kept in all (the sum of the lengths) and the most one subject keeps, found with the check
    total: int = field(init=False, repr=False, compare=False)
    longest: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)
        if lengths.ndim != 1:
            raise ValueError(f"FirstSteps needs one length per subject, got shape {lengths.shape}")
        longest = int(lengths.max(initial=0))
        if lengths.size and (lengths.min() < 0 or longest > self.n_steps):
            raise ValueError(f"FirstSteps lengths must lie in 0..{self.n_steps}")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "total", int(lengths.sum()))
        object.__setattr__(self, "longest", longest)

    @property
    def shape(self) -> tuple[int, int]:
        """(n_subjects, n_steps), the shape of the mask it stands for."""
        return len(self.lengths), int(self.n_steps)

    def mask(self) -> np.ndarray:
        """The (n_subjects, n_steps) keep mask: step t of subject i is kept where t < ``lengths[i]``."""
        return np.arange(self.n_steps)[None, :] < self.lengths[:, None]


@dataclass(frozen=True)
class PerTrial:
    """A numeric stimulus column that depends on the trial position only (forced vs free trials):
    ``values`` (n_trials,), the same for every subject."""

    values: np.ndarray


@dataclass(frozen=True)
class Lists:
    """A list column (one list of numbers per row, of varying length), columnar: the rows' values
    concatenated in ``values`` (1-D) and row i's list at ``values[offsets[i]:offsets[i + 1]]``
    (``offsets``: n_subjects × n_trials + 1 non-decreasing integers from 0, rows in table order).

    The table holds an Arrow ``list`` column (``pd.ArrowDtype(pa.list_(...))``): built without a
    Python object per row; a cell reads back as a Python list.
    """

    values: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_padded(cls, padded: np.ndarray, lengths: np.ndarray) -> Lists:
        """Row i's list is ``padded[i, :lengths[i]]`` (``padded``: (rows, width), rows in table order)."""
        padded = np.asarray(padded)
        rows, width = padded.shape
        lengths = np.asarray(lengths, dtype=np.int64).reshape(rows)
        if ((lengths < 0) | (lengths > width)).any():
            raise ValueError(f"list lengths must lie in 0..{width}")
        offsets = list_offsets(lengths)
        return cls(padded.reshape(-1)[segment_index(np.arange(0, rows * width, width), lengths, offsets)], offsets)


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


@dataclass(frozen=True)
class CodedLists:
    """A list column whose rows take their list from a small ``vocabulary`` of lists by integer
    ``codes`` (n_subjects, n_trials): an item's outcome labels, its ground-truth distribution."""

    codes: np.ndarray
    vocabulary: tuple[tuple[Any, ...], ...]


#: A stimulus column: an (n_subjects, n_trials) array, :class:`CodedStrings`, :class:`CodedCategories`,
#: :class:`CodedNumbers`, :class:`PerSubject`, :class:`PerTrial`, :class:`Lists`, :class:`CodedLists`, a
#: flat pandas array, or None for a text column with nothing recorded (all missing, like ``raw_response``).
Column: TypeAlias = (np.ndarray | pd.Categorical | ExtensionArray | CodedStrings | CodedCategories | CodedNumbers
                     | PerSubject | PerTrial | Lists | CodedLists | None)


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
    keep: np.ndarray | FirstSteps | None = None,
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
    session never reached), or :class:`FirstSteps` only each subject's first rows (no mask is built);
    ``trial`` still counts positions within the session.  ``action_valid`` marks where ``action`` is
    present when that differs from ``valid`` (default ``valid``).
    ``after_action`` columns go between ``action`` and ``reward``; ``trailing`` columns go last.
    Stimulus values are (n_subjects, n_trials) arrays (object / unicode arrays become ``string``
    columns), :class:`CodedStrings`, flat pandas arrays of n_subjects × n_trials rows, or None
    (a text column with nothing recorded).  With ``keep`` given, a stimulus or outcome
    (``action``, ``reward``, ``valid``, ``action_valid``) may also be a flat numpy array of the kept
    rows only, in table order: a fresh array the table then holds as it is (built by one compiled
    pass where that is cheaper than filling whole (n_subjects, n_trials) arrays and dropping rows).
    A mask that keeps every row selects nothing (no row is copied through an index).
    """
    if keep is not None and not isinstance(keep, FirstSteps):
        keep = np.asarray(keep, dtype=bool)
    n_subjects, n_trials = np.shape(action) if keep is None else keep.shape
    n = n_subjects * n_trials
    col = _ColumnMaker(n_subjects, n_trials, keep)
    param_columns = {PARAM_PREFIX + name: PerSubject(_subject_values(v, n_subjects))
                     for name, v in (params or {}).items()}
    ids = {"subject": PerSubject(np.arange(subject_offset, subject_offset + n_subjects, dtype=np.int64))}
    if session is None:  # every row session 0: spread in the subject ids' pass
        ids["session"] = PerSubject(np.zeros(n_subjects, dtype=np.int64))
    col.spread_per_subject({**ids, **stimulus, **(after_action or {}), **param_columns, **(trailing or {})})
    cols: dict[str, Any] = {
        "experiment": _constant_category(experiment, col.n_rows),
        "subject": col.spread_column("subject"),
        "session": col.spread_column("session") if session is None else col.index(session),
        "trial": col.index(trial) if trial is not None else col(PerTrial(np.arange(n_trials, dtype=np.int64))),
    }
    for name, values in stimulus.items():
        cols[name] = col.stimulus(name, values)
    flat_valid = col.outcome(valid, bool)
    present = flat_valid if action_valid is None else col.outcome(action_valid, bool)
    if col.is_kept(action):
        cols["action"] = _masked_action(np.asarray(action), present, fresh=True)
    else:  # _masked_action makes the column a fresh array
        flat_action = np.asarray(action).reshape(n)
        cols["action"] = _masked_action(flat_action if col.rows is None else flat_action.take(col.rows), present,
                                        fresh=col.rows is not None)
    for name, values in (after_action or {}).items():
        cols[name] = col.stimulus(name, values)
    cols["reward"] = col.outcome(reward, np.float64)
    cols["valid"] = flat_valid
    cols["raw_response"] = col.text(raw_response)
    cols["parse_error"] = col.text(parse_error)
    cols["agent"] = _constant_category(agent, col.n_rows)
    for name in param_columns:
        cols[name] = col.spread_column(name)
    for name, values in (trailing or {}).items():
        cols[name] = col.stimulus(name, values)
    return table_frame(cols, col.n_rows)


def table_frame(columns: Mapping[str, Any], n_rows: int) -> pd.DataFrame:
    """``pd.DataFrame(columns, copy=False)`` of finished columns (fresh arrays the table owns: no copy,
    no block consolidation).  Where every column is a numeric or boolean numpy array or a pandas
    extension array of ``n_rows`` rows, the frame is assembled from one block per column (pandas ≥ 3.0's
    ``create_dataframe_from_blocks``): the same frame, without the constructor's type inference and
    checks per column."""
    blocks = [_column_block(values, n_rows) for values in columns.values()]
    if _frame_from_blocks is None or any(block is None for block in blocks):
        return pd.DataFrame(columns, copy=False)
    placed = [(block, np.array([i])) for i, block in enumerate(blocks)]
    return _frame_from_blocks(placed, index=pd.RangeIndex(n_rows), columns=_column_index(tuple(columns)))


@functools.lru_cache(maxsize=128)
def _column_index(names: tuple[str, ...]) -> pd.Index:
    """The (immutable) column index of a table with these column names, built once per set of names
    (inferring the index's string dtype costs more than assembling the frame's blocks)."""
    return pd.Index(list(names))


def _column_block(values: Any, n_rows: int) -> Any:
    """The block a column of ``n_rows`` rows is held in (a (1, n_rows) numpy view, or the extension array
    itself); None where the column needs the constructor (other dtypes, lengths or kinds)."""
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        ok = values.ndim == 1 and values.dtype.kind in "biuf" and values.shape[0] == n_rows
        return values.reshape(1, n_rows) if ok else None
    return values if isinstance(values, ExtensionArray) and len(values) == n_rows else None


def _subject_values(values: Any, n_subjects: int) -> np.ndarray:
    """A parameter's float64 values, one per subject (a single value seen ``n_subjects`` times, not copied)."""
    array = np.asarray(values, dtype=np.float64)
    return array if array.shape == (n_subjects,) else np.broadcast_to(array, (n_subjects,))


def _kept_counts(keep: np.ndarray) -> np.ndarray:
    """Kept rows per subject of a (n_subjects, n_trials) mask."""
    return np.count_nonzero(keep, axis=1).astype(np.int64)


class _ColumnMaker:
    """Flattens (n_subjects, n_trials) arrays into fresh, row-filtered table columns."""

    def __init__(self, n_subjects: int, n_trials: int, keep: np.ndarray | FirstSteps | None) -> None:
        """``keep``: the (n_subjects, n_trials) mask of the rows kept, or each subject's first rows
        (:class:`FirstSteps`; None: every row)."""
        self.n_subjects, self.n_trials = n_subjects, n_trials
        self.n = n_subjects * n_trials
        #: rows each subject keeps, and (rows kept, the most one subject keeps) (None: every row)
        self.lengths: np.ndarray | None = None
        self._sizes: tuple[int, int] | None = None
        if isinstance(keep, FirstSteps):
            self.lengths, self._sizes = keep.lengths, (keep.total, keep.longest)
        elif keep is not None:
            keep = keep.reshape(n_subjects, n_trials)
            self.lengths = _kept_counts(keep)
            self._sizes = (int(self.lengths.sum()), int(self.lengths.max(initial=0)))
        #: the kept rows as a mask, built from :class:`FirstSteps` only where a column needs it (:meth:`_kept_rows`)
        self._keep = keep
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.n_rows = self.n if self._sizes is None else self._sizes[0]
        #: whether a keep mask was given: flat arrays of the kept rows are then the table's own (:meth:`is_kept`)
        self._selects = keep is not None
        if self.n_rows == self.n:
            self._keep = None  # a mask that keeps every row selects nothing
        self._codes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._spread: dict[str, np.ndarray] = {}
        self._offsets: dict[tuple[int, int], pa.Buffer] = {}
        self._nulls: pa.Array | None = None

    def _kept_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(flat index, subject, position) of the kept rows, found in one pass when first needed
        (a table whose columns all come as per-subject values or kept rows never needs them)."""
        if self._keep is None:
            return None
        if self._kept is None:
            mask = self._keep.mask() if isinstance(self._keep, FirstSteps) else self._keep
            rows = np.flatnonzero(mask)
            subject, position = np.divmod(rows, self.n_trials)
            self._kept = rows, subject, position
        return self._kept

    @property
    def rows(self) -> np.ndarray | None:
        """The flat (n_subjects × n_trials) index of every kept row (None: every row is kept)."""
        kept = self._kept_rows()
        return None if kept is None else kept[0]

    def codes(self, codes: np.ndarray) -> np.ndarray:
        """The kept rows of a codes array (its own integer type, flat; not copied: codes only index),
        chosen once per array (coded columns often share one)."""
        hit = self._codes.get(id(codes))
        if hit is None or hit[0] is not codes:
            flat = np.asarray(codes).reshape(self.n)
            if flat.dtype.kind not in "iu":
                flat = flat.astype(np.int64)
            hit = (codes, flat if self.rows is None else flat.take(self.rows))
            self._codes[id(codes)] = hit
        return hit[1]

    def index(self, values: np.ndarray | ExtensionArray) -> Any:
        """An int64 id column (``session``, ``trial``) from (n_subjects, n_trials) values or a
        fresh flat column (:func:`fresh_column`)."""
        if isinstance(values, ExtensionArray):
            return self(values)
        return self.numeric(np.asarray(values, dtype=np.int64).reshape(self.n))

    def spread_per_subject(self, columns: Mapping[str, Column]) -> None:
        """Spread the :class:`PerSubject` columns among ``columns`` over the kept rows, those of a
        dtype; :meth:`spread_column` hands them out."""
        by_dtype: dict[np.dtype[Any], dict[str, np.ndarray]] = {}
        for name, values in columns.items():
            if isinstance(values, PerSubject):
                per = np.asarray(values.values)
                if per.shape != (self.n_subjects,):
                    raise ValueError(f"a per-subject column needs {self.n_subjects} values, got shape {per.shape}")
                by_dtype.setdefault(per.dtype, {})[name] = per
        if not by_dtype:
            return
        # a subject's kept rows are consecutive: spread by how many it keeps
        lengths = np.full(self.n_subjects, self.n_trials, dtype=np.int64) if self.lengths is None else self.lengths
        for group in by_dtype.values():
            self._spread.update((name, np.repeat(values, lengths)) for name, values in group.items())

    def spread_column(self, name: str) -> np.ndarray:
        """A :class:`PerSubject` column spread by :meth:`spread_per_subject` (each handed out once)."""
        return self._spread.pop(name)

    def stimulus(self, name: str, values: Column) -> Any:
        """Column ``name`` of the table: a :class:`PerSubject` one as :meth:`spread_per_subject`
        spread it, any other as :meth:`__call__` makes it."""
        return self.spread_column(name) if isinstance(values, PerSubject) else self(values)

    def is_kept(self, values: Any) -> bool:
        """Whether ``values`` is a flat numpy or pandas array of the kept rows only (with a ``keep``
        mask given, even one that keeps every row): a fresh array built for the table, handed over as it is."""
        return (self._selects and isinstance(values, (np.ndarray, ExtensionArray))
                and values.ndim == 1 and len(values) == self.n_rows)

    def outcome(self, values: np.ndarray, dtype: Any) -> np.ndarray:
        """An outcome column (``valid``, ``reward``) from (n_subjects, n_trials) values or the kept
        rows' (:meth:`is_kept`)."""
        if self.is_kept(values):
            return values.astype(dtype, copy=False)
        return self.numeric(np.asarray(values, dtype=dtype).reshape(self.n))

    def numeric(self, flat: np.ndarray) -> np.ndarray:
        """The kept rows of a flat array, as a fresh array the table may own."""
        if self.rows is not None:
            return flat.take(self.rows)
        return flat if flat.flags.owndata and flat.base is None else flat.copy()

    def position_rows(self) -> np.ndarray | None:
        """The trial position of every kept row (None: every row is kept)."""
        kept = self._kept_rows()
        return None if kept is None else kept[2]

    def __call__(self, values: Column) -> Any:
        """The table column of stimulus ``values`` (:data:`Column`), kept rows only; :class:`PerSubject`
        columns are spread by :meth:`spread_per_subject` instead (:meth:`stimulus`)."""
        if values is None:
            return self.text(None)
        if isinstance(values, PerTrial):
            per = np.asarray(values.values)
            if per.shape != (self.n_trials,):
                raise ValueError(f"a per-trial column needs {self.n_trials} values, got shape {per.shape}")
            where = self.position_rows()
            return np.tile(per, self.n_subjects) if where is None else per.take(where)
        if isinstance(values, CodedStrings):
            return _coded_string_array(self.codes(values.codes), values.vocabulary, self._offsets)
        if isinstance(values, Lists):
            return self.lists(_list_array(np.asarray(values.values), np.asarray(values.offsets), self.n))
        if isinstance(values, CodedLists):
            codes = self.codes(values.codes)
            return pd.arrays.ArrowExtensionArray(_coded_list_array(codes, values.vocabulary))
        if isinstance(values, CodedCategories):
            lookup, dtype = values.category_codes()
            return pd.Categorical.from_codes(lookup.take(self.codes(values.codes)), dtype=dtype, validate=False)
        if isinstance(values, CodedNumbers):
            return np.asarray(values.values).take(self.codes(values.codes))
        if isinstance(values, (pd.Categorical, ExtensionArray)):
            if self.is_kept(values):
                return values
            if len(values) != self.n:
                raise ValueError(f"a flat stimulus column needs {self.n} rows, got {len(values)}")
            return values if self.rows is None else values.take(self.rows)
        given = np.asarray(values)
        if self.is_kept(given):
            return _string_array(given) if given.dtype.kind in "OUS" else given
        flat = given.reshape(self.n)
        if flat.dtype.kind in "OUS":
            return _string_array(self.numeric(flat))
        if self.rows is None and not np.may_share_memory(flat, given):
            return flat  # reshaping a strided view already copied it: the copy is the table's own
        return self.numeric(flat)

    def lists(self, array: pa.Array) -> Any:
        """The kept rows of an Arrow list array, as a pandas column."""
        kept = array if self.rows is None else array.take(pa.array(self.rows))
        return pd.arrays.ArrowExtensionArray(kept)

    def text(self, values: np.ndarray | None) -> Any:
        """A nullable string column; an absent one is all-missing (built without a Python loop; the
        immutable Arrow array of nulls is made once per table and wrapped anew for each column)."""
        if values is None:
            if self._nulls is None:
                self._nulls = null_strings(self.n_rows)
            return pd.arrays.ArrowStringArray(pa.chunked_array([self._nulls]))
        return _string_array(self.numeric(np.asarray(values, dtype=object).reshape(self.n)))


def null_strings(n: int) -> pa.Array:
    """The Arrow ``large_string`` array of ``n`` missing values."""
    return pa.nulls(n, pa.large_string())


def _list_array(values: np.ndarray | pa.Array, offsets: np.ndarray, n_rows: int) -> pa.Array:
    """The Arrow list array of rows ``values[offsets[i]:offsets[i + 1]]`` (checked offsets):
    ``list<item>``, or ``large_list<item>`` where the values overflow its 32-bit offsets."""
    offsets = np.asarray(offsets)
    if offsets.shape != (n_rows + 1,):
        raise ValueError(f"a list column needs {n_rows + 1} offsets, got shape {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != len(values) or (np.diff(offsets) < 0).any():
        raise ValueError("list offsets must rise from 0 to the number of values")
    flat = values if isinstance(values, pa.Array) else pa.array(values)
    if len(values) < 2**31:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat, type=pa.list_(flat.type))
    return pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), flat, type=pa.large_list(flat.type))


def _coded_list_array(codes: np.ndarray, vocabulary: tuple[tuple[Any, ...], ...]) -> pa.Array:
    """The Arrow list array of ``vocabulary[codes]`` (numbers, or strings), its offsets and values
    gathered with whole-array steps (Arrow's ``take`` on a list array copies row by row)."""
    if codes.size and (codes.min() < 0 or codes.max() >= len(vocabulary)):
        raise ValueError(f"list codes must lie in 0..{len(vocabulary) - 1}")
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


def _coded_string_array(codes: np.ndarray, vocabulary: tuple[str | None, ...],
                        offsets: dict[tuple[int, int], pa.Buffer] | None = None) -> Any:
    """The ``string`` column ``vocabulary[codes]``; ``offsets`` caches the offsets buffers of
    fixed-width columns (equal for every column of that width and length, so built once)."""
    encoded = [None if v is None else v.encode() for v in vocabulary]
    widths = {len(e) for e in encoded if e is not None}
    if len(widths) == 1:
        if codes.size and (codes.min() < 0 or codes.max() >= len(vocabulary)):
            raise ValueError(f"string codes must lie in 0..{len(vocabulary) - 1}")
        taken = _fixed_width_strings(codes, encoded, widths.pop(), {} if offsets is None else offsets)
    else:  # varying widths: Arrow's take of the vocabulary
        if codes.size and (codes.min() < 0 or codes.max() >= len(vocabulary)):
            raise ValueError(f"string codes must lie in 0..{len(vocabulary) - 1}")
        taken = pa.array(list(vocabulary), type=pa.large_string()).take(pa.array(np.asarray(codes).reshape(-1)))
    return pd.arrays.ArrowStringArray(pa.chunked_array([taken]))


def _fixed_width_strings(codes: np.ndarray, encoded: list[bytes | None], width: int,
                         offsets_cache: dict[tuple[int, int], pa.Buffer]) -> pa.Array:
    """The Arrow ``large_string`` array of ``vocabulary[codes]`` when every present value has
    ``width`` bytes: its buffers (offsets, bytes, validity) built with whole-array numpy steps,
    equal to Arrow's ``take`` of the vocabulary (a missing value adds no bytes)."""
    n = len(codes)
    table = np.frombuffer(b"".join(e if e is not None else b"\0" * width for e in encoded),
                          dtype=np.uint8).reshape(len(encoded), width)
    if all(e is not None for e in encoded):
        offsets = offsets_cache.get((n, width))
        if offsets is None:
            offsets = offsets_cache[(n, width)] = pa.py_buffer(np.arange(0, width * (n + 1), width, dtype=np.int64))
        data = table.reshape(-1).take(codes) if width == 1 else table[codes]
        return pa.LargeStringArray.from_buffers(n, offsets, pa.py_buffer(data), None, null_count=0)
    present = np.array([e is not None for e in encoded])[codes]
    counts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(present, out=counts[1:])
    counts *= width
    data = table[codes[present]]
    missing = int(n - np.count_nonzero(present))
    validity = pa.py_buffer(np.packbits(present, bitorder="little")) if missing else None
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(counts), pa.py_buffer(np.ascontiguousarray(data)),
                                            validity, null_count=missing)


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
def package_versions(names: Iterable[str] = ("cogtestbed", "numpy", "numba", "pandas", "scipy",
                                             "pymc", "gymnasium", "pyarrow")) -> dict[str, str]:
    """Installed versions of the packages that determine a run's output."""
    from importlib import metadata

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


def read_trial_file(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a Parquet trial table written by :func:`~cogtestbed.registry.write_trials`, unchecked
    (:func:`cogtestbed.schema.validate_trials` checks it); a missing or non-Parquet file is one clear error."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no trial table at {p}")
    try:
        return read_table(p)
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise TrialTableError(f"{p} is not a Parquet trial table: {exc}") from exc


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    mp = manifest_path(path)
    if not mp.exists():
        return {}
    return dict(json.loads(mp.read_text()))
