"""Balloon analogue risk task (CogBench; Lejuez et al. 2002): 3 balloon types × 15."""

from typing import Any

from cogtestbed.data.cogbench import BART_COLUMNS, import_bart
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.bart import MODELS, cogbench_metrics
from cogtestbed.tables.bart import SCHEMA


def _targets(f: float, noise: float = 2.0) -> dict[str, float]:
    """Target pumps at fraction ``f`` of each balloon's expected-value optimum M/2 (capped at M)."""
    return {**{f"target_{m}": min(f * m / 2, float(m)) for m in (128, 32, 8)}, "noise": noise}


#: True targets of the recovery study: each type's target uniform on [0.05, 0.9]·M, noise on [0.5, 4].
_TARGET_RANGES = {**{f"target_{m}": (0.05 * m, 0.9 * m) for m in (128, 32, 8)}, "noise": (0.5, 4.0)}


def _env() -> Any:
    from cogtestbed.environments.bart import BartEnv
    return BartEnv


def _agents() -> Any:
    from cogtestbed.agents.bart import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="bart",
    decoding=DECODING,
    citation=CITATION + " Task: Lejuez, C. W. et al. (2002). Evaluation of a behavioral measure of risk "
    "taking: the Balloon Analogue Risk Task. J. Exp. Psychol. Appl. 8, 75.",
    description="CogBench BART: 3 balloon types (M = 128, 32, 8) x 15, one call per pump",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run", headline=("performance", "risk")),
    importers=cogbench_importer(import_bart, BART_COLUMNS, file_columns={"action": "pumps"}),
    pooling_unit="session",
    trials_field="balloons_per_type",
    studies=(
        StudyDecl("recovery", "target pumps per balloon type from 1 and 10 pooled runs", model="target",
                  runs=(1, 10), subjects=(10,), sampler="uniform", ranges=_TARGET_RANGES),
        StudyDecl("metric-validity", "risk rises with the target fraction", metric="risk", agent="target",
                  parameter="target_32", values=(2.0, 8.0, 16.0, 24.0, 32.0), direction="increasing",
                  params=_targets(0.5), runs=(10,)),
        StudyDecl("metric-power", "risk: targets at 0.5x vs 0.6x the optimum", metric="risk", agent="target",
                  compare=(_targets(0.5), _targets(0.6)), runs=(2, 5, 10, 20, 40)),
    ),
    phenotype=(
        behaviour("risk", "Risk taking", 17.22, 0.99, "BART"),
        performance("BART", 12.8, 0.88, "BART"),
    ),
    adaptive=("each balloon's pumps follow from the subject's own earlier pumps and the drawn explosion points; "
             "there is no design variable to choose between trials"),
    headline_questions=(
        HeadlineQuestion.metric("risk", "CogBench risk taking (mean pumps) between two LLMs: targets at 0.5x vs "
                                "0.6x the optimum", "risk", ("target:target_128=32,target_32=8,target_8=2,noise=2",
                                                             "target:target_128=38.4,target_32=9.6,target_8=2.4,noise=2"),
                                "2:40"),
    ),
)
