"""Bayesian (PyMC) fits behind the :class:`~cogtestbed.inference.base.CognitiveModel` contract.

The contract a model implements — ``pymc_model(trials, hierarchical=True) -> pm.Model`` — is
kept small by this module doing the generic part:

1. :func:`subject_parameters` declares every parameter of a :class:`ParameterSet` in the
   current ``pm.Model`` and returns per-subject tensors.  A model's ``pymc_model`` calls it, then
   writes only its likelihood.  Naming convention (generic code relies on it):

   =====================  ===============================================================
   ``{p}_mu``             population mean on the unconstrained scale (hierarchical only),
                          prior ``Normal(p.prior_mean, p.prior_sd)``
   ``{p}_sigma``          population SD on the unconstrained scale (hierarchical only),
                          prior ``HalfNormal(sd_scale · p.prior_sd)``
   ``{p}_z``              non-centred subject offsets ``Normal(0, 1)``, dims ``subject``
   ``{p}_u``              centred subject values on the unconstrained scale (a parameter the
                          model declares in ``centred_parameters``; also the independent
                          subjects of ``hierarchical=False``), dims ``subject``
   ``{p}``                subject values on the natural scale (Deterministic, dims ``subject``)
   ``{p}_pop``            population median on the natural scale, ``constrain({p}_mu)``
   =====================  ===============================================================

   Subject ``i`` has ``u_i = {p}_mu + {p}_sigma · {p}_z[i]`` (non-centred, Papaspiliopoulos
   et al. 2007) and ``{p}[i] = constrain(u_i)`` with the parameter's own transform (logit /
   log / identity).  A parameter named in ``centred`` is sampled centred instead,
   ``u_i ~ Normal({p}_mu, {p}_sigma)``: the same prior, the better geometry when every subject's
   data pin ``u_i`` more tightly than the population spread (Papaspiliopoulos et al. 2007;
   Betancourt & Girolami 2015), where non-centred offsets correlate with ``{p}_mu``.
   With ``hierarchical=False`` subjects are independent:
   ``u_i ~ Normal(p.prior_mean, p.prior_sd)``.  The model has coords ``subject`` (the trial
   table's subject ids, table order) and one observed variable whose pointwise log-likelihood
   is stored for PSIS-LOO.

2. :func:`fit_hierarchical` samples any such model — nutpie when installed, PyMC's NUTS
   otherwise — and returns :class:`BayesFit`: ArviZ ``InferenceData`` (posterior, sample
   stats, log-likelihood) plus :class:`Diagnostics` (R-hat, bulk/tail ESS, divergences), with a
   :class:`ConvergenceWarning` when a threshold fails (Vehtari et al. 2021: R-hat ≤ 1.01,
   ESS ≥ 100 per chain, no divergences).

3. :func:`loo` / :func:`compare_loo` compare fits by PSIS-LOO (Vehtari, Gelman & Gabry 2017).

4. :func:`kernel_pymc_model` is the one PyMC builder of every model with a likelihood: the
   model's pointwise kernel (the :class:`~cogtestbed.inference.base.CognitiveModel` contract)
   wrapped in :func:`pointwise_loglik_op`, the subject arrays pooled by
   :func:`pool_model_arrays`, the parameters from :func:`subject_parameters`.  A model declares
   only its data packing (``observation_fields``, ``observation_mask``, ``kernel_columns``).

The parts live in :mod:`~cogtestbed.inference.hierarchical_op` (the likelihood Op),
:mod:`~cogtestbed.inference.hierarchical_diagnostics` (diagnostics, :class:`BayesFit`) and
:mod:`~cogtestbed.inference.hierarchical_sampling` (:func:`fit_hierarchical`); this module names them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.centring import centred_parameters
from cogtestbed.inference.hierarchical_diagnostics import (
    ESS_MIN_PER_CHAIN,
    RHAT_MAX,
    BayesFit,
    ConvergenceWarning,
    Diagnostics,
    diagnose,
)
from cogtestbed.inference.hierarchical_op import (
    SD_SCALE,
    observe_pointwise,
    pointwise_loglik_op,
    pool_model_arrays,
    pool_subject_arrays,
)
from cogtestbed.inference.hierarchical_sampling import (
    SAMPLERS,
    TARGET_ACCEPT,
    Sampler,
    fit_hierarchical,
    nutpie_available,
    on_identified_subjects,
)
from cogtestbed.parameters import Parameter, ParameterSet

#: The family's public names: this module's own and those of its parts, re-exported.
__all__ = [
    "BayesFit", "compare_loo", "constrain", "ConvergenceWarning", "diagnose", "Diagnostics", "ESS_MIN_PER_CHAIN",
    "fit_hierarchical", "FORM_SD_SCALE", "forms_pymc_model", "kernel_pymc_model", "loo", "nutpie_available",
    "observe_pointwise", "on_identified_subjects", "pointwise_loglik_op", "pool_model_arrays", "pool_subject_arrays",
    "RHAT_MAX", "sample_hierarchical_prior", "Sampler", "SAMPLERS", "SD_SCALE", "subject_parameters", "SubjectParams",
    "TARGET_ACCEPT",
]



# ----------------------------------------------------------------------------- transforms
def constrain(p: Parameter, z: Any) -> Any:
    """Pytensor version of :meth:`Parameter.to_constrained` (sigmoid / exp / identity)."""
    import pytensor.tensor as pt

    if p.transform == "logit":
        return p.lower + (p.upper - p.lower) * pt.sigmoid(z)
    if p.transform == "log":
        return p.lower + pt.exp(z)
    return z


@dataclass(frozen=True)
class SubjectParams:
    """Per-subject tensors: ``natural[p]`` (bounded scale) and ``unconstrained[p]``."""

    natural: dict[str, Any]
    unconstrained: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.natural[name]


def subject_parameters(
    parameters: ParameterSet,
    hierarchical: bool = True,
    dims: str = "subject",
    sd_scale: float = SD_SCALE,
    centred: Sequence[str] = (),
    shifts: Mapping[str, Any] | None = None,
) -> SubjectParams:
    """Declare ``parameters`` in the model on the context stack (see module table); the
    parameters named in ``centred`` are sampled centred (hierarchical models only).  ``shifts``
    adds a per-subject tensor to a parameter's unconstrained value (the crossed prompt-form effect
    of :func:`forms_pymc_model`).

    Must be called inside ``with pm.Model(coords={dims: ...})``.
    """
    import pymc as pm

    unknown = sorted(set(centred) - set(parameters.names))
    if unknown:
        raise InputError(f"centred parameters {unknown} are not parameters of {parameters.owner} "
                         f"({', '.join(parameters.names)})")
    natural: dict[str, Any] = {}
    unconstrained: dict[str, Any] = {}
    for p in parameters:
        if hierarchical:
            mu = pm.Normal(f"{p.name}_mu", p.prior_mean, p.prior_sd)
            sigma = pm.HalfNormal(f"{p.name}_sigma", sd_scale * p.prior_sd)
            if p.name in centred:
                u = pm.Normal(f"{p.name}_u", mu, sigma, dims=dims)
            else:
                u = mu + sigma * pm.Normal(f"{p.name}_z", 0.0, 1.0, dims=dims)
            pm.Deterministic(f"{p.name}_pop", constrain(p, mu))
        else:
            u = pm.Normal(f"{p.name}_u", p.prior_mean, p.prior_sd, dims=dims)
        if shifts and p.name in shifts:
            u = u + shifts[p.name]
        unconstrained[p.name] = u
        natural[p.name] = pm.Deterministic(p.name, constrain(p, u), dims=dims)
    return SubjectParams(natural, unconstrained)


def sample_hierarchical_prior(
    parameters: ParameterSet, n_subjects: int, rng: np.random.Generator, sd_scale: float = SD_SCALE
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One draw of the hierarchical prior of :func:`subject_parameters` (numpy).

    Returns (population values ``{p}_mu``/``{p}_sigma``/``{p}_pop``, natural subject values, inside
    every parameter's bounds: :meth:`~cogtestbed.parameters.Parameter.inside`).
    Simulating from it and fitting with the same model is what makes coverage and SBC exact.
    """
    pop: dict[str, float] = {}
    subj: dict[str, np.ndarray] = {}
    for p in parameters:
        mu = rng.normal(p.prior_mean, p.prior_sd)
        sigma = abs(rng.normal(0.0, sd_scale * p.prior_sd))
        z = rng.normal(size=n_subjects)
        pop[f"{p.name}_mu"], pop[f"{p.name}_sigma"] = float(mu), float(sigma)
        pop[f"{p.name}_pop"] = float(p.inside(p.to_constrained(mu)))
        subj[p.name] = p.inside(p.to_constrained(mu + sigma * z))
    return pop, subj


