"""The ArviZ ``InferenceData`` of a hierarchical fit shaped as PyMC users expect.

:func:`fit_hierarchical <cogtestbed.inference.hierarchical_sampling.fit_hierarchical>` hands every
sampler's output (nutpie, PyMC's NUTS, the Metropolis-within-Gibbs steps) to :func:`shape_idata`,
which works on the :class:`~cogtestbed.inference.base.CognitiveModel` contract and the ``pm.Model``
alone, never on an experiment:

* ``observed_data``: the observed variable of the model (``choice``, ``estimate``, ...) on its
  ``obs`` dimension, as ``pm.sample`` writes it; with ``posterior_predictive=True`` (models whose
  observation is a binary choice, :attr:`~cogtestbed.inference.base.CognitiveModel.choice_options`
  = 2) a ``posterior_predictive`` group of the same shape, so ``az.plot_ppc(idata)`` works;
* ``posterior``: the model's parameters only (population ``{p}_mu``, ``{p}_sigma``, ``{p}_pop``,
  the subjects' natural-scale ``{p}`` and any other parameter of the model), population first, in
  the model's order; the sampler's internals — transformed values (``k_sigma_log__``), the
  non-centred offsets (``k_z``: standard-normal free variables) and centred subject values on the
  unconstrained scale (``k_u`` where ``k`` is stored) — go to ArviZ's ``unconstrained_posterior``
  group, where diagnostics can still read them;
* every dimension named: a data array's axis PyMC leaves as ``{name}_dim_{i}`` takes the name the
  model declares (:attr:`~cogtestbed.inference.base.CognitiveModel.data_dims`), else ``obs`` where
  its length is the number of observations, else ``{name}_{i}``;
* every dimension of the data groups (``observed_data``, ``constant_data``, ``log_likelihood``,
  ``posterior_predictive``) with a coordinate (``obs`` 0..n-1 where the model declares none);
* the variables' roles in the fit's own attrs: ``idata.attrs["variables"]`` and each posterior
  variable's ``description`` (:data:`ROLES`: ``{p}_mu`` and ``{p}_sigma`` on the unconstrained
  scale, ``{p}_pop`` the population median on the natural scale, ``{p}`` the subjects');
* the warm-up groups (``warmup_posterior``, ``warmup_sample_stats``) only with ``keep_warmup``.

The result is a ``FitInferenceData`` (:func:`fit_idata_class`): an ArviZ ``InferenceData`` whose missing
``posterior_predictive`` group is an error naming the way to draw it, so ``az.plot_ppc(fit.idata)``
either plots or says ``posterior_predictive=True`` / ``fit.with_posterior_predictive()``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: What each posterior variable of a hierarchical fit is ({p}: a parameter of the model), as the fit's attrs state it.
ROLES = {
    "{p}_mu": "population mean of {p} on the unconstrained scale (logit / log / identity of the natural scale)",
    "{p}_sigma": "between-subject SD of {p} on the unconstrained scale",
    "{p}_pop": "population median of {p} on the natural scale: the transform of {p}_mu back to {p}'s own scale",
    "{p}": "each subject's {p} on the natural scale (dimension subject)",
}
#: How ``posterior_predictive`` is drawn, as the error of a fit without it says.
PREDICTIVE_WAY = ("this fit drew no posterior predictive: fit with posterior_predictive=True "
                  "(ct.fit(..., method='hierarchical', posterior_predictive=True)) or call "
                  "fit.with_posterior_predictive(), then az.plot_ppc(fit.idata)")
DATA_GROUPS = ("observed_data", "constant_data", "log_likelihood", "posterior_predictive")


class NoPosteriorPredictive(LookupError):
    """A fit's InferenceData asked for the ``posterior_predictive`` group it was not given."""


def _fit_class() -> type:
    import arviz as az

    class FitInferenceData(az.InferenceData):
        """ArviZ's InferenceData whose missing ``posterior_predictive`` group raises
        :class:`NoPosteriorPredictive` naming the way to draw it (:data:`PREDICTIVE_WAY`)."""

        def __getattr__(self, name: str) -> Any:
            if name == "posterior_predictive" and not self.__dict__.get("_extending", False):
                raise NoPosteriorPredictive(PREDICTIVE_WAY)
            raise AttributeError(name)

        def __reduce__(self) -> tuple[Any, ...]:
            return _restore, (dict(self.__dict__),)

        def extend(self, *args: Any, **kwargs: Any) -> Any:  # ArviZ asks hasattr(self, group) while it extends
            self.__dict__["_extending"] = True
            try:
                return super().extend(*args, **kwargs)
            finally:
                self.__dict__.pop("_extending", None)

    FitInferenceData.__module__ = __name__
    FitInferenceData.__qualname__ = "FitInferenceData"
    return FitInferenceData


#: ArviZ's group for what the sampler moved on its own scale rather than the model's parameters.
INTERNALS_GROUP = "unconstrained_posterior"
WARMUP_GROUPS = ("warmup_posterior", "warmup_sample_stats", "warmup_log_likelihood", "warmup_posterior_predictive")


