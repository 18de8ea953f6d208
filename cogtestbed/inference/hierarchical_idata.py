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
* the warm-up groups (``warmup_posterior``, ``warmup_sample_stats``) only with ``keep_warmup``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

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
    return idata


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
    draws = binary_posterior_predictive(idata, name, idata.observed_data[name].values, seed)
    if "posterior_predictive" in idata.groups():
        delattr(idata, "posterior_predictive")
    idata.add_groups(posterior_predictive=draws)
    return idata
