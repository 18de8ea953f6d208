"""Decision models of the belief-coherence experiment: MLE and hierarchical PyMC fits.

The paper estimates no utilities; these parametric forms (Yamin et al. 2026, Eq. 3 and the
loss form of §2) let a user recover a decider's parameters from the same trial table.

* ``mnl``: the 4-parameter multinomial logit of the logit RUM (Eq. 3): log-odds against No are
  m_Yes + b_Yes·(p − ½) and m_Defer + b_Defer·(p − ½) (u(No, ·) = 0 and the Gumbel scale
  absorbed).  The belief is centred at :data:`MNL_CENTRE` so that the level ``mid_*`` and the
  slope ``slope_*`` are nearly uncorrelated in the posterior (p spans [0, 1]; uncentred, the
  intercept at p = 0 and the slope correlate at ≈ −0.9), which the hierarchical sampler needs;
  α = m − b/2 and β = b give the uncentred coefficients (:func:`mnl_uncentred`).
* ``loss``: the loss-form decider: V_No = −s·c_FN·w(p), V_Yes = −s·c_FP·(1 − w(p)),
  V_Defer = −s·c_D with TK weighting w (γ) and logit choice.  Losses are only identified up to
  scale, so they are normalised to c_FP + c_FN = 1 (:func:`normalise_loss`): parameters c_fp
  (the Yes/No threshold t* at γ = 1), c_d, scale s and γ.

The belief p entering the likelihood is the subject's π0 report averaged over the repetitions of
the context (:data:`BELIEF_COVARIATE`), which shrinks report noise by √r.

The kernels score weighted observations: ``n`` decisions ``a`` made at one belief ``p`` have
log-likelihood n·log P(a | p), exactly the sum over those decisions (they are independent given
p).  The MLE and every lapse variant read one observation per decision (n = 1: a lapse mixes
each decision with a random one).  The hierarchical PyMC model of the plain decider reads
*counts* (:func:`decision_counts`): the r repetitions of a context share p (the context's mean π0
report), and noise-free reports of a network's few distinct posteriors (CHILD: ≈ 150 per 200
contexts) share it across contexts, so the 1,000 decisions of the paper design collapse into at
most one row per context, one per distinct belief, with the number of No, Yes and Defer decisions
made at it, log-likelihood Σ_a n_a·log P(a | p) (the multinomial's, less its constant), and every NUTS
gradient takes one softmax (and, in the loss form, one probability weight) per distinct belief.
Its pointwise log-likelihood (PSIS-LOO) is then per belief; the default leave-one-subject-out LOO
is unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.tables.belief import EXPERIMENT

#: Covariate of the decision models: the π0 report averaged over a context's repetitions.
BELIEF_COVARIATE = "mean_pi0"
DECISION_CODES = {"No": 0, "Yes": 1, "Defer": 2}
EPS = 1e-9


class _OnBelief:
    """The belief ``p`` of a subject's rows as the loss form's kernel reads it (a mixin of the data classes)."""

    p: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """The belief p clipped into [ε, 1 − ε] (:data:`EPS`), where the loss form's probability weighting reads it."""
        return np.clip(self.p, EPS, 1.0 - EPS)

    @property
    def log_q(self) -> np.ndarray:
        """log q: the loss form's kernel reads it rather than taking the logarithm of a constant at every gradient."""
        return np.log(self.q)

    @property
    def log_1q(self) -> np.ndarray:
        """log(1 − q)."""
        return np.log1p(-self.q)


@dataclass(frozen=True)
class DecisionData(_OnBelief):
    """One subject's decisions: decision ``a`` (0 No, 1 Yes, 2 Defer) made ``n`` times at belief ``p``."""

    a: np.ndarray
    p: np.ndarray
    n: np.ndarray


