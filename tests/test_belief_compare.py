"""Belief coherence's headline tests compared between two groups (issue 67, item 4): the declared
comparability of every metric, the refusal before any simulation, and the permutation test's size at
zero difference on simulated subjects (the 1,000-study check: benchmarks/studies/belief_compare_size.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.metrics_result import MetricComparison
from cogtestbed.registry import get_experiment
from cogtestbed.studies import metric_studies as ms
from cogtestbed.studies.study_data import design_for_trials, simulate_runs

EXP = get_experiment("belief-coherence")


def test_declared_comparability_of_every_headline_metric() -> None:
    got = {m: EXP.metrics.comparability(m) for m in EXP.metrics.headline}
    assert {m for m, c in got.items() if c.comparable} == {"t1_cmi", "t3", "t1_lr", "accuracy"}
    assert all(c.test == "permutation" and c.unit_statistic is not None for c in got.values() if c.comparable)
    for m in ("t1_nested", "t2", "t4", "t1_cmi_isotonic"):
        assert not got[m].comparable and got[m].to_dict() == {"comparable": False, "test": "none",
                                                              "reason": got[m].reason}
        assert m.upper()[:2] in got[m].reason.upper()  # the reason names the test
    assert EXP.metrics.comparability("T1a") is got["t1_cmi"]  # the paper's name resolves
    assert get_experiment("two-step").metrics.comparability("model_basedness").test == "z"
    assert get_experiment("bart").metrics.comparability("risk").test == "welch"


def test_a_comparison_that_cannot_be_tested_says_why() -> None:
    with pytest.raises(InputError, match="says why"):
        MetricComparison("none")
    with pytest.raises(InputError, match="unit_statistic"):
        MetricComparison("permutation", "x")


def test_plan_refuses_an_incomparable_metric_before_simulating(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before refusing")

    monkeypatch.setattr(ms, "simulate_runs", no_simulation)
    with pytest.raises(InputError, match=r"'t2' of belief-coherence cannot be compared.*comparable: t1_cmi"):
        ct.plan("belief-coherence", metric="t2", compare=("leak:leak=0", "leak:leak=0.3"),
                llm=["openai:gpt-4o", "openai:gpt-4o-mini"], runs="4:40", workers=1)
    for metric in EXP.metrics.headline:
        if not EXP.metrics.comparability(metric).comparable:
            with pytest.raises(InputError, match="cannot be compared between two groups: .+; comparable: "):
                EXP.metrics.check_comparable(metric, EXP.name)  # the declaration only (simulate_runs refuses)


def test_permutation_p_is_exact_on_small_groups() -> None:
    rng = np.random.default_rng(3)
    ps = np.array([ms.permutation_p(rng.exponential(size=5), rng.exponential(size=5)) for _ in range(200)])
    assert np.mean(ps < 0.05) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)
    assert math.isnan(ms.permutation_p(np.array([1.0]), np.array([1.0, 2.0])))
    assert ms.permutation_p(np.zeros(5), np.full(5, 3.0)) == pytest.approx(2 / 252)  # every split, exactly


@pytest.mark.parametrize("metric", ["t1_cmi", "t3"])
def test_type_one_error_at_zero_difference_on_simulated_subjects(metric: str) -> None:
    """200 studies of 5 + 5 subjects drawn from 60 simulated subjects of one setting: the declared test
    rejects at most α + 2 MC SE of them, and a real difference (leak 0 → 0.6 / report noise 0 → 0.15) is
    detected."""
    design = design_for_trials(EXP, None, {"n_contexts": 20, "n_reps": 2, "variants": ("pi0", "mse", "abs", "bayes"),
                                           "lie_node": "none"})
    null = ms.comparison_result(EXP, metric, simulate_runs(EXP, "leak", 60, 7, {"report_noise": 0.05, "leak": 0.0},
                                                           design))
    values = ms.unit_values(null, metric, EXP.metrics.unit)
    assert values.size == 60 and np.isfinite(values).all()
    rng = np.random.default_rng(11)
    pick = [rng.choice(60, 10, replace=False) for _ in range(200)]
    ps = np.array([ms.permutation_p(values[i[:5]], values[i[5:]]) for i in pick])
    assert np.mean(ps < 0.05) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)
    moved = {"t1_cmi": {"report_noise": 0.05, "leak": 0.6}, "t3": {"report_noise": 0.15, "leak": 0.0}}[metric]
    other = ms.comparison_result(EXP, metric, simulate_runs(EXP, "leak", 8, 8, moved, design))
    name, p = ms.difference_test({**null, "per_subject": null["per_subject"][:8]}, other, metric, EXP.metrics.unit,
                                 EXP.metrics.comparability(metric).test)
    assert name.startswith("permutation") and p < 0.01
