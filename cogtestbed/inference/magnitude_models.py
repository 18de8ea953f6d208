"""The observer models of magnitude estimation as cognitive models (BayesBench; Ma, Wang & Fountas
2025, Sec. 3.2): :class:`StaticBayesModel`, :class:`LinearModel` and :class:`KalmanModel`, each a
:class:`~cogtestbed.inference.base.CognitiveModel` with the synthetic agents' parameters (one
parameter set per subject, on the session-normalised scale of :mod:`cogtestbed.agents.magnitude`),
a pointwise log-likelihood kernel with exact gradient and a closed-form / profile MLE.  The
observers' equations are :mod:`cogtestbed.inference.magnitude_observers`; the metrics are
:mod:`cogtestbed.inference.magnitude`, which re-exports these names."""


from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.base import NO_ANSWER_LOG_UNIFORM, CognitiveModel, MLEResult
from cogtestbed.inference.magnitude_fits import (
    gauss_nll,
    sigma_terms,
    static_pointwise,
)
from cogtestbed.inference.magnitude_hierarchy import w_prior_hierarchy as w_prior_hierarchy
from cogtestbed.inference.magnitude_observers import (
    KALMAN_P0,
    OBSERVERS,
    static_bayes,
    static_bayes_mu_p,
    static_bayes_w_prior,
)
from cogtestbed.parameters import ParameterSet
from cogtestbed.tables.magnitude import (
    EXPERIMENT,
    VALID_ANSWERS,
)


# ============================================================================ cognitive models
@dataclass(frozen=True)
class MagnitudeData:
    """One subject's trials on the session-normalised scale, in time order.

    ``u``/``v``: (x − a)/W and (y − a)/W; ``valid``: the answer parsed; ``log_w``: log W per
    trial (the Jacobian back to the y scale); ``first``: the trial opens a session;
    ``log_answer_range``: log of the width of the task's valid answer range
    (:attr:`TaskSpec.valid`), over which a random answer is uniform."""

    u: np.ndarray
    v: np.ndarray
    valid: np.ndarray
    log_w: np.ndarray
    first: np.ndarray
    log_answer_range: np.ndarray