def decision_data(trials: pd.DataFrame) -> dict[Hashable, DecisionData]:
    """Per subject: valid decisions with the mean π0 report of their context, one per decision
    (n = 1, table order)."""
    keys = ["subject", "context_id"]
    belief = trials.loc[(trials["phase"] == "belief") & (trials["variant"] == "pi0") & trials["valid"]]
    # sorted first: a mean sums in row order, and its last bit must not depend on the table's
    belief = belief.sort_values([*keys, "p_elicited"], kind="stable")
    mean_p = belief.groupby(keys)["p_elicited"].mean().rename("p").reset_index()
    dec = trials.loc[(trials["phase"] == "decision") & trials["valid"], [*keys, "decision"]]
    rows = dec.merge(mean_p, on=keys, how="inner").dropna()
    out: dict[Hashable, DecisionData] = {}
    rows["a"] = rows["decision"].astype(str).map(DECISION_CODES)
    rows["p"] = rows["p"].clip(0.0, 1.0)
    rows = rows.dropna(subset=["a"])
    rows["n"] = 1.0
    for subject, part in rows.groupby("subject", sort=True):
        out[subject] = DecisionData(part["a"].to_numpy(np.int64), part["p"].to_numpy(np.float64),
                                    part["n"].to_numpy(np.float64))
    return out


@dataclass(frozen=True)
class DecisionCounts(_OnBelief):
    """One subject's decisions counted per distinct belief ``p`` (ascending): ``n_no``, ``n_yes``, ``n_defer``.
    The beliefs are the contexts' mean π0 reports, so there is at most one row a context (fewer where contexts
    share a mean report, as noise-free reports of a network's equal posteriors do).  In the hierarchical model the
    observed variable (``decision``) holds the first field, each belief's No count; its pointwise log-likelihood is
    that of the belief's three counts, Σ_a n_a·log P(a | p)."""

    n_no: np.ndarray
    n_yes: np.ndarray
    n_defer: np.ndarray
    p: np.ndarray


def decision_counts(trials: pd.DataFrame) -> dict[Hashable, DecisionCounts]:
    """Per subject: the decisions of :func:`decision_data` counted per distinct belief p (rows in ascending p,
    whatever the table's row order)."""
    out: dict[Hashable, DecisionCounts] = {}
    for subject, data in decision_data(trials).items():
        beliefs, row = np.unique(data.p, return_inverse=True)
        counts = np.zeros((beliefs.size, len(DECISION_CODES)))
        np.add.at(counts, (row, data.a), data.n)
        out[subject] = DecisionCounts(counts[:, 0].copy(), counts[:, 1].copy(), counts[:, 2].copy(), beliefs)
    return out


@njit(cache=True)
def _log_softmax3(v: np.ndarray, a: int, e: np.ndarray) -> float:
    """log softmax(v)[a] of 3 utilities; fills e with 1{j = a} − softmax(v)_j (d ll / d v)."""
    top = max(v[0], max(v[1], v[2]))
    for j in range(3):
        e[j] = np.exp(v[j] - top)  # each exponential once: the softmax is e / total
    total = e[0] + e[1] + e[2]
    for j in range(3):
        e[j] = (1.0 if j == a else 0.0) - e[j] / total
    return v[a] - top - np.log(total)


@njit(cache=True)
def _log_softmax3_counts(v: np.ndarray, n_no: float, n_yes: float, n_defer: float, e: np.ndarray) -> float:
    """Σ_a n_a · log softmax(v)[a] of 3 utilities and the counts of each answer; fills e with n_j − N·softmax(v)_j
    (d ll / d v_j, N = n_no + n_yes + n_defer).  The largest utility's exponential is 1 and is not taken."""
    top = max(v[0], max(v[1], v[2]))
    total = 0.0
    for j in range(3):
        gap = v[j] - top
        e[j] = 1.0 if gap == 0.0 else np.exp(gap)
        total += e[j]
    lse = top + np.log(total)
    n_all = n_no + n_yes + n_defer
    ll = n_no * (v[0] - lse) + n_yes * (v[1] - lse) + n_defer * (v[2] - lse)
    e[0] = n_no - n_all * e[0] / total
    e[1] = n_yes - n_all * e[1] / total
    e[2] = n_defer - n_all * e[2] / total
    return ll


#: Belief at which the MNL levels are taken (the centre of the probability scale).
MNL_CENTRE = 0.5


@njit(cache=True, inline="always")
def _mnl_utilities(v: np.ndarray, theta: np.ndarray, s: int, x: float) -> None:
    """Fill v[1:] with subject s's MNL log-odds of Yes and Defer against No at centred belief x = p − ½ (v[0] = 0)."""
    v[1] = theta[s, 0] + theta[s, 1] * x
    v[2] = theta[s, 2] + theta[s, 3] * x


