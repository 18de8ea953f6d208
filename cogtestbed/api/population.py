"""Human populations: build one from a hierarchical fit, read a shipped or saved one.

A population is the posterior of a hierarchical fit's group parameters, kept as draws
(:class:`~cogtestbed.inference.population.Population`); ``simulate``, ``recover``, ``power`` and
``plan`` take one as ``population="human:NAME"`` (``--population``).  :func:`build_population`
fits a trial table hierarchically and keeps the fit as a population; :func:`population_from_fit`
keeps a fit you already have; :func:`population` reads one (``human:NAME`` or a file).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError
from cogtestbed.request import build, derive_api
from cogtestbed.studies.population_options import BuildPopulationRequest, PopulationFromFitRequest

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.inference.population import Population


@public()
def population(name: str) -> Population:
    """A population: ``"human:NAME"`` (one the package ships; a unique prefix is enough, e.g.
    ``human:cogbench`` for ``human:cogbench-instrumental``) or the path of a saved population file.

    Parameters
    ----------
    name : str
        ``human:NAME`` (a shipped population, ``ct.populations()``) or a population file.

    Returns
    -------
    Population
        The posterior draws of the fit's group parameters.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> pop = ct.population("human:shahar2019")
    >>> pop.experiment, pop.model, pop.subjects
    ('two-step', 'hybrid', 40)
    """
    from cogtestbed.inference.population import load_population

    return load_population(name)


@public()
def populations() -> list[str]:
    """The populations the package ships, as ``human:NAME``.

    Returns
    -------
    list of str
        The shipped populations' names (``human:NAME``).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> "human:shahar2019" in ct.populations()
    True
    """
    from cogtestbed.inference.population import PREFIX, shipped_populations

    return [f"{PREFIX}{n}" for n in shipped_populations()]


@public(paths=("table_or_path",))
@derive_api(PopulationFromFitRequest)
def population_from_fit(fit: Any, **options: Any) -> Population:
    """A population from a hierarchical fit of ``model`` (a :class:`~cogtestbed.inference.hierarchical.BayesFit`,
    e.g. ``ct.fit(..., method="hierarchical")``): its posterior draws of every parameter's population
    mean and SD; with ``table_or_path`` (the fitted table, or its path) also each subject's MLE, which a
    plan of an LLM against these people compares with.  A fit with R-hat above 1.01 or divergent
    transitions is refused unless ``allow_unconverged``.

    Returns
    -------
    Population
        The hierarchical fit's group parameters as a population.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> ct.population_from_fit(ct.fit("instrumental-learning", trials, model="rw-pm"))
    Traceback (most recent call last):
    ...
    cogtestbed.errors.InputError: ...
    """
    from cogtestbed.api.core import get_experiment, read_table
    from cogtestbed.inference.population import population_from_fit as from_fit

    req = build(PopulationFromFitRequest, {**options, "fit": fit})
    experiment, model, name, table_or_path, source, allow_unconverged = (
        req.experiment, req.model, req.name, req.table_or_path, req.provenance, req.allow_unconverged)
    exp = get_experiment(experiment)
    table = None if table_or_path is None else read_table(exp, table_or_path)[0]
    return from_fit(fit, name=name, experiment=exp.name, model=exp.model(model), trials=table, source=source,
                    allow_unconverged=allow_unconverged)


@public(paths=("table_or_path",))
@derive_api(BuildPopulationRequest)
def build_population(experiment: str | ExperimentSpec, table_or_path: pd.DataFrame | str | os.PathLike[str],
                     **options: Any) -> Population:
    """Fit ``model`` hierarchically to ``table_or_path`` (a trial table or a file any importer of the
    experiment reads: ``from_source``) and keep the fit as a population (``cogtestbed population
    build``): ``draws`` per chain after ``tune`` tuning steps (None: as many as the draws), doubled
    up to ``max_draws`` while only R-hat or ESS fail; refused above R-hat 1.01 or with divergences
    unless ``allow_unconverged``.  ``output``: also save it (a ``.json`` file; ``force`` overwrites).

    Returns
    -------
    Population
        The population fitted (a hierarchical fit: minutes), written to ``output`` when given.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.build_population("instrumental-learning", "no-such-file.parquet", model="rw-pm", name="mine")
    Traceback (most recent call last):
    ...
    cogtestbed.errors.DataError: ...
    """
    from pathlib import Path

    from cogtestbed.api.core import get_experiment, read_table
    from cogtestbed.inference.hierarchical import fit_hierarchical
    from cogtestbed.inference.population import population_from_fit as from_fit
    from cogtestbed.outputs import check_output_file, claim_file

    req = build(BuildPopulationRequest, {**options, "experiment": experiment, "table_or_path": table_or_path})
    model, name, source, from_source, draws, chains, max_draws, seed, allow_unconverged, output, force = (
        req.model, req.name, req.provenance, req.from_source, req.draws, req.chains, req.max_draws, req.seed,
        req.allow_unconverged, req.output, req.force)
    tune = draws if req.tune is None else req.tune
    if tune < 1:
        raise InputError(f"tune must be at least 1 tuning step per chain, got {tune}")
    exp = get_experiment(experiment)
    cog = exp.model(model)
    out = None if output is None else Path(output)
    if out is not None:
        check_output_file(out, force, ".json")
    table, _ = read_table(exp, table_or_path, from_source)
    fit = fit_hierarchical(cog, table, draws=draws, tune=tune, chains=chains, seed=seed, max_draws=max_draws,
                           warn=False, log_likelihood=False, sampler=req.sampler)
    pop = from_fit(fit, name=name, experiment=exp.name, model=cog, trials=table, source=source,
                   allow_unconverged=allow_unconverged)
    if out is not None:
        with claim_file(out, force):
            pop.save(out)
    return pop


def describe_population(pop: Population) -> list[str]:
    """Lines describing a population: its source, fit, and each parameter's population median and
    between-subject SD with their 95 % posterior intervals."""
    from cogtestbed.inference.population import POPULATION_GATE, gate_failures
    from cogtestbed.registry import get_experiment

    params = get_experiment(pop.experiment).model(pop.model).parameters
    pop.check(params)
    fit = pop.fit
    rhat = fit.get("max_rhat")
    lines = [f"{pop.name}: {pop.experiment}, model {pop.model}, {pop.subjects} subjects"
             + (f" x {pop.trials} trials (median)" if pop.trials else ""),
             f"  source: {pop.source or 'not given'}",
             f"  fit: {fit.get('chains')} chains x {fit.get('draws')} draws ({fit.get('sampler')}), max R-hat "
             f"{'null' if rhat is None else f'{rhat:.4f}'}, {fit.get('divergences')} divergences; {pop.n_draws} "
             "posterior draws kept"]
    failed = gate_failures(fit)
    verdict = "passed" if not failed else "FAILED: " + "; ".join(failed)
    lines.append(f"  population gate ({POPULATION_GATE}): {verdict}")
    if fit.get("min_ess_tail") is not None:  # reported beside the gate, not part of it
        lines.append(f"  min bulk / tail ESS {fit.get('min_ess_bulk', float('nan')):.0f} / "
                     f"{fit.get('min_ess_tail', float('nan')):.0f} over every variable (not part of the gate)")
    for p, row in pop.summary(params).items():
        lo, hi = row["median_interval"]
        slo, shi = row["sd_interval"]
        lines.append(f"  {p}: population median {row['median']:.4g} [{lo:.4g}, {hi:.4g}], between-subject SD "
                     f"({row['scale']} scale) {row['sd_unconstrained']:.3g} [{slo:.3g}, {shi:.3g}]")
    return lines
