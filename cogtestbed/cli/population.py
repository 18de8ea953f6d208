"""``cogtestbed population``: list, show and build human populations (issue 52) — the posterior of
a hierarchical fit's group parameters that ``simulate``, ``recover``, ``power`` and ``plan`` take as
``--population human:NAME`` (:mod:`cogtestbed.api.population`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import LightGroup, app, console_err, print_json

population_app = typer.Typer(cls=LightGroup, no_args_is_help=True, add_completion=False,
                             help="Human populations: the posterior of a hierarchical fit's group parameters "
                                  "(list, show, build).")
app.add_typer(population_app, name="population")


@population_app.command("list")
def list_populations() -> None:
    """The populations the package ships (human:NAME)."""
    from cogtestbed.api.population import population, populations

    for name in populations():
        pop = population(name)
        typer.echo(f"{name}: {pop.experiment}, model {pop.model}, {pop.subjects} subjects ({pop.source})")


@population_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="human:NAME or a population file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the population's summary as JSON.")] = False,
) -> None:
    """A population's source, fit and each parameter's population median and between-subject SD
    (posterior median with a 95 % interval)."""
    from cogtestbed.api.population import describe_population, population
    from cogtestbed.registry import get_experiment

    pop = population(name)
    if as_json:
        params = get_experiment(pop.experiment).model(pop.model).parameters
        print_json({"name": pop.name, "experiment": pop.experiment, "model": pop.model, "source": pop.source,
                    "subjects": pop.subjects, "trials": pop.trials, "draws": pop.n_draws, "fit": pop.fit,
                    "parameters": pop.summary(params)})
        return
    typer.echo("\n".join(describe_population(pop)))


@population_app.command("build")
def build(
    experiment: Annotated[str, typer.Argument(help="Experiment of the trial table, e.g. two-step.")],
    table: Annotated[Path, typer.Argument(help="Trial table of people (Parquet/CSV, or a file an importer of the "
                                               "experiment reads).")],
    model: Annotated[str, typer.Option(help="Model fitted hierarchically, e.g. hybrid.")],
    name: Annotated[str, typer.Option(help="The population's name.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Population file to write (.json).")],
    source: Annotated[str, typer.Option("--source", help="Where the data came from (paper, data set).")] = "",
    from_source: Annotated[str, typer.Option("--from", help="Importer of the table (auto: detected).")] = "auto",
    draws: Annotated[int, typer.Option(min=1, help="Draws per chain (as many tuning steps).")] = 1000,
    chains: Annotated[int, typer.Option(min=2, help="Chains.")] = 4,
    max_draws: Annotated[int, typer.Option(min=1, help="Draws per chain are doubled up to this while only R-hat or "
                                                       "ESS fail.")] = 8000,
    seed: Annotated[int, typer.Option(help="Sampler seed.")] = 0,
    allow_unconverged: Annotated[bool, typer.Option(
        "--allow-unconverged", help="Keep a fit with R-hat > 1.01 or divergences (refused without it).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
) -> None:
    """Fit MODEL hierarchically to TABLE and save the posterior of its group parameters as a population."""
    from cogtestbed.api.population import build_population, describe_population

    with console_err.status(f"fitting {model} hierarchically"):
        pop = build_population(experiment, table, model=model, name=name, source=source, from_source=from_source,
                               draws=draws, chains=chains, max_draws=max_draws, seed=seed,
                               allow_unconverged=allow_unconverged, output=output, force=force)
    typer.echo("\n".join(describe_population(pop)))
    typer.echo(f"wrote {output}")
