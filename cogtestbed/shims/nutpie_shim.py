"""nutpie's internals the package relies on: its progress kinds off notebooks, the shapes its
compilation fixes, a compiled model's coordinates, and its sampler on PyTensor's functions called from
Python.

``nutpie.sample`` reports progress through a template callback only inside a notebook; on a terminal
it draws its own indicatif bar, and it has no public parameter for a callback there.
:func:`template_progress` makes the terminal's bar a template callback while a block runs, by
standing in for ``nutpie.sample._lib`` (the compiled extension the sampler builds its progress kind
from: ``_lib.ProgressType.indicatif(rate)`` becomes ``_lib.ProgressType.template_callback(rate,
template, cores, callback)``); the sampling itself is untouched.  :func:`stored_shapes`: the shapes
``nutpie.compile_pymc._compute_shapes`` fixes in a compilation (what a compiled model may be reused
for); :func:`with_coords`: a compiled model with other coordinates (its ``_coords`` field: ``with_data``
re-points the data but keeps the coordinates of the model it was compiled from).

:func:`python_model`: ``nutpie.compile_pymc_model`` builds the model's log density and
expansion as PyTensor NUMBA functions (``nutpie.compile_pymc._make_functions``; PyTensor caches their numba
code on disk, so a new process loads them in well under a second) and then wraps each in a ``numba.cfunc``
that numba cannot cache (it closes over dynamic globals): 5–9 CPU-seconds in every process
(:mod:`cogtestbed.shims.nutpie_cfunc` builds wrappers numba can cache, what a process meets once the shape
was compiled on the machine).  :func:`python_model` builds the same two functions the same way
(:func:`~cogtestbed.shims.nutpie_cfunc.model_functions`) and hands them to nutpie's public
``nutpie.compiled_pyfunc.from_pyfunc`` instead, which calls them from Python: no ``cfunc``, about 10 µs more
CPU a log-density call, chains serialised on the GIL.  Same graph, same initial points, same seeds: the
same draws as the compiled model (``tests/test_nutpie_python_path.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterator
from typing import Any

#: The nutpie version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "0.16.8"


@contextlib.contextmanager
def template_progress(template: str, cores: int, callback: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, nutpie's terminal progress bar is replaced by ``callback(formatted)``,
    called with ``template`` rendered (nutpie's template language) every progress interval."""
    module: Any = importlib.import_module("nutpie.sample")
    real = module._lib
    kinds = real.ProgressType

    class _Kinds:
        none = kinds.none
        template_callback = kinds.template_callback

        @staticmethod
        def indicatif(rate: int) -> Any:
            return kinds.template_callback(rate, template, cores, callback)

    class _Lib:
        ProgressType = _Kinds

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    module._lib = _Lib()
    try:
        yield
    finally:
        module._lib = real


def stored_shapes(pm_model: Any) -> dict[str, Any] | None:
    """The shapes nutpie's compilation computes and fixes for ``pm_model``'s stored variables (name → shape);
    None where the installed nutpie has no such function."""
    try:
        from nutpie.compile_pymc import _compute_shapes
    except ImportError:  # pragma: no cover - another nutpie
        return None
    return dict(_compute_shapes(pm_model))


def with_coords(compiled: Any, coords: dict[str, Any]) -> Any:
    """``compiled`` (a nutpie compiled PyMC model, a dataclass) with the coordinates ``coords``."""
    import dataclasses

    return dataclasses.replace(compiled, _coords=coords)


@dataclasses.dataclass(frozen=True)
class PythonModel:
    """:func:`python_model`'s result: nutpie's model (``model``, what ``nutpie.sample`` takes) and the two
    PyTensor functions it calls (``logp_func`` returns the log density and its gradient at a flat
    unconstrained point, ``expand_func`` every stored variable's value there)."""

    model: Any
    logp_func: Any
    expand_func: Any
    #: one log-density-and-gradient call at the model's initial point (seed 0)
    call_once: Any
    #: the log-density calls made so far (every chain's, the timing calls' too)
    calls: Any

    @functools.cached_property
    def logp_seconds(self) -> float:
        """Wall seconds of one log-density-and-gradient call at an initial point (the least of 3 after one
        untimed call), measured once: what a NUTS leapfrog step costs on this path."""
        import time

        self.call_once()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            self.call_once()
            best = min(best, time.perf_counter() - start)
        return best


