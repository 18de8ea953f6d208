"""The phase contract of :class:`TextEnv`: per-phase spaces, parsers and response kinds, one
``step`` for every experiment, and what ``info`` means."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from toy_env import JUDGEMENTS, ElicitJudgeEnv, ToySessions

from cogtestbed.environments.base import (
    NO_ACTION,
    ParseResult,
    ScoredAnswer,
    ScoredResponse,
    TextResponse,
)
from cogtestbed.environments.probabilistic import ProbabilisticReasoningEnv
from cogtestbed.environments.restless import RestlessBanditEnv
from cogtestbed.environments.twostep import TwoStepEnv


def toy_session() -> ToySessions:
    return ToySessions(statement=np.array([[0, 2]]))


def test_two_phase_trials_alternate_and_name_their_phase():
    env = RestlessBanditEnv()
    obs, _ = env.reset(seed=0)
    assert [p.name for p in env.phases] == ["choice", "confidence"]
    assert env.phase.name == "choice" and obs["response"] == TextResponse()
    obs, *_ = env.step(1)
    assert obs["phase"] == 1 and env.phase.name == "confidence" and obs["choice"] == 1
    assert env.parse("0.35").action == pytest.approx(0.35)
    env.step({"choice": 0, "confidence": 0.4})  # the Dict action space: the phase's entry is used
    assert env.outcomes.action[0, :2].tolist() == [1.0, 0.4]
    with pytest.raises(ValueError, match=r"phase 'confidence'.*\[0, 1\]"):
        env.step(1)  # choice phase: fine
        env.step(1.5)


def test_info_is_the_step_just_played():
    env = ProbabilisticReasoningEnv()
    _, first = env.reset(seed=4)
    _, _, _, _, played = env.step(0.5)
    assert played["posterior"] == first["posterior"] and played["trial"] == 0
    env2 = TwoStepEnv()
    env2.reset(seed=1)
    _, _, _, _, info = env2.step(0)
    assert info["trial"] == 0 and "common" not in info  # the spaceship step
    _, _, _, _, info = env2.step(1)
    assert info["trial"] == 0 and isinstance(info["common"], bool)  # the alien step of trial 0


def test_invalid_gating_phase_skips_the_rest_of_the_trial():
    env = ElicitJudgeEnv()
    env.reset(options={"session": toy_session()})
    obs, *_ = env.step(NO_ACTION)
    assert env.t == 2 and obs["phase"] == 0 and obs["trial"] == 1
    assert env.outcomes.played[0].tolist() == [True, False, False, False]


def test_scored_phase_records_the_distribution():
    env = ElicitJudgeEnv()
    check_env(ElicitJudgeEnv(), skip_render_check=True)
    obs, _ = env.reset(options={"session": toy_session()})
    assert obs["prompt"].endswith("A: 0.")
    obs, *_ = env.step(0.7)
    assert obs["phase"] == 1 and obs["response"] == ScoredResponse(JUDGEMENTS, n_samples=40)
    exact = ScoredAnswer(np.log([0.2, 0.5, 0.1]))
    env.step(exact)
    assert env.outcomes.action[0, 1] == 1 and env.outcomes.scored[0, 1] is exact
    env.step(0.1)
    with pytest.raises(ValueError, match="3 continuations"):
        env.step(ScoredAnswer(np.log([0.5, 0.5])))
    with pytest.raises(ValueError, match="phase 'judge'"):
        env.step(5)  # a bare choice must be one of the continuations
    env.step(ScoredAnswer.from_counts(np.array([0, 10, 30])))
    table = ElicitJudgeEnv.trials_table(env.design, toy_session(), env.outcomes)
    np.testing.assert_allclose(table[["judge_p0", "judge_p1", "judge_p2"]].to_numpy(),
                               [[0.25, 0.625, 0.125], [0.0, 0.25, 0.75]])
    assert table["judge_method"].tolist() == ["exact", "sampled"]
    assert np.isnan(table["judge_n"][0]) and table["judge_n"][1] == 40
    assert table["action"].tolist() == pytest.approx([0.7, 0.1])


def test_phase_declaration_errors():
    env = ElicitJudgeEnv()
    with pytest.raises(ValueError, match="at least one phase"):
        env.declare_phases()
    p = env.phases[0]
    with pytest.raises(ValueError, match="distinct"):
        env.declare_phases(p, p)
    assert env.parse("x") == ParseResult.failure(env.parse("x").error)  # type: ignore[arg-type]


def test_play_step_records_what_step_records_and_renders_nothing(monkeypatch):
    """``play_step`` (the simulator's lapses after the fact, issue 54) leaves the record, ``t``,
    reward, termination and info that ``step`` leaves, without building an observation; ``step`` is
    ``play_step`` plus the next observation.  A scored answer, a gating invalid answer (which skips
    the trial's judge phase) and the end of the episode are all played."""
    actions = [0.7, ScoredAnswer(np.log([0.2, 0.5, 0.1])), NO_ACTION]
    stepped, played = ElicitJudgeEnv(), ElicitJudgeEnv()
    stepped.reset(options={"session": toy_session()})
    played.reset(options={"session": toy_session()})

    def no_observation() -> None:
        raise AssertionError("play_step built an observation")

    monkeypatch.setattr(played, "_phase_observation", no_observation)
    for action in actions:
        obs, reward, terminated, truncated, info = stepped.step(action)
        assert played.play_step(action) == (reward, terminated, info) and not truncated
        assert played.t == stepped.t
    assert terminated and stepped.t == 4
    for name in ("action", "reward", "valid", "played", "scored"):
        np.testing.assert_array_equal(getattr(played.outcomes, name), getattr(stepped.outcomes, name))
    assert played.outcomes.played[0].tolist() == [True, True, True, False]
    with pytest.raises(RuntimeError, match="episode is over"):
        played.play_step(0.5)
    monkeypatch.undo()
    assert played._phase_observation()["prompt"] == obs["prompt"]


def test_no_experiment_overrides_step():
    """The simulator's lapses after the fact play steps with ``play_step`` alone (issue 54), so what
    a step does must live in the hooks both call, not in an override of ``step``."""
    from cogtestbed.environments.base import TextEnv
    from cogtestbed.registry import experiment_names, get_experiment

    for name in experiment_names():
        env_cls = get_experiment(name).env_cls
        assert env_cls.step is TextEnv.step and env_cls.play_step is TextEnv.play_step, name
