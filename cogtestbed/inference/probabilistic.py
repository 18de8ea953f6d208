"""Probabilistic reasoning: CogBench's scores and the generalised-Bayes model (Coda-Forno et al.
2024; Dasgupta et al. 2020).

Generalised Bayes (Massey & Wu 2005; CogBench eq. in §2.1), in log-odds::

    logit P̂(left | ball) = β0 + β1·logit P(left) + β2·logit[P(ball | left) / P(ball | right)] + ε

with P(ball | right) = 1 − P(ball | left) (mirror urns), so the likelihood term is
logit P(ball | left).  β1 = prior weighting, β2 = likelihood weighting; a Bayes-optimal agent has
β0 = 0, β1 = β2 = 1.  With ε ~ N(0, σ²) the maximum-likelihood estimate of (β0, β1, β2) is OLS and
σ̂² = RSS/n.

CogBench's scoring (``store.py``): one **pooled** least-squares fit over all runs *without an
intercept*, estimates clipped to [1e-5, 1 − 1e-5] before the logit; a NaN coefficient is stored as
0 (flagged here).  Performance = 1 − mean |Bayes posterior − clipped estimate|; the later code
drops errors at or above their 95 % quantile (reported as ``performance_trimmed``: that is how the
live human score 0.870 arises).  CogBench's human file stores P(observed colour | left urn) instead
of P(red | left urn), and ``store.py`` flips it once more for the performance score: the
compatibility ``performance`` reproduces this (rows marked ``cogbench_human_lh``), and
``performance_corrected`` gives the value with the right posterior.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.inference.base import CognitiveModel, MLEResult
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import logit, sigmoid, std_normal
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.probabilistic import EXPERIMENT, bayes_posterior

#: CogBench clips reported probabilities to this range before the logit and the error.
CLIP_LO, CLIP_HI = 1e-5, 1.0 - 1e-5
#: Fraction of the largest errors dropped by the later code's trimmed performance score.
TRIM = 0.05

BETA_PRIOR = Parameter("beta_prior", -5.0, 5.0, 1.0, "prior weighting β1 (log-odds slope)",
                       prior_mean=0.4, prior_sd=1.0, transform="logit")
BETA_LIKELIHOOD = Parameter("beta_likelihood", -5.0, 5.0, 1.0, "likelihood weighting β2",
                            prior_mean=0.4, prior_sd=1.0, transform="logit")
BIAS = Parameter("bias", -5.0, 5.0, 0.0, "log-odds bias β0 towards the asked-about urn",
                 prior_mean=0.0, prior_sd=1.0, transform="logit")
NOISE_SD = Parameter.positive("noise_sd", 0.5, upper=20.0, description="sd of the log-odds noise",
                              prior_mean=-0.5, prior_sd=1.0, search_floor=1e-3, search_ceiling=20.0)
PARAMETERS = ParameterSet((BETA_PRIOR, BETA_LIKELIHOOD, BIAS, NOISE_SD), "generalised-bayes")


@njit(cache=True, inline="always")
def report(beta_prior: float, beta_lik: float, bias: float, noise_sd: float, prior: float,
           likelihood: float, u1: float, u2: float) -> float:
    """The generalised-Bayes report: σ(β0 + β1·logit p + β2·logit l + σ·z)."""
    x = bias + beta_prior * logit(prior) + beta_lik * logit(likelihood)
    if noise_sd > 0.0:
        x += noise_sd * std_normal(u1, u2)
    return sigmoid(x)


@njit(cache=True)
def gaussian_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray, x1: np.ndarray,
                              x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The generalised-Bayes likelihood: per-judgement log N(y; β0 + β1·x1 + β2·x2, σ²) and its
    gradient in (β1, β2, β0, σ): with r = y − μ, ∂/∂β = r·x/σ² (x = x1, x2, 1) and
    ∂/∂σ = −1/σ + r²/σ³, computed through u = r/σ (divisions by σ alone, which overflow to ±inf
    instead of dividing by an underflowed σ² or σ³).

    Defined on the whole closed box, σ = 0 included: the degenerate normal (log-density −inf off
    the mean, +inf on it, no gradient).  σ's lower bound is 0 and the MLE's search map ``0 + exp z``
    reaches it once exp underflows (the lapse model's search, which otherwise raises a ZeroDivisionError)."""
    n = y.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 4))
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)
    for i in range(n):
        s = obs_subject[i]
        b1, b2, b0, sd = theta[s, 0], theta[s, 1], theta[s, 2], theta[s, 3]
        r = y[i] - (b0 + b1 * x1[i] + b2 * x2[i])
        if sd <= 0.0:
            ll[i] = math.inf if r == 0.0 else -math.inf
            continue
        u = r / sd
        ll[i] = -math.log(sd) - half_log_2pi - 0.5 * u * u
        grad[i, 0] = u * x1[i] / sd
        grad[i, 1] = u * x2[i] / sd
        grad[i, 2] = u / sd
        grad[i, 3] = (u * u - 1.0) / sd
    return ll, grad


