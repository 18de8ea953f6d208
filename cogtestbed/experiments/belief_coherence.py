"""Belief coherence (Yamin et al. 2026): elicit P(condition | evidence), decide Yes/No/Defer, test T1–T4."""

from collections.abc import Mapping
from typing import Any

from cogtestbed.experiments._adaptive import AdaptiveDecl
from cogtestbed.experiments.spec import ExperimentSpec, Generator, HeadlineQuestion, MetricsSpec, StudyDecl, lazy
from cogtestbed.inference.adaptive_belief import ADAPTIVE_MODEL, adaptive_space, fixed_design_only, observations
from cogtestbed.inference.belief import COMPARISONS, METRIC_OPTIONS, TESTS, belief_metrics, belief_test
from cogtestbed.inference.belief_models import MODELS, mnl_uncentred
from cogtestbed.tables.belief import SCHEMA


def _mnl_to_utilities(theta: Mapping[str, Any]) -> dict[str, Any]:
    """MNL coefficients as logit-rum utilities with u(No, ·) = 0 and scale 1."""
    c = mnl_uncentred(theta)
    zero = 0.0 * c["alpha_yes"]
    return {"u_no_0": zero, "u_no_1": zero, "u_yes_0": c["alpha_yes"], "u_yes_1": c["alpha_yes"] + c["beta_yes"],
            "u_defer_0": c["alpha_defer"], "u_defer_1": c["alpha_defer"] + c["beta_defer"], "scale": 1.0 + zero}


def _loss_to_agent(theta: Mapping[str, Any]) -> dict[str, Any]:
    """Normalised losses (c_FP + c_FN = 1) as loss-rum parameters."""
    return {"c_fp": theta["c_fp"], "c_fn": 1.0 - theta["c_fp"], "c_d": theta["c_d"], "scale": theta["scale"],
            "gamma": theta["gamma"]}


_TESTS = ("t1_cmi", "t1_nested", "t1_lr", "t2", "t3", "t4")


def _study_design(test: str) -> dict[str, Any]:
    """The smallest design a test reads: π0 + decision; T3 adds the prompt variants, T4 the LIE phases."""
    return {"variants": ("pi0", "mse", "abs", "bayes") if test == "t3" else ("pi0",),
            "lie_node": None if test == "t4" else "none"}


#: Metrics options of the rejection-rate studies: only what decides each test.  T1a decides by its
#: local-permutation p-value (the bootstrap is cut to its one-resample minimum), T2 and T3 by permutation p-values (100
#: permutations); T1b by its placebo t test (the paper rule's bootstrap CI with 200 resamples is reported
#: alongside), T4 by a bootstrap CI (200 resamples); T4 without the random-forest
#: baseline, i.e. "incoherent beyond rounding" (the baseline compares an LLM with a learned model;
#: it is not a test of coherence at level α).
_STUDY_OPTIONS: dict[str, dict[str, Any]] = {
    "t1_cmi": {"n_boot": 1, "n_perm": 100}, "t1_nested": {"n_boot": 200}, "t2": {"n_perm": 100},
    "t3": {"n_perm": 100},
    "t4": {"n_boot": 200, "baseline": "no"},
}


#: Metrics options of the quick conformance check: every test and the random-forest baseline run,
#: with 20 bootstrap resamples and permutations and 2 T1b placebos (the fewest its t test takes)
#: instead of the defaults.
_SMOKE_OPTIONS: dict[str, Any] = {"n_boot": 20, "n_perm": 20, "t1b_placebos": 2}


def _test_study(kind: str, test: str, description: str, agent: str, parameter: str,
                values: tuple[float, ...]) -> StudyDecl:
    return StudyDecl(kind, description, test=test, agent=agent, parameter=parameter,  # type: ignore[arg-type]
                     values=values, design=_study_design(test), metric_options=_STUDY_OPTIONS.get(test, {}))


def _env() -> Any:
    from cogtestbed.environments.belief import BeliefCoherenceEnv
    return BeliefCoherenceEnv


