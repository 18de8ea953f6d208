"""Fixed costs: the BFGS drivers are compiled once per objective and cached on disk (a new
process loads them), and the columnar per-subject split equals pandas' groupby."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numba import njit
from numba.core.caching import NullCache
from tolerance import VALUE_RTOL

from cogtestbed.inference.base import subject_slices
from cogtestbed.inference.optim import bfgs_driver, mle_driver
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json
from cogtestbed.inference.optim import mle_driver
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate
exp = get_experiment("instrumental-learning")
model = exp.model("rw-pm")
fits = model.fit_mle(simulate(exp, "rw-pm", 2, 5, {}))
stats = mle_driver(model.kernel()).stats
print(json.dumps({"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values()),
                  "nll": fits["nll"].tolist()}))
"""


def test_a_new_process_loads_the_mle_driver_from_the_disk_cache() -> None:
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    fits = model.fit_mle(simulate(exp, "rw-pm", 2, 5, {}))  # compiles (or loads) the driver here
    # the child inherits the environment (NUMBA_CACHE_DIR, NUMBA_CPU_NAME...), so it looks in the same cache
    # for the same target as this process; only PYTHONPATH is set, to import this checkout
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["misses"] == 0 and out["hits"] >= 1
    # the cached driver computes the same fits, to the last bits (a kernel loaded from the disk cache may
    # round differently from one compiled here, e.g. on AVX-512)
    assert out["nll"] == pytest.approx(fits["nll"].tolist(), rel=VALUE_RTOL)


def _closure_objective(scale: float):  # type: ignore[no-untyped-def]
    @njit
    def objective(z, args):  # type: ignore[no-untyped-def]
        return scale * float(np.sum((z - args) ** 2)), 2.0 * scale * (z - args)

    return objective


def test_a_closure_objective_gets_its_own_uncached_driver() -> None:
    target = np.array([0.3, -1.2])
    starts = np.zeros((2, 2))
    for scale in (1.0, 3.0):  # two closures with the same name: never one shared cache entry
        driver = bfgs_driver(_closure_objective(scale))
        z, value, converged = driver(starts, target, 200, 1e-10, 1e-14, np.inf)
        assert converged and value < 1e-12
        np.testing.assert_allclose(z, target, atol=1e-6)
        assert isinstance(driver._cache, NullCache)
    assert bfgs_driver(_closure_objective(1.0)) is not bfgs_driver(_closure_objective(3.0))


def test_subject_slices_equal_groupby() -> None:
    exp = get_experiment("instrumental-learning")
    table = simulate(exp, "rw-pm", 6, 2, {})
    shuffled = table.sample(frac=1.0, random_state=1).reset_index(drop=True)
    shuffled["subject"] = shuffled["subject"].map({s: f"s{(7 * s) % 6}" for s in range(6)})
    shuffled.loc[shuffled.index[:5], "subject"] = None  # rows without a subject are dropped, as groupby does
    for frame in (table, shuffled):
        ordered, slices = subject_slices(frame)
        grouped = list(ordered.groupby("subject", sort=False))
        assert [k for k, _ in slices] == [k for k, _ in grouped]
        assert [type(k) for k, _ in slices] == [type(k) for k, _ in grouped]
        for (_, rows), (_, g) in zip(slices, grouped, strict=True):
            pd.testing.assert_frame_equal(ordered.iloc[rows], g)


def test_the_mle_driver_is_one_object_per_kernel() -> None:
    model = get_experiment("instrumental-learning").model("rw")
    assert mle_driver(model.kernel()) is mle_driver(get_experiment("instrumental-learning").model("rw-pm").kernel())


def test_per_subject_values_are_one_contiguous_float_array_each() -> None:
    """A repeated value, n values (taken as they are where already a contiguous float64 array), and any
    other shape refused with one message."""
    from cogtestbed.parameters import per_subject

    given = np.arange(4.0)
    assert per_subject(given, 4) is given
    for value, want in ((2.5, 2.5), (np.array(2.5), 2.5), (np.array([2.5]), 2.5), (2, 2.0)):
        out = per_subject(value, 4)
        assert out.dtype == np.float64 and out.flags.c_contiguous and out.tolist() == [want] * 4
    strided = per_subject(np.arange(8)[::2], 4)
    assert strided.flags.c_contiguous and strided.tolist() == [0.0, 2.0, 4.0, 6.0]
    for bad in (np.arange(3.0), np.ones((4, 1))):
        with pytest.raises(ValueError, match=r"one value or one per subject \(4\), got shape"):
            per_subject(bad, 4)


def test_validate_array_checks_one_value_as_it_checks_arrays() -> None:
    """A single value (checked without array passes) and arrays give the same values and the same message."""
    from cogtestbed.parameters import ParameterError

    parameters = get_experiment("horizon").agent("info-bonus").parameters
    single = parameters.validate_array({"bias": 2.5, "temperature_h1": 3})
    assert {k: float(v) for k, v in single.items()} == {**{k: float(v) for k, v in
                                                          parameters.validate_array({}).items()},
                                                       "bias": 2.5, "temperature_h1": 3.0}
    assert all(v.dtype == np.float64 and v.ndim == 0 for v in single.values())
    for bad in (float("nan"), -1.0, np.array([1.0, -1.0]), np.array(-1.0)):
        with pytest.raises(ParameterError, match=r"temperature_h1 must lie in \[0\.0, 200\.0\], got (nan|-1)$"):
            parameters.validate_array({"temperature_h1": bad})