@njit(cache=True)
def mnl_counts_kernel(theta: np.ndarray, obs_subject: np.ndarray, n_no: np.ndarray, n_yes: np.ndarray,
                      n_defer: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_a n_a·log P(a | p) of the MNL (Eq. 3) per distinct belief (:class:`DecisionCounts`), exact gradient: the
    sum of :func:`mnl_pointwise_kernel` over the decisions made at that belief."""
    n = p.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 4))
    v = np.zeros(3)
    e = np.zeros(3)
    for t in range(n):
        s = obs_subject[t]
        x = p[t] - MNL_CENTRE
        _mnl_utilities(v, theta, s, x)
        ll[t] = _log_softmax3_counts(v, n_no[t], n_yes[t], n_defer[t], e)
        grad[t, 0], grad[t, 1] = e[1], e[1] * x
        grad[t, 2], grad[t, 3] = e[2], e[2] * x
    return ll, grad


@njit(cache=True)
def mnl_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, a: np.ndarray, p: np.ndarray,
                         n_cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """n·log P(a) of the MNL (Eq. 3) per observation (n = 1: one decision): utilities (0, m_Y + b_Y (p − ½),
    m_D + b_D (p − ½)), exact gradient."""
    n = a.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 4))
    v = np.zeros(3)
    e = np.zeros(3)
    for t in range(n):
        s = obs_subject[t]
        x = p[t] - MNL_CENTRE
        _mnl_utilities(v, theta, s, x)
        c = n_cell[t]
        ll[t] = c * _log_softmax3(v, a[t], e)
        grad[t, 0], grad[t, 1] = c * e[1], c * e[1] * x
        grad[t, 2], grad[t, 3] = c * e[2], c * e[2] * x
    return ll, grad


@njit(cache=True)
def _tk_weights(theta: np.ndarray, obs_subject: np.ndarray, log_q: np.ndarray,
                log_1q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tversky–Kahneman w(q) = q^γ / (q^γ + (1 − q)^γ)^(1/γ) and dw/dγ of every row, γ its subject's
    (``theta[:, 3]``), from log q and log(1 − q) (q: p clipped into (0, 1)); every power is ``exp(γ log q)``.

    Two passes over the rows, not one: a row's weight is a chain of calls (two exponentials, then a logarithm, then
    an exponential) each waiting for the last, and a loop doing the whole chain a row waits on it; the first pass's
    rows are independent exponentials the processor overlaps (the counts kernel about 1.5x faster a row,
    ``benchmarks/bench_transcendentals.py``; the same values to about 2e-14)."""
    n = log_q.shape[0]
    w = np.empty(n)
    dw = np.empty(n)
    for t in range(n):  # q^γ and (1 − q)^γ, held in w and dw until the second pass
        gamma = theta[obs_subject[t], 3]
        w[t] = np.exp(gamma * log_q[t])
        dw[t] = np.exp(gamma * log_1q[t])
    for t in range(n):
        gamma = theta[obs_subject[t], 3]
        a, b = w[t], dw[t]
        d = a + b
        log_d = np.log(d)
        w[t] = np.exp(gamma * log_q[t] - log_d / gamma)  # a / d^(1/γ)
        dw[t] = w[t] * (log_q[t] + log_d / gamma**2 - (a * log_q[t] + b * log_1q[t]) / (gamma * d))
    return w, dw


@njit(cache=True, inline="always")
def _loss_utilities(v: np.ndarray, c_fp: float, c_d: float, s: float, w: float) -> None:
    """Fill v with the loss form's utilities (−s(1−c_FP)w, −s·c_FP(1−w), −s·c_D) of No, Yes and Defer."""
    v[0] = -s * (1.0 - c_fp) * w
    v[1] = -s * c_fp * (1.0 - w)
    v[2] = -s * c_d


@njit(cache=True, inline="always")
def _loss_gradient_row(grad: np.ndarray, t: int, e: np.ndarray, c_fp: float, c_d: float, s: float, w: float,
                       dw: float) -> None:
    """Row t of the loss form's gradient in (c_FP, c_D, s, γ) from e = d ll / d v and the weight w, dw/dγ."""
    grad[t, 0] = e[0] * s * w - e[1] * s * (1.0 - w)
    grad[t, 1] = -e[2] * s
    grad[t, 2] = -e[0] * (1.0 - c_fp) * w - e[1] * c_fp * (1.0 - w) - e[2] * c_d  # dV/ds = V/s, s may be 0
    grad[t, 3] = -e[0] * s * (1.0 - c_fp) * dw + e[1] * s * c_fp * dw


@njit(cache=True)
def loss_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, a: np.ndarray, log_q: np.ndarray,
                          log_1q: np.ndarray, n_cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """n·log P(a) of the loss-form decider per observation: V = (−s(1−c_FP)w, −s·c_FP(1−w), −s·c_D), w = TK(p; γ)
    (the belief as log q and log(1 − q), :attr:`DecisionData.log_q`)."""
    n = a.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 4))
    v = np.zeros(3)
    e = np.zeros(3)
    weight, d_weight = _tk_weights(theta, obs_subject, log_q, log_1q)
    for t in range(n):
        i = obs_subject[t]
        c_fp, c_d, s = theta[i, 0], theta[i, 1], theta[i, 2]
        w, dw = weight[t], d_weight[t]
        _loss_utilities(v, c_fp, c_d, s, w)
        c = n_cell[t]
        ll[t] = c * _log_softmax3(v, a[t], e)
        for j in range(3):
            e[j] *= c
        _loss_gradient_row(grad, t, e, c_fp, c_d, s, w, dw)
    return ll, grad


