"""The trial table of the Balloon Analogue Risk Task (Lejuez et al. 2002; CogBench): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import REWARDED, RowRule, TrialSchema, Values

EXPERIMENT = "bart"
#: Balloon labels by index (``balloon_idx``): CogBench's letters.
ALPHABET = "ABCDEFGHIJ"

#: A balloon's pumps (``action``) lie in 0..M; it pays its pumps unless it popped (0 points).
SCHEMA = TrialSchema(
    action=Values("int", low=0),
    reward=Values("float", low=0.0, integral=True),
    stimulus={"max_pumps": Values("int", low=1, nullable=False), "pumps": Values("int", low=0, nullable=False),
              "exploded": Values("bool", nullable=False), "balloon_idx": Values("int", low=0, nullable=False),
              "balloon_trial": Values("int", low=0, nullable=False)},
    rules=(REWARDED, RowRule("pumps <= max_pumps", ("pumps", "max_pumps"), lambda t: t["pumps"] <= t["max_pumps"]),
           RowRule("action == pumps", ("action", "pumps"), lambda t: (t["action"] == t["pumps"]).fillna(False)),
           RowRule("reward == pumps, or 0 if exploded", ("reward", "pumps", "exploded"),
                   lambda t: t["reward"] == t["pumps"].where(~t["exploded"].astype(bool), 0))),
)
