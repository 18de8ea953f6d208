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
    assert model["pilot"]["min_people"] == 168 and model["people_only"]["people"] == 9663


@pytest.mark.slow
@pytest.mark.skipif(not SPEKTOR.exists(), reason="Psych-201's spektor2024lossaversion is not shipped here")
def test_ppi_coverage_study_row_on_spektor_with_the_model_predictor():
    """One row of benchmarks/studies/ppi_coverage.py (docs/mix.md's recorded table: spektor, model, n = 170): the
    PPI interval covers the full sample's mean of lambda at 95 %, is narrower than people alone, and the plan's
    people saved is the realised; with 50 labelled people the row is refused (Cochran's minimum is 168)."""
    from study_scripts import load_study

    study = load_study("ppi_coverage")
    r = study.row("spektor", "model", n=170, reps=1000, seed=0)
    assert (r["people"], r["labelled"], round(r["ppi_corr_full"], 3)) == (282, 170, 0.539)
    assert r["coverage"] == 0.998 and r["coverage"] >= 0.94
    assert r["width_ratio"] == pytest.approx(0.939, abs=5e-4)
    assert (round(100 * r["saved"], 1), round(100 * r["saved_planned"], 1)) == (11.9, 11.5)
    assert "at least 168" in study.row("spektor", "model", n=50, reps=1000, seed=0)["reason"]


def test_cli_refuses_a_mix_plan_without_its_estimand_in_one_line(capsys):
    from cogtestbed.cli import run_cli

    code = run_cli(["plan", "risky-choice", "--model", "prospect-theory", "--mix", "--predictor", "agent",
                    "--human", str(SPEKTOR), "--precision", "lambda=0.05"])
    err = capsys.readouterr().err
    assert code == 2 and "needs `estimand`" in err.replace("--estimand", "`estimand`") and "Traceback" not in err


def test_min_people_is_cochrans_rule():
    from scipy.stats import skew

    y = np.random.default_rng(6).lognormal(0.0, 1.0, 300)
    assert mix.min_people(y) == math.ceil(25 * skew(y, bias=False) ** 2) > 100
    assert mix.min_people(np.random.default_rng(7).standard_normal(300)) == mix.MIN_PAIRS
    with pytest.raises(InputError, match="at least 168 .*Cochran"):
        mix.check_labelled(50, 168)


def test_a_mix_below_the_minimum_keeps_the_minimum_and_its_effective_size():
    rho, n0, fee, unit = 0.9, 400, 10.0, 0.01
    free = mix.cheapest_mix(rho, n0, fee, unit, nested=False)
    kept = mix.with_min_people(free, rho, n0, fee, unit, nested=False, minimum=free["people"] + 50)
    assert kept["people"] == free["people"] + 50 and 0 < kept["predicted"] < free["predicted"]
    assert mix.predicted_effective_n(rho, kept["people"], kept["predicted"]) >= n0
    assert kept["dollars"] == pytest.approx(kept["people"] * fee + (kept["people"] + kept["predicted"]) * unit)
    assert mix.with_min_people(free, rho, n0, fee, unit, nested=False, minimum=10) == free
    assert mix.with_min_people(free, rho, n0, fee, unit, nested=False, minimum=500)["predicted"] == 0


