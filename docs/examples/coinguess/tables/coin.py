"""The coin-guess trial table: its schema (the experiment's name is declared once, in the spec)."""

from cogtestbed.extend import REWARDED, TrialSchema, Values

#: Flips per trial (the design's default; the schema allows up to MAX_FLIPS).
MAX_FLIPS = 20

SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float", allowed=(0.0, 1.0)),
    stimulus={"heads": Values("int", low=0, high=MAX_FLIPS, nullable=False),
              "flips": Values("int", low=1, high=MAX_FLIPS, nullable=False),
              "heads_coin": Values("bool", nullable=False)},
    rules=(REWARDED,),
)
