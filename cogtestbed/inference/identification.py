"""Whether one subject's maximum-likelihood estimate is identified by its answers (issue 46).

A multi-start MLE always returns a number; three situations make that number no estimate:

* **at a bound** — the estimate sits on a bound of the parameter or of its search box (a β
  stopped at the search ceiling, a τ at its floor), or a log-scale parameter beyond its search
  range (towards 0 or ∞): the likelihood still rose towards the bound; a search that did not
  converge is no estimate either;
* **a flat profile** — the likelihood-ratio 95 % interval of a parameter (profile likelihood,
  Venzon & Moolgavkar 1988: the values θ_j whose profile NLL lies within χ²₁(0.95)/2 ≈ 1.92 of
  the minimum) reaches an end of the search range where the parameter's scale is unbounded (a
  log-scale parameter's floor or ceiling: the data bound it on one side at most), or covers the
  whole range of a bounded parameter.  The profile NLL at an end is the minimum over the other
  parameters with θ_j held there (a fit of the remaining parameters, :func:`profile_nll`);
* **shared exactly** — several subjects whose answers differ come back with the very same
  estimate: the optimiser stopped where it started (a node of the start grid on a plateau of the
  likelihood), as the six temporal-discounting subjects of issue 46 did at k = 42.169650,
  τ = 0.001778 (:func:`shared_estimates`).

:func:`unidentified_reason` gives the first reason that applies to one subject (None: identified).
The 95 % level and "an end of the search range" are this project's rule, not a paper's.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from cogtestbed.inference.optim import FTOL, GTOL, MAX_ITER, mle_driver
from cogtestbed.parameters import Parameter

#: The model and fit types of :mod:`cogtestbed.inference.base` (which imports this module: named,
#: not imported, so that no import cycle forms).
CognitiveModel = Any
MLEResult = Any

#: χ²₁(0.95) / 2: the NLL rise that bounds a profile-likelihood 95 % interval.
LR_HALF_CHI2 = 1.9207294103470056
#: An estimate within this relative distance of a bound counts as at the bound.
BOUND_RTOL = 1e-4
#: Relative tolerance under which two subjects' estimates count as the same.
SHARED_RTOL = 1e-9


def bounds_of(p: Parameter) -> list[float]:
    """Finite bounds of ``p`` and of its MLE search box (where an optimiser stops)."""
    lo, hi = p.search_bounds()
    out = [p.lower, p.upper, p.from_search(lo), p.from_search(hi)]
    return sorted({b for b in out if math.isfinite(b)})


def at_bound(est: np.ndarray, p: Parameter) -> np.ndarray:
    """Which estimates sit at a bound of ``p`` (or of its search box)."""
    est = np.asarray(est, float)
    hit = np.zeros(est.shape, bool)
    if not est.size:
        return hit
    finite = est[np.isfinite(est)]
    wide = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    span = (p.upper - p.lower) if math.isfinite(p.upper - p.lower) else wide
    for b in bounds_of(p):
        hit |= np.abs(est - b) <= BOUND_RTOL * max(abs(b), span * 1e-2, 1e-12)
    return hit


def search_ends(p: Parameter) -> tuple[float, float]:
    """The natural values at the two ends of ``p``'s search range (±inf where it has none)."""
    lo, hi = p.search_bounds()
    return p.from_search(lo), p.from_search(hi)


def profile_nll(model: CognitiveModel, data: Any, j: int, value: float, n_starts: int) -> float:
    """min over the other parameters of the NLL with parameter ``j`` held at ``value``.

    The same numba BFGS and start grid as the fit (:meth:`CognitiveModel.fit_subject`), on the
    search objective with parameter ``j`` moved into the kernel's fixed columns."""
    codes, lo, hi, embed, offset, obs_subject, arrays = model.objective_args(data)
    grid = model.start_grid().copy()
    grid[:, j] = value
    grid_nll = model.nll_many(grid, data)
    if len(model.parameters) == 1:
        return float(grid_nll[0])
    keep = np.array([i for i in range(len(model.parameters)) if i != j])
    z_grid = model._unconstrained_grid()[:, keep]
    _, first = np.unique(z_grid, axis=0, return_index=True)  # one start per node of the other axes
    order = first[np.argsort(grid_nll[first], kind="stable")][:n_starts]
    args = (codes[keep], lo[keep], hi[keep], np.ascontiguousarray(embed[keep]),
            offset + value * embed[j], obs_subject, arrays)
    _, nll, _ = mle_driver(model._kernel())(np.ascontiguousarray(z_grid[order]), args, MAX_ITER, GTOL, FTOL,
                                             np.inf)
    return float(min(nll, float(np.min(grid_nll[order]))))


