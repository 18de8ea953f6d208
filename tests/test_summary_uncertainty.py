"""Population summaries with their uncertainty: a seeded percentile bootstrap interval over subjects
beside every default summary, and the known bias of the per-subject MLE's median where recovery
measured it (:mod:`cogtestbed.inference.summary`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cogtestbed.inference.summary import (
    SUMMARY_BOOTSTRAP,
    bootstrap_interval,
    default_summary,
    known_bias,
    mle_summary,
)
from cogtestbed.registry import get_experiment


def _fits(values: dict[str, np.ndarray]) -> pd.DataFrame:
    n = len(next(iter(values.values())))
    return pd.DataFrame({"subject": [f"s{i}" for i in range(n)], **values, "aic": 1.0, "bic": 1.0,
                         "identified": True, "null_reason": None})


def test_every_default_summary_has_a_seeded_bootstrap_interval_over_subjects_whatever_the_row_order() -> None:
    model = get_experiment("temporal-discounting").model("hyperbolic")
    rng = np.random.default_rng(1)
    values = {"k": np.exp(rng.normal(-3, 1, 40)), "temperature": np.exp(rng.normal(-3, 0.5, 40))}
    out = mle_summary(_fits(values), model.parameters.names, model.parameters)
    shuffled = _fits({k: v[::-1] for k, v in values.items()})
    assert mle_summary(shuffled, model.parameters.names, model.parameters)["summary_ci95"] == out["summary_ci95"]
    for p in model.parameters:
        lo, hi = out["summary_ci95"][p.name]
        assert lo < out["summary"][p.name] < hi  # a median's interval around it
        # the percentile interval of medians of resamples: about ±1.96 × 1.2533 σ/√n of the log values
        se = 1.2533 * np.std(np.log(values[p.name]), ddof=1) / np.sqrt(40)
        assert np.log(hi) - np.log(lo) == pytest.approx(2 * 1.96 * se, rel=0.35)
    assert f"{SUMMARY_BOOTSTRAP:,} resamples" in out["summary_interval"]
    assert bootstrap_interval(np.array([1.0, np.nan]), model.parameters["k"]) is None  # one subject: no interval


def test_a_known_median_bias_is_printed_beside_the_summary_with_the_hierarchical_fit_suggested() -> None:
    model = get_experiment("temporal-discounting").model("hyperbolic")
    bias = known_bias("temporal-discounting", "hyperbolic", model.parameters)
    assert bias["k"]["percent"] == pytest.approx(56.5, abs=0.1)
    assert bias["temperature"]["percent"] == pytest.approx(-74.1, abs=0.1)
    fits = _fits({"k": np.full(5, 0.1) * np.arange(1, 6), "temperature": np.full(5, 0.05)})
    out = mle_summary(fits, model.parameters.names, model.parameters, bias)
    assert any("median of k is biased by +57 %" in n and "hierarchical" in n for n in out["notes"])
    assert any("temperature is biased by -74 %" in n for n in out["notes"])
    assert known_bias("instrumental-learning", "rw-pm", model.parameters) == {}
    assert "notes" not in mle_summary(fits, model.parameters.names, model.parameters)


def test_a_mean_summary_has_a_mean_interval() -> None:
    model = get_experiment("instrumental-learning").model("rw-pm")
    p = model.parameters["alpha_pos"]
    v = np.random.default_rng(3).uniform(0.2, 0.6, 200)
    lo, hi = bootstrap_interval(v, p)
    assert default_summary(v, p) == pytest.approx(v.mean()) and lo < v.mean() < hi
    assert hi - lo == pytest.approx(2 * 1.96 * v.std(ddof=1) / np.sqrt(200), rel=0.15)


def test_the_plans_recovery_names_its_test_and_the_estimands_scale() -> None:
    """The LLM-against-people λ plan compares λ by the rank test on the log scale: its summary says so
    (its estimand 1.31 for an asked 0.5 is a difference of mean log λ, not of λ)."""
    from cogtestbed.formatting import num
    from cogtestbed.planning.plan_text import recovery_line
    from cogtestbed.planning.recovery import test_and_scale
    from cogtestbed.studies.study_kinds import study_spec

    model = get_experiment("risky-choice").model("prospect-theory")
    two = study_spec(kind="power", experiment="risky-choice", models=("prospect-theory",), effect="lambda",
                     effect_size=0.5, groups=2, subjects=(4,), reps=1, seed=0)
    named = test_and_scale(two, model)
    rank = "lambda" in getattr(model, "rank_tested_parameters", ())
    assert named["test_name"] == ("Brunner-Munzel rank test" if rank else "Welch t-test")
    assert named["estimand_scale"] == ("the difference of the groups' mean log lambda (the test's scale); the effect "
                                       "asked: lambda +0.5 on its own scale")
    one = test_and_scale(two.model_copy(update={"groups": 1}), model)
    assert one["test_name"] == "one-sample t-test" and "mean shift of log lambda" in one["estimand_scale"]
    line = recovery_line({"effect_bias": 0.04, "estimand": 1.31, **named, "studies": 10})
    assert f"(estimand {num(1.31)}: the difference of the groups' mean log lambda" in line
    assert f"test: {named['test_name']}" in line


def test_every_fit_summary_names_the_scale_its_summary_and_interval_are_on() -> None:
    """A log-scale parameter's median is read in its own units (the same on the log scale); a mean is taken on
    the parameter's natural scale: the fit's summary says which, for every parameter."""
    td = get_experiment("temporal-discounting").model("hyperbolic")
    rw = get_experiment("instrumental-learning").model("rw-pm")
    rng = np.random.default_rng(2)
    out = mle_summary(_fits({"k": np.exp(rng.normal(-3, 1, 10)), "temperature": np.exp(rng.normal(-3, 1, 10))}),
                      td.parameters.names, td.parameters)
    assert set(out["summary_scale"]) == set(td.parameters.names)
    assert out["summary_scale"]["k"].startswith("k's own units") and "log scale" in out["summary_scale"]["k"]
    fits = _fits({n: rng.uniform(0.1, 0.9, 10) for n in rw.parameters.names})
    scales = mle_summary(fits, rw.parameters.names, rw.parameters)["summary_scale"]
    assert scales["alpha_pos"] == "alpha_pos's own (natural) scale"
