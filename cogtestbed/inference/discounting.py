"""Temporal discounting: CogBench's staircase score and a hyperbolic discounting model.

**Metric (CogBench ``TemporalDiscounting/store.py``).**  Per run: the staircase score (0–19, see
:mod:`cogtestbed.environments.discounting`) and the four anomaly flags (1 = the subject chose
Option 2 on the item, CogBench's columns "present bias", "subaddictivity", "delay-speedup
asymmetry-1", "delay-length asymmetry-2"); CogBench reports the mean over runs (NaN runs skipped,
as ``np.mean`` on a pandas column does).  Imported CogBench files hold only these per-run values
(rows with ``item == "summary"``); they are taken as recorded.

Flag semantics follow the data CogBench released (all flags 0 when the subject chose Option 1);
the code at HEAD initialises "present bias" at 1, which would make that column always 1 — not
reproduced.

**Model (hyperbolic discounting, Mazur 1987).**  An amount ``A`` after ``D`` years is worth
``V = A / (1 + k·D)`` (losses are negative amounts).  The choice rule is a logistic on the value
difference relative to the question's baseline amount ``S``::

    P(Option 1) = σ((V1 − V2) / (τ·S))

with temperature ``τ`` (τ = 0: always the higher value, ties 50/50).  The score is *not* monotone
in ``k``: the two gain baselines rise with ``k`` while the loss baseline falls (a discounter
prefers paying later), see :func:`expected_score`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import DataError
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.lapse import step_lapse, unit_lapse
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.discounting import (
    ANOMALY_ITEMS,
    MAX_QUESTIONS,
    MVF_NONE,
    MVF_VALUES,
    N_BASELINE_CODES,
    NOT_ASKED,
    SUMMARY_ITEM,
)

if TYPE_CHECKING:  # the staircase's questions come from the environment, imported where they are asked
    from cogtestbed.environments.discounting import DiscountingDesign
    from cogtestbed.inference.adaptive import DesignSpace

EXPERIMENT = "temporal-discounting"
CLIP = 1e-10
#: ``block`` of an adaptive session's questions (:data:`cogtestbed.environments.discounting.ADAPTIVE_BLOCK`).
ADAPTIVE_BLOCK = "adaptive"

K = Parameter.positive("k", 0.1, upper=100.0, description="hyperbolic discount rate per year",
                       prior_mean=-2.0, prior_sd=1.5, search_floor=1e-4, search_ceiling=100.0)
TEMPERATURE = Parameter.positive("temperature", 0.05, upper=10.0,
                                 description="choice temperature on value / baseline amount",
                                 prior_mean=-3.0, prior_sd=1.0, search_floor=1e-3,
                                 search_ceiling=10.0)


# ----------------------------------------------------------------------------- question tables
def question_tables(design: DiscountingDesign) -> tuple[np.ndarray, np.ndarray]:
    """(baseline (3, 2, 3, 5), anomaly (5, 4, 5)) arrays of (a1, d1, a2, d2, scale).

    Baseline index: block, branch (0 up = first answer "1", 1 down), level.
    """
    from cogtestbed.environments.discounting import anomaly_question, baseline_question

    base = np.empty((3, 2, 3, 5))
    for b in range(3):
        for br in range(2):
            for lv in range(3):
                q = baseline_question(design, b, lv, bool(br))
                base[b, br, lv] = (q.amount1, q.delay1, q.amount2, q.delay2, q.scale)
    anom = np.empty((5, 4, 5))
    for m in range(5):
        for it in range(4):
            q = anomaly_question(design, it, m)
            anom[m, it] = (q.amount1, q.delay1, q.amount2, q.delay2, q.scale)
    return base, anom


@njit(cache=True)
def prob_option1(k: float, tau: float, a1: float, d1: float, a2: float, d2: float,
                 scale: float) -> float:
    """P(Option 1) = σ((V1 − V2)/(τ·S)), V = A/(1 + k·D); τ = 0 → deterministic (ties ½)."""
    x = (a1 / (1.0 + k * d1) - a2 / (1.0 + k * d2)) / scale
    if tau <= 0.0:
        if x > 0.0:
            return 1.0
        if x < 0.0:
            return 0.0
        return 0.5
    z = x / tau
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(cache=True)
def simulate_staircase_kernel(
    base: np.ndarray, anom: np.ndarray, k: np.ndarray, tau: np.ndarray, p_random: np.ndarray,
    uniforms: np.ndarray, lapse_kind: np.ndarray, lapse_u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play the staircase for N subjects: returns per-step actions (N, 13), valid and played masks
    and the code of the question asked at each step (``asked_questions``'s codes: ``NOT_ASKED``
    where none was).

    Subject ``i`` picks Option 1 with ``prob_option1`` unless ``p_random[i] >= 0``, in which case
    it picks Option 1 with that probability (CogBench's random agent: 0.5).  One uniform per
    question.  Lapses (:mod:`cogtestbed.lapse`, per question; no rows: none): a random answer ⌊2u⌋ moves
    the staircase like any other; an invalid one ends the session, as the environment does.
    """
    n = k.shape[0]
    actions = np.full((n, 13), -1, dtype=np.int64)
    valid = np.zeros((n, 13), dtype=np.bool_)
    played = np.zeros((n, 13), dtype=np.bool_)
    codes = np.full((n, 13), NOT_ASKED, dtype=np.int64)
    for i in range(n):
        _play_staircase(i, base, anom, k[i], tau[i], p_random[i], uniforms, lapse_kind, lapse_u,
                        actions, valid, played, codes)
    return actions, valid, played, codes


