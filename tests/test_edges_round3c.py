"""Hard edges, third round (issue 41), what remained: the degenerate-answer rule on belief
coherence's single-test path and on hierarchical fits, and progress during a long metrics computation."""

from __future__ import annotations

import math

import pytest

from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate
from cogtestbed.validation.conformance.table_checks import constant_answers


# ----------------------------------------------------------------------------- 3. belief's single-test path
@pytest.fixture(scope="module")
def belief_tables():
    spec = get_experiment("belief-coherence")
    table = simulate(spec, "logit-rum", 2, 1, design=spec.design_cls(n_contexts=20))
    return spec, table, constant_answers(table)


def test_a_single_test_on_constant_answers_is_null_with_the_reason_as_in_the_whole_result(belief_tables) -> None:
    spec, _, const = belief_tables
    options = dict(spec.metrics.smoke_options)
    full = spec.metrics(const, **options)
    for name in ("t2", "t4"):  # the tests belief coherence declares unidentified by degenerate answers
        assert spec.metrics.tests[name](const, **options)["p_value"] is None  # the raw test alone: no rule
        alone = spec.metrics.test_result(name, const, **options)
        assert alone["metrics"] == {name: None} and full["metrics"][name] is None
        assert alone["null_reasons"][name] == full["null_reasons"][name]
        assert alone["null_reasons"][name].startswith("degenerate answers: all 1600 valid answers are 0")
        assert any(f.startswith("degenerate answers") and f.endswith(f"null: {name}") for f in alone["flags"])
    t3 = spec.metrics.test_result("t3", const, **options)  # a test the rule leaves as it is
    assert t3["metrics"]["t3"] == full["metrics"]["t3"] and "null_reasons" not in t3


def test_a_single_test_on_varied_answers_is_the_test_as_it_was(belief_tables) -> None:
    spec, table, _ = belief_tables
    options = dict(spec.metrics.smoke_options)
    result = spec.metrics.test_result("t2", table, **options)
    assert result["metrics"]["t2"] == spec.metrics.tests["t2"](table, **options)
    assert 0.0 <= result["metrics"]["t2"]["p_value"] <= 1.0 and "null_reasons" not in result


def test_a_null_test_is_untestable_in_a_study_not_a_crash(belief_tables) -> None:
    from cogtestbed.validation.studies.metric_studies import test_outcome

    spec, _, const = belief_tables
    result = spec.metrics.test_result("t2", const, **dict(spec.metrics.smoke_options))
    reject, p = test_outcome(result, "t2", 0.05)
    assert reject is False and math.isnan(p)
    no_data = spec.metrics.test_result("t2", const.assign(valid=False))
    assert no_data["metrics"] == {"t2": None} and no_data["null_reasons"]["t2"].startswith("no valid answer")
