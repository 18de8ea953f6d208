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
def compiles(monkeypatch: pytest.MonkeyPatch) -> list:
    """A machine whose disk cache has no compiled wrappers (``nutpie_cfunc.native_model`` finds none: what a
    shape meets the first time, ``tests/test_nutpie_cfunc.py``); the models compiled are listed."""
    from cogtestbed.shims import nutpie_cfunc

    made: list = []
    real = nutpie_cfunc.native_model

    def native_model(pm_model: object, funcs: object = None, compile: bool = True) -> object:
        return (made.append(pm_model) or real(pm_model, funcs, compile=True)) if compile else None

    monkeypatch.setattr(nutpie_cfunc, "native_model", native_model)
    return made


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch, compiles: list) -> dict:
    """An empty cache of compiled models for the test (the process's own is left as it was), on a machine
    that never compiled the shape (:func:`compiles`)."""
    cache: dict = {}
    monkeypatch.setattr(hs, "_COMPILED", cache)
    return cache


def test_the_python_path_draws_what_the_compiled_model_draws(fresh_cache: dict,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A seeded fit on the Python path and one on nutpie's compiled model (the rule forced each way) give
    the same draws and pointwise log-likelihood: the same PyTensor functions, initial points and seeds."""
    model, trials = EXP.model("rw"), _trials()
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", float("inf"))
    python = fit_hierarchical(model, trials, draws=40, tune=40, chains=2, seed=3, cores=1, warn=False)
    (entry,) = fresh_cache.values()
    assert entry.native is None and entry.rent > 0
    fresh_cache.clear()
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", 0.0)
    native = fit_hierarchical(model, trials, draws=40, tune=40, chains=2, seed=3, cores=1, warn=False)
    (entry,) = fresh_cache.values()
    assert entry.native is not None and entry.python is None  # estimated past the limit: not even built
    for group in ("posterior", "log_likelihood"):
        for name, values in native.idata[group].items():
            np.testing.assert_allclose(python.idata[group][name].values, values.values, rtol=0, atol=1e-9)


def test_a_shape_stays_on_the_python_path_until_its_extra_cost_passes_the_compile(
        fresh_cache: dict, compiles: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ski-rental rule: a fit takes the Python path while the shape's rent so far (each run's counted
    steps at PYTHON_CALL_S, plus the chains' share a native run would spread over two threads) and the
    next run's estimate stay within PYTHON_RENT_LIMIT_S; the fit that would pass it compiles nutpie's model
    once, and every later fit of the shape uses it."""
    model, trials = EXP.model("rw"), _trials()
    fit_hierarchical(model, trials, draws=30, tune=30, chains=2, seed=1, cores=1, warn=False, log_likelihood=False)
    (entry,) = fresh_cache.values()
    steps = entry.python.calls()
    assert not compiles and entry.native is None and steps > 2 * 60  # at least a step a draw, timing calls too
    assert entry.rent == pytest.approx(steps * hs.PYTHON_CALL_S, rel=0.2)  # one thread: the calls' extra alone
    job = _job(model.pymc_model(trials, True))
    two_threads = hs._python_rent(entry.python, _job(job.pm_model, cores=2), 1000)
    assert two_threads > hs._python_rent(entry.python, job, 1000) > 0  # two threads add the chains' share
    estimate = 2 * (30 + 30) * hs.STEPS_PER_DRAW * hs.PYTHON_CALL_S  # one thread: no timing in it
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", entry.rent + estimate)
    fit_hierarchical(model, trials, draws=30, tune=30, chains=2, seed=2, cores=1, warn=False, log_likelihood=False)
    assert not compiles and entry.native is None and entry.rent > steps * hs.PYTHON_CALL_S  # just fitted: rented
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", entry.rent + estimate * 0.99)
    fit_hierarchical(model, trials, draws=30, tune=30, chains=2, seed=3, cores=1, warn=False, log_likelihood=False)
    assert len(compiles) == 1 and entry.native is not None  # the next would pass it: compiled once
    rent = entry.rent
    fit_hierarchical(model, trials, draws=30, tune=30, chains=2, seed=4, cores=1, warn=False, log_likelihood=False)
    assert len(compiles) == 1 and entry.rent == rent


def test_a_long_run_compiles_at_once_and_no_job_means_the_compiled_model(fresh_cache: dict) -> None:
    """A run whose estimated extra steps alone pass the limit (the NumPyro benchmark's 4 × (500 + 1000) on one
    thread: 384,000 steps at 10 µs) is compiled on its first fit without building the Python path; a caller
    without a job (the reproducibility checks) gets the compiled model."""
    from nutpie.compiled_pyfunc import PyFuncModel

    pm_model = EXP.model("rw").pymc_model(_trials(), True)
    key = hs._compiled_key(pm_model, "rw", True)
    with strict_float():
        long = hs._nutpie_compiled(pm_model, key, _job(pm_model, chains=4, tune=500), 1000)
    assert not isinstance(long, PyFuncModel) and fresh_cache[key].python is None
    fresh_cache.clear()
    with strict_float():
        assert not isinstance(hs._nutpie_compiled(pm_model, key), PyFuncModel)


def test_the_python_path_leaves_the_model_as_it_was_and_takes_any_data_name() -> None:
    """Building the Python path changes nothing of the PyMC model (nutpie names the dimensions of variables that
    have none in the dict it is given: on the model's own, the model's log-likelihood then refused a fit of the
    collider), and a data variable may have any name, ``x`` and ``point`` included (revealed belief's is ``x``)."""
    import nutpie
    import pymc as pm

    from cogtestbed.shims.nutpie_shim import python_model

    with pm.Model(coords={"obs": range(4)}) as model:
        x = pm.Data("x", np.arange(4.0), dims="obs")
        point = pm.Data("point", np.ones(4), dims="obs")
        mu = pm.Normal("mu", shape=2)  # no dims: nutpie would name one
        pm.Normal("y", mu[0] + mu[1] * x + point, 1.0, observed=np.array([1.0, 2.0, 2.5, 4.0]), dims="obs")
    dims = {k: tuple(v) for k, v in model.named_vars_to_dims.items()}
    with strict_float():
        built = python_model(model)
    assert {k: tuple(v) for k, v in model.named_vars_to_dims.items()} == dims
    trace = nutpie.sample(built.model, draws=20, tune=20, chains=1, cores=1, seed=0, progress_bar=False)
    assert trace.posterior["mu"].shape == (1, 20, 2) and built.calls() > 40
    with model:
        pm.compute_log_likelihood(trace, progressbar=False)
    assert trace.log_likelihood["y"].shape == (1, 20, 4)


def test_a_shape_compiled_at_a_later_fit_samples_that_fits_data(fresh_cache: dict,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled model is built from the functions of the shape's first model in the process (built once for
    both paths), whose data are the first fit's: a shape compiled at a later fit samples that fit's data (the same
    draws as the same data compiled at once in a fresh cache), not the first fit's."""
    model = EXP.model("rw")
    first, second = _trials(seed=0), _trials(seed=5)
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", float("inf"))
    fit_hierarchical(model, first, draws=30, tune=30, chains=2, seed=1, cores=1, warn=False, log_likelihood=False)
    (entry,) = fresh_cache.values()
    assert entry.native is None and entry.python is not None
    monkeypatch.setattr(hs, "PYTHON_RENT_LIMIT_S", 0.0)
    later = fit_hierarchical(model, second, draws=30, tune=30, chains=2, seed=2, cores=1, warn=False,
                             log_likelihood=False)
    assert entry.native is not None  # compiled at this fit
    fresh_cache.clear()
    alone = fit_hierarchical(model, second, draws=30, tune=30, chains=2, seed=2, cores=1, warn=False,
                             log_likelihood=False)
    for name, values in alone.idata.posterior.items():
        np.testing.assert_allclose(later.idata.posterior[name].values, values.values, rtol=0, atol=1e-9)
