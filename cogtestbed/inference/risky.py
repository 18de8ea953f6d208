"""Risky choice between two 50/50 lotteries: the prospect-theory and expected-value deciders and the
experiment's metrics.

**Prospect theory (Kahneman & Tversky 1979; Tversky & Kahneman 1992, eq. 5).**  An outcome ``x`` is
valued ``u(x) = A·(x/A)^α`` for gains and ``u(x) = −λ·A·(−x/A)^α`` for losses (``u(0) = 0``; the
power function x^α anchored at A = :data:`VALUE_ANCHOR` points, a rescaling); a lottery with
two outcomes of probability ½ is worth ``V = ½·u(o1) + ½·u(o2)``.  Defaults chosen by cogtestbed,
not from the paper:

* one curvature ``α`` for gains and losses (:data:`ONE_CURVATURE`): with a separate loss curvature,
  λ is defined only at one outcome magnitude (λ·|x|^(α⁻−α⁺) is what the choices identify);
* no probability weighting (:data:`PROBABILITY_WEIGHTING`): every probability is ½, so a weight
  w(½) is one constant per domain; in mixed lotteries w⁻(½)/w⁺(½) multiplies λ and is absorbed
  into it, and in gain-only or loss-only pairs a rank-dependent w(½) ≠ ½ would be one more
  parameter these designs barely inform;
* the choice rule is a logistic (random-utility) rule on the value difference,
  ``P(first) = σ(θ·(V₁ − V₂))``, with sensitivity ``θ`` per unit of subjective value.

The expected-value decider is the same rule on expected values (λ = α = 1): the RUM/EV baseline.

**Likelihood.**  ``log P(choice) = log σ(±θ·(V₁ − V₂))`` in log-sum-exp form (no clipping) with its
exact gradient in (λ, α, θ): ``∂V/∂λ = ½·Σ_{o<0} −A·(−o/A)^α``, ``∂V/∂α = ½·Σ_{o≠0} u(o)·ln|o/A|``,
``∂z/∂θ = V₁ − V₂``.

**Metrics.**  Per subject: ``p_risky``, the share of choices of the riskier lottery (the wider
range: a 50/50 lottery's outcome SD is half its range) among trials whose ranges differ;
``p_higher_ev``, the share of choices of the higher expected value among trials whose expected
values differ; ``p_risky_mixed`` / ``p_risky_gain`` / ``p_risky_loss``, ``p_risky`` within pairs of
two mixed, two gain-only, two loss-only lotteries; and the prospect-theory MLE (λ, α, θ).  Headline:
``loss_aversion`` (the median over subjects of λ), ``p_risky`` and ``p_higher_ev`` (means over
subjects).  A share without trials that define it is null with its reason.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.inference.adaptive import ADAPTIVE_COLUMN
from cogtestbed.inference.base import CognitiveModel, subject_slices
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.risky import EXPERIMENT, OUTCOME_COLUMNS, lottery_summaries

#: Default chosen by cogtestbed, not from the paper: one curvature α for gains and losses.
ONE_CURVATURE = True
#: Default chosen by cogtestbed, not from the paper: no probability weighting (every p is ½).
PROBABILITY_WEIGHTING = False
#: Default chosen by cogtestbed, not from the paper: the outcome A at which the value function is
#: anchored, u(±A) = ±A (resp. −λ·A) for every α (A = 20 points, the geometric middle of Spektor et
#: al.'s outcome magnitudes, 2-64).  The power function x^α is scaled by A^(1−α), which only
#: reparametrises θ (θ·A^(1−α) is the sensitivity of the unanchored x^α), so that θ is per point
#: of value near A whatever α: with x^α, θ's unit changes with α and α and θ trade off along a
#: ridge (Stewart, Scheibehenne & Pachur 2018, "Psychological parameters have units").
VALUE_ANCHOR = 20.0

# Bounds, defaults and priors (normal on the log scale) are chosen by cogtestbed, not from the paper:
# λ up to 10 and α up to 2 cover loss seeking to strong aversion, concave to convex value functions;
# the priors centre on λ 1.2, α 0.77 (log(α − 0.1)), θ 1.35, near the median MLEs of Spektor et al.'s
# Exp. 2 participants (λ 0.98, α 0.86, θ 1.62: docs/risky-choice.md); the defaults are a textbook
# decider (λ 1.5, α 0.8, θ 1).
#: Default chosen by cogtestbed, not from the paper: α ≥ 0.1.  As α → 0 every gain is worth about A
#: and every loss λ·A, and u(x) ≈ A·(1 + α·ln(x/A)): with θ → ∞ a log-value decider with sensitivity
#: θ·α, a degenerate corner that held the MLE's optimum for some sessions of 98 trials.
ALPHA_MIN = 0.1
LAMBDA = Parameter.positive("lambda", 1.5, upper=10.0, description="loss aversion λ (losses weigh λ times gains)",
                            prior_mean=0.2, prior_sd=0.5, search_floor=0.05, search_ceiling=10.0)
ALPHA = Parameter("alpha", ALPHA_MIN, 2.0, 0.8, "outcome curvature α (gains and losses)", transform="log",
                  prior_mean=-0.4, prior_sd=0.3, search_floor=0.1, search_ceiling=1.9)
THETA = Parameter.positive("theta", 1.0, upper=20.0, description="choice sensitivity θ per point of value",
                           prior_mean=0.3, prior_sd=0.7, search_floor=1e-3, search_ceiling=20.0)

PT_PARAMETERS = ParameterSet((LAMBDA, ALPHA, THETA), "prospect-theory")
EV_PARAMETERS = ParameterSet((THETA,), "expected-value")


# ----------------------------------------------------------------------------- value and choice rule
@njit(cache=True, inline="always")
def outcome_value(o: float, lam: float, alpha: float) -> tuple[float, float, float]:
    """(u(o), ∂u/∂λ, ∂u/∂α) of outcome ``o`` under prospect theory's value function, anchored at
    :data:`VALUE_ANCHOR` A: u(o) = A·(o/A)^α for gains, −λ·A·(−o/A)^α for losses."""
    if o > 0.0:
        r = o / VALUE_ANCHOR
        g = VALUE_ANCHOR * r ** alpha
        return g, 0.0, g * np.log(r)
    if o < 0.0:
        r = -o / VALUE_ANCHOR
        m = VALUE_ANCHOR * r ** alpha
        return -lam * m, -m, -lam * m * np.log(r)
    return 0.0, 0.0, 0.0


@njit(cache=True)
def value_difference(lam: float, alpha: float, o: np.ndarray) -> tuple[float, float, float]:
    """(V₁ − V₂, its ∂/∂λ, its ∂/∂α) for the four outcomes ``o`` (x1, x2, y1, y2)."""
    d, dl, da = 0.0, 0.0, 0.0
    for j in range(4):
        u, ul, ua = outcome_value(o[j], lam, alpha)
        sign = 0.5 if j < 2 else -0.5
        d += sign * u
        dl += sign * ul
        da += sign * ua
    return d, dl, da


@njit(cache=True, inline="always")
def log_sigmoid(s: float) -> float:
    """log σ(s) = −log(1 + e^(−s)), stable for every finite s (log-sum-exp)."""
    if s >= 0.0:
        return -np.log1p(np.exp(-s))
    return s - np.log1p(np.exp(s))


@njit(cache=True)
def prob_first(lam: float, alpha: float, theta: float, o: np.ndarray) -> float:
    """P(the first-named lottery) = σ(θ·(V₁ − V₂))."""
    d, _, _ = value_difference(lam, alpha, o)
    z = theta * d
    e = np.exp(-abs(z))
    return (1.0 if z >= 0.0 else e) / (1.0 + e)


@njit(cache=True)
def simulate_choices_kernel(outcomes: np.ndarray, lam: np.ndarray, alpha: np.ndarray, theta: np.ndarray,
                            p_fixed: float, uniforms: np.ndarray) -> np.ndarray:
    """Choices (N, T) of N subjects on trials ``outcomes`` (N, T, 4): the first lottery iff
    u < P(first) (one uniform per trial); ``p_fixed`` ≥ 0 replaces P(first) (the random agent)."""
    n, t_max = uniforms.shape
    out = np.empty((n, t_max), dtype=np.int64)
    for i in range(n):
        for t in range(t_max):
            p = p_fixed if p_fixed >= 0.0 else prob_first(lam[i], alpha[i], theta[i], outcomes[i, t])
            out[i, t] = 0 if uniforms[i, t] < p else 1
    return out


# ----------------------------------------------------------------------------- likelihood kernel
@njit(cache=True)
def pt_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, choice: np.ndarray, outcomes: np.ndarray,
                        log_ratio: np.ndarray, magnitude_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-choice log P(choice) and its gradient in the columns (λ, α, θ) (module docstring).

    ``choice`` (n,) 0 = first-named lottery, 1 = second; ``outcomes`` (n, 4); ``log_ratio`` (n, 4)
    ln(|o|/A) and ``magnitude_id`` (n, 4) the index of |o| among its subject's distinct magnitudes
    (−1 for o = 0; :func:`magnitude_ids`).  A subject's value A·(|o|/A)^α of each distinct magnitude
    is computed once and reused by every trial showing it (Spektor et al.'s 73,250 choices have 36
    magnitudes), so a choice costs one exponential and one log1p: the hierarchical fit's gradient
    is this kernel over every choice at every leapfrog step.  Only valid answers are passed in."""
    n = choice.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, 3))
    size = 1
    for t in range(n):
        for j in range(4):
            size = max(size, magnitude_id[t, j] + 1)
    value = np.empty(size)  # A·(|o|/A)^α of the subject stamped in owner
    slope_a = np.empty(size)  # its ∂/∂α
    owner = np.full(size, -1)
    for t in range(n):
        s_ = obs_subject[t]
        lam, alpha, th = theta[s_, 0], theta[s_, 1], theta[s_, 2]
        d, dl, da = 0.0, 0.0, 0.0
        for j in range(4):
            k = magnitude_id[t, j]
            if k < 0:
                continue
            if owner[k] != s_:
                value[k] = VALUE_ANCHOR * np.exp(alpha * log_ratio[t, j])
                slope_a[k] = value[k] * log_ratio[t, j]
                owner[k] = s_
            half = 0.5 if j < 2 else -0.5
            if outcomes[t, j] > 0.0:
                d += half * value[k]
                da += half * slope_a[k]
            else:
                d -= half * lam * value[k]
                dl -= half * value[k]
                da -= half * lam * slope_a[k]
        sign = 1.0 if choice[t] == 0 else -1.0
        s = sign * th * d
        e = np.exp(-abs(s))
        ll[t] = -np.log1p(e) if s >= 0.0 else s - np.log1p(e)  # log σ(s), log-sum-exp form
        slope = sign * ((e / (1.0 + e)) if s >= 0.0 else (1.0 / (1.0 + e)))  # σ(−s)·ds/dz
        grad[t, 0] = slope * th * dl
        grad[t, 1] = slope * th * da
        grad[t, 2] = slope * d
    return ll, grad


