"""Spektor, Kellen, Rieskamp & Klauer (2024) as transcribed in Psych-201
(``spektor2024lossaversion/prompts.jsonl``): one JSON line per participant → rows of the
``risky-choice`` trial table.

A line holds ``text`` (the transcript), ``experiment`` (``spektor2024lossaversion/expK.csv``, K = 1–3),
``participant`` (an integer, unique within an experiment) and ``RTs`` (one response time in ms per
choice).  The transcript, written by the data set's ``generate_prompts.py``, is the instructions,
"The lotteries' names are S and Q.", then per session a "Session k:" heading and one sentence per
trial: "The outcomes of lottery S are -9 with 50% chance and 16 with 50% chance. The outcomes of
lottery Q are -15 with 50% chance and 22 with 50% chance. You choose <<Q>>."  The lottery named
first is always the first name (the generator's ``choice_options[0]``).

Rows: ``subject`` = 1000·K + participant (participants are numbered within each experiment),
``study`` = ``expK``, ``participant``, ``session`` (k − 1), ``trial`` (the choice's position in the
transcript), the four outcomes, the names, the choice (0 = first-named lottery), ``reward`` (the
chosen lottery's expected value), ``rt`` (ms, where the line gives one per choice) and ``context``
missing (the data do not name the lottery set).  Anything else is refused in one line naming the
file, the line, the participant and what could not be read; no choice is ever guessed.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.data.rows import DataFormatError
from cogtestbed.tables.risky import EXPERIMENT, OUTCOME_COLUMNS
from cogtestbed.trials import finish_table

#: The Psych-201 data set's name (the prefix of every line's ``experiment``).
DATASET = "spektor2024lossaversion"
_EXPERIMENT = re.compile(rf"^{DATASET}/exp(\d+)\.csv$")
_NAMES = re.compile(r"^The lotteries' names are ([A-Z]) and ([A-Z])\.$")
_SESSION = re.compile(r"^Session (\d+):$")
_NUM = r"(-?\d+(?:\.\d+)?)"
_TRIAL = re.compile(rf"^The outcomes of lottery ([A-Z]) are {_NUM} with 50% chance and {_NUM} with 50% chance\. "
                    rf"The outcomes of lottery ([A-Z]) are {_NUM} with 50% chance and {_NUM} with 50% chance\. "
                    r"You choose <<(.*?)>>\.$")
#: Subject id = SUBJECT_BASE · experiment + participant.
SUBJECT_BASE = 1000
#: How much of a file :func:`sniff` reads, and what it must find there (JSON-escaped instructions).
SNIFF_BYTES = 4096
SNIFF_TEXT = ('"text": "Dear participant,', "you will be shown two 50%-50% lotteries",
              "The lotteries' names are")


def _lines(path: Path) -> Iterator[str]:
    """The JSON lines of a ``.jsonl`` file or of the one ``.jsonl`` member of a ``.zip`` (macOS
    resource forks under ``__MACOSX/`` ignored)."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            members = [n for n in z.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX/")]
            if len(members) != 1:
                raise DataFormatError(f"{path.name}: expected one .jsonl file in the archive, found {len(members)}")
            with z.open(members[0]) as raw:
                yield from io.TextIOWrapper(raw, encoding="utf-8")
        return
    with path.open(encoding="utf-8") as f:
        yield from f


