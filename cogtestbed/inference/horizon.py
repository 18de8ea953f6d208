"""Horizon task: CogBench's exploration scores and an information-bonus choice model
(Coda-Forno et al. 2024; Wilson et al. 2014).

CogBench's scoring (``store.py``), pooled over all games of a file:

* only the **first free choice** (trial 4) of each game enters; horizon is coded −1 (H1) / +1
  (H6), read from the game length (10 rows = H6);
* **unequal** information (1 vs 3 forced observations): DV = chose the less-observed arm,
  x1 = μ(less observed) − μ(more observed) with the *true* means; directed exploration = +β(H);
* **equal** information (2 vs 2): DV = chose J, x1 = μ_J − μ_F; random exploration = −β(x1·H);
* ``statsmodels.Logit(y, [x1, H, x1·H, 1])`` (its Newton fit, repeated exactly by
  :func:`cogtestbed.inference.logit.fit_logit`); a fit that does not converge or raises (perfect
  separation, which the statsmodels CogBench used raised as an error) scores **0** — kept here as
  the compatibility value and reported in ``flags``;
* performance = mean reward over all trials of all games, forced trials included.

Model (Wilson et al. 2014, their eq. 1, with CogBench's labels): at a free choice the subject
compares the sample means m_F, m_J of the rewards seen so far, adds an information bonus A_h for
the less-observed arm and a side bias b towards J, and chooses with a logistic rule of temperature
T_h (in dollars)::

    ΔQ = (m_J − m_F) + A_h·ΔI + b,    ΔI = +1 if J was observed less, −1 if more, 0 if equal
    P(J) = σ(ΔQ / T_h)

with separate (A_1, T_1) and (A_6, T_6) for the two horizons (any horizon above 1 uses the
horizon-6 parameters).  The likelihood uses each game's first free choice (the choice CogBench and
Wilson et al. analyse).
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
from cogtestbed.inference.logit import fit_logit
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import log_sigmoid, sigmoid
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.horizon import EXPERIMENT

N_FORCED = 4

# Priors on logit(x/60 + ½): sd 0.5 puts 90 % of the bonus within ±12 $ and sd 0.25 the side
# bias within ±6 $ (sd 1 allowed ±25 $, far beyond any plausible agent, and gave the sampler
# flat, curved tails to explore).
BONUS_H1 = Parameter("bonus_h1", -30.0, 30.0, 0.0, "information bonus at horizon 1 ($)",
                     prior_mean=0.0, prior_sd=0.5, transform="logit")
BONUS_H6 = Parameter("bonus_h6", -30.0, 30.0, 6.0, "information bonus at horizon 6 ($)",
                     prior_mean=0.0, prior_sd=0.5, transform="logit")
TEMP_H1 = Parameter.positive("temperature_h1", 4.0, upper=200.0,
                             description="decision noise (logistic temperature, $) at horizon 1",
                             prior_mean=1.5, prior_sd=1.0, search_floor=0.3, search_ceiling=200.0)
TEMP_H6 = Parameter.positive("temperature_h6", 8.0, upper=200.0,
                             description="decision noise (logistic temperature, $) at horizon 6",
                             prior_mean=1.5, prior_sd=1.0, search_floor=0.3, search_ceiling=200.0)
SIDE_BIAS = Parameter("bias", -30.0, 30.0, 0.0, "bias towards machine J ($)",
                      prior_mean=0.0, prior_sd=0.25, transform="logit")
PARAMETERS = ParameterSet((BONUS_H1, BONUS_H6, TEMP_H1, TEMP_H6, SIDE_BIAS), "info-bonus")


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always", error_model="numpy")
def prob_j(dm: float, di: float, bonus: float, temperature: float, bias: float) -> float:
    """P(choose J) = σ((Δm + A·ΔI + b) / T); at T = 0 the limit, the argmax (½ on a tie)."""
    q = dm + bonus * di + bias
    if temperature <= 0.0:
        return 1.0 if q > 0.0 else 0.0 if q < 0.0 else 0.5
    x = q / temperature
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True, inline="always", error_model="numpy")
def info_diff(count_f: float, count_j: float) -> float:
    """ΔI: +1 if J was observed less often than F, −1 if more often, 0 if equally."""
    if count_j < count_f:
        return 1.0
    if count_j > count_f:
        return -1.0
    return 0.0


@njit(cache=True, error_model="numpy")
def bonus_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray, dm: np.ndarray,
                           di: np.ndarray, h6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The information-bonus model's likelihood: per-game log P(first free choice) and its
    gradient in (A_1, A_6, T_1, T_6, b).

    x = (Δm + A_h·ΔI + b)/T_h (Wilson et al. 2014, eq. 1); log P(y) = log σ(x) for y = 1 (J)
    and log σ(−x) for y = 0; d log P / dx = y − σ(x), so ∂/∂A_h = (y − σ)·ΔI/T_h,
    ∂/∂T_h = −(y − σ)·(Δm + A_h·ΔI + b)/T_h², ∂/∂b = (y − σ)/T_h.
    """
    n = y.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 5))
    for i in range(n):
        s = obs_subject[i]
        k = 1 if h6[i] else 0
        a, t = theta[s, k], theta[s, 2 + k]
        q = dm[i] + a * di[i] + theta[s, 4]
        x = q / t
        ll[i] = log_sigmoid(x) if y[i] == 1 else log_sigmoid(-x)
        d = y[i] - sigmoid(x)
        grad[i, k] = d * di[i] / t
        grad[i, 2 + k] = -d * q / (t * t)
        grad[i, 4] = d / t
    return ll, grad


