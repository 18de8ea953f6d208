"""Magnitude estimation (BayesBench; Ma, Wang & Fountas 2025): four tasks, three sessions, ablations."""

from typing import Any

from cogtestbed.experiments._adaptive import AdaptiveDecl
from cogtestbed.experiments.spec import (
    Decoding,
    ExperimentSpec,
    HeadlineQuestion,
    MetricsSpec,
    StudyDecl,
    lazy,
    same_name_generators,
)
from cogtestbed.inference.adaptive_magnitude import ADAPTIVE_MODEL, adaptive_space, fixed_design_only, observations
from cogtestbed.inference.magnitude import (
    CONDITIONS,
    HIERARCHY_CHAINS,
    HIERARCHY_DRAWS,
    MODELS,
    VARIANCE_READINGS,
    magnitude_metrics,
)
from cogtestbed.metrics_result import MetricComparison, MetricOption
from cogtestbed.tables.magnitude import SCHEMA

#: Magnitude's headline mappings (one value per task, condition or parameter) are not one number to compare.
_NESTED = {name: MetricComparison("none", f"{name} is a mapping of values (per task or condition), not one number: "
                                  "compare bcs, or a model parameter (`model` `effect`)")
           for name in ("nrmse", "bcs_per_task", "w_prior", "factor_evidence", "rre", "bayesbench", "bias_variance",
                        "image_weight")}


def _env() -> Any:
    from cogtestbed.environments.magnitude import MagnitudeEnv
    return MagnitudeEnv


def _agents() -> Any:
    from cogtestbed.agents.magnitude import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="magnitude",
    decoding=Decoding(0.7, "Ma, Wang & Fountas 2025, App. A.2.1: \"temperature fixed at 0.7\""),
    citation="Ma, J., Wang, J. & Fountas, Z. (2025). Emergent Bayesian behaviour and optimal cue combination "
    "in LLMs. arXiv:2512.02719 (BayesBench).",
    description="BayesBench magnitude estimation: marker, line ratio, maze distance, duration; 3 sessions; "
    "ablations; text / image / text+image (Ma, Wang & Fountas 2025)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(
        fixed_design_only(magnitude_metrics), unit="per_subject", headline=("nrmse", "bcs", "bcs_per_task", "w_prior",
                                                         "factor_evidence", "rre", "bayesbench",
                                                         "bias_variance", "image_weight"),
        comparisons=_NESTED,
        unidentified=("bcs", "bcs_per_task", "bcs_signs", "w_prior", "w_prior_se", "factor_evidence", "rre",
                      "bayesbench", "image_weight", "cue_combination", "combiner_fit"),
        options={
            "bootstrap": MetricOption("bootstrap", "session-preserving bootstrap rounds (0: none)", 30, None, int),
            "seed": MetricOption("seed", "seed of the bootstrap", 0, None, int),
            "variance": MetricOption("variance", "Non-Oracle variance reading of RRE and E", "raw",
                                     VARIANCE_READINGS),
            "evidence_condition": MetricOption("evidence_condition", "condition of the factor evidence", "base",
                                               CONDITIONS),
            "hierarchy_draws": MetricOption(
                "hierarchy_draws", "draws (= tuning steps) per chain of the hierarchical w_prior fit: "
                "P(dw_prior > 0) per ablation with R-hat, ESS, divergences (0: not fitted; 1000 documented)",
                HIERARCHY_DRAWS, None, int),
            "hierarchy_chains": MetricOption("hierarchy_chains", "chains of the hierarchical w_prior fit",
                                             HIERARCHY_CHAINS, None, int),
            "forest_trees": MetricOption(
                "forest_trees", "trees of the random-forest fit of the multimodal answers from the unimodal ones "
                "(Fig. 7; cross-validated, beside linear regression; 0: not fitted; 100 documented)", 0, None, int),
        },
    ),
    pooling_unit="subject",
    trials_field="trials_per_session",
    studies=(
        StudyDecl("recovery", "static Bayes w_prior, mu_p, sigma_dec", model="static-bayes",
                  design={"trials_per_session": 50}),
        StudyDecl("recovery", "Kalman q/r (weakly identified when the gain saturates)", model="kalman"),
        StudyDecl("model-recovery", "linear vs static Bayes vs Kalman (AIC)",
                  models=("linear", "static-bayes", "kalman")),
        StudyDecl("metric-validity", "BCS falls as the prior weight drops under ablations", metric="bcs",
                  agent="ablation-inconsistent", parameter="shift", values=(0.0, 0.05, 0.3), direction="decreasing",
                  params={"w_prior": 0.4, "sigma_dec": 0.1},
                  design={"task": "line-ratio", "ranges": "medium", "trials_per_session": 30}),
    ),
    adaptive=AdaptiveDecl(ADAPTIVE_MODEL, adaptive_space,
                          "the stimulus's position in the block's range: 11 positions, ends included (ours)",
                          observations=observations, study_design=(
                              ("task", "line-ratio"), ("conditions", ("base",)), ("modalities", ("text",)),
                              ("ranges", ("medium",)))),
    headline_questions=(
        HeadlineQuestion.parameter("prior weight",
                                   "the static Bayesian observer's prior weight between two LLMs (0.3 vs 0.4)",
                                   "static-bayes", "w_prior=0.1", "2:60"),
    ),
)
