"""BART: CogBench's metrics and a target-pumps model.

**Metrics (CogBench ``BART/store.py``), per run, then the mean over runs (NaN skipped):**

* performance = mean points per balloon (0 for a popped balloon);
* risk = mean pumps per balloon, popped balloons included (CogBench's deliberate departure from
  Lejuez's adjusted pumps);
* adjusted_risk = mean points of the balloons that did not pop (= their pumps; Lejuez's adjusted
  pumps).  NaN for a run whose balloons all popped (flagged).

**Model (target pumps with logistic noise).**  On each balloon of a type with M = 128, 32 or 8
the agent draws a target ``T = max(0, round(μ_M + s·L))`` with ``L`` standard logistic (one
uniform: ``L = logit(u)``) and pumps until it reaches ``T`` (then skips) or the balloon pops.
With a break point ``B``, the observed pumps are ``min(T, B)``, so the likelihood of a balloon
is ``P(T = pumps)`` when it did not pop and ``P(T ≥ B)`` when it popped (censored)::

    P(T = t) = F((t + ½ − μ)/s) − F((t − ½ − μ)/s)   (t ≥ 1),   P(T = 0) = F((½ − μ)/s)
    P(T ≥ b) = 1 − F((b − ½ − μ)/s),                 F = logistic CDF

Expected points for a fixed target n with a break point uniform on 1..M: n(M − n)/M, maximised
at n = M/2 (M/4 points); expected pumps n − n(n − 1)/(2M).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.lapse import step_lapse, unit_lapse
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import log_sigmoid, sigmoid
from cogtestbed.parameters import Parameter, ParameterSet

EXPERIMENT = "bart"
TYPES = (128, 32, 8)
CLIP = 1e-12
#: Answers of one pump decision (inflate or collect).  A random balloon (a lapse covers the whole
#: balloon, :meth:`BartEnv.lapse_unit`) answers every decision uniformly over them, CogBench's
#: random agent: a balloon collected after t pumps has probability 2^−(t+1), one that popped on
#: its t-th pump 2^−t (:meth:`TargetModel.lapse_log_uniform`).
DECISION_ANSWERS = 2

TARGETS = tuple(
    # logit(μ/M) ~ N(−1, 1): central 90 % of μ between 0.07·M and 0.65·M (optimum M/2).
    Parameter(f"target_{m}", 0.0, float(m), float(m) / 4, f"mean target pumps on M = {m} balloons",
              prior_mean=-1.0, prior_sd=1.0, transform="logit")
    for m in TYPES
)
NOISE = Parameter.positive("noise", 1.0, upper=100.0, description="logistic scale of the target",
                           prior_mean=0.0, prior_sd=1.0, search_floor=0.05, search_ceiling=100.0)


@njit(cache=True)
def draw_target(mu: float, noise: float, u: float) -> int:
    """``max(0, floor(μ + s·logit(u) + ½))`` (u clipped away from 0 and 1)."""
    if noise <= 0.0:
        x = mu
    else:
        uc = min(max(u, 1e-12), 1.0 - 1e-12)
        x = mu + noise * (np.log(uc) - np.log1p(-uc))
    t = np.floor(x + 0.5)
    return int(t) if t > 0.0 else 0


@njit(cache=True, error_model="numpy")  # noise → 0 in a line search: not finite, not an exception
def log_p_target(mu: float, noise: float, pumps: int, exploded: bool) -> float:
    """log P(T = pumps) (kept) or log P(T ≥ pumps) (popped) under the discretised logistic."""
    if exploded:
        return log_sigmoid(-((pumps - 0.5 - mu) / noise))
    hi = (pumps + 0.5 - mu) / noise
    if pumps == 0:
        return log_sigmoid(hi)
    lo = (pumps - 0.5 - mu) / noise
    # σ(b) − σ(a) = σ(b)·σ(−a)·(1 − e^(a−b)), stable for any a < b
    return log_sigmoid(hi) + log_sigmoid(-lo) + np.log1p(-np.exp(lo - hi))


@njit(cache=True)
def simulate_bart_kernel(
    type_max: np.ndarray, sequence: np.ndarray, break_point: np.ndarray,
    targets: np.ndarray, noise: np.ndarray, p_inflate: np.ndarray, uniforms: np.ndarray,
    max_steps: int, lapse_kind: np.ndarray, lapse_u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play N sessions; returns per-step actions (0 skip / 1 inflate, −1 invalid), rewards,
    valid and played masks.

    ``targets`` (N, n_types) holds each letter's mean target μ; a subject with ``p_inflate[i] >=
    0`` instead inflates with that probability on every decision (CogBench's random agent: 0.5).
    One uniform per decision; the first decision of a balloon draws the target from its uniform.
    Lapses (:mod:`cogtestbed.lapse`) cover a whole balloon (``lapse_kind`` (N, ≥ balloons)
    per balloon, ``lapse_u`` (N, steps) per decision; no rows: no lapses): an invalid balloon is voided at its first
    decision, a random one answers every decision ⌊2u⌋ (the environment's step path).
    """
    n, nb = sequence.shape
    actions = np.full((n, max_steps), -1, dtype=np.int64)
    rewards = np.full((n, max_steps), np.nan)
    valid = np.zeros((n, max_steps), dtype=np.bool_)
    played = np.zeros((n, max_steps), dtype=np.bool_)
    for i in range(n):
        s = 0
        for b in range(nb):
            idx = sequence[i, b]
            k = 0
            target = 0
            while True:
                u = uniforms[i, s]
                if p_inflate[i] >= 0.0:
                    a = 1 if u < p_inflate[i] else 0
                else:
                    if k == 0:
                        target = draw_target(targets[i, idx], noise[i], u)
                    a = 1 if k < target else 0
                a = step_lapse(unit_lapse(lapse_kind, i, b), lapse_u, i, s, a, DECISION_ANSWERS)
                played[i, s] = True
                if a < 0:  # an invalid answer voids the balloon
                    s += 1
                    break
                actions[i, s] = a
                valid[i, s] = True
                if a == 0:
                    rewards[i, s] = float(k)
                    s += 1
                    break
                k += 1
                rewards[i, s] = 0.0
                s += 1
                if k >= break_point[i, b]:
                    break
    return actions, rewards, valid, played


