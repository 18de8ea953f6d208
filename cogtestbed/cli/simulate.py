"""``cogtestbed simulate``: synthetic subjects through an experiment, written as Parquet."""

from __future__ import annotations

from cogtestbed.cli.app import app, console_err
from cogtestbed.cli.options import request_command
from cogtestbed.simulate_options import Method, SimulateRequest

__all__ = ["Method", "simulate"]


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
