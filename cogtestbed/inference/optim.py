"""A small BFGS minimiser compiled with numba, for per-subject maximum likelihood.

scipy's L-BFGS-B costs tens of microseconds of Python overhead per iteration, which dominates
when one likelihood evaluation of a 96-trial subject takes about a microsecond.  This module runs
the whole multi-start search inside numba: the objective is any ``@njit`` function
``fun(z, args) -> (value, gradient)`` on an unbounded *search* scale, and :func:`bfgs_driver`
compiles the search for that objective once, cached on disk across processes.  Search-scale
maps (:func:`bounded_from_search`, :func:`positive_from_search`):

* a parameter in [lo, hi] is ``lo + (hi − lo)·(1 + sin z)/2``.  Unlike the logit, this reaches
  both bounds at finite z, where the optimum is an ordinary stationary point, so optima *on* a
  bound (common: α⁺ = 1, α⁻ = 0) are found instead of being approached with a vanishing
  gradient;
* a parameter in [lo, ∞) (or a huge upper bound) is ``lo + exp z``.

Algorithm: BFGS with the inverse-Hessian update (Nocedal & Wright 2006, eq. 6.17) and a
backtracking Armijo line search (c₁ = 1e-4, eq. 3.6a); the inverse Hessian is reset to the
identity whenever the curvature condition yᵀs > 0 fails or the direction is not a descent
direction.  Convergence: ‖∇f‖∞ < ``gtol`` or a relative decrease below ``ftol``.  An optional
``z_bound`` keeps every coordinate in [−z_bound, z_bound] after each step (for objectives whose
search map, e.g. a sigmoid, is numerically flat far out).

This is the package's only optimiser: every per-subject MLE (through :func:`mle_driver` and
:func:`search_objective`, the chain rule from a model's pointwise kernel to the search scale) and
the collider's least-squares CBN fit run on it.

Compilation is cached on disk (numba's ``cache=True``, in ``__pycache__`` next to this file, or
under ``NUMBA_CACHE_DIR`` / numba's user-wide cache directory where the package is read-only):
the first fit with a kernel compiles its driver (seconds), every later process loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

ARMIJO_C1 = 1e-4
MAX_BACKTRACKS = 50
#: Default stopping rule of :func:`bfgs_driver`'s drivers: iterations, ‖∇f‖∞ and relative decrease.
MAX_ITER, GTOL, FTOL = 200, 1e-6, 1e-12
#: Search-map codes of :func:`natural_from_search` (see :meth:`CognitiveModel.search_codes`).
SINE, EXP, IDENTITY = 0, 1, 2


@njit(cache=True, inline="always")
def bounded_from_search(z: float, lo: float, hi: float) -> tuple[float, float]:
    """(value, d value / dz) of ``lo + (hi − lo)·(1 + sin z)/2``."""
    half = 0.5 * (hi - lo)
    return lo + half * (1.0 + np.sin(z)), half * np.cos(z)


@njit(cache=True, inline="always")
def positive_from_search(z: float, lo: float, cap: float) -> tuple[float, float]:
    """(value, d value / dz) of ``lo + exp z``, capped at ``cap`` (zero slope beyond)."""
    e = np.exp(z)
    if lo + e >= cap:
        return cap, 0.0
    return lo + e, e


@njit(cache=True, inline="always")
def natural_from_search(code: int, z: float, lo: float, hi: float) -> tuple[float, float]:
    """(natural value, d value / dz) of one parameter: ``code`` :data:`SINE` (bounded, sine map),
    :data:`EXP` (``lo + exp z`` capped at ``hi``) or :data:`IDENTITY`."""
    if code == SINE:
        return bounded_from_search(z, lo, hi)
    if code == EXP:
        return positive_from_search(z, lo, hi)
    return z, 1.0


#: Placeholders of the templates' globals, bound per objective by :func:`_specialise`.
KERNEL: Any = None
OBJECTIVE: Any = None
MINIMIZE: Any = None


def _search_nll(z, args):  # type: ignore[no-untyped-def]
    """Template of :func:`search_objective` (``KERNEL`` bound per kernel)."""
    codes, lo, hi, embed, offset, obs_subject, data = args
    k = z.shape[0]
    n_cols = offset.shape[0]
    theta = np.empty(k)
    dtheta = np.empty(k)
    full = np.empty((1, n_cols))
    full[0, :] = offset
    for j in range(k):
        theta[j], dtheta[j] = natural_from_search(codes[j], z[j], lo[j], hi[j])
        for c in range(n_cols):
            full[0, c] += embed[j, c] * theta[j]
    ll, grad = KERNEL(full, obs_subject, *data)
    g_full = np.zeros(n_cols)
    nll = 0.0
    for i in range(ll.shape[0]):
        nll -= ll[i]
        for c in range(n_cols):
            g_full[c] -= grad[i, c]
    g = np.zeros(k)
    for j in range(k):
        for c in range(n_cols):
            g[j] += embed[j, c] * g_full[c]
        g[j] *= dtheta[j]
    return nll, g


def _minimize_bfgs(z0, args, max_iter, gtol, ftol, z_bound):  # type: ignore[no-untyped-def]
    """Template: minimise ``OBJECTIVE`` from ``z0``; returns (z, value, converged, iterations)."""
    p = z0.shape[0]
    z = z0.copy()
    f, g = OBJECTIVE(z, args)
    h = np.eye(p)
    converged = False
    it = 0
    for it in range(max_iter):  # noqa: B007 - reported to the caller
        if np.max(np.abs(g)) < gtol:
            converged = True
            break
        d = -h @ g
        slope = g @ d
        if slope >= 0.0:
            h = np.eye(p)
            d = -g
            slope = g @ d
        step = 1.0
        accepted = False
        for _ in range(MAX_BACKTRACKS):
            z_new = z + step * d
            f_new, g_new = OBJECTIVE(z_new, args)
            if np.isfinite(f_new) and f_new <= f + ARMIJO_C1 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            converged = np.max(np.abs(g)) < 1e-3  # stalled on a flat (clipped) region
            break
        s = z_new - z
        y = g_new - g
        decrease = f - f_new
        z, f, g = z_new, f_new, g_new
        sy = s @ y
        if sy > 1e-12:
            rho = 1.0 / sy
            hy = h @ y
            h = h + ((sy + y @ hy) * rho * rho) * np.outer(s, s) - rho * (
                np.outer(hy, s) + np.outer(s, hy)
            )
        else:
            h = np.eye(p)
        if decrease <= ftol * (1.0 + abs(f)):
            converged = True
            break
        if z_bound < np.inf:
            for j in range(p):
                z[j] = min(z_bound, max(-z_bound, z[j]))
    return z, f, converged, it


def _bfgs_from_starts(starts, args, max_iter, gtol, ftol, z_bound):  # type: ignore[no-untyped-def]
    """Template: BFGS (``MINIMIZE``) from every row of ``starts``; the best optimum (z, value, converged)."""
    best_z = starts[0].copy()
    best_f = np.inf
    best_conv = False
    for j in range(starts.shape[0]):
        z, f, conv, _ = MINIMIZE(starts[j], args, max_iter, gtol, ftol, z_bound)
        if f < best_f:
            best_z, best_f, best_conv = z, f, conv
    return best_z, best_f, best_conv


def search_objective(kernel: Any) -> Any:
    """The MLE objective on the search scale derived from a pointwise kernel (one per kernel).

    ``kernel(theta, obs_subject, *data) -> (ll, grad)`` is a model's pointwise log-likelihood
    (the :class:`~cogtestbed.inference.base.CognitiveModel` contract).  The returned ``@njit``
    function ``objective(z, args) -> (nll, grad_z)`` with ``args = (codes, lo, hi, embed,
    offset, obs_subject, data)`` maps the search-scale ``z`` to natural parameters θ
    (:func:`natural_from_search`), to the kernel's columns ``offset + θ·embed`` (one subject),
    and returns NLL = −Σ ll with the chain rule ∂NLL/∂z_j = −(embed · Σ_obs grad)_j · dθ_j/dz_j.
    """
    return _specialise(_search_nll, "KERNEL", kernel, cache_tag(kernel))


def bfgs_driver(objective: Any) -> Any:
    """``driver(starts, args, max_iter, gtol, ftol, z_bound) -> (z, value, converged)``: BFGS
    from every row of ``starts`` on the ``@njit`` ``objective(z, args) -> (value, gradient)``,
    keeping the best optimum (defaults: :data:`MAX_ITER`, :data:`GTOL`, :data:`FTOL`, ``inf``).

    Compiled once per objective and cached on disk, so a new process (a CLI call, a spawned
    worker) loads it instead of compiling it; callable from Python and from other ``@njit``
    functions (as a global, e.g. a module-level ``fit = bfgs_driver(objective)``).  Every
    argument is positional and required: numba's dispatcher resolves a call with omitted
    defaults in Python (≈ 0.5 ms a call, a third of a 96-trial fit).
    """
    tag = cache_tag(objective)
    minimize = _specialise(_minimize_bfgs, "OBJECTIVE", objective, tag)
    return _specialise(_bfgs_from_starts, "MINIMIZE", minimize, tag)


def mle_driver(kernel: Any) -> Any:
    """:func:`bfgs_driver` of :func:`search_objective` of a model's pointwise kernel."""
    return bfgs_driver(search_objective(kernel))


