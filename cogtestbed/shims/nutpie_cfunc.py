"""nutpie's compiled PyMC model with C wrappers numba caches on disk.

``nutpie.compile_pymc_model`` builds the model's log density (with its gradient) and its expansion as
PyTensor NUMBA functions, which PyTensor caches on disk, and wraps each in a ``numba.cfunc`` for nutpie's
sampler to call.  nutpie's wrappers close over objects of the process (its ``make_extraction_fn``), so numba
cannot cache them and every process compiles them again: 5–9 CPU-seconds a model shape, the bulk of a first
hierarchical fit's overhead.

:func:`native_model` builds the same model with wrappers numba can cache: each wrapper is written as source
for its model shape (:func:`logp_source`, :func:`expand_source`: the same signature, checks and return codes as
nutpie's) and compiled through PyTensor's own cache mechanism for generated source
(``pytensor.link.numba.cache.compile_numba_function_src`` with a ``cache_key``: PyTensor's numba cache
directory, found again by the key).  The key is the digest of PyTensor's key for the wrapped function (its
graph, constants and float mode) and of the wrapper's source (the dimension, the data's ranks and dtypes), so
another graph never loads this one's code.  A process that meets a shape compiled before on the machine loads
both wrappers in a few hundredths of a second; the first process of a shape compiles them once (about as long
as nutpie's own) and saves them.  The sampler, the functions, the initial points and the data layout are
nutpie's: the draws are nutpie's compiled model's (``tests/test_nutpie_cfunc.py``).

The wrappers read the data arrays from nutpie's ``user_data`` record (``nutpie.compile_pymc.make_user_data``:
each array's address, size and shape as 64-bit words), as nutpie's do; :func:`layout_problem` checks that
layout on every build, and where it, PyTensor's key or a data rank the wrappers do not handle is missing, the
caller compiles with nutpie (:func:`native_model` returns None).  No third-party function is replaced.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: The wrappers' C signatures: nutpie's (``_make_c_logp_func``, ``_make_c_expand_func``).
LOGP_SIGNATURE = types.int64(types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                             types.CPointer(types.double), types.voidptr)
EXPAND_SIGNATURE = types.int64(types.uint64, types.uint64, types.CPointer(types.double),
                               types.CPointer(types.double), types.voidptr)
#: The nutpie version whose wrappers and ``user_data`` layout these mirror (``locks/test.txt``, ``locks/demo.txt``;
#: another version is compiled by nutpie itself, :func:`problems`).  Its own constant, not ``nutpie_shim.LOCKED``:
#: ``nutpie_shim`` imports this module, so importing it back would be a cycle; ``tests/test_shims.py`` pins both.
LOCKED = "0.16.8"
#: Bumped whenever the wrappers' source template changes meaning (part of every cache key).
TEMPLATE_VERSION = 1


@intrinsic
def address_as_void_pointer(typingctx: Any, src: Any) -> Any:
    """An integer address as a ``void*`` (what nutpie's wrappers do with ``user_data``'s words)."""
    sig = types.voidptr(src)

    def codegen(cgctx: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return sig, codegen


class _NotCached(Exception):
    """Raised by :class:`_CacheOnly` where a wrapper is not in the disk cache."""


class _CacheOnly(numba.core.compiler.CompilerBase):
    """A numba pipeline that refuses to compile: ``numba.cfunc(..., cache=True, pipeline_class=_CacheOnly)``
    loads a cached wrapper or raises :class:`_NotCached`."""

    def define_pipelines(self) -> Any:
        raise _NotCached


@dataclasses.dataclass(frozen=True)
class ModelFunctions:
    """What ``nutpie.compile_pymc_model`` builds before its ``cfunc``s (``nutpie.compile_pymc._make_functions``):
    the dimension, the expansion's length, PyTensor's two functions, the initial-point function (locked for
    the chains' threads, as nutpie locks it), the stored variables' (names, slices, shapes), and every data
    array the functions read (a copy, by name, in the order of ``shared_vars``)."""

    n_dim: int
    n_expanded: int
    logp_fn: Any
    expand_fn: Any
    initial_point: Any
    shape_info: Any
    shared_data: dict[str, np.ndarray]
    shared_vars: dict[str, Any]


def model_functions(pm_model: Any) -> ModelFunctions:
    """``pm_model``'s functions as ``nutpie.compile_pymc_model(pm_model)`` builds them: the same graph, and the
    same initial points (support point, every free variable jittered)."""
    from nutpie.compile_pymc import _make_functions, _wrap_with_lock
    from pymc.initial_point import make_initial_point_fn

    start = make_initial_point_fn(model=pm_model, overrides=None, default_strategy="support_point",
                                  jitter_rvs=set(pm_model.free_RVs), return_transformed=True)
    n_dim, n_expanded, logp_fn, expand_fn, initial_point, shape_info = _make_functions(
        pm_model, mode="NUMBA", compute_grad=True, join_expanded=True, pymc_initial_point_fn=_wrap_with_lock(start))
    shared_data: dict[str, np.ndarray] = {}
    shared_vars: dict[str, Any] = {}
    for var in (*logp_fn.get_shared(), *expand_fn.get_shared()):
        shared_data[var.name] = np.array(var.get_value(), order="C", copy=True)
        shared_vars[var.name] = var
    return ModelFunctions(n_dim, n_expanded, logp_fn, expand_fn, initial_point, shape_info, shared_data,
                          shared_vars)


def layout_problem(user_data: np.ndarray, ranks: list[int]) -> str | None:
    """Why nutpie's ``user_data`` record is not the layout the wrappers read (None where it is): every array's
    address, then every size, then every shape, each a 64-bit word, in the order of ``ranks``."""
    n, words = len(ranks), 2 * len(ranks) + sum(ranks)
    shared = user_data.dtype.fields.get("shared") if user_data.dtype.fields else None
    if shared is None or user_data.dtype.itemsize != 8 * words:
        return "nutpie's user_data record is not the layout the cached wrappers read"
    sub: dict[str, Any] = dict(shared[0].fields or {})
    expected = {"data": 0, "size": 8 * n, "shape": 16 * n}
    for part, offset in expected.items():
        field = sub.get(part)
        if field is None or field[1] != offset or any(
                np.dtype(dt[0]).base.itemsize != 8 for dt in (field[0].fields or {}).values()):
            return "nutpie's user_data record is not the layout the cached wrappers read"
    return None


def _unpack(metas: list[tuple[int, str]], indent: str) -> list[str]:
    """Source lines reading each data array ``d{i}`` from ``user_data``'s words ``u`` (:func:`layout_problem`)."""
    n, off, lines = len(metas), 2 * len(metas), []
    for i, (ndim, dtype) in enumerate(metas):
        shape = "".join(f"int(u[{off + k}]), " for k in range(ndim))
        lines.append(f"{indent}d{i} = numba.carray(address_as_void_pointer(u[{i}]), int(u[{n + i}]), "
                     f"np.{dtype}).reshape(({shape}))")
        off += ndim
    return lines


def _prelude(n_dim: int, metas: list[tuple[int, str]]) -> list[str]:
    """The lines both wrappers open their ``try`` with: ``user_data``'s words ``u``, the data arrays ``d{i}``
    (:func:`_unpack`) and the point ``x``."""
    words = 2 * len(metas) + sum(m[0] for m in metas)
    return [f"        u = numba.carray(user_data_, ({max(words, 1)},), np.uint64)", *_unpack(metas, " " * 8),
            f"        x = numba.carray(x_, ({n_dim},))"]


def logp_source(n_dim: int, metas: list[tuple[int, str]], reads: list[int]) -> str:
    """The log-density wrapper's source: nutpie's ``logp_numba`` (its checks and return codes) reading the
    data arrays ``reads`` (indices into ``metas``: each array's rank and dtype name) from ``user_data``."""
    args = "".join(f", d{i}" for i in reads)
    body = [*_prelude(n_dim, metas), f"        out = numba.carray(out_, ({n_dim},))",
            "        logp = numba.carray(logp_, ())", f"        logp_val, grad = LOGP(x{args})",
            "        logp[()] = logp_val", "        out[...] = grad", "        if not np.all(np.isfinite(out)):",
            "            return 3", "        if not np.isfinite(logp_val):", "            return 4"]
    return "\n".join(["def cogtestbed_logp(dim, x_, out_, logp_, user_data_):", f"    if dim != {n_dim}:",
                      "        return -1", "    try:", *body, "    except Exception:", "        return 1",
                      "    return 0", ""])


def expand_source(n_dim: int, n_expanded: int, metas: list[tuple[int, str]], reads: list[int]) -> str:
    """The expansion wrapper's source: nutpie's ``expand_numba`` (its checks and return codes) reading the
    data arrays ``reads`` from ``user_data`` (:func:`logp_source`)."""
    args = "".join(f", d{i}" for i in reads)
    body = [*_prelude(n_dim, metas), f"        out = numba.carray(out_, ({n_expanded},))",
            f"        (values,) = EXPAND(x{args})", "        out[...] = values"]
    return "\n".join(["def cogtestbed_expand(dim, expanded, x_, out_, user_data_):", f"    if dim != {n_dim}:",
                      "        return -1", f"    if expanded != {n_expanded}:", "        return -1", "    try:",
                      *body, "    except Exception:", "        return -2", "    return 0", ""])


@dataclasses.dataclass(frozen=True)
class _Wrapper:
    """One wrapper to build: its generated source, the PyTensor function it calls (global ``name``), its
    cache key and C signature."""

    source: str
    function: str
    name: str
    callee: Any
    key: str
    signature: Any

    def build(self, compile: bool) -> Any:
        """The wrapper's ``numba.CFunc``: loaded from the disk cache, else compiled and saved (``compile``) or
        None."""
        from pytensor.link.numba.cache import compile_numba_function_src

        env = {"__name__": __name__, "numba": numba, "np": np, "address_as_void_pointer": address_as_void_pointer,
               self.name: self.callee}
        py_func = compile_numba_function_src(self.source, self.function, env, cache_key=self.key)
        if compile:
            return numba.cfunc(self.signature, cache=True)(py_func)
        try:
            return numba.cfunc(self.signature, cache=True, pipeline_class=_CacheOnly)(py_func)
        except _NotCached:
            return None


def _wrappers(funcs: ModelFunctions) -> list[_Wrapper] | None:
    """The two wrappers of ``funcs`` (None where one cannot be cached: PyTensor has no key for its function)."""
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

    order = list(funcs.shared_vars)
    metas = [(int(funcs.shared_vars[n].ndim), funcs.shared_data[n].dtype.name) for n in order]
    out = []
    for fn, name, kind in ((funcs.logp_fn, "LOGP", "logp"), (funcs.expand_fn, "EXPAND", "expand")):
        jit = fn.vm.jit_fn
        py_func = getattr(jit, "py_func", None)
        pytensor_key = CACHED_SRC_FUNCTIONS.get(py_func) if py_func is not None else None
        if pytensor_key is None:
            return None
        reads = [order.index(v.name) for v in fn.get_shared()]
        if kind == "logp":
            source, signature = logp_source(funcs.n_dim, metas, reads), LOGP_SIGNATURE
        else:
            source, signature = expand_source(funcs.n_dim, funcs.n_expanded, metas, reads), EXPAND_SIGNATURE
        digest = hashlib.sha256(f"{TEMPLATE_VERSION}\n{pytensor_key}\n{source}".encode()).hexdigest()
        out.append(_Wrapper(source, f"cogtestbed_{kind}", name, jit, f"cogtestbed_nutpie_{kind}_{digest}",
                            signature))
    return out


def native_model(pm_model: Any, funcs: ModelFunctions | None = None, compile: bool = True) -> Any:
    """nutpie's compiled model of ``pm_model`` (what ``nutpie.compile_pymc_model(pm_model)`` returns, the same
    draws) with wrappers from numba's disk cache (module docstring): loaded where a process compiled this shape
    before, else compiled and saved (``compile``) or None (``compile`` False: nothing is compiled).  None too
    where the wrappers cannot be cached (:func:`layout_problem`, :func:`_wrappers`): compile with nutpie.
    ``funcs``: the model's :func:`model_functions`, where already built."""
    from nutpie.compile_pymc import CompiledPyMCModel, _prepare_dims_and_coords, make_user_data

    funcs = funcs if funcs is not None else model_functions(pm_model)
    wrappers = _wrappers(funcs)
    user_data = make_user_data(funcs.shared_vars, funcs.shared_data)
    if wrappers is None or layout_problem(user_data, [v.ndim for v in funcs.shared_vars.values()]) is not None:
        return None
    built = []
    for wrapper in wrappers:  # a probe stops at the first wrapper not in the cache
        cfunc = wrapper.build(compile)
        if cfunc is None:
            return None
        built.append(cfunc)
    for value in funcs.shared_data.values():
        value.flags.writeable = False
    dims, coords = _prepare_dims_and_coords(pm_model, funcs.shape_info)
    return CompiledPyMCModel(
        _n_dim=funcs.n_dim, dims=dims, _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*funcs.shape_info, strict=True)},
        compiled_logp_func=built[0], compiled_expand_func=built[1], initial_point_func=funcs.initial_point,
        shared_data=funcs.shared_data, user_data=user_data, n_expanded=funcs.n_expanded,
        shape_info=funcs.shape_info, logp_func=funcs.logp_fn, expand_func=funcs.expand_fn)


