"""Two-step task: CogBench's metrics and the hybrid model-based / model-free learner.

**Metrics (CogBench ``TwoStepTask/store.py``).**  Performance = mean treasure over all trials.
Model-basedness = the interaction coefficient of one OLS (linear-probability model) pooled over
all runs::

    stay_t = b0 + b1·reward_t + b2·common_t + b3·reward_t·common_t + ε,   t = 1 .. T−1 of each run

with ``stay_t`` = (first-stage choice of trial t+1 equals that of trial t), ``reward`` and
``common`` coded ±1 and ``common_t`` = (first-stage choice = planet reached).  CogBench's
arithmetic on missing answers is kept: a missing first-stage choice equals nothing (so it is a
"switch" and a "rare" transition) and rows with a missing reward are dropped (statsmodels' formula
default).  ``model_basedness_valid_only`` drops every pair that touches an invalid trial.

**Model (Daw et al. 2011, one learning rate and one inverse temperature for both stages).**
Values start at ``Q0 = 0.5``.  After first-stage choice ``a`` reaching planet ``s``, alien ``c``
and treasure ``r``::

    δ1 = Q2[s,c] − Qmf[a];  Qmf[a] += α·δ1
    δ2 = r − Q2[s,c];       Q2[s,c] += α·δ2;  Qmf[a] += α·λ·δ2
    Qmb[a] = P_common·max Q2[planet a] + (1 − P_common)·max Q2[other planet]
    P(a1 = a) ∝ exp(β·(w·Qmb[a] + (1 − w)·Qmf[a]) + p·[a = previous a1])
    P(c | s) ∝ exp(β·Q2[s, c])

``w`` = 1 is purely model-based, ``w`` = 0 purely model-free (λ is then the eligibility of the
second-stage prediction error for the first-stage value).  Sessions (runs) reset the values.
Model recovery compares ``hybrid`` (w, α, β, λ, p), ``model-based`` (w = 1: α, β, p) and
``model-free`` (w = 0: α, β, λ, p).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.base import NO_ANSWER_LOG_UNIFORM, CognitiveModel
from cogtestbed.lapse import step_lapse, unit_lapse
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import log_sigmoid as _log_sigmoid
from cogtestbed.numerics import sigmoid as _sigmoid
from cogtestbed.parameters import Parameter, ParameterSet

EXPERIMENT = "two-step"
Q0 = 0.5
COMMON_PROB = 0.7
BETA_MAX = 50.0
CLIP = 1e-10

W = Parameter.unit("w", 0.5, "model-based weight (1 = model-based, 0 = model-free)",
                   prior_mean=0.0, prior_sd=1.5)
ALPHA = Parameter.unit("alpha", 0.5, "learning rate", prior_mean=0.0, prior_sd=1.5)
BETA = Parameter.positive("beta", 5.0, upper=BETA_MAX, description="inverse temperature",
                          prior_mean=1.5, prior_sd=1.0, search_floor=1e-2, search_ceiling=BETA_MAX)
LAMBDA = Parameter.unit("lam", 0.5, "eligibility of the second-stage prediction error",
                        prior_mean=0.0, prior_sd=1.5)
PERSEVERATION = Parameter("persev", -5.0, 5.0, 0.0, "first-stage stickiness (+: repeat)",
                          prior_mean=0.0, prior_sd=1.0)


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always")
def stage1_logit(qmf: np.ndarray, q2: np.ndarray, w: float, beta: float, persev: float,
                  prev: int, common: float) -> float:
    """Logit of P(a1 = X) (action 0) under the hybrid policy."""
    m0 = max(q2[0, 0], q2[0, 1])
    m1 = max(q2[1, 0], q2[1, 1])
    mb0 = common * m0 + (1.0 - common) * m1
    mb1 = common * m1 + (1.0 - common) * m0
    x = beta * (w * (mb0 - mb1) + (1.0 - w) * (qmf[0] - qmf[1]))
    if prev == 0:
        x += persev
    elif prev == 1:
        x -= persev
    return x


@njit(cache=True, inline="always")
def learn(qmf: np.ndarray, q2: np.ndarray, a1: int, s: int, c: int, r: float,
           alpha: float, lam: float) -> None:
    d1 = q2[s, c] - qmf[a1]
    qmf[a1] += alpha * d1
    d2 = r - q2[s, c]
    q2[s, c] += alpha * d2
    qmf[a1] += alpha * lam * d2


@njit(cache=True)
def simulate_hybrid_kernel(
    probs: np.ndarray, transition_u: np.ndarray, reward_u: np.ndarray,
    w: np.ndarray, alpha: np.ndarray, beta: np.ndarray, lam: np.ndarray, persev: np.ndarray,
    uniforms: np.ndarray, common: float, lapse_kind: np.ndarray, lapse_u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play N pre-drawn sessions with hybrid agents; one uniform per answered step.

    Returns per-step (N, 2T) actions, rewards (stage-1 reward 0), valid and played masks.
    ``beta = 0`` gives CogBench's random agent (a 50/50 coin on both stages).  Lapses
    (:mod:`cogtestbed.lapse`) cover a whole trial (``lapse_kind`` (N, ≥ T) per trial,
    ``lapse_u`` (N, 2T) per step; no rows: no lapses): an invalid trial stops at its first stage (the second is never
    asked, nothing is learnt, stickiness is broken, the agent's own draws resume at the next
    trial), a random one
    answers both stages ⌊2u⌋ and is learnt from like any other.
    """
    n, t_max = transition_u.shape
    actions = np.full((n, 2 * t_max), -1, dtype=np.int64)
    rewards = np.full((n, 2 * t_max), np.nan)
    valid = np.zeros((n, 2 * t_max), dtype=np.bool_)
    played = np.zeros((n, 2 * t_max), dtype=np.bool_)
    qmf = np.empty(2)
    q2 = np.empty((2, 2))
    for i in range(n):
        qmf[:] = Q0
        q2[:, :] = Q0
        prev = -1
        cursor = 0  # the agent reads its uniforms in order, one per step it answers
        for t in range(t_max):
            kind = unit_lapse(lapse_kind, i, t)
            x = stage1_logit(qmf, q2, w[i], beta[i], persev[i], prev, common)
            a1 = 0 if uniforms[i, cursor] < _sigmoid(x) else 1
            cursor += 1
            a1 = step_lapse(kind, lapse_u, i, 2 * t, a1, 2)
            played[i, 2 * t] = True
            if a1 < 0:  # an unanswered trial breaks stickiness (as hybrid_pointwise_kernel reads it)
                prev = -1
                continue
            s = a1 if transition_u[i, t] < common else 1 - a1
            c = 0 if uniforms[i, cursor] < _sigmoid(beta[i] * (q2[s, 0] - q2[s, 1])) else 1
            cursor += 1
            c = step_lapse(kind, lapse_u, i, 2 * t + 1, c, 2)
            r = 1.0 if reward_u[i, t] < probs[i, t, 2 * s + c] else 0.0
            actions[i, 2 * t] = a1
            actions[i, 2 * t + 1] = c
            rewards[i, 2 * t] = 0.0
            rewards[i, 2 * t + 1] = r
            valid[i, 2 * t] = valid[i, 2 * t + 1] = played[i, 2 * t + 1] = True
            learn(qmf, q2, a1, s, c, r, alpha[i], lam[i])
            prev = a1
    return actions, rewards, valid, played


