"""Probabilistic reasoning (CogBench; Dasgupta et al. 2020): wheel of fortune + urns."""

from typing import Any

from cogtestbed.data.cogbench import PROBABILISTIC_COLUMNS, PROBABILISTIC_REPEAT_KEY, import_probabilistic
from cogtestbed.experiments._cogbench import CITATION, DECODING, behaviour, cogbench_importer, performance
from cogtestbed.experiments.spec import (
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.probabilistic import MODELS, cogbench_metrics
from cogtestbed.metrics_result import Z_POOLED
from cogtestbed.tables.probabilistic import SCHEMA

_BASE = {"beta_prior": 0.6, "beta_likelihood": 0.4, "bias": 0.0, "noise_sd": 0.5}


def _env() -> Any:
    from cogtestbed.environments.probabilistic import ProbabilisticReasoningEnv
    return ProbabilisticReasoningEnv


def _agents() -> Any:
    from cogtestbed.agents.probabilistic import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="probabilistic-reasoning",
    decoding=DECODING,
    citation=CITATION + " Task: Dasgupta, I., Schulz, E., Tenenbaum, J. B. & Gershman, S. J. (2020). "
    "A theory of learning to infer. Psychol. Rev. 127, 412.",
    description="CogBench probabilistic reasoning: wheel of fortune + urns, 2 judgements per run (Dasgupta 2020)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(cogbench_metrics, unit="per_run",
                        headline=("performance", "prior_weighting", "likelihood_weighting"),
                        unidentified=("prior_weighting", "likelihood_weighting", "prior_weighting_ci",
                                      "likelihood_weighting_ci", "ratio", "ratio_ci", "prior_minus_likelihood"),
                        comparisons={k: Z_POOLED for k in ("prior_weighting", "likelihood_weighting")}),
    importers=cogbench_importer(import_probabilistic, PROBABILISTIC_COLUMNS,
                                file_columns={"action": "left_pred", "estimate": "left_pred"}, key=(),
                                repeat_key=PROBABILISTIC_REPEAT_KEY),
    pooling_unit="session",
    studies=(
        StudyDecl("recovery", "generalised-Bayes weights from 200 pooled runs", model="generalised-bayes",
                  runs=(200,), subjects=(10,), sampler="uniform",
                  ranges={"beta_prior": (-0.5, 1.5), "beta_likelihood": (-0.5, 1.5), "bias": (-0.5, 0.5),
                          "noise_sd": (0.2, 1.5)}),
        StudyDecl("metric-validity", "prior_weighting tracks β_prior", metric="prior_weighting",
                  agent="generalised-bayes", parameter="beta_prior", values=(0.0, 0.5, 1.0, 1.5),
                  direction="increasing", params=_BASE, runs=(200,)),
        StudyDecl("metric-validity", "likelihood_weighting tracks β_likelihood", metric="likelihood_weighting",
                  agent="generalised-bayes", parameter="beta_likelihood", values=(0.0, 0.5, 1.0, 1.5),
                  direction="increasing", params=_BASE, runs=(200,)),
        StudyDecl("metric-power", "prior weighting 0.6 vs 0.8", metric="prior_weighting", agent="generalised-bayes",
                  compare=({**_BASE, "beta_prior": 0.6}, {**_BASE, "beta_prior": 0.8}),
                  runs=(25, 50, 100, 200, 400)),
    ),
    phenotype=(
        behaviour("prior_weighting", "Prior weighting", 0.876, -0.004, "ProbabilisticReasoning"),
        behaviour("likelihood_weighting", "Likelihood weighting", 0.913, 0.019, "ProbabilisticReasoning"),
        performance("Probabilistic reasoning", 0.828, 0.656, "ProbabilisticReasoning"),
    ),
    adaptive=("CogBench's fixed items: the prior and likelihood weightings are regressions over the published item "
             "set"),
    headline_questions=(
        HeadlineQuestion.metric("prior weighting", "CogBench prior weighting between two LLMs: 0.6 vs 0.8",
                                "prior_weighting", ("generalised-bayes:beta_prior=0.6,beta_likelihood=0.4",
                                "generalised-bayes:beta_prior=0.8,beta_likelihood=0.4"), "10:400"),
    ),
)
