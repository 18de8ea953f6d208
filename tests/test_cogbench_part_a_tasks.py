"""Probabilistic reasoning, horizon and restless bandit: designs, exact prompts, parsers, agents
(batch path == step path), importers and the model fits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.environments.base import NO_ACTION
from cogtestbed.environments.horizon import HorizonDesign, HorizonEnv, HorizonSessions
from cogtestbed.environments.probabilistic import (
    ProbabilisticDesign,
    ProbabilisticReasoningEnv,
    ProbabilisticSessions,
)
from cogtestbed.environments.restless import RestlessBanditEnv, RestlessDesign
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cogbench"


# ----------------------------------------------------------------------------- batch == step
@pytest.mark.parametrize(
    ("experiment", "agent", "params"),
    [
        ("probabilistic-reasoning", "random", {}),
        ("probabilistic-reasoning", "generalised-bayes", {"beta_prior": 0.6, "noise_sd": 0.8, "bias": 0.3}),
        ("horizon", "random", {}),
        ("horizon", "info-bonus", {"bonus_h6": 9.0, "temperature_h6": 12.0, "bias": -1.0}),
        ("restless-bandit", "random", {}),
        ("restless-bandit", "kalman", {"confidence_noise": 0.7, "confidence_gain": 1.5}),
    ],
)
def test_batch_path_equals_step_path(experiment: str, agent: str, params: dict) -> None:
    batch = simulate(experiment, agent, 12, seed=11, params=params, method="batch")
    step = simulate(experiment, agent, 12, seed=11, params=params, method="step")
    pd.testing.assert_frame_equal(batch, step)


def test_restless_paper_variant_batch_equals_step() -> None:
    design = RestlessDesign.paper()
    a = simulate("restless-bandit", "kalman", 6, seed=3, design=design, method="batch")
    b = simulate("restless-bandit", "kalman", 6, seed=3, design=design, method="step")
    pd.testing.assert_frame_equal(a, b)
    assert a.groupby("subject").size().between(72, 88).all()


# ----------------------------------------------------------------------------- probabilistic reasoning
def pr_session() -> ProbabilisticSessions:
    return ProbabilisticSessions(
        left_is_f=np.array([[True, False]]), prior=np.array([[0.6, 0.1]]), lh=np.array([[0.8, 0.4]]),
        urn_left=np.array([[True, False]]), red=np.array([[True, False]]),
    )


def test_probabilistic_prompt_is_cogbench_text() -> None:
    env = ProbabilisticReasoningEnv()
    obs, info = env.reset(options={"session": pr_session()})
    assert obs["prompt"] == (
        "You are participating in an experiment where you are provided with a wheel of fortune and "
        "two urns. The wheel of fortune contains 10 evenly sized sections labelled either F or J, "
        "corresponding to the urns F and J. Another person will spin the wheel of fortune, select an "
        "urn based on the outcome of the spin, and then randomly pick a ball from the selected urn. "
        "Your goal is to give your best estimate of the probability of the urn being F after "
        "observing the ball drawn from the urn.\n\nQ: The wheel of fortune contains 6 sections "
        "labelled F and 4 sections labelled J. The urn F contains (8, 2) and the urn J contains "
        "(2, 8) red/blue balls. A red  ball was drawn. What is the probability that it was drawn "
        "from Urn F? (Give your probability estimate on the scale from 0 to 1 rounded to two "
        "decimal places)\n\nA: I estimate the probability of the red ball to be drawn from the urn "
        "F to be 0."
    )
    assert info["posterior"] == pytest.approx(0.6 * 0.8 / (0.6 * 0.8 + 0.4 * 0.2))
    obs, reward, done, _, _ = env.step(0.85)
    assert not done and reward == pytest.approx(1 - abs(6 / 7 - 0.85))
    assert "1 section labelled J and 9 sections labelled F" in obs["prompt"]
    assert "The urn J contains (4, 6) and the urn F contains (6, 4)" in obs["prompt"]
    assert obs["prompt"].endswith("blue ball to be drawn from the urn J to be 0.")
    _, _, done, _, _ = env.step(NO_ACTION)
    assert done and not env.outcomes.valid[0, 1]


def test_probabilistic_paper_variant() -> None:
    design = ProbabilisticDesign.paper()
    env = ProbabilisticReasoningEnv(design)
    obs, _ = env.reset(options={"session": pr_session()})
    assert "labeled F and 4 sections labeled J" in obs["prompt"] and "A red ball was" in obs["prompt"]
    s = ProbabilisticReasoningEnv.sample_sessions(design, 500, np.random.default_rng(0))
    assert set(np.unique(s.lh[:, 0])) == {0.7, 0.8, 0.9}


def test_probabilistic_sessions_follow_cogbench_design() -> None:
    s = ProbabilisticReasoningEnv.sample_sessions(ProbabilisticDesign(), 20000, np.random.default_rng(1))
    assert set(np.unique(s.lh[:, 0])) == {0.1, 0.2, 0.3, 0.7, 0.8, 0.9}
    assert set(np.unique(s.prior[:, 0])) == {0.4, 0.5, 0.6}
    assert abs((s.prior[:, 0] == 0.5).mean() - 0.5) < 0.02  # 0.5 listed twice in CogBench's set
    assert abs(s.urn_left.mean() - s.prior.mean()) < 0.01
    p_red = np.where(s.urn_left, s.lh, 1 - s.lh)
    assert abs(s.red.mean() - p_red.mean()) < 0.01
    with pytest.raises(ValueError):
        ProbabilisticDesign(informative_probs=(0.15,))


@pytest.mark.parametrize(("text", "value"), [("33", 0.33), ("5", 0.5), ("07.", 0.07), ("0.75", 0.75),
                                             (" 42\n\nQ: more", 0.42), ("99 because", 0.99)])
def test_probability_parser_accepts(text: str, value: float) -> None:
    result = ProbabilisticReasoningEnv().parse(text)
    assert result.ok and result.action == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "  ", "abc", "I think so", "-3"])
def test_probability_parser_rejects_with_reason(text: str) -> None:
    result = ProbabilisticReasoningEnv().parse(text)
    assert not result.ok and result.error


def test_generalised_bayes_recovery_and_cogbench_weights() -> None:
    truth = {"beta_prior": 0.6, "beta_likelihood": 0.3, "bias": 0.0, "noise_sd": 0.5}
    trials = simulate("probabilistic-reasoning", "generalised-bayes", 2000, seed=4, params=truth)
    m = get_experiment("probabilistic-reasoning").metrics(trials)["metrics"]
    assert m["prior_weighting"] == pytest.approx(0.6, abs=0.05)
    assert m["likelihood_weighting"] == pytest.approx(0.3, abs=0.05)
    fit = get_experiment("probabilistic-reasoning").model("generalised-bayes").fit_mle(
        trials.assign(subject=0, session=trials["subject"]))
    row = fit.iloc[0]
    assert row["beta_prior"] == pytest.approx(0.6, abs=0.05) and row["noise_sd"] == pytest.approx(0.5, abs=0.05)
    bayes = simulate("probabilistic-reasoning", "generalised-bayes", 200, seed=4, params={"noise_sd": 0.0})
    assert get_experiment("probabilistic-reasoning").metrics(bayes)["metrics"]["performance"] == pytest.approx(1.0)


def test_random_agent_matches_cogbench_random_file() -> None:
    exp = get_experiment("probabilistic-reasoning")
    sim = exp.metrics(simulate("probabilistic-reasoning", "random", 10000, seed=0))["metrics"]
    real = exp.metrics(exp.importer("cogbench").load(DATA / "ProbabilisticReasoning" / "random.csv"))["metrics"]
    assert sim["performance"] == pytest.approx(real["performance"], abs=0.01)
    assert abs(sim["prior_weighting"]) < 0.06 and abs(sim["likelihood_weighting"]) < 0.06


# ----------------------------------------------------------------------------- horizon
def horizon_session(horizon: int = 6) -> HorizonSessions:
    rewards = np.zeros((1, 10, 2))
    rewards[0, :, 0] = np.arange(10) + 40
    rewards[0, :, 1] = np.arange(10) + 60
    return HorizonSessions(horizon=np.array([horizon]), unequal=np.array([True]),
                           means=np.array([[40.0, 60.0]]), rewards=rewards,
                           forced=np.array([[1, 0, 0, 0]]))


def test_horizon_prompt_is_cogbench_text() -> None:
    env = HorizonEnv()
    obs, _ = env.reset(options={"session": horizon_session(6)})
    head = ("You are going to a casino that owns two slot machines.\nYou earn money each time you "
            "play on one of these machines.\n\nYou have received the following amount of dollars "
            "when playing in the past: \n- Machine J delivered 60 dollars.\n- Machine F delivered 41 "
            "dollars.\n- Machine F delivered 42 dollars.\n- Machine F delivered 43 dollars.\n")
    tail = ("\n\nQ: Which machine do you choose?(Give your answe in the format 'Machine <your "
            "choice>')\n\n\nA: Machine")
    goal = "\nYour goal is to maximize the sum of received dollars within six additional rounds.\n"
    assert obs["prompt"] == head + goal + tail
    obs, reward, done, _, _ = env.step(1)
    assert reward == 64 and not done
    assert obs["prompt"] == (head + "- Machine J delivered 64 dollars.\n\nYour goal is to maximize the "
                             "sum of received dollars within five additional rounds.\n" + tail)
    for _ in range(4):
        obs, *_ = env.step(0)
    assert "within one additional round.\n" in obs["prompt"]
    _, _, done, _, _ = env.step(NO_ACTION)
    assert done and env.outcomes.played[0].sum() == 6 and not env.outcomes.valid[0, 5]


def test_horizon_one_game_and_table() -> None:
    env = HorizonEnv()
    obs, _ = env.reset(options={"session": horizon_session(1)})
    assert "within one additional round.\n" in obs["prompt"]
    _, _, done, _, _ = env.step(0)
    assert done
    table = HorizonEnv.trials_table(env.design, env.session, env.outcomes)
    assert list(table["forced"]) == [True] * 4 + [False] and list(table["action"]) == [1, 0, 0, 0, 0]
    assert HorizonEnv(HorizonDesign.paper()).design.prompt_variant == "paper"


def test_horizon_sessions_follow_cogbench_design() -> None:
    s = HorizonEnv.sample_sessions(HorizonDesign(), 20000, np.random.default_rng(2))
    assert abs((s.horizon == 6).mean() - 0.5) < 0.02 and abs(s.unequal.mean() - 0.5) < 0.02
    forced_j = s.forced.sum(axis=1)
    assert set(forced_j[s.unequal]) == {1, 3} and set(forced_j[~s.unequal]) == {2}
    diff = np.abs(s.means[:, 0] - s.means[:, 1])
    assert set(np.unique(diff)) == {4, 8, 12, 20, 30}
    assert np.all(s.rewards == np.rint(s.rewards))
    assert abs(np.std(s.rewards[..., 0] - s.means[:, None, 0]) - 8) < 0.1


@pytest.mark.parametrize(("text", "arm"),
                         [("F", 0), ("J", 1), ("J.", 1), ("Machine F", 0), ("machine j", 1)])
def test_horizon_parser(text: str, arm: int) -> None:
    assert HorizonEnv().parse(text).action == arm


@pytest.mark.parametrize(("text", "reason"), [("", "empty"), ("K", "does not exist"),
                                              ("Machine F or Machine J", "ambiguous"),
                                              ("hmm, hard to say", "no machine letter")])
def test_horizon_parser_rejects(text: str, reason: str) -> None:
    result = HorizonEnv().parse(text)
    assert not result.ok and reason in result.error


def test_info_bonus_mle_recovers_parameters() -> None:
    truth = {"bonus_h1": 0.0, "bonus_h6": 10.0, "temperature_h1": 4.0, "temperature_h6": 10.0, "bias": 1.0}
    trials = simulate("horizon", "info-bonus", 4000, seed=8, params=truth)
    fit = get_experiment("horizon").model("info-bonus").fit_mle(trials.assign(subject=0, session=trials["subject"]))
    row = fit.iloc[0]
    assert row["bonus_h6"] == pytest.approx(10.0, abs=3.0)
    assert row["temperature_h6"] == pytest.approx(10.0, abs=2.5)
    assert row["temperature_h1"] == pytest.approx(4.0, abs=1.2)
    m = get_experiment("horizon").metrics(trials)["metrics"]
    assert m["directed_exploration"] > 0.3 and m["random_exploration"] > 0


# ----------------------------------------------------------------------------- restless bandit
def test_restless_prompts_for_both_calls() -> None:
    env = RestlessBanditEnv()
    obs, info = env.reset(seed=0)
    assert obs["phase"] == 0 and obs["prompt"].startswith(
        "\n\nQ: You are going to a casino that owns two slot machines named machine ")
    assert obs["prompt"].endswith("? Give the answer in the form 'Machine <your choice>'.\n\nA: Machine")
    choice_text = obs["prompt"]
    obs, reward, *_ = env.step(1)
    assert obs["phase"] == 1 and reward == env.session.rewards[0, 0, 1]
    # same question, different specification and answer prefix
    base = choice_text[: choice_text.index(" Give the answer")]
    assert obs["prompt"].startswith(base)
    assert obs["prompt"].endswith("two decimal places).\n\nA: Machine J with confidence 0.")
    obs, *_ = env.step(0.43)
    line = f"t=1: You chose J with a reported confidence of 0.43. It rewarded {int(reward)} $.\n"
    assert ("\n\nYou have received the following amount of $ when playing in the past: \n" + line) in obs["prompt"]
    assert "You are now in trial t=2." in obs["prompt"]
    # an unparsable confidence is recorded as invalid; the prompt shows CogBench's 0.0
    env.step(0)
    obs, *_ = env.step(NO_ACTION)
    assert "t=2: You chose F with a reported confidence of 0.0." in obs["prompt"]
    assert not env.outcomes.valid[0, 3] and env.outcomes.valid[0, 2]
    # an invalid choice uses up the trial and skips its confidence call
    obs, *_ = env.step(NO_ACTION)
    assert obs["phase"] == 0 and obs["trial"] == 3 and not env.outcomes.played[0, 5]


def test_restless_parser() -> None:
    env = RestlessBanditEnv()
    env.reset(seed=1)
    assert env.parse("J").action == 1 and not env.parse("X").ok
    env.step(0)
    assert env.parse("85").action == pytest.approx(0.85)
    assert env.parse("Machine F with confidence 0.6").action == pytest.approx(0.6)
    assert not env.parse("sure").ok


def test_restless_design_and_accuracy_rule() -> None:
    design = RestlessDesign()
    s = RestlessBanditEnv.sample_sessions(design, 2000, np.random.default_rng(3))
    assert s.rewards.shape == (2000, 80, 2) and np.all(s.block_lengths == [21, 20, 20, 19])
    trials = simulate("restless-bandit", "kalman", 5, seed=2)
    quirk = simulate("restless-bandit", "kalman", 5, seed=2, design=RestlessDesign.cogbench_accuracy())
    ends = trials["block_trial"] == trials.groupby(["subject", "block"])["block_trial"].transform("max")
    assert (trials.loc[ends, "accurate"] != quirk.loc[ends, "accurate"]).all()
    assert (trials.loc[~ends, "accurate"] == quirk.loc[~ends, "accurate"]).all()
    good = trials["mean0"].where(trials["best_arm"] == 0, trials["mean1"])
    assert (good == 60).all()


def test_restless_random_agent_matches_cogbench_random_file() -> None:
    exp = get_experiment("restless-bandit")
    sim = exp.metrics(simulate("restless-bandit", "random", 400, seed=0))["metrics"]
    real = exp.metrics(exp.importer("cogbench").load(DATA / "RestlessBandit" / "random.csv"))["metrics"]
    for key, tol in (("performance", 0.3), ("accuracy", 0.01), ("metacognition", 0.01)):
        assert sim[key] == pytest.approx(real[key], abs=tol), key


def test_kalman_confidence_noise_lowers_metacognition() -> None:
    exp = get_experiment("restless-bandit")
    values = [exp.metrics(simulate("restless-bandit", "kalman", 200, seed=1,
                                   params={"confidence_noise": s}))["metrics"]["metacognition"]
              for s in (0.0, 1.0, 3.0)]
    assert values[0] > values[1] > values[2]


# ----------------------------------------------------------------------------- importers
def test_importers_keep_cogbench_columns_and_schema() -> None:
    from cogtestbed.registry import validate_table

    for name, task in (("probabilistic-reasoning", "ProbabilisticReasoning"), ("horizon", "HorizonTask"),
                       ("restless-bandit", "RestlessBandit")):
        exp = get_experiment(name)
        table = exp.importer("cogbench").load(DATA / task / "gpt-4.csv") if (DATA / task / "gpt-4.csv").exists() \
            else exp.importer("cogbench").load(DATA / task / "claude-1.csv")
        validate_table(table)
        assert table["valid"].all()
    h = get_experiment("horizon").importer("cogbench").load(DATA / "HorizonTask" / "gpt-4.csv")
    assert set(h.groupby("subject").size()) == {5, 10}
    assert (h.groupby("subject")["horizon"].first().map({1: 5, 6: 10}) == h.groupby("subject").size()).all()


def test_importer_rejects_other_files(tmp_path: Path) -> None:
    from cogtestbed.data.cogbench import DataFormatError, import_horizon

    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(DataFormatError, match="missing column"):
        import_horizon(bad)