# ----------------------------------------------------------------------------- data
def clipped_logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=np.float64), CLIP_LO, CLIP_HI)
    return np.log(q / (1.0 - q))


@dataclass(frozen=True)
class JudgementData:
    """One subject's valid judgements in log-odds: prior x1, likelihood x2, report y."""

    x1: np.ndarray
    x2: np.ndarray
    y: np.ndarray


def judgement_data(trials: pd.DataFrame) -> dict[Hashable, JudgementData]:
    """Per-subject arrays (valid judgements only; estimates clipped as CogBench clips them)."""
    out: dict[Hashable, JudgementData] = {}
    ok = trials[trials["valid"].astype(bool) & trials["estimate"].notna()]
    for subject, df in ok.groupby("subject", sort=False):
        out[subject] = JudgementData(
            x1=np.log(df["prior"].to_numpy(float) / (1 - df["prior"].to_numpy(float))),
            x2=np.log(df["likelihood"].to_numpy(float) / (1 - df["likelihood"].to_numpy(float))),
            y=clipped_logit(df["estimate"].to_numpy(float)),
        )
    return out


# ----------------------------------------------------------------------------- model
#: Range of a probability estimate, over which a random estimate (a lapse) is uniform.
ESTIMATE_RANGE = (0.0, 1.0)


class GeneralisedBayes(CognitiveModel):
    """Generalised Bayes with Gaussian log-odds noise: (β1, β2, β0, σ).

    The MLE is closed-form (OLS with intercept, σ̂² = RSS/n), so :meth:`fit_subject` solves it
    directly instead of searching; the estimates are clipped into the parameter bounds.
    """

    name: ClassVar[str] = "generalised-bayes"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = PARAMETERS
    pointwise_kernel: ClassVar[Any] = gaussian_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("y", "x1", "x2")
    observed_name: ClassVar[str] = "report"
    #: The parameters each subject's data pin are sampled centred, chosen from the data before sampling
    #: (:mod:`cogtestbed.inference.centring`; on for this family by ``benchmarks/studies/centring_by_data.py``).
    centre_pinned: ClassVar[bool] = True

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return judgement_data(trials)

    def n_observations(self, data: JudgementData) -> int:
        return int(data.y.shape[0])

    def lapse_log_uniform(self, data: JudgementData) -> np.ndarray:
        """A random estimate is uniform on :data:`ESTIMATE_RANGE`; the kernel scores its log-odds
        y, where that uniform has density q(1 − q)/width at q = σ(y) (the Jacobian dq/dy)."""
        y = np.asarray(data.y, dtype=np.float64)
        lo, hi = ESTIMATE_RANGE
        return -np.logaddexp(0.0, -y) - np.logaddexp(0.0, y) - np.log(hi - lo)

    def fit_subject(self, data: JudgementData, n_starts: int | None = None,
                    grid_nll: np.ndarray | None = None) -> MLEResult:
        """Closed form: OLS in log-odds is the Gaussian MLE (``n_starts`` is not needed)."""
        n = data.y.shape[0]
        x = np.column_stack([data.x1, data.x2, np.ones(n)])
        coef, *_ = np.linalg.lstsq(x, data.y, rcond=None)
        resid = data.y - x @ coef
        sd = float(np.sqrt(np.mean(resid**2))) if n else float("nan")
        theta = np.array([coef[0], coef[1], coef[2], max(sd, NOISE_SD.search_floor)])
        lo = np.array([p.lower for p in self.parameters])
        hi = np.array([p.upper for p in self.parameters])
        clipped = np.clip(theta, lo, hi)
        identified = n > 3 and np.linalg.matrix_rank(x) == 3
        nll = self.nll(clipped, data) if n else float("nan")
        return self._result(clipped, nll, bool(identified and np.all(clipped == theta)), data)

    def _result(self, theta: np.ndarray, nll: float, converged: bool, data: Any) -> MLEResult:
        return MLEResult(params=dict(zip(self.parameters.names, map(float, theta), strict=True)),
                         nll=float(nll), n_obs=self.n_observations(data), converged=converged,
                         n_params=len(self.parameters))


MODELS: dict[str, CognitiveModel] = {"generalised-bayes": GeneralisedBayes()}


# ----------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class OLSFit:
    """Least squares without intercept, as ``sm.OLS(y, X).fit()`` computes it (pinv solution)."""

    params: np.ndarray
    bse: np.ndarray
    rank: int


def ols_no_intercept(y: np.ndarray, x: np.ndarray) -> OLSFit:
    """β = pinv(X)·y with classical standard errors (σ̂² = RSS / (n − rank))."""
    pinv = np.linalg.pinv(x)
    beta = pinv @ y
    rank = int(np.linalg.matrix_rank(x))
    dof = x.shape[0] - rank
    resid = y - x @ beta
    scale = float(resid @ resid) / dof if dof > 0 else float("nan")
    bse = np.sqrt(np.diag(pinv @ pinv.T) * scale)
    return OLSFit(params=beta, bse=bse, rank=rank)


