"""The trial table of the causal collider task (Rehder & Waldmann 2017): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import TrialSchema, Values

EXPERIMENT = "collider"

#: A rating on 0–100 (confidence too, where asked); observed states −1 (unobserved), 0, 1.
SCHEMA = TrialSchema(
    action=Values("float", low=0.0, high=100.0),
    reward=Values("float"),
    stimulus={"confidence": Values("float", low=0.0, high=100.0, required=False),
              **{f"obs_{v}": Values("int", allowed=(-1, 0, 1), nullable=False) for v in "xyz"},
              "task_index": Values("int", low=0, high=10, nullable=False)},
)