_SPECIALISED: dict[tuple[str, int], tuple[Any, Any]] = {}
_TAGS: dict[int, str | None] = {}


def _specialise(template: Callable[..., Any], name: str, fn: Any, tag: str | None) -> Any:
    """``template`` compiled with its placeholder global ``name`` bound to the numba function ``fn``.

    A driver that receives its objective as an argument is typed on that dispatcher; numba can
    neither cache such a specialisation across processes (the type pickles with a per-process
    identity) nor cache a caller that passes a function as a value (a dynamic address).  Bound
    as a *global*, the call is an ordinary static call numba caches: a copy of ``template``'s
    code with its own globals and a qualified name carrying ``tag`` (the bound function and the
    state of its sources, :func:`cache_tag`), so each binding has its own cache index and an edited
    kernel is never served a stale driver.  ``tag=None`` (no stable name) compiles uncached.
    """
    key = (template.__name__, id(fn))
    if key not in _SPECIALISED:
        namespace = dict(template.__globals__)
        namespace[name] = fn
        copy = types.FunctionType(template.__code__, namespace, template.__name__, template.__defaults__)
        copy.__qualname__ = f"{template.__name__}__{tag or 'uncached'}"
        compiled = njit(cache=tag is not None)(copy)
        _SPECIALISED[key] = (fn, compiled)  # keeps fn alive, so its id stays unique
        _TAGS[id(compiled)] = tag
        if tag is not None:
            _remove_stale(compiled, copy.__qualname__)
    return _SPECIALISED[key][1]


