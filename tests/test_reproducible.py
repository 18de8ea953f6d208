"""A seeded fit gives the same draws in every process on one machine and lock (issue 50): a
hierarchical fit's draws and sampler statistics and an MLE fit's table, bit for bit, in fresh
processes under cold and warm compilation caches, a CPU-loading process beside them, one CPU and
another ``PYTHONHASHSEED`` (:mod:`cogtestbed.inference.reproducible`;
``benchmarks/studies/reproducible_fits.py`` runs the same checks by hand).

The cause was PyTensor's numba fast-math: the first compilation of a model (cold cache) and every
later one (warm) ran different machine code, so the first fit on a machine gave other draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from study_scripts import load_study

from cogtestbed.inference.reproducible import draws_digest, strict_float, table_digest

FITS = load_study("reproducible_fits")


def test_every_numba_function_of_a_compiled_model_is_strict() -> None:
    """The sampler's compiled logp/gradient and expansion graphs (nutpie's compiled model's and the Python
    path's) carry no fast-math flag (what makes
    cold- and warm-cache compilations compute the same bits), and strict_float leaves the global
    setting as it was."""
    from pytensor import config

    from cogtestbed.inference import hierarchical_sampling
    from cogtestbed.registry import get_experiment
    from cogtestbed.shims import nutpie_shim

    model = get_experiment("instrumental-learning").model("rw")
    pm_model = model.pymc_model(FITS.small_table("instrumental-learning", "rw", FITS.SUBJECTS, 1), True)
    before = config.numba__fastmath
    with strict_float():
        assert config.numba__fastmath is False
        compiled = hierarchical_sampling._nutpie_compiled(
            pm_model, hierarchical_sampling._compiled_key(pm_model, model.name, True))
    with strict_float():  # the Python path's functions too (issue 71 item 4)
        python = nutpie_shim.python_model(pm_model)
    assert config.numba__fastmath == before
    for fn in (compiled.logp_func, compiled.expand_func, python.logp_func, python.expand_func):
        assert fn.vm.jit_fn.targetoptions["fastmath"] is False


def test_a_lapse_kernel_compiles_uncached_and_a_kernel_key_follows_the_sources() -> None:
    """A lapse kernel (made by exec, no source) gets no PyTensor cache key instead of an OSError; a
    kernel's key carries the package's sources digest (an edited helper it inlines selects a new
    cache entry, never a stale compiled likelihood)."""
    from cogtestbed.inference.base import lapse_kernel
    from cogtestbed.inference.hierarchical_op import _kernel_cache_key
    from cogtestbed.inference.instrumental import rwpm_pointwise_kernel
    from cogtestbed.inference.optim import _sources_digest

    assert _kernel_cache_key(lapse_kernel(rwpm_pointwise_kernel, 3)) is None
    key = _kernel_cache_key(rwpm_pointwise_kernel)
    assert key is not None and "rwpm_pointwise_kernel" in key
    import hashlib

    ident = (f"cogtestbed.inference.instrumental.rwpm_pointwise_kernel:"
             f"{_sources_digest('cogtestbed.inference.instrumental')}")
    assert key.endswith(hashlib.sha256(ident.encode()).hexdigest()[:12])


def test_digests_see_one_bit_and_ignore_timings() -> None:
    import arviz as az

    draws = np.random.default_rng(0).normal(size=(2, 5))
    stats = {"step_size": np.ones((2, 5)), "process_time_diff": np.random.default_rng(1).random((2, 5))}
    a = az.from_dict(posterior={"x": draws}, sample_stats=stats)
    b = az.from_dict(posterior={"x": draws.copy()}, sample_stats={**stats, "process_time_diff": np.zeros((2, 5))})
    flipped = draws.copy()
    flipped[1, 3] = np.nextafter(flipped[1, 3], np.inf)
    c = az.from_dict(posterior={"x": flipped}, sample_stats=stats)
    assert draws_digest(a) == draws_digest(b) != draws_digest(c)
    table = pd.DataFrame({"subject": ["a", "b"], "alpha": [0.1, 0.2]})
    other = table.assign(alpha=[0.1, np.nextafter(0.2, 1.0)])
    assert table_digest(table) == table_digest(table.copy()) != table_digest(other)


def test_a_seeded_fit_gives_the_same_draws_in_a_fresh_process(tmp_path: Path) -> None:
    """This process's fits (whatever its caches and the fits before them) against a fresh process
    pinned to one CPU, beside a CPU-bound process, with another PYTHONHASHSEED and another fit of
    the model before the one compared: the same hierarchical draws and MLE table, bit for bit.
    (Cold against warm caches, for every family's models: the slow test below.)"""
    here = {row["method"]: row["digest"] for row in
            (FITS.fit_once("instrumental-learning", "rw", method) for method in ("hierarchical", "mle"))}
    rows = FITS.run_condition("instrumental-learning", "rw", ("hierarchical", "mle"),
                              "load+one-cpu+hashseed+prior", tmp_path, cold="inherit")
    assert {row["method"]: row["digest"] for row in rows} == here


@pytest.mark.slow
@pytest.mark.parametrize(("experiment", "model"), FITS.every_model())
def test_cold_and_warm_caches_give_the_same_draws(experiment: str, model: str) -> None:
    """Every family's hierarchical model and MLE: a fresh process with empty numba and PyTensor numba
    caches (compiling everything), then a fresh process on the caches it filled, pinned to one CPU,
    beside a CPU-bound process, with another PYTHONHASHSEED and a fit before the one compared."""
    rows = FITS.check(experiment, model, ("hierarchical", "mle"), ("cold", "load+one-cpu+hashseed+prior"),
                      cold="numba")
    for method in ("hierarchical", "mle"):
        digests = [row["digest"] for row in rows if row["method"] == method]
        assert len(digests) == 2 and digests[0] == digests[1], (method, rows)


def test_numba_ids_are_drawn_at_random_and_pytensor_caches_them_apart() -> None:
    """After :func:`unique_numba_symbols` (which ``strict_float`` calls) numba numbers the functions it
    compiles with random 128-bit ids, not 1, 2, 3, …, and PyTensor's numba cache is the folder of its own."""
    from numba.core.bytecode import FunctionIdentity
    from pytensor.link.numba import cache

    from cogtestbed.inference.reproducible import UNIQUE_CACHE, unique_numba_symbols

    with strict_float():
        pass
    unique_numba_symbols()  # a second call changes nothing
    ids = [next(FunctionIdentity._unique_ids) for _ in range(3)]
    assert len(set(ids)) == 3 and max(ids) > 2**64 and sorted(ids) != list(range(ids[0], ids[0] + 3))
    assert cache.NUMBA_CACHE_PATH.name == UNIQUE_CACHE and cache.NUMBA_CACHE_PATH.is_dir()


#: One process's fits for the cache-collision test: each compiles the models named on its command line,
#: then prints the return code and log density of nutpie's compiled C function at 0 and PyTensor's.
_COMPILE_AND_CALL = """
import ctypes, sys
import numpy as np, nutpie
sys.path.insert(0, {tests!r})
from test_hierarchical import EXP, _trials
from cogtestbed.inference.reproducible import strict_float
from cogtestbed.shims.nutpie_cfunc import native_model
for arg in sys.argv[2:]:
    name, n = arg.split(":")
    with strict_float():
        pm_model = EXP.model(name).pymc_model(_trials(int(n), 1), True)
        compiled = native_model(pm_model) if sys.argv[1] == "cached" else nutpie.compile_pymc_model(pm_model)
    x, grad, logp = np.zeros(compiled.n_dim), np.zeros(compiled.n_dim), np.zeros(())
    dbl = ctypes.POINTER(ctypes.c_double)
    rc = compiled.compiled_logp_func.ctypes(compiled.n_dim, x.ctypes.data_as(dbl), grad.ctypes.data_as(dbl),
                                            logp.ctypes.data_as(dbl), ctypes.c_void_p(compiled.user_data.ctypes.data))
    print(arg, rc, repr(float(logp)), repr(float(compiled.logp_func(x)[0])))
"""


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["nutpie", "cached"])
def test_models_cached_by_two_processes_run_their_own_graphs_in_a_third(tmp_path: Path, builder: str) -> None:
    """Two fresh processes each compile another model first (with numba's counted ids both graphs were
    ``numba_funcified_fgraph`` number 27), and a third, loading both from the PyTensor cache they filled,
    runs each model's own log density in nutpie's C function: return code 0 and PyTensor's value (before
    :func:`unique_numba_symbols`, RW with 5 subjects ran RW±'s graph: error code 1, "All initialization
    points failed" in a fit).  ``cached``: the C wrappers themselves come from the disk cache in the third
    (:func:`cogtestbed.shims.nutpie_cfunc.native_model`; each is named ``cogtestbed_logp`` whatever the model)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "compile_and_call.py"
    script.write_text(_COMPILE_AND_CALL.format(tests=str(root / "tests")))
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'pytensor'}",
           "PYTHONPATH": str(root)}

    def run(*models: str) -> list[list[str]]:
        out = subprocess.run([sys.executable, str(script), builder, *models], env=env, capture_output=True, text=True,
                             check=True, timeout=900).stdout
        return [line.split() for line in out.splitlines() if line.split()[:1] and ":" in line.split()[0]]

    run("rw-pm:8")
    run("rw:5")
    rows = run("rw-pm:8", "rw:5")
    assert [row[0] for row in rows] == ["rw-pm:8", "rw:5"]
    for _, rc, c_logp, py_logp in rows:
        assert rc == "0" and float(c_logp) == float(py_logp), rows


@pytest.mark.slow
def test_the_pages_digest_example_converges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/reproducibility.md's example (a seeded hierarchical fit and its digests, run by ``make test-docs``)
    passes the fit's own checks: with 200 draws a chain it printed the package's "do not trust this posterior"
    (R-hat 1.025); a warning is an error here.  About 30 s on 2 cores."""
    import warnings

    from doc_blocks import blocks

    from cogtestbed.inference.hierarchical_diagnostics import ConvergenceWarning

    page = Path(__file__).resolve().parents[1] / "docs" / "reproducibility.md"
    (example,) = [b for b in blocks(page, ("python",)) if "draws_digest(post)" in b.source]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc__"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        exec(compile(example.source, example.id, "exec"), namespace)  # noqa: S102 - the page's own example
    diagnostics = namespace["post"].diagnostics  # type: ignore[attr-defined]
    assert diagnostics.problems == [] and diagnostics.max_rhat <= 1.01
