"""Vectorised session draws (cogtestbed.environments.draws): exact distributions, determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare, norm

from cogtestbed.environments.draws import RoundedNormal, permute_rows


def test_permute_rows_gives_uniform_permutations_of_each_row() -> None:
    rng = np.random.default_rng(1)
    values = np.tile(np.array([10, 20, 30]), (60_000, 1))
    out = permute_rows(values, rng)
    assert out.shape == values.shape
    assert (np.sort(out, axis=1) == values).all()
    codes = {p: i for i, p in enumerate(itertools.permutations((10, 20, 30)))}
    counts = np.bincount([codes[tuple(r)] for r in out.tolist()], minlength=6)
    assert chisquare(counts).pvalue > 1e-3
    assert (values == np.array([10, 20, 30])).all()  # the input is not shuffled in place


def test_permute_rows_draws_without_replacement_and_is_seeded() -> None:
    base = np.broadcast_to(np.arange(21), (5_000, 21))
    a = permute_rows(base, np.random.default_rng(7), 8)
    b = permute_rows(base, np.random.default_rng(7), 8)
    assert a.shape == (5_000, 8)
    assert (a == b).all()
    assert all(len(set(r)) == 8 for r in a.tolist())
    # every letter is equally likely in every position
    counts = np.bincount(a[:, 3], minlength=21)
    assert chisquare(counts).pvalue > 1e-3
    with pytest.raises(ValueError, match="cannot take 22 of 21"):
        permute_rows(base, np.random.default_rng(0), 22)


def test_rounded_normal_matches_rounded_gaussian_probabilities() -> None:
    sampler = RoundedNormal(8.0)
    x = sampler.draw((1_000_000,), np.random.default_rng(5))
    assert (x == np.rint(x)).all()
    k = np.arange(-30, 31)
    expected = norm.cdf((k + 0.5) / 8.0) - norm.cdf((k - 0.5) / 8.0)
    observed = np.array([(x == v).mean() for v in k])
    assert np.abs(observed - expected).max() < 5 * np.sqrt(expected.max() / len(x))
    assert abs(x.mean()) < 0.05 and abs(x.std() - np.sqrt(64 + 1 / 12)) < 0.05


def test_rounded_normal_adds_broadcast_means() -> None:
    means = np.array([[[40.0, 60.0]], [[10.0, 20.0]]])
    x = RoundedNormal(2.0).draw((2, 5000, 2), np.random.default_rng(6), means)
    assert np.allclose(x.mean(axis=1), means[:, 0, :], atol=0.1)
    with pytest.raises(ValueError, match="sd must be a positive number"):
        RoundedNormal(0.0)


def test_rounded_normal_is_the_alias_pick_of_rng_random() -> None:
    """Each draw is the alias method's pick of one ``rng.random`` uniform (plus the mean), and the
    generator is left where ``rng.random`` of that shape leaves it."""
    sampler = RoundedNormal(3.0)
    mean = np.array([[[4.0, -7.0]]])
    fast, slow = np.random.default_rng(8), np.random.default_rng(8)
    got = sampler.draw((5, 3, 2), fast, mean)
    u = slow.random((5, 3, 2))
    k = len(sampler.prob)
    for idx in np.ndindex(u.shape):
        col = int(u[idx] * k)
        pick = col if u[idx] * k - col < sampler.prob[col] else int(sampler.alias[col])
        assert got[idx] == sampler.offsets[pick] + mean[0, 0, idx[2]]
    assert fast.bit_generator.state == slow.bit_generator.state


@pytest.mark.parametrize(("n", "m", "k"), [(41, 4, None), (30, 7, 3), (5, 4, None), (13, 2, 1), (4, 1, None)])
def test_permute_rows_is_the_forward_fisher_yates_of_rng_random(n: int, m: int, k: int | None) -> None:
    """Row r's swap i exchanges positions i and i + ⌊u[r, i]·(m − i)⌋ for ``u = rng.random((n, swaps))``,
    and the generator is left where that call leaves it; in place, the caller's array is shuffled."""
    values = np.tile(np.arange(m, dtype=np.int64), (n, 1)) * 10 + np.arange(n)[:, None]
    fast, slow = np.random.default_rng(n), np.random.default_rng(n)
    got = permute_rows(values, fast, k)
    swaps = min(m if k is None else k, m - 1)
    expected = values.tolist()
    if swaps > 0:
        u = slow.random((n, swaps))
        for r, row in enumerate(expected):
            for i in range(swaps):
                j = i + int(u[r, i] * (m - i))
                row[i], row[j] = row[j], row[i]
    assert got.tolist() == [row[: (m if k is None else k)] for row in expected]
    assert fast.bit_generator.state == slow.bit_generator.state
    mine = values.copy()
    shuffled = permute_rows(mine, np.random.default_rng(n), k, in_place=True)
    assert np.shares_memory(shuffled, mine) and np.array_equal(shuffled, got)


def test_permute_rows_in_place_needs_a_writable_array() -> None:
    values = np.arange(12, dtype=np.int64).reshape(3, 4)
    with pytest.raises(ValueError, match="writable"):
        permute_rows(np.broadcast_to(values[0], (3, 4)), np.random.default_rng(0), in_place=True)
