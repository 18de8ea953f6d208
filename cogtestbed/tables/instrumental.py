"""The trial table of instrumental learning (Lefebvre et al. 2017; CogBench): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import REWARDED, TrialSchema, Values

EXPERIMENT = "instrumental-learning"

#: Arm 0/1; rewards of 1 or 0 dollars; casinos 1–4 with reward probabilities in [0, 1].
SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float", allowed=(0.0, 1.0)),
    stimulus={"casino": Values("int", low=1, high=4, nullable=False),
              "mean0": Values("float", low=0.0, high=1.0), "mean1": Values("float", low=0.0, high=1.0),
              "reward0": Values("float", allowed=(0.0, 1.0)), "reward1": Values("float", allowed=(0.0, 1.0))},
    rules=(REWARDED,),
)
