"""Declared trial-table schemas, checked before anything is computed (pandera reports failures).

Every environment declares once what its trial table may hold (:class:`TrialSchema`, the
environment's ``table_schema``): the values a valid ``action`` may take, the range of ``reward``,
the stimulus columns the metrics and models read, and conditions across columns
(:class:`RowRule`, e.g. a balloon's pumps never exceed its maximum).  :func:`check_table` turns
the declaration plus the columns every trial table has (:mod:`cogtestbed.trials`) into a
:class:`pandera.pandas.DataFrameSchema` and validates a table against it; the first problem is
reported in one line naming the file, column, row (with its subject and trial) and value.

The same check functions are first run directly on the table (:func:`conforms`: vectorised, with
pandera's semantics of nullable columns and ignored missing values); only a table that fails one
is handed to pandera, whose failure cases build the message.  A valid table therefore never
imports pandera (it costs a quarter of a second of start-up, more than the fits of a file).

Invalid answers are not errors: a row with ``valid == False`` has no action and is counted as
invalid by the metrics.  A row with ``valid == True`` must have an action (a missing one there
means the table was edited or built wrongly), and values out of the declared ranges are errors
wherever they appear.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from cogtestbed.errors import DataError, quoted

if TYPE_CHECKING:  # imported when a table fails a check (the report), not to validate one
    import pandera.pandas as pa

#: Columns every trial table starts with, in this order.
ID_COLUMNS = ("experiment", "subject", "session", "trial")
#: Outcome columns every trial table has, after the stimulus fields.
OUTCOME_COLUMNS = ("action", "reward", "valid", "raw_response", "parse_error", "agent")


class TrialTableError(DataError):
    """A table does not follow the trial-table schema."""


#: Name of the check that a valid answer carries an action.
ANSWERED = "a valid answer has an action"

ColumnKind = Literal["int", "float", "number", "bool", "text", "list"]

#: Which failure the one-line message names first (the most basic; the others are counted).
_PRIORITY = {"experiment": 0, "column_in_dataframe": 1, "kind": 2, "not_nullable": 3, "values": 4, ANSWERED: 5}


@dataclass(frozen=True)
class Values:
    """What one column may hold.

    ``kind``: ``int`` (NumPy or nullable integers), ``float``, ``number`` (either), ``bool`` or
    ``text`` (strings, categories) or ``list`` (a list per row: an Arrow list column, or objects;
    its elements are checked by a :func:`list_rule`); ``low`` / ``high`` bound numbers (inclusive); ``allowed``
    lists the only values permitted; ``integral`` requires whole numbers in a float column;
    ``nullable``: missing values allowed; ``required``: the column must be present.  Numbers must
    be finite wherever present.
    """

    kind: ColumnKind
    low: float | None = None
    high: float | None = None
    allowed: tuple[Any, ...] | None = None
    integral: bool = False
    nullable: bool = True
    required: bool = True

    def describe(self) -> str:
        """The permitted values in words (used in error messages)."""
        if self.allowed is not None:
            return "one of " + ", ".join(_fmt(v) for v in self.allowed)
        what = "a whole number" if self.integral or self.kind == "int" else "a number"
        if self.low is not None and self.high is not None:
            return f"{what} in [{_fmt(self.low)}, {_fmt(self.high)}]"
        if self.low is not None:
            return f"{what} >= {_fmt(self.low)}"
        if self.high is not None:
            return f"{what} <= {_fmt(self.high)}"
        return f"a finite {what.removeprefix('a ')}"

    def tests(self) -> list[tuple[str, Callable[[pd.Series], Any]]]:
        """``(name, test)`` of this declaration, kind first, then values; a test maps the
        column's present (non-missing) values to a bool or a boolean Series."""
        out: list[tuple[str, Callable[[pd.Series], Any]]] = [("kind", _KIND_TESTS[self.kind])]
        if self.allowed is not None:
            allowed = list(self.allowed)
            out.append(("values", lambda s: s.isin(allowed)))
        elif self.kind in ("int", "float", "number"):
            low = -math.inf if self.low is None else self.low
            high = math.inf if self.high is None else self.high
            integral = self.integral

            def _within(s: pd.Series) -> pd.Series:
                x = s.astype("float64")
                ok = np.isfinite(x) & (x >= low) & (x <= high)
                return ok & (np.floor(x) == x) if integral else ok

            out.append(("values", _within))
        return out

    def checks(self) -> list[pa.Check]:
        """The pandera checks of this declaration (:meth:`tests`; missing values ignored)."""
        import pandera.pandas as pa

        return [pa.Check(test, element_wise=False, name=name) for name, test in self.tests()]

    def column(self) -> pa.Column:
        """The pandera column of this declaration."""
        import pandera.pandas as pa

        return pa.Column(None, self.checks(), nullable=self.nullable, required=self.required)

    def conforms(self, s: pd.Series) -> bool:
        """Whether column ``s`` passes :meth:`column`'s checks, as pandera decides: missing values
        fail only a non-nullable column and are dropped before the tests."""
        missing = s.isna()
        if missing.any():
            if not self.nullable:
                return False
            s = s[~missing.to_numpy()]
        return all(_passed(test(s)) for _, test in self.tests())


