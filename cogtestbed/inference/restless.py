"""Restless bandit: CogBench's per-run scores (Coda-Forno et al. 2024, ``store.py``; Ershadmanesh
et al. 2023), the Kalman chooser's numba primitives and its likelihood (the ``kalman`` model).

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
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import log_sigmoid, sigmoid
from cogtestbed.parameters import Parameter, ParameterSet

EXPERIMENT = "restless-bandit"
#: Observation noise (sd) the Kalman chooser assumes: the task's reward sd.
OBS_SD = 8.0
#: Prior mean and sd of each arm's value for the Kalman chooser (rewards lie around 40–60).
PRIOR_MEAN, PRIOR_SD = 50.0, 20.0
#: Smallest probability a confidence report may have under the model (its log-likelihood is
#: floored there, with zero gradient): keeps a single outlying report from dominating a fit.
CONFIDENCE_FLOOR = 1e-12
#: Reports are two-decimal numbers; the chooser's are clipped to [0.01, 0.99].
CONF_MIN_LEVEL, CONF_MAX_LEVEL = 1, 99
#: Arms a random choice (a lapse) is uniform over.
LAPSE_ARMS = 2

# Priors (unconstrained scale): drift ≈ 4 $/trial (90 %: 1.2–14), β ≈ 0.3/$, calibrated
# confidence (κ ≈ 1, δ ≈ 0) and log-odds noise ≈ 0.5.
DRIFT_SD = Parameter.positive("drift_sd", 4.0, upper=50.0, description="assumed drift sd per trial ($)",
                              prior_mean=1.4, prior_sd=0.75, search_floor=0.1, search_ceiling=50.0)
BETA = Parameter.positive("beta", 0.3, upper=10.0, description="softmax inverse temperature (1/$)",
                          prior_mean=-1.2, prior_sd=1.0, search_floor=1e-3, search_ceiling=10.0)
CONF_GAIN = Parameter.positive("confidence_gain", 1.0, upper=10.0,
                               description="slope κ of the confidence map in log-odds (1 = calibrated)",
                               prior_mean=0.0, prior_sd=0.5, search_floor=1e-2, search_ceiling=10.0)
CONF_BIAS = Parameter("confidence_bias", -5.0, 5.0, 0.0, "offset δ of the confidence map in log-odds",
                      prior_mean=0.0, prior_sd=0.5, transform="logit")
CONF_NOISE = Parameter.positive("confidence_noise", 0.0, upper=10.0,
                                description="sd σ_c of log-odds noise on the confidence report",
                                prior_mean=-0.7, prior_sd=1.0, search_floor=1e-2, search_ceiling=10.0)
KALMAN_PARAMETERS = ParameterSet((DRIFT_SD, BETA, CONF_GAIN, CONF_BIAS, CONF_NOISE), "kalman")


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always", error_model="numpy")
def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@njit(cache=True, inline="always", error_model="numpy")
def round2(x: float) -> float:
    """Round half up to two decimals (one implementation for the step and batch paths)."""
    return math.floor(x * 100.0 + 0.5) / 100.0


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
def kalman_update(m: np.ndarray, v: np.ndarray, arm: int, reward: float, drift_sd: float) -> None:
    """Kalman update of the chosen arm (observation sd :data:`OBS_SD`), then drift both arms."""
    k = v[arm] / (v[arm] + OBS_SD * OBS_SD)
    m[arm] += k * (reward - m[arm])
    v[arm] *= 1.0 - k
    v[0] += drift_sd * drift_sd
    v[1] += drift_sd * drift_sd


# ----------------------------------------------------------------------------- likelihood
@njit(cache=True, inline="always", error_model="numpy")
def _log_ndtr(x: float) -> float:
    """log Φ(x) (−inf where Φ underflows, below about −38)."""
    v = 0.5 * math.erfc(-x / math.sqrt(2.0))
    return math.log(v) if v > 0.0 else -np.inf


@njit(cache=True, inline="always", error_model="numpy")
def _log_phi(x: float) -> float:
    return -0.5 * x * x - 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, error_model="numpy")
def interval_log_prob(lo: float, hi: float) -> tuple[float, float, float]:
    """(log P, ∂ log P/∂lo, ∂ log P/∂hi) of P = Φ(hi) − Φ(lo), lo < hi (±inf allowed).

    Both bounds in the upper tail are reflected (Φ(hi) − Φ(lo) = Φ(−lo) − Φ(−hi)), so the
    difference is taken where Φ is not close to 1; ∂/∂lo = −φ(lo)/P, ∂/∂hi = φ(hi)/P in log space.
    """
    flip = lo > 0.0
    if flip:
        lo, hi = -hi, -lo
    l_hi = _log_ndtr(hi) if hi < np.inf else 0.0
    l_lo = _log_ndtr(lo) if lo > -np.inf else -np.inf
    lp = l_hi if l_lo == -np.inf else l_hi + math.log1p(-math.exp(l_lo - l_hi))
    if lp == -np.inf:
        return lp, 0.0, 0.0
    d_lo = -math.exp(_log_phi(lo) - lp) if lo > -np.inf else 0.0
    d_hi = math.exp(_log_phi(hi) - lp) if hi < np.inf else 0.0
    if flip:
        return lp, -d_hi, -d_lo
    return lp, d_lo, d_hi


@njit(cache=True, error_model="numpy")
def kalman_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, choice: np.ndarray,
                            conf_level: np.ndarray, reward: np.ndarray, new_session: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The Kalman chooser's likelihood: per trial log P(choice) + log P(confidence report), and
    the gradient in (drift_sd, β, κ, δ, σ_c).

    State (the ``kalman`` agent's; Kalman filter per arm, Ershadmanesh et al. 2023): means m,
    variances v from N(:data:`PRIOR_MEAN`, :data:`PRIOR_SD`²), reset at a new subject or session.
    Choice: P(J) = σ(β·(m_J − m_F)).  Confidence, reported before the outcome: the chooser reports
    round₂(σ(μ + σ_c·z)), z ~ N(0, 1), μ = κ·logit Φ(u) + δ, u = (m_c − m_o)/√(v_c + v_o)
    (Φ(u) clipped to [1e-9, 1 − 1e-9] as the agent does), clipped to [0.01, 0.99]; so a report
    of level k/100 has the exact probability Φ((logit((k+½)/100) − μ)/σ_c) − Φ((logit((k−½)/100)
    − μ)/σ_c), the outer bins open-ended (floored at :data:`CONFIDENCE_FLOOR`; ``conf_level``
    −1: no valid report).  Then the chosen arm's Kalman update with the reward (observation sd
    :data:`OBS_SD`) and drift of both arms: k = v_a/(v_a + R), m_a += k(r − m_a),
    v_a ← (1 − k)v_a, v += d².  ∂m and ∂v w.r.t. the drift sd d are carried forward.
    """
    n = choice.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 5))
    m = np.empty(2)
    v = np.empty(2)
    dm = np.empty(2)
    dv = np.empty(2)
    obs_var = OBS_SD * OBS_SD
    log_floor = math.log(CONFIDENCE_FLOOR)
    current = -1
    for t in range(n):
        s = obs_subject[t]
        if s != current or new_session[t]:
            current = s
            m[:] = PRIOR_MEAN
            v[:] = PRIOR_SD * PRIOR_SD
            dm[:] = 0.0
            dv[:] = 0.0
        drift, beta, gain, bias, noise = theta[s, 0], theta[s, 1], theta[s, 2], theta[s, 3], theta[s, 4]
        a = choice[t]
        o = 1 - a
        # choice: x = β(m1 − m0), log P(a) = log σ(±x), d/dx = a − σ(x)
        x = beta * (m[1] - m[0])
        lp = log_sigmoid(x) if a == 1 else log_sigmoid(-x)
        slope = a - sigmoid(x)
        g_drift = slope * beta * (dm[1] - dm[0])
        g_beta = slope * (m[1] - m[0])
        g_gain = 0.0
        g_bias = 0.0
        g_noise = 0.0
        k = conf_level[t]
        if k >= 0:
            tot = v[a] + v[o]
            root = math.sqrt(tot)
            u = (m[a] - m[o]) / root
            p = 0.5 * math.erfc(-u / math.sqrt(2.0))
            du = ((dm[a] - dm[o]) - 0.5 * u * (dv[a] + dv[o]) / root) / root
            dl_du = 0.0
            if p < 1e-9:
                p = 1e-9
            elif p > 1.0 - 1e-9:
                p = 1.0 - 1e-9
            else:
                dl_du = math.exp(_log_phi(u)) / (p * (1.0 - p))
            big_l = math.log(p) - math.log1p(-p)
            mu = gain * big_l + bias
            lo = -np.inf if k <= CONF_MIN_LEVEL else math.log((k - 0.5) / (100.5 - k))
            hi = np.inf if k >= CONF_MAX_LEVEL else math.log((k + 0.5) / (99.5 - k))
            a_std = (lo - mu) / noise
            b_std = (hi - mu) / noise
            lc, d_a, d_b = interval_log_prob(a_std, b_std)
            if lc > log_floor:
                lp += lc
                # a_std = (lo − μ)/σ: ∂/∂μ = −1/σ, ∂/∂σ = −a_std/σ (zero for an open bound)
                d_mu = -(d_a + d_b) / noise
                d_sig = -((d_a * a_std if lo > -np.inf else 0.0) + (d_b * b_std if hi < np.inf else 0.0)) / noise
                g_gain = d_mu * big_l
                g_bias = d_mu
                g_noise = d_sig
                g_drift += d_mu * gain * dl_du * du
            else:
                lp += log_floor
        ll[t] = lp
        grad[t, 0] = g_drift
        grad[t, 1] = g_beta
        grad[t, 2] = g_gain
        grad[t, 3] = g_bias
        grad[t, 4] = g_noise
        # Kalman update of the chosen arm, then drift (as kalman_update), derivatives first
        gain_k = v[a] / (v[a] + obs_var)
        dk = obs_var * dv[a] / ((v[a] + obs_var) * (v[a] + obs_var))
        r = reward[t]
        dm[a] = dm[a] + dk * (r - m[a]) - gain_k * dm[a]
        dv[a] = dv[a] * (1.0 - gain_k) - v[a] * dk
        m[a] += gain_k * (r - m[a])
        v[a] *= 1.0 - gain_k
        v[0] += drift * drift
        v[1] += drift * drift
        dv[0] += 2.0 * drift
        dv[1] += 2.0 * drift
    return ll, grad


