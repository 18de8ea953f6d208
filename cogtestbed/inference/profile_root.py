"""The inside of a likelihood-ratio interval, found with few and cheap profile fits.

One end of a subject's profile-likelihood interval (:class:`~cogtestbed.inference.identification.SubjectProfile`)
is the root of the profile's rise, profile NLL − NLL − χ²₁(0.95)/2, between the estimate and the end
of the parameter's search range.  Its meaning is unchanged here — at every profiled value the other
parameters are re-optimised, and the end is bracketed and refined by Brent's method
(:func:`scipy.optimize.brentq`) to the same tolerance — but the work is cut in two ways, both from
the curvature of the NLL at the estimate (:func:`search_hessian`: central differences of the
analytic gradient, 2·p gradient evaluations once per subject):

* **where to look** (:meth:`LocalProfile.wald_guess`): the profile is close to quadratic near the
  estimate, so the Wald end (estimate ± √(2·1.92·[H⁻¹]ⱼⱼ), mapped by the delta method onto the
  profile's scale) and one quadratic correction of it, u₂ = u₀ + (u₁ − u₀)·√(1.92 / excess(u₁)),
  usually bracket the root within a few tolerances; Brent's method then runs on that bracket
  (Venzon & Moolgavkar 1988 use the same quadratic approximation to start their search);
* **how each profile fit runs** (:meth:`LocalProfile.fit_at`): one BFGS run
  (:func:`scipy.optimize.minimize`) from the better of two warm starts — the other parameters'
  optimum predicted by the quadratic model (the profile trace, z₋ⱼ − H₋ⱼ₋ⱼ⁻¹H₋ⱼⱼ·Δzⱼ) and the optimum
  of the nearest profile point already fitted — with the inverse of H₋ⱼ₋ⱼ as its initial inverse
  Hessian, so that its first step is nearly Newton's.  The start grid still guards against another
  basin: where a start-grid node (:func:`~cogtestbed.inference.identification.best_nodes`) at the
  profiled value has a lower NLL than the local optimum, the point is refitted by the multi-start
  profile fit (:func:`~cogtestbed.inference.identification.profile_nll`) from there.

The profile at the ends of the search range (what a flag reads) is not computed here: it stays the
multi-start profile fit, so every flag is the one it was.  Measured against the earlier
computation (every profile fit from the estimate, the previous point and two grid starts; Brent's
method on the whole range) by ``benchmarks/bench_identification.py --baseline`` and held by
``tests/test_identification_lazy.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cogtestbed.inference.optim import FTOL, GTOL, MAX_ITER, search_objective

#: Relative step of the central differences of the analytic gradient that give the Hessian.
HESSIAN_STEP = 1e-5


def search_hessian(model: Any, data: Any, z: np.ndarray) -> np.ndarray | None:
    """The Hessian of the MLE objective on the numba search scale at ``z`` (central differences of
    its analytic gradient, symmetrised); None where it is not finite or not positive definite."""
    objective = search_objective(model._kernel())
    args = model.objective_args(data)
    n = len(z)
    hess = np.empty((n, n))
    for i in range(n):
        step = np.zeros(n)
        step[i] = HESSIAN_STEP * max(1.0, abs(float(z[i])))
        hess[:, i] = (objective(z + step, args)[1] - objective(z - step, args)[1]) / (2 * step[i])
    hess = (hess + hess.T) / 2
    if not np.all(np.isfinite(hess)):
        return None
    try:
        np.linalg.cholesky(hess)
    except np.linalg.LinAlgError:
        return None
    return hess


def profile_args(model: Any, data: Any, j: int, value: float) -> tuple[Any, ...]:
    """The search objective's arguments with parameter ``j`` held at natural ``value`` (moved into
    the kernel's fixed columns), and the indices of the other parameters."""
    codes, lo, hi, embed, offset, obs_subject, arrays = model.objective_args(data)
    keep = np.array([i for i in range(len(model.parameters)) if i != j])
    return (codes[keep], lo[keep], hi[keep], np.ascontiguousarray(embed[keep]), offset + value * embed[j],
            obs_subject, arrays)


