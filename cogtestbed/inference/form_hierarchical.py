"""The hierarchical fit with crossed subject and prompt-form effects, and its form SD.

:func:`~cogtestbed.inference.hierarchical.forms_pymc_model` is the model: on every named
parameter's unconstrained scale, subject ``i`` seen in form ``f`` has

    u_i = mu + sigma · z_i + form_sigma · form_z[f],   z_i, form_z[f] ~ Normal(0, 1),

non-centred in both factors (Papaspiliopoulos et al. 2007: with a few forms and subjects whose
data pin ``u_i`` loosely, the centred model's funnel between ``form_sigma`` and the form effects
stalls NUTS), ``mu ~ Normal(prior_mean, prior_sd)``, ``sigma ~ HalfNormal(0.5 · prior_sd)`` (as
every hierarchical model of :mod:`~cogtestbed.inference.hierarchical`) and ``form_sigma ~
HalfNormal(0.5)`` (:data:`~cogtestbed.inference.hierarchical.FORM_SD_SCALE`: a form moving a
logit by 1 is a large wording effect).  :func:`fit_forms_hierarchical` samples it with a higher
target acceptance (:data:`FORM_TARGET_ACCEPT`) and reports, besides the usual diagnostics, the
posterior of every ``{p}_form_sigma`` (:func:`form_sd_summary`): mean, median, SD, the central
interval, and its own R-hat and ESS.  ``cogtestbed fit --method hierarchical`` and
:func:`cogtestbed.fit` take this route when the table has a ``form`` column with two or more forms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.forms import FORM_COLUMN
from cogtestbed.errors import InputError
from cogtestbed.inference.hierarchical import BayesFit, fit_hierarchical, forms_pymc_model

#: NUTS target acceptance of the forms model (the crossed effects' posterior is curved where a
#: form SD nears 0; smaller steps there avoid divergences).  A choice of ours.
FORM_TARGET_ACCEPT = 0.95
#: Level of the form SD's central posterior interval.
FORM_SD_LEVEL = 0.95


def has_forms(table: pd.DataFrame) -> bool:
    """Whether ``table`` was run across two or more prompt forms."""
    return FORM_COLUMN in table.columns and int(table[FORM_COLUMN].nunique(dropna=True)) >= 2


def resolve_form_parameters(model: Any, requested: Sequence[str] | None = None) -> tuple[str, ...]:
    """The parameters given a form effect: ``requested`` (checked against the model), else all of
    the model's parameters (a wording can move any of them)."""
    names = tuple(model.parameters.names)
    if not requested:
        return names
    chosen = tuple(dict.fromkeys(str(p).strip() for p in requested if str(p).strip()))
    unknown = [p for p in chosen if p not in names]
    if unknown or not chosen:
        raise InputError(f"`form_effects` {','.join(chosen) or '(none)'}: give parameters of {model.name} "
                         f"({', '.join(names)})")
    return chosen


def form_sd_summary(idata: Any, parameters: Sequence[str], level: float = FORM_SD_LEVEL) -> dict[str, Any]:
    """The posterior of each parameter's between-form SD (``{p}_form_sigma``, unconstrained scale):
    mean, median, SD, central ``level`` interval, R-hat and bulk/tail ESS."""
    import arviz as az

    post = idata.posterior
    out: dict[str, Any] = {}
    for p in parameters:
        name = f"{p}_form_sigma"
        draws = post[name].values
        flat = draws.reshape(-1)
        lo, hi = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2])
        out[p] = {"mean": float(flat.mean()), "median": float(np.median(flat)), "sd": float(flat.std(ddof=1)),
                  "interval": [float(lo), float(hi)], "level": level, "scale": "unconstrained",
                  "r_hat": float(az.rhat(draws)), "ess_bulk": float(az.ess(draws, method="bulk")),
                  "ess_tail": float(az.ess(draws, method="tail"))}
    return out


def form_effects_summary(idata: Any, parameters: Sequence[str]) -> dict[str, Any]:
    """Each form's posterior mean effect ``form_sigma · form_z[f]`` of each parameter (by form id)."""
    post = idata.posterior
    # the offsets form_z are the sampler's (in unconstrained_posterior, not the posterior)
    offsets = idata.unconstrained_posterior if "unconstrained_posterior" in idata.groups() else post
    out: dict[str, Any] = {}
    for p in parameters:
        effect = (post[f"{p}_form_sigma"] * offsets[f"{p}_form_z"]).mean(("chain", "draw"))
        out[p] = {str(int(f)): float(v) for f, v in zip(effect["form"].values, effect.values, strict=True)}
    return out


def fit_forms_hierarchical(model: Any, table: pd.DataFrame, form_parameters: Sequence[str] | None = None, *,
                           draws: int = 1000, tune: int | None = None, chains: int = 4, seed: int = 0,
                           max_draws: int | None = None, warn: bool = True, log_likelihood: bool = True,
                           level: float = FORM_SD_LEVEL, cores: int | None = None) -> BayesFit:
    """Sample the crossed subject × form model (module docstring) of ``model`` on ``table`` (with
    its ``form`` column); the returned fit's ``form_sd`` holds :func:`form_sd_summary` and
    ``form_effects`` each form's posterior mean effect."""
    if not has_forms(table):
        raise InputError("a fit with form effects needs a table run across two or more prompt forms "
                         "(its 'form' column; simulate or run with `forms`)")
    params = resolve_form_parameters(model, form_parameters)
    target = max(FORM_TARGET_ACCEPT, float(getattr(model, "target_accept", None) or 0.0))
    fit = fit_hierarchical(forms_pymc_model(model, table, params), table, draws=draws,
                           tune=draws if tune is None else tune, chains=chains, seed=seed, max_draws=max_draws,
                           warn=warn, log_likelihood=log_likelihood, target_accept=target, cores=cores)
    return dataclasses.replace(fit, model_name=getattr(model, "name", ""),
                               choice_options=getattr(model, "choice_options", None),
                               form_sd=form_sd_summary(fit.idata, params, level),
                               form_effects=form_effects_summary(fit.idata, params))
