"""``cogtestbed simulate``: synthetic subjects through an experiment, written as Parquet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogtestbed.cli.app import app, console_err
from cogtestbed.cli.options import request_command
from cogtestbed.simulate_options import Method, SimulateRequest

__all__ = ["Method", "forms_option", "lapse_option", "simulate"]

if TYPE_CHECKING:  # the library is imported inside the command bodies (a light command line)
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.lapse import Lapse

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


@request_command(app, SimulateRequest)
def simulate(req: SimulateRequest) -> None:
    """Simulate synthetic subjects with known parameters and write their trial table."""
    from rich.progress import Progress

    from cogtestbed.api.core import simulate_file
    from cogtestbed.request import api_values

    options = api_values(req)
    subjects, output = req.who.subject_count, req.output
    if req.sessions.simulation == "step" or req.sessions.adaptive:  # the reference loop is slow: progress per subject
        with Progress(*Progress.get_default_columns(), console=console_err, transient=True) as bar:
            task = bar.add_task("stepping subjects", total=subjects)
            rows = simulate_file(**options, on_subject_done=lambda _: bar.advance(task))
    else:
        with console_err.status(f"simulating {subjects} subjects"):
            rows = simulate_file(**options)
    console_err.print(f"wrote {rows} trials of {subjects} subjects to {output}")
