"""Vectorised draws for :meth:`~cogtestbed.environments.base.TextEnv.sample_sessions`.

Every function takes whole arrays from one :class:`numpy.random.Generator` (no call per session,
no sort of random keys), so drawing the sessions costs a few ns per trial.  They consume the
generator in a fixed order that depends only on the shapes asked for, so the step path's
``reset(seed=...)`` (one session, drawn by the same ``sample_sessions``) and the batch path meet
the same sessions for the same stream.

**Normals.**  Draws that reproduce :class:`numpy.random.Generator` streams exactly, faster.

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

import math
from collections.abc import Sequence

import numpy as np
from numba import njit
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

from cogtestbed.environments.pcg64 import (
    TO_UNIT,
    _lcg_step,
    cursors,
    is_pcg64,
    output,
    put_state,
    step_key,
    unit,
)
from cogtestbed.jit_cache import compiled_pays


def permute_rows(values: np.ndarray, rng: np.random.Generator, k: int | None = None,
                 in_place: bool = False) -> np.ndarray:
    """The first ``k`` (default all) entries of an independent uniform permutation of every row of
    ``values`` (n, m), as a new (n, k) array (``in_place``: ``values`` itself is shuffled, a writable
    C-contiguous array the caller has just built, and returned or its first ``k`` columns).

    Durstenfeld's (1964) forward Fisher–Yates shuffle, stopped after ``k`` swaps: position ``i``
    takes the entry at ``i + ⌊u·(m − i)⌋`` of the remaining ones, from one uniform ``u`` per
    position (the last position of a full permutation needs none).  Drawing without replacement
    (``k`` < m) is the same partial shuffle.  From numpy's own PCG64 and at least
    :data:`UNIFORMS_MIN_SIZE` uniforms (or once compiled), the uniforms are read where they are used,
    from four cursors over four blocks of rows (:func:`_fisher_yates_pcg64`): the same shuffles, and
    ``rng`` left in the state ``rng.random((n, swaps))`` leaves it in.
    """
    if in_place and not (isinstance(values, np.ndarray) and values.flags.c_contiguous and values.flags.writeable):
        raise ValueError("permute_rows(in_place=True) needs a writable C-contiguous array")
    table = values if in_place else np.array(values, copy=True, order="C")
    if table.ndim != 2:
        raise ValueError(f"permute_rows needs an (n, m) array, got shape {table.shape}")
    n, m = table.shape
    k = m if k is None else int(k)
    if not 0 <= k <= m:
        raise ValueError(f"cannot take {k} of {m} entries per row")
    swaps = min(k, m - 1)
    if swaps > 0 and is_pcg64(rng) and n >= 4 and compiled_pays(n * swaps, UNIFORMS_MIN_SIZE, _fisher_yates_pcg64):
        quarter = n // 4
        cur, inc, end = cursors(rng, [quarter * swaps] * 3 + [(n - 3 * quarter) * swaps])
        _fisher_yates_pcg64(table, cur, inc, swaps)
        put_state(rng, end)
    elif swaps > 0:
        _fisher_yates(table, uniforms(rng, (n, swaps)))
    return table[:, :k] if k < m else table


@njit(cache=True)
def _fisher_yates(table: np.ndarray, u: np.ndarray) -> None:  # pragma: no cover - numba
    n, m = table.shape
    for r in range(n):
        for i in range(u.shape[1]):
            j = i + int(u[r, i] * (m - i))
            tmp = table[r, i]
            table[r, i] = table[r, j]
            table[r, j] = tmp


@njit(cache=True)
def _fisher_yates_pcg64(table: np.ndarray, cur: np.ndarray, inc: np.ndarray,
                        swaps: int) -> None:  # pragma: no cover - numba
    """:func:`_fisher_yates` of rows ``L·q … (L+1)·q − 1`` (q = n // 4) with the uniforms of PCG64
    cursor L, four rows side by side (the last cursor also the rows after 4q)."""
    n, m = table.shape
    q = n // 4
    ih, il = inc[0], inc[1]
    h0, l0, h1, l1 = cur[0, 0], cur[0, 1], cur[1, 0], cur[1, 1]
    h2, l2, h3, l3 = cur[2, 0], cur[2, 1], cur[3, 0], cur[3, 1]
    for r in range(q):
        a, b, c, d = table[r], table[q + r], table[2 * q + r], table[3 * q + r]
        for i in range(swaps):
            h0, l0, k0 = step_key(h0, l0, ih, il)
            h1, l1, k1 = step_key(h1, l1, ih, il)
            h2, l2, k2 = step_key(h2, l2, ih, il)
            h3, l3, k3 = step_key(h3, l3, ih, il)
            j0, j1 = i + int(unit(k0) * (m - i)), i + int(unit(k1) * (m - i))
            j2, j3 = i + int(unit(k2) * (m - i)), i + int(unit(k3) * (m - i))
            a[i], a[j0] = a[j0], a[i]
            b[i], b[j1] = b[j1], b[i]
            c[i], c[j2] = c[j2], c[i]
            d[i], d[j3] = d[j3], d[i]
    for r in range(4 * q, n):
        row = table[r]
        for i in range(swaps):
            h3, l3, k3 = step_key(h3, l3, ih, il)
            j = i + int(unit(k3) * (m - i))
            row[i], row[j] = row[j], row[i]


def argsort_uniform_rows(keys: np.ndarray) -> np.ndarray:
    """``keys.argsort(axis=1)`` for keys drawn uniformly on [0, 1) (e.g. ``rng.random((n, m))``),
    in O(m) per row: a bucket sort (bucket ⌊key·m⌋, about one key each) finished by insertion
    sort within each bucket.  The same permutation as numpy's sort wherever a row's keys are
    distinct (equal 53-bit uniforms: probability below m²·2⁻⁵⁴ per row), so a random ordering
    drawn as the argsort of uniform keys keeps its values, at a fraction of the cost."""
    keys = np.ascontiguousarray(keys, dtype=np.float64)
    if keys.ndim != 2:
        raise ValueError(f"argsort_uniform_rows needs an (n, m) array, got shape {keys.shape}")
    if keys.size and (keys.min() < 0.0 or keys.max() >= 1.0):
        raise ValueError("argsort_uniform_rows needs keys in [0, 1)")
    out = np.empty(keys.shape, dtype=np.int64)
    _bucket_argsort(keys, out)
    return out


@njit(cache=True)
def _bucket_argsort(keys: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    n, m = keys.shape
    start = np.empty(m + 1, dtype=np.int64)
    bucket = np.empty(m, dtype=np.int64)
    sorted_keys = np.empty(m, dtype=np.float64)
    order = np.empty(m, dtype=np.int64)
    for r in range(n):
        row = keys[r]
        start[:] = 0
        for i in range(m):
            b = int(row[i] * m)
            bucket[i] = b
            start[b + 1] += 1
        for b in range(m):
            start[b + 1] += start[b]
        for i in range(m):  # counting sort by bucket (stable)
            p = start[bucket[i]]
            start[bucket[i]] = p + 1
            sorted_keys[p] = row[i]
            order[p] = i
        # one insertion sort over the row: only keys sharing a bucket are out of order (stable:
        # ties keep index order)
        for j in range(1, m):
            key, idx = sorted_keys[j], order[j]
            k = j - 1
            while k >= 0 and sorted_keys[k] > key:
                sorted_keys[k + 1] = sorted_keys[k]
                order[k + 1] = order[k]
                k -= 1
            sorted_keys[k + 1] = key
            order[k + 1] = idx
        out[r, :] = order


#: Fewer uniforms than this come from ``rng.random`` itself: below it the compiled fill saves less
#: than placing its cursors costs (four jumps of the 128-bit LCG in Python, ~0.1 ms).
UNIFORMS_MIN_SIZE = 100_000


def uniforms(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """``rng.random(shape)``: the same numbers, and ``rng`` left in the same state.

    From numpy's own PCG64 (:func:`~cogtestbed.environments.pcg64.is_pcg64`) and at least
    :data:`UNIFORMS_MIN_SIZE` draws, read in compiled code from four cursors placed at the first
    draw of four quarters of the block and stepped side by side (the generator's throughput, not
    one chain's latency, and no call through numpy's bit-generator interface per draw).
    """
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(dims)
    if not is_pcg64(rng) or size < UNIFORMS_MIN_SIZE:
        return rng.random(dims)
    quarter = size // 4
    cur, inc, end = cursors(rng, [quarter, quarter, quarter, size - 3 * quarter])
    out = np.empty(size, dtype=np.float64)
    _fill_uniforms(cur, inc, out)
    put_state(rng, end)
    return out.reshape(dims)


@njit(cache=True)
def _fill_uniforms(cur: np.ndarray, inc: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out`` from four PCG64 cursors: cursor L at the first draw of quarter L (the last one also
    fills what follows the fourth quarter)."""
    q = out.size // 4
    ih, il = inc[0], inc[1]
    h0, l0, h1, l1 = cur[0, 0], cur[0, 1], cur[1, 0], cur[1, 1]
    h2, l2, h3, l3 = cur[2, 0], cur[2, 1], cur[3, 0], cur[3, 1]
    for i in range(q):
        h0, l0, k0 = step_key(h0, l0, ih, il)
        h1, l1, k1 = step_key(h1, l1, ih, il)
        h2, l2, k2 = step_key(h2, l2, ih, il)
        h3, l3, k3 = step_key(h3, l3, ih, il)
        out[i], out[q + i], out[2 * q + i], out[3 * q + i] = unit(k0), unit(k1), unit(k2), unit(k3)
    for i in range(4 * q, out.size):
        h3, l3, k3 = step_key(h3, l3, ih, il)
        out[i] = unit(k3)


#: Fewer bounded integers than this come from ``rng.integers`` itself until the compiled fill is loaded.
INTEGERS_MIN_SIZE = 100_000
_LOW32 = np.uint64(0xFFFFFFFF)
_MASK64 = 2**64 - 1


def integers(rng: np.random.Generator, highs: Sequence[int], size: int) -> np.ndarray:
    """``rng.integers(0, high, size)`` (int64) for each of ``highs`` in turn, as the rows of a
    (len(highs), size) array: the same numbers, and ``rng`` left in the same state.

    From numpy's own PCG64 with every ``high`` in 2 … 2³² − 2 and at least :data:`INTEGERS_MIN_SIZE`
    draws (or once compiled), numpy's algorithm in one compiled pass (:func:`_lemire_fill`), the
    generator's state read and written once; anything else from ``rng.integers``.
    """
    size, limits = int(size), np.array([int(h) - 1 for h in highs], dtype=np.uint64)
    if (not is_pcg64(rng) or not all(1 <= int(h) - 1 < 2**32 - 2 for h in highs)
            or not compiled_pays(size * len(limits), INTEGERS_MIN_SIZE, _lemire_fill)):
        return np.array([rng.integers(0, h, size=size) for h in highs], dtype=np.int64).reshape(len(limits), size)
    full = dict(rng.bit_generator.state)
    state, inc = int(full["state"]["state"]), int(full["state"]["inc"])
    out = np.empty((len(limits), size), dtype=np.int64)
    hi, lo, has, half = _lemire_fill(np.uint64(state >> 64), np.uint64(state & _MASK64), np.uint64(inc >> 64),
                                     np.uint64(inc & _MASK64), int(full["has_uint32"]), np.uint64(full["uinteger"]),
                                     limits, out)
    full["state"] = {"state": (int(hi) << 64) | int(lo), "inc": inc}
    full["has_uint32"], full["uinteger"] = int(has), int(half)
    rng.bit_generator.state = full
    return out


@njit(cache=True)
def _lemire_fill(hi: np.uint64, lo: np.uint64, inc_hi: np.uint64, inc_lo: np.uint64, has: int, half: np.uint64,
                 limits: np.ndarray,
                 out: np.ndarray) -> tuple[np.uint64, np.uint64, int, np.uint64]:  # pragma: no cover - numba
    """Row k of ``out`` ← integers in 0..``limits[k]``, rows in turn, as numpy's ``random_bounded_uint64_fill``
    draws them for a range below 2³² − 1: Lemire's (2019, "Fast random integer generation in an interval",
    ACM TOMACS 29(1)) multiply-and-reject on 32-bit draws, x·(limit + 1) accepted when its low 32 bits
    are at least (2³² − 1 − limit) mod (limit + 1), the value its high 32 bits.  The 32-bit draws are
    PCG64's ``next_uint32``: the low half of a 64-bit output, its high half kept (``has``, ``half``) for
    the next draw, across calls as the generator keeps it.  Returns the state after (hi, lo, has, half)."""
    for k in range(out.shape[0]):
        excl = limits[k] + np.uint64(1)
        threshold = (_LOW32 - limits[k]) % excl
        row = out[k]
        for i in range(row.size):
            while True:
                if has:
                    x = half
                    has = 0
                else:
                    hi, lo = _lcg_step(hi, lo, inc_hi, inc_lo)
                    word = output(hi, lo)
                    x, half, has = word & _LOW32, word >> np.uint64(32), 1
                m = x * excl
                if (m & _LOW32) >= threshold:
                    break
            row[i] = np.int64(m >> np.uint64(32))
    return hi, lo, has, half


def bernoulli(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Outcomes 1.0 / 0.0 with probability ``p`` (array of probabilities), from one uniform each
    (``u < p``), as float64."""
    p = np.asarray(p, dtype=np.float64)
    out = uniforms(rng, p.shape)
    np.less(out, p, out=out)  # a boolean result written as 1.0 / 0.0 in place: no second array
    return out


class RoundedNormal:
    """Exact sampler of ``rint(Z·sd)`` for ``Z ~ N(0, 1)``: the whole-number offsets of a Gaussian
    draw rounded to the nearest integer (a mean that is a whole number adds to it unchanged).

    ``P(k) = Φ((k + ½)/sd) − Φ((k − ½)/sd)`` on ``|k| ≤`` :data:`TAIL_SDS`·sd (beyond it the mass is
    below 10⁻¹⁸, under the 2⁻⁵³ resolution of a uniform draw), sampled with Walker's (1977) alias
    method from one uniform per draw (Vose's 1991 table construction): far cheaper than drawing the
    Gaussian itself (no ziggurat, no rounding pass).
    """

    #: Support half-width in SDs (the mass outside, 2·Φ(−9) ≈ 2·10⁻¹⁹, is below a uniform's resolution).
    TAIL_SDS = 9.0

    def __init__(self, sd: float) -> None:
        if not sd > 0 or not math.isfinite(sd):
            raise ValueError(f"sd must be a positive number, got {sd!r}")
        from scipy.special import ndtr  # imported on use: scipy.special costs a metrics call ~0.07 s of CPU

        half = int(math.ceil(self.TAIL_SDS * sd))
        self.low = -half
        k = np.arange(-half, half + 1, dtype=np.float64)
        # Φ differences written as tails on each side of zero (no cancellation in the far tails)
        upper, lower = (k + 0.5) / sd, (k - 0.5) / sd
        p = np.where(k >= 0, ndtr(-lower) - ndtr(-upper), ndtr(upper) - ndtr(lower))
        self.prob, self.alias = _alias_table(p / p.sum())
        self.offsets = self.low + np.arange(len(self.prob), dtype=np.float64)
        #: the value of every outcome of the alias method: column c's own at 2c, its alias's at 2c + 1
        outcomes = np.stack([self.offsets, self.offsets.take(self.alias)], axis=1).reshape(-1)
        self.guide, self.missing = _value_guide(_guide_table(self.prob), outcomes, half)

    def draw(self, shape: tuple[int, ...], rng: np.random.Generator, mean: float | np.ndarray = 0.0) -> np.ndarray:
        """Draws of ``shape`` (at most three axes) as float64: the offsets plus ``mean`` (a whole
        number, or an array of them broadcast against ``shape``, e.g. (n, 1, 2) per game and arm)."""
        if len(shape) > 3:
            raise ValueError(f"RoundedNormal.draw takes at most three axes, got shape {shape}")
        shape3 = (1,) * (3 - len(shape)) + tuple(shape)
        offsets = self.offsets
        means = np.broadcast_to(np.asarray(mean, np.float64), shape3)
        # the means without their repeats (an axis they are broadcast along keeps one entry)
        means = np.ascontiguousarray(means[tuple(slice(0, 1) if st == 0 else slice(None) for st in means.strides)])
        if is_pcg64(rng) and all(shape3):
            return self._draw_pcg64(shape3, rng, offsets, means).reshape(shape)
        u = rng.random(shape3)
        _alias_draw(u, self.prob, offsets, offsets.take(self.alias), means)
        return u.reshape(shape)

    def _draw_pcg64(self, shape3: tuple[int, ...], rng: np.random.Generator, offsets: np.ndarray,
                    means: np.ndarray) -> np.ndarray:
        """:meth:`draw` from numpy's PCG64 read in compiled code (:mod:`cogtestbed.environments.pcg64`):
        the uniforms ``rng.random(shape3)`` returns, consumed where drawn (no array of them), from
        two cursors placed at the first uniform of two blocks of rows, stepped side by side (the
        generator's throughput rather than the latency of one chain); ``rng`` is left in the state
        ``rng.random(shape3)`` leaves it in."""
        a, b, c = shape3
        half = a // 2
        cur, inc, end = cursors(rng, [half * b * c, (a - half) * b * c])
        out = np.empty(shape3, dtype=np.float64)
        _alias_draw_pcg64(cur, inc, self.prob, offsets, offsets.take(self.alias), means, out, self.guide,
                          self.missing)
        put_state(rng, end)
        return out


def _alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table (acceptance probabilities, aliases) of a distribution ``p``."""
    n = len(p)
    scaled = p * n
    prob = np.ones(n)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    return prob, alias


#: Leading bits of a uniform that index :func:`_guide_table` (2¹⁴ entries: 16 KiB of int8 values, half a
#: core's L1 data cache, for offsets within ±127; twice that in int16 beyond).
GUIDE_BITS = 14
_KEY_BITS = 53


def _outcome_of_keys(keys: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """The alias-method outcome (2·column + 1 where its alias is taken; −1 past the last column) of the
    uniforms ``keys``·2⁻⁵³, by the very float steps of :func:`_alias_pick`."""
    k = len(prob)
    x = (keys.astype(np.int64).astype(np.float64) * TO_UNIT) * k
    col = x.astype(np.int64)
    inside = col < k
    accept = (x - col) < prob[np.minimum(col, k - 1)]
    return np.where(inside, 2 * col + np.where(accept, 0, 1), -1)


def _guide_table(prob: np.ndarray, bits: int = GUIDE_BITS) -> np.ndarray:
    """Guide table of an alias table (Chen & Asau 1974, "On generating random variates from an empirical
    distribution", AIIE Trans. 6(2)): entry j is the alias method's outcome (see :func:`_outcome_of_keys`)
    for every uniform whose leading ``bits`` bits are j, or −1 where those uniforms meet two outcomes.

    The outcome is a non-decreasing function of the uniform (the column grows with it; within a column
    its own value comes before its alias's), so it is one outcome over an interval exactly where it is
    the same at both ends.  At most 2·columns entries are −1 (a share of the draws below 2 %)."""
    j = np.arange(2**bits, dtype=np.uint64)
    shift = np.uint64(_KEY_BITS - bits)
    first = _outcome_of_keys(j << shift, prob)
    last = _outcome_of_keys(((j + np.uint64(1)) << shift) - np.uint64(1), prob)
    return np.where((first == last) & (first >= 0), first, -1).astype(np.int16)


def _value_guide(guide: np.ndarray, outcomes: np.ndarray, half: int) -> tuple[np.ndarray, np.integer]:
    """(the guide table :func:`_guide_table` with each entry's outcome value in place of its index,
    the entry that marks two outcomes): values within ±``half`` held in the smallest signed integer
    type whose lowest value lies below −``half`` (that lowest value the mark), so that the table
    stays in the L1 cache and a pick reads no second table."""
    kind = next(t for t in (np.int8, np.int16, np.int32) if np.iinfo(t).min < -half)
    missing = np.iinfo(kind).min
    values = np.where(guide >= 0, outcomes.take(np.maximum(guide, 0)), missing).astype(kind)
    return values, kind(missing)


@njit(cache=True, inline="always")
def _guided_pick(key: np.uint64, guide: np.ndarray, missing: np.integer, prob: np.ndarray, column: np.ndarray,
                 alias: np.ndarray) -> float:  # pragma: no cover - numba
    """:func:`_alias_pick` of the uniform of a draw's 53-bit integer ``key``, read from the value guide
    table (:func:`_value_guide`) where its entry is one outcome (not ``missing``)."""
    entry = guide[key >> np.uint64(_KEY_BITS - GUIDE_BITS)]
    if entry != missing:
        return float(entry)
    return _alias_pick(unit(key), prob, column, alias)


@njit(cache=True)
def _alias_draw(u: np.ndarray, prob: np.ndarray, column: np.ndarray, alias: np.ndarray,
                mean: np.ndarray) -> None:  # pragma: no cover - numba
    """In place: each uniform in ``u`` becomes the value of its alias-method pick plus ``mean``: the
    integer part of u·K picks a column, the fractional part accepts its value (``column``) or takes
    its alias's (``alias``).  The choice is a blend with a 0/1 weight, not a branch: it goes either
    way at random, so a branch would be mispredicted on a large share of draws (3× the cost here);
    the blend is exact (a weight of 1 or 0 times a whole number).  ``mean``: the same axes as ``u``,
    each of its length or 1 (broadcast along it)."""
    a, b, c = u.shape
    ma, mb, mc = mean.shape
    for i in range(a):
        mi = i if ma > 1 else 0
        for j in range(b):
            mj = j if mb > 1 else 0
            for k in range(c):
                u[i, j, k] = _alias_pick(u[i, j, k], prob, column, alias) + mean[mi, mj, k if mc > 1 else 0]


@njit(cache=True, inline="always")
def _alias_pick(u: float, prob: np.ndarray, column: np.ndarray, alias: np.ndarray) -> float:  # pragma: no cover
    """The alias-method value of one uniform (see :func:`_alias_draw`)."""
    x = u * len(prob)
    col = int(x)
    accept = np.float64(x - col < prob[col])
    return accept * column[col] + (1.0 - accept) * alias[col]


@njit(cache=True)
def _alias_draw_pcg64(cur: np.ndarray, inc: np.ndarray, prob: np.ndarray, column: np.ndarray, alias: np.ndarray,
                      mean: np.ndarray, out: np.ndarray, guide: np.ndarray,
                      missing: np.integer) -> None:  # pragma: no cover - numba
    """:func:`_alias_draw` of the uniforms of two PCG64 cursors: cursor L at the first uniform of
    rows ``L·q … (L+1)·q − 1`` of ``out`` (q = a // 2; the second cursor also the last row where a is
    odd), each pick through the guide table (:func:`_guided_pick`).

    Two chains, not four: with the picks' registers, four states spill to the stack (on an AVX2
    EPYC, four chains drew horizon's rewards at 7.0 ns a trial, two at 6.8, alternated in one
    process).  A row's draws are one flat loop, each entry's mean read through a small table of
    its offset within the row's means (:func:`_mean_offsets`): loops over the two short inner axes
    and the broadcast tests per entry cost 0.45 ns a draw more (2.50 against 2.05, alternated)."""
    a, b, c = out.shape
    flat, means = out.reshape(-1), mean.reshape(-1)
    per, within = np.uint64(b * c), _mean_offsets(mean.shape, b, c)
    row_step = np.uint64(mean.shape[1] * mean.shape[2] if mean.shape[0] > 1 else 0)
    q = a // 2
    ih, il = inc[0], inc[1]
    h0, l0, h1, l1 = cur[0, 0], cur[0, 1], cur[1, 0], cur[1, 1]
    for g in range(q):
        r0, r1 = np.uint64(g), np.uint64(q + g)
        o0, o1, m0, m1 = r0 * per, r1 * per, r0 * row_step, r1 * row_step
        for e in range(b * c):
            h0, l0, k0 = step_key(h0, l0, ih, il)
            h1, l1, k1 = step_key(h1, l1, ih, il)
            at, m = np.uint64(e), within[e]
            flat[o0 + at] = _guided_pick(k0, guide, missing, prob, column, alias) + means[m0 + m]
            flat[o1 + at] = _guided_pick(k1, guide, missing, prob, column, alias) + means[m1 + m]
    for i in range(2 * q, a):  # the second cursor goes on past its block's rows
        r = np.uint64(i)
        for e in range(b * c):
            h1, l1, k1 = step_key(h1, l1, ih, il)
            flat[r * per + np.uint64(e)] = (_guided_pick(k1, guide, missing, prob, column, alias)
                                            + means[r * row_step + within[e]])


@njit(cache=True)
def _mean_offsets(shape: tuple[int, int, int], b: int, c: int) -> np.ndarray:  # pragma: no cover - numba
    """Offset, within one row of the means (shape (ma, mb, mc), each axis 1 or that of the draws), of the
    mean of each entry (j, k) of a row of draws of shape (b, c), as a flat table of b·c entries."""
    _, mb, mc = shape
    out = np.empty(b * c, dtype=np.uint64)
    for j in range(b):
        for k in range(c):
            out[j * c + k] = (j if mb > 1 else 0) * mc + (k if mc > 1 else 0)
    return out


#: Bit generators whose ``random_raw`` is the ``next_uint64`` numpy's distributions consume and whose
#: ``next_double`` is ``(next_uint64 >> 11) · 2⁻⁵³`` (MT19937 draws 32 bits at a time: not here).
RAW64_BIT_GENERATORS: tuple[type[np.random.BitGenerator], ...] = (
    np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)
#: Fewer draws than this come from numpy itself until the compiled ziggurat is loaded: loading it
#: (~25 ms once per process) costs more than numpy's slower draws (~10 ns each) save on them.
COMPILED_MIN_SIZE = 1_000_000
_LOW8 = np.uint64(0xFF)
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _unit(raw: np.uint64) -> float:
    """numpy's ``next_double`` from one raw output: its top 53 bits over 2⁵³."""
    return unit(raw >> np.uint64(11))


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
        compiled = compiled_pays(int(np.prod(shape)), COMPILED_MIN_SIZE, _ziggurat_fill)
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
