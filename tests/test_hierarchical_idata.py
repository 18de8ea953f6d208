"""The InferenceData shape of every model's hierarchical fit (issue 75), checked without sampling:
each model's ``pm.Model`` on a small simulated table, a posterior of zeros with the sampler's
variables (as nutpie stores them: transformed values, offsets, deterministics) and the fit's
``constant_data``, then :func:`~cogtestbed.inference.hierarchical_idata.shape_idata`.  The sampled
version is ``tests/test_hierarchical.py::test_inference_data_is_shaped_as_pymc_users_expect``."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.api.core import get_experiment
from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import model_names, simulate_from_model, small_design
from cogtestbed.errors import InputError
from cogtestbed.inference.hierarchical_idata import add_posterior_predictive, shape_idata
from cogtestbed.inference.hierarchical_sampling import _add_constant_data  # noqa: PLC2701 - the fit's own step


def _stored_like_nutpie(experiment: str, name: str) -> tuple[Any, Any, Any]:
    """(model, pm.Model, InferenceData holding what nutpie stores, zeros) of ``name``."""
    import arviz as az
    import xarray as xr

    spec = get_experiment(experiment)
    model = spec.model(name)
    cfg = CheckConfig()
    table = simulate_from_model(spec, name, {p.name: np.full(2, p.default) for p in model.parameters}, cfg.seed,
                                small_design(spec, cfg))
    pm_model = model.pymc_model(table, hierarchical=True)
    dims = pm_model.named_vars_to_dims
    shapes = dict(pm_model.eval_rv_shapes())
    for det in pm_model.deterministics:
        shapes[det.name] = tuple(len(pm_model.coords[d]) for d in dims.get(det.name, ()))
    post = {n: (("chain", "draw", *(dims.get(n) or [f"{n}_dim_{i}" for i in range(len(s))])), np.zeros((1, 2, *s)))
            for n, s in shapes.items()}
    coords = {k: list(v) for k, v in pm_model.coords.items() if v is not None}
    idata = az.InferenceData(posterior=xr.Dataset(post, coords=coords))
    _add_constant_data(idata, pm_model)
    return model, pm_model, idata


def _check_shape(experiment: str, name: str) -> Any:
    model, pm_model, idata = _stored_like_nutpie(experiment, name)
    shape_idata(idata, pm_model, model)
    post = set(idata.posterior.data_vars)
    assert not [v for v in post if v.endswith("__") or v.endswith("_z")], post
    assert not [v for v in post if v.endswith("_u") and v[:-2] in post], post
    for p in model.parameters.names:  # the contract's names: population and subjects
        assert {p, f"{p}_mu", f"{p}_sigma", f"{p}_pop"} <= post, (p, post)
    order = list(idata.posterior.data_vars)
    scalars = [k for k, v in enumerate(order) if idata.posterior[v].ndim == 2]
    assert max(scalars) < min(k for k, v in enumerate(order) if idata.posterior[v].ndim > 2)  # population first
    observed = idata.observed_data
    assert list(observed.data_vars) == [v.name for v in pm_model.observed_RVs]
    assert observed[str(next(iter(observed.data_vars)))].dims == ("obs",)
    for group in idata.groups():
        for var_name, var in idata[group].data_vars.items():
            assert not [d for d in var.dims if re.search(r"_dim_\d+$", d)], (group, var_name, var.dims)
    return idata


@pytest.mark.parametrize(("experiment", "name"), [("collider", "cbn-3p"), ("magnitude", "static-bayes"),
                                                  ("risky-choice", "expected-value")])
def test_a_posterior_holds_the_models_parameters_and_every_dimension_is_named(experiment: str, name: str) -> None:
    idata = _check_shape(experiment, name)
    internals = set(idata.unconstrained_posterior.data_vars)
    if name == "static-bayes":  # w_prior is sampled centred: its unconstrained subject values are internal
        assert "w_prior_u" in internals and "mu_p_z" in internals
    if name == "expected-value":  # each observation's four outcomes, named by the model
        assert idata.constant_data["outcomes"].dims == ("obs", "outcome")
        with pytest.raises(InputError, match="log-likelihood"):  # replicated choices need the fit's
            add_posterior_predictive(idata, 2)
    if name == "cbn-3p":
        with pytest.raises(InputError, match="binary choice"):
            add_posterior_predictive(idata, None, model_name="cbn-3p")


@pytest.mark.slow
def test_every_models_inference_data_has_that_shape() -> None:
    for experiment in ct.experiments():
        spec = get_experiment(experiment)
        for name in model_names(spec):
            if spec.model(name).has_pymc:
                _check_shape(experiment, name)
