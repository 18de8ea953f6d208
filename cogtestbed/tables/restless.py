"""The trial table of the restless bandit with confidence reports (Ershadmanesh et al. 2023;
CogBench): the experiment's name and the schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import REWARDED, TrialSchema, Values

EXPERIMENT = "restless-bandit"

#: Arm 0/1; rewards are points (unbounded Gaussian draws, finite); confidence in [0, 1].
SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float"),
    stimulus={"block": Values("int", low=0, nullable=False), "best_arm": Values("int", allowed=(-1, 0, 1)),
              "confidence": Values("float", low=0.0, high=1.0), "confidence_valid": Values("bool", nullable=False),
              "accurate": Values("float", allowed=(0.0, 1.0))},
    rules=(REWARDED,),
)
