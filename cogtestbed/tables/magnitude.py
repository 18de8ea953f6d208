"""The trial table of magnitude estimation (Ma, Wang & Fountas 2025): the experiment's name and the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`).

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import RowRule, TrialSchema, Values

EXPERIMENT = "magnitude"

MODALITIES = ("text", "image", "text+image")
RANGES = ("short", "medium", "long")
#: Every ablation of App. A.3 plus the base experiment.
CONDITIONS = ("base", "verbal", "numerical", "numerical-biased", "noise-constant", "noise-gradual",
              "context-short", "context-long", "order-reversal")
#: The five ablations BCS sums over (Sec. 3.5): all expected to raise the prior weight.
BCS_ABLATIONS = ("verbal", "numerical", "noise-constant", "noise-gradual", "context-long")
#: [gap] shift of the biased numerical-steering range, as a fraction of the session width W
#: (the stated range is the true one moved up by 0.5 W).
NUMERICAL_BIAS = 0.5
#: The four tasks (Sec. 3.1); the environment's prompts are keyed in this order.
TASK_NAMES = ("marker-location", "line-ratio", "maze-distance", "duration")
#: Tasks shown as a picture (and as text).
VISUAL_TASKS = ("marker-location", "line-ratio", "maze-distance")
#: The valid answers of each task (maze distances in path units, durations in seconds).
VALID_ANSWERS: dict[str, tuple[float, float]] = {
    "marker-location": (0.0, 1.0), "line-ratio": (0.0, 1.0), "maze-distance": (0.0, 100.0), "duration": (0.0, 600.0)}

#: A numeric estimate (any finite number: answers may overshoot the range).
SCHEMA = TrialSchema(
    action=Values("float"),
    reward=Values("float"),
    stimulus={"x": Values("float", nullable=False), "range_low": Values("float", nullable=False),
              "range_high": Values("float", nullable=False), "blur": Values("float", low=0.0)},
    rules=(RowRule("range_low <= x <= range_high", ("x", "range_low", "range_high"),
                   lambda t: (t["range_low"] <= t["x"]) & (t["x"] <= t["range_high"]), only_valid=False),),
)
