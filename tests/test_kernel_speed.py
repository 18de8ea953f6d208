"""Fast paths of the simulation kernels give the same bits as the plain formulas."""

from __future__ import annotations

import numpy as np
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


def test_heap_setting_is_idempotent() -> None:
    from cogtestbed.heap import keep_freed_memory

    assert keep_freed_memory() == keep_freed_memory()


def test_two_step_drift_is_the_clipped_numpy_walk() -> None:
    from cogtestbed.environments.twostep import _drift

    rng = np.random.default_rng(1)
    probs = np.empty((30, 50, 4))
    probs[:, 0] = rng.uniform(0.25, 0.75, (30, 4))
    steps = rng.normal(0.0, 0.05, (30, 49, 4))
    want = probs.copy()
    for k in range(1, 50):
        want[:, k] = np.clip(want[:, k - 1] + steps[:, k - 1], 0.25, 0.75)
    _drift(probs, steps, 0.25, 0.75)
    assert probs.tobytes() == want.tobytes()