def test_the_done_when_command_prints_both_designs_and_the_correlation_on_a_slice(tmp_path, capsys):
    """The documented command (``--predictor model``, the default $10 fee) on Spektor's first 10 people: the
    pilot's correlation, the people-only size from the pilot's SD and both designs priced."""
    import zipfile

    from cogtestbed.cli import run_cli

    with zipfile.ZipFile(SPEKTOR) as z:
        lines = z.read("prompts.jsonl").decode().splitlines()[:10]
    (tmp_path / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    code = run_cli(["plan", "risky-choice", "--model", "prospect-theory", "--mix", "--estimand", "lambda",
                    "--predictor", "model", "--human", str(tmp_path / "prompts.jsonl"), "--precision", "lambda=0.05"])
    out = capsys.readouterr().out
    assert code == 0, out
    import re

    sd = float(re.search(r"SD ([0-9.]+); PPI correlation (-?[0-9.]+)", out).group(1))
    people = int(re.search(r"people only : ([0-9,]+) people, \$([0-9,.]+) \(fee \$10\)", out).group(1).replace(",", ""))
    assert "pilot: 10 paired people" in out
    assert people == pytest.approx((1.959964 * sd / 0.05) ** 2, rel=2e-3)
    mixed = re.search(r"mixed +: ([0-9,]+) people \+ ([0-9,]+) predicted units \(\$5 each\), \$([0-9,.]+)", out)
    n, big_n, dollars = (float(g.replace(",", "")) for g in mixed.groups())
    assert dollars == pytest.approx(10 * n + 5 * big_n, abs=0.01) and n <= people


def test_a_metric_estimand_is_each_persons_metric_and_its_short_session_predicts_it(tmp_path):
    """``estimand`` a per-person metric (``p_risky``): the labels are each person's share of risky choices, the
    model predictor's the same share on the person's first half; a name that is neither is refused."""
    import zipfile

    from cogtestbed.api.core import get_experiment, read_table

    with zipfile.ZipFile(SPEKTOR) as z:
        lines = z.read("prompts.jsonl").decode().splitlines()[:12]
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    exp = get_experiment("risky-choice")
    table, _ = read_table(exp, path)
    model = exp.model("prospect-theory")
    values = mix.person_values(exp, model, table, "p_risky")
    assert values.size == 12 and values.between(0, 1).all()
    first = table[table["subject"] == values.index[0]]
    risky = exp.metrics(first)["per_subject"][0]["p_risky"]
    assert values.iloc[0] == pytest.approx(risky)
    short = mix.predictions("model", model, table, "p_risky", 0, 0.5, exp)
    assert short.index.equals(values.index) and not np.allclose(short, values)
    with pytest.raises(InputError, match="neither a parameter .* p_risky"):
        mix.person_values(exp, model, table, "p_riskyx")
    with pytest.raises(InputError, match="not the metric"):
        mix.predictions("agent", model, table, "p_risky", 0, 0.5, exp)


@pytest.mark.slow
def test_the_llm_predictor_plans_against_the_local_server_with_its_calls_counted_and_priced(
        tmp_path, server, monkeypatch, capsys):
    """``--predictor llm`` through the local OpenAI-compatible server (openai:tiny-random): the LLM answers one
    trial after each of 10 people's short sessions, each trial two scored requests (one per lottery), counted
    before any is made and refused over ``--llm-max-calls``; priced from the price table; the plan prints them."""
    import re
    import zipfile

    from cogtestbed.cli import run_cli

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    url, _ = server
    with zipfile.ZipFile(SPEKTOR) as z:
        lines = z.read("prompts.jsonl").decode().splitlines()[:10]
    (tmp_path / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "prices.toml").write_text('["openai:tiny-random"]\ninput = 1.0\noutput = 2.0\n')
    args = ["plan", "risky-choice", "--model", "prospect-theory", "--mix", "--estimand", "p_risky", "--predictor",
            "llm", "--llm", "openai:tiny-random", "--llm-base-url", url, "--llm-trials", "1", "--short-share", "0.02",
            "--prices", str(tmp_path / "prices.toml"), "--human", str(tmp_path / "prompts.jsonl"),
            "--precision", "p_risky=0.02"]
    assert run_cli([*args, "--llm-max-calls", "19"]) == 2
    assert "the LLM predictor needs 20 calls, over --llm-max-calls 19" in capsys.readouterr().err
    assert run_cli([*args, "--llm-max-calls", "20"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"llm predictor openai:tiny-random: 20 calls, ([0-9,]+) prompt tokens \((exact|estimated)\), "
                      r"\$([0-9.]+) \(\$([0-9.]+) a person\) from the price table", out)
    assert found, out
    tokens, dollars, each = int(found.group(1).replace(",", "")), float(found.group(3)), float(found.group(4))
    assert 20 * 500 < tokens < 20 * 3000  # two requests of a ~2,700-character prompt per person
    assert dollars == pytest.approx(tokens * 1.0 / 1e6, abs=1e-4) and each == pytest.approx(dollars / 10, abs=1e-4)
    assert "pilot: 10 paired people" in out and "PPI correlation" in out
    unit = re.search(r"mixed +: [0-9,]+ people \+ [0-9,]+ predicted units \(\$([0-9.]+) each\)", out)
    assert unit and float(unit.group(1)) == pytest.approx(10.0 * 0.02 + dollars / 10, abs=1e-5)  # short session + calls


def test_llm_options_without_the_llm_predictor_are_refused():
    import cogtestbed as ct

    with pytest.raises(InputError, match="needs `llm`"):
        ct.plan("risky-choice", model="prospect-theory", mix=True, estimand="lambda", predictor="llm",
                human=str(SPEKTOR), precision={"lambda": 0.05})
    with pytest.raises(InputError, match="`llm_max_calls` is for the llm predictor"):
        ct.plan("risky-choice", model="prospect-theory", mix=True, estimand="lambda", predictor="agent",
                human=str(SPEKTOR), precision={"lambda": 0.05}, llm_max_calls=3)


def test_llm_predictions_score_each_twin_trial_on_the_local_server(tmp_path, server, monkeypatch):
    """The cheaper sibling of the plan above: two people, one trial after a one-trial short session, through the
    local server; the calls and prompt tokens are counted before any is made, the LLM's choice is the lottery the
    server scores higher, and the predicted table is each short session followed by that choice."""
    import zipfile

    from cogtestbed.api.core import get_experiment, read_table
    from cogtestbed.llm_adapters.clients.backends import make_client
    from cogtestbed.llm_adapters.clients.prices import Price
    from cogtestbed.planning.kinds.mix import mix_llm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    url, _ = server
    with zipfile.ZipFile(SPEKTOR) as z:
        lines = z.read("prompts.jsonl").decode().splitlines()[:2]
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    exp = get_experiment("risky-choice")
    table, _ = read_table(exp, path)
    twins = mix_llm.twin_trials(path, table, short_share=0.001, trials=1)
    assert [(t.subject, t.options) for t in twins] == [(0, ("S", "Q")), (1, tuple(twins[1].options))]
    assert twins[0].prompt.endswith("You choose <<") and twins[0].prompt.count("<<") == 2
    client = make_client("openai:tiny-random", base_url=url, mode="completions")
    cost = mix_llm.price_calls(client, twins, Price(2.0, 4.0))
    assert cost["calls"] == 4 and cost["dollars"] == pytest.approx(2.0 * cost["prompt_tokens"] / 1e6)
    with pytest.raises(InputError, match="needs 4 calls"):
        mix_llm.check_budget(cost, 3, None)
    answered = mix_llm.answered_table(client, twins, table, mix.short_sessions(table, 0.001))
    assert answered.groupby("subject").size().tolist() == [2, 2]
    for t in twins:
        best = int(np.argmax(client.score(t.prompt, list(t.options), raw=True).logprobs))
        assert answered.loc[t.row, "action"] == best