def _remove_stale(compiled: Any, qualname: str) -> None:
    """Delete the cache files of earlier versions of this specialisation (same template and
    function, another sources digest): they can never be loaded again."""
    stem, _, _ = qualname.rpartition("_")
    prefix = f"{Path(__file__).stem}.{stem}_"
    current = f"{Path(__file__).stem}.{qualname}-"
    with contextlib.suppress(OSError):
        for path in Path(compiled.stats.cache_path).glob(f"{prefix}*"):
            if not path.name.startswith(current):
                path.unlink(missing_ok=True)


def cache_tag(fn: Any) -> str | None:
    """A name for the ``@njit`` function ``fn``, stable across processes and changing with its
    sources: its name and a digest of its module, qualified name and :func:`_sources_digest`
    (a specialisation keeps its own tag).  None unless ``fn`` is what its module and qualified
    name resolve to (closures, functions made by ``exec`` or in a factory are not)."""
    if id(fn) in _TAGS:
        return _TAGS[id(fn)]
    py_func = fn.py_func
    named: Any = sys.modules.get(py_func.__module__ or "")
    for part in py_func.__qualname__.split("."):
        named = getattr(named, part, None)
    if named is not fn or py_func.__closure__ is not None:  # not reachable by its name: no stable tag
        return None
    ident = f"{py_func.__module__}.{py_func.__qualname__}:{_sources_digest(py_func.__module__)}"
    return f"{py_func.__name__}_{hashlib.sha256(ident.encode()).hexdigest()[:12]}"


_DIGESTS: dict[str, str] = {}


def _sources_digest(module: str) -> str:
    """Digest of the state (path, size, mtime) of every source file of ``module``'s top-level
    package and of this module.  A cached driver embeds the compiled objective and everything
    it calls, so an edit anywhere there must select a new cache entry (numba itself watches
    only the file of the function it caches)."""
    package = module.partition(".")[0]
    if package not in _DIGESTS:
        files = {Path(__file__)}
        root = getattr(sys.modules.get(package), "__file__", None)
        if root is not None and Path(root).name == "__init__.py":
            files.update(Path(root).parent.rglob("*.py"))
        elif root is not None:
            files.add(Path(root))
        digest = hashlib.sha256()
        for path in sorted(files):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        _DIGESTS[package] = digest.hexdigest()[:12]
    return _DIGESTS[package]
