"""numpy's PCG64 stream read inside compiled code: the very uniforms ``rng.random`` returns, drawn
where they are used, and the generator left in the very state those draws leave it in.

:class:`numpy.random.PCG64` (O'Neill 2014, "PCG: a family of simple fast space-efficient statistically
good algorithms for random number generation", HMC-CS-2014-0905: the 128-bit LCG with the
XSL-RR output) steps its state as ``s ← s·M + inc (mod 2¹²⁸)`` and outputs
``rotr64(hi(s) ⊕ lo(s), s >> 122)``; ``rng.random()`` is the output's top 53 bits over 2⁵³.  Here
the state lives in two 64-bit words and each step is one 128-bit multiply-add (:func:`_lcg_step`,
LLVM's ``i128`` arithmetic: three 64-bit multiplies), inlined where the uniform is consumed, so a
draw costs the multiply and no call through numpy's bit-generator interface.

A block of draws that numpy would make with one call (``rng.random((n, m))``) is read from a
cursor, an LCG state placed at the block's first draw (:func:`cursors`, :func:`jump`, the LCG's jump-ahead
``s_k = A_k·s + C_k`` by repeated squaring; Brown 1994, "Random number generation with arbitrary
strides", Trans. Am. Nucl. Soc. 71), so consecutive blocks can be read side by side in one pass
over the subjects.  :func:`take_state` / :func:`put_state` read and write the generator's state;
only an exact :class:`numpy.random.PCG64` takes this path (:func:`is_pcg64`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: PCG64's 128-bit LCG multiplier (numpy's ``PCG_DEFAULT_MULTIPLIER_128``).
MULTIPLIER = (2549297995355413924 << 64) | 4865540595714422341
_MASK128 = (1 << 128) - 1
_MASK64 = (1 << 64) - 1
#: 2⁻⁵³: a 53-bit integer times this is a double in [0, 1) (numpy's ``next_double``).
TO_UNIT = 1.0 / 9007199254740992.0


def is_pcg64(rng: Any) -> bool:
    """Whether ``rng`` is a :class:`numpy.random.Generator` drawing from numpy's PCG64 itself (a
    subclass of either may draw otherwise)."""
    return type(rng) is np.random.Generator and type(rng.bit_generator) is np.random.PCG64


def take_state(rng: np.random.Generator) -> tuple[int, int]:
    """(state, increment) of a PCG64 generator, as 128-bit Python integers."""
    st = rng.bit_generator.state["state"]
    return int(st["state"]), int(st["inc"])


def put_state(rng: np.random.Generator, state: int) -> None:
    """Set the 128-bit LCG state of a PCG64 generator (increment and buffered 32 bits unchanged)."""
    full = rng.bit_generator.state
    full["state"]["state"] = state
    rng.bit_generator.state = full


def jump(state: int, inc: int, steps: int) -> int:
    """The LCG state ``steps`` draws after ``state``: ``A·state + C`` with ``A = M^steps`` and
    ``C = inc·(M^(steps−1) + … + 1)`` (:func:`jump_coefficients`)."""
    if steps < 0:
        raise ValueError("cannot jump backwards")
    mult, plus = jump_coefficients(inc, steps)
    return (mult * state + plus) & _MASK128


@functools.lru_cache(maxsize=256)
def jump_coefficients(inc: int, steps: int) -> tuple[int, int]:
    """(A, C) of a jump of ``steps`` draws, composed by repeated squaring (O(log steps)); kept for the
    next jump of the same length (a simulation repeated at one size jumps by the same amounts)."""
    acc_mult, acc_plus = 1, 0
    cur_mult, cur_plus = MULTIPLIER, inc
    while steps:
        if steps & 1:
            acc_mult, acc_plus = (acc_mult * cur_mult) & _MASK128, (acc_plus * cur_mult + cur_plus) & _MASK128
        cur_plus = ((cur_mult + 1) * cur_plus) & _MASK128
        cur_mult = (cur_mult * cur_mult) & _MASK128
        steps >>= 1
    return acc_mult, acc_plus


def cursors(rng: np.random.Generator, blocks: list[int]) -> tuple[np.ndarray, np.ndarray, int]:
    """Cursors at the first draw of consecutive blocks of ``blocks[k]`` draws from ``rng``'s current
    state: ``(states (len(blocks), 2) uint64 [hi, lo], increment (2,) uint64 [hi, lo], the state
    after the last block)``."""
    state, inc = take_state(rng)
    out = np.empty((len(blocks), 2), dtype=np.uint64)
    for k, size in enumerate(blocks):
        out[k] = (state >> 64, state & _MASK64)
        state = jump(state, inc, int(size))
    return out, np.array([inc >> 64, inc & _MASK64], dtype=np.uint64), state


@intrinsic
def _lcg_step(typingctx: Any, hi: Any, lo: Any, inc_hi: Any, inc_lo: Any) -> Any:
    """(hi, lo) of ``s·M + inc mod 2¹²⁸`` for ``s = hi·2⁶⁴ + lo`` (one LLVM ``i128`` multiply-add)."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64, types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64, i128 = ir.IntType(64), ir.IntType(128)
        shift = ir.Constant(i128, 64)

        def wide(h: Any, low: Any) -> Any:
            return builder.or_(builder.shl(builder.zext(h, i128), shift), builder.zext(low, i128))

        s = builder.add(builder.mul(wide(args[0], args[1]), ir.Constant(i128, MULTIPLIER)), wide(args[2], args[3]))
        out = context.make_tuple(builder, signature.return_type,
                                 [builder.trunc(builder.lshr(s, shift), i64), builder.trunc(s, i64)])
        return out

    return sig, codegen


@njit(cache=True, inline="always")
def output(hi: np.uint64, lo: np.uint64) -> np.uint64:
    """PCG64's 64-bit output of the state (hi, lo): XSL-RR, ``rotr64(hi ⊕ lo, hi >> 58)``."""
    x = hi ^ lo
    r = hi >> np.uint64(58)
    return (x >> r) | (x << ((np.uint64(64) - r) & np.uint64(63)))


@njit(cache=True, inline="always")
def step_key(hi: np.uint64, lo: np.uint64, inc_hi: np.uint64,
             inc_lo: np.uint64) -> tuple[np.uint64, np.uint64, np.uint64]:
    """One draw from the state (hi, lo): (new hi, new lo, the draw's 53-bit integer), the uniform being
    that integer times :data:`TO_UNIT` (numpy steps the state first, then outputs)."""
    hi, lo = _lcg_step(hi, lo, inc_hi, inc_lo)
    return hi, lo, output(hi, lo) >> np.uint64(11)


@njit(cache=True, inline="always")
def unit(key: np.uint64) -> float:
    """The uniform on [0, 1) of a draw's 53-bit integer (numpy's ``next_double``)."""
    return float(np.int64(key)) * TO_UNIT

