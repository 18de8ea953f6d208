"""``cogtestbed check EXPERIMENT``: run the conformance suite on one experiment."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, replace

import typer

from cogtestbed.api.workflow_options import CheckRequest
from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput
from cogtestbed.request import api_values, option, variant
from cogtestbed.simulate_options import EXPERIMENT_ARGUMENT, ExperimentName

#: Status colours of the check table.
STYLES = {"passed": "green", "failed": "bold red", "xpass": "bold red", "xfail": "yellow", "skipped": "dim"}


@dataclass(frozen=True)
class CheckCommand(JsonOutput, variant(ExperimentName, defaults={"experiment": MISSING},  # type: ignore[misc]
                                       present=EXPERIMENT_ARGUMENT, helps={"experiment": "Experiment name."})):
    """``cogtestbed check``'s own options (its options shared with :func:`cogtestbed.check`:
    :class:`~cogtestbed.api.workflow_options.CheckRequest`)."""

    full: bool = option(False, flags=("--full",), help="Full mode: the designs of the declared studies.")


@request_command(app, CheckRequest, CheckCommand)
def check(req: CheckRequest, cmd: CheckCommand) -> None:
    """Run the experiment's conformance checks and print a table; exit 2 on any failure.

    Each failure is printed as one line ``CHECK: first line of its message`` on stderr.
    """
    experiment, full, as_json = cmd.experiment, cmd.full, cmd.as_json
    from rich.markup import escape
    from rich.table import Table

    from cogtestbed.api.core import check as run_checks

    with console_err.status(f"checking {experiment}…"):
        report = run_checks(experiment, **api_values(replace(req, quick=not full)))
    if as_json:
        print_json({"experiment": report.experiment, "ok": report.ok,
                    "results": [{"check": r.check, "status": r.status, "seconds": round(r.seconds, 2),
                                 "message": r.message} for r in report.results]})
    else:
        table = Table(title=f"{report.experiment}: conformance ({'full' if full else 'quick'} mode)")
        for col, justify in (("check", "left"), ("status", "left"), ("s", "right"), ("message", "left")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for r in report.results:
            first = r.message.splitlines()[0] if r.message else ""
            table.add_row(r.check, f"[{STYLES[r.status]}]{r.status}[/]", f"{r.seconds:.1f}", escape(first))
        console.print(table)
    if not report.ok:
        for r in report.failures:
            lines = [line.strip() for line in r.message.splitlines()]
            detail = lines[1] if len(lines) > 1 else (lines[0] if lines else r.status)
            more = f" (+{len(lines) - 2} more)" if len(lines) > 2 else ""
            console_err.print(f"{r.check}: {escape(detail)}{more}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
