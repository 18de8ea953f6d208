"""Psych-201's ``shahar2019twosteptask`` as two-step trial rows (Shahar et al. 2019, PLOS Comp. Biol.;
554 participants of the NSPN cohort, two measurements 18 months apart).

Its ``generate_prompts.py`` (kept beside the data) is the authority on each sentence:

* the header names, per participant, random letters ``option_1``/``option_2`` (first-stage
  ``choice1`` 1/2), ``state_1``/``state_2`` (``second_stage_state`` 2 / otherwise) and
  ``option_3``/``option_4`` (second-stage ``choice2`` 1/2, the same two letters in both states);
* each trial is ``You are presented with first-stage options A and B. You choose <<A>>. This leads
  to state S. In state S, you choose <<R>>. You receive a reward|no reward.``;
* the second measurement starts after ``You are now back 18 months later …``.

Mapping to the two-step table (:mod:`cogtestbed.tables.twostep`): ``action`` 0/1 = option_1 /
option_2; ``action2`` 0/1 = option_3 / option_4; ``planet`` = the index of the first-stage option
that *commonly* leads to the reached state, so that ``common`` is ``action == planet`` as in the
task's environment.  The transcript does not say which transition is common (the source's
``transition`` column is not written), so it is read from the participant's own trials: the
pairing of options and states seen on the majority of trials (the task's 70/30 design; in this
file option_1 reaches state_2 on 62–78% of each participant's trials).  A participant whose
pairing is not a clear majority (at least :data:`MIN_COMMON_SHARE`) is refused.  ``session`` is
the measurement − 1 and ``trial`` counts within it; reward probabilities (``p_D``…``p_K``) are not
in the transcript (NaN); ``rt1_ms``/``rt2_ms`` are the record's ``RTs`` (two per trial, in ms).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from cogtestbed.data.psych201 import Psych201Error, Record
from cogtestbed.tables.twostep import ALIEN_LETTERS

#: The data set's name in Psych-201.
DATA_SET = "shahar2019twosteptask"
#: The smallest share of a participant's trials on the majority pairing of options and states
#: that is read as the common transition (this project's threshold; the design's share is 0.7).
MIN_COMMON_SHARE = 0.55

_HEADER = re.compile(
    r"two options: (\w+) and (\w+)\.\nYour first-stage choice will lead to one of two second-stage states: "
    r"(\w+) or (\w+)\.\nIn each second-stage state, you will make another choice between two options: "
    r"(\w+) and (\w+)\.")
_TRIAL = re.compile(
    r"You are presented with first-stage options (\w+) and (\w+)\. You choose <<(\w+)>>\. This leads to state "
    r"(\w+)\. In state (\w+), you choose <<(\w+)>>\. You receive (a reward|no reward)\.")
_SECOND = "You are now back 18 months later"


def parse_shahar2019(record: Record) -> pd.DataFrame:
    """One participant's trials of ``shahar2019twosteptask`` as two-step rows (module docstring)."""
    letters = _header_letters(record)
    found = _trial_sentences(record)
    first, state, second = _choice_codes(found, letters)
    planet = _planets(first, state)
    session = _sessions(record, found)
    trial = np.concatenate([np.arange(np.sum(session == s)) for s in (0, 1)]).astype(np.int64)
    reward = np.array([1.0 if m.group(7) == "a reward" else 0.0 for m in found])
    rts = _reaction_times(record, len(found))
    n = len(found)
    nan = np.full(n, np.nan)
    return pd.DataFrame({
        "session": session, "trial": trial, "planet": planet.astype(np.int64), "common": first == planet,
        "action2": second.astype(np.int64),
        "alien": pd.array([ALIEN_LETTERS[2 * p + a] for p, a in zip(planet, second, strict=True)], dtype="string"),
        **{f"p_{x}": nan for x in ALIEN_LETTERS},
        "action": pd.array(first, dtype="Int64"), "reward": reward, "valid": np.ones(n, dtype=bool),
        "rt1_ms": rts[:, 0], "rt2_ms": rts[:, 1],
    })


def _header_letters(record: Record) -> tuple[str, ...]:
    """The header's letters ``(option_1, option_2, state_1, state_2, option_3, option_4)``."""
    head = _HEADER.search(record.text)
    if head is None:
        raise Psych201Error("no header naming the options and states of the two-stage task")
    o1, o2, s1, s2, o3, o4 = head.groups()
    if len({o1, o2, s1, s2}) != 4 or o3 == o4:
        raise Psych201Error(f"the header's letters are not distinct: {head.groups()}")
    return head.groups()


def _trial_sentences(record: Record) -> list[re.Match[str]]:
    """Every trial sentence of the record (refused where one does not read as the generator writes it)."""
    sentences = record.text.count("You are presented with")
    found = list(_TRIAL.finditer(record.text))
    if len(found) != sentences or not found:
        raise Psych201Error(f"{sentences - len(found)} of {sentences} trial sentences do not read as the "
                            "generator writes them")
    return found


def _choice_codes(found: list[re.Match[str]], letters: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first-stage choice, the reached state and the second-stage choice of each trial as 0/1
    (refused where a trial names an option or state the header does not)."""
    o1, o2, s1, s2, o3, o4 = letters
    first = np.array([{o1: 0, o2: 1}.get(m.group(3), -1) for m in found])
    state = np.array([{s1: 0, s2: 1}.get(m.group(4), -1) for m in found])
    second = np.array([{o3: 0, o4: 1}.get(m.group(6), -1) for m in found])
    unknown = (first < 0) | (state < 0) | (second < 0)
    bad = [i for i, m in enumerate(found)
           if (m.group(1), m.group(2)) != (o1, o2) or m.group(4) != m.group(5) or unknown[i]]
    if bad:
        raise Psych201Error(f"trial {bad[0] + 1} names an option or state the header does not: "
                            f"{found[bad[0]].group(0)[:120]!r}")
    return first, state, second


def _planets(first: np.ndarray, state: np.ndarray) -> np.ndarray:
    """Per trial, the first-stage option that commonly reaches the reached state: the majority
    pairing of options and states (refused below :data:`MIN_COMMON_SHARE`)."""
    same = float(np.mean(first == state))  # option_1 -> state_1 pairing
    share = max(same, 1.0 - same)
    if share < MIN_COMMON_SHARE:
        raise Psych201Error(f"the common transition is not clear from the trials (the majority pairing of "
                            f"options and states holds on {share:.0%}, below {MIN_COMMON_SHARE:.0%})")
    # planet k = the state option k commonly reaches
    return state if same >= 0.5 else 1 - state


def _sessions(record: Record, found: list[re.Match[str]]) -> np.ndarray:
    """0 for the first measurement's trials, 1 for those after the 18-months sentence."""
    split = record.text.find(_SECOND)
    return np.array([int(split >= 0 and m.start() > split) for m in found], dtype=np.int64)


def _reaction_times(record: Record, n: int) -> np.ndarray:
    """The record's ``RTs`` as (n, 2) milliseconds (NaN where the record has none)."""
    raw = record.extra.get("RTs")
    if raw is None:
        return np.full((n, 2), np.nan)
    values = np.array([np.nan if v is None else v for v in raw], dtype=np.float64)
    if values.size != 2 * n:
        raise Psych201Error(f"'RTs' holds {values.size} values for {n} trials (two per trial)")
    return values.reshape(n, 2)
