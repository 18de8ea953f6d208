"""``cogtestbed export``: a trial table written as Psych-201 JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import app, console_err


@app.command()
def export(
    table: Annotated[Path, typer.Argument(help="Trial table (.parquet) or a file an importer reads.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write (.jsonl, or .zip holding one).")],
    to: Annotated[str, typer.Option("--to", help="Format: psych201 (JSON Lines, one record per subject).")],
    experiment: Annotated[str | None, typer.Option(
        "--experiment", help="Experiment of the table (default: its experiment column, or the importer's).")] = None,
    source: Annotated[str, typer.Option("--from", help="auto (detect), trials, or an importer.")] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
) -> None:
    """Write a trial table (synthetic, LLM or imported) as Psych-201 transcripts: one JSON line per
    subject, each choice marked <<…>>; reading the file back (--from psych201) gives the same table."""
    from cogtestbed.api.export import export as write

    records = write(table, to=to, output=output, experiment=experiment, source=source,  # type: ignore[arg-type]
                    force=force)
    console_err.print(f"wrote {len(records)} participant record(s) to {output} (Psych-201; reads back unchanged)",
                      highlight=False)
