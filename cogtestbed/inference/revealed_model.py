"""The dissonant softmax agent's model: parameters, the η kernel, likelihood and MLE.

Model (after the paper's findings §5, written as a softmax over outcome scores): on a RevB item
with outcomes k = 1..K,

    η_k = τ·ln p⁰_k + β_first·1[k = 1] + β_label·1[o_k ∈ {Left, Heads}] + β_anchor·1[o_k = prev]
          + β_round·1[o_k mod 10 = 0] + β_mid·1[o_k = median] − κ·1[o_k excluded]
    q = softmax(η)

where p⁰ is the distribution *before* any observation (so κ → ∞ with τ = 1 and every β = 0 is the
rational observer, q = p*, and κ = 0 ignores the observation).  On a StaA item (5 options, the
correct one at c): ``P(option j) = softmax(θ·1[j = c] + β_pos·1[j = A])``.  The two channels share
no parameter: "dissonance" is large θ with β_first ≈ 2.

Noise: an exact distribution is observed as ``x ~ Dirichlet(q̃ / ν)`` (``noise`` ν; ν = 0 is the
exact, noiseless agent; q̃ = (1 − Kε)q + ε with ε = :data:`SMOOTH_EPS`); a sampled estimate of N
draws as ``N·x ~ Multinomial(N, q)``; a generated MCQ answer as one categorical draw.  η is
linear in the parameters (the features are the design
matrix), so the gradient is exact and cheap: ∂ℓ/∂η_j = Σ_k g_k q_k(δ_kj − q_j) with
g_k = c(ln x_k − ψ(c q_k)), c = 1/ν, for the Dirichlet; n_j − N q_j for the multinomial.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.environments.revealed import EXPERIMENT, FEATURES, MCQ_OPTIONS, item_features
from cogtestbed.environments.revealed_items import MAX_OUTCOMES
from cogtestbed.inference.base import CognitiveModel, MLEResult
from cogtestbed.numerics import digamma, logsumexp
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.trials import list_cells

#: Concentration floor of the Dirichlet noise: x ~ Dir(c·q̃) with q̃ = (1 − Kε)·q + ε.  Without
#: it an excluded outcome at q ≈ e^−30 has a concentration near 1e-11 and log-densities of order
#: 1e11 that swamp every other term; the agent draws from the same q̃, so the likelihood stays
#: exact (and κ beyond ≈ ln(1/ε) ≈ 14 is hard to tell from ∞ under noise).
SMOOTH_EPS = 1e-6
#: An observed probability of exactly zero (no agent draws one; a backend may) is read as this.
X_FLOOR = 1e-300
#: Smallest Dirichlet noise ν used in the likelihood (concentration at most 1/NOISE_FLOOR).
NOISE_FLOOR = 1e-6
#: Concentration of the Dirichlet a random distribution-valued answer (a lapse) is drawn from: 1,
#: the flat Dirichlet, uniform on the simplex (as :func:`uniform_simplex_logprobs` draws it).
LAPSE_DIRICHLET = 1.0
#: Start values of κ for the MLE (see :meth:`DissonantModel.start_grid`): a ladder through the
#: identifiable range κ ≲ :data:`KAPPA_IDENTIFIED` plus one start on the plateau beyond it.
KAPPA_STARTS = (1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 30.0)
#: Largest κ that exact distributions identify.  An excluded outcome's share q ≈ (p⁰/Z)·e^−κ
#: (Z the kept prior mass) is seen through the Dirichlet at concentration c·(q + ε), ε =
#: :data:`SMOOTH_EPS` = 1e-6, so κ moves the likelihood while q is not far below ε: up to
#: κ ≈ ln(p⁰/(Z·ε)) + 2 ≈ 15 for excluded dice faces and sums.  Beyond it ℓ(κ) is flat ("excluded
#: mass ≈ 0 whatever κ") and an estimate there is only a lower bound.  κ is identified only by
#: items whose observation excludes outcomes (dice Observation items); on a design without them
#: it has no likelihood at all and the estimate is its start value.
KAPPA_IDENTIFIED = 15.0
#: κ values a plateau estimate is refitted from (:meth:`DissonantModel.fit_subject`).
KAPPA_RESTARTS = (3.0, 7.0, 11.0)

#: Prior of κ on the logit scale of [0, 50] (mean, SD): median κ = 5 and 95 % of the mass in
#: [1.4, 15], the range exact distributions identify (:data:`KAPPA_IDENTIFIED`).  Prior draws
#: (``recover``'s default, the hierarchical population) beyond it would be recovered only as
#: "κ large", whatever their value.
KAPPA_PRIOR = (-2.197, 0.7)

# Bounded parameters use logit transforms, so prior draws (studies, hierarchical fits) stay inside
# their bounds: τ ∈ [0, 5] centred on 1, κ ∈ [0, 50] on 5, ν ∈ [0, 1] on 0.02.
PARAMETERS = (
    Parameter("tau", 0.0, 5.0, 1.0, "weight of ln p⁰ (1: calibrated)", prior_mean=-1.386, prior_sd=0.7,
              transform="logit"),
    Parameter("beta_first", -10.0, 10.0, 0.0, "bias towards the first listed outcome", prior_sd=2.0),
    Parameter("beta_label", -10.0, 10.0, 0.0, "bias towards the labels Left / Heads", prior_sd=2.0),
    Parameter("beta_anchor", -10.0, 10.0, 0.0, "bias towards a previously stated outcome", prior_sd=2.0),
    Parameter("beta_round", -10.0, 10.0, 0.0, "bias towards multiples of 10", prior_sd=2.0),
    Parameter("beta_mid", -10.0, 10.0, 0.0, "bias towards the median outcome", prior_sd=2.0),
    Parameter("kappa", 0.0, 50.0, 30.0, "penalty on outcomes an observation excludes", prior_mean=KAPPA_PRIOR[0],
              prior_sd=KAPPA_PRIOR[1], transform="logit"),
    Parameter("theta", -10.0, 15.0, 10.0, "StaA: log-odds boost of the correct answer", prior_mean=3.0,
              prior_sd=3.0),
    Parameter("beta_pos", -10.0, 10.0, 0.0, "StaA: bias towards answer A", prior_sd=2.0),
    Parameter("noise", 0.0, 1.0, 0.0, "Dirichlet noise ν = 1/concentration (0: exact)", prior_mean=-3.9,
              prior_sd=1.0, transform="logit"),
)
DISSONANT_PARAMETERS = ParameterSet(PARAMETERS, "dissonant")
#: Index of each parameter in the natural-scale vector.
P = {p.name: i for i, p in enumerate(PARAMETERS)}
METHOD_CODE = {"exact": 0, "sampled": 1, "generated": 2}


# ----------------------------------------------------------------------------- kernels
@njit(cache=True)
def eta_row(w: np.ndarray, channel: int, k: int, base: np.ndarray, feat: np.ndarray, correct: int,
            out: np.ndarray) -> None:
    """η of one step into ``out[:k]`` (module docstring); ``w`` = the 9 linear parameters."""
    if channel == 0:
        for j in range(k):
            out[j] = (w[0] * base[j] + w[1] * feat[0, j] + w[2] * feat[1, j] + w[3] * feat[2, j]
                      + w[4] * feat[3, j] + w[5] * feat[4, j] - w[6] * feat[5, j])
    else:
        for j in range(k):
            out[j] = w[7] * (1.0 if j == correct else 0.0) + w[8] * (1.0 if j == 0 else 0.0)


@njit(cache=True)
def dissonant_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, x: np.ndarray, lx: np.ndarray,
                               channel: np.ndarray, kk: np.ndarray, correct: np.ndarray, method: np.ndarray,
                               nsamp: np.ndarray, base: np.ndarray, feat: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray]:
    """Log-likelihood of every step (one item of one channel) and its exact gradient with respect
    to its subject's natural-scale parameters (``theta`` row ``obs_subject[r]``; module docstring).

    ``x`` are the observed probabilities padded to :data:`MAX_OUTCOMES` (``kk`` real outcomes per
    row) and ``lx`` their logarithms.  Exact rows: Dirichlet log-density of ``x`` at concentration
    c·q̃ (ε floor :data:`SMOOTH_EPS`); sampled and generated rows: multinomial log-probability of
    the counts N·x (without the constant multinomial coefficient)."""
    n = obs_subject.shape[0]
    ll = np.zeros(n)
    grad = np.zeros((n, theta.shape[1]))
    eta = np.empty(MAX_OUTCOMES)
    dl = np.empty(MAX_OUTCOMES)
    prev = -1
    nu = c = psi_c = lg_c = 1.0
    for r in range(n):
        s = obs_subject[r]
        w = theta[s]
        if s != prev:  # the noise terms are constant within a subject
            prev = s
            nu = max(w[9], NOISE_FLOOR)
            c = 1.0 / nu
            psi_c = digamma(c)
            lg_c = math.lgamma(c)
        k = kk[r]
        eta_row(w, channel[r], k, base[r], feat[r], correct[r], eta)
        lse = logsumexp(eta[:k])
        if method[r] == 0:
            value = lg_c
            dsum = 0.0
            dc = psi_c
            shrink = 1.0 - k * SMOOTH_EPS
            for j in range(k):
                q = math.exp(eta[j] - lse)
                qs = shrink * q + SMOOTH_EPS
                cq = c * qs
                g = lx[r, j] - digamma(cq)
                value += (cq - 1.0) * lx[r, j] - math.lgamma(cq)
                dl[j] = shrink * c * g * q
                dsum += shrink * c * g * q
                dc += qs * g
            for j in range(k):
                dl[j] -= math.exp(eta[j] - lse) * dsum
            # dℓ/dν = dℓ/dc · dc/dν with dc/dν = −1/ν²; zero below the floor (ν is clipped there)
            grad[r, 9] = -dc / (nu * nu) if w[9] > NOISE_FLOOR else 0.0
        else:
            cnt_n = nsamp[r]
            value = 0.0
            for j in range(k):
                lq = eta[j] - lse
                cnt = x[r, j] * cnt_n
                if cnt > 0.0:
                    value += cnt * lq
                dl[j] = cnt - cnt_n * math.exp(lq)
        ll[r] = value
        if channel[r] == 0:  # ∂η_j/∂w is the design matrix of eta_row
            for j in range(k):
                d = dl[j]
                grad[r, 0] += d * base[r, j]
                for f in range(5):
                    grad[r, 1 + f] += d * feat[r, f, j]
                grad[r, 6] -= d * feat[r, 5, j]
        else:
            grad[r, 7] = dl[correct[r]]
            grad[r, 8] = dl[0]
    return ll, grad


# ----------------------------------------------------------------------------- data
def subject_arrays(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """Padded arrays of one subject's valid steps (what the likelihood reads)."""
    rows = rows[rows["valid"].to_numpy(dtype=bool)]
    n = len(rows)
    out = {
        "channel": (rows["channel"].astype(str).to_numpy() == "staa").astype(np.int64),
        "k": rows["n_outcomes"].to_numpy(dtype=np.int64),
        "correct": rows["correct_option"].to_numpy(dtype=np.int64),
        "method": np.array([METHOD_CODE[m] for m in rows["method"].astype(str)], dtype=np.int64),
        "nsamp": np.where(rows["method"].astype(str).to_numpy() == "generated", 1.0,
                          rows["n_samples"].to_numpy(dtype=np.float64)),
        "base": np.zeros((n, MAX_OUTCOMES)),
        "feat": np.zeros((n, len(FEATURES), MAX_OUTCOMES)),
        "x": np.ones((n, MAX_OUTCOMES)),
        "lx": np.zeros((n, MAX_OUTCOMES)),
    }
    for r, (ch, labels, p_star, prior, anchor, logprobs, method) in enumerate(zip(
            out["channel"], list_cells(rows["outcomes"]), list_cells(rows["p_star"]), list_cells(rows["prior"]),
            rows["anchor"], list_cells(rows["logprobs"]),
            out["method"], strict=True)):
        k = len(labels)
        if ch == 0:
            b, f = item_features(labels, p_star, prior, int(anchor))
            out["base"][r, :k] = b
            out["feat"][r, :, :k] = f
        lp = np.asarray(logprobs, dtype=np.float64)
        lp = lp - logsumexp(lp)
        if method == 0:  # a zero observed probability is floored (module docstring)
            lp = np.where(np.isfinite(lp), lp, math.log(X_FLOOR))
        out["lx"][r, :k] = lp
        out["x"][r, :k] = np.exp(lp)
    return out