def sampler_internals(pm_model: Any, names: list[str]) -> list[str]:
    """The names among ``names`` (a posterior's variables) that are the sampler's, not the model's:
    transformed values (``*__``), non-centred offsets (free ``*_z`` variables with a Normal(0, 1) prior) and ``{p}_u``
    where ``{p}`` is also stored (a centred subject value on the unconstrained scale)."""
    # the contract's offsets are named {p}_z (subject_parameters); a {p}_mu whose prior is Normal(0, 1)
    # is a parameter
    offsets = {rv.name for rv in pm_model.free_RVs if rv.name.endswith("_z") and _standard_normal(rv)}
    stored = set(names)
    return [n for n in names if n.endswith("__") or n in offsets
            or (n.endswith("_u") and n[:-2] in stored)]


def _standard_normal(rv: Any) -> bool:
    """Whether a free variable is Normal(0, 1) (constant location 0 and scale 1)."""
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.random.basic import NormalRV

    op = getattr(rv.owner, "op", None)
    if not isinstance(op, NormalRV):
        return False
    try:
        loc, scale = (float(get_underlying_scalar_constant_value(v)) for v in rv.owner.inputs[-2:])
    except Exception:  # noqa: BLE001 - a location or scale that is not a constant: a parameter's prior
        return False
    return loc == 0.0 and scale == 1.0


def _ordered(post: Any, pm_model: Any) -> list[str]:
    """The posterior's variables, population (no subject dimension) first, each part in the model's order."""
    order = {name: k for k, name in enumerate(pm_model.named_vars)}
    names = sorted(post.data_vars, key=lambda v: order.get(v, len(order)))
    return [v for v in names if len(post[v].dims) == 2] + [v for v in names if len(post[v].dims) > 2]


def _dim_names(name: str, dims: tuple[str, ...], shape: tuple[int, ...], declared: tuple[str, ...] | None,
               n_obs: int | None) -> dict[str, str]:
    """New names of the ``{name}_dim_{i}`` axes of one array (declared, ``obs``, else ``{name}_{i}``)."""
    out = {}
    for dim, size in zip(dims, shape, strict=True):
        m = re.fullmatch(rf"{re.escape(name)}_dim_(\d+)", dim)
        if m is None:
            continue
        i = int(m.group(1))
        if declared is not None and i < len(declared):
            out[dim] = declared[i]
        elif i == 0 and n_obs is not None and size == n_obs:
            out[dim] = "obs"
        else:
            out[dim] = f"{name}_{i}"
    return out


def name_dims(ds: Any, data_dims: Mapping[str, tuple[str, ...]], n_obs: int | None) -> Any:
    """``ds`` (an xarray Dataset) with each unnamed ``{var}_dim_{i}`` axis named (:func:`_dim_names`)."""
    renamed = {}
    for name, var in ds.data_vars.items():
        new = _dim_names(str(name), tuple(var.dims), tuple(var.shape), data_dims.get(str(name)), n_obs)
        if new:
            renamed[name] = var.rename(new)
    if not renamed:
        return ds
    import xarray as xr

    kept = {k: v for k, v in ds.data_vars.items() if k not in renamed}
    # a coordinate of an unnamed axis holds only 0..n-1: dropped with the axis's old name
    return xr.Dataset({**kept, **{k: v.drop_vars(list(v.coords), errors="ignore") for k, v in renamed.items()}},
                      attrs=ds.attrs)


def observations(pm_model: Any) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """Each observed variable's (dims, observed values), as ``pm.sample`` writes ``observed_data``
    (PyMC's ``find_observations``: a ``pm.Data`` behind a cast is read through it)."""
    from pymc.backends.arviz import find_observations

    out = {}
    for name, data in find_observations(pm_model).items():
        arr = np.asarray(data)
        dims = pm_model.named_vars_to_dims.get(name) or tuple(f"{name}_dim_{i}" for i in range(arr.ndim))
        out[name] = (tuple(dims), arr)
    return out


def binary_posterior_predictive(idata: Any, name: str, observed: np.ndarray, seed: int) -> Any:
    """Draws of a binary choice from its one-step-ahead predictive: at every observation, given the
    observed history, P(choice = observed) = exp(pointwise log-likelihood) under each posterior draw
    (Gelman et al. 2013, BDA3 Sec. 6.3, replicated data; for sequential learning models the
    prediction is one step ahead).  Seeded: the same fit and seed give the same draws."""
    import xarray as xr

    if "log_likelihood" not in idata.groups() or name not in idata.log_likelihood:
        raise InputError("posterior predictive draws need the pointwise log-likelihood (log_likelihood=True)")
    ll = idata.log_likelihood[name]
    p_obs = np.exp(ll.values)
    p_one = np.where(np.asarray(observed) == 1, p_obs, 1.0 - p_obs)
    draws = (np.random.default_rng(seed).random(p_one.shape) < p_one).astype(np.int64)
    return xr.Dataset({name: (ll.dims, draws)}, coords={d: ll.coords[d] for d in ll.dims if d in ll.coords})


