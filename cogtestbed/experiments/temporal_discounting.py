"""Temporal discounting (CogBench; Ruggeri et al. 2022): staircase + 4 anomaly items."""

from typing import Any

from cogtestbed.data.cogbench import DISCOUNTING_COLUMNS, DISCOUNTING_KEY, import_discounting
from cogtestbed.experiments._adaptive import AdaptiveDecl
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.discounting import MODELS, adaptive_space, cogbench_metrics
from cogtestbed.tables.discounting import SCHEMA

_TAU = 0.05


def _env() -> Any:
    from cogtestbed.environments.discounting import TemporalDiscountingEnv
    return TemporalDiscountingEnv


def _agents() -> Any:
    from cogtestbed.agents.discounting import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="temporal-discounting",
    decoding=DECODING,
    citation=CITATION + " Task: Ruggeri, K. et al. (2022). The globalizability of temporal discounting. "
    "Nat. Hum. Behav. 6, 1386.",
    description="CogBench temporal discounting: Ruggeri staircase, 3 baselines + 4 anomalies",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run", headline=("score",)),
    importers=cogbench_importer(import_discounting, DISCOUNTING_COLUMNS, file_columns={"summary_score": "score"},
                                key=DISCOUNTING_KEY),
    pooling_unit="session",
    studies=(
        StudyDecl("recovery", "hyperbolic log k from 1 and 10 pooled runs (tau = 0.05)", model="hyperbolic",
                  runs=(1, 10), subjects=(20,), sampler="uniform", ranges={"k": (0.005, 1.0)},
                  fixed={"temperature": _TAU}),
        StudyDecl("metric-validity", "the CogBench score against k (not monotone: documented)", metric="score",
                  agent="hyperbolic", parameter="k", values=(0.005, 0.05, 0.15, 0.3, 0.8),
                  direction="any", params={"temperature": _TAU}, runs=(100,)),
        # k 0.05 and 0.3 score alike (10 and 9 without noise, means 9.1 and 9.1 at tau 0.05: the score is not
        # monotone in k), so that pair's power stays near alpha at every size; 0.005 vs 0.8 differ by 1.3.
        StudyDecl("metric-power", "score: k 0.005 vs 0.8", metric="score", agent="hyperbolic",
                  compare=({"k": 0.005, "temperature": _TAU}, {"k": 0.8, "temperature": _TAU}),
                  runs=(5, 10, 20, 40)),
    ),
    phenotype=(behaviour("score", "Temporal discounting", 10.3, 9.106, "TemporalDiscounting"),),
    adaptive=AdaptiveDecl("hyperbolic", adaptive_space,
                          "B dollars now vs int(B*f) dollars in m months (16 factors x 6 delays; ours)"),
    headline_questions=(
        HeadlineQuestion.metric("score", "CogBench temporal discounting score between two LLMs: k 0.005 vs 0.8",
                                "score", ("hyperbolic:k=0.005", "hyperbolic:k=0.8"), "2:40"),
    ),
)