def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's probabilistic-reasoning scores on a trial table (pooled over all runs).

    Keys: ``performance`` (1 − mean |posterior − estimate|, CogBench's compatibility value),
    ``prior_weighting`` (β1) and ``likelihood_weighting`` (β2) of the no-intercept log-odds
    OLS; plus CIs (1.96·SE), ``ratio`` and ``prior_minus_likelihood`` (behaviour_score3/4),
    ``performance_trimmed`` (worst 5 % of errors dropped), ``performance_corrected`` (the human
    file's double likelihood flip undone), ``n_judgements``; ``n_invalid`` and ``flags``
    (``fit_failed`` where CogBench silently stores 0, ``human_likelihood_quirk``).  CogBench
    does not score runs separately, so ``per_run`` holds each run's counts only.
    """
    valid = trials["valid"].astype(bool) & trials["estimate"].notna()
    df = trials.loc[valid]
    n_invalid = int((~valid).sum())
    flags: list[str] = []
    prior = df["prior"].to_numpy(float)
    likelihood = df["likelihood"].to_numpy(float)
    estimate = np.clip(df["estimate"].to_numpy(float), CLIP_LO, CLIP_HI)
    y = np.log(estimate / (1 - estimate))
    x = np.column_stack([np.log(prior / (1 - prior)), np.log(likelihood / (1 - likelihood))])
    if len(df) >= 2:
        fit = ols_no_intercept(y, x)
        b1, b2 = float(fit.params[0]), float(fit.params[1])
        se1, se2 = float(fit.bse[0]), float(fit.bse[1])
    else:
        b1 = b2 = se1 = se2 = float("nan")
    if not (np.isfinite(b1) and np.isfinite(b2)):
        flags.append("fit_failed: no least-squares solution; weights set to 0 as CogBench does")
    b1 = 0.0 if np.isnan(b1) else b1
    b2 = 0.0 if np.isnan(b2) else b2
    ratio = 0.0 if abs(b2) <= 0.001 else b1 / b2
    ratio_ci = 0.0 if (b1 == 0 or b2 == 0) else \
        1.96 * math.sqrt((se1 / b1) ** 2 + (se2 / b2) ** 2) * abs(b1 / b2)
    # performance: CogBench's posterior (with its human-file quirk) and the corrected one
    correct_post = bayes_posterior(prior, likelihood)
    quirk = df["cogbench_human_lh"].to_numpy(bool) if "cogbench_human_lh" in df else np.zeros(len(df), bool)
    cb_post = np.where(quirk, bayes_posterior(prior, df["lh"].to_numpy(float)), correct_post)
    error = np.abs(cb_post - estimate)
    if quirk.any():
        flags.append("human_likelihood_quirk: CogBench's human file is scored with P(red | left) in "
                     "the posterior; performance_corrected uses P(observed colour | left)")
    trimmed = error[error < np.quantile(error, 1 - TRIM)] if len(error) else error
    metrics: dict[str, Any] = {
        "performance": float(1 - error.mean()) if len(error) else float("nan"),
        "prior_weighting": b1,
        "likelihood_weighting": b2,
        "performance_ci": float(1.96 * error.std() / math.sqrt(len(error))) if len(error) else float("nan"),
        "prior_weighting_ci": 1.96 * se1,
        "likelihood_weighting_ci": 1.96 * se2,
        "ratio": ratio,
        "ratio_ci": ratio_ci,
        "prior_minus_likelihood": b1 - b2,
        "performance_trimmed": float(1 - trimmed.mean()) if len(trimmed) else float("nan"),
        "performance_corrected": float(1 - np.abs(correct_post - estimate).mean()) if len(error) else float("nan"),
        "n_judgements": len(df),
        "n_runs": int(df[["subject", "session"]].drop_duplicates().shape[0]),
        "invalid_rate": n_invalid / max(len(trials), 1),
    }
    return metrics_result(metrics, "per_run", _run_rows(trials, df, error), n_invalid, flags)


def _run_rows(trials: pd.DataFrame, scored: pd.DataFrame, error: np.ndarray) -> list[dict[str, Any]]:
    """Each run's (subject, session) share of the pooled score: 1 − mean |error|, counts."""
    err = pd.Series(error, index=scored.index)
    from cogtestbed.progress import each_unit

    rows = []
    runs = trials.groupby(["subject", "session"], sort=True, observed=True)
    for (subject, session), g in each_unit(runs, "probabilistic scores of each run (session)", runs.ngroups):
        e = err.reindex(g.index).dropna()
        rows.append({"run": _plain(subject), "session": _plain(session),
                     "performance": float(1 - e.mean()) if len(e) else float("nan"),
                     "n_judgements": int(len(e)), "n_invalid": int(len(g) - len(e))})
    return rows


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x
