"""Any Psych-201 file as a table, and back byte for byte.

Every Psych-201 file reads into a **transcript table** (:func:`transcript_table`), whether or not an
experiment of this package models its data set: one row per marked choice (``<<…>>``) with

==============  ==========================================================================================
``data_set``    the data set (the ``experiment`` field up to its first ``/``)
``record``      the record's ``experiment`` field (the study or source file): with ``participant`` the
                participant's identity — ids repeat across records (``spektor2019contexteffects``)
``participant`` the record's participant id, as text
``line``        the record's 1-based line in the file
``choice``      the choice's index in the transcript (0, 1, …; -1 on the one row of a record that marks
                no choice)
``before``      the text since the previous choice's ``>>`` (since the start for the first choice)
``chosen``      the text between ``<<`` and ``>>`` (NA on a record's no-choice row)
``after``       the text after the last choice (on the record's last row; NA elsewhere)
``rt``          the choice's response time as the file gives it (``RTs[i]`` as a number where ``RTs`` is a
                list with one entry per choice; NaN otherwise)
``options``     the option set the text states for this choice (:func:`stated_options`), None where it
                states none
``layout``      on a record's first row: the record's JSON line(s) as in the file, its ``text`` value
                replaced by :data:`PLACEHOLDER` (every other field, the key order, spacing, the line end,
                blank lines before it and a leading byte-order mark kept as they are); NA elsewhere
``text_json``   how the ``text`` value is written in the line: ``ascii`` (``json.dumps``), ``utf8``
                (``ensure_ascii=False``) or ``raw:`` and the literal itself where neither reproduces it
==============  ==========================================================================================

:func:`write_transcript_table` writes such a table back: each record's text is
``Σ before + "<<" + chosen + ">>"`` then ``after``, put into its layout; for a table read from a file
the bytes written are the file's (a zip's or gzip's content: the archive itself is written anew).
Columns a table adds (a scored table's ``logp_raw``, ``psych201_nll``, …) go into the record as the
extra field :data:`SCORES_FIELD` (per choice, in choice order), so a scored table exports with its
scores as metadata.  Experiments keep their own parsers
(:func:`cogtestbed.data.psych201.read_table_records`) on top of this.
"""

from __future__ import annotations

import bisect
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.data.psych201 import CHOICE, OWN_DATA_SET, Psych201Error, data_set_of, read_content

#: The columns of a transcript table, in order (module docstring).
COLUMNS = ("data_set", "record", "participant", "line", "choice", "before", "chosen", "after", "rt", "options",
           "layout", "text_json")
#: Stands for the record's ``text`` value in ``layout`` (a NUL cannot occur raw in a JSON line).
PLACEHOLDER = "\x00"
#: The record field a scored table's extra columns are written under (:func:`write_transcript_table`).
SCORES_FIELD = "cogtestbed_scores"

#: ``rule(text) -> [(start, end, options)]``: the option statements of a data set whose text states
#: options in its own way (``end``: where the statement ends; it applies to the choices after it).
OptionRule = Callable[[str], list[tuple[int, int, tuple[str, ...]]]]

# ----------------------------------------------------------------------------- stated options
_ITEM = r"'?([A-Z0-9]{1,3})'?"
_MIDDLE = r"'?[A-Z0-9]{1,3}'?"
#: A statement of options (this module's heuristic): a cue word, then within the sentence a list of
#: two to six short codes (one to three capital letters or digits, optionally quoted) joined by
#: commas and a final ``and``/``or``: "choose between two options: L and R", "The options' names are
#: J, G, and F", "two houses labeled 'S' and I'", "options to choose from, J and G".
_STATEMENT = re.compile(
    r"\b(?:options?|names|named|labeled|labelled|between|from|lotter(?:y|ies)|houses|machines|buttons|keys)\b"
    r"[^.\n<>]{0,40}?[\s:,]" + _ITEM + r"((?:\s*,\s*" + _MIDDLE + r"){0,4})\s*,?\s+(?:and|or)\s+" + _ITEM + r"\b")