def _agents() -> Any:
    from cogtestbed.agents.belief import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    name="belief-coherence",
    citation="Yamin, K., Tang, J., Cortes-Gomez, S., Sharma, A., Horvitz, E. & Wilder, B. (2026). Do LLMs Act "
    "Like Rational Agents? Measuring Belief Coherence in Probabilistic Decision Making. arXiv 2602.06286.",
    description="Belief coherence: elicit P(condition | evidence) from a Bayesian network, decide Yes/No/Defer; "
    "rationality tests T1-T4 (Yamin et al. 2026)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators={"mnl": Generator("logit-rum", params=_mnl_to_utilities),
                "loss": Generator("loss-rum", params=_loss_to_agent)},
    metrics=MetricsSpec(fixed_design_only(belief_metrics), unit="per_subject",
                        headline=(*_TESTS, "t1_cmi_isotonic", "accuracy"), options=METRIC_OPTIONS,
                        tests={name: fixed_design_only(belief_test(name)) for name in TESTS},
                        smoke_options=_SMOKE_OPTIONS, unidentified=("t2", "t4"), comparisons=COMPARISONS,
                        aliases={"T1a": "t1_cmi", "T1b": "t1_nested", "T1c": "t1_lr", "T2": "t2", "T3": "t3",
                                 "T4": "t4"}),
    pooling_unit="subject",
    trials_field="n_contexts",
    studies=(
        *(_test_study("test-size", t, f"{t} size on a calibrated logit RUM across report noise", "logit-rum",
                      "report_noise", (0.0, 0.05, 0.10, 0.15)) for t in _TESTS),
        _test_study("test-power", "t1_lr", "T1c against a hidden-information leak", "leak", "leak",
                    (0.0, 0.05, 0.1, 0.2, 0.4)),
        _test_study("test-power", "t1_cmi", "T1a against a hidden-information leak", "leak", "leak",
                    (0.0, 0.1, 0.2, 0.4)),
        _test_study("test-power", "t1_nested", "T1b against a hidden-information leak", "leak", "leak",
                    (0.0, 0.1, 0.2, 0.4)),
        _test_study("test-power", "t2", "T2 against a non-monotone deferral rule", "nonmono-defer", "bump",
                    (0.0, 2.0, 4.0, 8.0)),
        _test_study("test-power", "t3", "T3 against a loss-sensitive report", "loss-report", "shift",
                    (0.0, 0.1, 0.25, 0.5)),
        _test_study("test-power", "t4", "T4 against LIE-incoherent beliefs", "lie-incoherent", "incoherence",
                    (0.0, 0.25, 0.5, 1.0)),
        StudyDecl("recovery", "4-parameter MNL at the paper design (200 contexts x 5)", model="mnl"),
        StudyDecl("recovery", "loss-form decider (c_FP, c_D, scale, gamma)", model="loss"),
    ),
    headline_questions=tuple(
        HeadlineQuestion(name, description, ("--metric", metric, "--compare", *settings, "--llm", "openai:gpt-4o",
                                             "--llm", "openai:gpt-4o-mini", "--runs", "2:20"))
        for name, description, metric, settings in (
            ("T1a", "kNN CMI I(A; θ | p) between two LLMs (leaks of .02 and .05)", "t1_cmi",
             ("leak:leak=0.02", "leak:leak=0.05")),
            ("T1c", "likelihood-ratio statistic between two LLMs (leaks of .02 and .05)", "t1_lr",
             ("leak:leak=0.02", "leak:leak=0.05")),
            ("T3", "largest report RMSE over the scoring variants between two LLMs", "t3",
             ("loss-report:shift=0.1", "loss-report:shift=0.25")))),
    adaptive=AdaptiveDecl(ADAPTIVE_MODEL, adaptive_space,
                          "the p* bin of the next context (the instrument's non-empty bins; a configuration drawn "
                          "within it as the fixed design draws it)", observations=observations,
                          study_design=(("variants", ("pi0",)), ("lie_node", "none"), ("n_reps", 1))),
)
