"""Lapses (invalid and random answers) of synthetic agents: rates, seeding, batch == step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cogtestbed.conformance.harness import table_bytes
from cogtestbed.lapse import INVALID, NORMAL, RANDOM, Lapse, draw_lapses, lapse_rng, random_choice
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

RWPM = {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 50.0}


@pytest.mark.parametrize("bad", [(-0.1, 0.0), (0.0, 1.5), (0.6, 0.5), ("x", 0.0)])
def test_lapse_rates_are_validated(bad: tuple) -> None:
    with pytest.raises(ValueError, match="lapse rate"):
        Lapse(*bad)


def test_lapse_stream_is_the_third_child_of_the_seed() -> None:
    child = np.random.SeedSequence(7).spawn(3)[2]
    assert np.array_equal(lapse_rng(7).random(5), np.random.default_rng(child).random(5))


def test_zero_lapse_reproduces_the_lapse_free_table() -> None:
    for exp, agent in (("instrumental-learning", "rw-pm"), ("two-step", "hybrid"), ("horizon", "info-bonus")):
        plain = simulate(exp, agent, 4, 3)
        pd.testing.assert_frame_equal(simulate(exp, agent, 4, 3, lapse=Lapse()), plain)


def test_lapse_does_not_shift_the_agents_own_draws() -> None:
    """Steps that do not lapse keep the lapse-free answer (an agent that does not learn)."""
    plain = simulate("temporal-discounting", "hyperbolic", 30, 2)
    lapsed = simulate("temporal-discounting", "hyperbolic", 30, 2, lapse=Lapse(0.0, 0.3))
    spec = get_experiment("temporal-discounting")
    steps = spec.env_cls.max_steps(spec.env_cls.design_cls())
    kind = draw_lapses(Lapse(0.0, 0.3), lapse_rng(2), 30, steps).kind
    # the first question of every session is the same for both; later ones adapt to the answers
    first = plain.groupby("subject").head(1).action.to_numpy()
    first_lapsed = lapsed.groupby("subject").head(1).action.to_numpy()
    keep = kind[:, 0] == NORMAL
    assert keep.sum() > 10
    assert np.array_equal(first[keep], first_lapsed[keep])


def test_lapse_rates_and_answers_follow_the_draws() -> None:
    """Instrumental learning (one step per trial): invalid steps are invalid, random steps answer
    ⌊2u⌋, and the observed rates are within binomial error of the requested ones."""
    lapse, n, seed = Lapse(0.08, 0.05), 400, 11
    table = simulate("instrumental-learning", "rw-pm", n, seed, {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 50.0},
                     lapse=lapse)
    steps = int(len(table) / n)
    draws = draw_lapses(lapse, lapse_rng(seed), n, steps)
    kind = draws.kind.reshape(-1)
    valid = table["valid"].to_numpy()
    action = table["action"].to_numpy()
    assert np.array_equal(~valid, kind == INVALID)
    rand = kind == RANDOM
    expected = np.array([random_choice(u, 2) for u in draws.u[..., 0].reshape(-1)[rand]])
    assert np.array_equal(action[rand], expected)
    for rate, hit in ((lapse.invalid, kind == INVALID), (lapse.random, rand)):
        se = np.sqrt(rate * (1 - rate) / hit.size)
        assert abs(hit.mean() - rate) < 4 * se
    assert np.all(np.isnan(table["reward"].to_numpy()[~valid]))


def test_random_lapses_are_uniform_over_the_options() -> None:
    """With every answer random, a β = 50 learner chooses each arm half the time."""
    table = simulate("instrumental-learning", "rw-pm", 200, 4, {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 50.0},
                     lapse=Lapse(0.0, 1.0))
    share = float((table["action"] == 0).mean())
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / len(table))


def test_instrumental_kernel_plays_lapses_natively() -> None:
    """The RW± batch kernel takes the lapse draws itself (no step-path fallback)."""
    spec = get_experiment("instrumental-learning")
    agent = spec.agent("rw-pm")
    design = spec.design_cls()
    sessions = spec.env_cls.sample_sessions(design, 2, np.random.default_rng(0))
    draws = draw_lapses(Lapse(0.2, 0.2), np.random.default_rng(1), 2, design.n_trials)
    out = agent.simulate_batch_lapsed(design, sessions, {k: np.full(2, v) for k, v in RWPM.items()},
                                      np.random.default_rng(2).random((2, design.n_trials)), draws)
    assert out is not None
    assert np.array_equal(~out.valid, draws.kind == INVALID)


def test_lapses_after_the_fact_render_no_observation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Magnitude (answer-independent, no lapse kernel): the batch path plays each lapsed step without
    rendering the next prompt (PNG stimuli, issue 54), so the only observations built are one per
    lapsed subject's reset, and its table is the step path's, byte for byte."""
    spec = get_experiment("magnitude")
    design = spec.design_cls(trials_per_session=1)
    lapse, n, seed = Lapse(0.1, 0.1), 3, 4
    step = simulate(spec, "static-bayes", n, seed, design=design, lapse=lapse, method="step")
    kind = draw_lapses(lapse, lapse_rng(seed), n, spec.env_cls.max_steps(design)).kind
    built = []
    original = spec.env_cls._phase_observation

    def counted(env: object) -> dict:
        built.append(1)
        return original(env)  # type: ignore[arg-type]

    monkeypatch.setattr(spec.env_cls, "_phase_observation", counted)
    batch = simulate(spec, "static-bayes", n, seed, design=design, lapse=lapse)
    assert (kind != NORMAL).sum() > 10 * n  # many lapsed steps: the old path built one observation each
    assert len(built) == int((kind != NORMAL).any(axis=1).sum())
    assert table_bytes(batch) == table_bytes(step)
    assert np.array_equal(~batch["valid"].to_numpy(), kind.reshape(-1) == INVALID)


def test_lapses_after_the_fact_ask_an_environment_s_own_lapse_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer-independent environment whose lapse unit is not the step (here: pairs of steps) is
    asked the unit of every played step; the table is the step path's, and a step is invalid exactly
    where its pair's decision is."""
    spec = get_experiment("magnitude")
    design = spec.design_cls(trials_per_session=1)
    monkeypatch.setattr(spec.env_cls, "lapse_unit", lambda env: env.t // 2)
    lapse, n, seed = Lapse(0.1, 0.1), 2, 6
    batch = simulate(spec, "linear", n, seed, design=design, lapse=lapse)
    step = simulate(spec, "linear", n, seed, design=design, lapse=lapse, method="step")
    assert table_bytes(batch) == table_bytes(step)
    steps = spec.env_cls.max_steps(design)
    kind = draw_lapses(lapse, lapse_rng(seed), n, steps).kind[:, np.arange(steps) // 2]
    assert np.array_equal(~batch["valid"].to_numpy(), kind.reshape(-1) == INVALID)
