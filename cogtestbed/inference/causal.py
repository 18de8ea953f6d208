"""Causal Bayes net (CBN) models of the collider task, the thesis's point fit, and its metrics.

**Closed forms** (Dettki 2025 Eq. 4.1, App. A.3 with its typos corrected).  With
canonical items (C1 = the queried cause), e(c1, c2) = P(E=1 | C1=c1, C2=c2) and the joint
P(C1=c1, C2=c2) = π(c1, c2):

    I = e00    II = e01    III = e11
    IV = π11 / (π11 + π01)                 V = π10 / (π10 + π00)
    VI = e11 π11 / (e11 π11 + e01 π01)     VIII = e10 π10 / (e10 π10 + e00 π00)
    VII = (e11 π11 + e10 π10) / Z,  Z = Σ e·π
    IX = (1−e11) π11 / ((1−e11) π11 + (1−e01) π01)
    X = ((1−e11) π11 + (1−e10) π10) / (1 − Z)
    XI = (1−e10) π10 / ((1−e10) π10 + (1−e00) π00)

The leaky noisy-OR (Eq. 2.1) is e(c1, c2) = 1 − (1−b)(1−m1)^c1 (1−m2)^c2 with independent
causes π = pC1·pC2 products; the logistic link (CogSci 2025 / causAIign ``link="logistic"``) is
e = σ(w0 + w1 c1 + w2 c2) with w = 3·tanh(θ).  Correlated causes (the associative agent) enter
through π only.

**Point fit, exactly as the thesis** (Dettki 2025 §4.3.2): per agent × condition, rows =
individual judgments y ∈ [0, 1] (ratings / 100), each paired with the prediction of its Roman
task; loss = ½·MSE (≡ Huber with δ = 1 on [0, 1]); every parameter is σ(θ) of an unconstrained θ;
multi-start from θ ~ N(0, 0.1²) with seeds ``seed + r`` (R = 5 restarts; LOOCV refits use
max(1, R//2)); schemes 3p (b, m, pC) and 4p (b, m1, m2, pC).  The optimiser is a BFGS with
Armijo backtracking compiled with numba (the thesis used torch L-BFGS; the optimum is the
same, we also add two spread starts at θ = ±1 so that an unlucky init cannot decide it).  The
loss depends on the rows only through per-task counts, sums and sums of squares, so a fit costs
microseconds.  Reported (row level, n rows, k parameters): MAE, RMSE, R² = 1 − SSE/SST,
AIC = n·ln(SSE/n) + 2k, BIC = n·ln(SSE/n) + k·ln n.  Task-level LOOCV: drop each Roman task,
refit on the other 10, predict its mean; pool the 11 (prediction, mean) pairs into RMSE, MAE and
R² = 1 − SS_res/SS_tot (SS_tot around the mean of the 11 held-out means).  The init-time "loss"
of the thesis tables (an L-BFGS artefact) is not reproduced; ``loss`` here is the fitted ½MSE.

Scheme selection (``scheme="auto"``): the larger pooled LOOCV R²; fallbacks when it is not
finite: in-sample R², then lower BIC, then lower AIC; ties within 1e-6 go to the lower LOOCV
RMSE, then BIC, AIC and loss.

**Metrics on raw judgments** (task means of the normalised ratings, Dettki 2025 Eq. 2.3.2 and 4.3, Fig. 4.2):
EA = VIII − VI (causAIign's code; reproduces the human .100), EA_half = VII − VI (the thesis's
equation), MV = IV − V, LAD = mean(m1, m2) − b of the winning CBN, normative reasoner iff
EA > 0.3, |MV| ≤ 0.05 and LOOCV R² ≥ 0.89; alignment = Spearman ρ between the agent's judgments
and the human means of the same (domain, letter, cntbl_cond), 95 % percentile bootstrap over
items (B = 2000).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numba import njit
from scipy import stats

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.numerics import sigmoid as _sig
from cogtestbed.parameters import Parameter, ParameterSet

EXPERIMENT = "collider"
N_TASKS = 11
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI")
#: Task indices used by the metrics.
I_IV, I_V, I_VI, I_VII, I_VIII = 3, 4, 5, 6, 7
#: The repo's normative-reasoner thresholds.
EA_STRICT, MV_EPS, LOOCV_R2_MIN = 0.3, 0.05, 0.89
TIE_EPS = 1e-6
#: Scheme codes of the numba kernels: (link, n_params).
SCHEMES = {"3p": (0, 3), "4p": (0, 4), "logistic-3p": (1, 3), "logistic-4p": (1, 4)}
_EPS = 1e-300


# ----------------------------------------------------------------------------- closed forms
@njit(cache=True)
def task_probs_general(e00: float, e01: float, e10: float, e11: float, p11: float, p10: float,
                       p01: float, p00: float, out: np.ndarray) -> None:
    """The 11 task probabilities for likelihoods e_c1c2 and cause joint π_c1c2 (module eqs.)."""
    out[0] = e00
    out[1] = e01
    out[2] = e11
    out[3] = p11 / max(p11 + p01, _EPS)
    out[4] = p10 / max(p10 + p00, _EPS)
    out[5] = e11 * p11 / max(e11 * p11 + e01 * p01, _EPS)
    z = e11 * p11 + e10 * p10 + e01 * p01 + e00 * p00
    out[6] = (e11 * p11 + e10 * p10) / max(z, _EPS)
    out[7] = e10 * p10 / max(e10 * p10 + e00 * p00, _EPS)
    out[8] = (1 - e11) * p11 / max((1 - e11) * p11 + (1 - e01) * p01, _EPS)
    out[9] = ((1 - e11) * p11 + (1 - e10) * p10) / max(1 - z, _EPS)
    out[10] = (1 - e10) * p10 / max((1 - e10) * p10 + (1 - e00) * p00, _EPS)


@njit(cache=True)
def noisy_or_probs(b: float, m1: float, m2: float, pc1: float, pc2: float, out: np.ndarray) -> None:
    """Leaky noisy-OR CBN with independent causes (thesis Eq. 2.1 / 4.1)."""
    e00 = b
    e01 = 1 - (1 - b) * (1 - m2)
    e10 = 1 - (1 - b) * (1 - m1)
    e11 = 1 - (1 - b) * (1 - m1) * (1 - m2)
    task_probs_general(e00, e01, e10, e11, pc1 * pc2, pc1 * (1 - pc2), (1 - pc1) * pc2,
                       (1 - pc1) * (1 - pc2), out)


@njit(cache=True)
def logistic_probs(w0: float, w1: float, w2: float, pc1: float, pc2: float, out: np.ndarray) -> None:
    """Logistic-link CBN: e(c1, c2) = σ(w0 + w1·c1 + w2·c2), independent causes."""
    task_probs_general(_sig(w0), _sig(w0 + w2), _sig(w0 + w1), _sig(w0 + w1 + w2),
                       pc1 * pc2, pc1 * (1 - pc2), (1 - pc1) * pc2, (1 - pc1) * (1 - pc2), out)


def cbn_predictions(b: float, m1: float, m2: float, pc1: float, pc2: float | None = None) -> np.ndarray:
    """The 11 noisy-OR predictions (I…XI) as an array (``pc2`` defaults to ``pc1``)."""
    out = np.empty(N_TASKS)
    noisy_or_probs(b, m1, m2, pc1, pc1 if pc2 is None else pc2, out)
    return out


# ----------------------------------------------------------------------------- fit kernels
@njit(cache=True)
def _predict(theta: np.ndarray, link: int, k: int, out: np.ndarray) -> None:
    if link == 0:
        b = _sig(theta[0])
        m1 = _sig(theta[1])
        m2 = m1 if k == 3 else _sig(theta[2])
        pc = _sig(theta[k - 1])
        noisy_or_probs(b, m1, m2, pc, pc, out)
    else:
        w0 = 3 * math.tanh(theta[0])
        w1 = 3 * math.tanh(theta[1])
        w2 = w1 if k == 3 else 3 * math.tanh(theta[2])
        pc = _sig(theta[k - 1])
        logistic_probs(w0, w1, w2, pc, pc, out)


@njit(cache=True)
def _loss_grad(theta: np.ndarray, link: int, k: int, cnt: np.ndarray, s1: np.ndarray,
               s2: np.ndarray, mask: np.ndarray, n: float, grad: np.ndarray) -> float:
    """½·MSE over the rows of the unmasked tasks, and its gradient (central differences on the
    11 closed forms, which is exact to ~1e-10 and cheaper than symbolic derivatives here)."""
    pred = np.empty(N_TASKS)
    _predict(theta, link, k, pred)
    loss = 0.0
    for t in range(N_TASKS):
        if mask[t]:
            loss += s2[t] - 2 * pred[t] * s1[t] + cnt[t] * pred[t] * pred[t]
    h = 1e-6
    tp = theta.copy()
    pp = np.empty(N_TASKS)
    pm = np.empty(N_TASKS)
    for j in range(k):
        tp[j] = theta[j] + h
        _predict(tp, link, k, pp)
        tp[j] = theta[j] - h
        _predict(tp, link, k, pm)
        tp[j] = theta[j]
        g = 0.0
        for t in range(N_TASKS):
            if mask[t]:
                dp = (pp[t] - pm[t]) / (2 * h)
                g += (cnt[t] * pred[t] - s1[t]) * dp
        grad[j] = g / n
    return 0.5 * loss / n


@njit(cache=True)
def _bfgs(theta0: np.ndarray, link: int, k: int, cnt: np.ndarray, s1: np.ndarray,
          s2: np.ndarray, mask: np.ndarray, n: float, max_iter: int) -> tuple[np.ndarray, float]:
    """BFGS with Armijo backtracking (Nocedal & Wright eq. 6.17, 3.6a) on the unconstrained θ."""
    theta = theta0.copy()
    g = np.empty(k)
    f = _loss_grad(theta, link, k, cnt, s1, s2, mask, n, g)
    h = np.eye(k)
    g_new = np.empty(k)
    for _ in range(max_iter):
        if np.max(np.abs(g)) < 1e-10:
            break
        d = -h @ g
        slope = g @ d
        if slope >= 0:
            h = np.eye(k)
            d = -g
            slope = g @ d
        step = 1.0
        ok = False
        for _ in range(60):
            cand = theta + step * d
            f_new = _loss_grad(cand, link, k, cnt, s1, s2, mask, n, g_new)
            if np.isfinite(f_new) and f_new <= f + 1e-4 * step * slope:
                ok = True
                break
            step *= 0.5
        if not ok:
            break
        s = cand - theta
        y = g_new - g
        decrease = f - f_new
        theta = cand
        f = f_new
        g[:] = g_new
        sy = s @ y
        if sy > 1e-16:
            rho = 1.0 / sy
            hy = h @ y
            h = h + ((sy + y @ hy) * rho * rho) * np.outer(s, s) - rho * (np.outer(hy, s) + np.outer(s, hy))
        else:
            h = np.eye(k)
        if decrease <= 1e-15 * (1.0 + abs(f)):
            break
        # keep θ in a range where σ(θ) is not numerically flat (|θ| ≤ 30 ⇒ σ ∈ [1e-13, 1 − 1e-13])
        for j in range(k):
            theta[j] = min(30.0, max(-30.0, theta[j]))
    return theta, f


@njit(cache=True)
def _multistart(starts: np.ndarray, link: int, k: int, cnt: np.ndarray, s1: np.ndarray,
                s2: np.ndarray, mask: np.ndarray, max_iter: int) -> tuple[np.ndarray, float]:
    n = 0.0
    for t in range(N_TASKS):
        if mask[t]:
            n += cnt[t]
    best = starts[0].copy()
    best_f = np.inf
    for r in range(starts.shape[0]):
        theta, f = _bfgs(starts[r], link, k, cnt, s1, s2, mask, n, max_iter)
        if f < best_f:
            best_f = f
            best = theta
    return best, best_f


@njit(cache=True)
def fit_kernel(starts: np.ndarray, cv_starts: np.ndarray, link: int, k: int, cnt: np.ndarray,
               s1: np.ndarray, s2: np.ndarray, max_iter: int, cv_max_iter: int
               ) -> tuple[np.ndarray, float, np.ndarray]:
    """Full fit plus task-level LOOCV: (θ̂, ½MSE, held-out predictions of the 11 tasks; NaN for
    tasks without rows)."""
    mask = cnt > 0
    theta, f = _multistart(starts, link, k, cnt, s1, s2, mask, max_iter)
    held = np.full(N_TASKS, np.nan)
    pred = np.empty(N_TASKS)
    for t in range(N_TASKS):
        if not mask[t]:
            continue
        m2 = mask.copy()
        m2[t] = False
        th, _ = _multistart(cv_starts, link, k, cnt, s1, s2, m2, cv_max_iter)
        _predict(th, link, k, pred)
        held[t] = pred[t]
    return theta, f, held


# ----------------------------------------------------------------------------- the fit
@dataclass(frozen=True)
class CBNFit:
    """One thesis-style CBN fit (parameters, row-level fit, task-level LOOCV)."""

    scheme: str
    b: float
    m1: float
    m2: float
    p_c: float
    loss: float
    mae: float
    rmse: float
    r2: float
    aic: float
    bic: float
    loocv_r2: float
    loocv_rmse: float
    loocv_mae: float
    n: int
    k: int
    predictions: tuple[float, ...]

    @property
    def lad(self) -> float:
        """Leak-adjusted determinacy (m1 + m2)/2 − b (causAIign's ``normative_metric``)."""
        return 0.5 * (self.m1 + self.m2) - self.b

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lad"] = self.lad
        d["predictions"] = dict(zip(ROMAN, self.predictions, strict=True))
        return d


def task_stats(task: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-task count, sum and sum of squares of ``y`` (the fit's sufficient statistics)."""
    task = np.asarray(task, dtype=np.int64)
    y = np.asarray(y, dtype=np.float64)
    cnt = np.bincount(task, minlength=N_TASKS).astype(np.float64)
    s1 = np.bincount(task, weights=y, minlength=N_TASKS)
    s2 = np.bincount(task, weights=y * y, minlength=N_TASKS)
    return cnt, s1, s2


def thesis_starts(k: int, restarts: int, seed: int) -> np.ndarray:
    """θ ~ N(0, 0.1²) with generator seeds ``seed + r`` (the thesis's init)."""
    return np.array([np.random.default_rng(seed + r).normal(0.0, 0.1, k) for r in range(restarts)])


def fit_cbn(task: np.ndarray, y: np.ndarray, scheme: str = "3p", restarts: int = 5,
            seed: int = 0, max_iter: int = 300, cv_max_iter: int = 150) -> CBNFit:
    """Fit one CBN scheme to judgments ``y`` ∈ [0, 1] of Roman tasks ``task`` (0–10).

    See the module docstring for the objective, the starts and every reported number.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
    task = np.asarray(task, dtype=np.int64)
    y = np.asarray(y, dtype=np.float64)
    if len(y) == 0:
        raise ValueError("no valid judgments to fit")
    if np.any((y < 0) | (y > 1)) or not np.all(np.isfinite(y)):
        raise ValueError("judgments must lie in [0, 1] (ratings / 100)")
    link, k = SCHEMES[scheme]
    cnt, s1, s2 = task_stats(task, y)
    spread = np.array([[1.0] * k, [-1.0] * k])
    starts = np.vstack([thesis_starts(k, restarts, seed), spread])
    cv_starts = np.vstack([thesis_starts(k, max(1, restarts // 2), seed), spread])
    theta, loss, held = fit_kernel(starts, cv_starts, link, k, cnt, s1, s2, max_iter, cv_max_iter)
    pred = np.empty(N_TASKS)
    _predict(theta, link, k, pred)
    resid = y - pred[task]
    n = len(y)
    sse = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum())
    sse_safe = max(sse, 1e-300)
    has = cnt > 0
    means = np.where(has, s1 / np.maximum(cnt, 1), np.nan)
    r_cv = means[has] - held[has]
    ss_tot_cv = float(((means[has] - means[has].mean()) ** 2).sum())
    if link == 0:
        b, m1 = _sig(theta[0]), _sig(theta[1])
        m2 = m1 if k == 3 else _sig(theta[2])
    else:  # logistic: report the implied leak and powers (b = e00, m_i = Cheng's power)
        w0 = 3 * math.tanh(theta[0])
        w1 = 3 * math.tanh(theta[1])
        w2 = w1 if k == 3 else 3 * math.tanh(theta[2])
        b = _sig(w0)
        m1 = (_sig(w0 + w1) - b) / max(1 - b, 1e-12)
        m2 = (_sig(w0 + w2) - b) / max(1 - b, 1e-12)
    return CBNFit(
        scheme=scheme, b=float(b), m1=float(m1), m2=float(m2), p_c=float(_sig(theta[k - 1])),
        loss=float(loss), mae=float(np.abs(resid).mean()), rmse=math.sqrt(sse / n),
        r2=1 - sse / sst if sst > 0 else float("nan"),
        aic=n * math.log(sse_safe / n) + 2 * k, bic=n * math.log(sse_safe / n) + k * math.log(n),
        loocv_r2=1 - float(r_cv @ r_cv) / ss_tot_cv if ss_tot_cv > 0 else float("nan"),
        loocv_rmse=math.sqrt(float(np.mean(r_cv ** 2))), loocv_mae=float(np.mean(np.abs(r_cv))),
        n=n, k=k, predictions=tuple(float(x) for x in pred),
    )


def select_scheme(fits: Mapping[str, CBNFit]) -> str:
    """The thesis's scheme choice (module docstring): max LOOCV R², fallbacks and tie-breaks."""
    names = list(fits)

    def key(name: str) -> tuple[float, ...]:
        f = fits[name]
        primary = f.loocv_r2 if all(np.isfinite(fits[n].loocv_r2) for n in names) else (
            f.r2 if all(np.isfinite(fits[n].r2) for n in names) else -f.bic)
        return (-primary, f.loocv_rmse, f.bic, f.aic, f.loss)

    best = min(names, key=key)
    # ties within TIE_EPS on the primary criterion: the secondary keys decide
    tied = [n for n in names if abs(key(n)[0] - key(best)[0]) <= TIE_EPS]
    return min(tied, key=lambda n: key(n)[1:])


def fit_best(task: np.ndarray, y: np.ndarray, scheme: Literal["3p", "4p", "auto"] = "auto",
             **kw: Any) -> tuple[CBNFit, dict[str, CBNFit]]:
    """Fit ``scheme`` (or both and select, ``"auto"``); returns (winner, all fits)."""
    schemes = ("3p", "4p") if scheme == "auto" else (scheme,)
    fits = {s: fit_cbn(task, y, s, **kw) for s in schemes}
    return fits[select_scheme(fits)], fits


# ----------------------------------------------------------------------------- metrics
def task_means(task: np.ndarray, y: np.ndarray) -> np.ndarray:
    cnt, s1, _ = task_stats(task, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, s1 / cnt, np.nan)


def signature_metrics(task: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """EA = VIII − VI, EA_half = VII − VI, MV = IV − V on raw normalised judgments."""
    m = task_means(task, y)
    return {"ea": float(m[I_VIII] - m[I_VI]), "ea_half": float(m[I_VII] - m[I_VI]),
            "mv": float(m[I_IV] - m[I_V])}


def is_normative(ea: float, mv: float, loocv_r2: float) -> bool:
    """causAIign's ``normative_reasoner``: EA > 0.3, |MV| ≤ 0.05, LOOCV R² ≥ 0.89."""
    return bool(ea > EA_STRICT and abs(mv) <= MV_EPS and loocv_r2 >= LOOCV_R2_MIN)


CELL_KEYS = ("domain_label", "cntbl_cond", "item")


def valid_judgments(trials: pd.DataFrame) -> pd.DataFrame:
    """Valid rows with ``y`` = rating / 100."""
    ok = trials["valid"].astype(bool) & trials["action"].notna()
    out = trials.loc[ok].copy()
    out["y"] = out["action"].astype(float) / 100.0
    return out


def aggregate_cells(trials: pd.DataFrame) -> pd.DataFrame:
    """Equal-weighted cell means: one row per (domain, cntbl_cond, item) averaged over subjects
    (how the thesis fits the human data: 240 cells)."""
    v = valid_judgments(trials)
    keys = [k for k in CELL_KEYS if k in v.columns]
    agg = v.groupby(keys, sort=True, observed=True).agg(
        y=("y", "mean"), task_index=("task_index", "first"), letter=("letter", "first"),
        domain=("domain", "first"), n=("y", "size")).reset_index()
    return agg


def needs_cell_aggregation(trials: pd.DataFrame) -> bool:
    """True for the human design: several subjects, none covering every cell."""
    keys = [k for k in ("domain_label", "cntbl_cond") if k in trials.columns]
    n_cells = trials.groupby(keys, observed=True).ngroups
    per_subject = trials.groupby("subject", observed=True)[keys].apply(
        lambda d: len(d.drop_duplicates()))
    return bool(trials["subject"].nunique() > 1 and per_subject.max() < n_cells)


def human_alignment(trials: pd.DataFrame, human: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
                    ) -> dict[str, Any]:
    """Spearman ρ between judgments and human means per (domain, letter, cntbl_cond).

    Pooled and per domain, each with a 95 % percentile bootstrap CI over items (rows of the
    merged table), ``n_boot`` resamples (the thesis: 2000).
    """
    h = valid_judgments(human).groupby(["domain", "letter", "cntbl_cond"], observed=True)["y"].mean()
    a = valid_judgments(trials)
    merged = a.join(h.rename("human"), on=["domain", "letter", "cntbl_cond"]).dropna(subset=["human"])
    rng = np.random.default_rng(seed)

    def rho_ci(x: np.ndarray, z: np.ndarray) -> dict[str, float]:
        if len(x) < 3:
            return {"rho": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": len(x)}
        rho = float(stats.spearmanr(x, z).statistic)
        idx = rng.integers(0, len(x), (n_boot, len(x)))
        boots = _spearman_rows(x[idx], z[idx])
        lo, hi = np.nanpercentile(boots, [2.5, 97.5])
        return {"rho": rho, "lo": float(lo), "hi": float(hi), "n": int(len(x))}

    out = {"pooled": rho_ci(merged["y"].to_numpy(), merged["human"].to_numpy())}
    for dom, g in merged.groupby("domain", observed=True):
        out[str(dom)] = rho_ci(g["y"].to_numpy(), g["human"].to_numpy())
    return out


def _rank_rows(a: np.ndarray) -> np.ndarray:
    return stats.rankdata(a, axis=1)


def _spearman_rows(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair (average ranks for ties), vectorised over resamples."""
    rx = _rank_rows(x)
    rz = _rank_rows(z)
    rx -= rx.mean(axis=1, keepdims=True)
    rz -= rz.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(1) * (rz * rz).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * rz).sum(1) / den


def _metrics_block(task: np.ndarray, y: np.ndarray, scheme: str, **kw: Any) -> dict[str, Any]:
    best, fits = fit_best(task, y, scheme, **kw)  # type: ignore[arg-type]
    sig = signature_metrics(task, y)
    out: dict[str, Any] = {
        "b": best.b, "m1": best.m1, "m2": best.m2, "p_c": best.p_c, "lad": best.lad,
        "mae": best.mae, "rmse": best.rmse, "r2": best.r2, "loocv_r2": best.loocv_r2,
        "loocv_rmse": best.loocv_rmse, "aic": best.aic, "bic": best.bic, "scheme": best.scheme,
        **sig,
    }
    out["normative_reasoner"] = is_normative(sig["ea"], sig["mv"], best.loocv_r2)
    out["loss"] = best.loss
    out["n_rows"] = best.n
    return out | {"_fits": fits}


def collider_metrics(trials: pd.DataFrame, scheme: str = "auto", aggregate: str = "auto",
                     human: str | pd.DataFrame | None = None, per_subject: str = "auto",
                     seed: int = 0) -> dict[str, Any]:
    """The thesis's metrics of one agent (a trial table of the collider experiment).

    ``aggregate``: ``cells`` fits the equal-weighted (domain, cntbl_cond, item) means (the
    thesis's human fit), ``rows`` fits every valid judgment (the LLM fit), ``auto`` picks cells
    for the human design (several subjects, none seeing every cell).  ``scheme``: 3p, 4p or auto.
    ``human``: the RW17 human CSV (or its trial table) for the Spearman alignment.
    ``per_subject``: also fit each subject (``yes``/``no``/``auto`` = when there are 2–500).
    """
    if scheme not in ("3p", "4p", "auto"):
        raise ValueError(f"--scheme must be 3p, 4p or auto, got {scheme!r}")
    if aggregate not in ("auto", "cells", "rows"):
        raise ValueError(f"aggregate must be auto, cells or rows, got {aggregate!r}")
    valid = valid_judgments(trials)
    n_total = len(trials)
    use_cells = aggregate == "cells" or (aggregate == "auto" and needs_cell_aggregation(trials))
    data = aggregate_cells(trials) if use_cells else valid
    block = _metrics_block(data["task_index"].to_numpy(), data["y"].to_numpy(), scheme, seed=seed)
    fits = block.pop("_fits")
    metrics = dict(block)
    metrics["aggregate"] = "cells" if use_cells else "rows"
    metrics["n_subjects"] = int(trials["subject"].nunique())
    metrics["n_invalid"] = int(n_total - len(valid))
    metrics["invalid_rate"] = float((n_total - len(valid)) / max(n_total, 1))
    result: dict[str, Any] = {
        "metrics": metrics,
        "fits": {k: v.as_dict() for k, v in fits.items()},
        "task_means": dict(zip(ROMAN, map(float, task_means(data["task_index"], data["y"])),
                               strict=True)),
    }
    if human is not None:
        from cogtestbed.data.causal import import_rw17_human

        htable = import_rw17_human(human) if not isinstance(human, pd.DataFrame) else human
        result["alignment"] = human_alignment(trials, htable, seed=seed)
        metrics["spearman_rho"] = result["alignment"]["pooled"]["rho"]
    n_sub = metrics["n_subjects"]
    if per_subject == "yes" or (per_subject == "auto" and 1 < n_sub <= 500):
        rows = []
        for subject, g in valid.groupby("subject", sort=True, observed=True):
            blk = _metrics_block(g["task_index"].to_numpy(), g["y"].to_numpy(), scheme, seed=seed)
            blk.pop("_fits")
            rows.append({"subject": _plain(subject), **blk})
        result["per_subject"] = rows
    return result


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


# ----------------------------------------------------------------------------- model objects
B = Parameter.unit("b", 0.2, "leak: P(E=1) with no cause present", prior_mean=-1.0, prior_sd=1.5)
M_ = Parameter.unit("m", 0.7, "causal strength (m1 = m2)", prior_mean=0.5, prior_sd=1.5)
M1 = Parameter.unit("m1", 0.7, "strength of the queried cause", prior_mean=0.5, prior_sd=1.5)
M2 = Parameter.unit("m2", 0.7, "strength of the alternative cause", prior_mean=0.5, prior_sd=1.5)
PC = Parameter.unit("p_c", 0.5, "prior P(C=1) of each cause", prior_mean=0.0, prior_sd=1.0)
#: Precision of the Beta response distribution (hierarchical model only).
KAPPA = Parameter.positive("kappa", 8.0, upper=1e4, description="Beta precision of judgments",
                           prior_mean=2.0, prior_sd=1.0)


@dataclass(frozen=True)
class ColliderData:
    """One subject's valid judgments: Roman task index and y ∈ [0, 1]."""

    task: np.ndarray
    y: np.ndarray


class CBNModel(CognitiveModel):
    """The thesis's CBN as a :class:`CognitiveModel`: its "likelihood" is the Gaussian one that
    makes least squares the MLE, NLL = n/2·ln(2π s²) + SSE/(2 s²) at s² = SSE/n (so AIC/BIC agree
    with the thesis's up to a constant).  ``fit_mle`` therefore returns the ½MSE optimum; the
    full thesis pipeline with LOOCV is :func:`fit_cbn`.  The hierarchical version
    (:meth:`pymc_model`) lives in :mod:`cogtestbed.inference.causal_hierarchical`.
    """

    experiment: ClassVar[str] = EXPERIMENT
    scheme: ClassVar[str] = "3p"

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        v = valid_judgments(trials)
        return {s: ColliderData(g["task_index"].to_numpy(np.int64), g["y"].to_numpy(float))
                for s, g in v.groupby("subject", sort=False, observed=True)}

    def n_observations(self, data: ColliderData) -> int:
        return len(data.y)

    def _theta_to_unconstrained(self, theta: np.ndarray) -> np.ndarray:
        return np.array([p.to_unconstrained(v) for p, v in zip(self.parameters, theta, strict=True)])

    def predictions(self, theta: np.ndarray) -> np.ndarray:
        th = np.asarray(theta, dtype=float)
        if self.scheme == "3p":
            return cbn_predictions(th[0], th[1], th[1], th[2])
        return cbn_predictions(th[0], th[1], th[2], th[3])

    def nll_grad(self, theta: np.ndarray, data: ColliderData) -> tuple[float, np.ndarray]:
        def nll(th: np.ndarray) -> float:
            r = data.y - self.predictions(th)[data.task]
            n = len(r)
            s2 = max(float(r @ r) / n, 1e-12)
            return 0.5 * n * (math.log(2 * math.pi * s2) + 1.0)

        f = nll(theta)
        g = np.zeros(len(theta))
        for j in range(len(theta)):
            h = 1e-6
            tp, tm = theta.copy(), theta.copy()
            tp[j] = min(theta[j] + h, 1.0)
            tm[j] = max(theta[j] - h, 0.0)
            g[j] = (nll(tp) - nll(tm)) / (tp[j] - tm[j])
        return f, g

    def sample_nuisance(self, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
        """The zero-one-inflated Beta response model's κ and (π0, π1) drawn from their priors
        (log κ normal, π Dirichlet), and the same values as the ``cbn`` agent's response model."""
        from cogtestbed.inference.causal_hierarchical import INFLATION_PRIOR, LOG_KAPPA_PRIOR

        kappa = float(np.exp(rng.normal(*LOG_KAPPA_PRIOR)))
        pi = rng.dirichlet(INFLATION_PRIOR)
        truth = {"kappa": kappa, "pi[0]": float(pi[0]), "pi[1]": float(pi[1])}
        return truth, {"kappa": max(kappa, 1e-3), "pi0": float(pi[0]), "pi100": float(pi[1]), "noise_sd": 0.0}

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        from cogtestbed.inference.causal_hierarchical import build_model

        return build_model(trials, self.scheme, pooling="partial" if hierarchical else "none")


class CBN3p(CBNModel):
    name: ClassVar[str] = "cbn-3p"
    scheme: ClassVar[str] = "3p"
    parameters: ClassVar[ParameterSet] = ParameterSet((B, M_, PC), "cbn-3p")


class CBN4p(CBNModel):
    name: ClassVar[str] = "cbn-4p"
    scheme: ClassVar[str] = "4p"
    parameters: ClassVar[ParameterSet] = ParameterSet((B, M1, M2, PC), "cbn-4p")


MODELS: dict[str, CognitiveModel] = {"cbn-3p": CBN3p(), "cbn-4p": CBN4p()}
