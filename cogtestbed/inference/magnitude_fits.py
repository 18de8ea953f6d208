"""Numba maximum-likelihood fits of the BayesBench observer models (Ma, Wang & Fountas 2025,
Sec. 3.2 and App. A.13) and the factor-evidence procedure (Sec. 3.4, App. A.8).

Every model is Gaussian in the response, y_t ~ N(μ_t, σ_dec²), so σ_dec has the closed form
σ̂² = RSS/n and each fit reduces to least squares for μ:

=====================  ====================================================================
linear                 μ = w·u + b (OLS)
static                 μ = (1 − w_prior)·u + w_prior·μ_p, w_prior ∈ [0, 1] (OLS, slope clipped)
static-gain            g·[(1 − w)u + wμ_p] + δ, g > 0: a positive-slope line (5 parameters, 3
                       identifiable — AIC still counts 5, see :data:`AIC_PARAMS`)
kalman                 μ = the random-walk Kalman mean on the true x, profile likelihood over
                       q/r (log-grid + golden section), μ0 = session midpoint, P0 = r
kalman-gain            g·μ_kalman + δ, g ≥ 0
=====================  ====================================================================

and each has a log (WEBER) version fitted on log(x + ε), log(y + ε) whose likelihood on y adds
the Jacobian −Σ log(y_t + ε), so AICs are comparable across scales.  The linear-space models work
on u = (x − a)/W, v = (y − a)/W and add n·log W.  Fits are per session (one line per session,
as Fig. 1) and a cell's AIC is the sum over its sessions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from cogtestbed.inference.magnitude_observers import (
    KALMAN_P0,
    LOG_EPS,
    static_bayes,
    static_bayes_mu_p,
    static_bayes_w_prior,
)

VARIANTS = ("linear", "linear-log", "static", "static-log", "static-gain", "static-gain-log", "kalman",
            "kalman-log", "kalman-gain", "kalman-gain-log")
#: Factor levels of each variant: BAYESIAN, WEBER, SEQUENTIAL, GAIN (App. A.8).
FACTOR_NAMES = ("BAYESIAN", "WEBER", "SEQUENTIAL", "GAIN")
FACTORS = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [1, 1, 0, 1],
                    [1, 0, 1, 0], [1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 1, 1]], dtype=np.int64)
#: Nuisance factors conditioned on for each factor (the cells of App. A.8).  BAYESIAN conditions on
#: WEBER only (SEQUENTIAL and GAIN exist only on the Bayesian side).
NUISANCE = {"BAYESIAN": ("WEBER",), "WEBER": ("BAYESIAN", "SEQUENTIAL", "GAIN"),
            "SEQUENTIAL": ("WEBER", "GAIN"), "GAIN": ("WEBER", "SEQUENTIAL")}
#: [gap] parameters AIC counts per session: the free parameters of each model as parameterised
#: here (linear w, b, σ; static w_prior, μ_p, σ; + g, δ for gain stages; Kalman q/r, σ with μ0,
#: P0 fixed).  Redundant gain parameters are counted, so a gain stage must earn its 2 parameters.
AIC_PARAMS = np.array([3, 3, 3, 3, 5, 5, 2, 2, 4, 4], dtype=np.float64)
#: Search range of log10(q/r) for the Kalman profile likelihood and its grid size.
LOG10_QR_RANGE = (-4.0, 3.0)
QR_GRID = 29
GOLDEN_ITERS = 30
#: Floor of σ̂ (relative to the session width) so a perfect responder has a finite likelihood.
SIGMA_FLOOR = 1e-6
_LOG2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def gauss_nll(rss: float, n: int) -> float:
    """NLL of n Gaussian residuals at the ML variance RSS/n (floored)."""
    var = max(rss / n, SIGMA_FLOOR * SIGMA_FLOOR)
    return 0.5 * n * (_LOG2PI + math.log(var)) + 0.5 * rss / var


@njit(cache=True)
def ols(a: np.ndarray, b: np.ndarray, lo_slope: float, hi_slope: float) -> tuple[float, float, float]:
    """Least squares b ≈ β·a + c with β clipped to [lo_slope, hi_slope]: (β, c, RSS)."""
    n = a.shape[0]
    ma, mb = a.mean(), b.mean()
    sab, saa = 0.0, 0.0
    for i in range(n):
        sab += (a[i] - ma) * (b[i] - mb)
        saa += (a[i] - ma) ** 2
    beta = sab / saa if saa > 0 else 0.0
    beta = min(max(beta, lo_slope), hi_slope)
    c = mb - beta * ma
    rss = 0.0
    for i in range(n):
        rss += (b[i] - beta * a[i] - c) ** 2
    return beta, c, rss


@njit(cache=True)
def kalman_means(s: np.ndarray, mu0: float, qr: float) -> np.ndarray:
    """Posterior means μ_{t|t} of the random-walk Kalman filter fed the true stimuli ``s``
    (Sec. 3.2, model 3; r = 1, P0 = KALMAN_P0·r)."""
    out = np.empty(s.shape[0])
    mu, P = mu0, KALMAN_P0
    for t in range(s.shape[0]):
        P = P + qr
        K = P / (P + 1.0)
        mu = mu + K * (s[t] - mu)
        P = (1.0 - K) * P
        out[t] = mu
    return out


@njit(cache=True)
def _kalman_rss(s: np.ndarray, r: np.ndarray, valid: np.ndarray, mu0: float, lqr: float,
                gain: bool) -> tuple[float, float, float]:
    """(RSS, g, δ) of the Kalman mean (with an optional g ≥ 0, δ stage) at log10 q/r = ``lqr``."""
    m = kalman_means(s, mu0, 10.0 ** lqr)[valid]
    rv = r[valid]
    if gain:
        g, d, rss = ols(m, rv, 0.0, np.inf)
        return rss, g, d
    return float(np.sum((rv - m) ** 2)), 1.0, 0.0


@njit(cache=True)
def fit_kalman(s: np.ndarray, r: np.ndarray, valid: np.ndarray, mu0: float,
               gain: bool) -> tuple[float, float, float, float]:
    """Profile fit over log10 q/r: grid then golden section.  Returns (RSS, q/r, g, δ)."""
    lo, hi = LOG10_QR_RANGE
    grid = np.linspace(lo, hi, QR_GRID)
    best, k = np.inf, 0
    for j in range(QR_GRID):
        v = _kalman_rss(s, r, valid, mu0, grid[j], gain)[0]
        if v < best:
            best, k = v, j
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, QR_GRID - 1)]
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = _kalman_rss(s, r, valid, mu0, c, gain)[0], _kalman_rss(s, r, valid, mu0, d, gain)[0]
    for _ in range(GOLDEN_ITERS):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = _kalman_rss(s, r, valid, mu0, c, gain)[0]
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = _kalman_rss(s, r, valid, mu0, d, gain)[0]
    x = c if fc < fd else d
    rss, g, dd = _kalman_rss(s, r, valid, mu0, x, gain)
    if best < rss:  # the grid point beat the refinement (flat profile)
        x = grid[k]
        rss, g, dd = _kalman_rss(s, r, valid, mu0, x, gain)
    return rss, 10.0 ** x, g, dd


@njit(cache=True, inline="always")
def _put(params: np.ndarray, v: int, a: float, b: float, c: float) -> None:
    params[v, 0], params[v, 1], params[v, 2] = a, b, c


@njit(cache=True)
def fit_session(x: np.ndarray, y: np.ndarray, lo: float, hi: float,
                nll: np.ndarray, params: np.ndarray) -> None:
    """All 10 variants on one session (``y`` NaN where invalid): NLL on the y scale into ``nll``
    (inf when a variant cannot be fitted) and three parameters per variant into ``params``:
    linear (w, b, σ), static (w_prior, μ_p, σ), static-gain (g, δ, σ), kalman (q/r, σ, ·),
    kalman-gain (q/r, g, δ); log variants likewise on the log scale."""
    valid = ~np.isnan(y)
    n = int(valid.sum())
    nll[:] = np.inf
    params[:] = np.nan
    if n < 3:
        return
    W = hi - lo
    feasible_log = True
    for t in range(y.shape[0]):
        if valid[t] and y[t] + LOG_EPS <= 0.0:
            feasible_log = False
    for scale in range(2):
        if scale == 1 and not feasible_log:
            continue
        if scale == 0:
            s = (x - lo) / W
            r = (y - lo) / W
            jac = n * math.log(W)
            mu0 = 0.5
        else:
            s = np.log(x + LOG_EPS)
            r = np.log(y + LOG_EPS)
            jac = 0.0
            for t in range(y.shape[0]):
                if valid[t]:
                    jac += r[t]
            mu0 = math.log(0.5 * (lo + hi) + LOG_EPS)
        sv, rv = s[valid], r[valid]
        b, c, rss = ols(sv, rv, -np.inf, np.inf)  # linear
        nll[scale] = gauss_nll(rss, n) + jac
        _put(params, scale, b, c, math.sqrt(rss / n))
        b, c, rss = ols(sv, rv, 0.0, 1.0)  # static Bayes
        w = static_bayes_w_prior(b)
        nll[2 + scale] = gauss_nll(rss, n) + jac
        _put(params, 2 + scale, w, static_bayes_mu_p(c, 0.0, w) if w > 1e-12 else 0.5, math.sqrt(rss / n))
        b, c, rss = ols(sv, rv, 0.0, np.inf)  # static Bayes + gain: a positive slope
        nll[4 + scale] = gauss_nll(rss, n) + jac
        _put(params, 4 + scale, b, c, math.sqrt(rss / n))
        rss, qr, g, d = fit_kalman(s, r, valid, mu0, False)
        nll[6 + scale] = gauss_nll(rss, n) + jac
        _put(params, 6 + scale, qr, math.sqrt(rss / n), np.nan)
        rss, qr, g, d = fit_kalman(s, r, valid, mu0, True)
        nll[8 + scale] = gauss_nll(rss, n) + jac
        _put(params, 8 + scale, qr, g, d)


@njit(cache=True)
def fit_sessions(x: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fit_session` for each row of (n_sessions, T) arrays: NLL (n, 10), params (n, 10, 3)."""
    n = x.shape[0]
    nll = np.empty((n, len(VARIANTS)))
    params = np.empty((n, len(VARIANTS), 3))
    for i in range(n):
        fit_session(x[i], y[i], lo[i], hi[i], nll[i], params[i])
    return nll, params


