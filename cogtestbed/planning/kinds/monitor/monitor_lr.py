"""A likelihood-ratio e-process whose null is the user's hypothesis: "this LLM's contrast is 0", for every
value of its other parameters.

A one-LLM monitor of a per-subject MLE's mean tests a statement about the estimator at a simulated population:
under the null the MLE of a contrast (RW±'s optimism bias α⁺ − α⁻) has a mean that depends on the other
parameters (the learning rate, the inverse temperature), so a bet against "mean 0" rejects a symmetric LLM
whose nuisance parameters differ from the plan's.  This module tests the hypothesis itself, on the trials.

**The e-process** (universal inference: Wasserman, Ramdas & Balakrishnan 2020, PNAS 117(29), "Universal
inference", Sec. 7, with a mixture numerator) after ``t`` subjects of one LLM is

    E_t = Σ_k w_k Π_{i≤t} L_i(θ_k) / sup_{θ ∈ H0} Π_{i≤t} L_i(θ),

``L_i`` the likelihood of subject ``i``'s choices under the full model (RW±), ``θ_k`` the nodes of a grid over
the full model's parameters (:func:`alt_nodes`) with weights ``w`` fixed before the data, and the denominator
the likelihood of all subjects so far maximised over the *null model* (RW: α⁺ = α⁻ = α, with β): over every
nuisance value the null allows.  If the LLM's subjects follow the null at any ``θ₀`` (α, β), the numerator over
``Π L_i(θ₀)`` is a non-negative martingale of mean 1 (a mixture of likelihood ratios; the rewards and casinos
do not depend on the parameters, so the choices' likelihood ratio is the data's), and the supremum is at least
``Π L_i(θ₀)``: ``E_t`` lies below a test martingale, and Ville's inequality gives ``P(∃t: E_t ≥ 1/α) ≤ α``
with a look after every subject, for every ``θ₀`` in the region, without simulation or a bias interval.

**The declared null** (:func:`null_region`): the LLM's subjects share one (α, β) anywhere in the null model's
declared parameter box (α ∈ [0, 1], β ∈ [0, 10⁵]) — one LLM at one prompt is one agent.  Validity needs the
denominator to be the maximum: it is the best of a dense grid (:func:`null_nodes`) and, wherever the grid's
value would reject, a bounded quasi-Newton search from the grid's best node (scipy's L-BFGS-B,
:func:`refined_null`) — a rejection is only ever declared on the refined maximum.  Outside the guarantee: an
LLM that is not RW at all, runs whose parameters differ between subjects, and lapses (invalid answers are no
observation; a lapse model is not fitted).

**The weights** (:func:`prior_weights`) are the plan's: its simulated population under the effect snapped to
the grid, with :data:`HEDGE` of the mass uniform so an effect the plan did not foresee still grows the e-value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from cogtestbed.errors import InputError

#: (full model, contrast) → the null model nested in it with the contrast 0 (the null's likelihood).
NESTED: Mapping[tuple[str, str], str] = {("rw-pm", "optimism_bias"): "rw"}
#: Share of the mixture weights kept uniform over the grid (an effect the plan did not foresee).
HEDGE = 0.1
#: Nodes per axis of the alternative's grid: unit-interval parameters (logit-spaced), positive ones (log-spaced).
ALT_UNIT, ALT_POSITIVE = 17, 11
#: Nodes per axis of the null's grid.
NULL_UNIT, NULL_POSITIVE = 41, 36
#: The grids' spans: logit ±span for unit parameters, [10^lo, 10^hi] for positive ones.
LOGIT_SPAN, LOG10_RANGE = 5.0, (-1.0, 2.5)
#: The nuisance grid of the null table: RW's α and β (α⁺ = α⁻ = α).
NUISANCE_ALPHA = (0.05, 0.1, 0.3, 0.5, 0.7, 0.9)
NUISANCE_BETA = (1.0, 3.0, 10.0, 30.0)


def null_model_of(model: str, effect: str) -> str:
    """The null model of ``model``'s contrast ``effect``, or an :class:`InputError` saying why none exists."""
    try:
        return NESTED[(model, effect)]
    except KeyError:
        raise InputError(f"no likelihood-ratio monitor for {model} {effect}: no nested model fixes it at its null "
                         "value for every other parameter, so no test valid for every LLM the null describes is "
                         "known") from None


def null_region(exp: Any, model: str, effect: str) -> dict[str, list[float]]:
    """The declared nuisance region the e-process is valid over: the null model's parameter box."""
    null = exp.model(null_model_of(model, effect))
    return {p.name: [float(p.lower), float(p.upper)] for p in null.parameters}


