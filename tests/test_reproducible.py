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
    """The sampler's compiled logp/gradient and expansion graphs carry no fast-math flag (what makes
    cold- and warm-cache compilations compute the same bits), and strict_float leaves the global
    setting as it was."""
    from pytensor import config

    from cogtestbed.inference import hierarchical_sampling
    from cogtestbed.registry import get_experiment

    model = get_experiment("instrumental-learning").model("rw")
    pm_model = model.pymc_model(FITS.small_table("instrumental-learning", "rw", FITS.SUBJECTS, 1), True)
    before = config.numba__fastmath
    with strict_float():
        assert config.numba__fastmath is False
        compiled = hierarchical_sampling._nutpie_compiled(pm_model, model.name, True)
    assert config.numba__fastmath == before
    for fn in (compiled.logp_func, compiled.expand_func):
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