@njit(cache=True, error_model="numpy")  # σ → 0 in a line search: −inf, not an exception
def linear_pointwise(theta: np.ndarray, obs_subject: np.ndarray, v: np.ndarray, u: np.ndarray,
                     log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-observation log-likelihood and gradient in (w, b, sigma_dec): v ~ N(w·u + b, σ²) (σ's terms once a
    subject, :func:`~cogtestbed.inference.magnitude_fits.sigma_terms`)."""
    n = v.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 3))
    log_s, inv_s, inv_s2 = sigma_terms(theta, 2)
    for i in range(n):
        j = obs_subject[i]
        r = v[i] - theta[j, 0] * u[i] - theta[j, 1]
        scaled = r * inv_s2[j]
        ll[i] = -0.5 * math.log(2 * math.pi) - log_s[j] - 0.5 * r * scaled - log_w[i]
        grad[i, 0] = scaled * u[i]
        grad[i, 1] = scaled
        grad[i, 2] = -inv_s[j] + r * scaled * inv_s[j]
    return ll, grad


@njit(cache=True, error_model="numpy")  # σ → 0 in a line search: −inf, not an exception
def kalman_pointwise(theta: np.ndarray, obs_subject: np.ndarray, v: np.ndarray, u: np.ndarray,
                     valid: np.ndarray, log_w: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-trial log-likelihood (0 for invalid trials) and gradient in (q_over_r, sigma_dec) of
    the Kalman observer (Sec. 3.2, model 3): the filter resets at a session's first trial and at
    a new subject; dμ/dq by forward-mode differentiation of the filter recursion."""
    n = u.shape[0]
    ll = np.zeros(n)
    grad = np.zeros((n, 2))
    mu, P, dmu, dP = 0.5, KALMAN_P0, 0.0, 0.0
    for t in range(n):
        q, s = theta[obs_subject[t], 0], theta[obs_subject[t], 1]
        if first[t] or t == 0 or obs_subject[t] != obs_subject[t - 1]:
            mu, P, dmu, dP = 0.5, KALMAN_P0, 0.0, 0.0
        Pm, dPm = P + q, dP + 1.0
        K = Pm / (Pm + 1.0)
        dK = dPm / (Pm + 1.0) ** 2
        dmu = (1.0 - K) * dmu + dK * (u[t] - mu)
        mu = mu + K * (u[t] - mu)
        dP = -dK * Pm + (1.0 - K) * dPm
        P = (1.0 - K) * Pm
        if valid[t]:
            r = v[t] - mu
            ll[t] = -0.5 * math.log(2 * math.pi) - math.log(s) - 0.5 * r * r / (s * s) - log_w[t]
            grad[t, 0] = r / (s * s) * dmu
            grad[t, 1] = -1.0 / s + r * r / (s * s * s)
    return ll, grad


def answer_range_log_width(task: pd.Series) -> np.ndarray:
    """log(high − low) of each trial's valid answer range (:data:`VALID_ANSWERS`, by task name)."""
    width = {name: hi - lo for name, (lo, hi) in VALID_ANSWERS.items()}
    names = task.astype(str)
    unknown = sorted(set(names) - set(width))
    if unknown:
        raise InputError(f"unknown magnitude task(s) {', '.join(unknown)}; choose from: {', '.join(width)}")
    return np.log(names.map(width).to_numpy(dtype=np.float64))


class _MagnitudeModel(CognitiveModel):
    """A magnitude observer: Gaussian answers on the session-normalised scale, one likelihood
    kernel over the valid answers ((v, u, log W) per answer; NLL, MLE objective and the PyMC
    model are derived from it), and a closed-form or profile MLE (:meth:`fit_subject`)."""

    experiment: ClassVar[str] = EXPERIMENT
    observation_fields: ClassVar[tuple[str, ...]] = ("v", "u", "log_w")
    observed_name: ClassVar[str] = "estimate"

    def observation_mask(self, data: MagnitudeData) -> np.ndarray | None:
        return data.valid

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, MagnitudeData]:
        out: dict[Hashable, MagnitudeData] = {}
        for sid, g in trials.groupby("subject", sort=False):
            g = g.sort_values(["session", "trial"], kind="stable")
            lo, hi = g["range_low"].to_numpy(np.float64), g["range_high"].to_numpy(np.float64)
            y = g["action"].to_numpy(dtype=np.float64, na_value=np.nan)
            valid = g["valid"].to_numpy(bool) & np.isfinite(y)
            out[sid] = MagnitudeData(
                u=(g["x"].to_numpy(np.float64) - lo) / (hi - lo), v=np.where(valid, (y - lo) / (hi - lo), 0.0),
                valid=valid, log_w=np.log(hi - lo), first=(g["trial"].to_numpy() == 0),
                log_answer_range=answer_range_log_width(g["task"]))
        return out

    def lapse_log_uniform(self, data: MagnitudeData) -> np.ndarray:
        """A random answer is uniform over the task's valid answer range (the environment's
        random answer): density 1/width on the y scale the kernels score; an invalid trial the
        Kalman kernel keeps to drive its filter holds no answer."""
        return np.where(data.valid, -data.log_answer_range, NO_ANSWER_LOG_UNIFORM)

    def n_observations(self, data: MagnitudeData) -> int:
        return int(data.valid.sum())

    def _line_fit(self, data: MagnitudeData, lo: float, hi: float) -> tuple[float, float, float, float]:
        u, v = data.u[data.valid], data.v[data.valid]
        n = u.size
        if n < 3:
            raise InputError("a magnitude fit needs at least 3 valid answers")
        du = u - u.mean()
        if not du @ du > 1e-12:  # an adaptive session may ask one stimulus throughout
            raise InputError(f"a magnitude fit needs answers to at least 2 distinct stimuli: all {n} valid answers "
                             f"are to the stimulus at u = {float(u[0]):.3g} of the range, so the slope (and the prior "
                             "weight) is not identified")
        beta = float(np.clip((du @ (v - v.mean())) / (du @ du), lo, hi))
        c = float(v.mean() - beta * u.mean())
        rss = float(((v - beta * u - c) ** 2).sum())
        return beta, c, rss, float(gauss_nll(rss, n) + data.log_w[data.valid].sum())

    def fit_subject(self, data: MagnitudeData, n_starts: int | None = None,
                    grid_nll: np.ndarray | None = None) -> MLEResult:
        theta, nll = self._closed_form_fit(data)
        return self._result(theta, nll, True, data)

    @abstractmethod
    def _closed_form_fit(self, data: MagnitudeData) -> tuple[np.ndarray, float]:
        """(natural-scale MLE, NLL) without a numerical search (closed form or 1-D profile)."""


class StaticBayesModel(_MagnitudeModel):
    """Static Bayesian observer (w_prior, mu_p, sigma_dec) shared over a subject's sessions.

    MLE in closed form: least squares with the slope 1 − w_prior clipped to [0, 1], then
    μ_p = intercept / w_prior (clipped to its bounds) and σ̂² = RSS/n.  The hierarchical PyMC
    model samples w_prior centred (:attr:`centred_parameters`)."""

    name: ClassVar[str] = "static-bayes"
    parameters: ClassVar[ParameterSet] = OBSERVERS["static-bayes"][0]
    pointwise_kernel: ClassVar[Any] = static_pointwise
    #: The slope 1 − w_prior of a subject's answers is pinned to ±0.03 by 3 × 50 trials at
    #: σ_dec/W = 0.1, far tighter than the population spread of logit w_prior: centred w_prior
    #: (non-centred: bulk ESS 252 for w_prior_mu at 4 × 1000 draws; centred: ≥ 1100).  mu_p and
    #: sigma_dec stay non-centred: their population SD can be ≈ 0 (a funnel when centred).
    centred_parameters: ClassVar[tuple[str, ...]] = ("w_prior",)

    def _closed_form_fit(self, data: MagnitudeData) -> tuple[np.ndarray, float]:
        beta, c, rss, nll = self._line_fit(data, 0.0, 1.0)
        w = static_bayes_w_prior.py_func(beta)
        mp = self.parameters["mu_p"]
        m = float(np.clip(static_bayes_mu_p.py_func(c, 0.0, w), mp.lower, mp.upper)) if w > 1e-9 else mp.default
        theta = np.array([w, m, 0.0])
        u, v = data.u[data.valid], data.v[data.valid]
        rss = float(((v - static_bayes.py_func(u, w, m)) ** 2).sum())
        theta[2] = max(math.sqrt(rss / u.size), 1e-6)
        return theta, self.nll_grad(theta, data)[0]


