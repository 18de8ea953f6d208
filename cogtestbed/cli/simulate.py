"""``cogtestbed simulate``: synthetic subjects through an experiment, written as Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from cogtestbed.cli.app import app, console_err

if TYPE_CHECKING:  # the library is imported inside the command bodies (a light command line)
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.lapse import Lapse

#: The simulation paths offered on the command line (the values of ``cogtestbed.simulation.Method``,
#: repeated here so that registering the command imports no numerical package; a test keeps them equal).
Method = Literal["batch", "step"]

LapseInvalidOpt = Annotated[float, typer.Option(
    "--lapse-invalid",
    help="Rate of invalid answers per step or trial (recorded invalid, as an unparseable LLM answer).")]
LapseRandomOpt = Annotated[float, typer.Option(
    "--lapse-random", help="Rate of uniformly random answers per step or trial (over the valid answers).")]

AdaptiveOpt = Annotated[str | None, typer.Option(
    "--adaptive", help="PARAM[,PARAM] or all: an adaptive session, each next trial chosen to maximise the expected "
    "information on these parameters of the experiment's model (needs --trials).")]
TrialsOpt = Annotated[int | None, typer.Option(
    "--trials", min=1, help="Trials of an adaptive session (with --adaptive).")]
PopulationOpt = Annotated[str | None, typer.Option(
    "--population", help="Draw the subjects' parameters from a population: human:NAME (shipped; `cogtestbed "
    "population list`) or a population file (`cogtestbed population build`): one posterior draw of the people's "
    "group parameters per simulated data set, subjects scattered by its SDs.")]

FormsOpt = Annotated[str | None, typer.Option(
    "--forms", help="Prompt forms: K (forms 0..K-1) or ids 0,2,3; subjects are assigned to them, balanced "
    "and seeded (cogtestbed list EXP shows the forms).")]
FormSdOpt = Annotated[list[str] | None, typer.Option(
    "--form-sd", help="PARAM=SD (repeatable): each form shifts PARAM by a Normal(0, SD) offset on its "
    "unconstrained scale (synthetic subjects; needs --forms).")]


def forms_option(exp: ExperimentSpec, forms: str | None, form_sd: list[str] | None) -> FormDesign | None:
    """The :class:`FormDesign` of ``--forms``/``--form-sd`` (None without ``--forms``)."""
    from cogtestbed.environments.forms import FormDesign, FormError, parse_form_sd, resolve_forms

    sd = parse_form_sd(form_sd)
    if forms is None:
        if sd:
            raise FormError("--form-sd needs --forms (the forms whose offsets it draws)")
        return None
    return FormDesign(resolve_forms(exp.prompt_forms, forms), sd)


def lapse_option(invalid: float, random: float) -> Lapse | None:
    """The :class:`Lapse` of ``--lapse-invalid``/``--lapse-random`` (None when both are 0)."""
    from cogtestbed.lapse import Lapse

    lapse = Lapse(invalid, random)
    return lapse if lapse.active else None


@app.command()
def simulate(
    experiment: Annotated[str, typer.Argument(help="Experiment name, e.g. instrumental-learning.")],
    agent: Annotated[str, typer.Option("--agent", "-a", help="Synthetic agent, e.g. rw-pm.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Trial table to write (.parquet).")],
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="Agent parameter NAME=VALUE (repeatable); defaults otherwise.")] = None,
    subjects: Annotated[int, typer.Option(min=1, help="Number of simulated subjects.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the whole simulation.")] = 0,
    method: Annotated[Method, typer.Option(
        help="batch: numba kernel; step: gymnasium reset/step loop (identical output).")] = "batch",
    design: Annotated[list[str] | None, typer.Option(
        "--design", help="Design field NAME=VALUE (repeatable), e.g. visits_per_casino=48.")] = None,
    lapse_invalid: LapseInvalidOpt = 0.0,
    lapse_random: LapseRandomOpt = 0.0,
    forms: FormsOpt = None,
    form_sd: FormSdOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    adaptive: AdaptiveOpt = None,
    trials: TrialsOpt = None,
    population: PopulationOpt = None,
) -> None:
    """Simulate synthetic subjects with known parameters and write their trial table."""
    from rich.progress import Progress

    from cogtestbed.api.core import design_overrides
    from cogtestbed.api.core import simulate as run_simulation
    from cogtestbed.parameters import parse_assignments

    params = parse_assignments(param or [], "--param")
    sd = _form_sd(form_sd)
    options: dict[str, Any] = {"subjects": subjects, "seed": seed, "params": params,
                               "design": design_overrides(design or []),
               "method": method, "lapse_invalid": lapse_invalid, "lapse_random": lapse_random, "forms": forms,
               "form_sd": sd, "output": output, "force": force, "adaptive": adaptive, "trials": trials,
               "population": population}
    if method == "step" or adaptive:  # the reference loop is slow: show progress per subject
        with Progress(*Progress.get_default_columns(), console=console_err, transient=True) as bar:
            task = bar.add_task("stepping subjects", total=subjects)
            table = run_simulation(experiment, agent, on_subject_done=lambda _: bar.advance(task), **options)
    else:
        with console_err.status(f"simulating {subjects} subjects"):
            table = run_simulation(experiment, agent, **options)
    console_err.print(f"wrote {len(table)} trials of {subjects} subjects to {output}")


def _form_sd(items: list[str] | None) -> dict[str, float]:
    """``--form-sd PARAM=SD`` items → offsets' SDs."""
    from cogtestbed.environments.forms import parse_form_sd

    return dict(parse_form_sd(items))
