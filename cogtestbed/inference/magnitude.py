"""Models and metrics of magnitude estimation (BayesBench; Ma, Wang & Fountas 2025, Sec. 3.2–3.6).

* :class:`StaticBayesModel`, :class:`LinearModel`, :class:`KalmanModel` (defined in
  :mod:`~cogtestbed.inference.magnitude_models`, re-exported): the observer models as
  :class:`~cogtestbed.inference.base.CognitiveModel` s with the synthetic agents' parameters (one
  parameter set per subject, on the session-normalised scale of :mod:`cogtestbed.agents.magnitude`),
  pointwise log-likelihood kernels with exact gradients, closed-form / profile MLE.
* :func:`magnitude_metrics`: NRMSE, w_prior, BCS (s_a = 0 rule), factor evidence, the four
  cue-combination fits, RRE, A / E / C and the BayesBench score (both readings of C), and the
  30-round session-preserving bootstrap with 68 % intervals (Sec. 3.5–3.6, Eq. 5, App. A.7–A.10).
* :func:`~cogtestbed.inference.magnitude_hierarchy.w_prior_hierarchy` (re-exported): hierarchical
  PyMC model of w_prior pooled over sessions, tasks and ablations reporting P(Δw_prior > 0) per
  ablation (condition levels, zero-sum effects, non-centred cells, mean-answer parameterisation).

Documented choices where the paper is silent (constants below): NRMSE baseline = the session
midpoint (:data:`NRMSE_BASELINE`); A from the mean NRMSE over the modalities played
(:data:`A_MODALITY`); w_prior of a (task, condition, modality) cell = one slope shared by its
sessions with a per-session intercept (:data:`W_POOLING`); Non-Oracle variance reading
:data:`DEFAULT_VARIANCE`; cue-combination fits and RRE on the base condition.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.magnitude_fits import (
    AIC_PARAMS,
    FACTOR_NAMES,
    VARIANTS,
    Cube,
    factor_evidence,
    fit_sessions,
    gauss_nll,
    static_pointwise,
    text_weight,
)
from cogtestbed.inference.magnitude_hierarchy import w_prior_hierarchy as w_prior_hierarchy
from cogtestbed.inference.magnitude_models import (
    MODELS,
    KalmanModel,
    LinearModel,
    MagnitudeData,
    StaticBayesModel,
    answer_range_log_width,
    kalman_pointwise,
    linear_pointwise,
)
from cogtestbed.inference.magnitude_observers import (
    KALMAN_P0,
    OBSERVERS,
    static_bayes,
    static_bayes_mu_p,
    static_bayes_w_prior,
)
from cogtestbed.tables.magnitude import (
    BCS_ABLATIONS,
    CONDITIONS,
    EXPERIMENT,
    MODALITIES,
    RANGES,
    TASK_NAMES,
    VALID_ANSWERS,
    VISUAL_TASKS,
)

#: The family's public names: the metrics defined here, the models of
#: :mod:`~cogtestbed.inference.magnitude_models` and the equations and tables they rest on, re-exported.
__all__ = [
    "A_MODALITY", "AIC_PARAMS", "answer_range_log_width", "BCS_ABLATIONS", "BCS_MODALITY", "bcs_scores", "bootstrap",
    "BOOTSTRAP_INTERVAL", "BOOTSTRAP_MAX", "BOOTSTRAP_ROUNDS", "build_cube", "check_bootstrap", "check_cube_memory",
    "check_one_session_per_block", "CONDITIONS", "Cube", "cue_combination", "DEFAULT_VARIANCE", "evidence_table",
    "EXPERIMENT", "factor_evidence", "FACTOR_NAMES", "fit_sessions", "FOREST_MAX_TREES", "gauss_nll",
    "HIERARCHY_CHAINS", "HIERARCHY_DRAWS", "hierarchy_seeds", "KALMAN_P0", "kalman_pointwise", "KalmanModel",
    "linear_pointwise", "LinearModel", "magnitude_metrics", "MagnitudeData", "MODALITIES", "MODELS", "nrmse",
    "NRMSE_BASELINE", "OBSERVERS", "pooled_w_prior", "PRIOR_DOMINANT", "RANGES", "session_fits", "static_bayes",
    "static_bayes_mu_p", "static_bayes_w_prior", "static_pointwise", "StaticBayesModel", "subject_metrics",
    "summary", "TASK_NAMES", "text_weight", "TRIAL_KEYS", "VALID_ANSWERS", "VARIANCE_BINS", "VARIANCE_READINGS",
    "VARIANTS", "VISUAL_TASKS", "W_POOLING", "w_prior_hierarchy",
]

#: [gap] NRMSE's constant predictor: the midpoint of the *session's* range (Sec. 3.5).
NRMSE_BASELINE = "session midpoint"
#: [gap] which modality's NRMSE enters A: the mean over the modalities played.
A_MODALITY = "mean over modalities"
#: [gap] w_prior of a cell: a slope shared by its sessions, intercept per session (OLS).
W_POOLING = "shared slope, per-session intercept"
#: w_prior above which an ablation scores s_a = 0 (prior-dominant regime, Sec. 3.5).
PRIOR_DOMINANT = 0.9
#: Bootstrap rounds and interval (Sec. 3.6: 30 rounds, 68 % percentile intervals).
BOOTSTRAP_ROUNDS = 30
BOOTSTRAP_INTERVAL = (16.0, 84.0)
#: Readings of the Non-Oracle "variance of responses" (App. A.7): across trials of a session,
#: within stimulus bins (per-stimulus), of the error y − x (residual).
VARIANCE_READINGS = ("raw", "per_stimulus", "residual")
#: [gap] the reading RRE(Non-Oracle) and E use by default (the paper's literal wording).
DEFAULT_VARIANCE = "raw"
#: Posterior draws per chain of the optional w_prior hierarchy in :func:`magnitude_metrics`
#: (0: not fitted, the default, since NUTS costs seconds to minutes per subject); tuning steps
#: equal the draws, and 4 chains × 1000 draws is the documented setting of the convergence checks.
HIERARCHY_DRAWS = 0
#: Chains of the optional w_prior hierarchy (R-hat needs at least 2).
HIERARCHY_CHAINS = 4
#: Stimulus bins per session for the per-stimulus variance reading.
VARIANCE_BINS = 5
#: Fitted modality per ablation for BCS (App. A.10): image for noise, text+image otherwise.
BCS_MODALITY = {"verbal": "text+image", "numerical": "text+image", "noise-constant": "image",
                "noise-gradual": "image", "context-long": "text+image"}
_K, _C, _M, _R = len(TASK_NAMES), len(CONDITIONS), len(MODALITIES), len(RANGES)
_BASE = CONDITIONS.index("base")


def _codes(col: pd.Series, categories: tuple[str, ...]) -> np.ndarray:
    codes = pd.Categorical(col.astype(str), categories=list(categories)).codes
    if (codes < 0).any():
        bad = sorted(set(col.astype(str)) - set(categories))
        raise InputError(f"unknown values {bad} in column {col.name!r}")
    return np.asarray(codes, dtype=np.int64)


#: Keys of one trial of a subject: a subject plays each (task, condition, modality, range) block
#: once, so a second session of the same block would overwrite the first in the cube.
TRIAL_KEYS = ("task", "condition", "modality", "range", "trial")
#: Largest bootstrap a metrics call accepts (Sec. 3.6 uses 30 rounds): one round refits every cell
#: of a subject, 3.5 ms CPU for the default design (measured), so 10⁵ rounds take ~6 min per subject.
BOOTSTRAP_MAX = 100_000
#: Most trees of the random-forest combiner fit (Fig. 7; 100 is the documented setting).
FOREST_MAX_TREES = 10_000
#: Bytes per cell-trial of a subject's cube (X and Y, float64) and of its bootstrap resample.
_CUBE_BYTES = 4 * 8


def check_one_session_per_block(trials: pd.DataFrame) -> None:
    """Refuse a table in which a subject has two rows for one trial of a block (two sessions of
    the same (task, condition, modality, range), e.g. relabelled subjects), naming the first."""
    keys = ["subject", *TRIAL_KEYS]
    dup = trials.duplicated(keys, keep=False)
    if dup.any():
        first = trials.loc[dup].sort_values(keys, kind="stable").iloc[0]
        where = ", ".join(f"{k}={first[k]}" for k in keys)
        raise InputError(f"{int(dup.sum())} rows repeat a subject's trial (first: {where}): a subject plays "
                         "each (task, condition, modality, range) block once, so a second session of a block "
                         "would overwrite the first; give it a subject of its own")


def check_cube_memory(trials: pd.DataFrame, bootstrap_rounds: int) -> None:
    """Refuse, before any allocation, a table whose dense per-subject cube (its largest ``trial``
    + 1 trials in each of the 4 × 9 × 3 × 3 cells) would not fit in the memory available now."""
    from cogtestbed.memory import check_memory

    trial = pd.to_numeric(trials["trial"], errors="coerce") if len(trials) else pd.Series([0])
    if trial.isna().any() or (trial < 0).any():
        raise InputError("column trial must hold the trial's index within its session (integers from 0)")
    t_max = int(trial.max())
    need = _K * _C * _M * _R * (t_max + 1) * _CUBE_BYTES * (2 if bootstrap_rounds else 1)
    check_memory(need, f"a magnitude subject's trial cube (trial up to {t_max})",
                 hint="the column trial counts the trials of one session from 0")


def check_bootstrap(rounds: int, n_subjects: int) -> None:
    """Bootstrap rounds: 0 (none) to :data:`BOOTSTRAP_MAX` (a time bound; Sec. 3.6 uses 30)."""
    if not 0 <= rounds <= BOOTSTRAP_MAX:
        raise InputError(f"`bootstrap` must be 0 (no bootstrap) to {BOOTSTRAP_MAX:,} rounds (the paper uses "
                         f"{BOOTSTRAP_ROUNDS}; each round refits every cell of each of the {n_subjects} "
                         f"subject(s), ~3.5 ms each), got {rounds}")


def build_cube(g: pd.DataFrame) -> Cube:
    """The cube of one subject's rows (columns of the magnitude trial table)."""
    T = int(g["trial"].max()) + 1
    k, c = _codes(g["task"], TASK_NAMES), _codes(g["condition"], CONDITIONS)
    m, r = _codes(g["modality"], MODALITIES), _codes(g["range"], RANGES)
    t = g["trial"].to_numpy(dtype=np.int64)
    X = np.full((_K, _C, _M, _R, T), np.nan)
    Y = np.full_like(X, np.nan)
    LO = np.full((_K, _C, _M, _R), np.nan)
    HI = np.full_like(LO, np.nan)
    X[k, c, m, r, t] = g["x"].to_numpy(dtype=np.float64)
    valid = g["valid"].to_numpy(dtype=bool)
    Y[k[valid], c[valid], m[valid], r[valid], t[valid]] = g["action"].to_numpy(dtype=np.float64,
                                                                            na_value=np.nan)[valid]
    LO[k, c, m, r] = g["range_low"].to_numpy(dtype=np.float64)
    HI[k, c, m, r] = g["range_high"].to_numpy(dtype=np.float64)
    return Cube(X, Y, LO, HI)


