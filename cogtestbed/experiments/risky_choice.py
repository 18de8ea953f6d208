"""Risky choice between two 50/50 lotteries with gains and losses (Spektor et al. 2024, as transcribed
in Psych-201): prospect-theory and expected-value deciders."""

from typing import Any

from cogtestbed.data.spektor2024 import DATA_SET, parse_spektor2024
from cogtestbed.experiments._adaptive import AdaptiveDecl
from cogtestbed.experiments._psych201 import psych201_importer
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.risky import HEADLINE, MODEL_KEYS, MODELS, adaptive_space, risky_metrics
from cogtestbed.metrics_result import MetricComparison
from cogtestbed.tables.risky import EXPERIMENT, SCHEMA

_PT = {"lambda": 1.5, "alpha": 0.8, "theta": 1.0}


def _env() -> Any:
    from cogtestbed.environments.risky import RiskyChoiceEnv
    return RiskyChoiceEnv


def _agents() -> Any:
    from cogtestbed.agents.risky import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name=EXPERIMENT,
    citation="Spektor, M. S., Kellen, D., Rieskamp, J. & Klauer, K. C. (2024). Absolute and relative stability "
    "of loss aversion across contexts. J. Exp. Psychol. Gen. 153, 454-472. Transcript: Psych-201 "
    "(spektor2024lossaversion).",
    description="choices between two 50/50 gain/loss lotteries, 2 contexts x 49 pairs (Spektor 2024, Exp. 2)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(risky_metrics, unit="per_subject", headline=HEADLINE, unidentified=MODEL_KEYS, comparisons={
        "loss_aversion": MetricComparison("none", "loss_aversion is the median of the per-subject λ (no per-subject "
                                          "value, no standard error): compare λ with `model` prospect-theory `effect` "
                                          "lambda=D")}),
    importers=psych201_importer(EXPERIMENT, {DATA_SET: parse_spektor2024}),
    pooling_unit="subject",
    trials_field="repetitions",
    studies=(
        StudyDecl("recovery", "prospect-theory λ, α, θ at Experiment 2's 98 trials and more", model="prospect-theory",
                  trials=(98, 196, 392)),
        StudyDecl("model-recovery", "prospect theory vs expected value (AIC/BIC)",
                  models=("prospect-theory", "expected-value"), subjects=(30,)),
        StudyDecl("sbc", "hierarchical prospect theory", model="prospect-theory", subjects=(10,)),
        StudyDecl("power", "loss aversion λ 1.5 vs its value plus 0.5 (t-test on MLE)", model="prospect-theory",
                  parameter="lambda", values=(0.5,), subjects=(10, 20, 40)),
        StudyDecl("metric-validity", "loss_aversion tracks λ", metric="loss_aversion", agent="prospect-theory",
                  parameter="lambda", values=(0.7, 1.0, 1.5, 2.5, 4.0), direction="increasing", params=_PT,
                  runs=(10,)),
        StudyDecl("metric-power", "p_risky: λ 1.0 vs 2.0", metric="p_risky", agent="prospect-theory",
                  compare=({**_PT, "lambda": 1.0}, {**_PT, "lambda": 2.0}), runs=(5, 10, 20)),
    ),
    headline_questions=(
        HeadlineQuestion("lambda", "loss aversion λ of an LLM against all 282 of Spektor's people",
                         ("--model", "prospect-theory", "--effect", "lambda=0.5", "--llm", "openai:gpt-4o-mini",
                          "--population", "human:spektor2024-all", "--subjects", "5:60")),),
    adaptive=AdaptiveDecl("prospect-theory", adaptive_space, "the design's distinct lottery pairs (83 for Exp. 2)"),
)