class _Stop:
    """BFGS's stopping rule of the package's own driver (:mod:`cogtestbed.inference.optim`): a
    relative decrease of the objective below :data:`FTOL` ends the search (scipy's BFGS stops
    only on the gradient, which round-off keeps above its tolerance on a large NLL)."""

    def __init__(self) -> None:
        self.last = math.inf

    def __call__(self, intermediate_result: Any) -> None:
        f = float(intermediate_result.fun)
        if self.last - f <= FTOL * (1.0 + abs(f)):
            raise StopIteration
        self.last = f


class LocalProfile:
    """The quadratic model of one subject's NLL at its estimate (:func:`search_hessian`) and the
    profile fits that use it (module docstring)."""

    def __init__(self, model: Any, data: Any, theta: np.ndarray, hess: np.ndarray) -> None:
        self.model, self.data, self.theta = model, data, np.asarray(theta, float)
        self.z0 = np.asarray(model.to_search(self.theta), float)
        self.hess = hess
        self.cov = np.linalg.inv(hess)
        self.objective = search_objective(model._kernel())

    @classmethod
    def of(cls, model: Any, data: Any, theta: np.ndarray) -> LocalProfile | None:
        """The local model at ``theta`` (None where the Hessian there is not positive definite)."""
        z0 = np.asarray(model.to_search(np.asarray(theta, float)), float)
        hess = search_hessian(model, data, z0)
        return None if hess is None else cls(model, data, theta, hess)

    def _z_of(self, j: int, value: float) -> float:
        """The numba search coordinate of parameter ``j`` at natural ``value``."""
        theta = self.theta.copy()
        theta[j] = value
        return float(self.model.to_search(theta)[j])

    def natural(self, j: int, zj: float) -> float:
        """Parameter ``j``'s natural value at numba search coordinate ``zj`` (the others at the estimate)."""
        z = self.z0.copy()
        z[j] = zj
        return float(self.model.to_natural(z)[j])

    def wald_guess(self, j: int, side: int, start: float, to_profile: Any, rise: float) -> float | None:
        """The end of parameter ``j`` on ``side`` where the quadratic model's profile rises by
        ``rise`` (the Wald end), on the profile's scale (``to_profile``: numba coordinate → profile
        coordinate; the delta method); None where its slope vanishes (an estimate at a bound of a
        sine-mapped parameter)."""
        h = HESSIAN_STEP * max(1.0, abs(float(self.z0[j])))
        slope = (to_profile(self.z0[j] + h) - to_profile(self.z0[j] - h)) / (2 * h)
        sd = abs(slope) * math.sqrt(max(float(self.cov[j, j]), 0.0))
        if not math.isfinite(sd) or sd <= 0.0:
            return None
        return start + side * math.sqrt(2 * rise) * sd

    def trace(self, j: int, value: float) -> np.ndarray:
        """The other parameters' optimum at ``value`` of parameter ``j`` under the quadratic model."""
        keep = np.array([i for i in range(len(self.z0)) if i != j])
        dz = self._z_of(j, value) - self.z0[j]
        shift = np.linalg.solve(self.hess[np.ix_(keep, keep)], self.hess[keep, j]) * dz
        return np.asarray(self.z0[keep] - shift, float)

    def fit_at(self, j: int, value: float, near: np.ndarray | None) -> tuple[float, np.ndarray]:
        """min over the other parameters of the NLL at ``value`` of parameter ``j`` and where: one
        BFGS run from the better of the trace prediction and ``near`` (the nearest fitted point's
        optimum), with the local inverse Hessian as its first estimate."""
        from scipy.optimize import minimize

        args = profile_args(self.model, self.data, j, value)
        starts = [self.trace(j, value)] + ([] if near is None else [np.asarray(near, float)])
        values = [float(self.objective(np.ascontiguousarray(s), args)[0]) for s in starts]
        best = int(np.nanargmin(values)) if np.any(np.isfinite(values)) else 0
        keep = np.array([i for i in range(len(self.z0)) if i != j])
        h0 = np.linalg.inv(self.hess[np.ix_(keep, keep)])
        res = minimize(lambda z: self.objective(np.ascontiguousarray(z), args), starts[best], jac=True,
                       method="BFGS", callback=_Stop(),
                       options={"hess_inv0": (h0 + h0.T) / 2, "gtol": GTOL, "maxiter": MAX_ITER})
        if not (math.isfinite(float(res.fun)) and float(res.fun) <= values[best]):
            return values[best], starts[best]
        return float(res.fun), np.asarray(res.x, float)


__all__ = ["HESSIAN_STEP", "LocalProfile", "profile_args", "search_hessian"]
