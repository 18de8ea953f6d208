"""``cogtestbed export``: a trial table written as Psych-201 JSON Lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.api.workflow_options import ExportRequest
from cogtestbed.cli.app import app, console_err
from cogtestbed.cli.options import request_command
from cogtestbed.request import api_values, option


@dataclass(frozen=True)
class ExportCommand:
    """``cogtestbed export``'s own options (those shared with :func:`cogtestbed.export`:
    :class:`~cogtestbed.api.workflow_options.ExportRequest`)."""

    table: Path = option(argument=True, help="Trial table (.parquet) or a file an importer reads.")


@request_command(app, ExportRequest, ExportCommand)
def export(req: ExportRequest, cmd: ExportCommand) -> None:
    """Write a trial table (synthetic, LLM or imported) as Psych-201 transcripts: one JSON line per
    subject, each choice marked <<…>>; reading the file back (--from psych201) gives the same table."""
    from cogtestbed.api.export import export as write

    records = write(cmd.table, **api_values(req))
    console_err.print(f"wrote {len(records)} participant record(s) to {req.output} (Psych-201; reads back "
                      "unchanged)", highlight=False)
