"""numpy's PCG64 stream read in compiled code: the same uniforms, the same generator state after."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from cogtestbed.environments.pcg64 import cursors, is_pcg64, jump, put_state, step_key, take_state, unit


@njit(cache=False)
def _read(cur: np.ndarray, inc: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The blocks of uniforms read from their cursors, side by side, concatenated in block order."""
    out = np.empty(sizes.sum())
    start = 0
    for k in range(sizes.size):
        hi, lo = cur[k, 0], cur[k, 1]
        for i in range(sizes[k]):
            hi, lo, key = step_key(hi, lo, inc[0], inc[1])
            out[start + i] = unit(key)
        start += sizes[k]
    return out


@pytest.mark.parametrize("seed", [0, 1, 12345])
@pytest.mark.parametrize("sizes", [[1], [7, 0, 3], [1000, 96, 2, 5000]])
def test_cursors_read_numpys_uniforms_and_leave_its_state(seed, sizes):
    rng, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    rng.random(3)
    ref.random(3)  # a generator part-way through its stream
    cur, inc, end = cursors(rng, sizes)
    got = _read(cur, inc, np.array(sizes, dtype=np.int64))
    expected = np.concatenate([ref.random(s) for s in sizes])
    assert got.tobytes() == expected.tobytes()
    put_state(rng, end)
    assert rng.bit_generator.state == ref.bit_generator.state
    assert rng.random(5).tobytes() == ref.random(5).tobytes()


def test_jump_is_numpys_advance():
    rng = np.random.default_rng(7)
    state, inc = take_state(rng)
    for steps in (0, 1, 2, 3, 1000, 2**40 + 17):
        other = np.random.PCG64()
        other.state = rng.bit_generator.state
        other.advance(steps)
        assert jump(state, inc, steps) == other.state["state"]["state"]
    with pytest.raises(ValueError, match="backwards"):
        jump(state, inc, -1)


def test_put_state_keeps_the_buffered_half_word():
    rng, ref = np.random.default_rng(3), np.random.default_rng(3)
    rng.integers(0, 2**32, dtype=np.uint32)  # buffers the other 32 bits of a 64-bit output
    ref.integers(0, 2**32, dtype=np.uint32)
    state, _ = take_state(rng)
    put_state(rng, state)
    assert rng.integers(0, 2**32, dtype=np.uint32) == ref.integers(0, 2**32, dtype=np.uint32)


def test_only_numpys_pcg64_takes_the_compiled_stream():
    assert is_pcg64(np.random.default_rng(0))
    assert not is_pcg64(np.random.Generator(np.random.PCG64DXSM(0)))
    assert not is_pcg64(np.random.Generator(np.random.Philox(0)))
    assert not is_pcg64(np.random.RandomState(0))