def _axis(p: Any, unit: int, positive: int) -> np.ndarray:
    if p.transform == "logit":
        return p.lower + (p.upper - p.lower) / (1.0 + np.exp(-np.linspace(-LOGIT_SPAN, LOGIT_SPAN, unit)))
    if p.transform == "log":
        return p.lower + np.logspace(*LOG10_RANGE, positive)
    raise InputError(f"no grid for parameter {p.name} (transform {p.transform!r})")


def _product(model: Any, unit: int, positive: int) -> np.ndarray:
    axes = [_axis(p, unit, positive) for p in model.parameters]
    return np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)


def alt_nodes(model: Any) -> np.ndarray:
    """The full model's grid (natural scale, one row a node) the numerator mixes over."""
    return _product(model, ALT_UNIT, ALT_POSITIVE)


def null_nodes(null: Any) -> np.ndarray:
    """The null model's grid (natural scale) its maximum is first taken on."""
    return _product(null, NULL_UNIT, NULL_POSITIVE)


def subject_loglik(full: Any, null: Any, table: Any, n: int) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """Per subject ``0..n−1`` of a trial ``table`` (its ``subject`` ids): the full model's log-likelihood at
    each :func:`alt_nodes` node (n, Ka), the null model's at each :func:`null_nodes` node (n, Kn) and the
    subject's data (None: no valid trial, all-zero rows: no observation)."""
    a_nodes, n_nodes = alt_nodes(full), null_nodes(null)
    ll_alt, ll_null = np.zeros((n, a_nodes.shape[0])), np.zeros((n, n_nodes.shape[0]))
    data: list[Any] = [None] * n
    for subject, d in full.subject_data(table).items():
        k = int(subject)
        if 0 <= k < n and full.n_observations(d) > 0:
            ll_alt[k], ll_null[k], data[k] = -full.nll_many(a_nodes, d), -null.nll_many(n_nodes, d), d
    return ll_alt, ll_null, data


def prior_weights(full: Any, draws: Mapping[str, np.ndarray], hedge: float = HEDGE) -> np.ndarray:
    """Weights over :func:`alt_nodes`: the plan's simulated parameters under the effect (``draws``, one array
    a parameter) snapped to their nearest node on the unconstrained scale, with ``hedge`` of the mass uniform."""
    nodes = alt_nodes(full)
    params = list(full.parameters)
    z_nodes = np.column_stack([p.to_unconstrained(nodes[:, j]) for j, p in enumerate(params)])
    z = np.column_stack([p.to_unconstrained(np.clip(np.asarray(draws[p.name], float), p.lower, p.upper))
                         for p in params])
    z = z[np.all(np.isfinite(z), axis=1)]
    nearest = np.argmin(((z[:, None, :] - z_nodes[None, :, :]) ** 2).sum(axis=2), axis=1) if z.size else []
    counts = np.bincount(np.asarray(nearest, int), minlength=nodes.shape[0]).astype(float)
    share = counts / counts.sum() if counts.sum() > 0 else np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    return (1.0 - hedge) * share + hedge / nodes.shape[0]