def _passed(result: Any) -> bool:
    """A test's result (a bool or a boolean Series) holds everywhere."""
    return bool(np.all(np.asarray(result, dtype=bool)))


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return quoted(v)


def _is_bool(s: pd.Series) -> bool:
    return ptypes.is_bool_dtype(s.dtype)


def _is_int(s: pd.Series) -> bool:
    return ptypes.is_integer_dtype(s.dtype) and not _is_bool(s)


def _is_float(s: pd.Series) -> bool:
    return ptypes.is_float_dtype(s.dtype)


def _is_text(s: pd.Series) -> bool:
    return (ptypes.is_string_dtype(s.dtype) or isinstance(s.dtype, pd.CategoricalDtype)
            or ptypes.is_object_dtype(s.dtype))


_KIND_TESTS: dict[str, Callable[[pd.Series], bool]] = {
    "int": _is_int,
    "float": _is_float,
    "number": lambda s: _is_int(s) or _is_float(s),
    "bool": _is_bool,
    "text": _is_text,
    "list": lambda s: isinstance(s.dtype, pd.ArrowDtype) or ptypes.is_object_dtype(s.dtype),
}


@dataclass(frozen=True)
class RowRule:
    """A condition across columns that every row (``only_valid``: every valid row) satisfies.

    ``holds(table)`` returns a boolean array, True where a row is fine; ``columns`` are the
    columns the error message quotes.
    """

    description: str
    columns: tuple[str, ...]
    holds: Callable[[pd.DataFrame], Any]
    only_valid: bool = True


#: Columns every trial table has besides ``experiment``, ``action`` and ``reward``
#: (:data:`ID_COLUMNS`, :data:`OUTCOME_COLUMNS`).
COMMON_COLUMNS: dict[str, Values] = {
    "subject": Values("number", nullable=False),
    "session": Values("int", low=0, nullable=False),
    "trial": Values("int", low=0, nullable=False),
    "valid": Values("bool", nullable=False),
    "raw_response": Values("text"),
    "parse_error": Values("text"),
    "agent": Values("text"),
    #: The prompt form of the row (:mod:`cogtestbed.environments.forms`); only where forms were assigned.
    "form": Values("int", low=0, nullable=False, required=False),
}

#: The rule of tasks that pay every valid trial: its reward is recorded.
REWARDED = RowRule("a valid trial has a reward", ("reward",), lambda t: t["reward"].notna())


