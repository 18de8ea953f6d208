"""Session draws give the very values (and generator states) of plain numpy calls, one array at a
time, so seeded sessions are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from cogtestbed.environments.probabilistic import ProbabilisticDesign, ProbabilisticReasoningEnv
from cogtestbed.environments.twostep import TwoStepDesign, TwoStepEnv


def _plain_two_step(design: TwoStepDesign, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Two-step sessions drawn with plain numpy (the drift as ``np.clip`` of each trial's step)."""
    probs = np.empty((n, design.n_trials, 4))
    probs[:, 0] = rng.uniform(design.prob_low, design.prob_high, (n, 4))
    steps = rng.normal(0.0, design.drift_sd, (n, design.n_trials - 1, 4))
    for k in range(1, design.n_trials):
        probs[:, k] = np.clip(probs[:, k - 1] + steps[:, k - 1], design.prob_low, design.prob_high)
    return probs, rng.random((n, design.n_trials)), rng.random((n, design.n_trials))


def _plain_urns(design: ProbabilisticDesign, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Probabilistic-reasoning sessions drawn with plain numpy, one array at a time."""
    inf, uninf = np.asarray(design.informative_probs), np.asarray(design.uninformative_probs)
    left_is_f = (rng.random((n, 2)) < 0.5) | (not design.randomise_labels)
    informative = inf[rng.integers(0, len(inf), size=(n, 2))]
    flat = uninf[rng.integers(0, len(uninf), size=(n, 2))]
    lh = np.column_stack([informative[:, 0], flat[:, 1]])
    prior = np.column_stack([flat[:, 0], informative[:, 1]])
    urn_left = rng.random((n, 2)) < prior
    red = rng.random((n, 2)) < np.where(urn_left, lh, 1.0 - lh)
    return left_is_f, prior, lh, urn_left, red


@pytest.mark.parametrize("n", [1, 3, 60_000])
def test_session_draws_equal_the_plain_numpy_draws(n: int) -> None:
    for design in (TwoStepDesign(), TwoStepDesign(n_days=3, drift_sd=0.3)):
        rng = np.random.default_rng(n)
        s = TwoStepEnv.sample_sessions(design, n, rng)
        expected = _plain_two_step(design, n, np.random.default_rng(n))
        assert all(a.tobytes() == b.tobytes() for a, b in zip((s.probs, s.transition_u, s.reward_u), expected,
                                                               strict=True))
    for urns in (ProbabilisticDesign(), ProbabilisticDesign.paper(), ProbabilisticDesign(randomise_labels=False)):
        u = ProbabilisticReasoningEnv.sample_sessions(urns, n, np.random.default_rng(n))
        got = (u.left_is_f, u.prior, u.lh, u.urn_left, u.red)
        assert all(a.dtype == b.dtype and a.tobytes() == b.tobytes()
                   for a, b in zip(got, _plain_urns(urns, n, np.random.default_rng(n)), strict=True))
