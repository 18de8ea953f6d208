"""The cognitive-model contract and the generic multi-start maximum-likelihood fitter.

A :class:`CognitiveModel` declares its parameters (names, bounds, transforms, priors: see
:mod:`cogtestbed.parameters`), turns a trial table into per-subject arrays
(:meth:`CognitiveModel.subject_data`) and evaluates a numba negative log-likelihood with its
gradient.  The same object drives the synthetic agent that simulates it, so a parameter means one
thing everywhere.

Maximum likelihood (:meth:`CognitiveModel.fit_mle`) does not rely on a stochastic global
optimiser's luck: it evaluates the NLL on a grid spanning the whole parameter box, then runs a
gradient optimiser from the best ``n_starts`` grid points and keeps the best optimum.  Models that
provide a numba objective on the unconstrained scale (:attr:`CognitiveModel.numba_objective`) run
the whole search inside numba (:mod:`cogtestbed.inference.optim`, BFGS); others use scipy's
L-BFGS-B on the box with the analytic gradient of :meth:`CognitiveModel.nll_grad`.
AIC = 2k + 2·NLL and BIC = k·ln(n) + 2·NLL (Schwarz 1978).
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from cogtestbed.parameters import Parameter, ParameterSet

#: Half-width, in logit units, of the start grid of a logit-transformed parameter.
GRID_LOGIT_SPAN = 5.0


@dataclass(frozen=True)
class MLEResult:
    """Maximum-likelihood estimate for one subject."""

    params: dict[str, float]
    nll: float
    n_obs: int
    converged: bool
    n_params: int

    @property
    def aic(self) -> float:
        return 2.0 * self.n_params + 2.0 * self.nll

    @property
    def bic(self) -> float:
        return self.n_params * float(np.log(max(self.n_obs, 1))) + 2.0 * self.nll


class CognitiveModel(ABC):
    """A model with a likelihood: parameters, data preparation, NLL (+ gradient) and MLE."""

    #: Registry name (shared with the agent that simulates it), e.g. ``"rw-pm"``.
    name: ClassVar[str]
    #: Registry name of the experiment whose trial table the model reads.
    experiment: ClassVar[str]
    parameters: ClassVar[ParameterSet]
    #: Grid points per parameter used to pick MLE starting points.
    grid_points: ClassVar[int] = 7
    #: Local optimisations per fit (grid local minima first, see :meth:`start_order`).
    n_starts: ClassVar[int] = 5
    #: Named linear contrasts of parameters that studies may test (power analysis), e.g.
    #: ``{"optimism_bias": {"alpha_pos": 1.0, "alpha_neg": -1.0}}`` for α⁺ − α⁻.
    contrasts: ClassVar[Mapping[str, Mapping[str, float]]] = {}
    #: Optional ``@njit`` objective ``fun(z, args) -> (nll, grad_z)`` on the search scale of
    #: :mod:`cogtestbed.inference.optim` (sine map for bounded, exp for log-transformed
    #: parameters; :meth:`to_search` / :meth:`to_natural`); ``args`` from :meth:`objective_args`.
    numba_objective: ClassVar[Any] = None
    #: NUTS target acceptance for hierarchical fits (None: the sampler default of
    #: :func:`cogtestbed.inference.hierarchical.fit_hierarchical`).
    target_accept: ClassVar[float | None] = None

    # -- data -------------------------------------------------------------------------
    @abstractmethod
    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        """Per-subject arrays the likelihood reads, keyed by subject id (table order kept)."""

    @abstractmethod
    def n_observations(self, data: Any) -> int:
        """Number of observations that enter the likelihood (for BIC)."""

    # -- likelihood ---------------------------------------------------------------------
    @abstractmethod
    def nll_grad(self, theta: np.ndarray, data: Any) -> tuple[float, np.ndarray]:
        """Negative log-likelihood and its gradient at natural-scale ``theta``."""

    def nll(self, theta: np.ndarray, data: Any) -> float:
        return self.nll_grad(theta, data)[0]

    def nll_many(self, thetas: np.ndarray, data: Any) -> np.ndarray:
        """NLL at each row of ``thetas`` (override with a numba kernel for speed)."""
        return np.array([self.nll(t, data) for t in thetas])

    # -- Bayesian ---------------------------------------------------------------------
    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """The model as a ``pm.Model`` for the subjects of ``trials``.

        Contract (see :mod:`cogtestbed.inference.hierarchical`): declare the parameters with
        ``subject_parameters(self.parameters, hierarchical)`` (non-centred population → subject
        values, coords ``subject``), then one observed variable (dims ``obs``) and a
        ``pm.Data("obs_subject", ...)`` mapping each observation to its subject index.
        """
        raise NotImplementedError(f"model {self.name!r} has no PyMC version yet")

    def sample_nuisance(self, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
        """One prior draw of the PyMC likelihood's parameters outside :attr:`parameters`.

        Returns (posterior variable → true value, agent parameter → value); simulation-based
        calibration simulates with the agent values so that data and model agree.  ``name[k]``
        names the k-th entry of a vector variable.  Default: none.
        """
        return {}, {}

    @property
    def has_pymc(self) -> bool:
        """Whether :meth:`pymc_model` is implemented (hierarchical fits available)."""
        return type(self).pymc_model is not CognitiveModel.pymc_model

    def contrast(self, name: str, values: Mapping[str, Any]) -> Any:
        """Value of the named contrast for parameter values (arrays or scalars)."""
        if name in self.parameters.names:
            return values[name]
        try:
            weights = self.contrasts[name]
        except KeyError:
            raise ValueError(
                f"unknown effect {name!r} for model {self.name}; choose a parameter "
                f"({', '.join(self.parameters.names)}) or a contrast "
                f"({', '.join(self.contrasts) or 'none'})"
            ) from None
        return sum(w * values[p] for p, w in weights.items())

    # -- maximum likelihood -------------------------------------------------------------
    def start_grid(self) -> np.ndarray:
        """Grid of natural-scale starting candidates spanning the whole parameter box (cached).

        Logit-transformed parameters get nodes evenly spaced in logit (±``GRID_LOGIT_SPAN``), so
        the grid is dense near both bounds where likelihoods often have separate basins (e.g. a
        learning rate of 0.02 with a high β); log-transformed ones get log-spaced nodes between
        their search floor and ceiling; others linear interior nodes.
        """
        cached = getattr(self, "_grid", None)
        if cached is not None:
            return cached
        axes = []
        for p in self.parameters:
            n = self.grid_points
            if p.transform == "logit":
                u = 1.0 / (1.0 + np.exp(-np.linspace(-GRID_LOGIT_SPAN, GRID_LOGIT_SPAN, n)))
                axes.append(p.lower + (p.upper - p.lower) * u)
            else:
                lo, hi = p.search_bounds()
                axes.append(np.array([p.from_search(s) for s in np.linspace(lo, hi, n + 2)[1:-1]]))
        self._grid: np.ndarray = np.array(list(itertools.product(*axes)), dtype=np.float64)
        return self._grid

    def objective_args(self, data: Any) -> tuple[Any, ...]:
        """Arguments of :attr:`numba_objective` for one subject's data."""
        raise NotImplementedError(f"{type(self).__name__} has no numba objective")

    @staticmethod
    def _sine_scaled(p: Parameter) -> bool:
        """Whether the numba search uses the sine map for ``p`` (finite, non-log bounds)."""
        return p.transform != "log" and np.isfinite(p.lower) and np.isfinite(p.upper)

    def to_search(self, theta: np.ndarray) -> np.ndarray:
        """Natural parameters → numba search scale (see :mod:`cogtestbed.inference.optim`)."""
        out = []
        for p, v in zip(self.parameters, theta, strict=True):
            if self._sine_scaled(p):
                out.append(float(np.arcsin(np.clip(2 * (v - p.lower) / (p.upper - p.lower) - 1, -1, 1))))
            elif p.transform == "log":
                out.append(float(np.log(max(v - p.lower, 1e-300))))
            else:
                out.append(float(v))
        return np.array(out)

    def to_natural(self, z: np.ndarray) -> np.ndarray:
        """Numba search scale → natural parameters, clipped into their bounds."""
        out = []
        for p, v in zip(self.parameters, z, strict=True):
            if self._sine_scaled(p):
                x = p.lower + 0.5 * (p.upper - p.lower) * (1 + np.sin(v))
            elif p.transform == "log":
                x = p.lower + np.exp(v)
            else:
                x = v
            out.append(float(np.clip(x, p.lower, p.upper)))
        return np.array(out)

    def fit_subject(self, data: Any, n_starts: int | None = None) -> MLEResult:
        """Multi-start fit of one subject (see module docstring)."""
        n_starts = self.n_starts if n_starts is None else n_starts
        if self.numba_objective is not None:
            return self._fit_numba(data, n_starts)
        return self._fit_scipy(data, n_starts)

    def _result(self, theta: np.ndarray, nll: float, converged: bool, data: Any) -> MLEResult:
        return MLEResult(
            params=dict(zip(self.parameters.names, map(float, theta), strict=True)),
            nll=float(nll),
            n_obs=self.n_observations(data),
            converged=bool(converged),
            n_params=len(self.parameters),
        )

    def _unconstrained_grid(self) -> np.ndarray:
        cached = getattr(self, "_z_grid", None)
        if cached is None:
            cached = np.ascontiguousarray([self.to_search(row) for row in self.start_grid()])
            self._z_grid = cached
        return cached

    def start_order(self, grid_nll: np.ndarray) -> np.ndarray:
        """Grid indices in the order starts are tried: the grid's discrete local minima (each a
        separate basin, best first), then the remaining points by NLL."""
        shape = (self.grid_points,) * len(self.parameters)
        order = np.argsort(grid_nll, kind="stable")
        if grid_nll.size != int(np.prod(shape)):  # a model with its own (non-product) grid
            return order
        values = grid_nll.reshape(shape)
        is_min = np.ones(shape, dtype=bool)
        for axis in range(values.ndim):
            padded = np.pad(values, [(1, 1) if a == axis else (0, 0) for a in range(values.ndim)],
                            constant_values=np.inf)
            lower = np.take(padded, np.arange(0, shape[axis]), axis=axis)
            upper = np.take(padded, np.arange(2, shape[axis] + 2), axis=axis)
            is_min &= (values <= lower) & (values <= upper)
        flat_min = is_min.reshape(-1)
        return np.concatenate([order[flat_min[order]], order[~flat_min[order]]])

    def _fit_numba(self, data: Any, n_starts: int) -> MLEResult:
        from cogtestbed.inference.optim import bfgs_from_starts

        grid_nll = self.nll_many(self.start_grid(), data)
        starts = self._unconstrained_grid()[self.start_order(grid_nll)[:n_starts]]
        z, value, converged = bfgs_from_starts(
            self.numba_objective, np.ascontiguousarray(starts), self.objective_args(data)
        )
        return self._result(self.to_natural(z), value, converged, data)

    def _fit_scipy(self, data: Any, n_starts: int) -> MLEResult:
        params = self.parameters.parameters
        grid = self.start_grid()
        grid_nll = self.nll_many(grid, data)
        order = self.start_order(grid_nll)
        bounds = [p.search_bounds() for p in params]

        def objective(s: np.ndarray) -> tuple[float, np.ndarray]:
            theta = np.array([p.from_search(v) for p, v in zip(params, s, strict=True)])
            value, grad = self.nll_grad(theta, data)
            jac = np.array([p.search_jacobian(v) for p, v in zip(params, s, strict=True)])
            return value, grad * jac

        best_theta, best_nll, converged = grid[order[0]], float(grid_nll[order[0]]), False
        for idx in order[:n_starts]:
            s0 = np.array([p.to_search(v) for p, v in zip(params, grid[idx], strict=True)])
            res = minimize(objective, s0, jac=True, method="L-BFGS-B", bounds=bounds)
            if res.fun <= best_nll:
                best_nll = float(res.fun)
                best_theta = np.array([p.from_search(v) for p, v in zip(params, res.x, strict=True)])
                converged = bool(res.success)
        return self._result(best_theta, best_nll, converged, data)

    def fit_mle(
        self, trials: pd.DataFrame, n_starts: int | None = None, subjects: Iterable[Hashable] | None = None
    ) -> pd.DataFrame:
        """Fit every subject; one row per subject with estimates, NLL, AIC, BIC, convergence."""
        data = self.subject_data(trials)
        keys = list(data) if subjects is None else list(subjects)
        rows = []
        for key in keys:
            fit = self.fit_subject(data[key], n_starts=n_starts)
            rows.append(
                {
                    "subject": key,
                    **fit.params,
                    "nll": fit.nll,
                    "aic": fit.aic,
                    "bic": fit.bic,
                    "n_obs": fit.n_obs,
                    "converged": fit.converged,
                }
            )
        return pd.DataFrame(rows)