@njit(cache=True)
def _answer(i: int, s: int, q: np.ndarray, k: float, tau: float, p_random: float, uniforms: np.ndarray,
            lapse_kind: np.ndarray, lapse_u: np.ndarray, actions: np.ndarray, valid: np.ndarray,
            played: np.ndarray) -> int:
    """Subject ``i``'s answer to question ``q`` at step ``s`` (−1: invalid), recorded."""
    p1 = p_random if p_random >= 0.0 else prob_option1(k, tau, q[0], q[1], q[2], q[3], q[4])
    c = step_lapse(unit_lapse(lapse_kind, i, s), lapse_u, i, s, 0 if uniforms[i, s] < p1 else 1, 2)
    played[i, s] = True
    if c >= 0:
        actions[i, s] = c
        valid[i, s] = True
    return c


@njit(cache=True)
def _play_staircase(i: int, base: np.ndarray, anom: np.ndarray, k: float, tau: float, p_random: float,
                    uniforms: np.ndarray, lapse_kind: np.ndarray, lapse_u: np.ndarray, actions: np.ndarray,
                    valid: np.ndarray, played: np.ndarray, codes: np.ndarray) -> None:
    """One subject's session of :func:`simulate_staircase_kernel` (returns at an invalid answer)."""
    s = 0
    mvf = -1
    for block in range(3):
        down = 0
        level = 0
        while True:
            c = _answer(i, s, base[block, down, level], k, tau, p_random, uniforms, lapse_kind, lapse_u,
                        actions, valid, played)
            codes[i, s] = 6 * block + 2 * level + down
            s += 1
            if c < 0:
                return
            if level == 0:
                down = c
                level = 1
                continue
            if down == 0:
                if level == 1:
                    if c == 1:
                        code = 3
                        break
                    level = 2
                    continue
                code = 4 if c == 1 else 5
                break
            if level == 1:
                if c == 0:
                    code = 2
                    break
                level = 2
                continue
            code = 1 if c == 0 else 0
            break
        if block == 0:
            mvf = code
    if mvf == 5:
        return
    for item in range(4):
        c = _answer(i, s, anom[mvf, item], k, tau, p_random, uniforms, lapse_kind, lapse_u, actions, valid, played)
        codes[i, s] = N_BASELINE_CODES + 5 * item + mvf
        s += 1
        if c < 0:
            return