@dataclass(frozen=True)
class RevealedData:
    """One subject's valid steps (:func:`subject_arrays`), one row per item and channel; the
    per-item outcome vectors are padded to :data:`MAX_OUTCOMES` with their length in ``k``."""

    x: np.ndarray
    lx: np.ndarray
    channel: np.ndarray
    k: np.ndarray
    correct: np.ndarray
    method: np.ndarray
    nsamp: np.ndarray
    base: np.ndarray
    feat: np.ndarray


class DissonantModel(CognitiveModel):
    """Maximum likelihood (and hierarchical PyMC) for the dissonant agent (module docstring).

    The one likelihood is :func:`dissonant_pointwise_kernel` (one observation = one item of one
    channel); the NLL, its gradient and the MLE objective are the base class's, derived from it."""

    name: ClassVar[str] = "dissonant"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = DISSONANT_PARAMETERS
    #: One BFGS run from the best of the start points: the likelihood is smooth in the linear
    #: parameters and every recovery fit converged from it (studies in cogtestbed.studies).
    n_starts: ClassVar[int] = 1
    #: The hierarchical fit's subject level is chosen from the data per parameter (centred where each subject's
    #: data pin it: :mod:`cogtestbed.inference.revealed_hierarchical`, ``subject_level="data"``).
    centre_pinned: ClassVar[bool] = True
    pointwise_kernel: ClassVar[Any] = dissonant_pointwise_kernel
    observation_fields: ClassVar[tuple[str, ...]] = ("x", "lx", "channel", "k", "correct", "method", "nsamp",
                                                     "base", "feat")
    #: each observation's outcomes (padded to MAX_OUTCOMES) and the features of each outcome
    data_dims: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "x": ("obs", "outcome"), "lx": ("obs", "outcome"), "base": ("obs", "outcome"),
        "feat": ("obs", "feature", "outcome")}

    #: One subject's valid steps as the kernel's arrays (:func:`subject_arrays`).
    observations = staticmethod(subject_arrays)

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return {s: RevealedData(**subject_arrays(g)) for s, g in trials.groupby("subject", sort=False)}

    def n_observations(self, data: Any) -> int:
        return int(data.channel.shape[0])

    def lapse_log_uniform(self, data: Any) -> np.ndarray:
        """A random answer over an item's K outcomes (:meth:`RevealedBeliefEnv.random_answer`):
        an exact distribution is a flat Dirichlet draw (:data:`LAPSE_DIRICHLET`; density Γ(K) on the
        simplex, the measure of the kernel's Dirichlet); a sampled or generated answer is N draws
        uniform over the K outcomes, K^−N (without the multinomial coefficient, which the kernel
        leaves out too and which is common to both components of the mixture)."""
        k = np.asarray(data.k, dtype=np.float64)
        flat = np.array([math.lgamma(LAPSE_DIRICHLET * v) - v * math.lgamma(LAPSE_DIRICHLET) for v in k])
        flat = flat + (LAPSE_DIRICHLET - 1.0) * np.asarray(data.lx, dtype=np.float64).sum(axis=1)
        return np.where(np.asarray(data.method) == 0, flat, -np.asarray(data.nsamp, dtype=np.float64) * np.log(k))

    def start_grid(self) -> np.ndarray:
        """A handful of starts (the product grid of 10 parameters would be 7¹⁰ points): the
        defaults with a moderate noise, a flattened-τ variant and a weak-StaA variant, each at
        every κ of :data:`KAPPA_STARTS`.

        The κ ladder matters: beyond κ ≈ ln(p⁰/ε) the excluded outcomes' q̃ sits on the ε floor
        and ∂ℓ/∂κ vanishes, so BFGS started there never comes down to a finite true κ (it stayed
        at 25–30 for a quarter of the subjects with κ ∈ [6, 10] when the only starts were κ = 30
        and κ = 5 with τ = 0.5).  The best start by NLL picks the κ basin."""
        base = self.parameters.vector({p.name: p.default for p in self.parameters})
        base[P["noise"]] = 0.05
        alt = base.copy()
        alt[P["tau"]], alt[P["theta"]] = 0.5, 2.0
        alt2 = base.copy()
        alt2[P["beta_first"]], alt2[P["theta"]] = 2.0, 0.0
        rows = []
        for row in (base, alt, alt2):
            for k in KAPPA_STARTS:
                r = row.copy()
                r[P["kappa"]] = k
                rows.append(r)
        return np.array(rows)

    def fit_subject(self, data: Any, n_starts: int | None = None, grid_nll: np.ndarray | None = None) -> MLEResult:
        """The base class's fit, then a plateau escape: an estimate beyond :data:`KAPPA_IDENTIFIED`
        on data with excluded outcomes is refitted from itself with κ reset to each of
        :data:`KAPPA_RESTARTS`, keeping the better optimum.  On the κ plateau ∂ℓ/∂κ ≈ 0, so a
        BFGS path that wanders onto it (e.g. while τ moves from its start) cannot come back; in
        the κ study this happened to 1 subject of 40 (true κ 10, estimate 49)."""
        from cogtestbed.inference.optim import mle_driver

        fit = super().fit_subject(data, n_starts, grid_nll)
        if not (fit.params["kappa"] > KAPPA_IDENTIFIED and np.any(data.feat[:, 5, :] != 0)):
            return fit
        theta = self.parameters.vector(fit.params)
        starts = []
        for k in KAPPA_RESTARTS:
            row = theta.copy()
            row[P["kappa"]] = k
            starts.append(self.to_search(row))
        z, value, converged = mle_driver(self._kernel())(np.ascontiguousarray(starts), self.objective_args(data),
                                                         *self.bfgs_stop, np.inf)
        return self._result(self.to_natural(z), value, converged, data) if value < fit.nll else fit

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """The scenario-pooled hierarchical model of :mod:`cogtestbed.inference.revealed_hierarchical`
        (same likelihood as the kernel, with per-scenario bias deviations on top)."""
        from cogtestbed.inference.revealed_hierarchical import dissonant_pymc_model

        return dissonant_pymc_model(self, trials, hierarchical)


MODELS: dict[str, CognitiveModel] = {"dissonant": DissonantModel()}
__all__ = ["DISSONANT_PARAMETERS", "MCQ_OPTIONS", "MODELS", "DissonantModel", "RevealedData",
           "dissonant_pointwise_kernel", "eta_row"]