@dataclass(frozen=True)
class TrialSchema:
    """What an experiment's trial table holds besides the columns every table has.

    ``action``: the values of a valid answer; ``reward``: the values of the reward wherever it
    is recorded; ``stimulus``: declared stimulus columns (others may be present and are not
    checked); ``rules``: conditions across columns; ``answered``: which valid rows must carry
    an action (default all; a summary row of published scores has none).
    """

    action: Values
    reward: Values
    stimulus: Mapping[str, Values] = field(default_factory=dict)
    rules: tuple[RowRule, ...] = ()
    answered: Callable[[pd.DataFrame], Any] | None = None

    def pandera(self, experiment: str) -> pa.DataFrameSchema:
        """The pandera schema of this experiment's tables (common columns included)."""
        import pandera.pandas as pa

        columns = {
            "experiment": pa.Column(None, [pa.Check(_is_text, element_wise=False, name="kind"),
                                           pa.Check.isin([experiment], name="experiment")], nullable=False),
            **{name: values.column() for name, values in self.declared().items()},
        }
        checks = [pa.Check(test, name=name, ignore_na=False) for name, test in self.frame_tests()]
        return pa.DataFrameSchema(columns, checks=checks, strict=False, name=experiment)

    def frame_tests(self) -> list[tuple[str, Callable[[pd.DataFrame], pd.Series]]]:
        """``(name, test)`` of the conditions across columns: a valid answer has an action, then the rules."""
        return [(ANSWERED, self._answered_check()),
                *((f"rule: {rule.description}", _rule_check(rule)) for rule in self.rules)]

    def conforms(self, df: pd.DataFrame, experiment: str) -> bool:
        """Whether ``df`` passes every check of :meth:`pandera` (without importing pandera)."""
        if "experiment" not in df.columns:
            return False
        names = df["experiment"]
        if names.isna().any() or not _is_text(names) or not _passed(names.isin([experiment])):
            return False
        for name, values in self.declared().items():
            if name not in df.columns:
                if values.required:
                    return False
            elif not values.conforms(df[name]):
                return False
        return all(_passed(test(df)) for _, test in self.frame_tests())

    def declared(self) -> dict[str, Values]:
        """Every declared column: the common ones, ``action``, ``reward`` and the stimulus."""
        return {**COMMON_COLUMNS, "action": self.action, "reward": self.reward, **self.stimulus}

    def _answered_check(self) -> Callable[[pd.DataFrame], Any]:
        answered = self.answered

        def _has_action(df: pd.DataFrame) -> pd.Series:
            need = df["valid"].to_numpy(dtype=bool)
            if answered is not None:
                need = need & np.asarray(answered(df), dtype=bool)
            return pd.Series(~(need & df["action"].isna().to_numpy()), index=df.index)

        return _has_action


def _rule_check(rule: RowRule) -> Callable[[pd.DataFrame], Any]:
    def _rule_holds(df: pd.DataFrame) -> pd.Series:
        ok = np.asarray(rule.holds(df), dtype=bool)
        return pd.Series(ok | ~df["valid"].to_numpy(dtype=bool) if rule.only_valid else ok, index=df.index)

    return _rule_holds


#: Built pandera schemas by (declaration, experiment); the declaration is kept so its id stays unique.
_CACHE: dict[tuple[int, str], tuple[TrialSchema, pa.DataFrameSchema]] = {}


def check_table(table: pd.DataFrame, schema: TrialSchema, experiment: str, source: str | None = None,
                file_columns: Mapping[str, str] | None = None) -> None:
    """Validate ``table`` against ``schema`` for ``experiment``; raise ``TrialTableError`` naming
    the first problem (file, column, row, value) and how many more there are.  ``file_columns``
    maps table columns to what the source file calls them (named alongside in the message)."""
    df = table.reset_index(drop=True)
    try:
        if schema.conforms(df, experiment):
            return
    except Exception:  # noqa: BLE001 - a test that cannot even run is a failure pandera reports
        pass
    import pandera.pandas as pa

    key = (id(schema), experiment)
    if key not in _CACHE:
        _CACHE[key] = (schema, schema.pandera(experiment))
    try:
        _CACHE[key][1].validate(df, lazy=True, inplace=True)
    except pa.errors.SchemaErrors as exc:
        raise TrialTableError(describe_failures(exc.failure_cases, df, schema, experiment, source,
                                                file_columns or {})) from None