# ----------------------------------------------------------------------------- likelihood kernel
@njit(cache=True, error_model="numpy")  # noise → 0 in a line search: not finite, not an exception
def target_pointwise_kernel(
    theta: np.ndarray, obs_subject: np.ndarray, pumps: np.ndarray, type_idx: np.ndarray,
    exploded: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The target model's likelihood: per-balloon log-likelihood and its gradient in
    (μ_128, μ_32, μ_8, s).

    :func:`log_p_target` (clipped below at 1e-12, no gradient there) with analytic derivatives:
    for ``h = (t + ½ − μ)/s`` and ``l = (t − ½ − μ)/s``,
    ∂ log σ(h)/∂μ = −σ(−h)/s, ∂ log σ(−l)/∂μ = σ(l)/s, ∂/∂s of each = the same times h (or l),
    and ∂ log(1 − e^(−1/s))/∂s = −1/(s²·(e^(1/s) − 1)).  Only valid balloons are passed in.
    """
    n = pumps.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 4))
    log_clip = np.log(CLIP)
    for j in range(n):
        i = obs_subject[j]
        k = type_idx[j]
        mu, s = theta[i, k], theta[i, 3]
        b = pumps[j]
        lp = log_p_target(mu, s, b, exploded[j])
        if lp <= log_clip:
            ll[j] = log_clip
            continue
        ll[j] = lp
        g_mu = 0.0
        g_s = 0.0
        if exploded[j]:
            lo = (b - 0.5 - mu) / s  # log σ(−lo)
            sl = sigmoid(lo)
            g_mu = sl / s
            g_s = sl * lo / s
        else:
            hi = (b + 0.5 - mu) / s  # log σ(hi)
            sh = sigmoid(-hi)
            g_mu = -sh / s
            g_s = -sh * hi / s
            if b > 0:
                lo = (b - 0.5 - mu) / s
                sl = sigmoid(lo)
                g_mu += sl / s
                g_s += sl * lo / s
                inv = 1.0 / s
                g_s -= inv * inv / np.expm1(inv) if inv < 700.0 else 0.0
        grad[j, k] = g_mu
        grad[j, 3] = g_s
    return ll, grad


@dataclass(frozen=True)
class BartData:
    type_idx: np.ndarray  # index of the balloon's M in TYPES (−1: void balloon)
    pumps: np.ndarray
    exploded: np.ndarray


def bart_data(trials: pd.DataFrame) -> dict[Hashable, BartData]:
    ordered = trials.sort_values(["subject", "session", "trial"], kind="stable")
    groups = list(ordered.groupby("subject", sort=False))
    lookup = {m: j for j, m in enumerate(TYPES)}
    out: dict[Hashable, BartData] = {}
    for key, df in groups:
        idx = np.array([lookup.get(int(m), -1) for m in df["max_pumps"]], dtype=np.int64)
        idx = np.where(df["valid"].to_numpy(dtype=bool), idx, -1)
        out[key] = BartData(idx, df["pumps"].to_numpy(dtype=np.int64),
                            df["exploded"].to_numpy(dtype=bool))
    return out


class TargetModel(CognitiveModel):
    """Target pumps per balloon type with logistic noise: (target_128, target_32, target_8, noise)."""

    name: ClassVar[str] = "target"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = ParameterSet((*TARGETS, NOISE), "target")
    grid_points: ClassVar[int] = 6
    pointwise_kernel: ClassVar[Any] = target_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("pumps", "type_idx", "exploded")
    observed_name: ClassVar[str] = "balloon"
    #: The parameters each subject's data pin are sampled centred, chosen from the data before sampling
    #: (:mod:`cogtestbed.inference.centring`; on for this family by ``benchmarks/studies/centring_by_data.py``).
    centre_pinned: ClassVar[bool] = True

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return bart_data(trials)

    def n_observations(self, data: BartData) -> int:
        return int(np.sum(data.type_idx >= 0))

    def observation_mask(self, data: BartData) -> np.ndarray:
        return data.type_idx >= 0

    def lapse_log_uniform(self, data: BartData) -> np.ndarray:
        """A random balloon: every decision uniform over :data:`DECISION_ANSWERS` (t pumps, then
        the collect decision unless it popped)."""
        decisions = data.pumps + np.where(data.exploded, 0, 1)
        return -decisions * np.log(DECISION_ANSWERS)


MODELS: dict[str, CognitiveModel] = {"target": TargetModel()}


def expected_points(n: float, m: int) -> float:
    """E[points] of a fixed target ``n`` on a balloon with break point uniform on 1..M."""
    n = min(max(n, 0.0), float(m))
    return n * (m - n) / m


def expected_pumps(n: float, m: int) -> float:
    """E[pumps] (popped balloons included) of a fixed target ``n``: n − n(n − 1)/(2M)."""
    n = min(max(n, 0.0), float(m))
    return n - n * (n - 1) / (2 * m)


# ----------------------------------------------------------------------------- metrics
def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's BART scores per run and their means over runs (see module docstring)."""
    from cogtestbed.progress import each_unit

    per_run = []
    runs = trials.groupby("subject", sort=True)
    for subject, df in each_unit(runs, "BART scores of each run", runs.ngroups):
        ok = df["valid"].to_numpy(dtype=bool)
        d = df.loc[ok]
        exploded = d["exploded"].to_numpy(dtype=bool)
        kept = d["reward"].to_numpy(dtype=np.float64)[~exploded]
        row: dict[str, Any] = {
            "run": int(subject) if isinstance(subject, (int, np.integer)) else subject,
            "performance": float(d["reward"].mean()) if len(d) else float("nan"),
            "risk": float(d["pumps"].mean()) if len(d) else float("nan"),
            "adjusted_risk": float(kept.mean()) if kept.size else float("nan"),
            "explosion_rate": float(exploded.mean()) if len(d) else float("nan"),
            "n_balloons": len(df),
            "n_invalid": int((~ok).sum()),
        }
        for m in TYPES:
            sel = d["max_pumps"].to_numpy() == m
            row[f"risk_{m}"] = float(d["pumps"].to_numpy()[sel].mean()) if sel.any() else float("nan")
        per_run.append(row)
    table = pd.DataFrame(per_run)
    metrics: dict[str, Any] = {k: float(table[k].mean()) for k in ("performance", "risk", "adjusted_risk")}
    for m in TYPES:
        metrics[f"risk_{m}"] = float(table[f"risk_{m}"].mean())
    metrics["n_runs"] = len(table)
    metrics["invalid_rate"] = float(table["n_invalid"].sum() / max(table["n_balloons"].sum(), 1))
    n_nan = int(table["adjusted_risk"].isna().sum())
    flags = [f"adjusted_risk undefined in {n_nan} run(s) where every balloon popped; the mean skips "
             "them as CogBench does"] if n_nan else []
    return metrics_result(metrics, "per_run", per_run, int(table["n_invalid"].sum()), flags)
