"""Gathering variable-length segments of a flat array in one pass (numba): the values of list
columns (:class:`cogtestbed.trials.Lists`, :class:`cogtestbed.trials.CodedLists`) without an
index array per value.  Imported by :mod:`cogtestbed.trials` only when a list column is built."""

from __future__ import annotations

import numpy as np
from numba import njit


def gather_segments(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``concatenate([source[s:s + n] for s, n in zip(starts, lengths)])``, row i at
    ``offsets[i]:offsets[i + 1]`` (``offsets``: 0, then the cumulative ``lengths``)."""
    source = np.ascontiguousarray(source).reshape(-1)
    out = np.empty(int(offsets[-1]), dtype=source.dtype)
    _gather(source, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(lengths, dtype=np.int64),
            np.ascontiguousarray(offsets, dtype=np.int64), out)
    return out


@njit(cache=True)
def _gather(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray,
            out: np.ndarray) -> None:  # pragma: no cover - numba
    for i in range(len(starts)):
        s, o = starts[i], offsets[i]
        for j in range(lengths[i]):
            out[o + j] = source[s + j]
