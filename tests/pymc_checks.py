"""Shared test check: a model's PyMC log-likelihood equals minus its numba NLL."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def pymc_logp_and_nll(model: Any, trials: pd.DataFrame, n_subjects: int, seed: int = 1) -> tuple[float, float]:
    """(PyMC logp of the observed choices, Σ numba NLL) at one random point of the unconstrained
    parameters of ``n_subjects`` subjects (non-hierarchical model)."""
    pm_model = model.pymc_model(trials, hierarchical=False)
    rng = np.random.default_rng(seed)
    point = dict(pm_model.initial_point())
    natural = {}
    for p in model.parameters:
        u = rng.normal(p.prior_mean, 1.0, n_subjects)
        point[f"{p.name}_u"] = u
        natural[p.name] = p.to_constrained(u)
    logp = float(pm_model.compile_logp(vars=[pm_model[model.observed_name]], sum=True)(point))
    data = model.subject_data(trials)
    nll = sum(model.nll(np.array([natural[k][i] for k in model.parameters.names]), d)
              for i, d in enumerate(data.values()))
    return logp, float(nll)


def observed_logp_at_random_point(pm_model: Any, observed: str, deterministics: list[str], seed: int = 1
                                  ) -> tuple[float, dict[str, np.ndarray]]:
    """(logp of ``observed``, values of ``deterministics``) at one random point of every free
    variable's value (its unconstrained scale): N(initial point, 0.5²) draws."""
    rng = np.random.default_rng(seed)
    point = {k: np.asarray(v) + rng.normal(0.0, 0.5, np.shape(v)) for k, v in pm_model.initial_point().items()}
    logp = float(pm_model.compile_logp(vars=[pm_model[observed]], sum=True)(point))
    outs = pm_model.replace_rvs_by_values([pm_model[name] for name in deterministics])
    values = pm_model.compile_fn(outs, inputs=pm_model.value_vars, on_unused_input="ignore")(point)
    return logp, {name: np.asarray(v) for name, v in zip(deterministics, values, strict=True)}
