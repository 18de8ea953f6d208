"""Issue 46: two-group tests of a model parameter in plan/power, common random numbers across a
power curve's sizes, and the horizon difference test whose interval is null at 10 runs."""

from __future__ import annotations

import math

import pytest


# ----------------------------------------------------------------------------- horizon at 10 runs
def test_a_null_pooled_interval_makes_the_difference_untestable_not_a_crash():
    """Horizon's directed exploration from 10 runs has a null 95 % half-width (with its reason):
    the two-LLM difference test at 10 runs was a TypeError in pooled_se; it is untestable (p NaN,
    not detected)."""
    from cogtestbed.validation.studies.driver import run_task
    from cogtestbed.validation.studies.metric_studies import difference_test, pooled_se
    from cogtestbed.validation.studies.study_kinds import study_spec

    null = {"metrics": {"directed_exploration": 0.0, "directed_exploration_ci": None},
            "null_reasons": {"directed_exploration_ci": "not computable"}}
    given = {"metrics": {"directed_exploration": 0.4, "directed_exploration_ci": 0.196}}
    assert math.isnan(pooled_se(null, "directed_exploration"))
    assert pooled_se(given, "directed_exploration") == pytest.approx(0.1, rel=1e-3)
    test, p = difference_test(null, given, "directed_exploration", "per_run")
    assert test == "z-test on two pooled estimates" and math.isnan(p)
    spec = study_spec(kind="metric-power", experiment="horizon", agent="info-bonus", metric="directed_exploration",
                      compare=({"bonus_h6": 5.0}, {"bonus_h6": 10.0}), runs=(10,), reps=1, seed=0)
    row = run_task(spec, spec.tasks()[0]).iloc[0]
    assert math.isnan(row["p_value"]) and not row["detected"]