def magnitude_ids(outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln(|o|/A), the index of |o| among the distinct magnitudes of ``outcomes``) for every outcome
    of ``outcomes`` (n, 4), 0 and −1 for o = 0: the per-subject magnitude table of
    :func:`pt_pointwise_kernel`."""
    mag = np.abs(np.asarray(outcomes, dtype=np.float64))
    distinct, inverse = np.unique(mag, return_inverse=True)
    ids = inverse.reshape(mag.shape).astype(np.int64)
    if distinct.size and distinct[0] == 0.0:  # 0 has no value to look up; the others shift down
        ids -= 1
    with np.errstate(divide="ignore"):
        log_ratio = np.where(mag > 0.0, np.log(np.where(mag > 0.0, mag, 1.0) / VALUE_ANCHOR), 0.0)
    return np.ascontiguousarray(log_ratio), np.ascontiguousarray(ids)


@njit(cache=True)
def pt_nll_rows_kernel(theta: np.ndarray, choice: np.ndarray, outcomes: np.ndarray,
                       magnitude_id: np.ndarray) -> np.ndarray:
    """−Σ log P(choice) of one subject's valid answers at each row (λ, α, θ) of ``theta`` (m, 3):
    :func:`pt_pointwise_kernel`'s log-likelihood without its gradient.  The value differences
    V₁ − V₂ are computed once per run of rows sharing (λ, α) (a start grid varies θ fastest), and
    within them each distinct magnitude's A·(|o|/A)^α (``magnitude_id``, :func:`magnitude_ids`) once
    per α, so a 9 × 9 × 9 grid costs 81 value differences per trial instead of 729 and 9 powers per
    magnitude instead of 81 per outcome.  Every value is computed as :func:`value_difference`
    computes it, in the same order: the NLL are bit for bit :func:`value_difference`'s."""
    m, n = theta.shape[0], choice.shape[0]
    out = np.empty(m)
    signed = np.empty(n)
    size = 1
    for t in range(n):
        for j in range(4):
            size = max(size, magnitude_id[t, j] + 1)
    value = np.empty(size)  # A·(|o|/A)^α of each magnitude at alpha_done
    filled = np.zeros(size, dtype=np.bool_)
    lam_prev, alpha_prev, alpha_done = np.nan, np.nan, np.nan
    for r in range(m):
        lam, alpha, th = theta[r, 0], theta[r, 1], theta[r, 2]
        if lam != lam_prev or alpha != alpha_prev:
            if alpha != alpha_done:
                filled[:] = False
                alpha_done = alpha
            for t in range(n):
                d = 0.0
                for j in range(4):
                    o, k = outcomes[t, j], magnitude_id[t, j]
                    if k < 0 or o == 0.0:
                        continue
                    if not filled[k]:
                        value[k] = VALUE_ANCHOR * (abs(o) / VALUE_ANCHOR) ** alpha  # outcome_value's u, |u|
                        filled[k] = True
                    half = 0.5 if j < 2 else -0.5
                    d += half * value[k] if o > 0.0 else half * (-lam * value[k])
                signed[t] = d if choice[t] == 0 else -d
            lam_prev, alpha_prev = lam, alpha
        total = 0.0
        for t in range(n):
            total += log_sigmoid(th * signed[t])
        out[r] = -total
    return out


