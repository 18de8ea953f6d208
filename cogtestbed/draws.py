"""Session draws that reproduce :class:`numpy.random.Generator` streams exactly, faster.

:func:`standard_normal` returns the very numbers ``rng.standard_normal(shape)`` returns and leaves
``rng`` in the very state that call leaves it in (so every later draw is unchanged too): it runs
numpy's ziggurat (Marsaglia & Tsang 2000, "The ziggurat method for generating random variables",
J. Stat. Softw. 5(8); numpy's 256-layer tables, as numba ships them) on the generator's raw 64-bit
outputs, drawn with ``bit_generator.random_raw``, compiled and with the sign applied without a
branch (numpy's per-draw sign branch mispredicts half the time).  A rejected draw consumes more
raw outputs, exactly as numpy consumes them; raw outputs are only ever drawn in amounts known to
be needed (at least one per normal still missing), so the generator never runs ahead.

Small draws come from numpy itself until the compiled ziggurat has been loaded once
(:data:`COMPILED_MIN_SIZE`).  Only bit generators whose raw output is numpy's ``next_uint64`` and
whose doubles are its top 53 bits (:data:`RAW64_BIT_GENERATORS`) take the compiled path; any other
draws from numpy itself.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

#: Bit generators whose ``random_raw`` is the ``next_uint64`` numpy's distributions consume and whose
#: ``next_double`` is ``(next_uint64 >> 11) · 2⁻⁵³`` (MT19937 draws 32 bits at a time: not here).
RAW64_BIT_GENERATORS: tuple[type[np.random.BitGenerator], ...] = (
    np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)
#: 2⁻⁵³: a 53-bit integer times this is a double in [0, 1) (numpy's ``next_double``).
TO_UNIT = 1.0 / 9007199254740992.0

#: Fewer draws than this come from numpy itself until the compiled ziggurat is loaded: loading it
#: (~25 ms once per process) costs more than numpy's slower draws (~10 ns each) save on them.
COMPILED_MIN_SIZE = 1_000_000
_LOW8 = np.uint64(0xFF)
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _unit(raw: np.uint64) -> float:
    """numpy's ``next_double`` from one raw output: its top 53 bits over 2⁵³."""
    return float(np.int64(raw >> np.uint64(11))) * TO_UNIT


@njit(cache=True)
def _ziggurat_fill(raw: np.ndarray, out: np.ndarray, done: int) -> tuple[int, int]:
    """Standard normals into ``out[done:]`` from the raw stream ``raw``, consumed as numpy's
    ``random_standard_normal`` consumes ``next_uint64`` (ziggurat layer from the low 8 bits, the
    sign from the next, a 52-bit magnitude; wedge and tail tests from further raw outputs).

    Returns (normals now done, raw outputs the finished normals consumed); it stops at the first
    normal the stream runs out for, which then starts again from its first raw output.
    """
    n, m = raw.size, out.size
    i, j = done, 0
    while i < m:
        start = j
        while True:
            if j >= n:
                return i, start
            r = raw[j]
            j += 1
            idx = np.intp(r & _LOW8)
            r >>= np.uint64(8)
            rabs = np.int64((r >> np.uint64(1)) & _MANTISSA)
            x = float(rabs) * wi_double[idx] * (1.0 - 2.0 * float(np.int64(r & np.uint64(1))))
            if np.uint64(rabs) < ki_double[idx]:
                break  # 99.3 % of draws
            if idx == 0:  # the tail beyond r (Marsaglia 1964), two uniforms a try
                while True:
                    if j + 2 > n:
                        return i, start
                    xx = -ziggurat_nor_inv_r * np.log1p(-_unit(raw[j]))
                    yy = -np.log1p(-_unit(raw[j + 1]))
                    j += 2
                    if yy + yy > xx * xx:
                        break
                x = -(ziggurat_nor_r + xx) if (rabs >> 8) & 1 else ziggurat_nor_r + xx
                break
            if j >= n:
                return i, start
            u = _unit(raw[j])
            j += 1
            if (fi_double[idx - 1] - fi_double[idx]) * u + fi_double[idx] < np.exp(-0.5 * x * x):
                break  # inside the wedge; else a fresh draw
        out[i] = x
        i += 1
    return i, j


def standard_normal(rng: np.random.Generator, shape: int | tuple[int, ...],
                    compiled: bool | None = None) -> np.ndarray:
    """``rng.standard_normal(shape)``, the same numbers and the same state of ``rng`` after it
    (see the module docstring), about twice as fast on large draws.  ``compiled``: whether to use
    the compiled ziggurat (default: see :data:`COMPILED_MIN_SIZE`)."""
    if compiled is None:
        compiled = int(np.prod(shape)) >= COMPILED_MIN_SIZE or bool(_ziggurat_fill.signatures)
    if not compiled or not isinstance(rng.bit_generator, RAW64_BIT_GENERATORS):
        return rng.standard_normal(shape)
    out = np.empty(shape, dtype=np.float64)
    flat = out.reshape(-1)
    done, pending = 0, np.empty(0, dtype=np.uint64)
    while done < flat.size:
        # every normal still missing takes at least one raw output; a normal cut off by the end
        # of the stream takes at least one more than it was given
        more = rng.bit_generator.random_raw(max(flat.size - done - pending.size, 1))
        stream = more if pending.size == 0 else np.concatenate([pending, more])
        done, used = _ziggurat_fill(stream, flat, done)
        pending = stream[used:]
    return out
