"""Fast paths of the simulation kernels give the same bits as the plain formulas."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from cogtestbed.numerics import EXP_NEG_APPROX_ERROR, EXP_NEG_CLAMP, at_least_sigmoid, exp_neg_approx, sigmoid


@njit(cache=False)
def _decisions(u: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fast = np.empty(u.shape[0], dtype=np.int64)
    exact = np.empty(u.shape[0], dtype=np.int64)
    for k in range(u.shape[0]):
        fast[k] = at_least_sigmoid(u[k], x[k])
        exact[k] = 0 if u[k] < sigmoid(x[k]) else 1
    return fast, exact


def test_at_least_sigmoid_is_the_exact_comparison() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 200_000), rng.uniform(-800, 800, 20_000), [0.0, -0.0, 40.0, -40.0, 1e5]])
    u = rng.random(x.shape[0])
    p = np.array([sigmoid(v) for v in x[:5000]])
    # uniforms on, and one ulp either side of, the computed probability: the margin's fallback
    near = np.concatenate([p, np.nextafter(p, 0.0), np.nextafter(p, 1.0)])
    x = np.concatenate([x, np.tile(x[:5000], 3), [np.nan, np.nan]])
    u = np.concatenate([u, near, [0.3, 0.0]])
    u[:10] = [0.0, 1.0 - 2.0**-53, 0.5, 0.5, 0.25, 0.75, 0.0, 0.0, 1 - 2.0**-53, 1 - 2.0**-53]
    fast, exact = _decisions(u, x)
    assert np.array_equal(fast, exact)
    assert 0.3 < exact.mean() < 0.7


def test_exp_neg_approx_error_bound() -> None:
    ax = np.concatenate([np.linspace(0, EXP_NEG_CLAMP, 400_001), np.log(2.0) * (np.arange(58) + 0.5),
                         np.nextafter(np.log(2.0) * (np.arange(58) + 0.5), 0.0)])
    approx = np.array([exp_neg_approx(v) for v in ax])
    rel = np.abs(approx / np.exp(-ax) - 1.0)
    assert rel.max() <= EXP_NEG_APPROX_ERROR
    assert rel.max() > EXP_NEG_APPROX_ERROR / 10  # the bound is the polynomial's, not a loose one
    beyond = np.array([exp_neg_approx(v) for v in (EXP_NEG_CLAMP + 1, 1e3, np.inf)])
    assert np.all(beyond == exp_neg_approx(EXP_NEG_CLAMP)) and np.isnan(exp_neg_approx(np.nan))


def _block_index_reference(block_lengths: np.ndarray, t_max: int) -> tuple[np.ndarray, np.ndarray]:
    """The broadcast definition: the block is the number of block ends at or before the trial."""
    n = block_lengths.shape[0]
    ends = np.cumsum(block_lengths, axis=1)
    t = np.arange(t_max)
    block = (t[None, :, None] >= ends[:, None, :]).sum(axis=2)
    starts = np.concatenate([np.zeros((n, 1), dtype=np.int64), ends[:, :-1]], axis=1)
    within = t[None, :] - np.take_along_axis(starts, np.minimum(block, block_lengths.shape[1] - 1), axis=1)
    return block, within


def test_restless_block_index_matches_its_definition() -> None:
    from cogtestbed.environments.restless import block_index

    rng = np.random.default_rng(0)
    for n_blocks in (1, 2, 4, 7):
        lengths = rng.integers(0, 6, (40, n_blocks))
        lengths[::3] = rng.integers(1, 30, (len(lengths[::3]), n_blocks))
        for t_max in (1, 10, 80):
            for got, want in zip(block_index(lengths, t_max), _block_index_reference(lengths, t_max), strict=True):
                assert got.dtype == want.dtype and np.array_equal(got, want)


def test_two_step_drift_is_the_clipped_numpy_walk() -> None:
    from cogtestbed.environments.twostep import _drift

    rng = np.random.default_rng(1)
    probs = np.empty((30, 50, 4))
    probs[:, 0] = rng.uniform(0.25, 0.75, (30, 4))
    state = rng.bit_generator.state
    steps = rng.normal(0.0, 0.05, (30, 49, 4))
    rng.bit_generator.state = state
    z = rng.standard_normal((30, 49, 4))  # the same draws: numpy's normal(0, sd) is sd · z
    want = probs.copy()
    for k in range(1, 50):
        want[:, k] = np.clip(want[:, k - 1] + steps[:, k - 1], 0.25, 0.75)
    _drift(probs, z, 0.05, 0.25, 0.75)
    assert probs.tobytes() == want.tobytes()


def _rwpm_trial_loop(casino: np.ndarray, draws: np.ndarray, alpha_pos: np.ndarray, alpha_neg: np.ndarray,
                     beta: np.ndarray, u: np.ndarray, n_casinos: int, kind: np.ndarray,
                     lapse_u: np.ndarray, pin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The RW± agent trial by trial, as its step path plays it (choice by prob_arm0, lapse, update).

    ``pin`` (n, T): where 1, 2 or 3, the trial's uniform is first set (in ``u``) to the choice
    probability itself, the float below it or the float above it: the closest calls there are."""
    from cogtestbed.inference.instrumental import V0, prob_arm0, rw_learning_rate
    from cogtestbed.lapse import lapsed_choice

    n, t_max = casino.shape
    actions = np.empty((n, t_max), dtype=np.int64)
    rewards = np.empty((n, t_max))
    valid = np.ones((n, t_max), dtype=bool)
    for i in range(n):
        values = np.full((n_casinos, 2), V0)
        for t in range(t_max):
            c = casino[i, t]
            p = prob_arm0(beta[i], values[c, 0], values[c, 1])
            if pin is not None and pin[i, t]:
                u[i, t] = (p, np.nextafter(p, 0.0), np.nextafter(p, 1.0))[pin[i, t] - 1]
            a = 0 if u[i, t] < p else 1
            if kind.shape[0]:
                a = lapsed_choice(int(kind[i, t]), lapse_u[i, t], a, 2)
            if a < 0:
                actions[i, t], rewards[i, t], valid[i, t] = -1, np.nan, False
                continue
            delta = draws[i, t, a] - values[c, a]
            values[c, a] += rw_learning_rate(alpha_pos[i], alpha_neg[i], delta) * delta
            actions[i, t], rewards[i, t] = a, draws[i, t, a]
    return actions, rewards, valid


