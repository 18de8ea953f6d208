"""Instrumental-learning environment: dynamics, exact prompt text, parser, gymnasium contract."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cogtestbed.environments.base import NO_ACTION
from cogtestbed.environments.instrumental import (
    InstrumentalDesign,
    InstrumentalLearningEnv,
    InstrumentalSessions,
)


def fixed_session() -> InstrumentalSessions:
    """A hand-made session: casinos 4, 1, 3, 3, ... with known letters and outcomes."""
    casino = np.array([[4, 1, 3, 3] + [2] * 92])
    letters = np.array([[["B", "C"], ["K", "L"], ["R", "S"], ["Q", "D"]]])
    draws = np.zeros((1, 96, 2))
    draws[0, 1, 0] = 1.0  # Machine B in casino 1 pays on trial 1
    flip = np.zeros((1, 96), dtype=bool)
    flip[0, 4] = True
    return InstrumentalSessions(casino=casino, letters=letters, reward_draws=draws, flip=flip)


def test_sessions_follow_the_design():
    design = InstrumentalDesign()
    s = InstrumentalLearningEnv.sample_sessions(design, 200, np.random.default_rng(0))
    # 24 visits to each casino, in a permuted order
    for c in range(1, 5):
        assert np.all((s.casino == c).sum(axis=1) == 24)
    assert not np.all(s.casino[:, :24] == 1)
    # 8 distinct letters per subject, from CogBench's alphabet
    flat = s.letters.reshape(200, 8)
    assert all(len(set(row)) == 8 for row in flat)
    assert set(flat.ravel()) <= set("ABCDEFGHJKLMNOPQRSTVW")
    # pre-sampled Bernoulli outcomes at the casino's probabilities
    probs = np.asarray(design.reward_probs)[s.casino - 1]
    for p in (0.25, 0.75):
        freq = s.reward_draws[probs == p].mean()
        assert abs(freq - p) < 0.01
    assert abs(s.flip.mean() - 0.5) < 0.01


def test_prompt_is_cogbench_text_first_and_fifth_trial():
    env = InstrumentalLearningEnv()
    obs, _ = env.reset(options={"session": fixed_session()})
    intro = (
        "You are going to visit four different casinos (named 1, 2, 3 and 4) 24 times each. "
        "Each casino owns two slot machines which all return either 1 or 0 dollars "
        "stochastically with different reward probabilities. "
    )
    spec = '(Give the answer in the form "Machine <your answer>.")\n\nA: Machine'
    assert obs["prompt"] == (
        intro + "Your goal is to maximize the sum of received dollars within all 96 visits.\n"
        "\n\n\n\nQ: You are now in visit 1 playing in Casino 4. "
        "Which machine do you choose between Machine Q and Machine D?" + spec
    )
    for action in (0, 0, 1, 0):
        obs, *_ = env.step(action)
    assert obs["prompt"] == (
        intro + "Your goal is to maximize the sum of received dollars within 96 visits.\n"
        "\nYou have received the following amount of dollars when playing in the past: \n"
        "- Machine Q in Casino 4 delivered 0.0 dollars.\n"
        "- Machine B in Casino 1 delivered 1.0 dollars.\n"
        "- Machine S in Casino 3 delivered 0.0 dollars.\n"
        "- Machine R in Casino 3 delivered 0.0 dollars.\n"
        "\n\n\nQ: You are now in visit 5 playing in Casino 2. "
        "Which machine do you choose between Machine L and Machine K?" + spec
    )


def test_paper_variant_wording():
    env = InstrumentalLearningEnv(InstrumentalDesign.paper())
    obs, _ = env.reset(options={"session": fixed_session()})
    assert "(named 1, 2, 3, and 4)" in obs["prompt"]
    assert obs["prompt"].endswith('(Give the answer in the form "Machine <<<your choice>>>").\n\nA: Machine')


def test_dynamics_rewards_and_info():
    env = InstrumentalLearningEnv()
    obs, info = env.reset(options={"session": fixed_session()})
    assert obs["casino"] == 4 and info["means"] == (0.75, 0.75)
    obs, reward, terminated, truncated, info = env.step(0)
    assert reward == 0.0 and obs["casino"] == 1 and obs["trial"] == 1
    assert info["optimal_action"] == 0 and not terminated and not truncated
    _, reward, *_ = env.step(0)
    assert reward == 1.0
    for _ in range(94):
        _, _, terminated, _, _ = env.step(1)
    assert terminated
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)


def test_no_action_is_recorded_invalid_and_leaves_no_history():
    env = InstrumentalLearningEnv()
    env.reset(options={"session": fixed_session()})
    env.record_response("I like turtles", "no machine letter found")
    obs, reward, *_ = env.step(NO_ACTION)
    assert reward == 0.0
    assert "You have received" not in obs["prompt"]
    assert "visit 2" in obs["prompt"]
    assert not env.outcomes.valid[0, 0] and np.isnan(env.outcomes.reward[0, 0])
    assert env.outcomes.raw_response[0, 0] == "I like turtles"


def test_invalid_action_raises():
    env = InstrumentalLearningEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="invalid action"):
        env.step(2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("D", 1), ("Q", 0), ("Q.", 0), (" D\n", 1), ("Machine D", 1), ("machine q", 0),
        ("I choose Machine D.", 1), ("D.\n\nQ: next", 1),
    ],
)
def test_parser_accepts_machine_answers(text, expected):
    env = InstrumentalLearningEnv()
    env.reset(options={"session": fixed_session()})
    result = env.parse(text)
    if expected is None:
        assert not result.ok
    else:
        assert result.ok and result.action == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty answer"),
        ("Z", "machine Z is not offered"),
        ("Machine B", "machine B is not offered"),
        ("Machine Q or Machine D", "ambiguous"),
        ("0.85", "no machine letter"),
        ("I would pick the left one", "no machine letter"),
    ],
)
def test_parser_failures_have_reasons(text, reason):
    env = InstrumentalLearningEnv()
    env.reset(options={"session": fixed_session()})
    result = env.parse(text)
    assert not result.ok and result.action is None
    assert reason in result.error


def test_gymnasium_env_checker_passes():
    check_env(InstrumentalLearningEnv(), skip_render_check=True)


def test_reset_with_seed_is_deterministic():
    a, _ = InstrumentalLearningEnv().reset(seed=11)
    b, _ = InstrumentalLearningEnv().reset(seed=11)
    c, _ = InstrumentalLearningEnv().reset(seed=12)
    assert a["prompt"] == b["prompt"] and a["prompt"] != c["prompt"]


def test_design_validation_errors():
    with pytest.raises(ValueError, match="reward_probs"):
        InstrumentalDesign(reward_probs=((0.2, 1.2),) * 4)
    with pytest.raises(ValueError, match="visits_per_casino"):
        InstrumentalDesign(visits_per_casino=0)
    with pytest.raises(ValueError):
        InstrumentalDesign(unknown_field=3)
    assert InstrumentalDesign(visits_per_casino=48).n_trials == 192
