"""Numba kernels run as plain Python, so that a small first run compiles nothing.

Compiling a simulation kernel after install costs 0.6–5 s of CPU; running the same kernel as the
Python it was written in costs less for a few thousand steps.  :func:`interpreted` turns an
``@njit`` dispatcher into that Python function (numba's ``py_func``) with every dispatcher it
names (a global or a closure cell, recursively) replaced by its own interpreted twin, so nothing it
calls compiles.  Python code that calls a kernel writes ``kernel(fn)(...)``: the dispatcher itself,
or inside :func:`interpreting` its interpreted twin.  Same operations in the same order, so the
same numbers wherever numba's compiled operation and the interpreted one agree bit for bit; the
simulation tests compare the tables of both across the matrix (``tests/test_auto_method.py``).

Transcendental numpy functions are where they may not agree: numba calls the C library
(``np.exp`` and ``math.exp`` compile to the same ``llvm.exp.f64``), while numpy's own ``np.exp`` may
take a SIMD routine on AVX-512 machines.  So an interpreted kernel sees ``np`` through
:data:`_LIBM_NUMPY`, whose elementwise transcendental functions call :mod:`math` (the C library)
element by element, whose exact names (constructors, types, IEEE-rounded operations) are numpy's, and
which refuses any other name.  Two operations the kernels must not use, because numba compiles them
otherwise than CPython runs them: a power with a constant exponent (numba multiplies; CPython calls
``pow``) and a float reduction (numba sums in order, numpy pairwise); the tests lint every kernel a
simulation reaches for both.
"""

from __future__ import annotations

import functools
import math
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np
from numba.core import config as numba_config
from numba.core.dispatcher import Dispatcher

F = TypeVar("F", bound=Callable[..., Any])

_INTERPRETING: ContextVar[bool] = ContextVar("cogtestbed_interpreting", default=False)

#: Whether interpreted kernels agree with compiled ones bit for bit here: not where numba uses Intel's
#: SVML (installed with ``icc_rt``), whose vectorised ``exp``/``log`` are not the C library's; there
#: ``method="auto"`` always compiles.
AGREES_WITH_COMPILED = not getattr(numba_config, "USING_SVML", False)


@contextmanager
def interpreting(on: bool = True) -> Iterator[None]:
    """Within the block (and this context only), :func:`kernel` returns interpreted kernels
    (where ``on``)."""
    token = _INTERPRETING.set(bool(on))
    try:
        yield
    finally:
        _INTERPRETING.reset(token)


def is_interpreting() -> bool:
    """Whether :func:`kernel` returns interpreted kernels here."""
    return _INTERPRETING.get()


def kernel(fn: F) -> F:
    """``fn`` (an ``@njit`` function), or inside :func:`interpreting` its interpreted twin (run
    with numpy's integer-overflow warning off: compiled, ``uint64`` arithmetic wraps silently)."""
    return _quiet(interpreted(fn)) if _INTERPRETING.get() else fn


@functools.cache
def _quiet(fn: F) -> F:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(over="ignore"):
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]


def _elementwise(scalar: Callable[[float], float], name: str) -> Callable[[Any], Any]:
    """numpy's ``name`` computed by ``scalar`` (a :mod:`math` function, the C library's), for a number
    or each element of an array; where :mod:`math` raises on a special value (log(0), exp(1000)),
    numpy's own special value (-inf, inf, nan: exact, the same as the C library's)."""
    special = getattr(np, name)

    def apply(x: Any) -> Any:
        if isinstance(x, np.ndarray | list | tuple) and np.ndim(x) > 0:
            arr = np.asarray(x, dtype=np.float64)
            return np.array([apply(v) for v in arr.ravel().tolist()], dtype=np.float64).reshape(arr.shape)
        try:
            return scalar(x)
        except (ValueError, OverflowError):
            with np.errstate(all="ignore"):
                return float(special(x))

    return apply


