"""Conformance checks of an experiment's PyMC models (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): each builds with a finite logp
(:func:`check_pymc_model`), and where it uses its kernel's likelihood its log-likelihood of the
observations is −Σ NLL (:func:`check_pymc_likelihood`).
"""

from __future__ import annotations

import math

import numpy as np

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import fail, model_names, prior_draws, simulate_from_model, small_design
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.study_errors import NotApplicable


def check_pymc_model(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model with a PyMC version builds on simulated data with a finite logp (full mode: and
    gradient) at its initial point (quick mode: the first such model)."""
    names = [n for n in model_names(spec) if spec.model(n).has_pymc]
    if not names:
        raise NotApplicable(f"no model of {spec.name} has a PyMC version")
    problems = []
    # quick mode: one model's logp, compiled without C code (the full mode compiles every model's
    # logp and gradient as NUTS does)
    mode = "FAST_COMPILE" if config.quick else None
    for name in names[:1] if config.quick else names:
        m = spec.model(name)
        defaults = {p.name: np.full(2, p.default) for p in m.parameters}
        table = simulate_from_model(spec, name, defaults, config.seed, small_design(spec, config))
        try:
            pm_model = m.pymc_model(table, hierarchical=True)
            point = pm_model.initial_point()
            try:
                logp = float(pm_model.compile_logp(mode=mode)(point))
            except Exception:  # noqa: BLE001 - pytensor's Python mode fails on some wide graphs
                logp = float(pm_model.compile_logp()(point))
            dlogp = np.zeros(1) if config.quick else np.asarray(pm_model.compile_dlogp(mode=mode)(point))
        except Exception as exc:  # noqa: BLE001 - any build error is the finding
            problems.append(f"model {name!r}: pymc_model failed: {type(exc).__name__}: {exc}")
            continue
        if not np.isfinite(logp):
            problems.append(f"model {name!r}: logp at the initial point is {logp}")
        if not np.all(np.isfinite(dlogp)):
            problems.append(f"model {name!r}: the logp gradient at the initial point is not finite")
        observed = [v.name for v in pm_model.observed_RVs]
        if not observed:
            problems.append(f"model {name!r}: the PyMC model has no observed variable")
    fail(problems, f"{spec.name}: PyMC models do not build")


def check_pymc_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model whose PyMC version uses its kernel's likelihood (``other_pymc_likelihood`` unset):
    the log-likelihood of the observations in the non-hierarchical PyMC model, at three subjects'
    parameters drawn from the prior, is −Σ NLL."""
    problems = []
    names = [n for n in model_names(spec) if spec.model(n).has_pymc and not spec.model(n).other_pymc_likelihood]
    if not names:
        raise NotApplicable(f"no model of {spec.name} has a PyMC version with its kernel's likelihood")
    for name in names:
        ll, nll = _pymc_and_kernel_loglik(spec, name, config)
        if not math.isclose(ll, -nll, rel_tol=1e-9, abs_tol=1e-8):
            problems.append(f"model {name!r}: PyMC log-likelihood {ll:.10g} != −NLL {-nll:.10g}")
    fail(problems, f"{spec.name}: the PyMC likelihood is not the kernel's")


def _pymc_and_kernel_loglik(spec: ExperimentSpec, name: str, config: CheckConfig) -> tuple[float, float]:
    """(PyMC log-likelihood, kernel's Σ NLL) of model ``name`` on a small table of three prior subjects."""
    m = spec.model(name)
    params = prior_draws(m.parameters, 3, np.random.default_rng(config.seed), spread=0.5)
    table = simulate_from_model(spec, name, params, config.seed, small_design(spec, config))
    pm_model = m.pymc_model(table, hierarchical=False)
    point = dict(pm_model.initial_point())
    for p in m.parameters:
        point[f"{p.name}_u"] = p.to_unconstrained(params[p.name])
    ll = float(pm_model.compile_fn(pm_model.logp(vars=[pm_model.observed_RVs[0]], sum=True),
                                   inputs=pm_model.value_vars, on_unused_input="ignore")(point))
    data = m.subject_data(table)
    thetas = [np.array([p.to_constrained(point[f"{p.name}_u"][i]) for p in m.parameters]) for i in range(len(data))]
    return ll, float(sum(m.nll(t, d) for t, d in zip(thetas, data.values(), strict=True)))
