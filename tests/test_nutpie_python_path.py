"""nutpie's sampler on PyTensor's functions called from Python (issue 71 item 4): the same draws as the
natively compiled model, and the rule that chooses between the two (``hierarchical_sampling._nutpie_compiled``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cogtestbed.inference import hierarchical_sampling as hs
from cogtestbed.inference.hierarchical import fit_hierarchical
from cogtestbed.inference.reproducible import strict_float
from cogtestbed.inference.samplers import SamplingJob
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

pytest.importorskip("nutpie")

EXP = get_experiment("instrumental-learning")


def _trials(n: int = 4, seed: int = 0) -> pd.DataFrame:
    return simulate(EXP, "rw", n, seed, params={"alpha": np.full(n, 0.3), "beta": np.full(n, 4.0)})


def _job(pm_model: object, chains: int = 2, tune: int = 30, cores: int = 1) -> SamplingJob:
    return SamplingJob(pm_model, EXP.model("rw"), None, True, tune=tune, chains=chains, seed=1, cores=cores,
                       target_accept=0.9, progressbar=False)


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> dict:
    """An empty cache of compiled models for the test (the process's own is left as it was)."""
    cache: dict = {}
    monkeypatch.setattr(hs, "_COMPILED", cache)
    return cache


def test_the_python_path_draws_what_the_compiled_model_draws(fresh_cache: dict,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A seeded fit on the Python path and one on nutpie's compiled model (the rule forced each way) give
    the same draws and pointwise log-likelihood: the same PyTensor functions, initial points and seeds."""
    model, trials = EXP.model("rw"), _trials()
    monkeypatch.setattr(hs, "NATIVE_COMPILE_S", float("inf"))
    python = fit_hierarchical(model, trials, draws=40, tune=40, chains=2, seed=3, cores=1, warn=False)
    (entry,) = fresh_cache.values()
    assert entry.native is None and entry.rent > 0
    fresh_cache.clear()
    monkeypatch.setattr(hs, "NATIVE_COMPILE_S", 0.0)
    native = fit_hierarchical(model, trials, draws=40, tune=40, chains=2, seed=3, cores=1, warn=False)
    (entry,) = fresh_cache.values()
    assert entry.native is not None
    for group in ("posterior", "log_likelihood"):
        for name, values in native.idata[group].items():
            np.testing.assert_allclose(python.idata[group][name].values, values.values, rtol=0, atol=1e-9)


def test_a_shape_stays_on_the_python_path_until_its_estimated_extra_cost_passes_the_compile(
        fresh_cache: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ski-rental rule: each fit of a shape adds the Python path's estimated extra seconds (more on two
    threads, where the compiled model would run the chains in parallel); the fit that would take the sum
    past NATIVE_COMPILE_S compiles nutpie's model once, and every later fit of the shape uses it."""
    import nutpie
    from nutpie.compiled_pyfunc import PyFuncModel

    compiles: list[object] = []
    real = nutpie.compile_pymc_model
    monkeypatch.setattr(nutpie, "compile_pymc_model", lambda m: compiles.append(m) or real(m))
    pm_model = EXP.model("rw").pymc_model(_trials(), True)
    key = hs._compiled_key(pm_model, "rw", True)
    with strict_float():
        first = hs._nutpie_compiled(pm_model, key, _job(pm_model), 30)
    entry = fresh_cache[key]
    one = entry.rent
    calls = 2 * (30 + 30) * hs.STEPS_PER_DRAW
    assert 0 < one < 1.0 and isinstance(first, PyFuncModel) and not compiles
    assert one == pytest.approx(entry.python.logp_seconds() * calls * hs.PYTHON_CALL_OVERHEAD, rel=1.0)
    two_threads = hs._python_rent(entry.python, _job(pm_model, cores=2), 30)
    assert two_threads > 2 * one  # a native run would spread its chains over both threads
    monkeypatch.setattr(hs, "NATIVE_COMPILE_S", 2.5 * one)
    with strict_float():
        assert isinstance(hs._nutpie_compiled(pm_model, key, _job(pm_model), 30), PyFuncModel)
        assert not compiles and entry.rent > one
        native = hs._nutpie_compiled(pm_model, key, _job(pm_model), 30)  # the third would pass 2.5 fits
        assert compiles == [pm_model] and entry.native is native and not isinstance(native, PyFuncModel)
        again = hs._nutpie_compiled(pm_model, key, _job(pm_model, tune=10), 10)
    assert len(compiles) == 1 and not isinstance(again, PyFuncModel)


def test_a_long_run_compiles_at_once_and_no_job_means_the_compiled_model(fresh_cache: dict) -> None:
    """A run whose Python-path sampling alone would cost more than the compile is compiled on its first fit;
    a caller without a job (the reproducibility checks) gets the compiled model."""
    from nutpie.compiled_pyfunc import PyFuncModel

    pm_model = EXP.model("rw").pymc_model(_trials(), True)
    key = hs._compiled_key(pm_model, "rw", True)
    with strict_float():
        long = hs._nutpie_compiled(pm_model, key, _job(pm_model, chains=4, tune=10**6), 10**6)
    assert not isinstance(long, PyFuncModel) and fresh_cache[key].rent == 0.0
    fresh_cache.clear()
    with strict_float():
        assert not isinstance(hs._nutpie_compiled(pm_model, key), PyFuncModel)
