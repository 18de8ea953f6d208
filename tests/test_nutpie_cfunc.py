"""nutpie's compiled model with wrappers numba caches on disk (issue 71 item 4, ``cogtestbed.shims.nutpie_cfunc``):
the wrappers compute what nutpie's compute, a second process loads them instead of compiling, and
``hierarchical_sampling._nutpie_compiled`` takes them where they are cached."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cogtestbed.inference import hierarchical_sampling as hs
from cogtestbed.inference.reproducible import strict_float
from cogtestbed.inference.samplers import SamplingJob
from cogtestbed.registry import get_experiment

pytest.importorskip("nutpie")

ROOT = Path(__file__).resolve().parents[1]


def _small_model(n: int = 6, seed: int = 0):  # type: ignore[no-untyped-def]
    """A small regression whose data the wrappers read: two-, one- and zero-dimensional arrays (the last, the noise
    SD, as revealed belief's subject count).  Not a free noise SD: PyTensor 2.38.2's cache key of a graph with one
    (``exp`` of a Normal, a HalfNormal) differs between processes, so nothing would be found again."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    with pm.Model(coords={"k": range(2)}) as model:
        x = pm.Data("x", rng.normal(size=(n, 2)))
        group = pm.Data("group", rng.integers(0, 2, size=n).astype("int32"))
        y = pm.Data("y_obs", rng.normal(size=n))
        sigma = pm.Data("scale", 1.5 + seed)
        beta = pm.Normal("beta", 0.0, 1.0, dims="k")
        shift = pm.Normal("shift", 0.0, 1.0, shape=2)
        pm.Normal("y", (x * beta).sum(axis=1) + shift[group], sigma, observed=y, shape=y.shape)
    return model


def _call_logp(compiled, x: np.ndarray) -> tuple[int, float, np.ndarray]:  # type: ignore[no-untyped-def]
    """One call of a compiled model's C log-density wrapper: its return code, log density and gradient."""
    dbl = ctypes.POINTER(ctypes.c_double)
    x = np.ascontiguousarray(x, dtype=float)
    out, logp = np.zeros(compiled.n_dim), np.zeros(())
    code = compiled.compiled_logp_func.ctypes(x.size, x.ctypes.data_as(dbl), out.ctypes.data_as(dbl),
                                              logp.ctypes.data_as(dbl), ctypes.c_void_p(compiled.user_data.ctypes.data))
    return int(code), float(logp), out


def _call_expand(compiled, x: np.ndarray) -> tuple[int, np.ndarray]:  # type: ignore[no-untyped-def]
    dbl = ctypes.POINTER(ctypes.c_double)
    x = np.ascontiguousarray(x, dtype=float)
    out = np.zeros(compiled.n_expanded)
    user_data = ctypes.c_void_p(compiled.user_data.ctypes.data)
    code = compiled.compiled_expand_func.ctypes(x.size, compiled.n_expanded, x.ctypes.data_as(dbl),
                                                out.ctypes.data_as(dbl), user_data)
    return int(code), out


def test_the_cached_wrappers_compute_what_nutpies_compute() -> None:
    """At random points, with the model's data and with other data of another length (``with_data``), the
    wrappers' log density, gradient, expansion and return codes are nutpie's own wrappers' (to 1e-12: one may
    be loaded from the disk cache and the other compiled here)."""
    import nutpie

    from cogtestbed.shims.nutpie_cfunc import native_model

    model = _small_model()
    with strict_float():
        ours, theirs = native_model(model), nutpie.compile_pymc_model(model)
    assert ours is not None and ours.compiled_logp_func.__name__ == "cogtestbed_logp"
    rng = np.random.default_rng(3)
    other = _small_model(9, seed=5)
    data = {name: other[name].get_value() for name in ("x", "group", "y_obs", "scale")}
    for a, b in ((ours, theirs), (ours.with_data(**data), theirs.with_data(**data))):
        for _ in range(20):
            x = rng.normal(size=a.n_dim)
            code_a, logp_a, grad_a = _call_logp(a, x)
            code_b, logp_b, grad_b = _call_logp(b, x)
            assert code_a == code_b == 0
            np.testing.assert_allclose(logp_a, logp_b, rtol=1e-12)
            np.testing.assert_allclose(grad_a, grad_b, rtol=1e-12, atol=1e-12)
            ea, eb = _call_expand(a, x), _call_expand(b, x)
            assert ea[0] == eb[0] == 0
            np.testing.assert_allclose(ea[1], eb[1], rtol=1e-12)
    with_data = ours.with_data(**data)
    assert _call_logp(ours, np.zeros(ours.n_dim))[1] != pytest.approx(_call_logp(with_data, np.zeros(ours.n_dim))[1])
    bad = np.full(ours.n_dim, np.nan)
    assert _call_logp(ours, bad)[0] == _call_logp(theirs, bad)[0] != 0
    assert _call_logp(ours, np.zeros(ours.n_dim + 1))[0] == -1


@pytest.mark.slow
def test_a_second_process_loads_the_wrappers_instead_of_compiling(tmp_path: Path) -> None:
    """In a fresh PyTensor cache folder: the first process finds no cached wrappers (``compile=False``: None,
    nothing compiled), compiles them and samples; a second process loads both (numba counts one cache hit each)
    and samples the same draws (compared within 1e-12: one compiled, one loaded).  About 25 s; the default suite's
    check of the disk cache is in one process (the next test)."""
    script = textwrap.dedent("""
        import json, sys
        import numpy as np, nutpie
        sys.path.insert(0, sys.argv[1])
        from tests.test_nutpie_cfunc import _small_model
        from cogtestbed.inference.reproducible import strict_float
        from cogtestbed.shims.nutpie_cfunc import native_model
        model = _small_model()
        with strict_float():
            probe = native_model(model, compile=False)
            built = probe if probe is not None else native_model(model)
        trace = nutpie.sample(built, draws=30, tune=30, chains=1, cores=1, seed=2, progress_bar=False)
        hits = [built.compiled_logp_func._cache_hits, built.compiled_expand_func._cache_hits]
        beta = trace.posterior["beta"].values.ravel().tolist()
        print(json.dumps({"hit": probe is not None, "hits": hits, "beta": beta}))
    """)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'pytensor'}", "PYTHONPATH": str(ROOT)}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script, str(ROOT)], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert (runs[0]["hit"], runs[0]["hits"]) == (False, [0, 0])
    assert (runs[1]["hit"], runs[1]["hits"]) == (True, [1, 1])
    np.testing.assert_allclose(runs[1]["beta"], runs[0]["beta"], rtol=1e-12)


