"""Every defect of a Psych-201 file, with its line and field (``cogtestbed validate``).

:func:`validate_psych201` reads a file the way :func:`cogtestbed.data.psych201.read_records` does
(within the input limit, :func:`~cogtestbed.data.psych201.open_content`) but stops at no defect:
it lists each one as a :class:`Defect` of a kind in :data:`KINDS`.  The kinds are the defects
Psych-201's reviews fix again and again, and what its evaluation script (``0_analyses/eval.py``)
trips on:

* the file: ``input_limit`` (content over the input limit), ``archive`` (not a zip holding one
  ``.jsonl``);
* a line: ``utf8`` (not UTF-8), ``json`` (not JSON), ``record`` (not an object with a string
  ``text``, a non-empty string ``experiment`` and a string or integer ``participant``),
  ``duplicate_participant`` (a record's (experiment, participant) again with different content);
* the text: ``markers_missing`` (no ``<<…>>``), ``markers_unbalanced`` (a ``>>`` before its ``<<``,
  or a ``<<`` never closed), ``markers_nested`` (a ``<<`` inside an open mark), ``choice_empty``
  (``<<>>``), ``too_long`` (over :data:`MAX_LENGTH` characters: the evaluation cuts it there and
  scores none of the choices after the cut), ``option_outside`` (a choice that is not in the option set
  the text states for it, :func:`cogtestbed.data.psych201_table.stated_options`),
  ``condition_leak`` (below);
* ``RTs``: ``rt_string`` (an RT stored as a string), ``rt_type`` (not a list, or an entry that is
  not a number), ``rt_value`` (a number that is no reaction time: NaN, infinite, negative, or over
  :data:`MAX_RT_MS`), ``rt_length`` (not one RT per marked choice), ``rt_unit`` (not in ms: the median
  positive RT is under :data:`SECONDS_BELOW`, which only seconds give).

**Condition labels leaking into the text** (this package's documented heuristic): (a) the value of
a record's own field other than ``text``/``experiment``/``participant``/``RTs`` (``condition``,
``diagnosis``, …), a string of at least four characters with a letter, occurring in the text as a
whole word (the participant's condition told to the model); (b) a lower-case identifier with an
underscore (``static_high``, ``cond_2``: a variable's value, never prose) anywhere in the text —
except in the package's own exports (``cogtestbed/…``), whose header lines name the table's columns.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cogtestbed.data.psych201 import CHOICE, OWN_DATA_SET, InputLimitError, Psych201Error, data_set_of, read_content
from cogtestbed.errors import printable_line

#: The evaluation's maximum text length in characters (Psych-201 ``0_analyses/eval.py``,
#: ``--max-seq-length`` default 32768): the text is cut there before tokenizing.
MAX_LENGTH = 32768
#: A median positive RT under this is read as seconds (no human responds within 20 ms on average).
SECONDS_BELOW = 20.0
#: Longest reaction time (ms) read as one: an hour; a longer one is an ``rt_value`` defect (a sentinel, an overflow).
MAX_RT_MS = 3_600_000.0
#: Every kind of defect (module docstring).
KINDS = ("input_limit", "archive", "utf8", "json", "record", "duplicate_participant", "markers_missing",
         "markers_unbalanced", "markers_nested", "choice_empty", "too_long", "option_outside", "condition_leak",
         "rt_string", "rt_type", "rt_value", "rt_length", "rt_unit")
#: Record fields that are no condition label.
_OWN_FIELDS = ("text", "experiment", "participant", "RTs")
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]\b")


@dataclass(frozen=True)
class Defect:
    """One defect: the file's 1-based ``line`` (0: the file as a whole), the record's
    ``participant`` and its ``record`` (the ``experiment`` field) where known, the ``field``
    (``text``, ``RTs[3]``, ``choice 12``, …), its ``kind`` (:data:`KINDS`) and one sentence."""

    line: int
    participant: str | None
    field: str
    kind: str
    message: str
    #: The record's ``experiment`` field (its study or source file), where the line has one.
    record: str | None = None

    def __str__(self) -> str:
        return f"line {defect_line(self)}"


def _known(value: Any) -> str | None:
    """A defect's participant or record as text; None where the line has none (None, or the NaN a table holds)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def defect_line(defect: Any) -> str:
    """``LINE (participant P of RECORD): FIELD: KIND: MESSAGE`` for a :class:`Defect` or a row of
    :func:`defects_table`, as one line a terminal shows as written (the file's values may hold ANSI
    escapes, carriage returns or bidirectional overrides: :func:`cogtestbed.errors.printable_line`); the
    participant and the record only where the line has them."""
    who, record = _known(defect.participant), _known(defect.record)
    label = "" if who is None else f" (participant {who}" + ("" if record is None else f" of {record}") + ")"
    return printable_line(f"{defect.line}{label}: {defect.field}: {defect.kind}: {defect.message}")


