"""The one rule every importer follows for the rows and columns of a published file.

* **A column name appears once** in the header (:func:`refuse_duplicated_columns`): pandas would
  silently rename the second ``choice`` to ``choice.1`` and the importer would read the first.
* **Rows under one key agree** (:func:`drop_agreeing_duplicates`): where a file identifies a row by
  key columns (CogBench's ``run`` and ``trial``), rows that share a key must agree in every other
  column the importer reads; agreeing copies (CogBench's instrumental ``query.py`` writes each trial
  twice) are dropped, keeping the first, and a disagreement — two sessions under one id, or a
  relabelled run — is refused in one line naming the key and the column.  Only columns the source
  is documented to change between copies (``may_differ``) are exempt.

* **Two sessions under one id are refused** (:func:`number_sessions`): where a file has no trial
  key but a session judges each condition once (CogBench's probabilistic-reasoning runs: one
  informative and one uninformative judgement), a run holding a second judgement of a condition
  that differs from the first in any column read is refused in one line naming the file, the run,
  the condition and the override, ``sessions="split"`` (``--sessions split``), which numbers each
  repeat as the run's next session.  An identical copy (every column read equal) is one row.

causAIign's replicated prompt ids are its documented replicates: their importer makes one subject
per replicate.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.errors import DataError, InputError


class DataFormatError(DataError):
    """A file is not in the format the importer expects (one clear message)."""


class RepeatedSessionError(DataFormatError):
    """A run of a file without trial key judges a condition twice, differently: a second session
    under one run id (:func:`number_sessions`; ``sessions="split"`` numbers it instead)."""


#: What an importer does with a run that judges a condition again (:func:`number_sessions`):
#: ``refuse`` (the default) or ``split`` (each repeat is the run's next session).
SESSIONS_MODES = ("refuse", "split")
#: The override named by a refusal: the library keyword and the command-line option.
SESSIONS_OVERRIDE = "sessions='split' (--sessions split)"


def check_sessions_mode(sessions: str) -> str:
    """``sessions`` if it is one of :data:`SESSIONS_MODES`; else one line naming them."""
    if sessions not in SESSIONS_MODES:
        raise InputError(f"`sessions` must be {' or '.join(SESSIONS_MODES)}, got {sessions!r}")
    return sessions


def header_cells(path: str | Path, sep: str = ",") -> list[str]:
    """The first non-blank row of a CSV (BOM-safe), read with :mod:`csv` as pandas reads a header."""
    with Path(path).open(newline="", encoding="utf-8-sig", errors="replace") as f:
        return next((row for row in csv.reader(f, delimiter=sep) if any(cell.strip() for cell in row)), [])


def refuse_duplicated_columns(path: str | Path, sep: str = ",") -> None:
    """Refuse a header that names a column twice (pandas would read ``x`` and ``x.1``)."""
    cells = [c.strip() for c in header_cells(path, sep)]
    seen: set[str] = set()
    for cell in cells:
        if cell in seen and cell:
            raise DataFormatError(f"{Path(path).name}: column {cell!r} appears twice in the header; "
                                  "keep one (which of the two is meant cannot be told)")
        seen.add(cell)


def _same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Element-wise equality with missing == missing."""
    missing = a.isna().to_numpy() & b.isna().to_numpy()
    equal = (a.to_numpy(dtype=object) == b.to_numpy(dtype=object))
    return np.asarray(missing | equal, dtype=bool)


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _key_text(key: Sequence[str], values: Sequence[object]) -> str:
    return ", ".join(f"{k} {_plain(v)}" for k, v in zip(key, values, strict=True))


def _compared_columns(df: pd.DataFrame, key: list[str], columns: Sequence[str] | None,
                      may_differ: Sequence[str]) -> list[str]:
    """The read columns of ``df`` that copies of a key must agree on."""
    return [c for c in (columns if columns is not None else df.columns)
            if c not in key and c not in may_differ and c in df.columns]