def confidence_level_mass(level: np.ndarray) -> np.ndarray:
    """Probability that a confidence uniform on [0, 1] is recorded at ``level`` (whole percent,
    clipped to [:data:`CONF_MIN_LEVEL`, :data:`CONF_MAX_LEVEL`]): the width of the level's bin
    [(k − ½)/100, (k + ½)/100), the outer bins open-ended to 0 and 1 (0.015 each, 0.01 inside)."""
    k = np.asarray(level, dtype=np.float64)
    lo = np.where(k <= CONF_MIN_LEVEL, 0.0, (k - 0.5) / 100.0)
    hi = np.where(k >= CONF_MAX_LEVEL, 1.0, (k + 0.5) / 100.0)
    return hi - lo


@dataclass(frozen=True)
class KalmanData:
    """One subject's trials with a valid choice, all sessions (state resets at ``new_session``).

    ``conf_level``: the report as an integer percentage clipped to [1, 99], −1 without a valid
    confidence.
    """

    choice: np.ndarray
    conf_level: np.ndarray
    reward: np.ndarray
    new_session: np.ndarray


def kalman_data(trials: pd.DataFrame) -> dict[Hashable, KalmanData]:
    """Per-subject arrays of the trials whose choice is valid (invalid ones neither count nor
    update the filter, as for the ``kalman`` agent)."""
    ordered = trials.sort_values(["subject", "session", "trial"], kind="stable")
    action = pd.to_numeric(ordered["action"], errors="coerce")
    keep = ordered["valid"].astype(bool).to_numpy() & action.notna().to_numpy()
    ordered = ordered.loc[keep]
    out: dict[Hashable, KalmanData] = {}
    for subject, df in ordered.groupby("subject", sort=False):
        session = df["session"].to_numpy()
        new = np.ones(len(df), dtype=np.int64)
        new[1:] = session[1:] != session[:-1]
        conf = pd.to_numeric(df["confidence"], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(conf)
        if "confidence_valid" in df:
            ok &= df["confidence_valid"].astype(bool).to_numpy()
        level = np.clip(np.round(np.where(ok, conf, 0.0) * 100.0), CONF_MIN_LEVEL, CONF_MAX_LEVEL)
        out[subject] = KalmanData(
            choice=pd.to_numeric(df["action"]).to_numpy(dtype=np.int64),
            conf_level=np.where(ok, level, -1).astype(np.int64),
            reward=df["reward"].to_numpy(dtype=np.float64),
            new_session=new,
        )
    return out


class KalmanChooser(CognitiveModel):
    """The ``kalman`` agent as a model: choices and confidence reports (:func:`kalman_pointwise_kernel`)."""

    name: ClassVar[str] = "kalman"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = KALMAN_PARAMETERS
    grid_points: ClassVar[int] = 4
    pointwise_kernel: ClassVar[Any] = kalman_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("choice", "conf_level", "reward", "new_session")
    observed_name: ClassVar[str] = "response"

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return kalman_data(trials)

    def n_observations(self, data: KalmanData) -> int:
        return int(data.choice.shape[0] + np.sum(data.conf_level >= 0))

    def lapse_log_uniform(self, data: KalmanData) -> np.ndarray:
        """A random trial (a lapse covers choice and confidence, :meth:`RestlessBanditEnv.lapse_unit`):
        either arm with probability 1/:data:`LAPSE_ARMS`, and a confidence uniform on [0, 1], whose probability of
        the recorded level is :func:`confidence_level_mass` (nothing for a missing report)."""
        k = data.conf_level
        mass = confidence_level_mass(np.maximum(k, CONF_MIN_LEVEL))
        return -np.log(LAPSE_ARMS) + np.where(k >= 0, np.log(mass), 0.0)


MODELS: dict[str, CognitiveModel] = {"kalman": KalmanChooser()}


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


def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's restless-bandit scores per run and their means over runs.

    Keys: ``performance`` (mean reward), ``accuracy``, ``metacognition`` (adjusted QSR), ``qsr``,
    ``mean_confidence``, ``n_runs``, ``n_invalid_confidence`` (scored 0.0 as CogBench does);
    ``n_invalid`` (invalid choices, left out) and ``flags`` beside them.  A run is a
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
    from cogtestbed.progress import each_unit

    for subject, session in each_unit(keys, "restless-bandit scores of each run", len(keys)):
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
        "n_invalid_confidence": n_bad_conf,
        "invalid_rate": n_invalid / max(len(trials), 1),
    })
    return metrics_result(metrics, "per_run", per_run, n_invalid, flags)