def describe_failures(cases: pd.DataFrame, df: pd.DataFrame, schema: TrialSchema, experiment: str,
                      source: str | None, file_columns: Mapping[str, str]) -> str:
    """One line for pandera's failure cases: the most basic problem first."""
    where = f"{source}: " if source else ""

    def name(col: Any) -> str:
        return f"{col!r} (file column {file_columns[col]!r})" if col in file_columns else repr(col)

    cases = cases.assign(_p=[_PRIORITY.get(str(c), 9) for c in cases["check"]]).sort_values("_p", kind="stable")
    first = cases.iloc[0]
    # a rule failing on one row is reported once per column by pandera: count (check, column, row) once
    more = len(cases.assign(_c=cases["column"].where(cases["schema_context"] == "Column"))
               .drop_duplicates(["check", "_c", "index"])) - 1
    tail = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
    check, column = str(first["check"]), first["column"]
    if check == "experiment":
        found = ", ".join(sorted(map(str, df["experiment"].astype(str).unique())))
        return f"{where}holds trials of experiment {found}, not {experiment}"
    if check == "column_in_dataframe":
        return f"{where}trial table of {experiment} lacks column {first['failure_case']!r}{tail}"
    if check == "kind":
        need = _kind_of(schema, column)
        return f"{where}column {name(column)} has dtype {df[column].dtype}, {experiment} needs {need}{tail}"
    row = first["index"]
    ident = _row_ident(df, row, file_columns)
    if check.startswith("rule: ") or check == ANSWERED:
        cols = _rule_columns(schema, check)
        values = ", ".join(f"{c}={_fmt(_scalar(df.at[row, c]))}" for c in cols if c in df.columns)
        return f"{where}row {row} ({ident}): {check.removeprefix('rule: ')} fails ({values}){tail}"
    declared = _declared(schema, str(column))
    want = "a value" if check == "not_nullable" else (declared.describe() if declared else str(check))
    return (f"{where}column {name(column)}, row {row} ({ident}): value {_fmt(_scalar(df.at[row, column]))} "
            f"is not {want}{tail}")


def _scalar(v: Any) -> Any:
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in np.asarray(v).tolist()) + "]"
    if v is pd.NA or v is None or (isinstance(v, float) and math.isnan(v)):
        return "missing"
    return v.item() if isinstance(v, np.generic) else v


def _row_ident(df: pd.DataFrame, row: Any, file_columns: Mapping[str, str]) -> str:
    parts = [f"{file_columns.get(c, c)} {_fmt(_scalar(df.at[row, c]))}" for c in ("subject", "trial")
             if c in df.columns]
    return ", ".join(parts)


def _declared(schema: TrialSchema, column: str) -> Values | None:
    return schema.declared().get(column)


def _kind_of(schema: TrialSchema, column: Any) -> str:
    declared = _declared(schema, str(column))
    return f"{declared.kind} values" if declared else "another dtype"


def _rule_columns(schema: TrialSchema, check: str) -> tuple[str, ...]:
    for rule in schema.rules:
        if check == f"rule: {rule.description}":
            return rule.columns
    return ("valid", "action")


# -- list columns and rules across rows -----------------------------------------------------------

#: Tolerance of "sums to 1" for a list column that holds an exact distribution (a float64
#: renormalisation is exact to ~1e-15; a table written with rounded probabilities passes at 1e-6).
SUM_TOLERANCE = 1e-6


