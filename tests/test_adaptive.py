"""Adaptive designs (issue 53): the grid posterior is Bayes' rule with the model's own likelihood, the
expected information gain is the exact mutual information, a session replays from its answers, and
the interface refuses what it cannot do in one line."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import cogtestbed as ct
from cogtestbed.environments.discounting import adaptive_questions
from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.adaptive import AdaptiveDesigner, DesignSpace, replay
from cogtestbed.inference.discounting import HyperbolicModel, adaptive_space

MODEL = HyperbolicModel()


def _space(rows: list[tuple[float, float, float, float, float]], key: str) -> DesignSpace:
    return DesignSpace(key, {"questions": np.array(rows, dtype=np.float64)}, (0, 1))


def _p1(k: np.ndarray, tau: np.ndarray, q: tuple[float, ...]) -> np.ndarray:
    """P(Option 1) of the hyperbolic model, written out (the brute-force reference)."""
    a1, d1, a2, d2, s = q
    x = (a1 / (1 + k * d1) - a2 / (1 + k * d2)) / s
    return np.asarray(expit(x / tau))


TINY = [(500, 0, 550, 1, 500), (500, 0, 1000, 1, 500), (500, 0, 750, 5, 500), (500, 0, 2500, 0.25, 500)]


def _brute_force_grid(points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, tau, prior weight) of every node of the designer's grid, in C order."""
    pk, pt = MODEL.parameters
    zk = np.linspace(pk.prior_mean - 4 * pk.prior_sd, pk.prior_mean + 4 * pk.prior_sd, points)
    zt = np.linspace(pt.prior_mean - 4 * pt.prior_sd, pt.prior_mean + 4 * pt.prior_sd, points)
    nodes = np.array(list(itertools.product(zk, zt)))
    prior = np.exp(-0.5 * ((nodes[:, 0] - pk.prior_mean) / pk.prior_sd) ** 2
                   - 0.5 * ((nodes[:, 1] - pt.prior_mean) / pt.prior_sd) ** 2)
    return np.exp(nodes[:, 0]), np.exp(nodes[:, 1]), prior / prior.sum()


def test_posterior_is_brute_force_bayes_on_a_tiny_grid() -> None:
    space = _space(TINY, "test/tiny")
    designer = AdaptiveDesigner(MODEL, space, points=5)
    k, tau, post = _brute_force_grid(5)
    for d, y in [(0, 1), (2, 0), (1, 1), (3, 0), (0, 0)]:
        designer.update(d, y)
        p1 = np.clip(_p1(k, tau, TINY[d]), 1e-10, 1 - 1e-10)
        post = post * (p1 if y == 0 else 1 - p1)
        post /= post.sum()
        np.testing.assert_allclose(designer.weights, post, rtol=1e-9, atol=1e-15)


def test_information_is_the_exact_mutual_information() -> None:
    """I(θ_T; Y) of every candidate, for all parameters and for k alone (τ integrated out), equals the
    mutual information summed out by hand over nodes and answers."""
    space = _space(TINY, "test/tiny")
    k, tau, w = _brute_force_grid(5)
    for targets in ((), ("k",)):
        designer = AdaptiveDesigner(MODEL, space, targets, points=5)
        expected = []
        for q in TINY:
            p1 = np.clip(_p1(k, tau, q), 1e-10, 1 - 1e-10)
            p1 = p1 / (p1 + np.clip(1 - _p1(k, tau, q), 1e-10, 1 - 1e-10))
            py = np.array([np.sum(w * p1), np.sum(w * (1 - p1))])
            if targets:  # group the nodes by k: p(y | k) = Σ_τ w p(y | k, τ) / w(k)
                wk = w.reshape(5, 5)
                pk1 = (wk * p1.reshape(5, 5)).sum(1) / wk.sum(1)
                cond = [(wk.sum(1), pk1)]
            else:
                cond = [(w, p1)]
            h = -np.sum(py * np.log(py))
            hc = sum(np.sum(ww * -(pp * np.log(pp) + (1 - pp) * np.log(1 - pp))) for ww, pp in cond)
            expected.append(h - hc)
        np.testing.assert_allclose(designer.information(), expected, rtol=1e-9, atol=1e-12)


def test_a_design_that_cannot_discriminate_has_no_information() -> None:
    """The same amount now and later (no delay): every k and τ answer 50/50, so the answer tells
    nothing (EIG 0), and the choice goes to a design that can discriminate."""
    space = _space([(500, 0, 500, 0, 500), (500, 0, 1000, 1, 500)], "test/flat")
    designer = AdaptiveDesigner(MODEL, space, points=9)
    info = designer.information()
    assert abs(info[0]) < 1e-12
    assert info[1] > 0.1
    assert designer.choose() == 1


def test_discounting_space_is_the_environments_questions() -> None:
    design = ct.get_experiment("temporal-discounting").env_cls.design_cls(adaptive=("k",), trials=3)
    qs, space = adaptive_questions(design), adaptive_space(design)
    assert space.size == len(qs) == 96
    assert space.fields["questions"][7].tolist() == [500.0, 0.0, 510.0, 0.25, 500.0]
    assert qs[7].option2 == "Receive 510 dollars in 3 months."


