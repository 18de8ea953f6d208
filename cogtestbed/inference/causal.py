"""Causal Bayes net (CBN) models of the collider task, the thesis's point fit, and its metrics.

The CBN's closed forms and their exact gradient live in :mod:`cogtestbed.inference.cbn`.

**Point fit, exactly as the thesis** (Dettki 2025 §4.3.2): per agent × condition, rows =
individual judgments y ∈ [0, 1] (ratings / 100), each paired with the prediction of its Roman
task; loss = ½·MSE (≡ Huber with δ = 1 on [0, 1]); every parameter is σ(θ) of an unconstrained θ;
multi-start from θ ~ N(0, 0.1²) with seeds ``seed + r`` (R = 5 restarts; LOOCV refits use
max(1, R//2)); schemes 3p (b, m, pC) and 4p (b, m1, m2, pC).  The optimiser is the package's
numba BFGS (:mod:`cogtestbed.inference.optim`; the thesis used torch L-BFGS; the optimum is the
same, we also add two spread starts at θ = ±1 so that an unlucky init cannot decide it) on the
exact gradient of the closed forms.  The loss depends on the rows only through per-task counts,
sums and sums of squares, so a fit costs microseconds.  Reported (row level, n rows, k
parameters): MAE, RMSE, R² = 1 − SSE/SST,
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

from cogtestbed import no_data
from cogtestbed.errors import InputError
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.cbn import (
    M1,
    M2,
    M_,
    N_TASKS,
    PC,
    ROMAN,
    B,
    cbn_predictions,
    logistic_table_grad,
    noisy_or_table_grad,
    valid_judgments,
)
from cogtestbed.inference.optim import bfgs_driver
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import sigmoid
from cogtestbed.parameters import ParameterSet

EXPERIMENT = "collider"
#: Task indices used by the metrics.
I_IV, I_V, I_VI, I_VII, I_VIII = 3, 4, 5, 6, 7
#: The repo's normative-reasoner thresholds.
EA_STRICT, MV_EPS, LOOCV_R2_MIN = 0.3, 0.05, 0.89
TIE_EPS = 1e-6
#: Scheme codes of the numba kernels: (link, n_params).
SCHEMES = {"3p": (0, 3), "4p": (0, 4), "logistic-3p": (1, 3), "logistic-4p": (1, 4)}
#: Point-fit optimiser settings (the thesis's fit: converged to machine precision).
GTOL, FTOL = 1e-10, 1e-15
#: |θ| ≤ 30 keeps σ(θ) ∈ [1e-13, 1 − 1e-13], where the loss is not numerically flat.
THETA_BOUND = 30.0


# ----------------------------------------------------------------------------- fit kernels
@njit(cache=True)
def _table(theta: np.ndarray, link: int, k: int, table: np.ndarray, dinput: np.ndarray) -> None:
    """Task table (values + derivatives w.r.t. the 4 CBN inputs) at unconstrained ``theta`` and
    ``dinput[c, j]`` = ∂input_c/∂θ_j: σ(θ) for noisy-OR inputs (b, m1, m2, p_c), 3·tanh(θ) for
    the logistic weights (w0, w1, w2); the 3p schemes share θ₁ between the two causes."""
    dinput[:, :] = 0.0
    j2 = 1 if k == 3 else 2
    x = np.empty(4)
    for c, j in ((0, 0), (1, 1), (2, j2), (3, k - 1)):
        if link == 0 or c == 3:
            v = sigmoid(theta[j])
            x[c] = v
            dinput[c, j] += v * (1.0 - v)
        else:
            t = math.tanh(theta[j])
            x[c] = 3.0 * t
            dinput[c, j] += 3.0 * (1.0 - t * t)
    if link == 0:
        noisy_or_table_grad(x[0], x[1], x[2], x[3], table)
    else:
        logistic_table_grad(x[0], x[1], x[2], x[3], table)


@njit(cache=True)
def _predict(theta: np.ndarray, link: int, k: int, out: np.ndarray) -> None:
    table = np.empty((N_TASKS, 5))
    _table(theta, link, k, table, np.empty((4, k)))
    out[:] = table[:, 0]


@njit(cache=True)
def half_mse(theta: np.ndarray, args: tuple) -> tuple[float, np.ndarray]:
    """½·MSE over the rows of the unmasked tasks and its exact gradient in θ.

    From per-task sufficient statistics (count, Σy, Σy²): Σ_rows (y − p_t)² = Σy² − 2p_tΣy +
    n_t p_t², so ∂/∂p_t = (n_t p_t − Σy)/n; the chain rule runs through the closed forms'
    derivatives (:func:`~cogtestbed.inference.cbn.noisy_or_table_grad`)."""
    link, k, cnt, s1, s2, mask, n = args
    table = np.empty((N_TASKS, 5))
    dinput = np.empty((4, k))
    _table(theta, link, k, table, dinput)
    loss = 0.0
    grad = np.zeros(k)
    for t in range(N_TASKS):
        if mask[t]:
            p = table[t, 0]
            loss += s2[t] - 2 * p * s1[t] + cnt[t] * p * p
            dp = (cnt[t] * p - s1[t]) / n
            for c in range(4):
                for j in range(k):
                    grad[j] += dp * table[t, c + 1] * dinput[c, j]
    return 0.5 * loss / n, grad


#: The BFGS multi-start search on :func:`half_mse` (compiled once, cached on disk).
fit_half_mse = bfgs_driver(half_mse)


@njit(cache=True)
def _multistart(starts: np.ndarray, link: int, k: int, cnt: np.ndarray, s1: np.ndarray,
                s2: np.ndarray, mask: np.ndarray, max_iter: int) -> tuple[np.ndarray, float]:
    n = 0.0
    for t in range(N_TASKS):
        if mask[t]:
            n += cnt[t]
    theta, f, _ = fit_half_mse(starts, (link, k, cnt, s1, s2, mask, n), max_iter, GTOL, FTOL, THETA_BOUND)
    return theta, f


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
        raise InputError(f"unknown scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
    task = np.asarray(task, dtype=np.int64)
    y = np.asarray(y, dtype=np.float64)
    if len(y) == 0:
        raise InputError("no valid judgments to fit")
    if np.any((y < 0) | (y > 1)) or not np.all(np.isfinite(y)):
        raise InputError("judgments must lie in [0, 1] (ratings / 100)")
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
        b, m1 = sigmoid(theta[0]), sigmoid(theta[1])
        m2 = m1 if k == 3 else sigmoid(theta[2])
    else:  # logistic: report the implied leak and powers (b = e00, m_i = Cheng's power)
        w0 = 3 * math.tanh(theta[0])
        w1 = 3 * math.tanh(theta[1])
        w2 = w1 if k == 3 else 3 * math.tanh(theta[2])
        b = sigmoid(w0)
        m1 = (sigmoid(w0 + w1) - b) / max(1 - b, 1e-12)
        m2 = (sigmoid(w0 + w2) - b) / max(1 - b, 1e-12)
    return CBNFit(
        scheme=scheme, b=float(b), m1=float(m1), m2=float(m2), p_c=float(sigmoid(theta[k - 1])),
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
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
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
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
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


#: The fit's keys that are null when the answers do not identify the model (fewer than
#: :data:`~cogtestbed.no_data.MIN_DISTINCT_ANSWERS` distinct values: the rule of every experiment).
FIT_KEYS = ("b", "m1", "m2", "p_c", "lad", "mae", "rmse", "r2", "loocv_r2", "loocv_rmse", "aic", "bic",
            "loss", "normative_reasoner")


def degenerate_reason(y: np.ndarray) -> str | None:
    """Why answers ``y`` (0–1 scale) identify no CBN fit, or ``None``
    (:func:`cogtestbed.no_data.degenerate_reason`, shown on the 0–100 scale)."""
    return no_data.degenerate_reason(y, scale=100.0, unit=" (0–100 scale)")


def _metrics_block(task: np.ndarray, y: np.ndarray, scheme: str, **kw: Any) -> dict[str, Any]:
    reason = degenerate_reason(y) if len(y) else None
    if reason is not None:
        sig = signature_metrics(task, y)
        return {**dict.fromkeys(FIT_KEYS), "scheme": None, **sig, "n_rows": len(y), "_fits": {},
                "_degenerate": reason}
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
                     seed: int = 0) -> MetricsResult:
    """The thesis's metrics of one agent (a trial table of the collider experiment).

    ``aggregate``: ``cells`` fits the equal-weighted (domain, cntbl_cond, item) means (the
    thesis's human fit), ``rows`` fits every valid judgment (the LLM fit), ``auto`` picks cells
    for the human design (several subjects, none seeing every cell).  ``scheme``: 3p, 4p or auto.
    ``human``: the RW17 human CSV (or its trial table) for the Spearman alignment.
    ``per_subject``: also fit each subject (``yes``/``no``/``auto`` = when there are 2–500); a
    single subject's row is the pooled fit; the rows are empty when subjects are not fitted.
    """
    if scheme not in ("3p", "4p", "auto"):
        raise InputError(f"`scheme` must be 3p, 4p or auto, got {scheme!r}")
    if aggregate not in ("auto", "cells", "rows"):
        raise InputError(f"aggregate must be auto, cells or rows, got {aggregate!r}")
    valid = valid_judgments(trials)
    n_total = len(trials)
    use_cells = aggregate == "cells" or (aggregate == "auto" and needs_cell_aggregation(trials))
    data = aggregate_cells(trials) if use_cells else valid
    block = _metrics_block(data["task_index"].to_numpy(), data["y"].to_numpy(), scheme, seed=seed)
    fits = block.pop("_fits")
    degenerate = block.pop("_degenerate", None)
    metrics = dict(block)
    metrics["aggregate"] = "cells" if use_cells else "rows"
    metrics["n_subjects"] = int(trials["subject"].nunique())
    metrics["invalid_rate"] = float((n_total - len(valid)) / max(n_total, 1))
    detail: dict[str, Any] = {
        "fits": {k: v.as_dict() for k, v in fits.items()},
        "task_means": dict(zip(ROMAN, map(float, task_means(data["task_index"], data["y"])), strict=True)),
    }
    if human is not None:
        from cogtestbed.data.causal import import_rw17_human

        if isinstance(human, pd.DataFrame):
            htable = human
        else:
            from cogtestbed.memory import reading_input

            with reading_input(human):  # a user's file, under the input limit
                htable = import_rw17_human(human)
        detail["alignment"] = human_alignment(trials, htable, seed=seed)
        metrics["spearman_rho"] = detail["alignment"]["pooled"]["rho"]
    rows = _per_subject_rows(trials, valid, block, per_subject, use_cells, scheme, seed)
    n_invalid = n_total - len(valid)
    flags = [f"{n_invalid} invalid judgment(s) left out of the fit"] if n_invalid else []
    if degenerate is not None:
        flags.append(degenerate)
        detail["null_reasons"] = {**detail.get("null_reasons", {}),
                                  **{k: degenerate for k in FIT_KEYS if k in metrics}}
    return metrics_result(metrics, "per_subject", rows, n_invalid, flags, **detail)


def _per_subject_rows(trials: pd.DataFrame, valid: pd.DataFrame, block: dict[str, Any], per_subject: str,
                      use_cells: bool, scheme: str, seed: int) -> list[dict[str, Any]]:
    """One metrics row per subject (``per_subject``: yes/no/auto = when there are 2–500); a single
    subject's row is the pooled ``block``; none when subjects are not fitted."""
    n_subjects = int(trials["subject"].nunique())
    if n_subjects == 1 and per_subject != "no" and not use_cells:  # its fit is the pooled fit
        return [{"subject": _plain(trials["subject"].iloc[0]), **block}]
    if not (per_subject == "yes" or (per_subject == "auto" and 1 < n_subjects <= 500)):
        return []
    rows = []
    for subject, g in valid.groupby("subject", sort=True, observed=True):
        blk = _metrics_block(g["task_index"].to_numpy(), g["y"].to_numpy(), scheme, seed=seed)
        blk.pop("_fits")
        blk.pop("_degenerate", None)
        rows.append({"subject": _plain(subject), **blk})
    return rows


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


# ----------------------------------------------------------------------------- model objects
@njit(cache=True)
def cbn_gaussian_kernel(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray, task: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The CBN models' likelihood: y ~ N(CBN_task(b, m1, m2, p_c), s²) per judgment.

    The Gaussian likelihood whose maximum in (b, m1, m2, p_c) is the thesis's least-squares fit
    for any s.  ``theta`` columns (b, m1, m2, p_c, s); ∂ℓ/∂μ = r/s² (r = y − μ) times
    the closed forms' derivatives (:func:`~cogtestbed.inference.cbn.noisy_or_table_grad`,
    computed once per subject), ∂ℓ/∂s = −1/s + r²/s³.
    """
    n = y.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 5))
    table = np.empty((N_TASKS, 5))
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)
    last = -1
    for i in range(n):
        s = obs_subject[i]
        if s != last:
            noisy_or_table_grad(theta[s, 0], theta[s, 1], theta[s, 2], theta[s, 3], table)
            last = s
        sd = theta[s, 4]
        t = task[i]
        r = y[i] - table[t, 0]
        var = sd * sd
        ll[i] = -math.log(sd) - half_log_2pi - 0.5 * r * r / var
        for j in range(4):
            grad[i, j] = r / var * table[t, j + 1]
        grad[i, 4] = -1.0 / sd + r * r / (var * sd)
    return ll, grad


@dataclass(frozen=True)
class ColliderData:
    """One subject's valid judgments: Roman task index and y ∈ [0, 1]."""

    task: np.ndarray
    y: np.ndarray


#: SD of the Gaussian judgment noise of the CBN models' likelihood (a fixed constant, so the
#: MLE of the CBN parameters is the thesis's least-squares fit whatever its value; 0.1 is the
#: middle setting of the thesis's recovery simulations and the collider generator's noise).
RESPONSE_SD = 0.1
#: Range of a judgment y = rating/100 (the slider's 0–100 scale), over which a random rating (a
#: lapse) is uniform.
JUDGMENT_SCALE = (0.0, 1.0)


class CBNModel(CognitiveModel):
    """The thesis's CBN as a :class:`CognitiveModel`: judgments y ~ N(CBN_task(θ), s²) with
    s = :data:`RESPONSE_SD` (:func:`cbn_gaussian_kernel`), the likelihood whose maximum is the
    least-squares fit (``fit_mle`` returns the ½MSE optimum; AIC/BIC rank schemes as the thesis's
    do).  The full thesis pipeline with LOOCV is :func:`fit_cbn`.  The hierarchical model
    (:meth:`pymc_model`) is the zero-one-inflated Beta response model of
    :mod:`cogtestbed.inference.causal_hierarchical`, a different likelihood on purpose: slider
    judgments have exact 0s and 1s, and the ``cbn`` agent's response model is that one.
    """

    experiment: ClassVar[str] = EXPERIMENT
    scheme: ClassVar[str] = "3p"
    grid_points: ClassVar[int] = 5
    pointwise_kernel: ClassVar[Any] = cbn_gaussian_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("y", "task")
    observed_name: ClassVar[str] = "judgment"
    other_pymc_likelihood: ClassVar[str] = "zero-one-inflated Beta response model"

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        v = valid_judgments(trials)
        return {s: ColliderData(g["task_index"].to_numpy(np.int64), g["y"].to_numpy(float))
                for s, g in v.groupby("subject", sort=False, observed=True)}

    def n_observations(self, data: ColliderData) -> int:
        return len(data.y)

    def lapse_log_uniform(self, data: ColliderData) -> np.ndarray:
        """A random rating is uniform over the slider's 0–100 scale, i.e. y = rating/100 uniform
        on :data:`JUDGMENT_SCALE` (density 1/width)."""
        lo, hi = JUDGMENT_SCALE
        return np.full(len(data.y), -np.log(hi - lo))

    def predictions(self, theta: np.ndarray) -> np.ndarray:
        """The 11 task predictions at natural-scale ``theta``."""
        b, m1, m2, pc = self.kernel_theta(theta)[:4]
        return cbn_predictions(b, m1, m2, pc)

    def sample_nuisance(self, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
        """The zero-one-inflated Beta response model's κ and (π0, π1) drawn from their priors
        (log κ normal, π Dirichlet), and the same values as the ``cbn`` agent's response model."""
        from cogtestbed.inference.causal_hierarchical import INFLATION_PRIOR, LOG_KAPPA_PRIOR

        kappa = float(np.exp(rng.normal(*LOG_KAPPA_PRIOR)))
        pi = rng.dirichlet(INFLATION_PRIOR)
        truth = {"kappa": kappa, "pi[0]": float(pi[0]), "pi[1]": float(pi[1])}
        return truth, {"kappa": max(kappa, 1e-3), "pi0": float(pi[0]), "pi100": float(pi[1]), "noise_sd": 0.0}

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """The hierarchical zero-one-inflated Beta model (:mod:`cogtestbed.inference.causal_hierarchical`):
        slider judgments have exact 0s and 1s that the Gaussian least-squares likelihood ignores,
        and the ``cbn`` agent's response model is this one, so SBC is exact."""
        from cogtestbed.inference.causal_hierarchical import build_model

        return build_model(trials, self.scheme, pooling="partial" if hierarchical else "none")


class CBN3p(CBNModel):
    name: ClassVar[str] = "cbn-3p"
    scheme: ClassVar[str] = "3p"
    parameters: ClassVar[ParameterSet] = ParameterSet((B, M_, PC), "cbn-3p")
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = ("b", "m", "m", "p_c", RESPONSE_SD)


class CBN4p(CBNModel):
    name: ClassVar[str] = "cbn-4p"
    scheme: ClassVar[str] = "4p"
    parameters: ClassVar[ParameterSet] = ParameterSet((B, M1, M2, PC), "cbn-4p")
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = ("b", "m1", "m2", "p_c", RESPONSE_SD)


MODELS: dict[str, CognitiveModel] = {"cbn-3p": CBN3p(), "cbn-4p": CBN4p()}
