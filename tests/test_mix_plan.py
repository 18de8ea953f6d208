"""Prediction-powered mix plans (``plan --mix``, cogtestbed.planning.kinds.mix.mix): the plan's arithmetic on
known correlations, the PPI interval's coverage on simulated data, and the refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.mix import mix

SPEKTOR = Path(__file__).resolve().parents[2] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"


def _pairs(rho: float, n: int, seed: int) -> tuple[pd.Series, pd.Series]:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    y = 2.0 + z[:, 0]
    yhat = 1.5 + rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1]  # biased predictions, correlation rho
    index = np.arange(n)
    return pd.Series(y, index=index), pd.Series(yhat, index=index)


def test_cheapest_mix_is_broska_et_al_closed_form():
    rho, n0, fee, unit = 0.8, 1000, 10.0, 0.01
    gamma = unit / fee
    n = n0 * (1 - rho**2 + math.sqrt(gamma * rho**2 * (1 - rho**2)))
    big_n = n * (n0 - n) / (n - (1 - rho**2) * n0)
    out = mix.cheapest_mix(rho, n0, fee, unit, nested=False)
    assert out["people"] == round(n) == 375
    assert out["predicted"] == round(big_n)
    assert out["dollars"] == pytest.approx(375 * fee + (375 + round(big_n)) * unit, abs=0.01)
    assert mix.predicted_effective_n(rho, out["people"], out["predicted"]) == pytest.approx(n0, rel=2e-3)


def test_cheapest_mix_keeps_people_when_the_predictor_is_useless():
    out = mix.cheapest_mix(0.0, 500, 10.0, 0.01, nested=False)
    assert (out["people"], out["predicted"], out["dollars"]) == (500, 0, 5000.0)


def test_nested_short_session_prices_a_person_at_the_fee():
    out = mix.cheapest_mix(0.9, 400, 10.0, 2.0, nested=True)
    assert out["dollars"] == pytest.approx(out["people"] * 10.0 + out["predicted"] * 2.0, abs=0.01)
    assert out["people"] < 400 and out["predicted"] > 0


def test_plan_mix_measures_the_correlation_and_prices_both_designs():
    y, yhat = _pairs(0.8, 4000, seed=1)
    plan = mix.plan_mix(y, yhat, halfwidth=0.05, fee=10.0, unit_cost=0.01)
    assert plan["pilot"]["ppi_corr"] == pytest.approx(0.8, abs=0.02)
    low, high = plan["pilot"]["ppi_corr_bounds"]
    assert low < plan["pilot"]["ppi_corr"] < high
    n0 = math.ceil((1.959964 * np.std(y.to_numpy(), ddof=1) / 0.05) ** 2)
    assert plan["people_only"] == {"people": n0, "predicted": 0, "dollars": round(n0 * 10.0, 2)}
    assert plan["mixed"]["people"] == pytest.approx(n0 * 0.376, rel=0.06)
    assert plan["mixed_at_lower_corr"]["people"] >= plan["mixed"]["people"]
    assert plan["people_saved"] == n0 - plan["mixed"]["people"] > 0


def test_plan_mix_does_not_depend_on_row_order():
    y, yhat = _pairs(0.6, 300, seed=2)
    order = np.random.default_rng(0).permutation(300)
    assert mix.plan_mix(y, yhat, 0.1, 10.0, 0.01) == mix.plan_mix(y.iloc[order], yhat.iloc[order[::-1]], 0.1, 10.0,
                                                                   0.01)


def test_ppi_interval_covers_and_narrows_with_a_good_predictor():
    rng = np.random.default_rng(3)
    covered, ratio = [], []
    for _ in range(400):
        y, yhat = _pairs(0.9, 1100, seed=int(rng.integers(2**31)))
        truth = 2.0
        lo, hi = mix.ppi_interval(y.to_numpy()[:100], yhat.to_numpy()[:100], yhat.to_numpy()[100:])
        clo, chi = mix.classical_interval(y.to_numpy()[:100])
        covered.append(lo <= truth <= hi)
        ratio.append((hi - lo) / (chi - clo))
    assert np.mean(covered) >= 0.93
    assert np.median(ratio) < 0.6  # sqrt(1 - 0.81 * N / (n + N)) ~ 0.47 at n=100, N=1000


def test_predictions_that_are_the_labels_are_refused():
    y, _ = _pairs(0.5, 50, seed=4)
    with pytest.raises(InputError, match="fit on the labelled people"):
        mix.plan_mix(y, y.copy(), 0.1, 10.0, 0.01)


def test_too_small_a_pilot_is_refused():
    y, yhat = _pairs(0.5, 9, seed=5)
    with pytest.raises(InputError, match="at least 10"):
        mix.plan_mix(y, yhat, 0.1, 10.0, 0.01)


def test_short_session_keeps_the_first_share_of_each_subject():
    table = pd.DataFrame({"subject": [1] * 4 + [0] * 6, "session": 0, "trial": [3, 2, 1, 0, 5, 4, 3, 2, 1, 0]})
    short = mix.short_sessions(table, 0.5)
    assert sorted(map(tuple, short[["subject", "trial"]].to_numpy())) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    with pytest.raises(InputError, match="strictly between"):
        mix.short_sessions(table, 1.0)


def test_a_mix_plan_without_its_options_is_refused_before_fitting():
    import cogtestbed as ct

    with pytest.raises(InputError, match="needs `estimand`, `predictor`, `human`"):
        ct.plan("risky-choice", model="prospect-theory", mix=True, precision={"lambda": 0.05}, fee=10.0)
    with pytest.raises(InputError, match="estimand"):
        ct.plan("risky-choice", model="prospect-theory", mix=True, estimand="alpha", predictor="agent",
                human=str(SPEKTOR), precision={"lambda": 0.05}, fee=10.0)


def test_table_predictions_read_subject_and_prediction(tmp_path):
    path = tmp_path / "pred.csv"
    pd.DataFrame({"subject": [2, 0, 1], "prediction": [0.2, 0.0, 0.1]}).to_csv(path, index=False)
    assert mix.table_predictions(path).to_dict() == {0: 0.0, 1: 0.1, 2: 0.2}
    pd.DataFrame({"subject": [0], "guess": [1.0]}).to_csv(path, index=False)
    with pytest.raises(InputError, match="prediction"):
        mix.table_predictions(path)


@pytest.mark.slow
@pytest.mark.skipif(not SPEKTOR.exists(), reason="Psych-201's spektor2024lossaversion is not shipped here")
def test_mix_plan_on_spektor_people():
    """docs/mix.md's figures: the agent predictor's plan (rho 0.092, 9,663 people alone, 9,609 mixed) and the model
    predictor's correlation 0.539 with no mix cheaper at a $5 short session."""
    import cogtestbed as ct

    common = dict(model="prospect-theory", mix=True, estimand="lambda", human=str(SPEKTOR),
                  precision={"lambda": 0.05}, fee=10.0)
    agent = ct.plan("risky-choice", predictor="agent", **common).payload
    assert agent["pilot"]["pairs"] == 282 and round(agent["pilot"]["ppi_corr"], 3) == 0.092
    assert agent["people_only"] == {"people": 9663, "predicted": 0, "dollars": 96630.0}
    assert (agent["mixed"]["people"], agent["mixed"]["predicted"]) == (9609, 18478)
    assert agent["mixed_at_lower_corr"]["people"] == 9663
    model = ct.plan("risky-choice", predictor="model", **common).payload
    assert round(model["pilot"]["ppi_corr"], 3) == 0.539 and model["mixed"]["predicted"] == 0


