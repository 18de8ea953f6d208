"""Revealed belief vs stated answer on dice, coins, choice and preference items (2024)."""

from cogtestbed.agents.revealed import AGENTS
from cogtestbed.environments.revealed import RevealedBeliefEnv
from cogtestbed.experiments.spec import ExperimentSpec, Generator, MetricsSpec, StudyDecl
from cogtestbed.inference.revealed import METRIC_OPTIONS, revealed_metrics
from cogtestbed.inference.revealed_model import MODELS

#: Dissonant agent with the paper's median first-option bias (β_first ≈ 2, App. D tables) and a
#: calibrated StaA channel; the other biases at 0.
_BIASED = {"beta_first": 2.0, "theta": 8.0}

SPEC = ExperimentSpec(
    name="revealed-belief",
    citation="Anonymous (2024). Do Large Language Models Exhibit Cognitive Dissonance? Studying the Difference "
    "Between Revealed Beliefs and Stated Answers. ACL submission.",
    description="Revealed belief (next-token distribution over outcomes) vs stated answer (5-option MCQ) on "
    "dice, coins, choice and preference items; ~480 settings x 2 channels",
    env_cls=RevealedBeliefEnv,
    agents=AGENTS,
    models=MODELS,
    generators={"dissonant": Generator("dissonant")},
    metrics=MetricsSpec(revealed_metrics, unit="per_subject", headline=("chebyshev", "l1", "symkl", "staa_error"),
                        options=METRIC_OPTIONS),
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
                  metric="chebyshev", agent="dissonant-sampler", compare=({}, _BIASED)),
        StudyDecl("metric-power", "anchoring from 100 samples per item: β_anchor 0 vs 0.4",
                  metric="chebyshev", agent="dissonant-sampler", compare=({}, {"beta_anchor": 0.4})),
    ),
    expected_failures={
        "pointwise_likelihood": "the dissonant model still writes its NLL directly; no pointwise_kernel yet",
        "mle_recovery": "fit_mle needs the pointwise_kernel the dissonant model does not have yet",
    },
)