def shape_idata(idata: Any, pm_model: Any, model: Any = None, *, keep_warmup: bool = False,
                posterior_predictive: bool = False, seed: int = 0) -> Any:
    """``idata`` shaped as in the module docstring (in place; returned).  ``model``: the
    :class:`~cogtestbed.inference.base.CognitiveModel` (its ``data_dims`` and ``choice_options``)."""
    import xarray as xr

    for group in WARMUP_GROUPS if not keep_warmup else ():
        if group in idata.groups():
            delattr(idata, group)
    post = idata.posterior
    internals = sampler_internals(pm_model, list(post.data_vars))
    if internals:
        moved = post[internals]
        if INTERNALS_GROUP in idata.groups():
            moved = xr.merge([idata[INTERNALS_GROUP], moved])
            delattr(idata, INTERNALS_GROUP)
        idata.add_groups({INTERNALS_GROUP: moved})
    idata.posterior = post[_ordered(post.drop_vars(internals), pm_model)]
    obs = observations(pm_model)
    n_obs = len(pm_model.coords["obs"]) if "obs" in pm_model.coords else None
    data_dims = dict(getattr(model, "data_dims", None) or {})
    if "observed_data" not in idata.groups() and obs:
        idata.add_groups(observed_data=xr.Dataset({k: (d, v) for k, (d, v) in obs.items()}))
    for group in ("constant_data", "observed_data", "posterior", INTERNALS_GROUP):
        if group in idata.groups():  # a posterior's vector is no observation array
            setattr(idata, group, name_dims(idata[group], data_dims, n_obs if "data" in group else None))
    if posterior_predictive:
        add_posterior_predictive(idata, getattr(model, "choice_options", None), seed,
                                 getattr(model, "name", "this model"))
    describe(idata, list(getattr(getattr(model, "parameters", None), "names", None) or []))
    with_coords(idata)
    return as_fit_idata(idata)


def as_fit_idata(idata: Any) -> Any:
    """``idata`` as a ``FitInferenceData`` (:func:`fit_idata_class`) (in place: the class only adds the named error)."""
    cls = fit_idata_class()
    if type(idata) is not cls and isinstance(idata, cls.__bases__[0]):
        idata.__class__ = cls
    return idata


def with_coords(idata: Any) -> Any:
    """Every dimension of the data groups (:data:`DATA_GROUPS`) with a coordinate: ``0..n-1`` where it has none."""
    for group in DATA_GROUPS:
        if group in idata.groups():
            ds = idata[group]
            missing = {d: np.arange(n) for d, n in ds.sizes.items() if d not in ds.coords}
            if missing:
                setattr(idata, group, ds.assign_coords(missing))
    return idata


def describe(idata: Any, names: list[str]) -> None:
    """The variables' roles (:data:`ROLES`) in ``idata.attrs["variables"]`` and each posterior variable's
    ``description`` attr."""
    roles = {pattern.format(p=p): text.format(p=p) for p in names for pattern, text in ROLES.items()}
    post = idata.posterior
    for name in post.data_vars:
        if str(name) in roles:
            post[name].attrs["description"] = roles[str(name)]
    idata.attrs["variables"] = "; ".join(f"{pattern}: {text}" for pattern, text in ROLES.items())
    post.attrs["variables"] = idata.attrs["variables"]


def add_posterior_predictive(idata: Any, choice_options: int | None, seed: int = 0,
                             model_name: str = "this model") -> Any:
    """Add (or replace) ``posterior_predictive``: replicated choices of a binary-choice model
    (``choice_options`` = 2, :func:`binary_posterior_predictive`) from its ``observed_data`` and
    ``log_likelihood``; any other model is refused in one line.  Returns ``idata``."""
    if choice_options != 2:
        raise InputError(f"{model_name}: posterior predictive draws are offered for models whose observation is a "
                         "binary choice (choice_options = 2)")
    if "observed_data" not in idata.groups() or len(idata.observed_data.data_vars) != 1:
        raise InputError(f"{model_name}: posterior predictive draws need the fit's one observed variable")
    name = str(next(iter(idata.observed_data.data_vars)))
    observed = idata.observed_data[name]
    if np.all(observed.values == np.round(observed.values)):  # choices as integers, as the replicated ones:
        idata.observed_data[name] = observed.astype(np.int64)  # ArviZ plots discrete data as discrete
    draws = binary_posterior_predictive(idata, name, idata.observed_data[name].values, seed)
    if "posterior_predictive" in idata.groups():
        delattr(idata, "posterior_predictive")
    idata.add_groups(posterior_predictive=draws)
    return with_coords(idata)


@functools.cache
def fit_idata_class() -> Any:
    """The ``FitInferenceData`` class (built on first use, so importing this module imports no ArviZ)."""
    return _fit_class()


def _restore(state: dict[str, Any]) -> Any:
    """A pickled ``FitInferenceData`` rebuilt (its class is built at run time, so pickle names this function)."""
    cls = fit_idata_class()
    out = cls.__new__(cls)
    out.__dict__.update(state)
    return out