def list_parts(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A list column as ``(lengths, values)``: each row's length (a missing cell has length 0)
    and the rows' values concatenated as float64 (a value that is not a number reads NaN)."""
    if isinstance(column.dtype, pd.ArrowDtype):  # the table's own list columns: no Python object per value
        import pyarrow as pya
        import pyarrow.compute as pc

        chunks = pya.chunked_array(column.array.__arrow_array__()).chunks
        lengths = np.concatenate([pc.fill_null(c.value_lengths(), 0).to_numpy(zero_copy_only=False)
                                  for c in chunks] or [np.zeros(0)]).astype(np.int64)
        values = np.concatenate([pc.cast(c.flatten(), pya.float64(), safe=False).to_numpy(zero_copy_only=False)
                                 for c in chunks] or [np.zeros(0)]).astype(np.float64)
        return lengths, values
    # an object column (pandas' reading without the list dtype): None / NaN cells are missing
    cells = [None if v is None or (isinstance(v, float) and math.isnan(v)) else list(np.ravel(v))
             for v in column]
    lengths = np.fromiter((0 if c is None else len(c) for c in cells), dtype=np.int64, count=len(cells))
    flat = [x for c in cells if c is not None for x in c]
    values = pd.to_numeric(pd.Series(flat, dtype=object), errors="coerce").to_numpy(dtype=np.float64,
                                                                                    na_value=np.nan)
    return lengths, values


def _per_row(bad: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each row holds any ``bad`` element (``bad``: one flag per concatenated value)."""
    rows = np.repeat(np.arange(len(lengths)), lengths)
    return np.bincount(rows, weights=bad.astype(np.float64), minlength=len(lengths)) > 0


def list_rule(column: str, *, length: str | None = None, low: float | None = None, high: float | None = None,
              total: float | None = None, tolerance: float = SUM_TOLERANCE, only_valid: bool = True,
              what: str = "numbers") -> RowRule:
    """A :class:`RowRule` on a list column: every row's list has ``length`` (a column naming each
    row's outcome-set size) elements, each a number in [``low``, ``high``] (never NaN; infinite
    only where a bound allows it: ``low=None`` admits −inf), summing to ``total`` within
    ``tolerance`` where given (an exact distribution).  ``only_valid``: checked on valid rows only
    (an invalid answer records no distribution)."""
    parts = [f"{column} lists {what}"]
    if length is not None:
        parts.append(f"of length {length}")
    if low is not None or high is not None:
        parts.append(f"in [{'-inf' if low is None else _fmt(low)}, {'inf' if high is None else _fmt(high)}]")
    if total is not None:
        parts.append(f"summing to {_fmt(total)} (±{tolerance:g})")

    def holds(t: pd.DataFrame) -> np.ndarray:
        lengths, values = list_parts(t[column])
        bad = np.isnan(values)
        if low is not None:
            bad |= ~(values >= low)
        if high is not None:
            bad |= ~(values <= high)
        ok = ~_per_row(bad, lengths)
        if length is not None:
            want = pd.to_numeric(t[length], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            ok &= lengths == want
        if total is not None:
            rows = np.repeat(np.arange(len(lengths)), lengths)
            sums = np.bincount(rows, weights=np.where(bad, 0.0, values), minlength=len(lengths))
            ok &= np.abs(sums - total) <= tolerance
        return ok

    return RowRule(" ".join(parts), (column, *((length,) if length else ())), holds, only_valid)


def index_rule(column: str, size: str | int, only_valid: bool = False) -> RowRule:
    """A :class:`RowRule`: ``column`` is a whole-number index in ``0 .. size - 1`` (``size``: a
    column or a number) — an index is never read from the end (no negative indexing)."""

    def holds(t: pd.DataFrame) -> np.ndarray:
        x = pd.to_numeric(t[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        n = (np.full(len(t), float(size)) if isinstance(size, int)
             else pd.to_numeric(t[size], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan))
        return (x >= 0) & (x < n) & (np.floor(x) == x)

    cols = (column,) if isinstance(size, int) else (column, size)
    return RowRule(f"{column} is an index in 0 .. {size} - 1", cols, holds, only_valid)


#: The keys that order a trial table's rows canonically (:func:`canonical_rows`).
ROW_KEYS = ("subject", "session", "trial")


def canonical_rows(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows in the canonical order of :data:`ROW_KEYS` (a valid table holds each key
    once), so that whatever reads it gives the same numbers, to the last bit, whatever order the
    file's rows came in; a table already in that order is returned as it is (no copy)."""
    keys = [k for k in ROW_KEYS if k in table.columns]
    if len(table) < 2 or not keys:
        return table
    columns = [pd.to_numeric(table[k], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
               for k in reversed(keys)]
    order = np.lexsort(columns)
    if np.array_equal(order, np.arange(len(table))):
        return table
    return table.take(order).reset_index(drop=True)


#: A dtype's name as a message says it (:func:`type_in_words`).
_TYPE_WORDS = {"bool": "boolean (True/False)", "boolean": "nullable boolean (True/False/missing)",
               "object": "Python objects", "string": "text", "str": "text", "category": "categorical",
               "datetime64[ns]": "date-time"}


def type_in_words(dtype: Any) -> str:
    """``dtype`` (a pandas or numpy dtype, or its name) as a message says it: ``nullable boolean
    (True/False/missing)``, ``nullable integer (Int64)``, ``float (float64)``, ``text`` ..."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if isinstance(dtype, pd.StringDtype):
        return "text"
    name = str(dtype)
    if name in _TYPE_WORDS:
        return _TYPE_WORDS[name]
    for prefix, words in (("Int", "nullable integer"), ("UInt", "nullable unsigned integer"),
                          ("Float", "nullable float"), ("int", "integer"), ("uint", "unsigned integer"),
                          ("float", "float")):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return f"{words} ({name})"
    return name


def refuse_duplicated_column_names(columns: Any, source: str | os.PathLike[str] | None = None) -> None:
    """Refuse a table whose ``columns`` (its column names) hold one name twice (:class:`TrialTableError`,
    one line naming the column): pandas would hand every reader of that name a table, not a column.  The door of every
    table a public function or command takes (:func:`table_experiments`,
    :func:`cogtestbed.api.checks.check_argument`, a Parquet file's schema in
    :func:`cogtestbed.trials.read_trial_file`); the text-file readers refuse such a header themselves
    (:func:`cogtestbed.data.rows.refuse_duplicated_columns`)."""
    columns = pd.Index(list(columns))
    if columns.is_unique:
        return
    repeated = list(dict.fromkeys(columns[columns.duplicated()]))
    where = f"{source}: " if source is not None else ""
    names = ", ".join(f"{int((columns == c).sum())} columns named {quoted(str(c))}" for c in repeated)
    raise TrialTableError(f"{where}the table has {names}; rename or drop the copies (a table holds each "
                          "column once)")


def table_experiments(trials: pd.DataFrame, source: str | os.PathLike[str] | None = None) -> list[str]:
    """The experiments a table holds trials of, after the checks every trial table passes (each
    column named once, the common columns, an experiment name, no duplicated trial); raise
    :class:`TrialTableError`."""
    refuse_duplicated_column_names(trials.columns, source)
    where = f"{source}: " if source is not None else ""
    missing = [c for c in (*ID_COLUMNS, *OUTCOME_COLUMNS) if c not in trials.columns]
    if missing:
        raise TrialTableError(f"{where}trial table lacks required columns: {', '.join(missing)}")
    if trials.empty:
        return []
    names = [str(n) for n in pd.unique(trials["experiment"].astype("string").dropna())]
    if not names:
        raise TrialTableError(f"{where}trial table has no experiment name")
    if trials.duplicated(list(ID_COLUMNS)).any():
        raise TrialTableError(f"{where}trial table has duplicated (experiment, subject, session, trial) rows")
    return names


def refuse_others(names: list[str], experiment: str, source: str | os.PathLike[str] | None = None) -> None:
    """Refuse a table that holds trials of an experiment other than ``experiment``."""
    if any(n != experiment for n in names):
        where = f"{source}: " if source is not None else ""
        raise TrialTableError(f"{where}holds trials of experiment {', '.join(sorted(names))}, not {experiment}")


def validate_trials(trials: pd.DataFrame, schema: TrialSchema, experiment: str | None = None,
                    source: str | os.PathLike[str] | None = None,
                    file_columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Check a table of one experiment against its ``schema``; return it unchanged or raise
    :class:`TrialTableError` (one line naming ``source``, the column, row and value).

    ``experiment``: the experiment the table must hold (default: the one it names; a table of
    several is refused).  ``file_columns`` maps table columns to the names the source file gives
    them (an importer's), used in the message.  No registry is needed: the registry's
    :func:`~cogtestbed.registry.validate_table` looks each experiment's schema up by name.
    """
    names = table_experiments(trials, source)
    if names:
        name = experiment if experiment is not None else names[0]
        refuse_others(names, name, source)
        check_table(trials, schema, name, None if source is None else str(source), file_columns)
    return trials
