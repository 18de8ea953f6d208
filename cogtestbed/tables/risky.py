"""The trial table of risky choice between two 50/50 lotteries (Spektor, Kellen, Rieskamp & Klauer
2024, as transcribed in Psych-201): the experiment's name, the schema its environment declares
(:class:`~cogtestbed.schema.TrialSchema`) and the lottery summaries the metrics and models read.

One row per trial.  ``x1``, ``x2`` are the outcomes of the lottery named first (each with
probability ½), ``y1``, ``y2`` those of the lottery named second, in the order the prompt states
them; ``letter0`` / ``letter1`` the two lotteries' names; ``context`` the index of the design's
lottery set the session was drawn from (missing in imported data).  ``action`` 0 = the first-named
lottery, 1 = the second.  The task shows no outcome: ``reward`` is the expected value of the chosen
lottery (this project's choice, so a generic mean of ``reward`` is the expected value earned).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cogtestbed.schema import TrialSchema, Values

EXPERIMENT = "risky-choice"
#: The four outcome columns, in the order the prompt states them.
OUTCOME_COLUMNS = ("x1", "x2", "y1", "y2")

SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float"),
    stimulus={"x1": Values("float", nullable=False), "x2": Values("float", nullable=False),
              "y1": Values("float", nullable=False), "y2": Values("float", nullable=False),
              "context": Values("int", low=0, required=False)},
)


def pair_kind(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Domain of a 50/50 lottery with outcomes ``lo`` ≤ ``hi``: 0 gain (no outcome below 0), 1 loss
    (none above 0), 2 mixed (one of each)."""
    return np.where(lo >= 0.0, 0, np.where(hi <= 0.0, 1, 2))


def lottery_summaries(trials: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per row: expected values ``ev0``/``ev1`` and ranges ``range0``/``range1`` of the first- and
    second-named lottery, and ``mixed`` (both lotteries have a gain and a loss), ``gain``
    (neither has a loss), ``loss`` (neither has a gain).  The riskier lottery of a 50/50 pair is the
    one with the wider range (its outcomes' standard deviation is half the range)."""
    x = trials[list(OUTCOME_COLUMNS)].to_numpy(dtype=np.float64)
    lo0, hi0 = np.minimum(x[:, 0], x[:, 1]), np.maximum(x[:, 0], x[:, 1])
    lo1, hi1 = np.minimum(x[:, 2], x[:, 3]), np.maximum(x[:, 2], x[:, 3])
    k0, k1 = pair_kind(lo0, hi0), pair_kind(lo1, hi1)
    return {"ev0": 0.5 * (x[:, 0] + x[:, 1]), "ev1": 0.5 * (x[:, 2] + x[:, 3]),
            "range0": hi0 - lo0, "range1": hi1 - lo1,
            "mixed": (k0 == 2) & (k1 == 2), "gain": (k0 == 0) & (k1 == 0), "loss": (k0 == 1) & (k1 == 1)}