def factor_evidence(aic: np.ndarray) -> dict[str, float]:
    """P(factor = True | data) for BAYESIAN, WEBER, SEQUENTIAL, GAIN (App. A.8, steps 1–5).

    ``aic``: (10,) AIC of each variant (inf where not fitted).  L(m) = exp(−ΔAIC/2); within each
    cell of nuisance values take the best variant of each level; average over cells holding both
    levels; P = L̄_True / (L̄_True + L̄_False).  NaN when no cell holds both levels.
    """
    finite = np.isfinite(aic)
    out: dict[str, float] = {}
    if not finite.any():
        return {f: float("nan") for f in FACTOR_NAMES}
    lik = np.where(finite, np.exp(-0.5 * (aic - aic[finite].min())), 0.0)
    for f_idx, f in enumerate(FACTOR_NAMES):
        nuis = [FACTOR_NAMES.index(n) for n in NUISANCE[f]]
        cells: dict[tuple[int, ...], list[float]] = {}
        for v in range(len(VARIANTS)):
            if not finite[v]:
                continue
            key = tuple(int(FACTORS[v, j]) for j in nuis)
            best = cells.setdefault(key, [-1.0, -1.0])
            level = int(FACTORS[v, f_idx])
            best[level] = max(best[level], float(lik[v]))
        both = [c for c in cells.values() if c[0] >= 0 and c[1] >= 0]
        if not both:
            out[f] = float("nan")
            continue
        l_true = float(np.mean([c[1] for c in both]))
        l_false = float(np.mean([c[0] for c in both]))
        out[f] = l_true / (l_true + l_false) if l_true + l_false > 0 else 0.5
    return out