#: A key listing: two or more consecutive lines ``K: …`` (one to three capitals or digits).
_KEYS = re.compile(r"(?:^[A-Z0-9]{1,3}: [^\n]*\n){2,}", re.M)


def _generic_statements(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    out = []
    for m in _STATEMENT.finditer(text):
        middle = re.findall(_ITEM, m.group(2) or "")
        out.append((m.start(), m.end(), (m.group(1), *middle, m.group(3))))
    for m in _KEYS.finditer(text):
        keys = tuple(line.split(":", 1)[0] for line in m.group(0).splitlines())
        out.append((m.start(), m.end(), keys))
    return sorted(out)


def _shahar_statements(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """``shahar2019twosteptask``: the header's first-stage pair applies to ``You choose <<…>>``, its
    second-stage pair to ``In state S, you choose <<…>>`` (its ``generate_prompts.py``)."""
    head = re.search(r"choose between two options: (\w+) and (\w+)\.(?s:.*?)another choice between two "
                     r"options: (\w+) and (\w+)\.", text)
    if head is None:
        return []
    first, second = head.groups()[:2], head.groups()[2:]
    out = []
    for m in re.finditer(r"(In state \w+, you choose |You choose )<<", text):
        out.append((m.start(), m.end() - 2, second if m.group(1).startswith("In state") else first))
    return out


#: Data sets whose option statements the generic heuristic misreads, with their own rule.
OPTION_RULES: dict[str, OptionRule] = {"shahar2019twosteptask": _shahar_statements}


def stated_options(text: str, data_set: str = "") -> list[tuple[str, ...] | None]:
    """The option set the transcript states for each marked choice: the last option statement
    that ends before the choice (a data set's rule in :data:`OPTION_RULES`, else the generic
    heuristic: a cue word — option(s), names, labeled, between, from, lotteries, houses, machines,
    buttons, keys — then a list of two to six codes of one to three capitals or digits joined by
    commas and a final and/or; or two or more consecutive ``K: …`` lines); None where no statement
    precedes the choice.  The package's own exports state none."""
    starts = [m.start() for m in CHOICE.finditer(text)]
    if data_set == OWN_DATA_SET:
        return [None] * len(starts)
    found = OPTION_RULES.get(data_set, _generic_statements)(text)
    ends = sorted((end, opts) for _, end, opts in found)
    keys = [e for e, _ in ends]
    out: list[tuple[str, ...] | None] = []
    for s in starts:
        k = bisect.bisect_right(keys, s) - 1
        out.append(ends[k][1] if k >= 0 else None)
    return out


# ----------------------------------------------------------------------------- reading
def _lines(content: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """(1-based line number, the bytes since the previous record, the record's line) of each
    non-blank line; blank lines, a BOM and the end of the file go with the record after them
    (the last record takes what follows it)."""
    pending = b""
    pos, number = 0, 0
    n = len(content)
    while pos < n:
        end = content.find(b"\n", pos)
        end = n if end < 0 else end + 1
        line = content[pos:end]
        number += 1
        pos = end
        if not line.strip() or line.strip() == b"\xef\xbb\xbf":
            pending += line
            continue
        yield number, pending, line
        pending = b""
    if pending:
        yield -1, pending, b""


def _text_json(raw: str, text: str) -> tuple[str, str]:
    """(layout, text_json) of one JSON line whose ``text`` value is ``text``."""
    for style, literal in (("ascii", json.dumps(text)), ("utf8", json.dumps(text, ensure_ascii=False))):
        if raw.count(literal) == 1:
            return raw.replace(literal, PLACEHOLDER), style
    found = re.search(r'"text"\s*:\s*("(?:[^"\\]|\\.)*")', raw)
    if found is None or json.loads(found.group(1)) != text:
        raise Psych201Error("cannot find the text value in the line")
    return raw[:found.start(1)] + PLACEHOLDER + raw[found.end(1):], "raw:" + found.group(1)


def _rts(value: Any, n: int) -> list[float]:
    if not isinstance(value, list) or len(value) != n:
        return [np.nan] * n
    out = []
    for v in value:
        try:
            out.append(float(v) if not isinstance(v, bool) and v is not None else np.nan)
        except (TypeError, ValueError):
            out.append(np.nan)
    return out


def _record_rows(obj: Mapping[str, Any], line: int, layout: str, style: str) -> list[dict[str, Any]]:
    text = obj["text"]
    experiment = str(obj["experiment"])
    data_set = data_set_of(experiment)
    marks = list(CHOICE.finditer(text))
    base = {"data_set": data_set, "record": experiment, "participant": str(obj["participant"]), "line": line}
    if not marks:
        return [{**base, "choice": -1, "before": "", "chosen": None, "after": text, "rt": np.nan, "options": None,
                 "layout": layout, "text_json": style}]
    rts = _rts(obj.get("RTs"), len(marks))
    options = stated_options(text, data_set)
    rows, prev = [], 0
    for i, m in enumerate(marks):
        rows.append({**base, "choice": i, "before": text[prev:m.start()], "chosen": m.group(1), "after": None,
                     "rt": rts[i], "options": None if (opts := options[i]) is None else list(opts),
                     "layout": layout if i == 0 else None, "text_json": style if i == 0 else None})
        prev = m.end()
    rows[-1]["after"] = text[prev:]
    return rows


def transcript_table(path: str | Path) -> pd.DataFrame:
    """The transcript table of any Psych-201 file (module docstring): ``.jsonl``, a ``.zip`` holding
    one, or a ``.gz`` (read within the input limit, :func:`cogtestbed.data.psych201.open_content`).
    Every line is kept (a repeated record too), so :func:`write_transcript_table` gives the file
    back byte for byte.  A line that is not a Psych-201 record is refused in one line naming it
    (``cogtestbed validate`` lists every defect)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    content = read_content(p)
    rows: list[dict[str, Any]] = []
    trailing = ""
    for number, pending, raw in _lines(content):
        try:
            head, line = pending.decode("utf-8"), raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Psych201Error(f"{p.name} line {max(number, 1)}: not UTF-8 text: {exc.reason}") from None
        if number < 0:
            trailing = head
            continue
        body = line[1:] if line.startswith("\ufeff") else line
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as exc:
            raise Psych201Error(f"{p.name} line {number}: not JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(obj, dict) or not all(k in obj for k in ("text", "experiment", "participant")) \
                or not isinstance(obj["text"], str):
            raise Psych201Error(f"{p.name} line {number}: not a Psych-201 record (an object with text, experiment "
                                "and participant)")
        try:
            layout, style = _text_json(line, obj["text"])
        except Psych201Error as exc:
            raise Psych201Error(f"{p.name} line {number}: {exc}") from None
        rows.extend(_record_rows(obj, number, head + layout, style))
    if not rows:
        raise Psych201Error(f"{p.name} holds no Psych-201 record")
    table = _frame(rows)
    table.attrs["psych201_trailing"] = trailing
    table.attrs["psych201_source"] = str(p)
    return table


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for c in ("data_set", "record", "participant", "before", "chosen", "after", "layout", "text_json"):
        table[c] = pd.array(table[c], dtype="string")
    table["line"] = table["line"].astype(np.int64)
    table["choice"] = table["choice"].astype(np.int64)
    table["rt"] = table["rt"].astype(np.float64)
    return table


def is_transcript_table(table: pd.DataFrame) -> bool:
    """Whether ``table`` has the columns of a transcript table (scored ones too)."""
    return all(c in table.columns for c in COLUMNS)


# ----------------------------------------------------------------------------- writing
def _cell(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_cell(v) for v in value]
    return value


def _with_scores(layout: str, scores: Mapping[str, Any]) -> str:
    """``layout`` with :data:`SCORES_FIELD` added as the record's last field."""
    close = layout.rstrip().rfind("}")
    if close < 0:
        raise Psych201Error("a record's layout holds no JSON object")
    field = json.dumps(SCORES_FIELD) + ": " + json.dumps(scores, ensure_ascii=False, allow_nan=False)
    return layout[:close] + ", " + field + layout[close:]


def transcript_bytes(table: pd.DataFrame) -> bytes:
    """The JSON Lines bytes of a transcript table (:func:`write_transcript_table`)."""
    if not is_transcript_table(table):
        missing = [c for c in COLUMNS if c not in table.columns]
        raise Psych201Error(f"not a transcript table: no column(s) {', '.join(missing)}")
    extra = [c for c in table.columns if c not in COLUMNS]
    out = []
    order = np.lexsort((table["choice"].to_numpy(), table["line"].to_numpy()))
    t = table.iloc[order]
    for line, rows in t.groupby("line", sort=False):
        layout, style = rows["layout"].iloc[0], rows["text_json"].iloc[0]
        if layout is pd.NA or style is pd.NA:
            raise Psych201Error(f"line {line}: its first row carries no layout (not a table transcript_table read)")
        text = _text(rows)
        literal = (json.dumps(text) if style == "ascii" else json.dumps(text, ensure_ascii=False) if style == "utf8"
                   else _raw_literal(str(style), text))
        scores = {c: [_cell(v) for v in rows[c].tolist()] for c in extra}
        if any(v is not None for values in scores.values() for v in values):  # a record not scored: as it was
            layout = _with_scores(str(layout), scores)
        out.append(str(layout).replace(PLACEHOLDER, literal))
    out.append(str(table.attrs.get("psych201_trailing", "")))
    return "".join(out).encode("utf-8")


def _raw_literal(style: str, text: str) -> str:
    literal = style[4:]
    return literal if json.loads(literal) == text else json.dumps(text, ensure_ascii=False)


def _text(rows: pd.DataFrame) -> str:
    """A record's text from its rows: ``before`` ``<<chosen>>`` … then ``after``."""
    parts = []
    for before, chosen in zip(rows["before"].tolist(), rows["chosen"].tolist(), strict=True):
        parts.append(str(before))
        if chosen is not pd.NA and chosen is not None:
            parts.append(f"<<{chosen}>>")
    tail = rows["after"].iloc[-1]
    parts.append("" if tail is pd.NA or tail is None else str(tail))
    return "".join(parts)


def write_transcript_table(table: pd.DataFrame, path: str | Path, member: str = "prompts.jsonl") -> bytes:
    """Write a transcript table as a Psych-201 file (``.jsonl``; ``.zip`` holding ``member``;
    ``.gz``), atomically; returns the JSON Lines bytes (for a table read by
    :func:`transcript_table`, the file's content byte for byte; extra columns as
    :data:`SCORES_FIELD`)."""
    from cogtestbed.outputs import atomic_write_bytes

    body = transcript_bytes(table)
    p = Path(path)
    data = body
    if p.name.lower().endswith(".zip"):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(member, body)
        data = buf.getvalue()
    elif p.name.lower().endswith(".gz"):
        import gzip

        data = gzip.compress(body, mtime=0)
    atomic_write_bytes(p, lambda tmp: tmp.write_bytes(data))
    return body


#: Columns of a scored table that are not scores (the transcript table has them already).
_NOT_SCORES = ("participant", "record", "data_set", "choice", "chosen", "options")


def scored_table(scores: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """The transcript table of the Psych-201 file ``path`` with the per-choice ``scores`` (a
    :func:`cogtestbed.transcript_nll` table: ``record``, ``participant``, ``choice`` and the score
    columns) added, matched on (record, participant, choice); records not scored keep no score
    (:func:`write_transcript_table` writes them as they were)."""
    table = transcript_table(path)
    missing = [c for c in ("record", "participant", "choice") if c not in scores.columns]
    if missing:
        raise Psych201Error(f"not a scored table: no column(s) {', '.join(missing)}")
    columns = [c for c in scores.columns if c not in _NOT_SCORES and c not in COLUMNS]
    keyed = scores[["record", "participant", "choice", *columns]].astype({"record": str, "participant": str})
    merged = table.astype({"record": str, "participant": str}).merge(
        keyed, on=["record", "participant", "choice"], how="left", validate="many_to_one")
    for c in ("record", "participant"):
        merged[c] = table[c].to_numpy()
    merged.attrs.update(table.attrs)
    return merged


def records_of_table(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The records of a transcript table as JSON objects (one per line)."""
    return [json.loads(line) for line in transcript_bytes(table).decode("utf-8").splitlines() if line.strip()]
