"""Horizon task (CogBench; Wilson et al. 2014): 4 forced + 1 or 6 free choices per game."""

from typing import Any

from cogtestbed.data.cogbench import HORIZON_COLUMNS, HORIZON_EXCLUDED, import_horizon
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.horizon import MODELS, cogbench_metrics
from cogtestbed.metrics_result import Z_POOLED
from cogtestbed.tables.horizon import SCHEMA

_BASE = {"bonus_h1": 0.0, "bonus_h6": 6.0, "temperature_h1": 5.0, "temperature_h6": 8.0, "bias": 0.0}


def _env() -> Any:
    from cogtestbed.environments.horizon import HorizonEnv
    return HorizonEnv


def _agents() -> Any:
    from cogtestbed.agents.horizon import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="horizon",
    decoding=DECODING,
    citation=CITATION + " Task: Wilson, R. C., Geana, A., White, J. M., Ludvig, E. A. & Cohen, J. D. "
    "(2014). Humans use directed and random exploration to solve the explore-exploit dilemma. "
    "J. Exp. Psychol. Gen. 143, 2074.",
    description="CogBench horizon task: 4 forced + 1 or 6 free choices per game (Wilson 2014)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run",
                        headline=("performance", "directed_exploration", "random_exploration"),
                        unidentified=("directed_exploration", "random_exploration", "directed_exploration_ci",
                                      "random_exploration_ci"),
                        comparisons={k: Z_POOLED for k in ("directed_exploration", "random_exploration")}),
    importers=cogbench_importer(import_horizon, HORIZON_COLUMNS, HORIZON_EXCLUDED,
                                file_columns={"action": "choice"}),
    pooling_unit="session",
    # CogBench released 1000 games a model (GPT-4, text-davinci-003; 10,000 for Claude and LLaMA-2); the design
    # check suggests 963 for info-bonus (every parameter but bonus_h6, se_ratio 0.52 at 1000: `check-design`)
    subject_sessions=1000,
    studies=(
        StudyDecl("recovery", "information-bonus agent from 1000 pooled games", model="info-bonus", runs=(1000,),
                  subjects=(5,), sampler="uniform",
                  ranges={"bonus_h1": (-5.0, 5.0), "bonus_h6": (0.0, 20.0), "temperature_h1": (2.0, 10.0),
                          "temperature_h6": (2.0, 20.0), "bias": (-3.0, 3.0)}),
        StudyDecl("metric-validity", "directed_exploration tracks the horizon-6 bonus",
                  metric="directed_exploration", agent="info-bonus", parameter="bonus_h6",
                  values=(0.0, 5.0, 10.0, 20.0), direction="increasing", params=_BASE, runs=(1000,)),
        StudyDecl("metric-validity", "random_exploration tracks the horizon-6 temperature",
                  metric="random_exploration", agent="info-bonus", parameter="temperature_h6",
                  values=(5.0, 10.0, 20.0, 30.0), direction="increasing", params=_BASE, runs=(1000,)),
        StudyDecl("metric-power", "directed exploration: bonus 5 vs 10", metric="directed_exploration",
                  agent="info-bonus", compare=({**_BASE, "bonus_h6": 5.0}, {**_BASE, "bonus_h6": 10.0}),
                  runs=(250, 500, 1000, 2000)),
    ),
    phenotype=(
        behaviour("directed_exploration", "Directed exploration", 0.326, -0.044, "HorizonTask"),
        behaviour("random_exploration", "Random exploration", 0.0174, 0.0010, "HorizonTask"),
        performance("Horizon task", 51.61, 50.43, "HorizonTask"),
    ),
    adaptive=("a learning task: each game's rewards and forced choices are the instrument, and a trial's meaning "
             "depends on the rewards seen so far"),
    headline_questions=(
        HeadlineQuestion.metric("directed exploration",
                                "CogBench directed exploration between two LLMs: information bonus 5 vs 10",
                                "directed_exploration", ("info-bonus:bonus_h6=5,temperature_h1=5",
                                "info-bonus:bonus_h6=10,temperature_h1=5"), "100:2000"),
    ),
)
