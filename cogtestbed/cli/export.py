"""``cogtestbed export``: a trial table written as Psych-201 JSON Lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.cli.app import app, console_err
from cogtestbed.cli.options import request_command
from cogtestbed.request import option


@dataclass(frozen=True)
class ExportRequest:
    """What ``cogtestbed export`` writes (its options, declared once: :mod:`cogtestbed.request`)."""

    table: Path = option(argument=True, help="Trial table (.parquet) or a file an importer reads.")
    output: Path = option(flags=("--output", "-o"), help="File to write (.jsonl, or .zip holding one).")
    to: str = option(flags=("--to",), help="Format: psych201 (JSON Lines, one record per subject).")
    experiment: str | None = option(
        None, flags=("--experiment",),
        help="Experiment of the table (default: its experiment column, or the importer's).")
    source: str = option("auto", flags=("--from",), help="auto (detect), trials, or an importer.")
    force: bool = option(False, flags=("--force",), help="Overwrite the output file.")


@request_command(app, ExportRequest)
def export(req: ExportRequest) -> None:
    """Write a trial table (synthetic, LLM or imported) as Psych-201 transcripts: one JSON line per
    subject, each choice marked <<…>>; reading the file back (--from psych201) gives the same table."""
    table, output, to, experiment, source, force = req.table, req.output, req.to, req.experiment, req.source, req.force
    from cogtestbed.api.export import export as write

    records = write(table, to=to, output=output, experiment=experiment, source=source,  # type: ignore[arg-type]
                    force=force)
    console_err.print(f"wrote {len(records)} participant record(s) to {output} (Psych-201; reads back unchanged)",
                      highlight=False)
