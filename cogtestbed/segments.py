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


def scatter_segments(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray,
                     out: np.ndarray) -> None:
    """The inverse of :func:`gather_segments`: ``out[starts[i]:starts[i] + lengths[i]]`` receives
    ``values[offsets[i]:offsets[i + 1]]`` (``out`` flat, written in place)."""
    _scatter(np.ascontiguousarray(values).reshape(-1), np.ascontiguousarray(starts, dtype=np.int64),
             np.ascontiguousarray(lengths, dtype=np.int64), np.ascontiguousarray(offsets, dtype=np.int64), out)


@njit(cache=True)
def _scatter(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray,
             out: np.ndarray) -> None:  # pragma: no cover - numba
    for i in range(len(starts)):
        s, o = starts[i], offsets[i]
        for j in range(lengths[i]):
            out[s + j] = values[o + j]
