"""Two-step task: exact CogBench prompts (both stages), parser, dynamics, agents (batch == step)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

from cogtestbed.environments.base import NO_ACTION
from cogtestbed.environments.twostep import TwoStepDesign, TwoStepEnv, TwoStepSessions
from cogtestbed.inference.twostep import MODELS, cogbench_metrics
from cogtestbed.simulation import as_sessions, simulate

START = (
    "You will travel to foreign planets in search of treasures.\n"
    "When you visit a planet, you can choose an alien to trade with.\n"
    "The chance of getting treasures from these aliens changes over time.\n"
    "Your goal is to maximize the number of received treasures.\n\n"
)


def fixed_session(t: int = 20) -> TwoStepSessions:
    probs = np.full((1, t, 4), 0.5)
    probs[0, :, 1] = 0.75  # alien F pays often
    transition_u = np.full((1, t), 0.1)
    transition_u[0, 1] = 0.9  # day 2 is a rare transition
    reward_u = np.full((1, t), 0.6)  # treasure iff p > 0.6 (only F)
    return TwoStepSessions(probs=probs, transition_u=transition_u, reward_u=reward_u)


def test_prompts_are_cogbench_text_on_both_stages():
    env = TwoStepEnv()
    obs, _ = env.reset(options={"session": fixed_session()})
    assert obs["prompt"] == (START + "\n\n\nQ: Do you want to take the spaceship to planet X or "
                             "planet Y?\n\n\nA: Planet")
    obs, *_ = env.step(0)  # X, common → planet X
    assert obs["stage"] == 1 and obs["planet"] == 0
    assert obs["prompt"] == (START + "\n\n\nQ: Do you want to take the spaceship to planet X or "
                             "planet Y?\n X.\nYou arrive at planet X.\n\n\nQ: Do you want to trade "
                             "with alien D or F?\n\n\nA: Alien")
    obs, r, *_ = env.step(1)  # alien F → treasure
    assert r == 1.0
    obs, *_ = env.step(0)  # X, rare → planet Y
    assert obs["planet"] == 1 and "trade with alien J or K?" in obs["prompt"]
    obs, r, *_ = env.step(0)  # alien J → junk
    assert r == 0.0
    assert obs["prompt"].startswith(
        START + "Your previous space travels went as follows:\n"
        "- 2 days ago, you boarded the spaceship to planet X, arrived at planet X, traded with "
        "alien F, and received treasures.\n"
        "- 1 day ago, you boarded the spaceship to planet X, arrived at planet Y, traded with "
        "alien J, and received junk.\n\n\n\nQ: Do you want")


def test_paper_variant_renders_first_answer_with_delimiter():
    env = TwoStepEnv(TwoStepDesign.paper())
    env.reset(options={"session": fixed_session()})
    obs, *_ = env.step(1)
    assert "planet Y?\n\n\nA: Planet Y.\nYou arrive at planet Y." in obs["prompt"]


@pytest.mark.parametrize(("stage_actions", "text", "expected"), [
    ((), "X", 0), ((), " Y.", 1), ((), "Planet Y", 1), ((), "y", 1), ((0,), "F", 1), ((0,), " D.", 0),
])
def test_parser_accepts(stage_actions, text, expected):
    env = TwoStepEnv()
    env.reset(options={"session": fixed_session()})
    for a in stage_actions:
        env.step(a)
    res = env.parse(text)
    assert res.ok and res.action == expected


@pytest.mark.parametrize(("stage_actions", "text", "reason"), [
    ((), "", "empty"), ((), "X or Y", "ambiguous"), ((), "Z", "not offered"), ((), "Mars", "no planet"),
    ((0,), "J", "alien J is not offered"),
])
def test_parser_failures_have_reasons(stage_actions, text, reason):
    env = TwoStepEnv()
    env.reset(options={"session": fixed_session()})
    for a in stage_actions:
        env.step(a)
    res = env.parse(text)
    assert not res.ok and reason in res.error


def test_invalid_first_stage_skips_the_second_question():
    env = TwoStepEnv()
    env.reset(options={"session": fixed_session()})
    env.record_response("Mars", "no planet letter found")
    obs, *_ = env.step(NO_ACTION)
    assert obs["stage"] == 0 and obs["trial"] == 1 and "previous space travels" not in obs["prompt"]
    assert env.outcomes.played[0, :3].tolist() == [True, False, False]


def test_gymnasium_env_checker_passes():
    check_env(TwoStepEnv(), skip_render_check=True)


def test_sessions_drift_and_stay_in_bounds():
    s = TwoStepEnv.sample_sessions(TwoStepDesign(), 300, np.random.default_rng(0))
    assert s.probs.min() >= 0.25 and s.probs.max() <= 0.75
    steps = np.diff(s.probs, axis=1)
    inner = (s.probs[:, 1:] > 0.26) & (s.probs[:, 1:] < 0.74) & (s.probs[:, :-1] > 0.26) & (s.probs[:, :-1] < 0.74)
    assert steps[inner].std() == pytest.approx(0.025, rel=0.05)
    assert (s.transition_u < 0.7).mean() == pytest.approx(0.7, abs=0.02)


@pytest.mark.parametrize(("agent", "params"), [
    ("random", {}), ("hybrid", {"w": 0.6, "alpha": 0.4, "beta": 4, "lam": 0.3, "persev": 0.5}),
    ("model-based", {"alpha": 0.5, "beta": 6}), ("model-free", {"alpha": 0.5, "beta": 6, "lam": 1.0}),
])
def test_batch_path_equals_step_path(agent, params):
    a = simulate("two-step", agent, 6, 11, params)
    b = simulate("two-step", agent, 6, 11, params, method="step")
    pd.testing.assert_frame_equal(a, b)


def test_batch_equals_step_with_per_subject_parameters():
    params = {"w": np.linspace(0, 1, 5), "beta": np.linspace(1, 8, 5)}
    a = simulate("two-step", "hybrid", 5, 3, params)
    b = simulate("two-step", "hybrid", 5, 3, params, method="step")
    pd.testing.assert_frame_equal(a, b)


def test_random_agent_is_a_fair_coin_and_transitions_are_70_30():
    t = simulate("two-step", "random", 2000, 0)
    assert t["action"].astype(float).mean() == pytest.approx(0.5, abs=0.01)
    assert t["action2"].mean() == pytest.approx(0.5, abs=0.01)
    assert t["common"].mean() == pytest.approx(0.7, abs=0.01)
    m = cogbench_metrics(t)["metrics"]
    assert abs(m["model_basedness"]) < 0.02 and m["performance"] == pytest.approx(0.5, abs=0.01)


def test_model_basedness_separates_model_based_from_model_free():
    mb = cogbench_metrics(simulate("two-step", "model-based", 400, 1, {"alpha": 0.6, "beta": 8}))
    mf = cogbench_metrics(simulate("two-step", "model-free", 400, 1, {"alpha": 0.6, "beta": 8, "lam": 1}))
    assert mb["metrics"]["model_basedness"] > 0.1
    assert abs(mf["metrics"]["model_basedness"]) < 0.05 < mf["metrics"]["reward_effect"]


def test_hybrid_mle_recovers_w_from_pooled_runs():
    true = {"w": 0.8, "alpha": 0.5, "beta": 6.0, "lam": 0.5, "persev": 0.3}
    t = simulate("two-step", "hybrid", 300, 5, true)
    fit = MODELS["hybrid"].fit_mle(as_sessions(t, t["subject"].nunique())).iloc[0]
    assert fit["w"] == pytest.approx(0.8, abs=0.15)
    assert fit["beta"] == pytest.approx(6.0, rel=0.35)