def test_adaptive_simulation_replays_from_its_answers_and_seed() -> None:
    a = ct.simulate("temporal-discounting", "hyperbolic", subjects=3, seed=4, adaptive="k,temperature", trials=12,
                    params={"k": [0.02, 0.3, 3.0], "temperature": 0.05})
    b = ct.simulate("temporal-discounting", "hyperbolic", subjects=3, seed=4, adaptive=["k", "temperature"],
                    trials=12, params={"k": [0.02, 0.3, 3.0], "temperature": 0.05})
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 36 and set(a["block"].astype(str)) == {"adaptive"}
    design = ct.get_experiment("temporal-discounting").env_cls.design_cls(adaptive=("k", "temperature"), trials=12)
    space = adaptive_space(design)
    for _, rows in a.groupby("subject"):
        chosen = rows["design_index"].tolist()
        assert chosen == [int(str(item).removeprefix("adaptive_")) for item in rows["item"]]
        assert replay(MODEL, space, rows["action"].tolist(), ("k", "temperature")) == chosen
        # the recorded stimulus columns are the chosen candidates' own
        np.testing.assert_array_equal(rows[["amount1", "delay1", "amount2", "delay2", "scale"]].to_numpy(),
                                      space.fields["questions"][chosen])
    # different subjects answer differently and get different questions
    assert a.groupby("subject")["item"].apply(tuple).nunique() == 3


def test_adaptive_posterior_narrows_on_the_target() -> None:
    design = ct.get_experiment("temporal-discounting").env_cls.design_cls(adaptive=("k",), trials=20)
    space = adaptive_space(design)
    table = ct.simulate("temporal-discounting", "hyperbolic", subjects=1, seed=1, adaptive="k", trials=20,
                        params={"k": 0.3, "temperature": 0.05})
    designer = AdaptiveDesigner(MODEL, space, ("k",))
    prior_sd = designer.summary("k")["sd"]
    for d, action in zip(table["design_index"], table["action"], strict=True):
        designer.update(int(d), int(action))
    post = designer.summary("k")
    assert post["sd"] < prior_sd / 5
    assert post["lo"] < np.log(0.3) < post["hi"]


def test_refusals_are_one_line() -> None:
    with pytest.raises(InputError, match="instrumental-learning: `adaptive` refused: "):
        ct.simulate("instrumental-learning", "rw-pm", subjects=1, adaptive="alpha", trials=5)
    with pytest.raises(InputError, match="has parameters k, temperature"):
        ct.simulate("temporal-discounting", "hyperbolic", subjects=1, adaptive="beta", trials=5)
    with pytest.raises(InputError, match="needs `trials`"):
        ct.simulate("temporal-discounting", "hyperbolic", subjects=1, adaptive="k")
    with pytest.raises(InputError, match="give `adaptive`"):
        ct.simulate("temporal-discounting", "hyperbolic", subjects=1, trials=5)
    table = ct.simulate("temporal-discounting", "hyperbolic", subjects=1, adaptive="all", trials=3)
    with pytest.raises(DataError, match="assumes the fixed staircase"):
        ct.metrics("temporal-discounting", table)


def test_run_prices_an_adaptive_session_and_refuses_batch(tmp_path: Path) -> None:
    est = ct.run("temporal-discounting", llm="openai:gpt-4o-mini", output=tmp_path / "dry", subjects=3,
                 adaptive="k", trials=25, dry_run=True)
    assert est["calls"] == 75 and est["longest_session_calls"] == 25
    # risky choice's fixed prompts depend on no answer; its adaptive ones do, and the dry run says so
    risky = ct.run("risky-choice", llm="openai:gpt-4o-mini", output=tmp_path / "r", subjects=2, adaptive="lambda",
                   trials=6, dry_run=True)
    assert risky["calls"] == 12 and risky["prompts_are_the_runs"] is False and risky["answer_independent"] is False
    with pytest.raises(InputError, match="`batch` refused for an adaptive session"):
        ct.run("temporal-discounting", llm="openai:gpt-4o-mini", output=tmp_path / "b", subjects=1,
               adaptive="k", trials=5, dry_run=True, batch=True)
    with pytest.raises(InputError, match="two-step: `adaptive` refused"):
        ct.run("two-step", llm="openai:gpt-4o-mini", output=tmp_path / "c", adaptive="w", trials=5, dry_run=True)


