"""The trial table of belief coherence (Yamin et al. 2026): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import TrialSchema, Values

EXPERIMENT = "belief-coherence"

#: Probabilities in [0, 1] (belief and lie calls) or a decision code 0–2 (Yes / Defer / No).
SCHEMA = TrialSchema(
    action=Values("float", low=0.0, high=2.0),
    reward=Values("float"),
    stimulus={"p_true": Values("float", low=0.0, high=1.0), "p_elicited": Values("float", low=0.0, high=1.0),
              "theta": Values("int", allowed=(0, 1), nullable=False)},
)