class LinearModel(_MagnitudeModel):
    """Linear observer (w, b, sigma_dec) shared over a subject's sessions (OLS)."""

    name: ClassVar[str] = "linear"
    parameters: ClassVar[ParameterSet] = OBSERVERS["linear"][0]
    pointwise_kernel: ClassVar[Any] = linear_pointwise
    #: The parameters each subject's data pin are sampled centred, chosen from the data before sampling
    #: (:mod:`cogtestbed.inference.centring`; on for this family by ``benchmarks/studies/centring_by_data.py``).
    centre_pinned: ClassVar[bool] = True

    def _closed_form_fit(self, data: MagnitudeData) -> tuple[np.ndarray, float]:
        pw, pb = self.parameters["w"], self.parameters["b"]
        beta, c, rss, nll = self._line_fit(data, pw.lower, pw.upper)
        theta = np.array([beta, float(np.clip(c, pb.lower, pb.upper)), 0.0])
        u, v = data.u[data.valid], data.v[data.valid]
        theta[2] = max(math.sqrt(float(((v - theta[0] * u - theta[1]) ** 2).sum()) / u.size), 1e-6)
        return theta, self.nll_grad(theta, data)[0]


class KalmanModel(_MagnitudeModel):
    """Kalman observer (q_over_r, sigma_dec), reset per session: profile MLE over q/r.

    Only q/r is identifiable (scaling q, r and P0 together leaves the gain unchanged), and q/r
    itself is weakly identified once the gain saturates (q/r ≳ 10: K ≈ 1, the answers track x)
    or the filter settles to a running mean (q/r ≲ 1e-3 over 50 trials)."""

    name: ClassVar[str] = "kalman"
    parameters: ClassVar[ParameterSet] = OBSERVERS["kalman"][0]
    pointwise_kernel: ClassVar[Any] = kalman_pointwise
    #: nutpie's low-rank mass matrix: by the rule written before the run, on fresh data sets 2 and 3 it gave
    #: at least the diagonal's min bulk ESS per CPU-second at R-hat <= 1.01 with no more divergences
    #: (docs/benchmarks.md, "The low-rank mass matrix per family").
    low_rank_mass_matrix: ClassVar[bool] = True
    #: every trial drives the filter; an invalid answer contributes ll = 0 inside the kernel.
    observation_fields: ClassVar[tuple[str, ...]] = ("v", "u", "valid", "log_w", "first")

    def observation_mask(self, data: MagnitudeData) -> None:
        return None

    def _closed_form_fit(self, data: MagnitudeData) -> tuple[np.ndarray, float]:
        # sessions are concatenated; the filter resets at each `first`, so profile over q/r on the
        # whole sequence by running the session-wise filter inside the golden-section search.
        best = (math.inf, 0.1)
        starts = np.flatnonzero(data.first)
        bounds = [*starts.tolist(), data.u.size]
        grid = np.linspace(-4.0, 3.0, 29)
        for lq in grid:
            rss = self._rss(data, 10.0 ** lq, bounds)
            if rss < best[0]:
                best = (rss, 10.0 ** lq)
        from scipy.optimize import minimize_scalar

        lq0 = math.log10(best[1])
        res = minimize_scalar(lambda z: self._rss(data, 10.0 ** z, bounds), bounds=(lq0 - 0.25, lq0 + 0.25),
                              method="bounded", options={"xatol": 1e-6})
        qr = float(10.0 ** res.x) if res.fun <= best[0] else best[1]
        p = self.parameters["q_over_r"]
        qr = float(np.clip(qr, 1e-12, p.upper))
        n = int(data.valid.sum())
        theta = np.array([qr, max(math.sqrt(self._rss(data, qr, bounds) / n), 1e-6)])
        return theta, self.nll_grad(theta, data)[0]

    @staticmethod
    def _rss(data: MagnitudeData, qr: float, bounds: list[int]) -> float:
        from cogtestbed.inference.magnitude_fits import kalman_means

        rss = 0.0
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            m = kalman_means(data.u[a:b], 0.5, qr)
            ok = data.valid[a:b]
            rss += float(((data.v[a:b][ok] - m[ok]) ** 2).sum())
        return rss


MODELS: dict[str, CognitiveModel] = {m.name: m for m in (StaticBayesModel(), LinearModel(), KalmanModel())}