@pytest.mark.slow
def test_an_adaptive_smollm2_session_runs_and_its_table_fits(smollm2: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """SmolLM2-135M (offline) answers 16 adaptive questions of temporal discounting in-process, and the
    same model served by the local OpenAI-compatible server answers them as an API model: the same
    answers and designs.  The table records each chosen design, replays from its answers, and the
    hyperbolic model fits it."""
    from cogtestbed.llm_adapters.servers.server import serve

    options = {"subjects": 1, "adaptive": "k,temperature", "trials": 16}
    table = ct.run("temporal-discounting", llm="hf:smollm2-135m", output=tmp_path / "run",
                   cache=tmp_path / "a.sqlite", **options).trials
    assert len(table) == 16 and table["valid"].all()
    assert table["action"].nunique() == 2  # it prefers the later amount on some questions, not on all
    design = ct.get_experiment("temporal-discounting").env_cls.design_cls(adaptive=("k", "temperature"), trials=16)
    assert replay(MODEL, adaptive_space(design), table["action"].tolist(), ("k", "temperature")) == \
        table["design_index"].tolist()
    fit = MODEL.fit_mle(table)
    est = fit.iloc[0]
    assert np.isfinite(est["nll"]) and 0 < est["k"] < 100 and 0 < est["temperature"] <= 10
    monkeypatch.setenv("OPENAI_API_KEY", "local-server")
    with serve({"smollm2-135m": smollm2}) as url:
        remote = ct.run("temporal-discounting", llm="openai:smollm2-135m", base_url=url, mode="chat",
                        output=tmp_path / "api", cache=tmp_path / "b.sqlite", **options).trials
    assert remote["action"].tolist() == table["action"].tolist()
    assert remote["design_index"].tolist() == table["design_index"].tolist()


def test_plan_adaptive_prices_both_arms_for_one_precision_target() -> None:
    plan = ct.plan("temporal-discounting", adaptive="k", precision="k=1.0", assurance=0.8, llm="openai:gpt-4o-mini",
                   subjects=10, trials="1:12", adaptive_sims=12, seed=3)
    p = plan.payload
    assert plan.kind == "adaptive" and p["max_trials"] == 12 and p["sessions"] == 10
    for arm in ("fixed", "adaptive"):
        a = p[arm]
        if a["calls"] is not None:  # reached: the choosing share meets the assurance, and calls = trials x sessions
            assert a["search_share"] >= 0.8 and a["calls"] == a["trials"] * 10 and a["cost_usd"] > 0
        # the printed share: fresh subjects at the chosen trials
        se = (a["share"] * (1 - a["share"]) / 12) ** 0.5
        assert a["share_subjects"] == "fresh" and a["share_se"] == pytest.approx(se)
    assert p["adaptive"]["calls"] is not None and p["adaptive"]["trials"] <= 12
    with pytest.raises(InputError, match="plans a precision target"):
        ct.plan("temporal-discounting", adaptive="k", llm="openai:gpt-4o-mini")


def test_precision_trials_reads_the_share_within_the_halfwidth() -> None:
    from cogtestbed.planning.kinds.adaptive.adaptive import AdaptiveComparison, Curves, precision_trials

    z = np.zeros((4, 3))
    mean = np.array([[1.0, 0.4, 0.1], [1.0, 1.0, 0.1], [0.0, 0.0, 0.0], [2.0, 0.2, 0.2]])
    curves = {arm: {"k": Curves(mean if arm == "adaptive" else mean + 1, z, z, z)} for arm in ("fixed", "adaptive")}
    res = AdaptiveComparison("x", ("k",), 3, {"k": np.zeros(4)}, curves)
    out = precision_trials(res, "k", 0.5, 0.75)
    assert out["adaptive"]["trials"] == 2.0 and out["adaptive"]["share"] == 0.75  # 3 of 4 within 0.5 at trial 2
    assert np.isnan(out["fixed"]["trials"]) and out["fixed"]["share"] == 0.0


def test_risky_choice_adaptive_session_replays_and_nulls_the_design_shares() -> None:
    from cogtestbed.inference.risky import MODELS as RISKY
    from cogtestbed.inference.risky import adaptive_space as risky_space

    table = ct.simulate("risky-choice", "prospect-theory", subjects=2, seed=2, adaptive="lambda", trials=8,
                        params={"lambda": [0.8, 3.0], "alpha": 0.8, "theta": 1.0})
    assert len(table) == 16 and (table["session"] == 0).all()
    design = ct.get_experiment("risky-choice").env_cls.design_cls(adaptive=("lambda",), trials=8)
    space = risky_space(design)
    assert space.size == 83  # Experiment 2's 98 pairs, 15 symmetric ones in both contexts
    for _, rows in table.groupby("subject"):
        chosen = rows["design_index"].tolist()
        assert replay(RISKY["prospect-theory"], space, rows["action"].tolist(), ("lambda",)) == chosen
        np.testing.assert_array_equal(rows[["x1", "x2", "y1", "y2"]].to_numpy(), space.fields["outcomes"][chosen])
    report = ct.metrics("risky-choice", table)
    assert report["metrics"]["p_risky"] is None and report["metrics"]["p_higher_ev"] is None
    assert np.isfinite(report["metrics"]["loss_aversion"])
    assert any("chosen adaptively" in f for f in report["flags"])


def test_describe_names_the_adaptive_model_or_the_reason() -> None:
    td = ct.describe("temporal-discounting")["adaptive"]
    assert td["model"] == "hyperbolic" and td["parameters"] == ["k", "temperature"]
    assert ct.describe("risky-choice")["adaptive"]["parameters"] == ["lambda", "alpha", "theta"]
    assert ct.describe("instrumental-learning")["adaptive"]["refused"].startswith("a learning task")
