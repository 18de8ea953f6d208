"""The trial table of revealed belief vs stated answer: the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import RowRule, TrialSchema, Values

EXPERIMENT = "revealed-belief"

#: The index of the most probable outcome (option) among the item's ``n_outcomes``.
SCHEMA = TrialSchema(
    action=Values("int", low=0),
    reward=Values("float"),
    stimulus={"n_outcomes": Values("int", low=2, nullable=False), "target": Values("int", low=0),
              "mass_outside": Values("float", low=0.0, high=1.0)},
    rules=(RowRule("action < n_outcomes", ("action", "n_outcomes"),
                   lambda t: (t["action"] < t["n_outcomes"]).fillna(False)),),
)
