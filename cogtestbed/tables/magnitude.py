"""The trial table of magnitude estimation (Ma, Wang & Fountas 2025): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import RowRule, TrialSchema, Values

EXPERIMENT = "magnitude"

#: A numeric estimate (any finite number: answers may overshoot the range).
SCHEMA = TrialSchema(
    action=Values("float"),
    reward=Values("float"),
    stimulus={"x": Values("float", nullable=False), "range_low": Values("float", nullable=False),
              "range_high": Values("float", nullable=False), "blur": Values("float", low=0.0)},
    rules=(RowRule("range_low <= x <= range_high", ("x", "range_low", "range_high"),
                   lambda t: (t["range_low"] <= t["x"]) & (t["x"] <= t["range_high"]), only_valid=False),),
)