# ----------------------------------------------------------------------------- likelihood kernel
@njit(cache=True)
def hybrid_pointwise_kernel(
    theta: np.ndarray, obs_subject: np.ndarray, a1: np.ndarray, new_session: np.ndarray,
    planet: np.ndarray, a2: np.ndarray, reward: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The two-step models' likelihood: per-trial log P(both stages) and its gradient.

    ``theta`` (n_subjects, 5) holds (w, α, β, λ, p) per subject (model-based and model-free fix
    some columns); rows are trials sorted by subject, values reset at a new subject or session.
    Each stage's probability is clipped below at 1e-10.  A trial with ``a1 < 0`` contributes 0
    and breaks stickiness; a valid first stage without a second-stage answer contributes only
    its first stage (and does not learn).  Derivatives are carried forward alongside the values
    (∂Q/∂α, ∂Q/∂λ; the max in Q_MB is differentiated through its argmax).
    """
    n = a1.shape[0]
    ll = np.zeros(n)
    grad = np.zeros((n, 5))
    qmf = np.full(2, Q0)
    q2 = np.full((2, 2), Q0)
    dqmf = np.zeros((2, 5))
    dq2 = np.zeros((2, 2, 5))
    dx = np.zeros(5)
    dd = np.zeros(5)
    log_clip = np.log(CLIP)
    c_mb = 2.0 * COMMON_PROB - 1.0  # Q_MB[0] − Q_MB[1] = (2P − 1)(max Q2[0] − max Q2[1])
    current = -1
    prev = -1
    for t in range(n):
        s_i = obs_subject[t]
        if s_i != current or new_session[t]:
            current = s_i
            qmf[:] = Q0
            q2[:, :] = Q0
            dqmf[:, :] = 0.0
            dq2[:, :, :] = 0.0
            prev = -1
        w, alpha, beta, lam, persev = (theta[s_i, 0], theta[s_i, 1], theta[s_i, 2],
                                       theta[s_i, 3], theta[s_i, 4])
        a = a1[t]
        if a < 0:
            prev = -1
            continue
        # stage 1: x = β·(w·c·(m0 − m1) + (1 − w)·(Qmf0 − Qmf1)) ± p
        j0 = 0 if q2[0, 0] >= q2[0, 1] else 1
        j1 = 0 if q2[1, 0] >= q2[1, 1] else 1
        d_mb = c_mb * (q2[0, j0] - q2[1, j1])
        d_mf = qmf[0] - qmf[1]
        v = w * d_mb + (1.0 - w) * d_mf
        x = beta * v
        for k in range(5):
            dd[k] = (w * c_mb * (dq2[0, j0, k] - dq2[1, j1, k])
                     + (1.0 - w) * (dqmf[0, k] - dqmf[1, k]))
            dx[k] = beta * dd[k]
        dx[0] = beta * (d_mb - d_mf)
        dx[2] = v
        dx[4] = 0.0
        if prev == 0:
            x += persev
            dx[4] = 1.0
        elif prev == 1:
            x -= persev
            dx[4] = -1.0
        z = x if a == 0 else -x
        lp = _log_sigmoid(z)
        if lp > log_clip:
            ll[t] += lp
            slope = _sigmoid(-z) if a == 0 else -_sigmoid(-z)  # d log σ(±x) / dx
            for k in range(5):
                grad[t, k] += slope * dx[k]
        else:
            ll[t] += log_clip
        prev = a
        c = a2[t]
        if c < 0:
            continue
        s = planet[t]
        # stage 2: y = β·(Q2[s,0] − Q2[s,1])
        diff2 = q2[s, 0] - q2[s, 1]
        y = beta * diff2
        z2 = y if c == 0 else -y
        lp2 = _log_sigmoid(z2)
        if lp2 > log_clip:
            ll[t] += lp2
            slope2 = _sigmoid(-z2) if c == 0 else -_sigmoid(-z2)
            for k in range(5):
                grad[t, k] += slope2 * beta * (dq2[s, 0, k] - dq2[s, 1, k])
            grad[t, 2] += slope2 * diff2
        else:
            ll[t] += log_clip
        # learning (as learn), derivatives first (they read the old values)
        r = reward[t]
        d1 = q2[s, c] - qmf[a]
        d2 = r - q2[s, c]
        for k in range(5):
            dqmf_k = dqmf[a, k] + alpha * (dq2[s, c, k] - dqmf[a, k])  # after δ1 step
            dqmf_k += alpha * lam * (-dq2[s, c, k])
            dqmf[a, k] = dqmf_k
            dq2[s, c, k] = (1.0 - alpha) * dq2[s, c, k]
        dqmf[a, 1] += d1 + lam * d2
        dqmf[a, 3] += alpha * d2
        dq2[s, c, 1] += d2
        qmf[a] += alpha * d1
        q2[s, c] += alpha * d2
        qmf[a] += alpha * lam * d2
    return ll, grad


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class TwoStepData:
    """One subject's trials over all its sessions (values reset where ``new_session``)."""

    new_session: np.ndarray
    a1: np.ndarray
    planet: np.ndarray
    a2: np.ndarray
    reward: np.ndarray


def _int_col(df: pd.DataFrame, name: str) -> np.ndarray:
    return pd.to_numeric(df[name], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


def twostep_data(trials: pd.DataFrame) -> dict[Hashable, TwoStepData]:
    """Per-subject arrays over all of a subject's sessions (values reset at each new session)."""
    ordered = trials.sort_values(["subject", "session", "trial"], kind="stable")
    groups = list(ordered.groupby("subject", sort=False))
    out: dict[Hashable, TwoStepData] = {}
    for key, df in groups:
        sess = df["subject"].astype(str) + "/" + df["session"].astype(str)
        new = (sess != sess.shift()).to_numpy()
        a1 = _int_col(df, "action")
        planet = _int_col(df, "planet")
        a2 = _int_col(df, "action2")
        bad = (a1 < 0) | (planet < 0)
        a1 = np.where(bad, -1, a1)
        a2 = np.where(bad | ~df["valid"].to_numpy(dtype=bool), -1, a2)
        out[key] = TwoStepData(new_session=new.astype(np.int64), a1=a1, planet=np.maximum(planet, 0), a2=a2,
                               reward=df["reward"].fillna(0.0).to_numpy(dtype=np.float64))
    return out


# ----------------------------------------------------------------------------- models
#: The columns of :func:`hybrid_pointwise_kernel`.
KERNEL_PARAMETERS = ("w", "alpha", "beta", "lam", "persev")


def kernel_columns_fixing(fixed: dict[str, float]) -> tuple[str | float, ...]:
    """Kernel columns of a two-step model that fixes ``fixed`` (the others are free)."""
    return tuple(fixed.get(k, k) for k in KERNEL_PARAMETERS)


class _TwoStepModel(CognitiveModel):
    """Shared data handling; subclasses fix some of the kernel's (w, α, β, λ, p)."""

    experiment: ClassVar[str] = EXPERIMENT
    grid_points: ClassVar[int] = 4
    pointwise_kernel: ClassVar[Any] = hybrid_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("a1", "new_session", "planet", "a2", "reward")
    observed_name: ClassVar[str] = "choice"
    #: Values of the kernel parameters that this model fixes (shared with its agent).
    fixed: ClassVar[dict[str, float]] = {}

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return twostep_data(trials)

    def n_observations(self, data: TwoStepData) -> int:
        return int(np.sum(data.a1 >= 0) + np.sum(data.a2 >= 0))

    def lapse_log_uniform(self, data: TwoStepData) -> np.ndarray:
        """A trial (one kernel observation) lapses as a whole, as a simulated lapse does
        (:meth:`TwoStepEnv.lapse_unit`): 1/4 over both stages' answers, 1/2 where only the
        spaceship was answered, and nothing where the spaceship answer is missing (the kernel
        scores that trial 0)."""
        both = np.where(data.a2 >= 0, -np.log(4.0), -np.log(2.0))
        return np.where(data.a1 >= 0, both, NO_ANSWER_LOG_UNIFORM)


class HybridModel(_TwoStepModel):
    """Hybrid MB/MF learner: (w, α, β, λ, p)."""

    name: ClassVar[str] = "hybrid"
    parameters: ClassVar[ParameterSet] = ParameterSet((W, ALPHA, BETA, LAMBDA, PERSEVERATION), "hybrid")


class ModelBasedModel(_TwoStepModel):
    """Purely model-based learner (w = 1): (α, β, p)."""

    name: ClassVar[str] = "model-based"
    parameters: ClassVar[ParameterSet] = ParameterSet((ALPHA, BETA, PERSEVERATION), "model-based")
    fixed: ClassVar[dict[str, float]] = {"w": 1.0, "lam": 0.0}
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = kernel_columns_fixing(fixed)
    grid_points: ClassVar[int] = 6


class ModelFreeModel(_TwoStepModel):
    """Purely model-free learner (w = 0): (α, β, λ, p)."""

    name: ClassVar[str] = "model-free"
    parameters: ClassVar[ParameterSet] = ParameterSet((ALPHA, BETA, LAMBDA, PERSEVERATION), "model-free")
    fixed: ClassVar[dict[str, float]] = {"w": 0.0}
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = kernel_columns_fixing(fixed)
    grid_points: ClassVar[int] = 5
    # Hierarchical fits at the default target 0.9 diverged once on four fresh data sets, at 0.95 never
    # (benchmarks/studies/target_accept_per_family.py, the rule written before its runs).
    target_accept: ClassVar[float | None] = 0.95


MODELS: dict[str, CognitiveModel] = {
    m.name: m for m in (HybridModel(), ModelBasedModel(), ModelFreeModel())
}


# ----------------------------------------------------------------------------- metrics
def stay_design(trials: pd.DataFrame, valid_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Pooled (X, y) of CogBench's stay regression: columns 1, reward, common, reward·common.

    Runs are the table's subjects (in order of appearance, as ``df.run.unique()``).
    """
    x, y, both_valid = stay_pairs(trials)
    return (x[both_valid], y[both_valid]) if valid_only else (x, y)


def stay_pairs(trials: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, both_valid) of every consecutive pair of trials of a run with a recorded reward.

    One pass over the whole table: rows are ordered by run (in order of appearance), session and
    trial (stable), and pairs that straddle two runs are dropped.  ``both_valid`` marks the pairs
    whose two answers parsed (the ``valid_only`` variant).
    """
    x, y, both_valid, _ = _stay_pairs_runs(trials)
    return x, y, both_valid


def _stay_pairs_runs(trials: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`stay_pairs` and the subject id (run) of each pair."""
    run = pd.factorize(trials["subject"], sort=False)[0]
    order = np.lexsort((trials["trial"].to_numpy(), trials["session"].to_numpy(), run))
    a1 = pd.to_numeric(trials["action"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)[order]
    planet = pd.to_numeric(trials["planet"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)[order]
    planet = np.where(planet < 0, np.nan, planet)
    r = trials["reward"].to_numpy(dtype=np.float64, na_value=np.nan)[order]
    v = trials["valid"].to_numpy(dtype=bool)[order]
    # NaN compares unequal to everything, like CogBench's object-array comparisons
    stay = (a1[1:] == a1[:-1]).astype(np.float64)
    common = a1[:-1] == planet[:-1]
    reward = r[:-1]
    keep = ~np.isnan(reward) & (run[order][1:] == run[order][:-1])
    rc = np.where(reward == 0, -1.0, reward)[keep]
    cc = np.where(common, 1.0, -1.0)[keep]
    x = np.column_stack([np.ones(rc.size), rc, cc, rc * cc])
    subject = trials["subject"].to_numpy()[order][1:][keep]
    return x, stay[keep], (v[:-1] & v[1:])[keep], subject


def ols(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """OLS via the pseudo-inverse (statsmodels' default), with classical standard errors."""
    n, k = x.shape
    if n == 0:
        return {"params": np.full(k, np.nan), "bse": np.full(k, np.nan), "rank": 0, "n": 0}
    pinv = np.linalg.pinv(x)
    beta = pinv @ y
    rank = int(np.linalg.matrix_rank(x))
    resid = y - x @ beta
    df_resid = n - rank
    scale = float(resid @ resid / df_resid) if df_resid > 0 else np.nan
    cov = pinv @ pinv.T * scale
    return {"params": beta, "bse": np.sqrt(np.clip(np.diag(cov), 0, None)), "rank": rank, "n": n}


def regression_summary(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The stay regression's coefficients, counts and flags from its pooled (X, y)."""
    fit = ols(x, y)
    b, se = fit["params"], fit["bse"]
    flags = []
    if fit["n"] < 8:
        flags.append(f"only {fit['n']} stay observations")
    elif fit["rank"] < 4:
        flags.append(f"design matrix has rank {fit['rank']} < 4 (e.g. reward or transition "
                     "constant): CogBench's pseudo-inverse value is not identified")
    elif np.var(y) == 0:
        flags.append("stay is constant: every coefficient but the intercept is 0")
    return {
        "model_basedness": float(b[3]), "model_basedness_ci": float(1.96 * se[3]),
        "reward_effect": float(b[1]), "common_effect": float(b[2]), "intercept": float(b[0]),
        "n_pairs": int(fit["n"]), "rank": int(fit["rank"]), "flags": flags,
    }


def _per_run(trials: pd.DataFrame) -> list[dict[str, Any]]:
    """Each run's mean treasure (pandas' skip-NaN mean of its rows), trial and invalid counts."""
    invalid = ~trials["valid"].astype(bool)
    reward = pd.to_numeric(trials["reward"], errors="coerce").astype(np.float64)
    grouped = pd.DataFrame({"reward": reward, "invalid": invalid, "subject": trials["subject"]}
                           ).groupby("subject", sort=True)
    mean, size, n_invalid = grouped["reward"].mean(), grouped.size(), grouped["invalid"].sum()
    return [{"run": int(subject) if isinstance(subject, (int, np.integer)) else subject,
             "performance": float(m), "n_trials": int(k), "n_invalid": int(b)}
            for subject, m, k, b in zip(mean.index, mean.to_numpy(), size.to_numpy(), n_invalid.to_numpy(),
                                        strict=True)]


#: A prefix's stay regression is solved from accumulated sums only while X'X is this well
#: conditioned (else, and for the flagged cases, :func:`cogbench_metrics` runs on the prefix).
PREFIX_MAX_CONDITION = 1e8


def _prefix_regressions(x: np.ndarray, y: np.ndarray, upto: np.ndarray) -> list[dict[str, Any] | None]:
    """The stay regression (:func:`regression_summary`) of the first ``upto[i]`` pairs for each i,
    from cumulative X'X, X'y and y'y (the normal equations; the pseudo-inverse's values where X has
    full rank); None where a prefix is flagged or ill-conditioned (computed in full instead).  Every
    prefix is solved at once (stacked 4×4 systems)."""
    upto = np.asarray(upto, dtype=np.int64)
    out: list[dict[str, Any] | None] = [None] * upto.size
    use = np.flatnonzero(upto >= 8)
    if use.size == 0 or x.shape[0] == 0:
        return out
    # X'X, X'y, y'y and Σy of the first u pairs at each distinct prefix end u: sums of the segments
    # between consecutive ends (one reduceat over the pairs), accumulated over the segments
    cuts = np.unique(upto[use])
    n_pairs = x.shape[0]
    cuts = cuts[cuts <= n_pairs]
    if cuts.size == 0:
        return out
    rows = np.concatenate([(x[:, :, None] * x[:, None, :]).reshape(n_pairs, 16), x * y[:, None], (y * y)[:, None],
                           y[:, None]], axis=1)[:cuts[-1]]
    sums = np.cumsum(np.add.reduceat(rows, np.concatenate([[0], cuts[:-1]]), axis=0), axis=0)
    use = use[upto[use] <= n_pairs]
    at = sums[np.searchsorted(cuts, upto[use])]
    cxx, cxy, cyy, cy = at[:, :16].reshape(-1, 4, 4), at[:, 16:20], at[:, 20], at[:, 21]
    n = upto[use].astype(np.float64)
    var_y = cyy / n - (cy / n) ** 2
    ok = np.isfinite(cxx).all(axis=(1, 2)) & (var_y > 1e-12)
    with np.errstate(all="ignore"):
        ok[ok] &= np.linalg.cond(cxx[ok]) <= PREFIX_MAX_CONDITION
    if not ok.any():
        return out
    xx, xy, yy, nn = cxx[ok], cxy[ok], cyy[ok], n[ok]
    inv = np.linalg.inv(xx)
    b = np.einsum("nij,nj->ni", inv, xy)
    rss = np.maximum(yy - 2 * np.einsum("ni,ni->n", b, xy) + np.einsum("ni,nij,nj->n", b, xx, b), 0.0)
    se = np.sqrt(np.clip(np.diagonal(inv, axis1=1, axis2=2) * (rss / (nn - 4))[:, None], 0, None))
    for i, row, coef, err in zip(use[ok], nn, b, se, strict=True):
        out[int(i)] = {"model_basedness": float(coef[3]), "model_basedness_ci": float(1.96 * err[3]),
                       "reward_effect": float(coef[1]), "common_effect": float(coef[2]), "intercept": float(coef[0]),
                       "n_pairs": int(row), "rank": 4, "flags": []}
    return out


def cogbench_prefix_metrics(trials: pd.DataFrame, sizes: Sequence[int]) -> list[MetricsResult | None]:
    """:func:`cogbench_metrics` of the first n runs (subject ids below n) for each n of ``sizes``,
    from sums accumulated once over the table's runs (``MetricsSpec.prefixes``: a sequential plan
    tests every look's prefix of each simulated table); None for a prefix whose regression is
    flagged or ill-conditioned (the caller computes it in full)."""
    x, y, both_valid, pair_subject = _stay_pairs_runs(trials)
    order = np.argsort(pair_subject, kind="stable")
    x, y, both_valid, pair_subject = x[order], y[order], both_valid[order], pair_subject[order]
    subject = trials["subject"].to_numpy()
    rows = np.argsort(subject, kind="stable")
    reward = trials["reward"].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
    invalid = ~trials["valid"].astype(bool).to_numpy()[rows]
    sorted_subject = subject[rows]
    cum_reward, cum_has = np.cumsum(np.nan_to_num(reward)), np.cumsum(~np.isnan(reward))
    cum_invalid = np.cumsum(invalid)
    per_run = _per_run(trials)  # sorted by run
    run_ids = np.array([r["run"] for r in per_run])
    counts = np.searchsorted(run_ids, sizes, side="left") if run_ids.dtype.kind in "iu" else None
    ends = [int(np.searchsorted(sorted_subject, n, side="left")) for n in sizes]
    regs = _prefix_regressions(x, y, np.searchsorted(pair_subject, sizes, side="left"))
    if both_valid.all():  # no invalid answer: the valid-only regression is the same regression
        valid_regs = regs
    else:
        vx, vy, vs = x[both_valid], y[both_valid], pair_subject[both_valid]
        valid_regs = _prefix_regressions(vx, vy, np.searchsorted(vs, sizes, side="left"))
    out: list[MetricsResult | None] = []
    for i, (n, end, reg, valid_only) in enumerate(zip(sizes, ends, regs, valid_regs, strict=True)):
        if reg is None or valid_only is None or end == 0:
            out.append(None)
            continue
        runs = per_run[:int(counts[i])] if counts is not None else [r for r in per_run if r["run"] < n]
        n_invalid = int(cum_invalid[end - 1])
        has = int(cum_has[end - 1])
        metrics: dict[str, Any] = {
            "performance": float(cum_reward[end - 1] / has) if has else float("nan"),
            "model_basedness": reg["model_basedness"], "model_basedness_ci": reg["model_basedness_ci"],
            "reward_effect": reg["reward_effect"], "common_effect": reg["common_effect"],
            "model_basedness_valid_only": valid_only["model_basedness"], "n_pairs": reg["n_pairs"],
            "n_runs": len(runs), "invalid_rate": n_invalid / max(end, 1)}
        out.append(metrics_result(metrics, "per_run", runs, n_invalid, reg["flags"]))
    return out


def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's two-step scores (pooled over runs, as store.py): performance, model_basedness.

    ``per_run`` lists each run's mean treasure and counts; CogBench fits no per-run score.
    """
    x, y, both_valid = stay_pairs(trials)
    reg = regression_summary(x, y)
    valid_only = regression_summary(x[both_valid], y[both_valid])
    per_run = _per_run(trials)
    n_invalid = int((~trials["valid"].astype(bool)).sum())
    metrics: dict[str, Any] = {
        "performance": float(trials["reward"].mean()),
        "model_basedness": reg["model_basedness"],
        "model_basedness_ci": reg["model_basedness_ci"],
        "reward_effect": reg["reward_effect"],
        "common_effect": reg["common_effect"],
        "model_basedness_valid_only": valid_only["model_basedness"],
        "n_pairs": reg["n_pairs"],
        "n_runs": len(per_run),
        "invalid_rate": n_invalid / max(len(trials), 1),
    }
    return metrics_result(metrics, "per_run", per_run, n_invalid, reg["flags"])


# ----------------------------------------------------------------------------- task-blind baseline
def position_bias_fit(trials: pd.DataFrame) -> tuple[float, float]:
    """The task-blind **position-bias model**: P(first-listed option) at the first and the second
    stage, the MLE over every answered choice of ``trials`` (their frequencies).  A reference for
    held-out NLL comparisons (:mod:`cogtestbed.inference.heldout`): unlike chance it absorbs a fixed
    preference, which the hybrid's perseveration would otherwise pass off as learning."""
    a1 = np.concatenate([d.a1 for d in twostep_data(trials).values()])
    a2 = np.concatenate([d.a2 for d in twostep_data(trials).values()])
    a1, a2 = a1[a1 >= 0], a2[a2 >= 0]
    if a1.size == 0 or a2.size == 0:
        raise InputError("no answered choice at one of the stages to fit the position-bias model to")
    return float(np.mean(a1 == 0)), float(np.mean(a2 == 0))


def position_bias_nll(trials: pd.DataFrame, bias: tuple[float, float]) -> pd.DataFrame:
    """Per subject: the position-bias model's NLL at ``bias`` (probabilities clipped to
    [1e-10, 1 − 1e-10]), the choices scored and the per-choice NLL (as
    :func:`cogtestbed.inference.heldout.subject_nll`)."""
    logs = [np.log(np.clip([b, 1.0 - b], CLIP, 1.0 - CLIP)) for b in bias]
    rows = []
    for key, d in twostep_data(trials).items():
        a1, a2 = d.a1[d.a1 >= 0], d.a2[d.a2 >= 0]
        n = a1.size + a2.size
        nll = -float(logs[0][a1].sum() + logs[1][a2].sum())
        rows.append({"subject": key, "nll": nll if n else np.nan, "n_choices": n,
                     "nll_per_choice": nll / n if n else np.nan})
    return pd.DataFrame(rows).sort_values("subject", key=lambda s: s.astype(str), kind="stable").reset_index(drop=True)