# ----------------------------------------------------------------------------- likelihood kernel
@njit(cache=True)
def hyperbolic_pointwise_kernel(
    theta: np.ndarray, obs_subject: np.ndarray, choice: np.ndarray, questions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The hyperbolic model's likelihood: per-answer log P(choice) and its gradient in (k, τ).

    ``log P(choice)`` with P(Option 1) = σ(z), z = (V1 − V2)/(τ·S), V = A/(1 + k·D)
    (:func:`prob_option1`), clipped below at 1e-10 (no gradient there);
    ∂z/∂k = Σ ∓A·D/(1 + k·D)² /(τ·S), ∂z/∂τ = −z/τ.  Only valid answers are passed in.

    Defined on the whole closed box, τ = 0 included: there (and where x/τ overflows) the answer
    has prob_option1's deterministic probability 1, 0 (clipped) or ½ at a tie, the limit of the
    logistic, with no gradient.  τ = 0 is the parameter's lower bound, and the MLE's search map
    ``0 + exp z`` reaches it exactly once exp underflows (a long BFGS step on subjects whose
    answers one k explains without error, where a ZeroDivisionError was raised).
    """
    n = choice.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 2))
    log_clip = np.log(CLIP)
    for t in range(n):
        s = obs_subject[t]
        k, tau = theta[s, 0], theta[s, 1]
        a1, d1, a2, d2, scale = (questions[t, 0], questions[t, 1], questions[t, 2],
                                 questions[t, 3], questions[t, 4])
        x = (a1 / (1.0 + k * d1) - a2 / (1.0 + k * d2)) / scale
        dx_dk = (-a1 * d1 / (1.0 + k * d1) ** 2 + a2 * d2 / (1.0 + k * d2) ** 2) / scale
        if tau <= 0.0 or not np.isfinite(x / tau):  # the deterministic limit (see above)
            signed = x if choice[t] == 0 else -x
            ll[t] = 0.0 if signed > 0.0 else (np.log(0.5) if signed == 0.0 else log_clip)
            continue
        z = x / tau
        u = z if choice[t] == 0 else -z  # log P = log σ(u)
        lp = -np.log1p(np.exp(-u)) if u >= 0.0 else u - np.log1p(np.exp(u))
        if lp <= log_clip:
            ll[t] = log_clip
            continue
        ll[t] = lp
        e = np.exp(-abs(u))
        slope = e / (1.0 + e) if u >= 0.0 else 1.0 / (1.0 + e)  # σ(−u) = d log σ(u)/du
        if slope == 0.0:  # σ(u) = 1 to double precision: no gradient (and z/τ may be inf)
            continue
        if choice[t] != 0:
            slope = -slope
        grad[t, 0] = slope * dx_dk / tau
        grad[t, 1] = -slope * z / tau
    return ll, grad


# ----------------------------------------------------------------------------- adaptive design space
def adaptive_space(design: DiscountingDesign) -> DesignSpace:
    """The hyperbolic kernel's ``questions`` rows of the adaptive candidates
    (:func:`~cogtestbed.environments.discounting.adaptive_questions`); answers Option 1 / 2."""
    from cogtestbed.environments.discounting import adaptive_questions
    from cogtestbed.inference.adaptive import DesignSpace

    qs = adaptive_questions(design)
    rows = np.array([(q.amount1, q.delay1, q.amount2, q.delay2, q.scale) for q in qs], dtype=np.float64)
    return DesignSpace(f"{EXPERIMENT}/base_pay={design.base_pay}", {"questions": rows}, (0, 1),
                       tuple(q.option2 for q in qs))


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True)
class DiscountingData:
    questions: np.ndarray  # (n, 5) a1, d1, a2, d2, scale
    choice: np.ndarray  # (n,) 0/1, −1 invalid


def discounting_data(trials: pd.DataFrame) -> dict[Hashable, DiscountingData]:
    """Per-subject question rows and choices (imported summary rows carry no choices)."""
    rows = trials[trials["item"].astype("string") != SUMMARY_ITEM] if "item" in trials else trials
    rows = rows.sort_values(["subject", "session", "trial"], kind="stable")
    groups = list(rows.groupby("subject", sort=False))
    out: dict[Hashable, DiscountingData] = {}
    for key, df in groups:
        q = df[["amount1", "delay1", "amount2", "delay2", "scale"]].to_numpy(dtype=np.float64)
        choice = pd.to_numeric(df["action"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
        choice = np.where(df["valid"].to_numpy(dtype=bool), choice, -1)
        out[key] = DiscountingData(np.ascontiguousarray(q), choice)
    return out


class HyperbolicModel(CognitiveModel):
    """Hyperbolic discounter with a logistic choice rule: (k, temperature)."""

    name: ClassVar[str] = "hyperbolic"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = ParameterSet((K, TEMPERATURE), "hyperbolic")
    grid_points: ClassVar[int] = 15
    # Near-deterministic populations (large k, small temperature) make the posterior stiff; a
    # higher acceptance target removed most divergences in the recovery study (39 -> 4).
    target_accept: ClassVar[float | None] = 0.98
    pointwise_kernel: ClassVar[Any] = hyperbolic_pointwise_kernel
    #: nutpie's low-rank mass matrix: by the rule written before the run, on fresh data sets 2 and 3 it gave
    #: at least the diagonal's min bulk ESS per CPU-second at R-hat <= 1.01 with no more divergences
    #: (docs/benchmarks.md, "The low-rank mass matrix per family").
    low_rank_mass_matrix: ClassVar[bool] = True
    observation_fields: ClassVar[tuple[str, ...]] = ("choice", "questions")
    lapse_options: ClassVar[int | None] = 2  # a lapse picks either option
    observed_name: ClassVar[str] = "answer"
    choice_options: ClassVar[int | None] = 2  # option 1 or 2
    #: a question's (amount, delay) of each option and its scale, per observation
    data_dims: ClassVar[Mapping[str, tuple[str, ...]]] = {"questions": ("obs", "question_field")}

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return discounting_data(trials)

    def n_observations(self, data: DiscountingData) -> int:
        return int(np.sum(data.choice >= 0))

    def observation_mask(self, data: DiscountingData) -> np.ndarray:
        return data.choice >= 0


MODELS: dict[str, CognitiveModel] = {"hyperbolic": HyperbolicModel()}


def expected_score(k: float, design: DiscountingDesign | None = None) -> dict[str, float]:
    """Score of a deterministic hyperbolic discounter (τ = 0) with rate ``k``, by block.

    Shows the non-monotonicity: the gain baselines rise with ``k``, the loss baseline falls.
    """
    from cogtestbed.environments.discounting import DiscountingDesign, score_answers

    design = design or DiscountingDesign()
    base, anom = question_tables(design)
    actions, _, played, _ = simulate_staircase_kernel(
        base, anom, np.array([k]), np.zeros(1), np.full(1, -1.0), np.full((1, MAX_QUESTIONS), 0.5),
        np.zeros((0, MAX_QUESTIONS), dtype=np.int8), np.zeros((0, MAX_QUESTIONS)),
    )
    return score_answers(design, [int(a) for a in actions[0][played[0]]])


# ----------------------------------------------------------------------------- metrics
def run_scores(trials: pd.DataFrame, design: DiscountingDesign | None = None) -> list[dict[str, Any]]:
    """Per-run score, anomaly flags and mvf (computed from answers or taken from summaries; the
    environment's staircase, with the default design unless ``design`` is given, scores answers)."""
    from cogtestbed.progress import each_unit

    out = []
    runs = trials.groupby("subject", sort=True)
    for subject, df in each_unit(runs, "discounting scores of each run", runs.ngroups):
        run: dict[str, Any] = {"run": int(subject) if isinstance(subject, (int, np.integer)) else subject}
        items = df["item"].astype("string") if "item" in df else pd.Series([""] * len(df))
        if (items == SUMMARY_ITEM).any():
            row = df.loc[(items == SUMMARY_ITEM).to_numpy()].iloc[0]
            run["score"] = float(row["summary_score"])
            for name in ANOMALY_ITEMS:
                run[name] = float(row[f"summary_{name}"])
            run.update({"mvf": float("nan"), "complete": bool(np.isfinite(run["score"])),
                        "n_questions": 0, "n_invalid": 0, "source": "cogbench summary"})
        else:
            df = df.sort_values(["session", "trial"], kind="stable")
            valid = df["valid"].to_numpy(dtype=bool)
            answers = pd.to_numeric(df["action"], errors="coerce").to_numpy()
            n_ok = int(np.argmin(valid)) if not valid.all() else len(valid)
            res = _score_answers(design, [int(a) for a in answers[:n_ok]])
            run.update({k: res[k] for k in ("score", *ANOMALY_ITEMS, "mvf", "complete")})
            run.update({f"score_{b}": res[f"score_{b}"] for b in ("gain", "gain_magnitude", "loss")})
            run.update({"n_questions": len(df), "n_invalid": int((~valid).sum()), "source": "answers"})
        out.append(run)
    return out


def _score_answers(design: DiscountingDesign | None, answers: list[int]) -> dict[str, Any]:
    """:func:`~cogtestbed.environments.discounting.score_answers` (default design: CogBench's)."""
    from cogtestbed.environments.discounting import DiscountingDesign, score_answers

    return score_answers(design or DiscountingDesign(), answers)


def cogbench_metrics(trials: pd.DataFrame) -> MetricsResult:
    """CogBench's temporal-discounting score and anomaly items: means over runs (NaN skipped).

    Refused for an adaptive table: the score counts the staircase's branches and the
    anomaly items, which an adaptive session never asks (its questions depend on the answers
    through the posterior, not the staircase's tree); fit the hyperbolic model instead."""
    if "block" in trials and (trials["block"].astype("string") == ADAPTIVE_BLOCK).any():
        raise DataError("temporal-discounting metrics refused: the CogBench score assumes the fixed staircase, and "
                        "this table's questions were chosen adaptively; fit the hyperbolic model instead")
    per_run = run_scores(trials)
    table = pd.DataFrame(per_run)
    metrics: dict[str, Any] = {"score": float(table["score"].mean())}
    for name in ANOMALY_ITEMS:
        metrics[name] = float(table[name].mean())
    metrics["n_runs"] = len(table)
    metrics["n_incomplete"] = int((~table["complete"].astype(bool)).sum())
    flags = [f"{metrics['n_incomplete']} run(s) without a score (invalid answer or CogBench NaN row); "
             "the mean skips them as CogBench does"] if metrics["n_incomplete"] else []
    return metrics_result(metrics, "per_run", per_run, int(table["n_invalid"].sum()), flags)


__all__ = ["MVF_NONE", "MVF_VALUES", "HyperbolicModel", "cogbench_metrics", "expected_score"]
