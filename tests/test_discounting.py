"""Temporal discounting: the staircase tree, exact prompts, parser, agents, score vs k."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

from cogtestbed.environments.base import NO_ACTION
from cogtestbed.environments.discounting import (
    DiscountingDesign,
    TemporalDiscountingEnv,
    anomaly_question,
    score_answers,
)
from cogtestbed.inference.discounting import MODELS, cogbench_metrics, expected_score
from cogtestbed.simulation import as_sessions, simulate


def play(answers: list[int], design: DiscountingDesign | None = None) -> list[str]:
    env = TemporalDiscountingEnv(design)
    obs, _ = env.reset(seed=0)
    prompts = []
    for a in answers:
        prompts.append(obs["prompt"])
        obs, _, done, *_ = env.step(a)
        if done:
            break
    return prompts


def test_first_prompt_is_cogbench_text():
    assert play([0])[0] == ("\n\nQ: What do you prefer between the following two options:\n"
                            " - Option 1: Receive 500 dollars now.\n"
                            " - Option 2: Receive 550 dollars in 12 months.\n\nA: I prefer option")


def test_staircase_follows_the_code_tree():
    # gain 500: 1, 1, 2 (score 4, mvf 1.5); gain 5000: 2, 2, 2 (0); loss: 2, 1 (2); anomalies
    answers = [0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1]
    prompts = play(answers)
    assert len(prompts) == 12
    assert "Receive 600 dollars in 12 months" in prompts[1] and "Receive 750 dollars" in prompts[2]
    assert "Receive 5000 dollars now.\n - Option 2: Receive 5500" in prompts[3]
    assert "Receive 5100 dollars" in prompts[4] and "Receive 5050 dollars" in prompts[5]
    assert "Pay 500 dollars now.\n - Option 2: Pay 550 dollars in 12 months." in prompts[6]
    assert "Pay 510 dollars in 12 months" in prompts[7]
    assert "Option 1: Receive 500 dollars in 12 months.\n - Option 2: Receive 750 dollars in 24 months." in prompts[8]
    assert "Option 2: Receive 1000 dollars in 24 months." in prompts[9]
    assert "Wait 12 months for the 500 dollars but with an additional 250 dollars." in prompts[10]
    assert ("Option 1: Wait 12 months to receive 750 dollars now.\n - Option 2: Pay 250 dollars and "
            "receive the 750 dollars gain now.") in prompts[11]
    res = score_answers(DiscountingDesign(), answers)
    assert res["score"] == 4 + 0 + 2 + 2 and res["mvf"] == 1.5
    assert [res[k] for k in ("present_bias", "subadditivity", "delay_speedup_asymmetry",
                             "delay_length_asymmetry")] == [0, 1, 0, 1]


def test_code_truncation_quirk_in_amounts():
    # int(500 * (1.2 - 1)) == 99 in CogBench's code
    q = anomaly_question(DiscountingDesign(), 2, 3)
    assert "additional 99 dollars" in q.option2


def test_always_sooner_skips_anomalies():
    res = score_answers(DiscountingDesign(), [0] * 9)
    assert res["complete"] and not res["anomalies_asked"] and res["score"] == 5 + 5 + 5


def test_invalid_answer_ends_the_session_without_score():
    env = TemporalDiscountingEnv()
    env.reset(seed=0)
    env.step(0)
    env.record_response("maybe", "no option 1 or 2")
    _, _, done, *_ = env.step(NO_ACTION)
    assert done
    t = TemporalDiscountingEnv.trials_table(env.design, env.sample_sessions(env.design, 1, np.random.default_rng()),
                                            env.outcomes)
    assert len(t) == 2 and not t["valid"].iloc[1]
    m = cogbench_metrics(t)["metrics"]
    assert np.isnan(m["score"]) and m["n_incomplete"] == 1


@pytest.mark.parametrize(("text", "expected"), [("1", 0), ("2.", 1), (" 1", 0), ("Option 2", 1), ("1 because", 0),
                                                     ("I prefer option 1: Receive", 0), ("A: I prefer option 2.", 1)])
def test_parser_accepts(text, expected):
    env = TemporalDiscountingEnv()
    env.reset(seed=0)
    res = env.parse(text)
    assert res.ok and res.action == expected


@pytest.mark.parametrize(("text", "reason"), [("", "empty"), ("12", "no option"), ("three", "no option"),
                                               ("I prefer neither", "no option"), ("I prefer option 12", "no option")])
def test_parser_failures(text, reason):
    env = TemporalDiscountingEnv()
    env.reset(seed=0)
    res = env.parse(text)
    assert not res.ok and reason in res.error


def test_paper_variant_concatenates_history():
    prompts = play([0, 1], DiscountingDesign.paper())
    assert prompts[1].startswith(prompts[0][: -len("I prefer option")] + "I prefer option 1.")


def test_gymnasium_env_checker_passes():
    check_env(TemporalDiscountingEnv(), skip_render_check=True)


@pytest.mark.parametrize(("agent", "params"), [("random", {}), ("hyperbolic", {"k": 0.15, "temperature": 0.05}),
                                               ("hyperbolic", {"k": 0.5, "temperature": 0.0})])
def test_batch_path_equals_step_path(agent, params):
    a = simulate("temporal-discounting", agent, 8, 2, params)
    b = simulate("temporal-discounting", agent, 8, 2, params, method="step")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(("k", "gain"), [(0.005, 0), (0.015, 1), (0.05, 2), (0.15, 3), (0.3, 4), (0.8, 5)])
def test_deterministic_gain_baseline_scores(k, gain):
    res = expected_score(k)
    assert res["score_gain"] == gain and res["score_gain_magnitude"] == gain
    # loss baseline: paying later is worth -A/(1+k), so the tree climbs (score 5) while k < 0.1
    # and falls to 0 beyond: the total is not monotone in k
    assert res["score_loss"] == (5 if k < 0.1 else 0)


def test_score_is_not_monotone_in_k():
    scores = [expected_score(k)["score"] for k in (0.005, 0.05, 0.09, 0.15, 0.3, 0.8)]
    assert any(b < a for a, b in zip(scores, scores[1:], strict=False))
    assert any(b > a for a, b in zip(scores, scores[1:], strict=False))


def test_random_agent_matches_cogbench_random_file_mean():
    m = cogbench_metrics(simulate("temporal-discounting", "random", 4000, 0))["metrics"]
    # CogBench's random.csv (1000 runs) scores 9.106; the reference in Coda-Forno et al. 2024 is 9.106
    assert m["score"] == pytest.approx(9.1, abs=0.2)


def test_mle_recovers_k_from_pooled_runs():
    t = simulate("temporal-discounting", "hyperbolic", 40, 4, {"k": 0.15, "temperature": 0.05})
    fit = MODELS["hyperbolic"].fit_mle(as_sessions(t, t["subject"].nunique())).iloc[0]
    assert fit["k"] == pytest.approx(0.15, rel=0.3)