@pytest.mark.slow
@pytest.mark.skipif(not SPEKTOR.exists(), reason="Psych-201's spektor2024lossaversion is not shipped here")
def test_ppi_coverage_study_row_on_spektor_with_the_model_predictor():
    """One row of benchmarks/studies/ppi_coverage.py (docs/mix.md's recorded table: spektor, model, n = 100): the
    PPI interval covers the full sample's mean of lambda at 95 %, is narrower than people alone, and the plan's
    people saved is the realised."""
    from study_scripts import load_study

    r = load_study("ppi_coverage").row("spektor", "model", n=100, reps=1000, seed=0)
    assert (r["people"], r["labelled"], round(r["ppi_corr_full"], 3)) == (282, 100, 0.539)
    assert r["coverage"] == 0.974 and r["coverage"] >= 0.94
    assert r["width_ratio"] == pytest.approx(0.901, abs=5e-4)
    assert (round(100 * r["saved"], 1), round(100 * r["saved_planned"], 1)) == (18.7, 19.0)


def test_cli_refuses_a_mix_plan_without_its_fee_in_one_line(capsys):
    from cogtestbed.cli import run_cli

    code = run_cli(["plan", "risky-choice", "--model", "prospect-theory", "--mix", "--estimand", "lambda",
                    "--predictor", "agent", "--human", str(SPEKTOR), "--precision", "lambda=0.05"])
    err = capsys.readouterr().err
    assert code == 2 and "needs `fee`" in err.replace("--fee", "`fee`") and "Traceback" not in err
