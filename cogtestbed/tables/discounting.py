"""The trial table of temporal discounting (Ruggeri et al. 2022; CogBench): the experiment's name, the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`) and the codes of the
staircase's questions and anomaly items that the metrics and the CogBench importer read.

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from cogtestbed.schema import TrialSchema, Values

EXPERIMENT = "temporal-discounting"
#: The ``item`` of the one row per run that carries CogBench's summary columns (an imported run).
SUMMARY_ITEM = "summary"
#: Max value factors by code: 0 → 1.01, 1 → 1.02, 2 → 1.1, 3 → 1.2, 4 → 1.5, 5 → none.
MVF_VALUES = (1.01, 1.02, 1.1, 1.2, 1.5)
MVF_NONE = 5
ANOMALY_ITEMS = ("present_bias", "subadditivity", "delay_speedup_asymmetry", "delay_length_asymmetry")
#: CogBench's column names of the four anomaly items.
COGBENCH_ANOMALY_COLUMNS = ("present bias", "subaddictivity", "delay-speedup asymmetry-1",
                            "delay-length asymmetry-2")
BLOCKS = ("gain", "gain_magnitude", "loss")
MAX_QUESTIONS = 13
#: Codes of :func:`~cogtestbed.environments.discounting.question_list`: baseline
#: ``6·block + 2·level + down``, then anomaly ``N_BASELINE_CODES + 5·item + mvf_code``;
#: ``NOT_ASKED`` (one past the last) marks a step with no question.
N_BASELINE_CODES = 18
NOT_ASKED = N_BASELINE_CODES + len(ANOMALY_ITEMS) * len(MVF_VALUES)

#: Option 1/2 as 0/1; published summary rows (``item == "summary"``) carry scores, no answer.
SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float"),
    stimulus={"item": Values("text", nullable=False), "delay1": Values("float", low=0.0, required=False),
              "delay2": Values("float", low=0.0, required=False)},
    answered=lambda t: t["item"].astype(str) != "summary",
)
