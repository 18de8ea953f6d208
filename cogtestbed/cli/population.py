"""``cogtestbed population``: list, show and build human populations — the posterior of
a hierarchical fit's group parameters that ``simulate``, ``recover``, ``power`` and ``plan`` take as
``--population human:NAME`` (:mod:`cogtestbed.api.population`)."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from cogtestbed.cli.app import LightGroup, app, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput
from cogtestbed.request import option
from cogtestbed.studies.population_options import BuildPopulationRequest as BuildRequest

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


@dataclass(frozen=True)
class ShowRequest(JsonOutput):
    """What ``cogtestbed population show`` shows (its options, declared once: :mod:`cogtestbed.request`)."""

    #: ``NAME``: a population shown (``human:NAME`` or a file), not the name a built one is given (``--name``)
    shown: str = option(argument=True, name="name", help="human:NAME or a population file.")


@request_command(population_app, ShowRequest, name="show")
def show(req: ShowRequest) -> None:
    """A population's source, fit and each parameter's population median and between-subject SD
    (posterior median with a 95 % interval)."""
    from cogtestbed.api.population import describe_population, population
    from cogtestbed.registry import get_experiment

    pop = population(req.shown)
    if req.as_json:
        params = get_experiment(pop.experiment).model(pop.model).parameters
        print_json({"name": pop.name, "experiment": pop.experiment, "model": pop.model, "source": pop.source,
                    "subjects": pop.subjects, "trials": pop.trials, "draws": pop.n_draws, "fit": pop.fit,
                    "parameters": pop.summary(params)})
        return
    typer.echo("\n".join(describe_population(pop)))


@request_command(population_app, BuildRequest, name="build")
def build(req: BuildRequest) -> None:
    """Fit MODEL hierarchically to TABLE and save the posterior of its group parameters as a population."""
    from cogtestbed.api.population import build_population, describe_population
    from cogtestbed.request import api_values

    with console_err.status(f"fitting {req.model} hierarchically"):
        pop = build_population(**api_values(req))
    typer.echo("\n".join(describe_population(pop)))
    typer.echo(f"wrote {req.output}")