def test_rwpm_kernel_is_the_trial_loop() -> None:
    """Vector lanes, the cheap choice and its exact replay give the step path's bits: unequal visit
    counts, 1–64 casinos (more: an error), lapses, β = 0 with u on and next to ½, and uniforms on and
    one float either side of the choice probability (the replayed close calls)."""
    from cogtestbed.inference.instrumental import SIM_LANES, simulate_rwpm_kernel

    rng = np.random.default_rng(3)
    for n, t_max, n_casinos, lapses in [(150, 60, 4, False), (41, 33, 3, True), (7, 90, 1, True), (30, 50, 13, False),
                                        (2, 20, SIM_LANES, True), (0, 10, 4, False), (5, 0, 4, True)]:
        casino = rng.integers(0, n_casinos, (n, t_max))
        draws = np.where(rng.random((n, t_max, 2)) < 0.3, rng.random((n, t_max, 2)), rng.random((n, t_max, 2)) < 0.5)
        alpha_pos, alpha_neg = rng.random(n), rng.random(n)
        beta = rng.exponential(20.0, n) * (rng.random(n) < 0.8) * np.where(rng.random(n) < 0.1, 1e3, 1.0)
        u = rng.random((n, t_max))
        tie = (beta == 0.0)[:, None] & (rng.random((n, t_max)) < 0.5)
        u[tie] = np.where(rng.random(int(tie.sum())) < 0.5, 0.5, np.nextafter(0.5, 0.0))
        kind = rng.choice(np.array([0, 1, 2], dtype=np.int8), (n if lapses else 0, t_max), p=[0.7, 0.15, 0.15])
        lapse_u = rng.random((kind.shape[0], t_max))
        args = (casino, draws, alpha_pos, alpha_neg, beta, u, n_casinos, kind, lapse_u)
        pin = rng.choice(np.array([0, 1, 2, 3], dtype=np.int8), (n, t_max), p=[0.85, 0.05, 0.05, 0.05])
        want = _rwpm_trial_loop(*args, pin=pin)  # pins u first
        for got, expected in zip(simulate_rwpm_kernel(*args), want, strict=True):
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    ones, no_lapse = np.ones(1), (np.zeros((0, 3), dtype=np.int8), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="casinos"):
        simulate_rwpm_kernel(np.zeros((1, 3), dtype=np.int64), np.zeros((1, 3, 2)), ones, ones, ones,
                             np.zeros((1, 3)), SIM_LANES + 1, *no_lapse)
    with pytest.raises(ValueError, match="casino index"):
        simulate_rwpm_kernel(np.full((1, 3), 4, dtype=np.int64), np.zeros((1, 3, 2)), ones, ones, ones,
                             np.zeros((1, 3)), 4, *no_lapse)