@njit(cache=True, error_model="numpy")  # σ = 0: −inf and inf, not an exception
def sigma_terms(theta: np.ndarray, col: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log σ, 1/σ, 1/σ²) of every subject (row of ``theta``, σ in column ``col``): the Gaussian kernels take them
    once a subject, not once an observation."""
    k = theta.shape[0]
    log_s, inv_s, inv_s2 = np.empty(k), np.empty(k), np.empty(k)
    for j in range(k):
        s = theta[j, col]
        log_s[j], inv_s[j], inv_s2[j] = math.log(s), 1.0 / s, 1.0 / (s * s)
    return log_s, inv_s, inv_s2


@njit(cache=True, error_model="numpy")  # σ → 0 in a line search: −inf, not an exception
def static_pointwise(theta: np.ndarray, obs_subject: np.ndarray, v: np.ndarray, u: np.ndarray,
                     log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-observation log-likelihood of y and its gradient in (w_prior, mu_p, sigma_dec):
    v ~ N((1 − w)u + w·μ_p, σ²), ll_y = ll_v − log W (Sec. 3.2, model 2)."""
    n = v.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 3))
    log_s, inv_s, inv_s2 = sigma_terms(theta, 2)
    for i in range(n):
        j = obs_subject[i]
        w, m = theta[j, 0], theta[j, 1]
        r = v[i] - static_bayes(u[i], w, m)
        scaled = r * inv_s2[j]
        ll[i] = -0.5 * math.log(2 * math.pi) - log_s[j] - 0.5 * r * scaled - log_w[i]
        grad[i, 0] = scaled * (m - u[i])
        grad[i, 1] = scaled * w
        grad[i, 2] = -inv_s[j] + r * scaled * inv_s[j]
    return ll, grad


# ============================================================================ data cube
@dataclass
class Cube:
    """One subject's trials as arrays (task, condition, modality, range, trial); NaN = missing.

    ``Y`` is NaN for invalid answers; ``X`` holds every presented stimulus."""

    X: np.ndarray
    Y: np.ndarray
    LO: np.ndarray
    HI: np.ndarray

    @property
    def present(self) -> np.ndarray:
        return ~np.all(np.isnan(self.X), axis=-1)

    def resample(self, idx: np.ndarray) -> Cube:
        """Trials ``idx`` (task, condition, range, T) of every session, all modalities alike."""
        full = np.broadcast_to(idx[:, :, None, :, :], self.X.shape)
        return Cube(np.take_along_axis(self.X, full, -1), np.take_along_axis(self.Y, full, -1), self.LO, self.HI)


def text_weight(yt: np.ndarray, yi: np.ndarray, yc: np.ndarray, ok: np.ndarray) -> float:
    """α of Table 1's α-combiner, y_text+image ≈ α·y_text + (1 − α)·y_image: least squares over
    the trials ``ok`` answered in all three modalities, clipped to [0, 1] (½ when the unimodal
    answers never differ)."""
    dt, dc = np.where(ok, yt - yi, 0.0), np.where(ok, yc - yi, 0.0)
    return float(np.clip((dt * dc).sum() / (dt * dt).sum(), 0, 1)) if (dt * dt).sum() > 0 else 0.5
