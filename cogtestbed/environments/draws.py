"""Whole-array draws for :meth:`~cogtestbed.environments.base.TextEnv.sample_sessions` that numpy's
:class:`~numpy.random.Generator` has no method for.

Every function takes whole arrays from one generator (no call per session), consuming it in a
fixed order that depends only on the shapes asked for, so the step path's ``reset(seed=...)`` (one
session, drawn by the same ``sample_sessions``) and the batch path meet the same sessions for the
same stream.  Everything else is drawn with the generator's own methods (``random``, ``integers``,
``standard_normal``, …) and ordered with ``np.argsort(kind="stable")``.
"""

from __future__ import annotations

import math

import numpy as np

from cogtestbed.errors import InputError


def permute_rows(values: np.ndarray, rng: np.random.Generator, k: int | None = None,
                 in_place: bool = False) -> np.ndarray:
    """The first ``k`` (default all) entries of an independent uniform permutation of every row of
    ``values`` (n, m), as a new (n, k) array (``in_place``: ``values`` itself is shuffled, a writable
    array the caller has just built, and returned or its first ``k`` columns).

    Durstenfeld's (1964) forward Fisher–Yates shuffle, stopped after ``k`` swaps: position ``i``
    takes the entry at ``i + ⌊u·(m − i)⌋`` of the remaining ones, from one uniform ``u`` per
    position (the last position of a full permutation needs none), the uniforms drawn as one
    ``rng.random((n, swaps))``.  Drawing without replacement (``k`` < m) is the same partial
    shuffle.  Each swap is one whole-column step over the rows.
    """
    if in_place and not (isinstance(values, np.ndarray) and values.flags.writeable):
        raise InputError("permute_rows(in_place=True) needs a writable array")
    table = values if in_place else np.array(values, copy=True, order="C")
    if table.ndim != 2:
        raise InputError(f"permute_rows needs an (n, m) array, got shape {table.shape}")
    n, m = table.shape
    k = m if k is None else int(k)
    if not 0 <= k <= m:
        raise InputError(f"cannot take {k} of {m} entries per row")
    swaps = min(k, m - 1)
    if swaps > 0:
        u = rng.random((n, swaps))
        rows = np.arange(n)
        for i in range(swaps):
            j = i + (u[:, i] * (m - i)).astype(np.int64)
            taken = table[rows, j]
            table[rows, j] = table[:, i]
            table[:, i] = taken
    return table[:, :k] if k < m else table


class RoundedNormal:
    """Exact sampler of ``rint(Z·sd)`` for ``Z ~ N(0, 1)``: the whole-number offsets of a Gaussian
    draw rounded to the nearest integer (a mean that is a whole number adds to it unchanged).

    ``P(k) = Φ((k + ½)/sd) − Φ((k − ½)/sd)`` on ``|k| ≤`` :data:`TAIL_SDS`·sd (beyond it the mass is
    below 10⁻¹⁸, under the 2⁻⁵³ resolution of a uniform draw), sampled with Walker's (1977) alias
    method from one uniform per draw (Vose's 1991 table construction).
    """

    #: Support half-width in SDs (the mass outside, 2·Φ(−9) ≈ 2·10⁻¹⁹, is below a uniform's resolution).
    TAIL_SDS = 9.0

    def __init__(self, sd: float) -> None:
        if not sd > 0 or not math.isfinite(sd):
            raise InputError(f"sd must be a positive number, got {sd!r}")
        from scipy.special import ndtr  # imported on use: scipy.special costs a metrics call ~0.07 s of CPU

        half = int(math.ceil(self.TAIL_SDS * sd))
        k = np.arange(-half, half + 1, dtype=np.float64)
        # Φ differences written as tails on each side of zero (no cancellation in the far tails)
        upper, lower = (k + 0.5) / sd, (k - 0.5) / sd
        p = np.where(k >= 0, ndtr(-lower) - ndtr(-upper), ndtr(upper) - ndtr(lower))
        self.prob, self.alias = _alias_table(p / p.sum())
        self.offsets = k

    def draw(self, shape: tuple[int, ...], rng: np.random.Generator, mean: float | np.ndarray = 0.0) -> np.ndarray:
        """Draws of ``shape`` as float64 from ``rng.random(shape)``: the offsets plus ``mean`` (a whole
        number, or an array of them broadcast against ``shape``, e.g. (n, 1, 2) per game and arm).

        Each uniform ``u`` picks column ``c = ⌊u·K⌋`` of the alias table and takes its offset where
        the fraction ``u·K − c`` is below the column's acceptance probability, its alias's otherwise."""
        x = rng.random(shape)
        x *= len(self.prob)
        column = x.astype(np.int64)
        x -= column
        pick = np.where(x < self.prob.take(column), column, self.alias.take(column))
        out = pick.astype(np.float64)
        out += self.offsets[0] + mean  # the offset of pick k is k − half, a whole number (exact)
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