@njit(cache=True)
def pt_grid_table(theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """log σ(θ·(V₁ − V₂)) (``[k, 0, r]``: the first lottery chosen) and log σ(θ·(−(V₁ − V₂)))
    (``[k, 1, r]``: the second) of each outcome row ``k`` of ``rows`` (u, 4) at each row ``r`` (λ, α, θ)
    of ``theta`` (m, 3): every term of :func:`pt_nll_rows_kernel` for subjects whose trials are among
    ``rows``, computed as it computes them (``table`` (u, 2, m), :func:`pt_grid_sums`)."""
    m, u = theta.shape[0], rows.shape[0]
    out = np.empty((u, 2, m))
    diff = np.empty(u)
    lam_prev, alpha_prev = np.nan, np.nan
    for r in range(m):
        lam, alpha, th = theta[r, 0], theta[r, 1], theta[r, 2]
        if lam != lam_prev or alpha != alpha_prev:
            for k in range(u):
                diff[k] = value_difference(lam, alpha, rows[k])[0]
            lam_prev, alpha_prev = lam, alpha
        for k in range(u):
            d = diff[k]
            out[k, 0, r] = log_sigmoid(th * d)
            out[k, 1, r] = log_sigmoid(th * -d)
    return out


@njit(cache=True)
def pt_grid_sums(table: np.ndarray, row_id: np.ndarray, choice: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each subject's −Σ log P(choice) at every grid row of a :func:`pt_grid_table` (subjects, m):
    subject ``i``'s valid trials are ``offsets[i]:offsets[i + 1]``, trial ``t`` the outcome row
    ``row_id[t]`` and answer ``choice[t]``; each grid row's terms summed in trial order, as
    :func:`pt_nll_rows_kernel` sums them (a trial's terms of every grid row are contiguous)."""
    m, s = table.shape[2], offsets.shape[0] - 1
    out = np.empty((s, m))
    total = np.empty(m)
    for i in range(s):
        total[:] = 0.0
        for t in range(offsets[i], offsets[i + 1]):
            terms = table[row_id[t], choice[t]]
            for r in range(m):
                total[r] += terms[r]
        for r in range(m):
            out[i, r] = -total[r]
    return out


# ----------------------------------------------------------------------------- models
@dataclass(frozen=True)
class RiskyData:
    outcomes: np.ndarray  # (n, 4) x1, x2, y1, y2
    choice: np.ndarray  # (n,) 0/1, −1 invalid
    log_ratio: np.ndarray  # (n, 4) ln(|o|/A) (:func:`magnitude_ids`)
    magnitude_id: np.ndarray  # (n, 4) index among the subject's distinct |o|, −1 for 0


def risky_data(trials: pd.DataFrame) -> dict[Hashable, RiskyData]:
    """Per-subject outcomes and choices (table order: subject, session, trial)."""
    ordered, slices = subject_slices(trials)
    outcomes = ordered[list(OUTCOME_COLUMNS)].to_numpy(dtype=np.float64)
    valid = ordered["valid"].to_numpy(dtype=bool)
    action = pd.to_numeric(ordered["action"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    choice = np.where(valid, action, -1)
    return {key: RiskyData(np.ascontiguousarray(outcomes[sl]), np.ascontiguousarray(choice[sl]),
                           *magnitude_ids(outcomes[sl])) for key, sl in slices}


class _RiskyModel(CognitiveModel):
    experiment: ClassVar[str] = EXPERIMENT
    pointwise_kernel: ClassVar[Any] = pt_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("choice", "outcomes", "log_ratio", "magnitude_id")
    lapse_options: ClassVar[int | None] = 2  # a lapse picks either lottery
    observed_name: ClassVar[str] = "answer"
    choice_options: ClassVar[int | None] = 2  # the first or the second lottery
    #: the four outcomes (x1, x2, y1, y2) of each observation's two lotteries
    data_dims: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "outcomes": ("obs", "outcome"), "log_ratio": ("obs", "outcome"), "magnitude_id": ("obs", "outcome")}

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return risky_data(trials)

    def n_observations(self, data: RiskyData) -> int:
        return int(np.sum(data.choice >= 0))

    def observation_mask(self, data: RiskyData) -> np.ndarray:
        return data.choice >= 0

    def grid_columns(self, thetas: np.ndarray) -> np.ndarray:
        """:meth:`kernel_theta` of the rows ``thetas`` (m, k), contiguous; of the start grid
        (:meth:`start_grid` itself) computed once per model, as every fit's grid reads it."""
        grid = self.start_grid()
        if thetas is grid:
            cached = self.__dict__.get("_grid_columns")
            if cached is None:
                cached = np.ascontiguousarray(self.kernel_theta(grid))
                self._grid_columns: np.ndarray = cached
            return cached
        return np.ascontiguousarray(self.kernel_theta(np.atleast_2d(thetas)))

    def nll_many(self, thetas: np.ndarray, data: RiskyData) -> np.ndarray:
        """NLL at each row of ``thetas`` (:func:`pt_nll_rows_kernel`: the start grid of every MLE,
        the fit's main cost, without the generic path's tiled copies and unused gradients)."""
        choice, outcomes, _, magnitude_id = self.kernel_arrays(data)
        full = self.grid_columns(thetas)
        if choice.shape[0] == 0:
            return np.zeros(full.shape[0])
        return np.asarray(pt_nll_rows_kernel(full, choice, outcomes, magnitude_id))

    def grid_nlls(self, subjects: Sequence[Any]) -> list[np.ndarray] | None:
        """The start grid's NLL of every subject of ``subjects`` at once where they share their
        lottery pairs (people of one design): each term log σ(±θ·(V₁ − V₂)) of each distinct pair
        computed once for all of them (:func:`pt_grid_table`), each subject's NLL its sum in trial
        order (:func:`pt_grid_sums`): the same numbers, bit for bit, as :meth:`nll_many` of each.
        None where the subjects' distinct pairs are more than half their trials (no saving)."""
        arrays = [self.kernel_arrays(d)[:2] for d in subjects]
        counts = [c.shape[0] for c, _ in arrays]
        if sum(counts) == 0:
            return None
        outcomes = np.ascontiguousarray(np.concatenate([o for _, o in arrays]), dtype=np.float64)
        keys = outcomes.view(np.dtype((np.void, 8 * outcomes.shape[1]))).ravel()  # a row's bytes: exact
        _, first, row_id = np.unique(keys, return_index=True, return_inverse=True)
        if 2 * first.size >= sum(counts):
            return None
        table = pt_grid_table(self.grid_columns(self.start_grid()), np.ascontiguousarray(outcomes[first]))
        choice = np.concatenate([c for c, _ in arrays]).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return list(pt_grid_sums(table, np.ascontiguousarray(row_id.reshape(-1), dtype=np.int64), choice, offsets))


class ProspectTheoryModel(_RiskyModel):
    """Prospect-theory decider: loss aversion λ, curvature α, sensitivity θ (module docstring)."""

    name: ClassVar[str] = "prospect-theory"
    parameters: ClassVar[ParameterSet] = PT_PARAMETERS
    grid_points: ClassVar[int] = 9
    #: At Spektor et al.'s 98 trials λ, α and θ run to a bound for 14-20 of 300 simulated deciders and λ
    #: for 25 of the 282 participants (the θ·(λ − 1) ridge of equal-EV pairs; docs/risky-choice.md): a
    #: mean of log λ is then dominated by estimates near λ = 0 (log λ ≈ −14), so two groups are
    #: compared by ranks (the bounded-estimate rule).
    rank_tested_parameters: ClassVar[tuple[str, ...]] = ("lambda", "alpha", "theta")
    #: NUTS target acceptance of hierarchical fits: at the default 0.9 the fit of 30 of Spektor et al.'s
    #: participants (4 chains x 1,000 draws) had 4 divergent transitions in the ridge's curved tails
    #: (max R-hat 1.0055); a smaller step size is the remedy for divergences (Betancourt 2017).
    target_accept: ClassVar[float | None] = 0.98
    #: Hierarchical fits keep the generic non-centred parameters.  Centred sampling was measured both
    #: ways (docs/risky-choice.md, "Centred sampling"): better on 60 of Spektor et al.'s participants
    #: (98-352 choices each: min bulk ESS 140 against 9), worse on 20 deciders drawn from the prior at
    #: 98 trials (1-7 divergences, ESS 89-98 against 0 and 285-333; docs/benchmarks.md), so it is not
    #: the default; ``benchmarks/studies/build_populations.py --centred`` fits a population centred.


class ExpectedValueModel(_RiskyModel):
    """Expected-value decider with a logistic choice rule (λ = α = 1): sensitivity θ."""

    name: ClassVar[str] = "expected-value"
    parameters: ClassVar[ParameterSet] = EV_PARAMETERS
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = (1.0, 1.0, "theta")
    grid_points: ClassVar[int] = 15
    #: nutpie's low-rank mass matrix: by the rule written before the run, on fresh data sets 2 and 3 it gave
    #: at least the diagonal's min bulk ESS per CPU-second at R-hat <= 1.01 with no more divergences
    #: (docs/benchmarks.md, "The low-rank mass matrix per family").
    low_rank_mass_matrix: ClassVar[bool] = True


MODELS: dict[str, CognitiveModel] = {m.name: m for m in (ProspectTheoryModel(), ExpectedValueModel())}


# ----------------------------------------------------------------------------- adaptive design space
def adaptive_space(design: Any) -> Any:
    """The prospect-theory kernel's ``outcomes`` rows of the adaptive candidates (the design's distinct
    lottery pairs, :func:`~cogtestbed.environments.risky.adaptive_pairs`); answers first / second."""
    import hashlib

    from cogtestbed.environments.risky import adaptive_pairs
    from cogtestbed.inference.adaptive import DesignSpace

    pairs, _ = adaptive_pairs(design)
    rows = np.asarray(pairs, dtype=np.float64)
    key = f"{EXPERIMENT}/{hashlib.sha1(rows.tobytes()).hexdigest()[:16]}"
    log_ratio, ids = magnitude_ids(rows)
    return DesignSpace(key, {"outcomes": rows, "log_ratio": log_ratio, "magnitude_id": ids}, (0, 1))


# ----------------------------------------------------------------------------- metrics
#: The per-subject shares that assume the fixed design.
SHARE_KEYS = ("p_risky", "p_higher_ev", "p_risky_mixed", "p_risky_gain", "p_risky_loss")
#: Headline keys (:func:`risky_metrics`).
HEADLINE = ("loss_aversion", "p_risky", "p_higher_ev")
#: Keys estimated through the prospect-theory fit (null for answers without variation).
MODEL_KEYS = ("loss_aversion", "lambda", "alpha", "theta", "nll_pt")


def median_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(median, lower, upper): the sample median and the distribution-free order-statistic interval
    for the population median (the binomial(n, ½) quantiles, Conover 1999, §3.2), NaNs dropped;
    NaN ends where ``values`` are too few for ``level``."""
    from scipy.stats import binom

    x = np.sort(np.asarray(values, dtype=np.float64)[np.isfinite(values)])
    n = x.size
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    k = int(binom.ppf((1.0 - level) / 2.0, n, 0.5))  # x[k] and x[n-1-k] (0-based) cover with >= level
    if k < 1:
        return float(np.median(x)), float("nan"), float("nan")
    return float(np.median(x)), float(x[k - 1]), float(x[n - k])


def _share(hit: np.ndarray, defined: np.ndarray) -> float:
    return float(hit[defined].mean()) if defined.any() else float("nan")


def choice_shares(trials: pd.DataFrame) -> dict[str, float]:
    """``p_risky``, ``p_higher_ev`` and ``p_risky_mixed/gain/loss`` of the valid rows of ``trials``."""
    ok = trials["valid"].to_numpy(dtype=bool)
    s = lottery_summaries(trials)
    chose1 = pd.to_numeric(trials["action"], errors="coerce").fillna(-1).to_numpy() == 1
    ranges_differ = ok & (s["range0"] != s["range1"])
    risky = np.where(s["range1"] > s["range0"], chose1, ~chose1)
    ev_differ = ok & (s["ev0"] != s["ev1"])
    higher = np.where(s["ev1"] > s["ev0"], chose1, ~chose1)
    return {"p_risky": _share(risky, ranges_differ), "p_higher_ev": _share(higher, ev_differ),
            **{f"p_risky_{k}": _share(risky, ranges_differ & s[k]) for k in ("mixed", "gain", "loss")}}


def risky_metrics(trials: pd.DataFrame, n_starts: int | None = None) -> MetricsResult:
    """The experiment's metrics (module docstring): per subject, then the headline over subjects."""
    model = MODELS["prospect-theory"]
    data = model.subject_data(trials)
    fitted = [k for k, d in data.items() if model.n_observations(d) > 0]
    fits = (model.fit_mle(trials, n_starts=n_starts, subjects=fitted).set_index("subject") if fitted
            else pd.DataFrame())
    rows, flags = [], []
    ordered, slices = subject_slices(trials)
    for key, sl in slices:
        df = ordered.iloc[sl]
        n_invalid = int((~df["valid"].to_numpy(dtype=bool)).sum())
        row: dict[str, Any] = {"subject": key, "n_trials": len(df), "n_invalid": n_invalid, **choice_shares(df)}
        if key in fits.index:
            f = fits.loc[key]
            row.update({n: float(f[n]) for n in PT_PARAMETERS.names})
            row["nll_pt"] = float(f["nll"])
            if not bool(f["converged"]):
                flags.append(f"subject {key}: the prospect-theory fit did not converge")
        else:
            row.update(dict.fromkeys((*PT_PARAMETERS.names, "nll_pt"), float("nan")))
        rows.append(row)
    table = pd.DataFrame(rows)
    n_invalid = int(table["n_invalid"].sum())
    if n_invalid:
        flags.append(f"{n_invalid} invalid answers left out")
    metrics: dict[str, Any] = {
        "loss_aversion": float(table["lambda"].median()) if table["lambda"].notna().any() else float("nan"),
        "p_risky": float(table["p_risky"].mean()) if table["p_risky"].notna().any() else float("nan"),
        "p_higher_ev": float(table["p_higher_ev"].mean()) if table["p_higher_ev"].notna().any() else float("nan"),
        "n_subjects": len(table),
    }
    if ADAPTIVE_COLUMN in trials.columns:  # the shares count the pairs shown, chosen from the answers
        for row in rows:
            row.update(dict.fromkeys(SHARE_KEYS))
        metrics.update(dict.fromkeys(("p_risky", "p_higher_ev")))
        flags.append("p_risky and p_higher_ev are null: they are shares over the fixed design's pairs, and this "
                     "table's pairs were chosen adaptively from the answers; loss_aversion is the "
                     "model's fit, valid for any design")
    return metrics_result(metrics, "per_subject", rows, n_invalid, flags)


__all__ = ["MODELS", "ExpectedValueModel", "ProspectTheoryModel", "median_interval", "prob_first", "risky_metrics"]
