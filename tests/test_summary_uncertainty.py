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
    assert rank  # prospect theory's λ is compared by ranks: the scale names the rank test's own estimate
    assert named["estimand_scale"] == ("the difference of the groups' mean log lambda (the estimand; the rank test "
                                       "tests P(second > first) = 1/2 and estimates the Hodges-Lehmann shift of log "
                                       "lambda); the effect asked: lambda +0.5 on its own scale")
    rw = get_experiment("instrumental-learning").model("rw-pm")
    welch = test_and_scale(study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",),
                                      effect="optimism_bias", effect_size=0.2, groups=2, subjects=(4,), reps=1,
                                      seed=0), rw)
    assert welch["test_name"] == "Welch t-test"
    assert welch["estimand_scale"].startswith("the difference of the groups' mean optimism_bias (the test's scale)")
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


def test_every_population_summary_of_a_fit_has_its_bootstrap_interval() -> None:
    """Not only the default summary: the median, the mean and the pinned-only median each carry a seeded
    percentile bootstrap interval over the subjects they are over (None where fewer than two count)."""
    model = get_experiment("temporal-discounting").model("hyperbolic")
    rng = np.random.default_rng(4)
    values = {"k": np.exp(rng.normal(-3, 1, 60)), "temperature": np.exp(rng.normal(-3, 0.5, 60))}
    fits = _fits(values)
    fits.loc[fits.index[:58], "identified"] = False  # two pinned subjects
    out = mle_summary(fits, model.parameters.names, model.parameters)
    for name in model.parameters.names:
        lo, hi = out["median_ci95"][name]
        assert lo < np.median(values[name]) < hi
        assert out["median_ci95"][name] == out["summary_ci95"][name]  # a log-scale parameter's summary: the median
        lo, hi = out["mean_ci95"][name]
        assert lo < np.mean(values[name]) < hi
        se = np.std(values[name], ddof=1) / np.sqrt(60)
        assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.35)
        pinned = values[name][58:]
        lo, hi = out["median_pinned_only_ci95"][name]
        assert lo == pytest.approx(pinned.min()) and hi == pytest.approx(pinned.max())
    fits["identified"] = False
    assert mle_summary(fits, model.parameters.names, model.parameters)["median_pinned_only_ci95"]["k"] is None


def test_recovery_reads_a_summary_against_the_truths_summary_and_names_its_bias() -> None:
    """A recovery's summary estimate is read against the true values' same summary; where the truth lies
    outside the estimates' interval the summary is biased at that design (percent for a median of a log-scale
    parameter), and a per-subject MLE's suggests the hierarchical fit."""
    from cogtestbed.studies.recovery_checks import summary_offset
    from cogtestbed.studies.verdict import _against_truth

    k = get_experiment("temporal-discounting").model("hyperbolic").parameters["k"]
    rng = np.random.default_rng(5)
    true = np.exp(rng.normal(-3, 1, 80))
    biased = summary_offset(true * 1.57, true, k, "mle")  # every estimate 57 % high
    assert biased["summary_true"] == pytest.approx(np.median(true))
    assert biased["summary_offset_percent"] == pytest.approx(57.0)
    assert biased["summary_biased"] and "hierarchical" in biased["summary_suggested"]
    entry = {"summary_kind": "median", **biased}
    assert "BIASED at this design: +57 %" in _against_truth(entry) and "hierarchical" in _against_truth(entry)
    noisy = summary_offset(true * np.exp(rng.normal(0, 0.3, 80)), true, k, "mle")
    assert not noisy["summary_biased"] and "summary_suggested" not in noisy
    assert "BIASED" not in _against_truth({"summary_kind": "median", **noisy})
    hier = summary_offset(true * 1.57, true, k, "hierarchical")
    assert hier["summary_biased"] and "summary_suggested" not in hier
    alpha = get_experiment("instrumental-learning").model("rw-pm").parameters["alpha_pos"]
    u = rng.uniform(0.2, 0.8, 80)
    mean = summary_offset(u + 0.1, u, alpha, "mle")
    assert mean["summary_offset"] == pytest.approx(0.1) and mean["summary_biased"]
    assert "summary_offset_percent" not in mean
    assert summary_offset(np.array([np.nan]), u[:1], alpha, "mle") == {}
