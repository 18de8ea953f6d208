"""Psych-201's ``spektor2024lossaversion`` as risky-choice trial rows (Spektor, Kellen, Rieskamp &
Klauer 2024, J. Exp. Psychol. Gen.; 282 participants of three experiments).

Its ``generate_prompts.py`` (kept beside the data) is the authority on each sentence: the
instructions, "The lotteries' names are S and Q." (two letters drawn per participant), then per
session a "Session k:" heading and one sentence per trial, "The outcomes of lottery S are -9 with
50% chance and 16 with 50% chance. The outcomes of lottery Q are -15 with 50% chance and 22 with
50% chance. You choose <<Q>>."  The lottery named first is always the first name (the generator's
``choice_options[0]``, the source's left / X lottery).  A line's ``experiment`` is
``spektor2024lossaversion/expK.csv`` (K = 1–3); participants are numbered within each K.

Rows (:mod:`cogtestbed.tables.risky`): ``session`` k − 1, ``trial`` the choice's position in the
transcript, the four outcomes as stated, the names, ``action`` 0 = the first-named lottery,
``reward`` the chosen lottery's expected value, ``context`` missing (the transcript does not name
the lottery set), ``study`` ``expK`` and ``rt`` (the record's ``RTs``, ms, one per choice).  A
line that is not such a transcript is refused in one line naming the text line and what could not
be read; no choice is ever guessed.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.data.psych201 import Psych201Error, Record
from cogtestbed.tables.risky import OUTCOME_COLUMNS

#: The data set's name in Psych-201.
DATA_SET = "spektor2024lossaversion"
_EXPERIMENT = re.compile(rf"^{DATA_SET}/exp(\d+)\.csv$")
_NAMES = re.compile(r"^The lotteries' names are ([A-Z]) and ([A-Z])\.$")
_SESSION = re.compile(r"^Session (\d+):$")
_NUM = r"(-?\d+(?:\.\d+)?)"
_TRIAL = re.compile(rf"^The outcomes of lottery ([A-Z]) are {_NUM} with 50% chance and {_NUM} with 50% chance\. "
                    rf"The outcomes of lottery ([A-Z]) are {_NUM} with 50% chance and {_NUM} with 50% chance\. "
                    r"You choose <<(.*?)>>\.$")


def parse_spektor2024(record: Record) -> pd.DataFrame:
    """One participant's trials of ``spektor2024lossaversion`` as risky-choice rows (module docstring)."""
    m = _EXPERIMENT.match(record.experiment)
    if m is None:
        raise Psych201Error(f"experiment {record.experiment!r} is not {DATA_SET}/expK.csv")
    names, rows = _transcript_rows(record.text)
    x = np.array([r[1:5] for r in rows], dtype=np.float64)
    action = np.array([r[5] for r in rows], dtype=np.int64)
    n = len(rows)
    out = pd.DataFrame({
        "session": np.array([r[0] for r in rows], dtype=np.int64), "trial": np.arange(n, dtype=np.int64),
        **{c: x[:, j] for j, c in enumerate(OUTCOME_COLUMNS)},
        "letter0": pd.array([names[0]] * n, dtype="string"), "letter1": pd.array([names[1]] * n, dtype="string"),
        "context": pd.array([pd.NA] * n, dtype="Int64"),
        "action": action, "reward": np.where(action == 0, x[:, 0] + x[:, 1], x[:, 2] + x[:, 3]) / 2.0,
        "valid": np.ones(n, dtype=bool), "study": pd.array([f"exp{m.group(1)}"] * n, dtype="string"),
    })
    rts = record.extra.get("RTs")
    if rts is not None:
        out["rt"] = _rts(rts, n)
    return out


def _rts(rts: Any, n: int) -> np.ndarray:
    """The record's response times, one number per choice."""
    if not isinstance(rts, list) or len(rts) != n or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in rts):
        raise Psych201Error(f"RTs is not one number per choice ({n} choices)")
    return np.asarray(rts, dtype=np.float64)


def _transcript_rows(text: str) -> tuple[tuple[str, str], list[tuple[Any, ...]]]:
    """The lotteries' names and (session, x1, x2, y1, y2, action) per trial sentence."""
    names: tuple[str, str] | None = None
    session = -1
    rows: list[tuple[Any, ...]] = []
    for n, line in enumerate(text.split("\n"), start=1):
        if (nm := _NAMES.match(line)) is not None:
            names = _first_names(nm, names, n)
        elif (sm := _SESSION.match(line)) is not None:
            session = int(sm.group(1)) - 1
        elif (tm := _TRIAL.match(line)) is not None:
            rows.append(_trial_row(tm, names, session, n))
        elif line.startswith("The outcomes of lottery") or "<<" in line:
            raise Psych201Error(f"text line {n} is not a trial sentence of the transcript: {line[:60]!r}")
    if names is None or not rows:
        raise Psych201Error("no trial sentence in the transcript")
    return names, rows


def _first_names(nm: re.Match[str], names: tuple[str, str] | None, n: int) -> tuple[str, str]:
    """The lotteries' names stated on text line ``n`` (refused where stated before or the same twice)."""
    if names is not None or nm.group(1) == nm.group(2):
        raise Psych201Error(f"text line {n}: the lotteries' names are stated twice or are the same")
    return nm.group(1), nm.group(2)


def _trial_row(tm: re.Match[str], names: tuple[str, str] | None, session: int, n: int) -> tuple[Any, ...]:
    """(session, x1, x2, y1, y2, action) of one trial sentence."""
    if names is None or session < 0:
        raise Psych201Error(f"text line {n}: a trial before the lotteries' names or a session heading")
    if (tm.group(1), tm.group(4)) != names:
        raise Psych201Error(f"text line {n}: lotteries {tm.group(1)}, {tm.group(4)} are not {names[0]}, {names[1]} "
                            "in order")
    choice = tm.group(7)
    if choice not in names:
        raise Psych201Error(f"text line {n}: choice <<{choice[:20]}>> is not lottery {names[0]} or {names[1]}")
    return (session, float(tm.group(2)), float(tm.group(3)), float(tm.group(5)), float(tm.group(6)),
            names.index(choice))
