"""A float :class:`gymnasium.spaces.Box` bounded on every side whose ``sample`` is one uniform draw.

gymnasium's ``Box.sample`` classifies every coordinate (unbounded, bounded on one side, both) on each
call; a dry run that plays thousands of steps of a ``Dict`` of such boxes spent most of its time there.
:class:`BoundedBox` draws the same numbers from the same generator (the same values, the same stream):
``low + (high - low) · U`` in the coordinates' order, as ``Box.sample``'s ``uniform(low, high)`` does for a box
bounded everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from cogtestbed.errors import InputError


class BoundedBox(spaces.Box):
    """A float ``Box`` with finite bounds on every coordinate; ``sample`` as ``Box.sample``, faster."""

    def __init__(self, low: float, high: float, shape: tuple[int, ...], dtype: Any = np.float64) -> None:
        if not (np.isfinite(low) and np.isfinite(high)) or np.dtype(dtype).kind != "f":
            raise InputError("BoundedBox takes finite bounds and a float dtype")
        super().__init__(low, high, shape=shape, dtype=dtype)
        self._low64, self._span = self.low.astype(np.float64), self.high.astype(np.float64) - self.low

    def sample(self, mask: None = None, probability: None = None) -> np.ndarray:
        if mask is not None or probability is not None:
            return super().sample(mask, probability)
        # what Generator.uniform computes per coordinate: low + (high - low) * next_double
        return np.asarray(self._low64 + self._span * self.np_random.random(self.shape), dtype=self.dtype)
