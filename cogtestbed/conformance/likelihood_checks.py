"""Conformance checks of an experiment's cognitive models' likelihoods (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): the NLL is the sum of the pointwise
log-likelihood (:func:`check_pointwise_likelihood`), its analytic gradient matches finite
differences (:func:`check_likelihood_gradient`), the MLE's search-scale objective is the NLL
(:func:`check_search_objective`), every model takes a lapse term (:func:`check_lapse_likelihood`)
and the MLE recovers the generating parameters (:func:`check_mle_recovery`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import (
    CHECK_LAPSE,
    design_with_trials,
    fail,
    interior,
    model_data,
    model_names,
    prior_draws,
    simulate_from_model,
    small_design,
)
from cogtestbed.environments.base import Design
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.lapse import Lapse
from cogtestbed.parameters import ParameterError, ParameterSet
from cogtestbed.study_errors import NotApplicable

#: Relative step of the central finite differences of the gradient check.
FD_STEP = 1e-5
#: Tolerance of the gradient check: |analytic − FD| ≤ FD_RTOL·(1 + |FD|) + FD_NLL_RTOL·|NLL|.
FD_RTOL = 1e-4
FD_NLL_RTOL = 1e-8
#: Absolute step on the search scale z of the search-objective check's central differences.
SEARCH_FD_STEP = 1e-6
#: Tolerance of the recovery check, in prior SDs on the unconstrained scale (logit / log /
#: identity): the median MLE over subjects must lie within this many SDs of the truth.
RECOVERY_TOLERANCE_SD = 1.0
#: …or within this share of the parameter's range (of max(1, |truth|) for an unbounded one) on
#: the natural scale, which judges truths at a bound (a noise of 0 is −∞ on the log scale).
RECOVERY_NATURAL_TOL = 0.05


def _likelihood_variants(spec: ExperimentSpec) -> list[tuple[str, bool]]:
    """(model, with lapse term) for every model with a likelihood kernel: each model, then its
    lapse variant (every model declares the uniform of a random answer)."""
    out = []
    for name in model_names(spec):
        out.append((name, False))
        kernel = getattr(type(spec.model(name)), "kernel", None)
        if callable(kernel) and kernel() is not None:
            out.append((name, True))
    return out


def likelihood_points(parameters: ParameterSet, seed: int, n: int = 2) -> list[np.ndarray]:
    """The points the likelihood checks test at: the defaults, then ``n`` draws of the prior at half its
    SD, each kept 2 % of the range inside the bounds."""
    rng = np.random.default_rng(seed)
    draws = prior_draws(parameters, n, rng, spread=0.5)
    points = [np.array([p.default for p in parameters], dtype=np.float64)]
    points += [np.array([draws[p.name][i] for p in parameters]) for i in range(n)]
    return [np.array([float(interior(p, np.array(v), 0.02)) for p, v in zip(parameters, pt, strict=True)])
            for pt in points]


def check_pointwise_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's NLL (and its lapse variant's, ε > 0) equals −Σ of its pointwise
    log-likelihood (and the gradients agree)."""
    problems = []
    checked = 0
    for model_name, lapse in _likelihood_variants(spec):
        m, data = model_data(spec, model_name, config, lapse)
        name = f"{model_name} + lapse" if lapse else model_name
        pointwise = getattr(m, "pointwise", None)
        if not callable(pointwise):
            continue
        checked += 1
        kernel = getattr(type(m), "kernel", None)
        if callable(kernel) and kernel() is None:
            problems.append(f"model {name!r} has no pointwise likelihood kernel (CognitiveModel.pointwise_kernel): "
                            "its NLL, gradient and PyMC Op are not derived from one likelihood")
            continue
        for theta in likelihood_points(m.parameters, config.seed):
            ll, grad = pointwise(theta, data)
            nll, g = m.nll_grad(theta, data)
            ll, grad = np.asarray(ll, dtype=np.float64), np.asarray(grad, dtype=np.float64)
            at = f"model {name!r} at {dict(zip(m.parameters.names, np.round(theta, 4), strict=True))}"
            if not np.all(np.isfinite(ll)):
                problems.append(f"{at}: non-finite pointwise log-likelihood")
            if not math.isclose(nll, -float(ll.sum()), rel_tol=1e-9, abs_tol=1e-9):
                problems.append(f"{at}: NLL {nll:.10g} != −Σ pointwise {-float(ll.sum()):.10g}")
            if grad.shape != (ll.shape[0], len(m.parameters)):
                problems.append(f"{at}: pointwise gradient has shape {grad.shape}, expected ({ll.shape[0]}, "
                                f"{len(m.parameters)})")
            elif not np.allclose(-grad.sum(axis=0), g, rtol=1e-8, atol=1e-8):
                problems.append(f"{at}: −Σ pointwise gradient {-grad.sum(axis=0)} != NLL gradient {g}")
        points = likelihood_points(m.parameters, config.seed)
        many, direct = m.nll_many(np.array(points), data), [m.nll(t, data) for t in points]
        if not np.allclose(many, direct, rtol=1e-10, atol=1e-10):  # the start grid's (fast) path
            problems.append(f"model {name!r}: the start-grid NLLs (nll_many) {many} != NLL {direct}")
    if not checked:
        raise NotApplicable("no model of this experiment exposes a pointwise log-likelihood (CognitiveModel.pointwise)")
    fail(problems, f"{spec.name}: the NLL is not the sum of the pointwise log-likelihood")