def test_nutpie_compiled_takes_the_cached_wrappers_and_builds_no_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shape whose wrappers are in the disk cache is sampled natively from its first fit in a process: no Python
    path built, no rent; a shape without them takes the Python path for a short fit, as before."""
    from nutpie.compile_pymc import CompiledPyMCModel

    from cogtestbed.shims.nutpie_cfunc import native_model
    from cogtestbed.simulation import simulate

    exp = get_experiment("instrumental-learning")
    trials = simulate(exp, "rw", 3, 0, params={"alpha": np.full(3, 0.3), "beta": np.full(3, 4.0)})
    pm_model = exp.model("rw").pymc_model(trials)
    with strict_float():
        assert native_model(pm_model) is not None  # compiled, or loaded: cached from here on either way
    job = SamplingJob(pm_model, exp.model("rw"), None, True, tune=30, chains=2, seed=1, cores=1, target_accept=0.9,
                      progressbar=False)
    cache: dict = {}
    monkeypatch.setattr(hs, "_COMPILED", cache)
    key = hs._nutpie_key(job)
    with strict_float():
        compiled = hs._nutpie_compiled(pm_model, key, job, 30)
    assert isinstance(compiled, CompiledPyMCModel) and compiled.compiled_logp_func._cache_hits == 1
    assert cache[key].python is None and cache[key].rent == 0.0
    cache.clear()
    from cogtestbed.shims import nutpie_cfunc

    monkeypatch.setattr(nutpie_cfunc, "native_model", lambda *a, compile=True, **k: None if not compile else 1 / 0)
    with strict_float():
        short = hs._nutpie_compiled(pm_model, key, job, 30)
    assert not isinstance(short, CompiledPyMCModel) and cache[key].python is not None


def test_the_layout_check_refuses_another_record() -> None:
    """The wrappers read nutpie's ``user_data`` words in one order; another record is refused (the caller then
    compiles with nutpie)."""
    from cogtestbed.shims.nutpie_cfunc import layout_problem

    good = np.zeros((), dtype=[("shared", [("data", [("a", np.uintp)]), ("size", [("a", np.uintp)]),
                                           ("shape", [("a", np.uint64, (2,))])])])
    assert layout_problem(good, [2]) is None
    swapped = np.zeros((), dtype=[("shared", [("size", [("a", np.uintp)]), ("data", [("a", np.uintp)]),
                                              ("shape", [("a", np.uint64, (2,))])])])
    assert layout_problem(swapped, [2]) is not None
    narrow = np.zeros((), dtype=[("shared", [("data", [("a", np.uintp)]), ("size", [("a", np.uintp)]),
                                             ("shape", [("a", np.uint32, (2,))])])])
    assert layout_problem(narrow, [2]) is not None


def test_a_model_pytensor_cannot_cache_is_compiled_by_nutpie(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lapse kernel has no source, so PyTensor gives its graph no cache key (``tests/test_reproducible.py``):
    no wrapper is loaded or compiled under a key that could be another graph's, and ``_native`` compiles with
    nutpie's ``compile_pymc_model``."""
    import nutpie

    from cogtestbed.inference.base import with_lapse
    from cogtestbed.shims.nutpie_cfunc import native_model
    from cogtestbed.simulation import simulate

    exp = get_experiment("instrumental-learning")
    trials = simulate(exp, "rw", 3, 0, params={"alpha": np.full(3, 0.3), "beta": np.full(3, 4.0)})
    pm_model = with_lapse(exp.model("rw")).pymc_model(trials, True)
    with strict_float():
        assert native_model(pm_model, compile=False) is None and native_model(pm_model) is None
        entry = hs._Compiled()
        assert hs._native(entry, pm_model, compile=False) is None
        monkeypatch.setattr(nutpie, "compile_pymc_model", lambda m: ("nutpie's", m))
        assert hs._native(entry, pm_model, compile=True) == ("nutpie's", pm_model)