def flat_profile(model: CognitiveModel, data: Any, fit: MLEResult, n_starts: int) -> str | None:
    """Why a parameter's likelihood-ratio 95 % interval says the answers do not pin it (None: it
    is bounded; see the module docstring).  Each end is profiled only when the answer needs it (a
    profile is a multi-start fit)."""
    for j, p in enumerate(model.parameters):
        ends = search_ends(p)

        def inside(v: float, j: int = j) -> bool:
            return math.isfinite(v) and profile_nll(model, data, j, v, n_starts) - fit.nll <= LR_HALF_CHI2

        low = inside(ends[0])
        if p.transform == "log":
            if low or inside(ends[1]):
                end = ends[0] if low else ends[1]
                return (f"flat profile: {p.name}'s likelihood-ratio 95% interval reaches {end:.6g}, the "
                        f"{'floor' if low else 'ceiling'} of its search range (unbounded on its log scale)")
            continue
        if low and inside(ends[1]):
            return (f"flat profile: {p.name}'s likelihood-ratio 95% interval spans its whole range "
                    f"[{ends[0]:.6g}, {ends[1]:.6g}]")
    return None


def unidentified_reason(model: CognitiveModel, data: Any, fit: MLEResult, n_starts: int) -> str | None:
    """Why one subject's fitted estimate is not identified: at a bound, or on a flat profile
    (:func:`flat_profile`); None where it is identified.  A fit with NaN estimates (no valid
    answer) is left to the caller's own reason."""
    values = fit.params
    if not all(math.isfinite(values[p.name]) for p in model.parameters):
        return None
    for p in model.parameters:
        v = values[p.name]
        lo, hi = search_ends(p)
        hit = bool(at_bound(np.array([v]), p)[0])
        beyond = p.transform == "log" and not hit and not lo <= v <= hi
        if hit or beyond:
            return (f"at a bound: {p.name} = {v:.6g} (bounds {', '.join(f'{b:g}' for b in bounds_of(p))}"
                    + (f"; beyond its search range [{lo:g}, {hi:g}], towards a bound)" if beyond else ")"))
    if not fit.converged:
        return "the search did not converge (no stationary point; the likelihood is still changing there)"
    return flat_profile(model, data, fit, n_starts)


def data_digest(model: CognitiveModel, data: Any) -> bytes:
    """The bytes of one subject's kernel arrays (equal for subjects whose answers agree)."""
    return b"|".join(np.ascontiguousarray(a).tobytes() for a in model.kernel_arrays(data))


def shared_estimates(model: CognitiveModel, estimates: Mapping[Hashable, Sequence[float]],
                     data: Mapping[Hashable, Any]) -> dict[Hashable, str]:
    """The subjects whose estimate vector equals (to :data:`SHARED_RTOL`) that of another subject
    whose answers differ, each with the reason (subjects with the same answers share an estimate
    rightly)."""
    keys = [k for k, v in estimates.items() if np.all(np.isfinite(v))]
    out: dict[Hashable, str] = {}
    if len(keys) < 2:
        return out
    values = np.array([np.asarray(estimates[k], float) for k in keys])
    scale = np.maximum(np.abs(values), 1e-12)
    digest: dict[Hashable, bytes] = {}  # each subject's answers read once, however many groups it is in
    for i, key in enumerate(keys):
        same = np.all(np.abs(values - values[i]) <= SHARED_RTOL * scale, axis=1)
        group = [keys[m] for m in np.flatnonzero(same)]
        if len(group) < 2:
            continue
        for k in group:
            if k not in digest:
                digest[k] = data_digest(model, data[k])
        digests = {digest[k] for k in group}
        if len(digests) > 1:
            shown = ", ".join(f"{n} = {v:.6g}" for n, v in zip(model.parameters.names, values[i], strict=True))
            out[key] = (f"shared exactly by {len(group)} subjects with different answers ({shown}): the search "
                        "stopped on a plateau of the likelihood, not at an estimate")
    return out


__all__ = ["LR_HALF_CHI2", "at_bound", "bounds_of", "flat_profile", "profile_nll", "shared_estimates",
           "unidentified_reason"]
