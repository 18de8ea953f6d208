"""Long studies of the CogBench tasks on the generic driver (``make test-slow``): the declared
metric-validity, recovery, model-recovery and power studies at CogBench's designs.

Run one from the shell: ``cogtestbed study two-step metric-validity --reps 30``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cogtestbed.experiments.spec import StudyDecl
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import StudyResult, declared_studies, run_declared_study

pytestmark = pytest.mark.slow


def _run(experiment: str, describes: str, reps: int, **overrides: Any) -> StudyResult:
    exp = get_experiment(experiment)
    decl: StudyDecl = next(d for _, d in declared_studies(exp) if d.description.startswith(describes))
    return run_declared_study(exp, decl, reps=reps, workers=None, **overrides)


def _validity(res: StudyResult) -> dict[str, Any]:
    return next(iter(res.summary.values()))


def _power(res: StudyResult) -> list[float]:
    return [c["power"] for c in res.summary["cells"]]


def test_twostep_model_basedness_is_monotone_in_w() -> None:
    v = _validity(_run("two-step", "model_basedness tracks w", reps=6))
    assert v["passed"] and v["spearman"] > 0.8


def test_twostep_w_is_recovered_from_100_pooled_runs() -> None:
    w = _run("two-step", "hybrid MB/MF", reps=2).summary["10x2000x100runs"]["parameters"]["w"]
    assert w["r"] > 0.8 and w["rmse"] < 0.15


def test_twostep_model_recovery_separates_pure_models() -> None:
    p = _run("two-step", "model-based vs model-free", reps=1).summary["bic"]["probabilities"]
    assert p[0][0] >= 0.75 and p[1][1] >= 0.75


def test_twostep_power_grows_with_runs() -> None:
    power = _power(_run("two-step", "model_basedness: w", reps=40, runs=(10, 100)))
    assert power[1] > power[0]


def test_discounting_score_is_not_monotone_in_k() -> None:
    v = _validity(_run("temporal-discounting", "the CogBench score", reps=2))
    assert not v["increasing"] and not v["decreasing"] and v["passed"] is None


def test_discounting_k_recovery_improves_with_runs() -> None:
    s = _run("temporal-discounting", "hyperbolic log k", reps=1).summary
    one, ten = (next(c for c in s.values() if c["runs"] == r)["parameters"]["k"] for r in (1, 10))
    assert ten["rmse"] < one["rmse"]


def test_bart_risk_is_monotone_in_target() -> None:
    assert _validity(_run("bart", "risk rises", reps=3))["passed"]


def test_bart_targets_recovered_per_run() -> None:
    s = _run("bart", "target pumps", reps=1, runs=(1,)).summary
    assert next(iter(s.values()))["parameters"]["target_32"]["r"] > 0.8


def test_bart_power_grows_with_runs() -> None:
    power = _power(_run("bart", "risk: targets", reps=40, runs=(2, 20)))
    assert power[1] > power[0]


def test_probabilistic_weights_are_monotone_and_recovered() -> None:
    assert _validity(_run("probabilistic-reasoning", "prior_weighting tracks", reps=5))["passed"]
    assert _validity(_run("probabilistic-reasoning", "likelihood_weighting tracks", reps=5))["passed"]
    p = next(iter(_run("probabilistic-reasoning", "generalised-Bayes", reps=2).summary.values()))["parameters"]
    assert p["beta_prior"]["r"] > 0.9 and p["beta_likelihood"]["r"] > 0.9


def test_horizon_exploration_metrics_are_monotone_and_recovered() -> None:
    assert _validity(_run("horizon", "directed_exploration tracks", reps=4))["passed"]
    assert _validity(_run("horizon", "random_exploration tracks", reps=4))["spearman"] > 0.7
    p = next(iter(_run("horizon", "information-bonus", reps=2).summary.values()))["parameters"]
    assert p["bonus_h6"]["r"] > 0.7 and p["temperature_h1"]["r"] > 0.7


def test_restless_metacognition_falls_with_confidence_noise() -> None:
    assert _validity(_run("restless-bandit", "metacognition falls", reps=8))["passed"]
    assert _validity(_run("restless-bandit", "accuracy rises", reps=8))["spearman"] > 0.8
    power = _power(_run("restless-bandit", "metacognition: confidence", reps=40, runs=(5, 40)))
    assert power[1] > power[0]


def test_instrumental_power_at_effect_zero_is_the_two_sided_level() -> None:
    res = _run("instrumental-learning", "optimism bias", reps=400, subjects=(20,), effect_size=0.0)
    cell = res.summary["cells"][0]
    assert abs(cell["power"] - 0.05) < 3 * cell["mc_se"] + 0.01
