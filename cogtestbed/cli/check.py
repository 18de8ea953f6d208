"""``cogtestbed check EXPERIMENT``: run the conformance suite on one experiment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.request import option

#: Status colours of the check table.
STYLES = {"passed": "green", "failed": "bold red", "xpass": "bold red", "xfail": "yellow", "skipped": "dim"}


@dataclass(frozen=True)
class CheckRequest:
    """What ``cogtestbed check`` runs (its options, declared once: :mod:`cogtestbed.request`;
    :func:`cogtestbed.check` takes ``quick`` and ``checks``)."""

    experiment: str = option(argument=True, help="Experiment name.")
    full: bool = option(False, flags=("--full",), help="Full mode: the designs of the declared studies.")
    only: list[str] | None = option(None, flags=("--check",), help="Run only this check (repeatable).")
    data_dir: Path | None = option(None, flags=("--data",),
                                   help="Published data for the importer check (default $COGTESTBED_DATA_DIR).")
    as_json: bool = option(False, flags=("--json",), help="Print one JSON object.")


@request_command(app, CheckRequest)
def check(req: CheckRequest) -> None:
    """Run the experiment's conformance checks and print a table; exit 2 on any failure.

    Each failure is printed as one line ``CHECK: first line of its message`` on stderr.
    """
    experiment, full, only, data_dir, as_json = req.experiment, req.full, req.only, req.data_dir, req.as_json
    from rich.markup import escape
    from rich.table import Table

    from cogtestbed.api.core import check as run_checks

    with console_err.status(f"checking {experiment}…"):
        report = run_checks(experiment, quick=not full, data_dir=data_dir, checks=only)
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