def validate_psych201(path: str | Path, max_length: int = MAX_LENGTH) -> list[Defect]:
    """Every defect of the Psych-201 file ``path`` (module docstring), in line order; an empty list
    for a file without one.  A missing file raises :class:`FileNotFoundError`."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    try:
        content = read_content(p)
    except InputLimitError as exc:
        return [Defect(0, None, "file", "input_limit", str(exc))]
    except Psych201Error as exc:
        return [Defect(0, None, "file", "archive", str(exc))]
    out: list[Defect] = []
    seen: dict[tuple[str, str], tuple[int, Any]] = {}
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if not raw.strip() or raw.strip() == b"\xef\xbb\xbf":
            continue
        found = _line(number, raw, seen, max_length)
        if found:
            record = _record_field(raw)
            out.extend(replace(d, record=record) for d in found)
    return out


def _record_field(raw: bytes) -> str | None:
    """The line's ``experiment`` field where it reads as a record with one, else None."""
    try:
        obj = json.loads(raw.decode("utf-8").lstrip("\ufeff"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    value = obj.get("experiment") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def _line(number: int, raw: bytes, seen: dict[tuple[str, str], tuple[int, Any]], max_length: int) -> list[Defect]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Defect(number, None, "line", "utf8", f"not UTF-8 text: byte {exc.start}: {exc.reason}")]
    try:
        obj = json.loads(line.lstrip("\ufeff"))
    except json.JSONDecodeError as exc:
        return [Defect(number, None, "line", "json", f"not JSON: {exc.msg} (column {exc.colno})")]
    if not isinstance(obj, dict):
        return [Defect(number, None, "line", "record", f"a record is a JSON object, got {type(obj).__name__}")]
    found = _fields(number, obj)
    if found:
        return found
    who = str(obj["participant"])
    key = (obj["experiment"], who)
    out = []
    if key in seen and seen[key][1] != obj:
        out.append(Defect(number, who, "participant", "duplicate_participant",
                          f"participant {who} of {obj['experiment']} has a different record on line {seen[key][0]}"))
    seen.setdefault(key, (number, obj))
    text = obj["text"]
    out.extend(_markers(number, who, text))
    if len(text) > max_length:
        kept = len(CHOICE.findall(text[:max_length]))
        out.append(Defect(number, who, "text", "too_long",
                          f"{len(text):,} characters, over the evaluation's {max_length:,}: it scores only the "
                          f"{kept} of {len(CHOICE.findall(text))} choices before the cut"))
    out.extend(_outside(number, who, text, data_set_of(obj["experiment"])))
    out.extend(_leaks(number, who, obj))
    if "RTs" in obj:
        out.extend(_rts(number, who, obj["RTs"], len(CHOICE.findall(text))))
    return out


def _fields(number: int, obj: dict[str, Any]) -> list[Defect]:
    out = []
    for name in ("text", "experiment", "participant"):
        if name not in obj:
            out.append(Defect(number, None, name, "record", f"missing field {name!r}"))
    if out:
        return out
    if not isinstance(obj["text"], str):
        out.append(Defect(number, None, "text", "record", f"text is {type(obj['text']).__name__}, not a string"))
    if not isinstance(obj["experiment"], str) or not obj["experiment"].strip():
        out.append(Defect(number, None, "experiment", "record", "experiment must be a non-empty string"))
    who = obj["participant"]
    if isinstance(who, bool) or not isinstance(who, (str, int)) or str(who).strip() == "":
        out.append(Defect(number, None, "participant", "record", f"participant must be a string or an integer, "
                                                                  f"got {who!r}"))
    return out


def _marks(text: str) -> Iterator[tuple[str, int]]:
    for m in re.finditer(r"<<|>>", text):
        yield m.group(0), m.start()


def _markers(number: int, who: str, text: str) -> list[Defect]:
    out = []
    depth, opened = 0, -1
    for mark, at in _marks(text):
        if mark == "<<":
            if depth:
                out.append(Defect(number, who, "text", "markers_nested",
                                  f"'<<' at character {at} inside the mark opened at {opened}: "
                                  f"{text[max(0, at - 20):at + 20]!r}"))
            else:
                opened = at
            depth += 1
        elif depth == 0:
            out.append(Defect(number, who, "text", "markers_unbalanced",
                              f"'>>' at character {at} closes no mark: {text[max(0, at - 20):at + 20]!r}"))
        else:
            depth -= 1
    if depth:
        out.append(Defect(number, who, "text", "markers_unbalanced",
                          f"the '<<' at character {opened} is never closed: {text[opened:opened + 40]!r}"))
    if "<<" not in text:
        out.append(Defect(number, who, "text", "markers_missing", "the text marks no choice with <<…>>"))
    for i, m in enumerate(CHOICE.finditer(text)):
        if not m.group(1).strip():
            out.append(Defect(number, who, f"choice {i}", "choice_empty", f"an empty mark at character {m.start()}"))
    return out


def _outside(number: int, who: str, text: str, data_set: str) -> list[Defect]:
    from cogtestbed.data.psych201_table import stated_options

    out = []
    for i, (chosen, options) in enumerate(zip(CHOICE.findall(text), stated_options(text, data_set), strict=True)):
        if options is not None and chosen.strip() and chosen.strip() not in options:
            out.append(Defect(number, who, f"choice {i}", "option_outside",
                              f"<<{chosen}>> is not among the options the text states ({', '.join(options)})"))
    return out


def _leaks(number: int, who: str, obj: dict[str, Any]) -> list[Defect]:
    text = obj["text"]
    out = []
    for name, value in obj.items():
        if name in _OWN_FIELDS or not isinstance(value, str) or len(value) < 4 or not re.search(r"[A-Za-z]", value):
            continue
        m = re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text)
        if m is not None:
            out.append(Defect(number, who, "text", "condition_leak",
                              f"the record's {name} {value!r} is in the text at character {m.start()}"))
    if data_set_of(str(obj["experiment"])) == OWN_DATA_SET:  # the package's own transcripts name columns
        return out
    for m in _IDENTIFIER.finditer(text):
        out.append(Defect(number, who, "text", "condition_leak",
                          f"identifier {m.group(0)!r} (a variable's value, not prose) at character {m.start()}"))
    return out


