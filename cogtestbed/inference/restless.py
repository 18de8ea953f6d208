"""Restless bandit: CogBench's per-run scores (Coda-Forno et al. 2024, ``store.py``; Ershadmanesh
et al. 2023) and the Kalman chooser's shared numba primitives.

Per run (``StoringScores.get_all_scores`` loops ``run = 0 … max(run)``):

* performance = mean reward (``performance_score1``; the phenotype plots this);
* accuracy = mean of ``accurate`` (``performance_score2``);
* QSR_t = 1 − (accurate_t − conf_t)² (``behaviour_score1``), mean confidence
  (``behaviour_score2``);
* metacognition = adjusted QSR (``behaviour_score3``; Carpenter et al. 2019): confidences
  min–max scaled *within the run*, 1 − (accurate − scaled)² averaged over trials; when every
  confidence of the run is equal the unscaled QSR is used.

The reported value is the mean over runs.  A run index without rows (a gap in ``run``) gives NaN
scores in CogBench and is skipped by the mean (flagged here).  For tables produced by cogtestbed,
trials whose choice was invalid are left out and a missing confidence counts as 0.0, the value
CogBench stores for an unparsable confidence (both counted in ``n_invalid*``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

#: Observation noise (sd) the Kalman chooser assumes: the task's reward sd.
OBS_SD = 8.0
#: Prior mean and sd of each arm's value for the Kalman chooser (rewards lie around 40–60).
PRIOR_MEAN, PRIOR_SD = 50.0, 20.0


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always")
def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@njit(cache=True, inline="always")
def round2(x: float) -> float:
    """Round half up to two decimals (one implementation for the step and batch paths)."""
    return math.floor(x * 100.0 + 0.5) / 100.0


@njit(cache=True)
def kalman_confidence(m_c: float, v_c: float, m_o: float, v_o: float, gain: float, bias: float,
                      noise_sd: float, z: float) -> float:
    """Reported confidence: σ(κ·logit P(chosen is best) + δ + σ_c·z), rounded, in [0.01, 0.99].

    P(chosen is best) = Φ((m_c − m_o)/√(v_c + v_o)) under the Kalman posterior; κ = 1, δ = 0,
    σ_c = 0 is a calibrated reporter of its own belief.
    """
    p = normal_cdf((m_c - m_o) / math.sqrt(v_c + v_o))
    p = min(max(p, 1e-9), 1.0 - 1e-9)
    x = gain * (math.log(p) - math.log1p(-p)) + bias + noise_sd * z
    c = 1.0 / (1.0 + math.exp(-x)) if x >= 0.0 else math.exp(x) / (1.0 + math.exp(x))
    return min(max(round2(c), 0.01), 0.99)


@njit(cache=True)
def kalman_update(m: np.ndarray, v: np.ndarray, arm: int, reward: float, drift_sd: float) -> None:
    """Kalman update of the chosen arm (observation sd :data:`OBS_SD`), then drift both arms."""
    k = v[arm] / (v[arm] + OBS_SD * OBS_SD)
    m[arm] += k * (reward - m[arm])
    v[arm] *= 1.0 - k
    v[0] += drift_sd * drift_sd
    v[1] += drift_sd * drift_sd


# ----------------------------------------------------------------------------- metrics
def run_scores(df: pd.DataFrame) -> dict[str, float]:
    """store.py's ``get_scores`` for one run (``accurate`` and ``confidence`` columns)."""
    acc = df["accurate"].astype(float)
    conf = df["confidence"].astype(float)
    qsr = float((1 - (acc - conf) ** 2).mean())
    lb, hb = conf.min(), conf.max()
    # all confidences equal: CogBench falls back to the unscaled QSR
    adjusted = float((1 - (acc - (conf - lb) / (hb - lb)) ** 2).mean()) if hb - lb != 0 else qsr
    return {
        "performance": float(df["reward"].astype(float).mean()),
        "accuracy": float(acc.mean()),
        "metacognition": adjusted,
        "qsr": qsr,
        "mean_confidence": float(conf.mean()),
    }


def cogbench_metrics(trials: pd.DataFrame) -> dict[str, Any]:
    """CogBench's restless-bandit scores per run and their means over runs.

    Keys: ``performance`` (mean reward), ``accuracy``, ``metacognition`` (adjusted QSR), ``qsr``,
    ``mean_confidence``, ``n_runs``, ``n_invalid`` (invalid choices, left out),
    ``n_invalid_confidence`` (scored 0.0 as CogBench does) and ``flags``.  A run is a
    (subject, session) pair; for imported CogBench files the subject is CogBench's ``run``.
    """
    flags: list[str] = []
    valid = trials["valid"].astype(bool)
    df = trials.loc[valid].copy()
    n_invalid = int((~valid).sum())
    missing_conf = df["confidence"].isna()
    n_bad_conf = int(missing_conf.sum())
    if n_bad_conf:
        flags.append(f"{n_bad_conf} unparsable confidences scored 0.0 as CogBench does")
        df.loc[missing_conf, "confidence"] = 0.0
    if n_invalid:
        flags.append(f"{n_invalid} trials with an invalid choice were left out")
    per_run: list[dict[str, Any]] = []
    subjects = trials["subject"].unique()
    numeric = np.issubdtype(np.asarray(subjects).dtype, np.integer)
    groups = dict(list(df.groupby(["subject", "session"], sort=True)))
    keys = sorted(trials[["subject", "session"]].drop_duplicates().itertuples(index=False, name=None))
    if numeric and trials["session"].nunique() == 1:
        # CogBench iterates run = 0 … max(run): a missing run index scores NaN
        session = int(trials["session"].iloc[0])
        keys = [(r, session) for r in range(int(trials["subject"].max()) + 1)]
    for subject, session in keys:
        run_df = groups.get((subject, session))
        if run_df is None or run_df.empty:
            flags.append(f"run {subject} has no trials: scored NaN and skipped by the mean")
            scores = dict.fromkeys(("performance", "accuracy", "metacognition", "qsr",
                                    "mean_confidence"), float("nan"))
            n = 0
        else:
            scores = run_scores(run_df)
            n = len(run_df)
        per_run.append({"run": int(subject) if numeric else subject, "session": int(session),
                        **scores, "n_trials": n})
    table = pd.DataFrame(per_run)
    metrics: dict[str, Any] = {
        key: float(table[key].mean())
        for key in ("performance", "accuracy", "metacognition", "qsr", "mean_confidence")
    }
    metrics.update({
        "n_runs": int(table["n_trials"].gt(0).sum()),
        "n_invalid": n_invalid,
        "n_invalid_confidence": n_bad_conf,
        "invalid_rate": n_invalid / max(len(trials), 1),
        "flags": flags,
    })
    return {"metrics": metrics, "per_run": per_run}
