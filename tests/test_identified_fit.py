"""A hierarchical fit's InferenceData as PyMC users read it: coordinates on every data dimension, the population
names explained in the fit's own attrs, ``az.plot_ppc`` plotting or naming the way, a readable forest plot; checked
without sampling (the posterior of zeros of tests/test_hierarchical_idata.py), on the horizon task's model."""

from __future__ import annotations

import pickle
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from test_hierarchical_idata import _stored_like_nutpie  # noqa: E402

from cogtestbed.inference.hierarchical_diagnostics import BayesFit, Diagnostics  # noqa: E402
from cogtestbed.inference.hierarchical_idata import (  # noqa: E402
    NoPosteriorPredictive,
    add_posterior_predictive,
    shape_idata,
)


@pytest.fixture
def shaped() -> tuple[Any, Any]:
    model, pm_model, idata = _stored_like_nutpie("horizon", "info-bonus")
    return model, shape_idata(idata, pm_model, model)


def _with_log_likelihood(idata: Any) -> Any:
    import xarray as xr

    obs = idata.observed_data
    name = str(next(iter(obs.data_vars)))
    n = obs.sizes["obs"]
    ll = np.log(np.full((1, 2, n), 0.7))
    idata.add_groups(log_likelihood=xr.Dataset({name: (("chain", "draw", "obs"), ll)}))
    return idata


def test_every_data_dimension_has_coordinates(shaped: tuple[Any, Any]) -> None:
    _, idata = shaped
    for group in ("observed_data", "constant_data"):
        ds = idata[group]
        assert ds.sizes, group
        for dim, size in ds.sizes.items():
            assert dim in ds.coords, (group, dim)
            assert len(ds.coords[dim]) == size
    assert idata.observed_data.sizes["obs"] == idata.observed_data["choice"].size > 0


def test_population_names_are_explained_in_the_fits_attrs(shaped: tuple[Any, Any]) -> None:
    model, idata = shaped
    text = idata.attrs["variables"]
    assert "{p}_pop" in text and "{p}_mu" in text and "natural scale" in text and "unconstrained" in text
    post = idata.posterior
    for p in model.parameters.names:
        assert "population median" in post[f"{p}_pop"].attrs["description"]
        assert "unconstrained" in post[f"{p}_mu"].attrs["description"]
        assert "each subject" in post[p].attrs["description"]


def test_plot_ppc_names_the_way_when_no_predictive_was_drawn(shaped: tuple[Any, Any]) -> None:
    import arviz as az

    _, idata = shaped
    with pytest.raises(NoPosteriorPredictive, match="posterior_predictive=True"):
        az.plot_ppc(idata)
    assert "posterior_predictive" not in idata.groups()


def test_plot_ppc_plots_the_drawn_predictive(shaped: tuple[Any, Any]) -> None:
    import arviz as az
    import matplotlib.pyplot as plt

    _, idata = shaped
    add_posterior_predictive(_with_log_likelihood(idata), 2, seed=1)
    pp = idata.posterior_predictive["choice"]
    assert pp.dims == ("chain", "draw", "obs") and set(np.unique(pp.values)) <= {0, 1}
    assert all(d in idata.posterior_predictive.coords for d in pp.dims)
    ax = az.plot_ppc(idata, num_pp_samples=2)
    assert np.size(ax) >= 1 and isinstance(np.ravel(ax)[0], plt.Axes)
    plt.close("all")


def test_the_fits_inference_data_pickles_and_extends(shaped: tuple[Any, Any]) -> None:
    _, idata = shaped
    back = pickle.loads(pickle.dumps(idata))
    assert type(back) is type(idata) and list(back.posterior.data_vars) == list(idata.posterior.data_vars)
    with pytest.raises(NoPosteriorPredictive):
        back.posterior_predictive  # noqa: B018 - the attribute access is what is tested
    other = _with_log_likelihood(pickle.loads(pickle.dumps(idata)))
    add_posterior_predictive(other, 2)
    idata.extend(other)
    assert "posterior_predictive" in idata.groups()


def test_forest_plot_shows_the_population_first_and_subjects_on_request(shaped: tuple[Any, Any]) -> None:
    import matplotlib.pyplot as plt

    model, idata = shaped
    fit = BayesFit(idata, Diagnostics.__new__(Diagnostics), "info-bonus")
    labels = [t.get_text() for t in np.ravel(fit.plot_forest())[0].get_yticklabels()]
    assert sorted(labels) == sorted(f"{p}_pop" for p in model.parameters.names)
    n_subjects = idata.posterior.sizes["subject"]
    labels = [t.get_text() for t in np.ravel(fit.plot_forest(subjects=True))[0].get_yticklabels()]
    assert len(labels) == len(model.parameters.names) * (1 + n_subjects)
    plt.close("all")


def test_fit_takes_posterior_predictive_in_python_only() -> None:
    import inspect

    import cogtestbed as ct

    param = inspect.signature(ct.fit).parameters["posterior_predictive"]
    assert param.default is False
    from cogtestbed.studies.study_options import FitSampling

    assert FitSampling().posterior_predictive is False