def grid_log_e(ll_alt: np.ndarray, ll_null: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For subjects in arrival order (rows): ``log`` of the mixture numerator after each and the null's grid
    maximum after each.  Their difference bounds ``log E_t`` from above (the grid's maximum is at most the
    true one)."""
    w = np.asarray(weights, float)
    if w.shape != (ll_alt.shape[-1],) or not (np.all(w >= 0) and abs(w.sum() - 1.0) < 1e-9):
        raise InputError("mixture weights must be one non-negative weight per grid node, summing to 1")
    with np.errstate(divide="ignore"):
        num = logsumexp(np.cumsum(ll_alt, axis=0) + np.log(w), axis=1)
    return num, np.cumsum(ll_null, axis=0).max(axis=1)


def refined_null(null: Any, data: Sequence[Any], ll_null_sum: np.ndarray) -> float:
    """The null model's maximised log-likelihood of the subjects ``data`` together (one shared parameter
    vector): the best of the grid (``ll_null_sum``, the summed grid log-likelihoods) and scipy's L-BFGS-B on the
    package's MLE search box (:meth:`~cogtestbed.parameters.Parameter.search_bounds`) from the grid's best
    node, with the model's analytic gradient."""
    from scipy.optimize import minimize

    params = list(null.parameters)
    best = int(np.argmax(ll_null_sum))
    seen = [d for d in data if d is not None]

    def objective(s: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.array([p.from_search(v) for p, v in zip(params, s, strict=True)])
        value, grad = 0.0, np.zeros(len(params))
        for d in seen:
            v, g = null.nll_grad(theta, d)
            value, grad = value + v, grad + g
        return value, grad * np.array([p.search_jacobian(v) for p, v in zip(params, s, strict=True)])

    s0 = np.array([p.to_search(float(v)) for p, v in zip(params, null_nodes(null)[best], strict=True)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(objective, s0, jac=True, method="L-BFGS-B", bounds=[p.search_bounds() for p in params])
    return max(float(ll_null_sum[best]), -float(res.fun) if np.isfinite(res.fun) else -math.inf)


def study_crossing(null: Any, ll_alt: np.ndarray, ll_null: np.ndarray, data: Sequence[Any], weights: np.ndarray,
                   alpha: float) -> tuple[int, np.ndarray]:
    """The first subject (1-based; 0: never) at which ``E_t ≥ 1/α`` for the subjects in arrival order, and the
    path of ``log E_t``: the grid's bound first, and at every look where that bound would reject the refined
    maximum (:func:`refined_null`) decides."""
    num, den = grid_log_e(ll_alt, ll_null, weights)
    log_e = num - den
    bar = -math.log(alpha)
    for t in map(int, np.flatnonzero(log_e >= bar)):
        log_e[t] = num[t] - refined_null(null, data[: t + 1], ll_null[: t + 1].sum(axis=0))
        if log_e[t] >= bar:
            return t + 1, log_e
    return 0, log_e


def nuisance_pool(spec: Any, trials: int | None, n: int, seed: int,
                  nuisance: Mapping[str, float] | None = None,
                  contrasts: bool = False) -> tuple[np.ndarray, np.ndarray, list[Any], np.ndarray | None]:
    """``n`` simulated subjects of the one-LLM question ``spec`` (a one-group power study of a nested contrast)
    at ``trials``: at a point of the null (``nuisance``: the null model's parameters, the same for every
    subject) or, without it, the plan's population under its effect.  Returns :func:`subject_loglik`'s
    grid log-likelihoods and data and (``contrasts``) the per-subject MLE of the contrast less its null value
    (the fixed t-test's statistic)."""
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null, power_parameters
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    null = exp.model(null_model_of(model.name, spec.effect))
    design = design_for_trials(exp, trials, spec.design)
    param_seq, sim_seq = np.random.SeedSequence(seed).spawn(2)
    if nuisance is None:
        true = power_parameters(spec, model, n, np.random.default_rng(param_seq))
    else:
        kernel = null.kernel_theta(np.array([float(nuisance[p]) for p in null.parameters.names]))
        true = {name: np.full(n, float(kernel[i])) for i, name in enumerate(model.parameters.names)}
    table = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, 1)
    ll_alt, ll_null, data = subject_loglik(model, null, table, n)
    if not contrasts:
        return ll_alt, ll_null, data, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mle = subject_contrasts(spec, model, table, n, one_sample_null(spec.model_copy(update={"effect_size": 0.0}),
                                                                      model))
    return ll_alt, ll_null, data, mle


__all__ = ["HEDGE", "NESTED", "NUISANCE_ALPHA", "NUISANCE_BETA", "alt_nodes", "crossings", "grid_log_e",
           "null_model_of", "null_nodes", "null_region", "nuisance_pool", "prior_weights", "refined_null",
           "study_crossing", "subject_loglik"]


def crossings(null: Any, ll_alt: np.ndarray, ll_null: np.ndarray, data: Sequence[Any], weights: np.ndarray,
              alpha: float, reps: int, length: int, rng: np.random.Generator,
              batches: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """First crossings (0: none within ``length``) of ``reps`` simulated studies of ``length`` subjects, each a
    random ordering of one of ``batches`` disjoint sub-pools of a simulated pool (:func:`nuisance_pool`'s
    arrays); returns them and each study's sub-pool (for the between-sub-pool MC SE)."""
    sub = np.array_split(np.arange(ll_alt.shape[0]), batches)
    if min(s.size for s in sub) < length:
        raise InputError(f"each of {batches} sub-pools needs {length} subjects, the pool has {ll_alt.shape[0]}")
    which = np.arange(reps) % batches
    out = np.zeros(reps, int)
    for i, b in enumerate(which):
        idx = rng.permutation(sub[b])[:length]
        out[i] = study_crossing(null, ll_alt[idx], ll_null[idx], [data[j] for j in idx], weights, alpha)[0]
    return out, which
