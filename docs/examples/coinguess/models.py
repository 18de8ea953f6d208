"""The coin-guess model (the family's owner: parameters, the shared choice rule, the likelihood
kernel and the metrics)."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.extend import CognitiveModel, MetricsResult, Parameter, ParameterSet, metrics_result

#: log(0.7 / 0.3): the log-odds one extra head adds (a head against a tail: twice that per flip).
LOG_ODDS_PER_HEAD = math.log(0.7 / 0.3)

#: β: how strongly guesses follow the evidence (1: probability matching; large: always the likelier coin).
BETA = Parameter.positive("beta", 1.0, upper=100.0, description="inverse temperature on the evidence")
PARAMETERS = ParameterSet((BETA,), "softmax")


@njit(cache=True)
def evidence(heads: np.ndarray, flips: np.ndarray) -> np.ndarray:
    """Log-odds of the heads coin given ``heads`` of ``flips``: (2k − n)·log(0.7/0.3)."""
    return (2.0 * heads - flips) * LOG_ODDS_PER_HEAD


@njit(cache=True)
def p_heads_coin(beta: float, ev: float) -> float:
    """P(guess = heads coin) = σ(β·L) (shared by the agent and the likelihood)."""
    return 1.0 / (1.0 + math.exp(-beta * ev))


@njit(cache=True)
def softmax_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray,
                             ev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log P(y) per guess and its derivative in β: d/dβ log σ(±βL) = (y − σ(βL))·L."""
    n = y.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 1))
    for i in range(n):
        beta = theta[obs_subject[i], 0]
        x = beta * ev[i]
        p = p_heads_coin(beta, ev[i])
        # log σ(x) and log σ(−x), stable for large |x|
        log_p = -math.log1p(math.exp(-x)) if x > 0 else x - math.log1p(math.exp(x))
        log_q = log_p - x
        ll[i] = log_p if y[i] == 1 else log_q
        grad[i, 0] = (y[i] - p) * ev[i]
    return ll, grad


@dataclass(frozen=True)
class GuessData:
    y: np.ndarray
    ev: np.ndarray


class Softmax(CognitiveModel):
    """Guesses follow σ(β·L) of the evidence L."""

    name: ClassVar[str] = "softmax"
    parameters: ClassVar[ParameterSet] = PARAMETERS
    pointwise_kernel: ClassVar[Any] = softmax_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("y", "ev")
    lapse_options: ClassVar[int | None] = 2  # a random guess picks either coin
    observed_name: ClassVar[str] = "guess"

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        out: dict[Hashable, Any] = {}
        valid = trials[trials["valid"].astype(bool)]
        for subject, g in valid.groupby("subject", sort=False):
            out[subject] = GuessData(y=g["action"].to_numpy(np.int64),
                                     ev=evidence(g["heads"].to_numpy(np.float64), g["flips"].to_numpy(np.float64)))
        for subject in trials["subject"].unique():  # a subject without a valid guess has no observations
            out.setdefault(subject, GuessData(y=np.zeros(0, np.int64), ev=np.zeros(0)))
        return out

    def n_observations(self, data: GuessData) -> int:
        return int(data.y.shape[0])


MODELS: dict[str, CognitiveModel] = {"softmax": Softmax()}


def coin_metrics(trials: pd.DataFrame) -> MetricsResult:
    """Accuracy (share of correct guesses) and agreement with the likelier coin, per subject and
    overall; invalid guesses left out (null with a reason where none is valid)."""
    ok = trials["valid"].astype(bool).to_numpy()
    likelier = (2 * trials["heads"].to_numpy() > trials["flips"].to_numpy()).astype(float)
    tie = 2 * trials["heads"].to_numpy() == trials["flips"].to_numpy()
    action = trials["action"].to_numpy(dtype=float, na_value=np.nan)
    agree = (action == likelier) & ~tie
    rows = []
    for subject, idx in trials.groupby("subject", sort=True).indices.items():
        keep = ok[idx]
        rows.append({"subject": subject, "n_valid": int(keep.sum()),
                     "accuracy": float(trials["reward"].to_numpy()[idx][keep].mean()) if keep.any() else None})
    n_invalid = int((~ok).sum())
    flags = [f"{n_invalid} invalid guesses left out"] if n_invalid else []
    if not ok.any():
        return metrics_result({"accuracy": None, "agreement": None}, "per_subject", rows, n_invalid,
                              [*flags, "no valid guess: no metric"],
                              null_reasons={"accuracy": "no valid guess", "agreement": "no valid guess"})
    decided = ok & ~tie
    metrics = {"accuracy": float(trials["reward"].to_numpy()[ok].mean()),
               "agreement": float(agree[decided].mean()) if decided.any() else None}
    reasons = {} if decided.any() else {"agreement": "every valid guess was on a tie"}
    return metrics_result(metrics, "per_subject", rows, n_invalid, flags, **({"null_reasons": reasons} if reasons
                                                                             else {}))
