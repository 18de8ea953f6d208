"""Two-step task (CogBench; Daw et al. 2011): 20 days × 2 stages, 0.7/0.3 transitions."""

from typing import Any

from cogtestbed.data.cogbench import TWOSTEP_COLUMNS, import_twostep
from cogtestbed.data.psych201_twostep import DATA_SET as SHAHAR
from cogtestbed.data.psych201_twostep import parse_shahar2019
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments._psych201 import psych201_importer
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.twostep import MODELS, cogbench_metrics, cogbench_prefix_metrics
from cogtestbed.metrics_result import Z_POOLED
from cogtestbed.tables.twostep import SCHEMA

_BASE = {"alpha": 0.5, "beta": 5.0, "lam": 0.5, "persev": 0.0}
#: True parameters of recovery and model recovery (each model draws those it has).
_RANGES = {"w": (0.0, 1.0), "alpha": (0.2, 0.8), "beta": (2.0, 8.0), "lam": (0.0, 1.0), "persev": (-0.5, 0.5)}


def _env() -> Any:
    from cogtestbed.environments.twostep import TwoStepEnv
    return TwoStepEnv


def _agents() -> Any:
    from cogtestbed.agents.twostep import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="two-step",
    decoding=DECODING,
    citation=CITATION + " Task: Daw, N. D., Gershman, S. J., Seymour, B., Dayan, P. & Dolan, R. J. (2011). "
    "Model-based influences on humans' choices and striatal prediction errors. Neuron 69, 1204.",
    description="CogBench two-step task: 20 days x 2 stages, 0.7/0.3 transitions (Daw 2011)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run", headline=("performance", "model_basedness"),
                        prefixes=cogbench_prefix_metrics,
                        unidentified=("model_basedness", "model_basedness_ci", "reward_effect", "common_effect",
                                      "model_basedness_valid_only"),
                        comparisons={"model_basedness": Z_POOLED}),
    importers={**cogbench_importer(import_twostep, TWOSTEP_COLUMNS,
                                   file_columns={"action": "action1", "planet": "state"}),
               **psych201_importer("two-step", {SHAHAR: parse_shahar2019})},
    pooling_unit="session",
    trials_field="n_days",
    studies=(
        StudyDecl("recovery", "hybrid MB/MF from 100 pooled runs", model="hybrid", runs=(100,), subjects=(10,),
                  sampler="uniform", ranges=_RANGES),
        StudyDecl("model-recovery", "model-based vs model-free vs hybrid (BIC)",
                  models=("model-based", "model-free", "hybrid"), runs=(100,), subjects=(4,), sampler="uniform",
                  ranges=_RANGES),
        StudyDecl("power", "weight w + 0.2 (t-test on MLE, 20 pooled runs per subject)", model="hybrid",
                  parameter="w", values=(0.2,), runs=(20,), subjects=(5, 10, 20)),
        StudyDecl("metric-validity", "model_basedness tracks w", metric="model_basedness", agent="hybrid",
                  parameter="w", values=(0.0, 0.25, 0.5, 0.75, 1.0), direction="increasing",
                  params=_BASE, runs=(100,)),
        StudyDecl("metric-power", "model_basedness: w 0.3 vs 0.7", metric="model_basedness", agent="hybrid",
                  compare=({**_BASE, "w": 0.3}, {**_BASE, "w": 0.7}), runs=(10, 25, 50, 100, 200)),
    ),
    phenotype=(
        behaviour("model_basedness", "Model-basedness", 0.0263, 0.0009, "TwoStepTask"),
        performance("Two-step task", 0.527, 0.500, "TwoStepTask"),
    ),
    adaptive=("a learning task: the drifting rewards and transitions the subject has seen are the instrument"),
    headline_questions=(
        HeadlineQuestion.metric("model-basedness", "CogBench model-basedness between two LLMs: w 0.3 vs 0.7",
                                "model_basedness", ("hybrid:w=0.3", "hybrid:w=0.7"), "2:80"),
    ),
)
