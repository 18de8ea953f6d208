"""The trial table of the two-step task (Daw et al. 2011; CogBench): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import REWARDED, RowRule, TrialSchema, Values

EXPERIMENT = "two-step"
PLANETS = ("X", "Y")
ALIEN_LETTERS = ("D", "F", "J", "K")

#: Spaceship 0/1 (``action``), alien 0/1 on the reached planet (−1: none), treasure 1/0.
SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float", allowed=(0.0, 1.0)),
    stimulus={"planet": Values("int", allowed=(-1, 0, 1), nullable=False),
              "action2": Values("int", allowed=(-1, 0, 1), nullable=False),
              "common": Values("bool", nullable=False),
              **{f"p_{x}": Values("float", low=0.0, high=1.0) for x in ALIEN_LETTERS}},
    rules=(REWARDED, RowRule("a valid trial reached a planet and chose an alien", ("planet", "action2"),
                   lambda t: (t["planet"] >= 0) & (t["action2"] >= 0)),),
)
