"""Comparing what two processes computed: equal within a tolerance, never bit for bit.

The same numba kernel compiled in this process and loaded from numba's on-disk cache by another (a
CLI call, a pool or Dask worker) may round differently in the last bits, and so may one processor
against another (AVX2 against AVX-512: numpy and LLVM pick different instruction sequences). A
BFGS fit amplifies such a difference up to its stopping tolerance. Values that are deterministic by
construction (integers, choices, copies of seeded draws) are still compared exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

#: Objective values (a negative log-likelihood at its optimum): a few ulps of difference.
VALUE_RTOL = 1e-9
#: Fitted parameters and what is computed from them: the optimiser stops anywhere within its tolerance.
FIT_RTOL = 1e-6
#: Absolute floor for values near zero.
ATOL = 1e-12


def assert_frames_close(a: pd.DataFrame, b: pd.DataFrame, rtol: float = FIT_RTOL) -> None:
    """Same columns, index, dtypes and non-float values; floats equal within ``rtol``."""
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=rtol, atol=ATOL)


def assert_close(a: Any, b: Any, rtol: float = FIT_RTOL, where: str = "") -> None:
    """Nested dicts / lists of numbers, strings and None: the same structure, floats within ``rtol``
    (NaN equals NaN), everything else equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_close(a[key], b[key], rtol, f"{where}.{key}")
    elif isinstance(a, Sequence) and not isinstance(a, str) and isinstance(b, Sequence) and not isinstance(b, str):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, rtol, f"{where}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), f"{where}: {a!r} != {b!r}"
        same_nan = math.isnan(a) and math.isnan(b)
        assert same_nan or math.isclose(a, b, rel_tol=rtol, abs_tol=ATOL), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"
