"""Restless bandit with confidence (CogBench; Ershadmanesh et al. 2023)."""

from typing import Any

from cogtestbed.data.cogbench import RESTLESS_COLUMNS, import_restless
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.restless import MODELS, cogbench_metrics
from cogtestbed.tables.restless import SCHEMA

_BASE = {"drift_sd": 4.0, "beta": 0.3, "confidence_gain": 1.0, "confidence_bias": 0.0, "confidence_noise": 0.5}


def _env() -> Any:
    from cogtestbed.environments.restless import RestlessBanditEnv
    return RestlessBanditEnv


def _agents() -> Any:
    from cogtestbed.agents.restless import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="restless-bandit",
    decoding=DECODING,
    citation=CITATION + " Task: Ershadmanesh, S., Gholamzadeh, A., Desender, K. & Dayan, P. (2023). "
    "Meta-cognitive efficiency in learned value-based choice. Proc. CCN.",
    description="CogBench restless bandit: 4 blocks, 80 trials, choice + confidence per trial (Ershadmanesh 2023)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run", headline=("performance", "accuracy", "metacognition")),
    importers=cogbench_importer(import_restless, RESTLESS_COLUMNS, file_columns={"action": "choice"}),
    pooling_unit="session",
    studies=(
        StudyDecl("recovery", "Kalman choice and confidence parameters from CogBench's 10 pooled runs", model="kalman",
                  runs=(10,), subjects=(5,)),
        StudyDecl("metric-validity", "metacognition falls with confidence noise", metric="metacognition",
                  agent="kalman", parameter="confidence_noise", values=(0.0, 0.5, 1.0, 2.0, 5.0),
                  direction="decreasing", params=_BASE, runs=(10,)),
        StudyDecl("metric-validity", "metacognition against the confidence gain (calibration; no direction)",
                  metric="metacognition", agent="kalman", parameter="confidence_gain",
                  values=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0), params=_BASE, runs=(10,)),
        StudyDecl("metric-validity", "performance rises with the choice inverse temperature", metric="performance",
                  agent="kalman", parameter="beta", values=(0.0, 0.1, 0.2, 0.4, 0.8), direction="increasing",
                  params=_BASE, runs=(10,)),
        StudyDecl("metric-validity", "accuracy rises with the choice inverse temperature", metric="accuracy",
                  agent="kalman", parameter="beta", values=(0.0, 0.1, 0.2, 0.4, 0.8), direction="increasing",
                  params=_BASE, runs=(10,)),
        StudyDecl("metric-power", "metacognition: confidence noise 0.5 vs 2", metric="metacognition",
                  agent="kalman", compare=({**_BASE, "confidence_noise": 0.5}, {**_BASE, "confidence_noise": 2.0}),
                  runs=(5, 10, 20, 40)),
    ),
    phenotype=(
        behaviour("metacognition", "Meta-cognition", 0.765, 0.664, "RestlessBandit"),
        performance("Restless bandit", 54.88, 49.98, "RestlessBandit"),
    ),
    adaptive=("a learning task: the drifting rewards and the subject's own history are the instrument"),
    headline_questions=(
        HeadlineQuestion.metric("metacognition", "CogBench metacognition between two LLMs: confidence noise 0.5 vs 2",
                                "metacognition", ("kalman:confidence_noise=0.5", "kalman:confidence_noise=2"), "2:40"),
    ),
)