# ============================================================================ point metrics
def pooled_w_prior(cube: Cube) -> tuple[np.ndarray, np.ndarray]:
    """(w_prior, slope SE) per (task, condition, modality): static Bayes with a shared slope
    1 − w_prior ∈ [0, 1] and a per-session intercept w_prior·μ_p (OLS with session effects)."""
    valid = ~np.isnan(cube.Y)
    n_r = valid.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = np.where(valid, cube.X, 0).sum(-1) / n_r
        ym = np.where(valid, cube.Y, 0).sum(-1) / n_r
        dx = np.where(valid, cube.X - xm[..., None], 0.0)
        dy = np.where(valid, cube.Y - ym[..., None], 0.0)
        sxx, sxy = (dx * dx).sum((-1, -2)), (dx * dy).sum((-1, -2))
        beta = sxy / sxx
        rss = ((dy - beta[..., None, None] * dx) ** 2).sum((-1, -2))
        dof = valid.sum((-1, -2)) - (n_r > 0).sum(-1) - 1
        se = np.sqrt(rss / np.maximum(dof, 1) / sxx)
    w = static_bayes_w_prior.py_func(np.clip(beta, 0.0, 1.0))
    w[sxx <= 0] = np.nan
    return w, se


def nrmse(cube: Cube) -> np.ndarray:
    """NRMSE per (task, condition, modality) = RMSE(y − x) / RMSE(midpoint − x) over valid trials,
    the baseline being each session's range midpoint (Sec. 3.5)."""
    valid = ~np.isnan(cube.Y)
    mid = ((cube.LO + cube.HI) / 2.0)[..., None]
    num = np.where(valid, (cube.Y - cube.X) ** 2, 0.0).sum((-1, -2))
    den = np.where(valid, (mid - cube.X) ** 2, 0.0).sum((-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(num / den)


def _bcs_modality(cube_present: np.ndarray, k: int, ablation: str) -> int | None:
    """The modality BCS fits for ``ablation`` (App. A.10), falling back to any modality where
    both the ablation and the base were played."""
    a = CONDITIONS.index(ablation)
    order = [BCS_MODALITY[ablation], "image", "text+image", "text"]
    for name in order:
        m = MODALITIES.index(name)
        if cube_present[k, a, m].any() and cube_present[k, _BASE, m].any():
            return m
    return None


def bcs_scores(w: np.ndarray, present: np.ndarray) -> dict[str, dict[str, int]]:
    """s_a per visual task and BCS ablation: +1 if Δw_prior ≥ 0, −1 if < 0, 0 if w_abl > 0.9."""
    out: dict[str, dict[str, int]] = {}
    for task in VISUAL_TASKS:
        k = TASK_NAMES.index(task)
        scores = {}
        for abl in BCS_ABLATIONS:
            m = _bcs_modality(present, k, abl)
            if m is None:
                continue
            wa, wb = w[k, CONDITIONS.index(abl), m], w[k, _BASE, m]
            if np.isnan(wa) or np.isnan(wb):
                continue
            scores[abl] = 0 if wa > PRIOR_DOMINANT else (1 if wa - wb >= 0 else -1)
        if scores:
            out[task] = scores
    return out


# ============================================================================ cue combination
def _variance(y: np.ndarray, x: np.ndarray, reading: str) -> np.ndarray:
    """Per-session response variance (rows = sessions, NaN-aware; NaN for a session not played)
    under one reading."""
    if reading in ("raw", "residual"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # sessions the design does not play
            return np.nanvar(y if reading == "raw" else y - x, axis=-1, ddof=1)
    out = np.full(y.shape[0], np.nan)
    for r in range(y.shape[0]):
        ok = ~np.isnan(y[r])
        if ok.sum() < 2 * VARIANCE_BINS:
            continue
        edges = np.quantile(x[r, ok], np.linspace(0, 1, VARIANCE_BINS + 1))
        b = np.clip(np.searchsorted(edges, x[r, ok], side="right") - 1, 0, VARIANCE_BINS - 1)
        ss = sum(float(((y[r, ok][b == j] - y[r, ok][b == j].mean()) ** 2).sum()) for j in range(VARIANCE_BINS)
                 if (b == j).sum() > 1)
        out[r] = ss / max(int(ok.sum()) - VARIANCE_BINS, 1)
    return out


def _oracle(x: np.ndarray, yt: np.ndarray, yi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Oracle GLS combiner per session (App. A.7): calibrate each modality to ground truth
    (μ' = a·y + c), weights Σ⁻¹1/(1ᵀΣ⁻¹1) from the calibrated residual covariance Σ."""
    pred = np.full_like(x, np.nan)
    weights = np.full((x.shape[0], 2), np.nan)
    for r in range(x.shape[0]):
        ok = ~(np.isnan(x[r]) | np.isnan(yt[r]) | np.isnan(yi[r]))
        if ok.sum() < 4:
            continue
        cal = []
        for y in (yt[r, ok], yi[r, ok]):
            A = np.column_stack([y, np.ones(ok.sum())])
            coef = np.linalg.lstsq(A, x[r, ok], rcond=None)[0]
            cal.append(A @ coef)
        mu = np.array(cal)
        S = np.cov(mu - x[r, ok])
        try:
            si = np.linalg.solve(S, np.ones(2))
        except np.linalg.LinAlgError:
            si = np.linalg.pinv(S) @ np.ones(2)
        w = si / si.sum()
        weights[r] = w
        pred[r, ok] = w @ mu
    return pred, weights


def cue_combination(cube: Cube, k: int, condition: int = _BASE, variance: str = DEFAULT_VARIANCE,
                    readings: tuple[str, ...] = VARIANCE_READINGS) -> dict[str, Any] | None:
    """The four combiners of Table 1 on one task: equal, α (least squares, α ∈ [0, 1]),
    Non-Oracle (three variance readings) and Oracle GLS; their RMSE against the multimodal
    answers, their NRMSE against ground truth, and RRE = NRMSE_ref / NRMSE_LLM (Sec. 3.5)."""
    t, i, b = (MODALITIES.index(m) for m in ("text", "image", "text+image"))
    if not (cube.present[k, condition, t].any() and cube.present[k, condition, i].any()
            and cube.present[k, condition, b].any()):
        return None
    x = cube.X[k, condition, t]
    yt, yi, yc = cube.Y[k, condition, t], cube.Y[k, condition, i], cube.Y[k, condition, b]
    ok = ~(np.isnan(yt) | np.isnan(yi) | np.isnan(yc) | np.isnan(x))
    if ok.sum() < 6:
        return None
    yt, yi, yc = (np.where(ok, a, np.nan) for a in (yt, yi, yc))
    mid = ((cube.LO[k, condition, t] + cube.HI[k, condition, t]) / 2.0)[:, None]
    base = float(np.sqrt(np.nanmean(np.where(ok, (mid - x) ** 2, np.nan))))

    def nr(pred: np.ndarray) -> float:
        return _ratio(float(np.sqrt(np.nanmean(np.where(ok, (pred - x) ** 2, np.nan)))), base)

    def fit(pred: np.ndarray) -> float:
        return float(np.sqrt(np.nanmean(np.where(ok, (pred - yc) ** 2, np.nan))))

    alpha = text_weight(yt, yi, yc, ok)
    preds = {"equal": 0.5 * (yt + yi), "alpha": alpha * yt + (1 - alpha) * yi}
    w_text = {}
    for reading in dict.fromkeys((*readings, variance)):
        vt, vi = _variance(yt, x, reading), _variance(yi, x, reading)
        wt = (1 / vt) / (1 / vt + 1 / vi)
        w_text[reading] = float(np.nanmean(wt))
        preds[f"non_oracle_{reading}"] = wt[:, None] * yt + (1 - wt[:, None]) * yi
    preds["oracle"], ow = _oracle(x, yt, yi)
    llm = nr(yc)
    nrmse_ref = {name: nr(p) for name, p in preds.items()}
    return {
        "alpha": alpha, "w_text_non_oracle": w_text,
        "w_text_oracle": float(np.nanmean(ow[:, 0])),
        "fit_rmse": {name: fit(p) for name, p in preds.items()},
        "nrmse_reference": nrmse_ref, "nrmse_multimodal": llm,
        "nrmse_text": nr(yt), "nrmse_image": nr(yi),
        "rre": {"oracle": _ratio(nrmse_ref["oracle"], llm),
                "non_oracle": _ratio(nrmse_ref[f"non_oracle_{variance}"], llm)},
    }


def _ratio(num: float, den: float) -> float:
    """``num / den``, NaN where ``den`` is 0: an RRE against multimodal answers that hit every
    truth exactly (NRMSE 0), or an NRMSE whose reference error is 0, is undefined, and the
    metrics report it as null with the reason (:func:`~cogtestbed.no_data.null_nonfinite`)."""
    return num / den if den != 0 else math.nan


# ============================================================================ factor evidence
def session_fits(cube: Cube, condition: int | None = None) -> pd.DataFrame:
    """All 10 observer variants per session (numba), one row per (task, condition, modality,
    range, variant) with NLL, AIC and three parameters (see :func:`fit_session`)."""
    # a session is fitted only with more valid answers than the largest variant has parameters
    # (an all-invalid session would otherwise tie every variant: evidence 0.5 from no data)
    present = cube.present & ((~np.isnan(cube.Y)).sum(-1) > int(AIC_PARAMS.max()))
    if condition is not None:
        keep = np.zeros_like(present)
        keep[:, condition] = present[:, condition]
        present = keep
    idx = np.argwhere(present)
    if len(idx) == 0:
        return pd.DataFrame()
    sel = tuple(idx.T)
    nll, par = fit_sessions(np.ascontiguousarray(cube.X[sel]), np.ascontiguousarray(cube.Y[sel]),
                            np.ascontiguousarray(cube.LO[sel]), np.ascontiguousarray(cube.HI[sel]))
    rows = np.repeat(idx, len(VARIANTS), axis=0)
    return pd.DataFrame({
        "task": np.array(TASK_NAMES)[rows[:, 0]], "condition": np.array(CONDITIONS)[rows[:, 1]],
        "modality": np.array(MODALITIES)[rows[:, 2]], "range": np.array(RANGES)[rows[:, 3]],
        "variant": np.tile(VARIANTS, len(idx)), "nll": nll.reshape(-1),
        "aic": (2 * nll + 2 * AIC_PARAMS[None, :]).reshape(-1),
        "p0": par[:, :, 0].reshape(-1), "p1": par[:, :, 1].reshape(-1), "p2": par[:, :, 2].reshape(-1),
    })


def evidence_table(fits: pd.DataFrame) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Factor evidence per (task, condition, modality): AIC summed over sessions, App. A.8."""
    if fits.empty:
        return {}
    aic = fits.groupby(["task", "condition", "modality", "variant"], sort=False)["aic"].sum()
    out: dict[str, Any] = {}
    for (task, cond, mod), s in aic.groupby(level=[0, 1, 2], sort=False):
        vec = s.droplevel([0, 1, 2]).reindex(list(VARIANTS)).to_numpy(dtype=np.float64)
        out.setdefault(task, {}).setdefault(cond, {})[mod] = factor_evidence(np.nan_to_num(vec, nan=np.inf))
    return out


# ============================================================================ summary
def _nested(arr: np.ndarray, present: np.ndarray) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, Any] = {}
    for k, c, m in np.argwhere(present.any(-1)):
        if not np.isnan(arr[k, c, m]):
            out.setdefault(TASK_NAMES[k], {}).setdefault(CONDITIONS[c], {})[MODALITIES[m]] = float(arr[k, c, m])
    return out


def summary(cube: Cube, variance: str = DEFAULT_VARIANCE, readings: tuple[str, ...] = VARIANCE_READINGS
            ) -> dict[str, Any]:
    """The point metrics of one subject (no bootstrap, no factor evidence); ``readings``: the
    Non-Oracle variance readings reported besides ``variance``."""
    present = cube.present
    w, se = pooled_w_prior(cube)
    nr = nrmse(cube)
    scores = bcs_scores(w, present)
    per_task = {t: float(sum(s.values())) for t, s in scores.items()}
    bcs = float(sum(per_task.values())) if scores else math.nan  # no scored ablation: null, never 0
    cue = {}
    for task in VISUAL_TASKS:
        res = cue_combination(cube, TASK_NAMES.index(task), variance=variance, readings=readings)
        if res is not None:
            cue[task] = res
    base_nr = {t: float(np.nanmean(nr[TASK_NAMES.index(t), _BASE])) for t in TASK_NAMES
               if present[TASK_NAMES.index(t), _BASE].any() and not np.all(np.isnan(nr[TASK_NAMES.index(t), _BASE]))}
    A = float(np.mean([1 - min(max(v, 0.0), 2.0) / 2.0 for v in base_nr.values()])) if base_nr else math.nan
    E = float(np.mean([(c["rre"]["oracle"] + c["rre"]["non_oracle"]) / 2 for c in cue.values()])) if cue else math.nan
    c_sum = (bcs + 15.0) / 30.0 if scores else math.nan
    c_mean = (bcs / max(len(per_task), 1) + 15.0) / 30.0 if scores else math.nan
    return {
        "nrmse": {t: {m: float(nr[TASK_NAMES.index(t), _BASE, MODALITIES.index(m)]) for m in MODALITIES
                      if present[TASK_NAMES.index(t), _BASE, MODALITIES.index(m)].any()} for t in base_nr},
        "nrmse_all": _nested(nr, present),
        "w_prior": _nested(w, present), "w_prior_se": _nested(se, present),
        "bcs": bcs, "bcs_per_task": per_task, "bcs_signs": scores,
        "rre": {t: c["rre"] for t, c in cue.items()}, "cue_combination": cue,
        "bayesbench": {"score": (A + E + c_sum) / 3.0, "score_c_mean": (A + E + c_mean) / 3.0,
                       "A": A, "E": E, "C_sum": c_sum, "C_mean": c_mean},
    }


def bootstrap(cube: Cube, rng: np.random.Generator, rounds: int = BOOTSTRAP_ROUNDS,
              variance: str = DEFAULT_VARIANCE) -> dict[str, Any]:
    """Session-preserving bootstrap (Sec. 3.6): each session's trials resampled with replacement
    and put back in time order (the same indices for every modality, keeping the pairing);
    means and 68 % percentile intervals of BCS, BCS per task and the BayesBench score."""
    T = cube.X.shape[-1]
    draws: dict[str, list[float]] = {}
    for _ in range(rounds):
        idx = np.sort(rng.integers(0, T, size=(_K, _C, _R, T)), axis=-1)
        s = summary(cube.resample(idx), variance, readings=())
        vals = {"bcs": s["bcs"], "bayesbench": s["bayesbench"]["score"], "A": s["bayesbench"]["A"],
                "E": s["bayesbench"]["E"], **{f"bcs_per_task.{t}": v for t, v in s["bcs_per_task"].items()}}
        for key, v in vals.items():
            draws.setdefault(key, []).append(v)
    lo, hi = BOOTSTRAP_INTERVAL
    out: dict[str, Any] = {}
    for key, v in draws.items():
        arr = np.asarray(v, dtype=np.float64)
        arr = arr[np.isfinite(arr)]
        stats = ({"mean": float(arr.mean()), "lo": float(np.percentile(arr, lo)), "hi": float(np.percentile(arr, hi))}
                 if arr.size else {"mean": math.nan, "lo": math.nan, "hi": math.nan})
        if key.startswith("bcs_per_task."):
            out.setdefault("bcs_per_task", {})[key.split(".", 1)[1]] = stats
        else:
            out[key] = stats
    return out


def _mean_nested(items: list[Any]) -> Any:
    """Leafwise mean over subjects (NaN-aware) of nested dicts of numbers."""
    first = next((i for i in items if i is not None), None)
    if isinstance(first, dict):
        keys = list(dict.fromkeys(k for i in items if isinstance(i, dict) for k in i))
        return {k: _mean_nested([i.get(k) for i in items if isinstance(i, dict)]) for k in keys}
    vals = np.array([float(i) for i in items if isinstance(i, (int, float, np.floating))], dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else None


def _head(items: list[Any], n: int = 5) -> str:
    """The first ``n`` items, comma-separated, with "…" when there are more."""
    return ", ".join(str(i) for i in items[:n]) + (", …" if len(items) > n else "")


def _clean(obj: Any) -> Any:
    """NaN → None (JSON)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def subject_metrics(g: pd.DataFrame, rng: np.random.Generator, bootstrap_rounds: int = BOOTSTRAP_ROUNDS,
                    variance: str = DEFAULT_VARIANCE, evidence_condition: str = "base",
                    forest_trees: int = 0) -> dict[str, Any]:
    """Every metric of one subject (see module docstring); Fig. 6A / 6C / 7 from
    :mod:`~cogtestbed.inference.magnitude_figures` (the forest only with ``forest_trees`` > 0)."""
    from cogtestbed.inference import magnitude_figures as fig

    cube = build_cube(g)
    out = summary(cube, variance)
    out["bias_variance"] = fig.bias_variance(cube)
    out["image_weight"] = fig.image_weight(cube)
    if forest_trees:
        oracle = {t: c["fit_rmse"]["oracle"] for t, c in out["cue_combination"].items()}
        out["combiner_fit"] = fig.combiner_fits(cube, forest_trees, oracle)
    fits = session_fits(cube, CONDITIONS.index(evidence_condition))
    ev = evidence_table(fits)
    out["factor_evidence"] = {t: c.get(evidence_condition, {}) for t, c in ev.items()}
    if bootstrap_rounds > 0:
        out["bootstrap"] = bootstrap(cube, rng, bootstrap_rounds, variance)
    return out


def hierarchy_seeds(seed: int, n_subjects: int) -> list[int]:
    """The sampler seed of each subject's w_prior hierarchy: one child of ``SeedSequence(seed)``
    per subject, on a stream of its own (the bootstrap's generators are untouched)."""
    children = np.random.SeedSequence(seed, spawn_key=(1,)).spawn(n_subjects)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]


def _subject_hierarchy(g: pd.DataFrame, draws: int, chains: int, seed: int) -> dict[str, Any]:
    """:func:`w_prior_hierarchy` of one subject, JSON-ready (the InferenceData dropped)."""
    res = w_prior_hierarchy(g, draws=draws, tune=draws, chains=chains, seed=seed)
    res.pop("idata")
    return {**res, "seed": seed, "draws": draws, "chains": chains}


def _check_hierarchy_options(draws: int, chains: int) -> None:
    if draws < 0:
        raise InputError(f"hierarchy_draws must be >= 0 (0: no hierarchy), got {draws}")
    if draws and chains < 2:
        raise InputError(f"hierarchy_chains must be >= 2 (R-hat compares chains), got {chains}")


def magnitude_metrics(trials: pd.DataFrame, bootstrap: int = BOOTSTRAP_ROUNDS, seed: int = 0,
                      variance: str = DEFAULT_VARIANCE, evidence_condition: str = "base",
                      hierarchy_draws: int = HIERARCHY_DRAWS,
                      hierarchy_chains: int = HIERARCHY_CHAINS, forest_trees: int = 0) -> dict[str, Any]:
    """BayesBench metrics per subject and their mean over subjects (Ma et al. 2025, Sec. 3.5–3.6).

    ``metrics``: nrmse {task: {modality}} (base condition), bcs (sum of s_a), bcs_per_task,
    w_prior {task: {condition: {modality}}}, factor_evidence {task: {modality: {factor: P}}},
    rre {task: {oracle, non_oracle}}, bayesbench {score (C_sum), score_c_mean, A, E, C_sum, C_mean},
    plus cue_combination and the bootstrap intervals.  ``per_subject`` holds each subject's dict.
    With ``hierarchy_draws`` > 0 each subject's ``hierarchy`` is :func:`w_prior_hierarchy` (the
    condition-level Bayes-consistency reading, P(Δw_prior > 0 | data) per ablation, with R-hat,
    bulk/tail ESS, divergences and the verdict) and ``metrics["hierarchy"]`` holds the mean
    P(Δw_prior > 0) over subjects and whether every subject's fit converged.
    """
    _check_metrics_options(trials, bootstrap, variance, evidence_condition, hierarchy_draws, hierarchy_chains,
                           forest_trees)
    from cogtestbed.inference import magnitude_figures as fig

    check_one_session_per_block(trials)
    check_cube_memory(trials, bootstrap)
    seq = np.random.SeedSequence(seed)
    subjects = list(trials.groupby("subject", sort=True))  # subject order, not row order
    rngs = [np.random.default_rng(s) for s in seq.spawn(len(subjects))]
    from cogtestbed.progress import each_unit

    per = []
    units = each_unit(zip(subjects, rngs, strict=True), "magnitude metrics of each subject", len(subjects))
    for (sid, g), rng in units:
        res = subject_metrics(g, rng, bootstrap, variance, evidence_condition, forest_trees)
        per.append({"subject": sid.item() if hasattr(sid, "item") else sid, **res})
    keys = ("nrmse", "bcs", "bcs_per_task", "w_prior", "factor_evidence", "rre", "bayesbench",
            "cue_combination", "bias_variance", "image_weight", "combiner_fit", "bootstrap")
    headline = {k: _mean_nested([p.get(k) for p in per]) for k in keys}
    n_invalid = int((~trials["valid"].astype(bool)).sum())
    flags = []
    if hierarchy_draws:
        seeds = hierarchy_seeds(seed, len(subjects))
        for p, (_, g), s in zip(per, subjects, seeds, strict=True):
            p["hierarchy"] = _subject_hierarchy(g, hierarchy_draws, hierarchy_chains, s)
            if not p["hierarchy"]["diagnostics"]["ok"]:
                flags.append(f"w_prior hierarchy of subject {p['subject']}: {p['hierarchy']['diagnostics']['verdict']}")
        headline["hierarchy"] = {
            "p_delta_w_positive": _mean_nested([p["hierarchy"]["p_delta_w_positive"] for p in per]),
            "converged": all(p["hierarchy"]["diagnostics"]["ok"] for p in per)}
    reasons = _coverage_flags(trials, per, headline, n_invalid, flags)
    return _clean({
        "metrics": headline, "per_subject": per, "n_invalid": n_invalid, "flags": flags, "reasons": reasons,
        "choices": {"nrmse_baseline": NRMSE_BASELINE, "a_modality": A_MODALITY, "w_pooling": W_POOLING,
                    "variance": variance, "bootstrap_rounds": bootstrap,
                    "bootstrap_interval": list(BOOTSTRAP_INTERVAL),
                    "aic_params": dict(zip(VARIANTS, AIC_PARAMS.tolist(), strict=True)),
                    "factors": list(FACTOR_NAMES), "bias_variance": fig.BIAS_VARIANCE_READING,
                    "forest": {"trees": forest_trees, "folds": fig.FOREST_FOLDS, "seed": fig.FOREST_SEED}},
    })


def _check_metrics_options(trials: pd.DataFrame, bootstrap: int, variance: str, evidence_condition: str,
                           hierarchy_draws: int, hierarchy_chains: int, forest_trees: int) -> None:
    """Refuse options of :func:`magnitude_metrics` it cannot honour, and a table without its columns."""
    _check_hierarchy_options(hierarchy_draws, hierarchy_chains)
    if variance not in VARIANCE_READINGS:
        raise InputError(f"variance must be one of {', '.join(VARIANCE_READINGS)}, got {variance!r}")
    if evidence_condition not in CONDITIONS:
        raise InputError(f"evidence_condition must be one of {', '.join(CONDITIONS)}")
    missing = [c for c in ("task", "condition", "modality", "range", "x", "range_low", "range_high")
               if c not in trials.columns]
    if missing:
        raise InputError(f"not a magnitude trial table: missing columns {', '.join(missing)}")
    check_bootstrap(bootstrap, int(trials["subject"].nunique()))
    if not 0 <= forest_trees <= FOREST_MAX_TREES:
        raise InputError(f"`forest_trees` must be 0 (no forest) to {FOREST_MAX_TREES}, got {forest_trees}")


def _coverage_flags(trials: pd.DataFrame, per: list[dict[str, Any]], headline: dict[str, Any], n_invalid: int,
                    flags: list[str]) -> dict[str, str]:
    """Append to ``flags`` what the table leaves out (invalid answers, null BCS, fewer visual tasks,
    no base session in every modality); return the reasons of null metrics."""
    if n_invalid:
        flags.append(f"{n_invalid} invalid answers excluded from every fit")
    no_bcs = [p["subject"] for p in per if not math.isfinite(p["bcs"])]
    reasons: dict[str, str] = {}
    if no_bcs:
        reasons["bcs"] = ("no (ablation, base) cell pair with a fitted w_prior (too few valid answers, or no "
                          "BCS ablation played with the base condition)")
        flags.append(f"BCS null for {len(no_bcs)} of {len(per)} subject(s) ({_head(no_bcs)}): {reasons['bcs']}")
    tasks = set(trials["task"].astype(str)) & set(VISUAL_TASKS)
    if len(tasks) < len(VISUAL_TASKS):
        flags.append(f"BCS over {len(tasks)} visual task(s): C_sum still normalises by ±15 (three tasks)")
    if not headline["rre"]:
        flags.append("no base session in all three modalities: cue combination, RRE and E unavailable")
    exact = [p["subject"] for p in per
             if any(not math.isfinite(v) for c in (p.get("rre") or {}).values() for v in c.values())]
    if exact:
        reasons["rre"] = ("the multimodal answers hit every true value exactly (NRMSE 0), or the reference "
                          "error is 0: RRE = NRMSE_ref / NRMSE_LLM is undefined, and so is E")
        flags.append(f"RRE null for {len(exact)} of {len(per)} subject(s) ({_head(exact)}): {reasons['rre']}")
    return reasons