def finite_difference_grad(f: Callable[[np.ndarray], float], theta: np.ndarray, parameters: ParameterSet) -> np.ndarray:
    """Central differences with a relative step, kept inside each parameter's bounds."""
    out = np.empty(len(theta))
    for i, p in enumerate(parameters):
        h = FD_STEP * max(1.0, abs(theta[i]))
        h = min(h, 0.5 * (theta[i] - p.lower), 0.5 * (p.upper - theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(up) - f(down)) / (2 * h)
    return out


def _nll_of(model: Any, data: Any) -> Callable[[np.ndarray], float]:
    return lambda theta: float(model.nll(theta, data))


def check_likelihood_gradient(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's analytic NLL gradient (and its lapse variant's) matches central finite differences."""
    problems = []
    for model_name, lapse in _likelihood_variants(spec):
        m, data = model_data(spec, model_name, config, lapse)
        name = f"{model_name} + lapse" if lapse else model_name
        for theta in likelihood_points(m.parameters, config.seed + 1):
            nll, grad = m.nll_grad(theta, data)
            fd = finite_difference_grad(_nll_of(m, data), theta, m.parameters)
            at = f"model {name!r} at {dict(zip(m.parameters.names, np.round(theta, 4), strict=True))}"
            if not np.isfinite(nll) or not np.all(np.isfinite(grad)):
                problems.append(f"{at}: NLL {nll} or gradient {grad} is not finite")
                continue
            tol = FD_RTOL * (1 + np.abs(fd)) + FD_NLL_RTOL * abs(nll)
            bad = np.abs(np.asarray(grad) - fd) > tol
            for i in np.flatnonzero(bad):
                problems.append(f"{at}: d NLL / d {m.parameters.names[i]} analytic {grad[i]:.8g} vs finite "
                                f"difference {fd[i]:.8g}")
    fail(problems, f"{spec.name}: analytic gradients disagree with finite differences")


def _roundoff(model: Any, theta: np.ndarray, data: Any, h: float) -> float:
    """Rounding error of a central difference of the NLL with step ``h``: a few ulps of Σ|ll| over
    2h (an exact-distribution Dirichlet log-density is of order 1e5 per observation, so this, not
    the gradient, limits the agreement there; negligible for small log-likelihoods)."""
    return 4.0 * float(np.finfo(float).eps) * float(np.abs(model.pointwise(theta, data)[0]).sum()) / h


def check_search_objective(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's MLE objective on the search scale (:func:`~cogtestbed.inference.optim.search_objective`
    of its kernel) is its NLL, with the chain-rule gradient (central finite differences on z)."""
    from cogtestbed.inference.optim import search_objective

    problems = []
    for name in model_names(spec):
        m, data = model_data(spec, name, config)
        objective, args = search_objective(m.kernel()), m.objective_args(data)
        for theta in likelihood_points(m.parameters, config.seed + 2, n=1):
            z = m.to_search(theta)
            value, grad = objective(z, args)
            at = f"model {name!r} at z = {np.round(z, 4)}"
            if not math.isclose(value, m.nll(m.to_natural(z), data), rel_tol=1e-12):
                problems.append(f"{at}: objective {value:.12g} != NLL {m.nll(m.to_natural(z), data):.12g}")
            h = SEARCH_FD_STEP
            tol = 1e-5 + _roundoff(m, m.to_natural(z), data, 2 * h)
            for j in range(z.size):
                up, dn = z.copy(), z.copy()
                up[j] += h
                dn[j] -= h
                fd = (objective(up, args)[0] - objective(dn, args)[0]) / (2 * h)
                if abs(grad[j] - fd) > max(1e-4 * abs(fd), tol):
                    problems.append(f"{at}: d objective / d z[{m.parameters.names[j]}] {grad[j]:.8g} vs finite "
                                    f"difference {fd:.8g}")
    fail(problems, f"{spec.name}: the search-scale MLE objective is not the NLL")


def check_lapse_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model takes a lapse term (:func:`~cogtestbed.inference.base.with_lapse`): log u is
    finite, one per observation; ε = 0 gives the model's NLL; ε fitted is the last parameter,
    ``lapse``, and ε = 0.1 gives another finite NLL."""
    from cogtestbed.inference.base import with_lapse

    problems = []
    for name in model_names(spec):
        base = spec.model(name)
        defaults = {p.name: np.array([p.default]) for p in base.parameters}
        table = simulate_from_model(spec, name, defaults, 7, small_design(spec, config), lapse=Lapse(*CHECK_LAPSE))
        data = next(iter(base.subject_data(table).values()))
        theta = np.array([p.default for p in base.parameters])
        log_u = np.asarray(base.lapse_log_uniform(data))
        if log_u.ndim != 1 or not np.all(np.isfinite(log_u)):
            problems.append(f"model {name!r}: lapse_log_uniform is not one finite value per observation")
        nll = base.nll(theta, data)
        zero = with_lapse(base, 0.0)
        if not math.isclose(zero.nll(theta, next(iter(zero.subject_data(table).values()))), nll,
                            rel_tol=1e-10, abs_tol=1e-9):
            problems.append(f"model {name!r}: a lapse of 0 changes the NLL")
        fitted = with_lapse(base, "fit")
        if fitted.parameters.names[-1] != "lapse":
            problems.append(f"model {name!r}: the fitted lapse is not the last parameter")
        lapsed = fitted.nll(np.append(theta, 0.1), next(iter(fitted.subject_data(table).values())))
        if not np.isfinite(lapsed) or math.isclose(lapsed, nll, rel_tol=1e-6):
            problems.append(f"model {name!r}: a lapse of 0.1 gives NLL {lapsed} (no lapse: {nll})")
    fail(problems, f"{spec.name}: lapse terms")


def recovery_design(spec: ExperimentSpec, model: str, config: CheckConfig) -> tuple[Design, int]:
    """(design, sessions per subject) for the recovery check: what the model's declared recovery
    studies use (else the experiment's other recovery studies): their largest ``trials`` /
    ``runs``; quick mode takes their smallest value > 1."""
    decls = [s for s in spec.studies_of("recovery") if s.model == model] or list(spec.studies_of("recovery"))
    pick = (lambda xs: min([x for x in xs if x > 1] or xs)) if config.quick else max
    trials = [t for s in decls for t in s.trials]
    runs = [r for s in decls for r in s.runs]
    design = design_with_trials(spec, pick(trials)) if trials else spec.design_cls()
    return design, (pick(runs) if runs else 1)


def check_mle_recovery(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model, simulated through its generator at its defaults, is recovered by its MLE
    (median over subjects within RECOVERY_TOLERANCE_SD prior SDs on the unconstrained scale, or
    RECOVERY_NATURAL_TOL of the range on the natural scale)."""
    problems = []
    for name in model_names(spec):
        m = spec.model(name)
        gen = spec.generator(name)
        true = {p.name: p.default for p in m.parameters}
        try:
            spec.agent(gen.agent).parameters.validate(gen.agent_params(true))
        except ParameterError as exc:
            problems.append(f"model {name!r}: its generator gives invalid agent parameters: {exc}")
            continue
        design, runs = recovery_design(spec, name, config)
        n = config.n_subjects
        table = simulate_from_model(spec, name, {k: np.full(n, v) for k, v in true.items()}, config.seed, design, runs)
        fits = m.fit_mle(table, n_starts=2 if config.quick else None)
        for p in m.parameters:
            est = float(np.median(fits[p.name].to_numpy(dtype=np.float64)))
            z_true, z_est = float(p.to_unconstrained(true[p.name])), float(p.to_unconstrained(est))
            width = p.upper - p.lower if np.isfinite(p.upper - p.lower) else max(1.0, abs(true[p.name]))
            near = abs(est - true[p.name]) <= RECOVERY_NATURAL_TOL * width  # a truth at a bound
            if not (near or abs(z_est - z_true) <= RECOVERY_TOLERANCE_SD * p.prior_sd):
                problems.append(f"model {name!r}: {p.name} true {true[p.name]:.4g}, median MLE {est:.4g} over {n} "
                                f"subjects ({design.n_trials} trials x {runs} sessions each); off by "
                                f"{abs(z_est - z_true):.2f} > {RECOVERY_TOLERANCE_SD * p.prior_sd:.2f} on the "
                                f"{p.transform} scale")
    fail(problems, f"{spec.name}: MLE does not recover the generating parameters")
