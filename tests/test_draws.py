"""Vectorised session draws (cogtestbed.environments.draws): exact distributions, determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare, norm

from cogtestbed.environments.draws import (
    RoundedNormal,
    argsort_uniform_rows,
    bernoulli,
    integers,
    permute_rows,
    uniforms,
)


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


def test_argsort_uniform_rows_equals_numpy_argsort() -> None:
    keys = np.random.default_rng(3).random((2_000, 96))
    assert (argsort_uniform_rows(keys) == keys.argsort(axis=1)).all()
    small = np.random.default_rng(4).random((500, 3))
    assert (argsort_uniform_rows(small) == small.argsort(axis=1)).all()
    with pytest.raises(ValueError, match="keys in"):
        argsort_uniform_rows(np.array([[0.5, 1.0]]))


def test_bernoulli() -> None:
    p = np.tile(np.array([0.25, 0.75]), (100_000, 1))
    draws = bernoulli(p, np.random.default_rng(4))
    assert draws.dtype == np.float64 and set(np.unique(draws)) == {0.0, 1.0}
    assert np.allclose(draws.mean(axis=0), [0.25, 0.75], atol=0.01)


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


class _OtherPCG64(np.random.PCG64):
    """A PCG64 subclass: not numpy's own, so draws take the numpy path (``rng.random``)."""


@pytest.mark.parametrize(("shape", "mean_shape"), [((53, 10, 2), (53, 1, 2)), ((3, 10, 2), (3, 1, 2)), ((7,), ()),
                                                   ((4, 5), (4, 1)), ((1, 1, 1), ()), ((0, 3), ()),
                                                   ((5, 3, 2), (5, 3, 1)), ((6, 4, 3), (1, 4, 3))])
def test_rounded_normal_from_pcg64_in_compiled_code_equals_the_numpy_path(shape: tuple[int, ...],
                                                                            mean_shape: tuple[int, ...]) -> None:
    """The compiled PCG64 path gives the draws of ``rng.random`` + the alias pass and leaves the
    generator (32-bit buffer included) where ``rng.random`` leaves it."""
    mean = np.random.default_rng(1).integers(-50, 50, size=mean_shape).astype(np.float64)
    fast = np.random.default_rng(5)
    slow = np.random.Generator(_OtherPCG64())
    slow.bit_generator.state = {**fast.bit_generator.state, "bit_generator": "_OtherPCG64"}
    for rng in (fast, slow):
        rng.integers(0, 3, size=3)  # leaves half a 64-bit output buffered
    sampler = RoundedNormal(8.0)
    a, b = sampler.draw(shape, fast, mean), sampler.draw(shape, slow, mean)
    assert a.shape == b.shape == shape and np.array_equal(a, b)
    for key in ("state", "has_uint32", "uinteger"):
        assert fast.bit_generator.state[key] == slow.bit_generator.state[key]
    assert fast.integers(0, 1000, size=5).tolist() == slow.integers(0, 1000, size=5).tolist()


@pytest.mark.parametrize("shape", [(1666, 960), (100_003,), (53_316, 6), (7, 3)])
def test_uniforms_equal_rng_random_and_leave_the_same_state(shape: tuple[int, ...]) -> None:
    """The compiled PCG64 fill (large draws) and numpy (small ones) give ``rng.random``'s numbers and state."""
    fast, slow = np.random.default_rng(3), np.random.default_rng(3)
    for rng in (fast, slow):
        rng.integers(0, 3, size=3)  # leaves half a 64-bit output buffered
    assert np.array_equal(uniforms(fast, shape), slow.random(shape))
    assert fast.bit_generator.state == slow.bit_generator.state
    assert fast.integers(0, 10**6, size=4).tolist() == slow.integers(0, 10**6, size=4).tolist()


@pytest.mark.parametrize("sd", [0.3, 2.0, 8.0, 25.0])
def test_guide_table_gives_the_alias_pick_of_every_uniform(sd: float) -> None:
    """The guided pick equals the alias method's own at both ends of every guide interval, next to
    them, and at random uniforms (its fallback included: the intervals that meet two outcomes)."""
    from cogtestbed.environments.draws import GUIDE_BITS, _alias_pick, _guided_pick

    sampler = RoundedNormal(sd)
    column, alias = sampler.offsets, sampler.offsets.take(sampler.alias)
    step = 1 << (53 - GUIDE_BITS)
    edges = np.arange(2**GUIDE_BITS, dtype=np.uint64) * np.uint64(step)
    keys = np.concatenate([edges, edges + np.uint64(1), edges + np.uint64(step - 1), edges + np.uint64(step - 2),
                           np.random.default_rng(2).integers(0, 2**53, size=20_000, dtype=np.uint64)])
    assert (sampler.guide == sampler.missing).any() and (sampler.guide != sampler.missing).mean() > 0.9
    assert sampler.guide.dtype == (np.int8 if sd * RoundedNormal.TAIL_SDS <= 127 else np.int16)
    for key in keys.tolist()[::7] + keys.tolist()[-2000:]:
        k = np.uint64(key)
        expected = _alias_pick.py_func(float(key) * 2.0**-53, sampler.prob, column, alias)
        assert _guided_pick.py_func(k, sampler.guide, sampler.missing, sampler.prob, column, alias) == expected


