"""Revealed belief vs stated answer on dice, coins, choice and preference items (2024)."""

from typing import Any

from cogtestbed.experiments.spec import ExperimentSpec, Generator, HeadlineQuestion, MetricsSpec, StudyDecl, lazy
from cogtestbed.inference.revealed import METRIC_OPTIONS, revealed_metrics
from cogtestbed.inference.revealed_model import MODELS
from cogtestbed.tables.revealed import SCHEMA

#: Dissonant agent with the paper's median first-option bias (β_first ≈ 2, App. D tables) and a
#: calibrated StaA channel; the other biases at 0.
_BIASED = {"beta_first": 2.0, "theta": 8.0}
#: Items with a uniform p* over k = 2, 6 (choices) and 12 (one d12) outcomes, RevB only: the
#: setting of this project's noise-floor table (its design notes, not the paper, which has none).
_UNIFORM_ITEMS = {"scenarios": ("choice", "dice"), "variants": ("regular",), "choice_options": (2, 6),
                  "n_dice": (1,), "dice_faces": (12,), "channels": ("revb",)}
#: Regular and Independent d6 items, RevB only: an anchoring shift moves P(previous outcome).
_ANCHOR_ITEMS = {"scenarios": ("dice",), "variants": ("regular", "independent"), "n_dice": (1,),
                 "dice_faces": (6,), "channels": ("revb",)}
#: Samples per item swept by the samples-to-detect studies, and the replicate runs per setting.
_SAMPLE_SIZES = (10, 25, 50, 100, 250, 500)
_DETECT_RUNS = (5,)


def _env() -> Any:
    from cogtestbed.environments.revealed import RevealedBeliefEnv
    return RevealedBeliefEnv


def _agents() -> Any:
    from cogtestbed.agents.revealed import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="revealed-belief",
    citation="Anonymous (2024). Do Large Language Models Exhibit Cognitive Dissonance? Studying the Difference "
    "Between Revealed Beliefs and Stated Answers. ACL submission.",
    description="Revealed belief (next-token distribution over outcomes) vs stated answer (5-option MCQ) on "
    "dice, coins, choice and preference items; ~480 settings x 2 channels",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators={"dissonant": Generator("dissonant")},
    metrics=MetricsSpec(revealed_metrics, unit="per_subject", headline=("chebyshev", "l1", "symkl", "staa_error"),
                        options=METRIC_OPTIONS, paired_by=("items", ("item", "channel"))),
    pooling_unit="subject",
    trials_field=None,
    studies=(
        StudyDecl("recovery", "every bias of the dissonant agent from exact (Dirichlet-noised) distributions",
                  model="dissonant"),
        StudyDecl("metric-validity", "RevB Chebyshev grows with the first-option bias", metric="chebyshev",
                  agent="dissonant", parameter="beta_first", values=(0.0, 0.5, 1.0, 2.0, 3.0),
                  direction="increasing"),
        StudyDecl("metric-validity", "StaA error falls as the correct answer's log-odds θ grows",
                  metric="staa_error", agent="dissonant", parameter="theta", values=(0.0, 1.0, 2.0, 4.0, 8.0),
                  direction="decreasing"),
        StudyDecl("metric-power", "first-option bias from 100 samples per item: β_first 0 vs 2",
                  metric="chebyshev", agent="dissonant-sampler", compare=({}, _BIASED), runs=_DETECT_RUNS),
        StudyDecl("metric-power", "anchoring from 100 samples per item: β_anchor 0 vs 0.4",
                  metric="chebyshev", agent="dissonant-sampler", compare=({}, {"beta_anchor": 0.4}),
                  runs=_DETECT_RUNS),
        StudyDecl("metric-validity", "sampling noise floor (this project's addition): RevB Chebyshev of a "
                  "calibrated sampler on uniform k = 2, 6, 12 items falls with the samples per item",
                  metric="chebyshev",
                  agent="dissonant-sampler", parameter="n_samples", values=(100.0, 500.0, 1000.0),
                  direction="decreasing", design=_UNIFORM_ITEMS),
        StudyDecl("metric-power", "samples per item to detect a first-option bias (β_first 0 vs 0.4: "
                  "P(first) of a 2-choice .50 -> .60)", metric="chebyshev", agent="dissonant-sampler",
                  compare=({}, {"beta_first": 0.4}), parameter="n_samples", values=_SAMPLE_SIZES,
                  runs=_DETECT_RUNS, design={**_UNIFORM_ITEMS, "scenarios": ("choice",)}),
        StudyDecl("metric-power", "samples per item to detect an anchoring shift (β_anchor 0 vs 0.44: "
                  "P(previous face) of a d6 1/6 -> 1/6 + .07)", metric="chebyshev", agent="dissonant-sampler",
                  compare=({}, {"beta_anchor": 0.44}), parameter="n_samples", values=_SAMPLE_SIZES,
                  runs=_DETECT_RUNS, design=_ANCHOR_ITEMS),
    ),
    adaptive=("answers are probability distributions (no discrete answer space for an exact information gain) and "
             "the metrics compare them item by item over the published item set"),
    headline_questions=(
        HeadlineQuestion.metric("revealed vs stated gap",
                                "Chebyshev distance of revealed from stated beliefs between two LLMs: first-option "
                                "bias β_first 0 vs 2",
                                "chebyshev", ("dissonant-sampler", "dissonant-sampler:beta_first=2,theta=8"), "2:40"),
    ),
)
