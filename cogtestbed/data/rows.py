"""The one rule every importer follows for the rows and columns of a published file.

* **A column name appears once** in the header (:func:`refuse_duplicated_columns`): pandas would
  silently rename the second ``choice`` to ``choice.1`` and the importer would read the first.
* **Rows under one key agree** (:func:`drop_agreeing_duplicates`): where a file identifies a row by
  key columns (CogBench's ``run`` and ``trial``), rows that share a key must agree in every other
  column the importer reads; agreeing copies (CogBench's instrumental ``query.py`` writes each trial
  twice) are dropped, keeping the first, and a disagreement — two sessions under one id, or a
  relabelled run — is refused in one line naming the key and the column.  Only columns the source
  is documented to change between copies (``may_differ``) are exempt.

Files that identify rows by position only (CogBench's probabilistic-reasoning judgements,
causAIign's replicated prompt ids) have no key: their importers number repeated ids in file order.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.errors import DataError


class DataFormatError(DataError):
    """A file is not in the format the importer expects (one clear message)."""


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
    compared = [c for c in (columns if columns is not None else df.columns)
                if c not in key and c not in may_differ and c in df.columns]
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
