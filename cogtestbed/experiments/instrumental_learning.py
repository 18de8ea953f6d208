"""Instrumental learning (CogBench; Lefebvre et al. 2017): 4 two-armed casinos × 24 visits."""

from typing import Any

from cogtestbed.data.cogbench import INSTRUMENTAL_COLUMNS, INSTRUMENTAL_MAY_DIFFER, import_instrumental
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.instrumental import MODELS, cogbench_metrics
from cogtestbed.tables.instrumental import SCHEMA


def _env() -> Any:
    from cogtestbed.environments.instrumental import InstrumentalLearningEnv
    return InstrumentalLearningEnv


def _agents() -> Any:
    from cogtestbed.agents.instrumental import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="instrumental-learning",
    decoding=DECODING,
    citation=CITATION + " Task: Lefebvre, G. et al. (2017). Behavioural and neural characterization "
    "of optimistic reinforcement learning. Nat. Hum. Behav. 1, 0067.",
    description="CogBench instrumental learning: 4 two-armed casinos x 24 visits (Lefebvre 2017)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run",
                        headline=("performance", "learning_rate", "optimism_bias"),
                        unidentified=("learning_rate", "optimism_bias", "alpha", "beta", "nll_rw", "alpha_pos",
                                      "alpha_neg", "beta_pm", "nll_rw_pm", "distance_to_optimal_learning_rate",
                                      "distance_to_optimal_optimism_bias")),
    importers=cogbench_importer(import_instrumental, INSTRUMENTAL_COLUMNS,
                                file_columns={"action": "choice", "casino": "task"},
                                may_differ=INSTRUMENTAL_MAY_DIFFER),
    pooling_unit="subject",
    trials_field="visits_per_casino",
    studies=(
        StudyDecl("recovery", "RW± parameters at CogBench's 96 trials and more", model="rw-pm", trials=(96, 192, 480)),
        StudyDecl("recovery", "RW learning rate at beta = 5", model="rw", trials=(96,), sampler="uniform",
                  ranges={"alpha": (0.05, 0.95)}, fixed={"beta": 5.0}),
        StudyDecl("model-recovery", "RW vs RW± (AIC/BIC)", models=("rw", "rw-pm"), subjects=(30,)),
        StudyDecl("sbc", "hierarchical RW±", model="rw-pm", subjects=(10,)),
        StudyDecl("power", "optimism bias α⁺ − α⁻ = 0.2 (t-test on MLE)", model="rw-pm", parameter="optimism_bias",
                  values=(0.2,), subjects=(10, 20, 40, 80)),
        StudyDecl("metric-validity", "learning_rate tracks the RW α", metric="learning_rate", agent="rw",
                  parameter="alpha", values=(0.05, 0.2, 0.4, 0.6, 0.8), direction="increasing",
                  params={"beta": 5.0}, runs=(10,)),
        StudyDecl("metric-power", "optimism_bias: RW± 0.5/0.3 vs 0.3/0.3", metric="optimism_bias",
                  agent="rw-pm", compare=({"alpha_pos": 0.5, "alpha_neg": 0.3, "beta": 5.0},
                                          {"alpha_pos": 0.3, "alpha_neg": 0.3, "beta": 5.0}),
                  runs=(10, 20, 40)),
    ),
    phenotype=(
        behaviour("learning_rate", "Learning rate", 0.185, 0.425, "InstrumentalLearning"),
        behaviour("optimism_bias", "Optimism bias", 0.186, 0.184, "InstrumentalLearning"),
        performance("Instrumental learning", 0.552, 0.498, "InstrumentalLearning"),
    ),
    adaptive=("a learning task: each trial's outcome feeds the subject's learning, so a trial cannot be chosen "
             "without changing what is learnt"),
    headline_questions=(
        HeadlineQuestion.metric("optimism bias", "CogBench optimism bias between two LLMs: RW± 0.5/0.3 vs 0.3/0.3",
                                "optimism_bias", ("rw-pm:alpha_pos=0.5", "rw-pm:alpha_pos=0.3"), "2:40"),
    ),
)