@pytest.mark.parametrize("highs", [(2,), (3, 10), (7, 2, 1000), (2**31 + 5, 2**32 - 2, 2), (1, 4), (2**32, 3)])
@pytest.mark.parametrize("size", [0, 1, 3, 50_001])
@pytest.mark.parametrize("seed", [0, 1, 7, 12])
def test_integers_are_numpys_and_leave_its_state(highs: tuple[int, ...], size: int, seed: int) -> None:
    """Compiled bounded integers (any size once loaded) give ``rng.integers``'s numbers, its state (the
    buffered half word included) and so every later draw; ranges it does not take go to numpy."""
    fast, slow = np.random.default_rng(seed), np.random.default_rng(seed)
    if seed % 2:
        for rng in (fast, slow):
            rng.integers(0, 5, size=1)  # leaves half a 64-bit output buffered
    got = integers(fast, highs, size)
    expected = [slow.integers(0, h, size=size) for h in highs]
    assert got.dtype == np.int64 and got.shape == (len(highs), size)
    assert all(np.array_equal(g, e) for g, e in zip(got, expected, strict=True))
    assert fast.bit_generator.state == slow.bit_generator.state
    assert fast.random(3).tolist() == slow.random(3).tolist()
    assert fast.integers(0, 9, size=5).tolist() == slow.integers(0, 9, size=5).tolist()


def test_integers_reject_as_numpy_does() -> None:
    """A range whose rejection zone is wide (high = 2³¹ + 1: nearly half the 32-bit draws rejected)
    takes the same extra draws as numpy."""
    fast, slow = np.random.default_rng(4), np.random.default_rng(4)
    high = 2**31 + 1
    assert np.array_equal(integers(fast, (high, 3), 200_000), [slow.integers(0, high, 200_000),
                                                               slow.integers(0, 3, 200_000)])
    assert fast.bit_generator.state == slow.bit_generator.state


@pytest.mark.parametrize(("n", "m", "k"), [(40_001, 4, None), (30_000, 7, 3), (5, 4, None), (100_003, 2, 1)])
def test_permute_rows_from_pcg64_in_compiled_code_equals_the_numpy_path(n: int, m: int, k: int | None) -> None:
    """The compiled shuffle (large draws, or once loaded) gives the shuffles of ``rng.random``'s uniforms and
    leaves the generator (its buffered half word included) where ``rng.random`` leaves it."""
    from cogtestbed.environments.draws import _fisher_yates

    values = np.tile(np.arange(m, dtype=np.int64), (n, 1)) * 10 + np.arange(n)[:, None]
    fast, slow = np.random.default_rng(n), np.random.default_rng(n)
    for rng in (fast, slow):
        rng.integers(0, 3, size=3)  # leaves half a 64-bit output buffered
    got = permute_rows(values, fast, k)
    expected = values.copy()
    swaps = min(m if k is None else k, m - 1)
    _fisher_yates(expected, slow.random((n, swaps)))
    assert np.array_equal(got, expected[:, : (m if k is None else k)])
    assert fast.bit_generator.state == slow.bit_generator.state
    mine, again = values.copy(), np.random.default_rng(n)
    again.integers(0, 3, size=3)
    shuffled = permute_rows(mine, again, k, in_place=True)  # the caller's array itself, the same shuffles
    assert np.shares_memory(shuffled, mine) and np.array_equal(shuffled, got)
    assert np.array_equal(mine[:, : (m if k is None else k)], got)


def test_permute_rows_in_place_needs_a_writable_c_contiguous_array() -> None:
    values = np.arange(12, dtype=np.int64).reshape(3, 4)
    for bad in (values.T, values[:, ::2], np.broadcast_to(values[0], (3, 4))):
        with pytest.raises(ValueError, match="writable C-contiguous"):
            permute_rows(bad, np.random.default_rng(0), in_place=True)
