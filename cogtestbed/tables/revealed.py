"""The trial table of revealed belief vs stated answer: the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cogtestbed.schema import RowRule, TrialSchema, Values, index_rule, list_rule

EXPERIMENT = "revealed-belief"
#: The options A–E of a stated-answer (StaA) item: ``correct_option`` indexes them on every row.
N_MCQ_OPTIONS = 5



def _staa_option(t: pd.DataFrame) -> np.ndarray:
    """On StaA rows ``correct_option`` indexes the row's own options (``n_outcomes`` of them)."""
    return (t["channel"].astype(str) != "staa").to_numpy() | index_rule("correct_option", "n_outcomes").holds(t)


#: The index of the most probable outcome (option) among the item's ``n_outcomes``; the list
#: columns the metrics read are checked row by row (lengths, ranges, exact distributions).
SCHEMA = TrialSchema(
    action=Values("int", low=0),
    reward=Values("float"),
    stimulus={"n_outcomes": Values("int", low=2, nullable=False), "target": Values("int", low=0),
              "mass_outside": Values("float", low=0.0, high=1.0),
              "channel": Values("text", allowed=("revb", "staa"), nullable=False),
              "correct_option": Values("int", low=0, high=N_MCQ_OPTIONS - 1, nullable=False),
              "p_star": Values("list", nullable=False), "probs": Values("list"), "logprobs": Values("list")},
    rules=(RowRule("action < n_outcomes", ("action", "n_outcomes"),
                   lambda t: (t["action"] < t["n_outcomes"]).fillna(False)),
           list_rule("p_star", length="n_outcomes", low=0.0, high=1.0, total=1.0, only_valid=False,
                     what="a ground-truth distribution"),
           list_rule("probs", length="n_outcomes", low=0.0, high=1.0, total=1.0,
                     what="the answer's renormalised distribution"),
           list_rule("logprobs", length="n_outcomes", high=0.0, what="log-probabilities"),
           RowRule("on a StaA row correct_option is an option index in 0 .. n_outcomes - 1",
                   ("channel", "correct_option", "n_outcomes"), _staa_option, only_valid=False)),
)
