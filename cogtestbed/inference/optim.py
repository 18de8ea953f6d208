"""A small BFGS minimiser compiled with numba, for per-subject maximum likelihood.

scipy's L-BFGS-B costs tens of microseconds of Python overhead per iteration, which dominates
when one likelihood evaluation of a 96-trial subject takes about a microsecond.  This module runs
the whole multi-start search inside numba: the objective is any ``@njit`` function
``fun(z, args) -> (value, gradient)`` on an unbounded *search* scale, passed as a first-class
function.  Search-scale maps (:func:`bounded_from_search`, :func:`positive_from_search`):

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

This is the package's only optimiser: every per-subject MLE (through
:func:`search_objective`, the chain rule from a model's pointwise kernel to the search scale) and
the collider's least-squares CBN fit run on it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

ARMIJO_C1 = 1e-4
MAX_BACKTRACKS = 50
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


_SEARCH_OBJECTIVES: dict[int, object] = {}


def search_objective(kernel):  # type: ignore[no-untyped-def]
    """The MLE objective on the search scale derived from a pointwise kernel (cached per kernel).

    ``kernel(theta, obs_subject, *data) -> (ll, grad)`` is a model's pointwise log-likelihood
    (the :class:`~cogtestbed.inference.base.CognitiveModel` contract).  The returned ``@njit``
    function ``objective(z, args) -> (nll, grad_z)`` with ``args = (codes, lo, hi, embed,
    offset, obs_subject, data)`` maps the search-scale ``z`` to natural parameters θ
    (:func:`natural_from_search`), to the kernel's columns ``offset + θ·embed`` (one subject),
    and returns NLL = −Σ ll with the chain rule ∂NLL/∂z_j = −(embed · Σ_obs grad)_j · dθ_j/dz_j.
    """
    key = id(kernel)
    if key not in _SEARCH_OBJECTIVES:

        @njit
        def objective(z, args):  # type: ignore[no-untyped-def]
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
            ll, grad = kernel(full, obs_subject, *data)
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

        _SEARCH_OBJECTIVES[key] = (kernel, objective)
    return _SEARCH_OBJECTIVES[key][1]  # type: ignore[index]


# The drivers take the objective as a first-class function; numba cannot cache such
# specialisations reliably (its cache index fails to pickle them across processes), so they are
# compiled once per process instead (about a second).
@njit
def minimize_bfgs(fun, z0, args, max_iter=200, gtol=1e-6, ftol=1e-12, z_bound=np.inf):  # type: ignore[no-untyped-def]
    """Minimise ``fun`` from ``z0``; returns (z, value, converged, iterations)."""
    p = z0.shape[0]
    z = z0.copy()
    f, g = fun(z, args)
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
            f_new, g_new = fun(z_new, args)
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


@njit
def bfgs_from_starts(fun, starts, args, max_iter=200, gtol=1e-6, ftol=1e-12, z_bound=np.inf):  # type: ignore[no-untyped-def]
    """Run BFGS from every row of ``starts``; return the best optimum (z, value, converged)."""
    best_z = starts[0].copy()
    best_f = np.inf
    best_conv = False
    for j in range(starts.shape[0]):
        z, f, conv, _ = minimize_bfgs(fun, starts[j], args, max_iter, gtol, ftol, z_bound)
        if f < best_f:
            best_z, best_f, best_conv = z, f, conv
    return best_z, best_f, best_conv
