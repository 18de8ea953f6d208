"""The restless bandit's compiled sessions and table pass against the whole-array numpy definitions they
replace: the same numbers, the same generator state, the same table (Ershadmanesh et al. 2023; CogBench)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from cogtestbed.environments.base import NO_ACTION
from cogtestbed.environments.restless import (
    EXPERIMENT,
    RestlessBanditEnv,
    RestlessDesign,
    RestlessSessions,
    best_arms,
    block_index,
    draw_blocks,
)
from cogtestbed.lapse import Lapse
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import seed_streams, simulate
from cogtestbed.trials import finish_table

DESIGNS = {"code": RestlessDesign(), "paper": RestlessDesign.paper(),
           "cogbench accuracy, paper blocks": RestlessDesign.paper(accuracy_rule="cogbench"),
           "whole dollars": RestlessDesign(reward_decimals=0), "three decimals, sd 13.7": RestlessDesign(
               reward_decimals=3, reward_sd=13.7)}


def numpy_sessions(design: RestlessDesign, n: int, rng: np.random.Generator) -> RestlessSessions:
    """The sessions as numpy's own whole-array calls draw them (the definition)."""
    t_max = design.n_trials
    first_best, lengths = draw_blocks(design, n, rng)  # unchanged draws, shared
    block, within = block_index(lengths, t_max)
    best = best_arms(first_best, block, within, lengths, "correct")
    lo_mean, hi_mean = sorted(design.means)
    means = np.where(np.arange(2)[None, None, :] == best[:, :, None], hi_mean, lo_mean)
    rewards = np.round(means + design.reward_sd * rng.standard_normal((n, t_max, 2)), design.reward_decimals)
    return RestlessSessions(first_best=first_best, block_lengths=lengths, rewards=rewards,
                            instr_flip=rng.random((n, t_max)) < 0.5, query_flip=rng.random((n, t_max)) < 0.5)


def numpy_table(design: RestlessDesign, sessions: RestlessSessions, outcomes: object, agent: str,
                params: dict[str, np.ndarray]) -> pd.DataFrame:
    """The table built with whole (n, T) arrays and a keep mask (the definition)."""
    o = outcomes
    n, t_max = sessions.n_subjects, design.n_trials
    valid = o.valid[:, 0::2]  # type: ignore[attr-defined]
    choice = np.where(valid, np.nan_to_num(o.action[:, 0::2]), NO_ACTION).astype(np.int64)  # type: ignore[attr-defined]
    conf_valid = o.valid[:, 1::2] & valid  # type: ignore[attr-defined]
    confidence = np.where(conf_valid, np.asarray(o.action[:, 1::2], dtype=np.float64), np.nan)  # type: ignore[attr-defined]
    block, within = block_index(sessions.block_lengths, t_max)
    best = best_arms(sessions.first_best, block, within, sessions.block_lengths, design.accuracy_rule)
    true_best = best_arms(sessions.first_best, block, within, sessions.block_lengths, "correct")
    lo_mean, hi_mean = sorted(design.means)
    means = np.where(np.arange(2)[None, None, :] == true_best[:, :, None], hi_mean, lo_mean)
    rows = np.arange(n)[:, None]
    reward = np.where(valid, sessions.rewards[rows, np.arange(t_max)[None, :], np.clip(choice, 0, 1)], np.nan)
    stimulus = {"block": block, "block_trial": within, "best_arm": best, "mean0": means[..., 0],
                "mean1": means[..., 1], "reward0": sessions.rewards[..., 0], "reward1": sessions.rewards[..., 1],
                "confidence": confidence, "confidence_valid": conf_valid,
                "accurate": np.where(valid, (choice == best).astype(np.float64), np.nan),
                "raw_confidence": None, "confidence_parse_error": None}
    exists = np.arange(t_max)[None, :] < sessions.block_lengths.sum(axis=1)[:, None]
    return finish_table(EXPERIMENT, {**stimulus, "action": choice, "reward": reward, "valid": valid},
                        agent=agent, params=params, keep=exists)


def same_sessions(a: RestlessSessions, b: RestlessSessions) -> None:
    for name in ("first_best", "block_lengths", "rewards", "instr_flip", "query_flip"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize("label", list(DESIGNS))
def test_sessions_equal_numpy_draws_and_leave_the_same_state(label: str) -> None:
    design = DESIGNS[label]
    for n in (1, 37):
        new, old = seed_streams(n)[0], seed_streams(n)[0]
        same_sessions(RestlessBanditEnv.sample_sessions(design, n, new), numpy_sessions(design, n, old))
        assert new.bit_generator.state == old.bit_generator.state


@pytest.mark.parametrize("label", list(DESIGNS)[:3])
@pytest.mark.parametrize("lapse", [None, Lapse(invalid=0.2, random=0.1)])
def test_compiled_table_equals_the_whole_array_table(label: str, lapse: Lapse | None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent, with invalid choices and confidences: the one-pass rows build the very table the
    rectangular arrays and a keep mask build (the paper design's sessions end at different trials)."""
    design = DESIGNS[label]
    spec = get_experiment("restless-bandit")
    built = RestlessBanditEnv.trials_table
    seen: list[tuple[RestlessSessions, object, dict[str, np.ndarray]]] = []

    def capture(design: RestlessDesign, sessions: RestlessSessions, outcomes: object, **kw: object) -> pd.DataFrame:
        seen.append((sessions, outcomes, kw["params"]))  # type: ignore[arg-type]
        return built(design, sessions, outcomes, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(RestlessBanditEnv, "trials_table", capture)
    for agent in sorted(spec.agents):
        table = simulate(spec, agent, 23, 4, design=design, lapse=lapse)
        sessions, outcomes, params = seen.pop()
        assert len(table) == int(sessions.block_lengths.sum())
        assert (table["valid"].to_numpy() == table["action"].notna().to_numpy()).all()
        assert lapse is None or (~table["valid"]).sum() > 0
        pd.testing.assert_frame_equal(table, numpy_table(design, sessions, outcomes, agent, params), check_exact=True)
    # a valid choice whose confidence did not parse (an LLM's answer; lapses cover whole trials)
    broken = copy.deepcopy(outcomes)
    broken.valid[:, 1::2] &= np.random.default_rng(1).random(broken.valid[:, 1::2].shape) < 0.7  # type: ignore[attr-defined]
    table = built(design, sessions, broken, agent="x", params=params)  # type: ignore[arg-type]
    assert (~table["confidence_valid"] & table["valid"]).sum() > 0
    assert table.loc[~table["confidence_valid"], "confidence"].isna().all()
    pd.testing.assert_frame_equal(table, numpy_table(design, sessions, broken, "x", params), check_exact=True)
