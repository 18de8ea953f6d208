"""Every registered experiment keeps the same contracts, checked generically."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

from cogtestbed.registry import experiment_names, get_experiment
from cogtestbed.simulation import simulate
from cogtestbed.trials import validate_trials

EXPERIMENTS = experiment_names()
AGENT_CASES = [(e, a) for e in EXPERIMENTS for a in sorted(get_experiment(e).agents)]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_environment_passes_gymnasium_checker_and_is_deterministic(name):
    env_cls = get_experiment(name).env_cls
    check_env(env_cls(), skip_render_check=True)
    first, _ = env_cls().reset(seed=7)
    again, _ = env_cls().reset(seed=7)
    assert first["prompt"] and first["prompt"] == again["prompt"]
    if isinstance(first["prompt"], str):
        assert first["prompt"].endswith(env_cls.answer_prefix)
    else:  # chat messages (optionally with images): the last turn is the subject's question
        assert all(m["role"] in ("system", "user", "assistant") for m in first["prompt"])
        assert first["prompt"][-1]["role"] == "user"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_parser_rejects_empty_and_garbage_with_a_reason(name):
    env = get_experiment(name).env_cls()
    env.reset(seed=0)
    for text in ("", "   ", "%%% no answer here %%%"):
        result = env.parse(text)
        assert not result.ok and result.action is None
        assert isinstance(result.error, str) and result.error


@pytest.mark.parametrize(("name", "agent"), AGENT_CASES)
def test_batch_path_equals_step_path_for_every_agent(name, agent):
    batch = simulate(name, agent, 3, seed=11)
    step = simulate(name, agent, 3, seed=11, method="step")
    pd.testing.assert_frame_equal(batch, step)
    validate_trials(batch)
    assert batch["experiment"].astype(str).eq(name).all()
    assert batch["subject"].nunique() == 3


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_agents_validate_parameters(name):
    from cogtestbed.parameters import ParameterError

    for agent_cls in get_experiment(name).agents.values():
        for p in agent_cls.parameters:
            bad = p.upper + 1.0 if np.isfinite(p.upper) else p.lower - 1.0
            with pytest.raises(ParameterError, match=p.name):
                agent_cls({p.name: bad})
