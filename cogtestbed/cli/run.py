"""``cogtestbed run``: a real LLM as N subjects of any registered experiment, two LLMs on the same
sessions, or a sequential plan's looks (a thin layer over :func:`cogtestbed.api.run.run`; its options
are declared once, in :class:`~cogtestbed.runs.run_options.RunRequest`)."""

from __future__ import annotations

import typer

from cogtestbed.api.run import EXIT_BUDGET_STOP
from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.runs.run_options import RunRequest


@request_command(app, RunRequest)
def run(req: RunRequest) -> None:
    """Run an LLM as subjects through an experiment; write the trial table and a manifest.

    Exit status: 0 complete, 2 bad input or a backend error (one line), 3 stopped by the budget.
    """
    from cogtestbed.api.run import PairedRun
    from cogtestbed.api.run import run as run_llm
    from cogtestbed.request import api_values

    result = run_llm(**api_values(req))
    if req.budget.dry_run:
        for estimate in result if isinstance(result, list) else [result]:
            print_json(estimate)
        return
    if isinstance(result, PairedRun) and result.report is not None:
        from cogtestbed.runs.paired import format_report

        console_err.print(format_report(result.report), highlight=False)
    if getattr(result, "status", None) == "stopped":
        raise typer.Exit(EXIT_BUDGET_STOP)