@njit(cache=True)
def loss_counts_kernel(theta: np.ndarray, obs_subject: np.ndarray, n_no: np.ndarray, n_yes: np.ndarray,
                       n_defer: np.ndarray, log_q: np.ndarray, log_1q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_a n_a·log P(a | p) of the loss-form decider per distinct belief (:class:`DecisionCounts`), exact gradient:
    the sum of :func:`loss_pointwise_kernel` over the decisions made at that belief (one weight w a belief)."""
    n = log_q.shape[0]
    ll = np.empty(n)
    grad = np.empty((n, 4))
    v = np.zeros(3)
    e = np.zeros(3)
    weight, d_weight = _tk_weights(theta, obs_subject, log_q, log_1q)
    for t in range(n):
        i = obs_subject[t]
        c_fp, c_d, s = theta[i, 0], theta[i, 1], theta[i, 2]
        w, dw = weight[t], d_weight[t]
        _loss_utilities(v, c_fp, c_d, s, w)
        ll[t] = _log_softmax3_counts(v, n_no[t], n_yes[t], n_defer[t], e)
        _loss_gradient_row(grad, t, e, c_fp, c_d, s, w, dw)
    return ll, grad


class _DecisionModel(CognitiveModel):
    """A decider of the Yes / No / Defer choice given the reported belief p (one row per decision)."""

    experiment: ClassVar[str] = EXPERIMENT
    observation_fields: ClassVar[tuple[str, ...]] = ("a", "p", "n")
    observed_name: ClassVar[str] = "decision"

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return decision_data(trials)

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """The generic PyMC model on the decisions counted per distinct belief (:meth:`counts_model`: the same
        posterior, one softmax a belief instead of one a decision)."""
        from cogtestbed.inference.hierarchical import kernel_pymc_model

        return kernel_pymc_model(self.counts_model(), trials, hierarchical)

    def counts_model(self) -> CognitiveModel:
        """This decider reading :func:`decision_counts` (:class:`MNLModelCounts`, :class:`LossModelCounts`): the
        model the hierarchical fit samples, and the per-subject fits of its centring choice.  Not for a decider
        with a lapse: a lapse mixes each decision, not each belief's counts."""
        if self.lapse_options is None or getattr(self, "base_model", None) is not None:
            raise InputError(f"model {self.name!r}: only the plain decider reads counts per belief "
                             "(a lapse mixes each decision; fit it on decisions)")
        return _COUNTS_OF[self.name]()

    def n_observations(self, data: Any) -> int:
        """Decisions: the n of BIC."""
        return int(data.n.sum())

    #: A random decision is uniform over Yes / No / Defer (the belief covariate is taken as
    #: reported: a random belief report is covariate noise the decision models do not model).
    lapse_options: ClassVar[int | None] = len(DECISION_CODES)


class _Counted:
    """Mixin of a decider reading its decisions counted per distinct belief (:func:`decision_counts`); the class
    sets the counts kernel (``pointwise_kernel``) and its ``observation_fields``: the three counts, then the belief as
    that kernel reads it.  It takes no lapse (a lapse mixes each decision)."""

    lapse_options: ClassVar[int | None] = None
    pymc_model = CognitiveModel.pymc_model

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return decision_counts(trials)

    def n_observations(self, data: Any) -> int:
        """Decisions: the n of BIC."""
        return int(data.n_no.sum() + data.n_yes.sum() + data.n_defer.sum())


#: Prior SDs of the MNL (weakly informative, on the log-odds scale): a level within ±6 (odds
#: 1:400 to 400:1 at ½) and a slope within ±20 over the unit belief range at two SDs (the
#: paper's quick-simulation decider, slope 24, lies at 2.4 SD).  Wider priors put most of the
#: prior's deciders where one action is never chosen, and the likelihood is then one-sided.
MNL_LEVEL_SD, MNL_SLOPE_SD = 3.0, 10.0


class MNLModel(_DecisionModel):
    """The 4-parameter multinomial logit (Eq. 3): a concave log-likelihood, one start suffices."""

    name: ClassVar[str] = "mnl"
    parameters: ClassVar[ParameterSet] = ParameterSet(tuple(
        Parameter(n, -100.0, 100.0, d, desc, prior_mean=0.0, prior_sd=sd) for n, d, desc, sd in (
            ("mid_yes", 0.0, "log-odds of Yes vs No at p = 1/2", MNL_LEVEL_SD),
            ("slope_yes", 24.0, "slope in p of the Yes vs No log-odds", MNL_SLOPE_SD),
            ("mid_defer", 2.4, "log-odds of Defer vs No at p = 1/2", MNL_LEVEL_SD),
            ("slope_defer", 12.0, "slope in p of the Defer vs No log-odds", MNL_SLOPE_SD))), "mnl")
    grid_points: ClassVar[int] = 3
    n_starts: ClassVar[int] = 1

    pointwise_kernel: ClassVar[Any] = mnl_pointwise_kernel
    #: The parameters each subject's data pin are sampled centred, chosen from the data before sampling
    #: (:mod:`cogtestbed.inference.centring`; on for this family by ``benchmarks/studies/centring_by_data.py``).
    centre_pinned: ClassVar[bool] = True


def normalise_loss(c_fp: Any, c_fn: Any, c_d: Any, scale: Any) -> dict[str, Any]:
    """Losses rescaled to c_FP + c_FN = 1 (the logit scale absorbs the factor)."""
    total = c_fp + c_fn
    return {"c_fp": c_fp / total, "c_d": c_d / total, "scale": scale * total}


#: Hyperpriors of the loss form: (prior mean, prior SD) of each parameter on its unconstrained
#: scale; the population SD is HalfNormal(½ · prior SD) (the generic non-centred builder).
#:
#: * ``c_fp`` (logit): N(0, 1): median ½ (symmetric losses), 95 % of population medians in
#:   [0.12, 0.88];
#: * ``c_d`` (logit): N(−1.5, 1): median 0.18, below c_FP·c_FN = ¼ at c_FP = ½, i.e. a Defer
#:   band exists (Chow's rule) for the median decider; 95 % in [0.03, 0.61];
#: * ``scale`` (log): N(2.5, 0.75): median 12 (the logit gain per unit of normalised loss, so
#:   the Yes / No log-odds change by 12 across the belief range), 95 % in [2.8, 53];
#: * ``gamma`` (logit on [0.28, 3]): N(−1.02, 0.75): median 1.0 (expected loss, no probability
#:   weighting), 95 % in [0.49, 1.94] (Tversky & Kahneman 1992 estimate 0.61-0.69).
LOSS_PRIORS: dict[str, tuple[float, float]] = {
    "c_fp": (0.0, 1.0), "c_d": (-1.5, 1.0), "scale": (2.5, 0.75), "gamma": (-1.02, 0.75)}


class LossModel(_DecisionModel):
    """Loss-form decider with TK weighting (see module docstring; hyperpriors :data:`LOSS_PRIORS`).

    The posterior of one subject is correlated (c_D, the scale and γ all move the Defer share;
    at the paper design |ρ| ≈ 0.8-0.9 on the unconstrained scale), so the sampler learns a
    low-rank correction of its mass matrix (:attr:`low_rank_mass_matrix`).
    """

    name: ClassVar[str] = "loss"
    parameters: ClassVar[ParameterSet] = ParameterSet((
        Parameter.unit("c_fp", 0.5, "normalised false-positive loss (c_FP + c_FN = 1)",
                       prior_mean=LOSS_PRIORS["c_fp"][0], prior_sd=LOSS_PRIORS["c_fp"][1]),
        Parameter.unit("c_d", 0.15, "normalised loss of deferring", prior_mean=LOSS_PRIORS["c_d"][0],
                       prior_sd=LOSS_PRIORS["c_d"][1]),
        Parameter.positive("scale", 20.0, upper=1000.0, description="logit scale",
                           prior_mean=LOSS_PRIORS["scale"][0], prior_sd=LOSS_PRIORS["scale"][1],
                           search_floor=0.1, search_ceiling=1000.0),
        Parameter("gamma", 0.28, 3.0, 1.0, "Tversky-Kahneman γ", transform="logit",
                  prior_mean=LOSS_PRIORS["gamma"][0], prior_sd=LOSS_PRIORS["gamma"][1]),
    ), "loss")
    grid_points: ClassVar[int] = 4
    n_starts: ClassVar[int] = 4
    low_rank_mass_matrix: ClassVar[bool] = True
    #: NUTS target acceptance: at the default 0.9 a few transitions diverge where a population SD
    #: (c_D's, γ's) nears 0 (the non-centred funnel's neck); a smaller step removes them.
    target_accept: ClassVar[float | None] = 0.95

    pointwise_kernel: ClassVar[Any] = loss_pointwise_kernel
    #: The belief enters as log q and log(1 − q), computed once per fit (:attr:`DecisionData.log_q`).
    observation_fields: ClassVar[tuple[str, ...]] = ("a", "log_q", "log_1q", "n")
    #: Not the data's centring (:mod:`cogtestbed.inference.centring`): kept by the study's rule on its data sets
    #: (rates 0.72 and 1.06 of the default's), it lowered ESS and drew divergences on the NumPyro comparison's
    #: (docs/benchmarks.md); the loss form keeps the low-rank mass matrix alone.


class MNLModelCounts(_Counted, MNLModel):
    """The MNL on its decisions counted per distinct belief (:meth:`_DecisionModel.counts_model`)."""

    pointwise_kernel: ClassVar[Any] = mnl_counts_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("n_no", "n_yes", "n_defer", "p")


class LossModelCounts(_Counted, LossModel):
    """The loss-form decider on its decisions counted per distinct belief (:meth:`_DecisionModel.counts_model`)."""

    pointwise_kernel: ClassVar[Any] = loss_counts_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("n_no", "n_yes", "n_defer", "log_q", "log_1q")


#: Each form's model on counts per belief, by the form's name.
_COUNTS_OF: dict[str, type[_DecisionModel]] = {"mnl": MNLModelCounts, "loss": LossModelCounts}

MODELS: dict[str, CognitiveModel] = {"mnl": MNLModel(), "loss": LossModel()}


def mnl_coefficients(u: Mapping[str, Any], scale: Any) -> dict[str, Any]:
    """The 4-parameter MNL (log-odds against No, linear in p) of utilities u and a scale:
    α_a = scale·(u(a,0) − u(No,0)), β_a = scale·[(u(a,1) − u(a,0)) − (u(No,1) − u(No,0))]."""
    out = {}
    for a in ("yes", "defer"):
        out[f"alpha_{a}"] = scale * (u[f"u_{a}_0"] - u["u_no_0"])
        out[f"beta_{a}"] = scale * ((u[f"u_{a}_1"] - u[f"u_{a}_0"]) - (u["u_no_1"] - u["u_no_0"]))
    return out


def mnl_centred(coef: Mapping[str, Any]) -> dict[str, Any]:
    """MNL levels at p = ½ and slopes from the uncentred α_a (at p = 0), β_a."""
    return {f"{k}_{a}": v for a in ("yes", "defer") for k, v in (
        ("mid", coef[f"alpha_{a}"] + MNL_CENTRE * coef[f"beta_{a}"]), ("slope", coef[f"beta_{a}"]))}


def mnl_uncentred(theta: Mapping[str, Any]) -> dict[str, Any]:
    """The uncentred α_a (log-odds at p = 0), β_a of the centred MNL parameters."""
    return {f"{k}_{a}": v for a in ("yes", "defer") for k, v in (
        ("alpha", theta[f"mid_{a}"] - MNL_CENTRE * theta[f"slope_{a}"]), ("beta", theta[f"slope_{a}"]))}