# ----------------------------------------------------------------------------- data
def first_free_choices(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per game with its first free choice and CogBench's regressors.

    Columns: ``subject``, ``session``, ``game`` (row order), ``horizon_code`` (±1 from the game
    length, as CogBench reads it), ``choices_j`` (forced J count), ``choice`` (first free
    choice, NaN if invalid), ``mean0``/``mean1``, ``dm`` (sample-mean difference J − F over the
    forced trials) and ``di`` (ΔI).
    """
    keys = ["subject", "session"]
    ordered = trials.sort_values([*keys, "trial"], kind="stable")
    grouped = ordered.groupby(keys, sort=False)
    forced = ordered[ordered["trial"] < N_FORCED]
    f = forced.assign(rj=np.where(forced["action"].astype(float) == 1, forced["reward"], 0.0),
                      rf=np.where(forced["action"].astype(float) == 0, forced["reward"], 0.0),
                      cj=(forced["action"].astype(float) == 1).astype(float))
    agg = f.groupby(keys, sort=False).agg(choices_j=("cj", "sum"), sum_j=("rj", "sum"),
                                          sum_f=("rf", "sum"))
    first = ordered[ordered["trial"] == N_FORCED].set_index(keys)
    games = grouped.size().rename("n_rows").to_frame()
    games = games.join(agg).join(first[["action", "valid", "mean0", "mean1"]])
    games["horizon_code"] = np.where(games["n_rows"] == 10, 1.0, -1.0)
    games["choice"] = np.where(games["valid"].fillna(False).astype(bool),
                               games["action"].astype(float), np.nan)
    cj = games["choices_j"].to_numpy(float)
    cf = N_FORCED - cj
    games["dm"] = games["sum_j"] / np.maximum(cj, 1) - games["sum_f"] / np.maximum(cf, 1)
    games["di"] = np.sign(cf - cj)
    return games.reset_index()


@dataclass(frozen=True)
class ChoiceData:
    dm: np.ndarray
    di: np.ndarray
    h6: np.ndarray
    y: np.ndarray


def choice_data(trials: pd.DataFrame) -> dict[Hashable, ChoiceData]:
    games = first_free_choices(trials)
    games = games[games["choice"].notna()]
    out: dict[Hashable, ChoiceData] = {}
    for subject, g in games.groupby("subject", sort=False):
        out[subject] = ChoiceData(
            dm=g["dm"].to_numpy(np.float64), di=g["di"].to_numpy(np.float64),
            h6=(g["horizon_code"].to_numpy() > 0), y=g["choice"].to_numpy(np.int64),
        )
    return out


class InformationBonus(CognitiveModel):
    """Information bonus + horizon-dependent temperature: (A_1, A_6, T_1, T_6, b)."""

    name: ClassVar[str] = "info-bonus"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = PARAMETERS
    grid_points: ClassVar[int] = 4
    pointwise_kernel: ClassVar[Any] = bonus_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("y", "dm", "di", "h6")
    lapse_options: ClassVar[int | None] = 2  # a lapse picks either bandit
    observed_name: ClassVar[str] = "choice"
    choice_options: ClassVar[int | None] = 2  # machine F or J
    # Hierarchical fits at the default target 0.9 diverged on all four fresh data sets (18 divergences);
    # 0.95 drew 14 (benchmarks/studies/target_accept_per_family.py, the rule written before its runs).
    target_accept: ClassVar[float | None] = 0.95

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return choice_data(trials)

    def n_observations(self, data: ChoiceData) -> int:
        return int(data.y.shape[0])


MODELS: dict[str, CognitiveModel] = {"info-bonus": InformationBonus()}


# ----------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class LogitResult:
    """A CogBench exploration regression: coefficient (0 on failure), its CI and the reason."""

    params: np.ndarray | None
    bse: np.ndarray | None
    failure: str | None
    n: int


def exploration_logit(y: np.ndarray, x1: np.ndarray, h: np.ndarray) -> LogitResult:
    """``sm.Logit(y, [x1, h, x1·h, 1]).fit()`` as CogBench runs it (:func:`~cogtestbed.inference.logit.fit_logit`
    repeats statsmodels' Newton iterations to the last bit, without importing statsmodels).

    Perfect separation raises (``raise_on_perfect_prediction``: the behaviour of the statsmodels
    releases CogBench used) and a non-converged Newton fit counts as a failure.
    """
    x = np.column_stack([x1, h, x1 * h, np.ones_like(x1)])
    try:
        res = fit_logit(np.asarray(y, dtype=float), x)
        if not res.converged:
            return LogitResult(None, None, "not converged (quasi-separation)", len(y))
        return LogitResult(res.params, res.bse, None, len(y))
    except Exception as exc:  # CogBench catches everything here (bare except)
        return LogitResult(None, None, f"{type(exc).__name__}: {exc}", len(y))


def exploration_inputs(games: pd.DataFrame, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(DV, x1, horizon code) of CogBench's equal- or unequal-information regression."""
    g = games[games["choice"].notna()]
    cj = g["choices_j"].to_numpy()
    choice = g["choice"].to_numpy(float)
    m0, m1 = g["mean0"].to_numpy(float), g["mean1"].to_numpy(float)
    h = g["horizon_code"].to_numpy(float)
    if mode == "equal":
        keep = cj == 2
        return choice[keep], (m1 - m0)[keep], h[keep]
    one, three = cj == 1, cj == 3
    y = np.where(one, choice, 1 - choice)
    x1 = np.where(one, m1 - m0, m0 - m1)
    keep = one | three
    return y[keep], x1[keep], h[keep]


def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's horizon-task scores on a trial table (pooled over all games).

    Keys: ``performance`` (mean reward, forced trials included), ``directed_exploration``
    (+β(H), unequal information) and ``random_exploration`` (−β(x1·H), equal information), their
    CIs (1.96·SE, NaN on failure), ``n_games``, ``n_equal``, ``n_unequal``; ``n_invalid`` and
    ``flags`` (failed regressions scored 0, as CogBench does).  CogBench fits one regression per
    file, so ``per_run`` holds each run's mean reward and counts only.
    """
    games = first_free_choices(trials)
    flags: list[str] = []
    n_invalid_first = int(games["choice"].isna().sum())
    if n_invalid_first:
        flags.append(f"{n_invalid_first} games without a valid first free choice were left out")
    scores: dict[str, Any] = {}
    for mode, key, idx, sign in (("equal", "random_exploration", 2, -1.0),
                                 ("unequal", "directed_exploration", 1, 1.0)):
        y, x1, h = exploration_inputs(games, mode)
        fit = exploration_logit(y, x1, h)
        if fit.failure is None:
            assert fit.params is not None and fit.bse is not None
            scores[key] = sign * float(fit.params[idx])
            scores[f"{key}_ci"] = float(fit.bse[idx]) * 1.96
        else:
            scores[key] = 0.0
            scores[f"{key}_ci"] = float("nan")
            flags.append(f"{key}: {mode}-information regression failed ({fit.failure}); "
                         "scored 0 as CogBench does")
        scores[f"n_{mode}"] = int(len(y))
    valid = trials["valid"].astype(bool)
    reward = trials.loc[valid, "reward"].astype(float)
    metrics: dict[str, Any] = {
        "performance": float(reward.mean()),
        "directed_exploration": scores["directed_exploration"],
        "random_exploration": scores["random_exploration"],
        "performance_ci": float(reward.std() * 1.96 / math.sqrt(len(reward))),
        "directed_exploration_ci": scores["directed_exploration_ci"],
        "random_exploration_ci": scores["random_exploration_ci"],
        "n_games": len(games),
        "n_equal": scores["n_equal"],
        "n_unequal": scores["n_unequal"],
        "invalid_rate": float((~valid).sum() / max(len(trials), 1)),
    }
    return metrics_result(metrics, "per_run", _run_rows(trials), int((~valid).sum()), flags)


def _run_rows(trials: pd.DataFrame) -> list[dict[str, Any]]:
    """Each run's (subject, session) mean reward (forced trials included) and counts.

    The runs are cut out of one stably sorted copy of the two columns (no per-group DataFrame);
    each mean is numpy's over the run's valid rewards in row order, as a per-group loop computes it.
    """
    grouped = trials.groupby(["subject", "session"], sort=True, observed=True)
    codes = grouped.ngroup().to_numpy()
    kept = np.flatnonzero(codes >= 0)  # rows with a missing key belong to no run
    order = kept[np.argsort(codes[kept], kind="stable")]
    valid = trials["valid"].to_numpy(dtype=bool)[order]
    reward = trials["reward"].to_numpy(dtype=np.float64)[order]
    stops = np.cumsum(np.bincount(codes[kept], minlength=grouped.ngroups))
    rows, start = [], 0
    for (subject, session), stop in zip(grouped.size().index, stops.tolist(), strict=True):
        ok = valid[start:stop]
        run_reward = reward[start:stop][ok]
        rows.append({"run": subject.item() if isinstance(subject, np.generic) else subject,
                     "session": int(session),
                     "performance": float(run_reward.mean()) if run_reward.size else float("nan"),
                     "n_trials": int(stop - start), "n_invalid": int((~ok).sum())})
        start = stop
    return rows