def python_model(pm_model: Any, funcs: Any = None) -> PythonModel:
    """``pm_model`` for ``nutpie.sample`` without nutpie's ``numba.cfunc`` compilation (module docstring):
    the functions, initial points (support point, every free variable jittered), dimensions and coordinates
    ``nutpie.compile_pymc_model(pm_model)`` builds, called from Python through ``from_pyfunc``.  ``funcs``: the
    model's :func:`~cogtestbed.shims.nutpie_cfunc.model_functions`, where already built."""
    import numpy as np
    from nutpie.compile_pymc import _prepare_dims_and_coords
    from nutpie.compiled_pyfunc import from_pyfunc

    from cogtestbed.shims.nutpie_cfunc import model_functions

    funcs = funcs if funcs is not None else model_functions(pm_model)
    logp_fn, expand_fn, initial_point = funcs.logp_fn, funcs.expand_fn, funcs.initial_point
    names, slices, shapes = funcs.shape_info
    n_dim = funcs.n_dim
    logp_jit, expand_jit = logp_fn.vm.jit_fn, expand_fn.vm.jit_fn
    logp_shared = [v.name for v in logp_fn.get_shared()]
    expand_shared = [v.name for v in expand_fn.get_shared()]
    shared = {name: np.array(value, order="C", copy=True) for name, value in funcs.shared_data.items()}
    parts = [(name, part, tuple(shape)) for name, part, shape in zip(names, slices, shapes, strict=True)]

    counter = [0]  # an estimate's input: an increment lost to a thread switch does not matter

    def make_logp() -> Any:
        def logp(point: Any, /, **data: Any) -> tuple[float, Any]:  # a data variable may be named "point"
            counter[0] += 1
            value, grad = logp_jit(point, *[data[n] for n in logp_shared])
            return float(value), grad
        return logp

    def make_expand(_seed1: int, _seed2: int, _chain: int) -> Any:
        def expand(point: Any, /, **data: Any) -> dict[str, Any]:
            (values,) = expand_jit(point, *[data[n] for n in expand_shared])
            return {name: values[part].reshape(shape) for name, part, shape in parts}
        return expand

    dims, coords = _prepare_dims_and_coords(pm_model, (names, slices, shapes))
    # copies: nutpie names the dimensions of variables without any in the dict it is given, and this one is the
    # PyMC model's own (``named_vars_to_dims``), which must not change (its log-likelihood would then refuse)
    model = from_pyfunc(n_dim, make_logp, make_expand, [np.dtype("float64")] * len(parts),
                        [shape for _, _, shape in parts], [name for name, _, _ in parts], coords=dict(coords),
                        dims={k: tuple(v) for k, v in dims.items()},
                        shared_data=shared, make_initial_point_fn=initial_point)
    point, logp = initial_point(0), make_logp()
    return PythonModel(model, logp_fn, expand_fn, lambda: logp(point, **shared),
                       lambda: counter[0])


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed nutpie ([] where all
    does): the locked version, ``nutpie.sample._lib.ProgressType`` with ``none``, ``indicatif`` and
    ``template_callback``, and the sampler building its terminal bar from ``_lib.ProgressType.indicatif``."""
    import inspect

    import nutpie

    module: Any = importlib.import_module("nutpie.sample")
    version = getattr(nutpie, "__version__", None)
    out = [] if version == LOCKED else [f"nutpie {version} is installed; the shim is for {LOCKED}"]
    kinds = getattr(getattr(module, "_lib", None), "ProgressType", None)
    out += [f"nutpie.sample._lib.ProgressType has no {name}" for name in ("none", "indicatif", "template_callback")
            if not hasattr(kinds, name)]
    sampler = getattr(module, "_BackgroundSampler", None)
    source = inspect.getsource(sampler) if sampler is not None else ""
    if "_lib.ProgressType.indicatif(progress_rate)" not in source:
        out.append("nutpie's sampler no longer builds its terminal bar from _lib.ProgressType.indicatif")
    compile_pymc: Any = importlib.import_module("nutpie.compile_pymc")
    if not callable(getattr(compile_pymc, "_compute_shapes", None)):
        out.append("nutpie.compile_pymc has no _compute_shapes")
    import dataclasses

    out += [f"nutpie.compile_pymc has no {name}" for name in ("_make_functions", "_prepare_dims_and_coords",
                                                              "_wrap_with_lock")
            if not callable(getattr(compile_pymc, name, None))]
    model_cls = getattr(compile_pymc, "CompiledPyMCModel", None)
    if model_cls is None or "_coords" not in {f.name for f in dataclasses.fields(model_cls)}:
        out.append("nutpie's CompiledPyMCModel has no _coords field")
    return out


__all__ = ["LOCKED", "PythonModel", "problems", "python_model", "stored_shapes", "template_progress", "with_coords"]