def drop_agreeing_duplicates(df: pd.DataFrame, key: Sequence[str], name: str,
                             columns: Sequence[str] | None = None,
                             may_differ: Sequence[str] = ()) -> tuple[pd.DataFrame, int]:
    """Drop later copies of rows sharing ``key`` when they agree; refuse when they do not.

    ``columns`` are the columns the importer reads (default: every column of ``df``); each must
    agree between the copies of a key unless named in ``may_differ``.  Returns the frame without
    the later copies (index reset, file order kept) and how many rows were dropped.
    """
    key = list(key)
    dup = df.duplicated(key, keep=False).to_numpy()
    if not dup.any():
        return df.reset_index(drop=True), 0
    compared = _compared_columns(df, key, columns, may_differ)
    rows = df.loc[dup]
    first = rows[key].merge(rows.drop_duplicates(key)[key + compared], on=key, how="left")
    rows = rows.reset_index(drop=True)
    differs = {c: ~_same(rows[c], first[c]) for c in compared}
    bad = [(int(np.argmax(d)), c) for c, d in differs.items() if d.any()]
    if bad:
        i, column = min(bad)
        where = _key_text(key, [rows[k].iloc[i] for k in key])
        raise DataFormatError(
            f"{name}: {where} appears more than once with different {column!r} "
            f"({_plain(first[column].iloc[i])!r} vs {_plain(rows[column].iloc[i])!r}): two sessions under "
            "one id? give each session its own id")
    keep = ~df.duplicated(key, keep="first").to_numpy()
    return df.loc[keep].reset_index(drop=True), int((~keep).sum())


def number_sessions(df: pd.DataFrame, key: Sequence[str], name: str, sessions: str = "refuse",
                    columns: Sequence[str] | None = None) -> tuple[pd.DataFrame, np.ndarray, int]:
    """(rows kept, each row's session within its run, identical copies dropped) of a file without
    trial key whose session judges each ``key`` (run, condition) once.

    ``sessions="refuse"`` (default): a copy identical in every column read (``columns``, default
    all) is one row, dropped; a second row under a key that differs from the first is refused in
    one line (:class:`RepeatedSessionError`) naming the file, the run and condition, both file
    lines, the first column that differs and the override.  ``sessions="split"``: every repeat of a
    key, identical or not, is the run's next session (0, 1, ...), numbered in file order; nothing is
    dropped (a run appended twice may repeat a judgement exactly: CogBench's claude-1.csv holds 8
    such rows, each in a run whose other judgement differs).
    """
    check_sessions_mode(sessions)
    key = list(key)
    read = [c for c in (columns if columns is not None else df.columns) if c in df.columns]
    if sessions == "split":
        return df, df.groupby(key, sort=False).cumcount().to_numpy(np.int64), 0
    keep = ~df.duplicated(read, keep="first").to_numpy()
    n_dropped = int((~keep).sum())
    kept = df.loc[keep]
    repeat = kept.duplicated(key, keep="first").to_numpy()
    if repeat.any():
        i = int(np.argmax(repeat))
        row = kept.iloc[i]
        first = kept.loc[(kept[key] == row[key]).all(axis=1)].iloc[0]
        column = next(c for c in read if c not in key and not _same(pd.Series([first[c]]), pd.Series([row[c]]))[0])
        raise RepeatedSessionError(
            f"{name}: {_key_text(key, [row[k] for k in key])} is judged twice (file lines {int(first.name) + 2} "
            f"and {int(row.name) + 2} differ in {column!r}: {_plain(first[column])!r} vs {_plain(row[column])!r}): "
            f"two sessions under one run id; give each its own run id, or pass {SESSIONS_OVERRIDE} to number "
            "each repeat as the run's next session")
    return kept.reset_index(drop=True), np.zeros(int(keep.sum()), np.int64), n_dropped


def sniff_separator(text: str) -> str:
    """The separator of a CSV header line (``,``, ``;`` or a tab)."""
    try:
        return csv.Sniffer().sniff(text, delimiters=",;\t").delimiter
    except csv.Error:
        return ","


def csv_rows(path: str | Path) -> tuple[list[list[str]], str]:
    """Every row of a small CSV as text cells, and its separator (for tests that fabricate rows)."""
    text = Path(path).read_text(encoding="utf-8-sig")
    sep = sniff_separator(text.splitlines()[0] if text else "")
    return [row for row in csv.reader(io.StringIO(text), delimiter=sep)], sep
