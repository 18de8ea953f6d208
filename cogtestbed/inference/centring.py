"""Which parameters a hierarchical fit samples centred: the ones each subject's data pin.

A hierarchical fit samples subject ``i``'s value of a parameter on its unconstrained scale either non-centred,
``u_i = mu + sigma * z_i`` with ``z_i ~ Normal(0, 1)``, or centred, ``u_i ~ Normal(mu, sigma)``
(:func:`~cogtestbed.inference.hierarchical.subject_parameters`).  Both are the same posterior; they differ in how
NUTS moves through it.  Where each subject's data pin ``u_i`` far more tightly than the population spreads
subjects, the non-centred offsets are tied to ``mu`` and ``sigma`` along a narrow ridge, which NUTS crosses in long
trajectories (hundreds of leapfrog steps a draw); where the data are weak, the centred form has the funnel between
``sigma`` and the ``u_i`` and diverges (Papaspiliopoulos, Roberts & Sköld 2007; Betancourt & Girolami 2015).

The choice is made from the data before sampling, for each parameter, with the normal–normal model's measure:
**pinned** is the median over subjects of ``1 / sqrt(1 + sigma² / s_i²)``, the posterior SD of ``u_i`` over the
population SD, where ``s_i`` is subject ``i``'s own standard error of ``u_i`` (the Laplace approximation at its
maximum-likelihood estimate: the inverse of the Hessian of its negative log-likelihood on the unconstrained scale,
by central differences of the kernel's gradient) and ``sigma`` the population SD (the robust spread of the
subjects' estimates, less the median squared standard error: a robust method-of-moments estimate).  A parameter is
sampled centred where pinned < :data:`PINNED_CENTRED` (the data's SD then under 0.58 of the population's; the two forms
break even near 0.71).  A subject whose Hessian is not finite and positive definite, or whose estimate sits at a
bound, has an infinite ``s_i`` (pinned 1) in every parameter: one parameter at a bound leaves the whole subject out
of the measure, a conservative rule (it centres less).  A measure near 0.5 can fall either side on another machine's
rounding: both forms are the same posterior, so only the sampler's path changes.  The threshold, the robust spread
and the Laplace approximation are this project's choices, not a paper's.

The choice is a model's option (``centre_pinned``), on for four families: the per-family clause of the rule of
``benchmarks/studies/centring_by_data.py`` (fresh data sets, the data's choice against the declared parameters alone)
kept it for generalised Bayes, magnitude linear, BART, and belief coherence's MNL and loss forms, and the comparison
with NumPyro on two more data sets confirmed it for all but the loss form (lower ESS, divergences), which keeps its
declared parameters; over every family it did not hold as a default (static
Bayes, whose declared centred ``w_prior`` is not pinned on every data set, diverged more).  Revealed belief's
dissonant model takes it too (:mod:`~cogtestbed.inference.revealed_hierarchical`, 28 Nov 2026): its subject level
was centred for every parameter, which diverged on prior-drawn subjects (6 subjects: R-hat 1.166, 716 divergences;
10: 454), where the data's choice held or nearly (0 and 13 divergences); where hundreds of exact distributions pin
each of 8 or more subjects, the data choose every varying parameter centred, the model as before.  Where a data set
asks for a parameterisation a process has not compiled yet, that fit compiles it (in a study whose data sets
alternate between variants, each variant once while the cache of compiled models holds it).  Models with form
effects keep their declared parameters (a subject's estimate carries its form's shift).

The choice changes which variables the sampler draws (``{p}_u`` for ``{p}_z``), never the posterior; it depends on
the data alone (the same table gives the same choice, in any row order), and parameters a model declares in
``centred_parameters`` stay centred.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.inference.hierarchical_op import pool_subject_arrays, segment_sum

#: A parameter is sampled centred where its pinned measure (module docstring) is below this.
PINNED_CENTRED = 0.5
#: Relative step of the central differences of the kernel's gradient on the unconstrained scale.
HESSIAN_STEP = 1e-4
#: Estimates closer than this (relative to the range) to a finite bound count as at the bound.
AT_BOUND = 1e-6
#: The fewest subjects with a finite standard error for a parameter to be considered for centring (the robust
#: spread of fewer estimates is too noisy to tell a population SD from none; this project's choice).
MIN_SUBJECTS = 8


def _unconstrained_gradients(model: Any, theta: np.ndarray, idx: np.ndarray,
                             arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """Each subject's log-likelihood gradient (n_subjects, k) in its own unconstrained values, at natural ``theta``
    (n_subjects, k): one call of the pooled kernel (a subject's likelihood reads its own row of ``theta``)."""
    embed, offset = model.embedding()
    columns = np.ascontiguousarray(offset + theta @ embed)
    _, grad = model._kernel()(columns, idx, *arrays)
    per_column = segment_sum(np.ones(idx.shape[0]), np.asarray(grad), idx, columns)
    natural = per_column @ embed.T
    jacobian = np.column_stack([p.constrained_slope(theta[:, j]) for j, p in enumerate(model.parameters)])
    return natural * jacobian


def _interior(model: Any, theta: np.ndarray) -> np.ndarray:
    """(n_subjects, k): whether each estimate is finite and away from its parameter's finite bounds."""
    out = np.isfinite(theta)
    for j, p in enumerate(model.parameters):
        span = (p.upper - p.lower) if np.isfinite(p.upper - p.lower) else max(1.0, abs(p.lower))
        gap = AT_BOUND * span
        if np.isfinite(p.lower):
            out[:, j] &= theta[:, j] > p.lower + gap
        if np.isfinite(p.upper):
            out[:, j] &= theta[:, j] < p.upper - gap
    return out


def standard_errors(model: Any, theta: np.ndarray, idx: np.ndarray, arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """(n_subjects, k): each subject's Laplace standard errors on the unconstrained scale at its estimates ``theta``
    (natural, (n_subjects, k)); inf where the estimate is at a bound or the Hessian is not positive definite."""
    n, k = theta.shape
    inside = _interior(model, theta)
    safe = np.where(inside, theta, np.array([p.default for p in model.parameters])[None, :])
    u = np.column_stack([p.to_unconstrained(safe[:, j]) for j, p in enumerate(model.parameters)])
    hess = np.empty((n, k, k))
    for j in range(k):
        step = HESSIAN_STEP * np.maximum(1.0, np.abs(u[:, j]))
        moved = [u.copy(), u.copy()]
        moved[0][:, j] += step
        moved[1][:, j] -= step
        ends = [_unconstrained_gradients(model, _natural(model, m), idx, arrays) for m in moved]
        hess[:, :, j] = -(ends[0] - ends[1]) / (2 * step[:, None])
    hess = (hess + np.swapaxes(hess, 1, 2)) / 2
    out = np.full((n, k), np.inf)
    for i in range(n):
        if not inside[i].all() or not np.all(np.isfinite(hess[i])):
            continue
        try:
            np.linalg.cholesky(hess[i])
        except np.linalg.LinAlgError:
            continue
        out[i] = np.sqrt(np.diag(np.linalg.inv(hess[i])))
    return out


def _natural(model: Any, u: np.ndarray) -> np.ndarray:
    return np.column_stack([p.to_constrained(u[:, j]) for j, p in enumerate(model.parameters)])


def pinned(u: np.ndarray, se: np.ndarray) -> float:
    """The pinned measure of one parameter (module docstring) from the subjects' unconstrained estimates ``u`` and
    standard errors ``se``; 1.0 (not pinned) where fewer than :data:`MIN_SUBJECTS` have a finite one."""
    ok = np.isfinite(se) & np.isfinite(u)
    if ok.sum() < MIN_SUBJECTS:
        return 1.0
    spread = 1.4826 * float(np.median(np.abs(u[ok] - np.median(u[ok]))))
    sigma2 = max(spread ** 2 - float(np.median(se[ok] ** 2)), 0.0)
    return float(np.median(1.0 / np.sqrt(1.0 + sigma2 / se ** 2)))  # an infinite se: 1


def _estimate(model: Any, data: Any) -> list[float]:
    """One subject's maximum-likelihood estimate (natural scale); NaN where the model refuses or fails to fit the
    subject alone (too few answers, a singular design: a hierarchical fit still pools it), which leaves it out of the
    choice (the choice never stops a fit)."""
    try:
        fit = model.fit_subject(data)
    except (InputError, ValueError, ArithmeticError, np.linalg.LinAlgError):
        return [float("nan")] * len(model.parameters)
    return [float(fit.params[p]) for p in model.parameters.names]


def pinned_by_data(model: Any, data: Mapping[Hashable, Any]) -> dict[str, float]:
    """Per parameter of ``model``, the pinned measure of its subjects ``data`` (``model.subject_data``'s mapping)."""
    subjects = list(data)
    theta = np.array([_estimate(model, data[s]) for s in subjects], dtype=np.float64).reshape(
        len(subjects), len(model.parameters))
    idx, pooled = pool_subject_arrays(data, model.observation_fields, model.observation_mask)
    arrays = tuple(pooled[name] for name in model.observation_fields)
    se = standard_errors(model, theta, idx, arrays)  # inf for a subject with an estimate at a bound: left out
    u = np.column_stack([p.to_unconstrained(theta[:, j]) for j, p in enumerate(model.parameters)])
    return {p.name: pinned(u[:, j], se[:, j]) for j, p in enumerate(model.parameters)}


def centred_parameters(model: Any, data: Mapping[Hashable, Any]) -> tuple[str, ...]:
    """The parameters a hierarchical fit of ``model`` to ``data`` samples centred: those the model declares
    (``centred_parameters``) and, where the model chooses from the data (``centre_pinned``), every
    parameter whose pinned measure is below :data:`PINNED_CENTRED`; in the model's parameter order."""
    declared = set(getattr(model, "centred_parameters", ()))
    if getattr(model, "centre_pinned", False) and len(data) >= MIN_SUBJECTS:
        measures = pinned_by_data(model, data)
        declared |= {p for p, v in measures.items() if v < PINNED_CENTRED}
    return tuple(p for p in model.parameters.names if p in declared)


__all__ = ["PINNED_CENTRED", "centred_parameters", "pinned", "pinned_by_data", "standard_errors"]