def problems() -> list[str]:
    """What no longer holds of the nutpie and PyTensor internals :func:`native_model` relies on ([] where all
    does): the locked nutpie (:data:`LOCKED`), its ``_make_functions``,
    ``_wrap_with_lock``, ``_prepare_dims_and_coords``, ``make_user_data`` and ``CompiledPyMCModel`` (with its
    ``compiled_logp_func`` and ``user_data`` fields); PyTensor's ``compile_numba_function_src`` and
    ``CACHED_SRC_FUNCTIONS``."""
    import importlib

    import nutpie

    version = getattr(nutpie, "__version__", None)
    out = [] if version == LOCKED else [f"nutpie {version} is installed; the cached wrappers are for {LOCKED}"]
    compile_pymc: Any = importlib.import_module("nutpie.compile_pymc")
    out += [f"nutpie.compile_pymc has no {name}" for name in ("_make_functions", "_wrap_with_lock",
                                                              "_prepare_dims_and_coords", "make_user_data")
            if not callable(getattr(compile_pymc, name, None))]
    model_cls = getattr(compile_pymc, "CompiledPyMCModel", None)
    fields = {f.name for f in dataclasses.fields(model_cls)} if dataclasses.is_dataclass(model_cls) else set()
    out += [f"nutpie's CompiledPyMCModel has no {name} field" for name in
            ("compiled_logp_func", "compiled_expand_func", "user_data", "shared_data") if name not in fields]
    cache: Any = importlib.import_module("pytensor.link.numba.cache")
    out += [f"pytensor.link.numba.cache has no {name}" for name in ("compile_numba_function_src",
                                                                    "CACHED_SRC_FUNCTIONS")
            if not hasattr(cache, name)]
    return out


__all__ = ["EXPAND_SIGNATURE", "LOCKED", "LOGP_SIGNATURE", "ModelFunctions", "TEMPLATE_VERSION",
           "address_as_void_pointer", "expand_source", "layout_problem", "logp_source", "model_functions",
           "native_model", "problems"]