#: numpy's names an interpreted kernel may use as numpy's own: constructors, types, constants and
#: operations exact on every processor (IEEE-rounded or no arithmetic), so they agree with numba's.
_EXACT = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like", "arange",
          "array", "asarray", "ascontiguousarray", "float64", "float32", "int64", "int32", "int16", "int8",
          "uint64", "uint32", "uint8", "bool_", "intp", "nan", "inf", "pi", "e", "sqrt", "floor", "ceil",
          "trunc", "rint", "abs", "fabs", "isnan", "isinf", "isfinite", "minimum", "maximum", "argmax",
          "argmin", "sign", "copysign", "nextafter", "errstate")
#: numpy's name -> the C library's function (:mod:`math`), for the elementwise transcendentals.
_LIBM = {"exp": math.exp, "expm1": math.expm1, "log": math.log, "log1p": math.log1p, "log2": math.log2,
         "log10": math.log10, "sin": math.sin, "cos": math.cos, "tan": math.tan, "tanh": math.tanh,
         "sinh": math.sinh, "cosh": math.cosh, "arcsin": math.asin, "arccos": math.acos, "arctan": math.atan}


def _unvetted(name: str) -> Any:
    raise AttributeError(
        f"np.{name} is not vetted for interpreted kernels (cogtestbed/interpreted.py): numpy's may differ "
        "from numba's compiled one (a reduction's order, a SIMD routine); add it to _EXACT or _LIBM if "
        "it agrees bit for bit, else compute it another way")


#: numpy as an interpreted kernel sees it: the vetted exact names, the C library's transcendentals,
#: and an error for anything else (fails closed: a kernel using an unvetted name fails the matrix test).
_LIBM_NUMPY = types.ModuleType("numpy_libm", "numpy with the C library's elementwise transcendentals")
_LIBM_NUMPY.__dict__.update({name: getattr(np, name) for name in _EXACT})
_LIBM_NUMPY.__dict__.update({name: _elementwise(f, name) for name, f in _LIBM.items()})
_LIBM_NUMPY.__getattr__ = _unvetted  # type: ignore[method-assign]


def interpreted(fn: F) -> F:
    """The plain-Python twin of the ``@njit`` function ``fn`` (``fn`` itself if not one), built once
    (under a lock: a twin is complete before any thread calls it)."""
    if not isinstance(fn, Dispatcher):
        return fn
    twin = _TWINS.get(fn)
    if twin is None:
        with _BUILDING:
            twin = _TWINS.get(fn) or _build_twin(fn)
    return twin  # type: ignore[return-value]


_TWINS: dict[Any, Callable[..., Any]] = {}
_BUILDING = threading.RLock()


def _build_twin(fn: Any) -> Callable[..., Any]:
    """Build ``fn``'s twin and the twins of the dispatchers it names (holding :data:`_BUILDING`)."""
    py = fn.py_func
    namespace = dict(py.__globals__)
    twin = types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__,
                              _twin_closure(py.__closure__))
    twin.__kwdefaults__ = py.__kwdefaults__
    twin.__qualname__ = py.__qualname__
    _IN_PROGRESS[fn] = twin  # a kernel that names itself (or a cycle) gets this twin
    try:
        for name in _global_names(py.__code__):
            value = namespace.get(name)
            if isinstance(value, Dispatcher):
                namespace[name] = _IN_PROGRESS.get(value) or interpreted(value)
            elif value is np:
                namespace[name] = _LIBM_NUMPY
    finally:
        del _IN_PROGRESS[fn]
    _TWINS[fn] = twin
    return twin


_IN_PROGRESS: dict[Any, Callable[..., Any]] = {}


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object (and the functions defined inside it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _twin_closure(cells: tuple[types.CellType, ...] | None) -> tuple[types.CellType, ...] | None:
    """Closure cells with each dispatcher replaced by its interpreted twin."""
    if cells is None:
        return None
    return tuple(types.CellType(interpreted(c.cell_contents) if isinstance(c.cell_contents, Dispatcher)
                                else c.cell_contents) for c in cells)
