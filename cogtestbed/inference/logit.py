"""Binary logit by Newton–Raphson, step for step as statsmodels fits it (Seabold & Perktold 2010).

CogBench scores its horizon-task exploration with ``statsmodels.Logit(y, X).fit()`` (Coda-Forno et
al. 2024, ``HorizonTask/store.py``).  Importing statsmodels' discrete models costs a command-line
process about a second (it imports scipy.stats and scipy.optimize), several times the fit itself,
so :func:`fit_logit` repeats the computation of ``Logit.fit(method="newton")`` with its defaults,
operation for operation, and returns the same floating-point numbers:

* start at β = 0; iterate β ← β − H⁻¹g with g = −Xᵀ(y − Λ(Xβ))/n and
  H = Xᵀ diag(Λ(1 − Λ)) X / n + ``RIDGE_FACTOR``·I, while some |Δβ| > ``NEWTON_TOL`` and fewer than
  ``NEWTON_MAXITER`` steps were taken (``base.optimizer._fit_newton``);
* after every step, fitted probabilities all within 1e-8 of y raise :class:`PerfectSeparationError`
  (``DiscreteModel._check_perfect_pred`` with ``raise_on_perfect_prediction``, the behaviour of the
  statsmodels releases CogBench ran);
* a fit that used all ``NEWTON_MAXITER`` steps is not converged (even if the last step was small);
* standard errors: √diag((H(β̂) without the ridge)⁻¹ / n), the inverse observed information.

A singular Hessian raises :class:`numpy.linalg.LinAlgError`, as in statsmodels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ``DiscreteModel.fit``'s default iteration limit for Newton's method.
NEWTON_MAXITER = 35
#: ``_fit_newton``'s default ``tol``: stop once no coefficient moved more than this.
NEWTON_TOL = 1e-8
#: ``_fit_newton``'s default ``ridge_factor``, added to the Hessian's diagonal at every step.
RIDGE_FACTOR = 1e-10


class PerfectSeparationError(Exception):
    """The fitted probabilities reproduce the outcomes (statsmodels' exception of the same name)."""


@dataclass(frozen=True)
class LogitFit:
    """Coefficients, their standard errors, Newton steps taken, and convergence."""

    params: np.ndarray
    bse: np.ndarray
    iterations: int
    converged: bool


def _probabilities(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Λ(Xβ) = 1 / (1 + exp(−Xβ)) (``Logit.cdf`` of ``Logit.predict``; no offset adds 0.0)."""
    return 1 / (1 + np.exp(-(np.dot(x, beta) + 0.0)))


def _gradient(y: np.ndarray, x: np.ndarray, beta: np.ndarray, nobs: int) -> np.ndarray:
    """Gradient of the mean negative log-likelihood, −Xᵀ(y − Λ)/n."""
    return -np.dot(y - _probabilities(x, beta), x) / nobs


def _hessian(x: np.ndarray, beta: np.ndarray, nobs: int) -> np.ndarray:
    """Hessian of the mean negative log-likelihood, Xᵀ diag(Λ(1 − Λ)) X / n."""
    p = _probabilities(x, beta)
    return np.dot(p * (1 - p) * x.T, x) / nobs


def fit_logit(y: np.ndarray, x: np.ndarray) -> LogitFit:
    """Maximum-likelihood logit of binary ``y`` on the design ``x`` (n × k, constant included).

    Raises :class:`PerfectSeparationError` when a step predicts every outcome, and
    :class:`numpy.linalg.LinAlgError` when a Hessian cannot be inverted.
    """
    y = np.asarray(y, dtype=float)
    x = np.asarray(x)
    nobs = y.shape[0]
    beta = np.asarray([0.0] * x.shape[1])
    previous: np.ndarray | float = np.inf
    iterations = 0
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        while iterations < NEWTON_MAXITER and np.any(np.abs(beta - previous) > NEWTON_TOL):
            hessian = _hessian(x, beta, nobs)
            hessian[np.diag_indices(hessian.shape[0])] += RIDGE_FACTOR
            previous = beta
            beta = previous - np.linalg.solve(hessian, _gradient(y, x, previous, nobs))
            if np.allclose(_probabilities(x, beta) - y, 0):
                raise PerfectSeparationError("Perfect separation detected, results not available")
            iterations += 1
        cov = np.linalg.inv(_hessian(x, beta, nobs)) / nobs
        bse = np.sqrt(np.diag(cov * 1.0))
    return LogitFit(beta, bse, iterations, iterations != NEWTON_MAXITER)
