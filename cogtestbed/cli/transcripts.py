"""``cogtestbed transcript-nll``: a local model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :func:`cogtestbed.api.transcripts.transcript_nll`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.api.workflow_options import TranscriptNllRequest, ValidateRequest
from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.request import api_values, option


@dataclass(frozen=True)
class TranscriptNllCommand:
    """``cogtestbed transcript-nll``'s own options (those shared with :func:`cogtestbed.transcript_nll`:
    :class:`~cogtestbed.api.workflow_options.TranscriptNllRequest`)."""

    path: Path = option(argument=True, help="A Psych-201 file (prompts.jsonl or prompts.jsonl.zip).")
    output: Path | None = option(None, flags=("--output", "-o"), help="Write the per-choice table (CSV).")
    force: bool = option(False, flags=("--force",), help="Overwrite an existing output file.")


@request_command(app, TranscriptNllRequest, TranscriptNllCommand, name="transcript-nll")
def transcript_nll(req: TranscriptNllRequest, cmd: TranscriptNllCommand) -> None:
    """Per-choice NLL of the human's choices: raw (Centaur's, full vocabulary) and over the options."""
    path, output, force, overflow = cmd.path, cmd.output, cmd.force, req.overflow
    from cogtestbed.api.transcripts import participant_nll
    from cogtestbed.api.transcripts import transcript_nll as score
    from cogtestbed.outputs import atomic_write_bytes, check_output_file

    if output is not None:
        check_output_file(output, force=force, suffix=".csv")
    choices = score(transcripts=path, **api_values(req))
    if output is not None:
        atomic_write_bytes(output, lambda tmp: choices.to_csv(tmp, index=False))
        console_err.print(f"wrote {len(choices)} choices to {output}")
    summary = participant_nll(choices)
    from cogtestbed.data.psych201 import record_label

    labels = summary["record"].map(record_label) + ":" + summary["participant"].astype(str)
    summary["seconds"] = labels.map(choices.attrs["seconds"])
    print_json({"model": choices.attrs["model"], "overflow": overflow, "window": choices.attrs["window"],
                "participants": summary.to_dict(orient="records")})


@dataclass(frozen=True)
class ValidateCommand:
    """``cogtestbed validate``'s own options (those shared with :func:`cogtestbed.validate`:
    :class:`~cogtestbed.api.workflow_options.ValidateRequest`)."""

    path: Path = option(argument=True, help="A Psych-201 file (prompts.jsonl, prompts.jsonl.zip or .gz).")
    json: bool = option(False, flags=("--json",), help="Print the defects as JSON.")


@request_command(app, ValidateRequest, ValidateCommand, name="validate")
def validate(req: ValidateRequest, cmd: ValidateCommand) -> None:
    """List every defect of a Psych-201 file with its line and field (exit status 1 where there is one)."""
    import typer

    from cogtestbed.api.transcripts import validate as check
    from cogtestbed.cli.app import console

    defects = check(cmd.path, **api_values(req))
    if cmd.json:
        print_json({"file": str(cmd.path), "defects": defects.to_dict(orient="records")})
    else:
        for d in defects.itertuples():
            who = f" (participant {d.participant})" if d.participant is not None else ""
            console.print(f"{cmd.path}:{d.line}{who}: {d.field}: {d.kind}: {d.message}", highlight=False,
                          markup=False, soft_wrap=True)
        kinds = defects["kind"].value_counts().to_dict()
        console_err.print(f"{len(defects)} defect(s)" + (f": {kinds}" if kinds else ""), highlight=False, markup=False)
    if len(defects):
        raise typer.Exit(1)
