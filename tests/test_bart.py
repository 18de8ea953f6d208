"""BART: exact prompts, parser, pop rule, agents (batch == step), target model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

from cogtestbed.environments.bart import BartDesign, BartEnv, BartSessions
from cogtestbed.environments.base import NO_ACTION
from cogtestbed.inference.bart import MODELS, cogbench_metrics, expected_points, expected_pumps
from cogtestbed.simulation import as_sessions, simulate

TARGET = {"target_128": 40.0, "target_32": 12.0, "target_8": 3.0, "noise": 1.5}


def fixed_session() -> BartSessions:
    d = BartDesign()
    steps = BartEnv.max_steps(d)
    return BartSessions(type_max=np.array([[8, 128, 32]]), sequence=np.array([[0, 1] + [2] * 15 + [0] * 14 + [1] * 14]),
                        break_point=np.full((1, 45), 3), skip_is_two=np.zeros((1, steps), dtype=bool))


def test_prompts_follow_cogbench_code():
    env = BartEnv()
    obs, _ = env.reset(options={"session": fixed_session()})
    instructions = env.instructions()
    assert instructions.startswith("In this game you will encounter 3 different balloons labeled A, B and C."
                                   " There will be a total of 15 balloons for each type of balloon.")
    assert "across all 45 balloons. Your goal is to maximize your final score. " in instructions
    q = ("\n\nQ: You are currently with balloon 1 which is a balloon of type A. What do you do? "
         "(Option 1 for 'skip' or Option 2 for 'inflate')\n\nA: Option")
    assert obs["prompt"] == instructions + q
    obs, *_ = env.step(1)  # inflate: 1 point so far
    header = "\n\n You observed the following previously where the type of balloon is given in parenthesis:"
    assert obs["prompt"] == (instructions + header + "\n -Balloon 1 (A): You inflated the balloon 1 times for a "
                             "total of 1 points." + q)
    env.step(1)
    obs, r, *_ = env.step(1)  # third pump reaches the break point: pops
    assert r == 0.0 and obs["balloon"] == 1
    assert (header + "\n -Balloon 1 (A): You inflated the balloon 3 times for a total of 0 points. It did explode."
            "\n\nQ: You are currently with balloon 2 which is a balloon of type B.") in obs["prompt"]
    obs, r, *_ = env.step(1)
    obs, r, *_ = env.step(0)  # skip after 1 pump: banks 1
    assert r == 1.0
    line = "-Balloon 2 (B): You inflated the balloon 1 times for a total of 1 points. It did not explode."
    assert line in obs["prompt"]


def test_paper_variants():
    assert BartDesign.paper().n_balloons == 30
    env = BartEnv(BartDesign(prompt_variant="paper-era"))
    env.reset(seed=0)
    assert env.instructions().startswith("In this game will encounter 3")


def test_parser_maps_option_numbers_per_call():
    env = BartEnv()
    s = fixed_session()
    flips = s.skip_is_two.copy()
    flips[0, 1] = True
    env.reset(options={"session": BartSessions(s.type_max, s.sequence, s.break_point, flips)})
    assert env.parse("1").action == 0 and env.parse("2.").action == 1
    env.step(1)
    assert "(Option 2 for 'skip' or Option 1 for 'inflate')" in env.render_prompt()
    assert env.parse("1").action == 1 and env.parse(" 2").action == 0
    for text, reason in (("", "empty"), ("inflate", "no option"), ("3", "no option")):
        res = env.parse(text)
        assert not res.ok and reason in res.error


def test_invalid_answer_voids_the_balloon():
    env = BartEnv()
    env.reset(options={"session": fixed_session()})
    env.step(1)
    env.record_response("pop!", "no option 1 or 2")
    obs, *_ = env.step(NO_ACTION)
    assert obs["balloon"] == 1 and "Balloon 1 (A)" not in obs["prompt"]
    while env.t < 3:
        env.step(0)
    t = BartEnv.trials_table(env.design, env.session, env.outcomes)
    assert not t["valid"].iloc[0] and np.isnan(t["reward"].iloc[0]) and t["valid"].iloc[1]
    assert "pop!" in t["raw_response"].iloc[0]


def test_gymnasium_env_checker_passes():
    check_env(BartEnv(), skip_render_check=True)


def test_sessions_match_cogbench_sampling():
    s = BartEnv.sample_sessions(BartDesign(), 2000, np.random.default_rng(1))
    assert np.all(np.sort(s.type_max, axis=1) == [8, 32, 128])
    assert np.all([(s.sequence == k).sum(axis=1) == 15 for k in range(3)])
    bm = np.take_along_axis(s.type_max, s.sequence, axis=1)
    assert s.break_point.min() == 1 and np.all(s.break_point <= bm)
    u = (s.break_point - 0.5) / bm  # uniform on (0, 1) if the break point is uniform on 1..M
    assert u.mean() == pytest.approx(0.5, abs=0.01)
    # uniform over types with balloons left: the first balloon is each type 1/3 of the time
    assert np.bincount(s.sequence[:, 0], minlength=3) / 2000 == pytest.approx([1 / 3] * 3, abs=0.04)


@pytest.mark.parametrize(("agent", "params"), [("random", {}), ("target", TARGET),
                                               ("target", {**TARGET, "noise": 0.0})])
def test_batch_path_equals_step_path(agent, params):
    a = simulate("bart", agent, 4, 9, params)
    b = simulate("bart", agent, 4, 9, params, method="step")
    pd.testing.assert_frame_equal(a, b)


def test_random_agent_pumps_about_once():
    m = cogbench_metrics(simulate("bart", "random", 400, 0))["metrics"]
    # E[pumps] = sum_k 2^-k (M - k + 1)/M averaged over M = 128, 32, 8 (0.945); CogBench's
    # 11-run random file gives 0.99 (run-to-run SD of the mean about 0.05)
    expected = np.mean([sum(0.5**k * (m_ - k + 1) / m_ for k in range(1, m_ + 1)) for m_ in (128, 32, 8)])
    assert m["risk"] == pytest.approx(expected, abs=0.02)


def test_deterministic_target_matches_expected_points_and_pumps():
    n = {"target_128": 64.0, "target_32": 16.0, "target_8": 4.0, "noise": 0.0}
    m = cogbench_metrics(simulate("bart", "target", 2000, 0, n))["metrics"]
    assert m["performance"] == pytest.approx(np.mean([expected_points(64, 128), expected_points(16, 32),
                                                      expected_points(4, 8)]), rel=0.02)
    assert m["risk"] == pytest.approx(np.mean([expected_pumps(64, 128), expected_pumps(16, 32),
                                               expected_pumps(4, 8)]), rel=0.02)


def test_target_mle_recovers_targets():
    t = simulate("bart", "target", 10, 2, TARGET)
    fit = MODELS["target"].fit_mle(as_sessions(t, t["subject"].nunique())).iloc[0]
    assert fit["target_32"] == pytest.approx(12, abs=1.5) and fit["target_8"] == pytest.approx(3, abs=0.7)
    assert fit["target_128"] == pytest.approx(40, abs=5)