def _pooled_and_centred(model: Any, trials: pd.DataFrame, choose: bool
                        ) -> tuple[list[Any], np.ndarray, dict[str, np.ndarray], tuple[str, ...]]:
    """The subject ids, observation subject index and pooled kernel arrays of ``trials``
    (:func:`pool_model_arrays`), and the parameters the fit samples centred: the model's declared ones and, where
    ``choose`` (a hierarchical model without form effects, whose subjects' estimates would carry their forms'
    shifts), those the subjects' data pin (:func:`~cogtestbed.inference.centring.centred_parameters`)."""
    data = model.subject_data(trials)
    idx, arrays = pool_subject_arrays(data, model.observation_fields, model.observation_mask)
    centred = centred_parameters(model, data) if choose else tuple(getattr(model, "centred_parameters", ()))
    return list(data), idx, arrays, centred


def kernel_pymc_model(model: Any, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
    """The generic PyMC model of a :class:`~cogtestbed.inference.base.CognitiveModel`.

    Non-centred subject parameters (:func:`subject_parameters`; centred for the model's declared
    ``centred_parameters`` and, in a hierarchical model, for those its subjects' data pin:
    :mod:`~cogtestbed.inference.centring`), stacked into the kernel's
    columns (``kernel_columns``: free parameters or constants), the pooled observation arrays as
    ``pm.Data`` (so a cached nutpie compilation is re-pointed at new data of the same shape), and
    one observed variable ``model.observed_name`` whose pointwise logp is the model's kernel
    through :func:`pointwise_loglik_op` (exact gradients for NUTS, per-observation
    log-likelihood for PSIS-LOO).  The first observation field is the observed value.
    """
    import pymc as pm
    import pytensor.tensor as pt

    kernel = model.kernel()
    if kernel is None:
        raise NotImplementedError(f"model {model.name!r} has no pointwise likelihood kernel")
    op = pointwise_loglik_op(kernel, model.name)
    subjects, idx, arrays, centred = _pooled_and_centred(model, trials, hierarchical)
    columns = model.kernel_columns or model.parameters.names
    with pm.Model(coords={"subject": subjects, "obs": np.arange(idx.shape[0])}) as m:
        theta = subject_parameters(model.parameters, hierarchical, centred=centred)
        first = theta[model.parameters.names[0]]
        mat = pt.stack([theta[c] if isinstance(c, str) else pt.zeros_like(first) + float(c)
                        for c in columns], axis=1)
        subj = pm.Data("obs_subject", idx, dims="obs")
        data = [pm.Data(name, arr, dims="obs" if arr.ndim == 1 else None)
                for name, arr in arrays.items()]
        observe_pointwise(model.observed_name, op, mat, subj, *data)
    m.cogtestbed_key = ("kernel", model.name, hierarchical)
    return m


#: Prior scale of a prompt form's SD on a parameter's unconstrained scale (HalfNormal): a form
#: shifting a logit by 1 is a large wording effect; a choice of ours, no paper sets it.
FORM_SD_SCALE = 0.5


def forms_pymc_model(model: Any, trials: pd.DataFrame, form_parameters: Sequence[str],
                     form_sd_scale: float = FORM_SD_SCALE) -> Any:
    """The hierarchical model of :func:`kernel_pymc_model` with **crossed subject and prompt-form
    effects**: every parameter in ``form_parameters`` gets, besides its subject effect, a
    non-centred form effect ``{p}_form_sigma · {p}_form_z[form]`` (``{p}_form_sigma ~
    HalfNormal(form_sd_scale)``, dims ``form``) added on its unconstrained scale, the form being
    the subject's ``form`` column.  ``{p}_form_sigma`` is the between-form SD, estimated with its
    posterior (sample it with :func:`fit_hierarchical`, which reports R-hat, ESS and divergences)."""
    import pymc as pm
    import pytensor.tensor as pt

    if "form" not in trials.columns:
        raise InputError("a forms model needs the table's 'form' column (simulate or run with `forms`)")
    unknown = [p for p in form_parameters if p not in model.parameters.names]
    if unknown or not form_parameters:
        raise InputError(f"form effects on {list(form_parameters)}: give parameters of {model.name} "
                         f"({', '.join(model.parameters.names)})")
    kernel = model.kernel()
    if kernel is None:
        raise NotImplementedError(f"model {model.name!r} has no pointwise likelihood kernel")
    op = pointwise_loglik_op(kernel, model.name)
    subjects, idx, arrays, centred = _pooled_and_centred(model, trials, False)
    form_of = trials.groupby("subject", sort=False)["form"].first()
    forms, form_idx = np.unique(form_of.loc[list(subjects)].to_numpy(dtype=np.int64), return_inverse=True)
    columns = model.kernel_columns or model.parameters.names
    coords = {"subject": subjects, "obs": np.arange(idx.shape[0]), "form": forms}
    with pm.Model(coords=coords) as m:
        shifts = {}
        # pm.Data, not a constant: a compiled sampler is reused for another table of the same shape
        subject_form = pm.Data("subject_form", form_idx.astype(np.int64), dims="subject")
        for name in form_parameters:
            sigma = pm.HalfNormal(f"{name}_form_sigma", form_sd_scale)
            z = pm.Normal(f"{name}_form_z", 0.0, 1.0, dims="form")
            shifts[name] = (sigma * z)[subject_form]
        theta = subject_parameters(model.parameters, True, centred=centred, shifts=shifts)
        first = theta[model.parameters.names[0]]
        mat = pt.stack([theta[c] if isinstance(c, str) else pt.zeros_like(first) + float(c)
                        for c in columns], axis=1)
        subj = pm.Data("obs_subject", idx, dims="obs")
        data = [pm.Data(name, arr, dims="obs" if arr.ndim == 1 else None) for name, arr in arrays.items()]
        observe_pointwise(model.observed_name, op, mat, subj, *data)
    m.cogtestbed_key = ("kernel-forms", model.name, tuple(form_parameters))
    return m


# ----------------------------------------------------------------------------- model comparison
def loo(fit: BayesFit | Any, by_subject: bool = True) -> Any:
    """PSIS-LOO (ArviZ ``az.loo``) of a fit; ``by_subject`` (default) leaves out whole subjects.

    Leaving out one subject (the sum of its trials' log-likelihood) is the default because in a
    sequential learning model single trials are not exchangeable, and trials whose probability
    is clipped (CogBench's [1e-5, 1 − 1e-5]) have a constant log-likelihood that breaks the
    Pareto-k fit.  ``by_subject=False`` gives the usual per-trial LOO.
    """
    import arviz as az

    idata = fit.idata if isinstance(fit, BayesFit) else fit
    if not by_subject:
        return az.loo(idata, pointwise=True)
    ll = idata.log_likelihood
    name = next(iter(ll.data_vars))
    obs_subject = idata.constant_data["obs_subject"].values
    arr = ll[name].values  # chain, draw, obs
    summed = np.stack([arr[..., obs_subject == s].sum(-1) for s in np.unique(obs_subject)], -1)
    import xarray as xr

    new = idata.copy()
    new.log_likelihood = xr.Dataset({name: (("chain", "draw", "subject_obs"), summed)})
    return az.loo(new, pointwise=True)


def compare_loo(fits: Mapping[str, BayesFit | Any], by_subject: bool = True) -> pd.DataFrame:
    """ArviZ ``compare`` of several fits by PSIS-LOO (rank 0 = best expected log predictive)."""
    import arviz as az

    return az.compare({k: loo(v, by_subject) for k, v in fits.items()})