def sniff(path: Path) -> bool:
    """Whether ``path`` is this data set's Psych-201 file (its first line's ``experiment``); never raises."""
    try:
        path = Path(path)
        if not path.is_file() or not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.zip")):
            return False
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                members = [n for n in z.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX/")]
                if len(members) != 1:
                    return False
                with z.open(members[0]) as raw:
                    head = raw.read(SNIFF_BYTES).decode("utf-8", errors="replace")
        else:
            with path.open("rb") as f:
                head = f.read(SNIFF_BYTES).decode("utf-8", errors="replace")
        # the transcript comes first in each line: its instructions name this data set's task
        return head.lstrip().startswith("{") and all(t in head for t in SNIFF_TEXT)
    except Exception:  # noqa: BLE001 - sniffing must never raise
        return False


def parse_participant(record: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """One participant's line → column arrays of its rows (see the module docstring).

    ``where`` prefixes a refusal ("prompts.jsonl: line 3"); a refusal is a one-line
    :class:`~cogtestbed.data.rows.DataFormatError`."""
    def refuse(what: str) -> DataFormatError:
        who = f"participant {record.get('participant')!r}, {record.get('experiment')!r}"
        return DataFormatError(f"{where + ' ' if where else ''}({who}): {what}")

    study, participant = _identity(record, refuse)
    names, rows = _transcript_rows(str(record["text"]), refuse)
    out: dict[str, Any] = {c: np.array([r[i] for r in rows]) for i, c in
                           enumerate(("session", *OUTCOME_COLUMNS, "action"))}
    out.update(letter0=names[0], letter1=names[1], study=f"exp{study}", participant=participant,
               subject=SUBJECT_BASE * study + participant)
    rts = record.get("RTs")
    if rts is not None:
        if not isinstance(rts, list) or len(rts) != len(rows) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in rts):
            raise refuse(f"RTs is not one number per choice ({len(rows)} choices)")
        out["rt"] = np.asarray(rts, dtype=np.float64)
    return out


def _identity(record: Mapping[str, Any], refuse: Any) -> tuple[int, int]:
    """(experiment K, participant) of a line, refused unless both are as the generator writes them."""
    for key in ("text", "experiment", "participant"):
        if key not in record:
            raise refuse(f"no {key!r} field")
    m = _EXPERIMENT.match(str(record["experiment"]))
    if m is None:
        raise refuse(f"experiment is not {DATASET}/expK.csv")
    participant = record["participant"]
    if isinstance(participant, bool) or not isinstance(participant, int) or not 0 <= participant < SUBJECT_BASE:
        raise refuse(f"participant must be an integer in [0, {SUBJECT_BASE})")
    return int(m.group(1)), participant


def _transcript_rows(text: str, refuse: Any) -> tuple[tuple[str, str], list[tuple[Any, ...]]]:
    """The lotteries' names and one row per trial sentence of a transcript."""
    names: tuple[str, str] | None = None
    session = -1
    rows: list[tuple[Any, ...]] = []
    for n, line in enumerate(text.split("\n"), start=1):
        if (nm := _NAMES.match(line)) is not None:
            if names is not None or nm.group(1) == nm.group(2):
                raise refuse(f"text line {n}: the lotteries' names are stated twice or are the same")
            names = (nm.group(1), nm.group(2))
        elif (sm := _SESSION.match(line)) is not None:
            session = int(sm.group(1)) - 1
        elif (tm := _TRIAL.match(line)) is not None:
            rows.append(_trial_row(tm, names, session, n, refuse))
        elif line.startswith("The outcomes of lottery") or "<<" in line:
            raise refuse(f"text line {n} is not a trial sentence of the transcript: {line[:60]!r}")
    if names is None or not rows:
        raise refuse("no trial sentence in the transcript")
    return names, rows


def _trial_row(tm: re.Match[str], names: tuple[str, str] | None, session: int, n: int,
               refuse: Any) -> tuple[Any, ...]:
    """(session, x1, x2, y1, y2, action) of one trial sentence."""
    if names is None or session < 0:
        raise refuse(f"text line {n}: a trial before the lotteries' names or a session heading")
    if (tm.group(1), tm.group(4)) != names:
        raise refuse(f"text line {n}: lotteries {tm.group(1)}, {tm.group(4)} are not {names[0]}, {names[1]} in order")
    choice = tm.group(7)
    if choice not in names:
        raise refuse(f"text line {n}: choice <<{choice[:20]}>> is not lottery {names[0]} or {names[1]}")
    return (session, float(tm.group(2)), float(tm.group(3)), float(tm.group(5)), float(tm.group(6)),
            names.index(choice))


def load(path: str | Path) -> pd.DataFrame:
    """The Psych-201 Spektor et al. (2024) file (``.jsonl`` or ``.jsonl.zip``) → risky-choice trial table
    (rows ordered by subject, then as in the transcript)."""
    path = Path(path)
    parts: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for i, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path.name}: line {i} is not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise DataFormatError(f"{path.name}: line {i} is not a JSON object")
        part = parse_participant(record, f"{path.name}: line {i}")
        if part["subject"] in seen:
            raise DataFormatError(f"{path.name}: line {i} repeats {part['study']} participant {part['participant']} "
                                  f"(line {seen[part['subject']]})")
        seen[part["subject"]] = i
        parts.append(part)
    if not parts:
        raise DataFormatError(f"{path.name}: no participant lines")
    return participants_table(parts, agent=f"human:{DATASET}")


def participants_table(parts: list[dict[str, Any]], agent: str) -> pd.DataFrame:
    """Participants' column arrays (:func:`parse_participant`) → the trial table, by subject."""
    parts = sorted(parts, key=lambda p: p["subject"])
    sizes = np.array([len(p["action"]) for p in parts])
    flat = {c: np.concatenate([p[c] for p in parts]) for c in ("session", *OUTCOME_COLUMNS, "action")}
    x = np.stack([flat[c] for c in OUTCOME_COLUMNS], axis=1)
    action = flat["action"].astype(np.int64)
    reward = np.where(action == 0, 0.5 * (x[:, 0] + x[:, 1]), 0.5 * (x[:, 2] + x[:, 3]))
    trial = np.concatenate([np.arange(s, dtype=np.int64) for s in sizes])
    columns: dict[str, Any] = {
        "session": flat["session"].astype(np.int64), "trial": trial,
        **{c: flat[c] for c in OUTCOME_COLUMNS},
        "letter0": np.repeat([p["letter0"] for p in parts], sizes).astype(object),
        "letter1": np.repeat([p["letter1"] for p in parts], sizes).astype(object),
        "context": pd.array(np.full(len(action), pd.NA), dtype="Int64"),
        "action": action, "reward": reward, "valid": np.ones(len(action), dtype=bool),
        "study": np.repeat([p["study"] for p in parts], sizes).astype(object),
        "participant": np.repeat([p["participant"] for p in parts], sizes),
    }
    if all("rt" in p for p in parts):
        columns["rt"] = np.concatenate([p["rt"] for p in parts])
    table = finish_table(EXPERIMENT, columns, agent=agent, keep=sizes)
    table["subject"] = np.repeat([p["subject"] for p in parts], sizes)
    return table