def _rts(number: int, who: str, rts: Any, n_choices: int) -> list[Defect]:
    if not isinstance(rts, list):
        return [Defect(number, who, "RTs", "rt_type", f"RTs is {type(rts).__name__}, not a list")]
    out = []
    values = []
    strings = [i for i, v in enumerate(rts) if isinstance(v, str)]
    if strings:
        first = strings[0]
        out.append(Defect(number, who, f"RTs[{first}]", "rt_string",
                          f"{len(strings)} of {len(rts)} RTs stored as strings (RTs[{first}] = {rts[first]!r})"))
    for i, v in enumerate(rts):
        if isinstance(v, str):
            try:
                values.append(float(v))
            except ValueError:
                out.append(Defect(number, who, f"RTs[{i}]", "rt_type", f"RT is not a number: {v!r}"))
                continue
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            if v is not None:
                out.append(Defect(number, who, f"RTs[{i}]", "rt_type", f"RT is not a number: {v!r}"))
            continue
        else:
            values.append(float(v))
        wrong = _rt_value_problem(values[-1])
        if wrong is not None:
            out.append(Defect(number, who, f"RTs[{i}]", "rt_value", f"RT {values[-1]:g} {wrong}"))
    values = [v for v in values if _rt_value_problem(v) is None]
    if len(rts) != n_choices:
        out.append(Defect(number, who, "RTs", "rt_length", f"{len(rts)} RTs for {n_choices} marked choices"))
    positive = [v for v in values if v > 0]
    if positive and statistics.median(positive) < SECONDS_BELOW:
        out.append(Defect(number, who, "RTs", "rt_unit", f"median RT {statistics.median(positive):g}: seconds, "
                                                         "not ms"))
    return out


def _rt_value_problem(rt: float) -> str | None:
    """Why ``rt`` (ms) is no reaction time, or None where it can be one."""
    if not math.isfinite(rt):
        return "is not a finite number"
    if rt < 0:
        return "is negative"
    if rt > MAX_RT_MS:
        return f"is over {MAX_RT_MS:,.0f} ms (an hour)"
    return None


def defects_table(defects: list[Defect]) -> Any:
    """The defects as a DataFrame (line, participant, record, field, kind, message)."""
    import pandas as pd

    return pd.DataFrame([asdict(d) for d in defects],
                        columns=["line", "participant", "record", "field", "kind", "message"])
