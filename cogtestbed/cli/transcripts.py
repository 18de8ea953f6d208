"""``cogtestbed transcript-nll``: a local model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :func:`cogtestbed.api.transcripts.transcript_nll`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.api.workflow_options import TranscriptNllRequest, ValidateRequest
from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.errors import printable_line
from cogtestbed.option_groups import InputPath, Output, Overwrite
from cogtestbed.request import api_values, option, variant


@dataclass(frozen=True)
class TranscriptNllCommand(
        variant(InputPath, helps={"path": "A Psych-201 file (prompts.jsonl or prompts.jsonl.zip)."}), Overwrite,  # type: ignore[misc]
        variant(Output, helps={"output": "Write the per-choice table (.csv or .parquet), or the transcripts with "  # type: ignore[misc]
                                         "their scores as Psych-201 (.jsonl or .zip: each scored record gains "
                                         "cogtestbed_scores)."})):
    """``cogtestbed transcript-nll``'s own options (those shared with :func:`cogtestbed.transcript_nll`:
    :class:`~cogtestbed.api.workflow_options.TranscriptNllRequest`)."""


#: Output suffixes of ``transcript-nll -o``: tables, and Psych-201 files with the scores as metadata.
TABLE_SUFFIXES, PSYCH201_SUFFIXES = (".csv", ".parquet"), (".jsonl", ".zip")


@request_command(app, TranscriptNllRequest, TranscriptNllCommand, name="transcript-nll")
def transcript_nll(req: TranscriptNllRequest, cmd: TranscriptNllCommand) -> None:
    """NLL of the human's choices, three measures: Psych-201's evaluation (summed token NLL per response span),
    Centaur's per-response average, and the per-choice NLL (raw and over the options); progress on stderr."""
    path, output, force, overflow = cmd.path, cmd.output, cmd.force, req.overflow
    from cogtestbed.api.transcripts import participant_nll
    from cogtestbed.api.transcripts import transcript_nll as score
    from cogtestbed.errors import InputError
    from cogtestbed.llm_adapters.runs.psych201_eval import MEASURES
    from cogtestbed.outputs import check_output_file
    from cogtestbed.progress import reporting, stderr_reporter

    if output is not None:
        if output.suffix.lower() not in (*TABLE_SUFFIXES, *PSYCH201_SUFFIXES):
            raise InputError(f"-o ends in {', '.join((*TABLE_SUFFIXES, *PSYCH201_SUFFIXES))}, got {output}")
        check_output_file(output, force=force)
    terminal = console_err.is_terminal
    with reporting(stderr_reporter(terminal), terminal):
        choices = score(transcripts=path, **api_values(req))
    if output is not None:
        _write(choices, output, force)
    summary = participant_nll(choices)
    print_json({"model": choices.attrs["model"], "overflow": overflow, "window": choices.attrs["window"],
                "max_length": req.max_length,
                "measures": {k: v for k, v in MEASURES.items() if k in summary.columns},
                "participants": summary.to_dict(orient="records")})


def _write(choices: object, output: Path, force: bool) -> None:
    import pandas as pd

    from cogtestbed.outputs import atomic_write_bytes

    assert isinstance(choices, pd.DataFrame)
    if output.suffix.lower() in PSYCH201_SUFFIXES:
        from cogtestbed.api.export import export

        records = export(choices, to="psych201", output=output, force=True)
        console_err.print(f"wrote {len(records)} records with their scores to {output}", highlight=False)
        return
    if output.suffix.lower() == ".parquet":
        atomic_write_bytes(output, lambda tmp: choices.to_parquet(tmp, index=False))
    else:
        atomic_write_bytes(output, lambda tmp: choices.to_csv(tmp, index=False))
    console_err.print(f"wrote {len(choices)} choices to {output}", highlight=False)

@dataclass(frozen=True)
class ValidateCommand(variant(InputPath, helps={  # type: ignore[misc]
        "path": "A Psych-201 file (prompts.jsonl, prompts.jsonl.zip or .gz)."})):
    """``cogtestbed validate``'s own options (those shared with :func:`cogtestbed.validate`:
    :class:`~cogtestbed.api.workflow_options.ValidateRequest`)."""

    json: bool = option(False, flags=("--json",), help="Print the defects as JSON.")


@request_command(app, ValidateRequest, ValidateCommand, name="validate")
def validate(req: ValidateRequest, cmd: ValidateCommand) -> None:
    """List every defect of a Psych-201 file with its line and field (exit status 1 where there is one).

    A file whose content (uncompressed) is over the input limit, 50 MiB unless the environment variable
    COGTESTBED_MAX_INPUT_MB says otherwise, is one defect (input_limit) and is not read further."""
    import typer

    from cogtestbed.api.transcripts import validate as check
    from cogtestbed.cli.app import console
    from cogtestbed.data.psych201_validate import defect_line

    defects = check(cmd.path, **api_values(req))
    if cmd.json:
        print_json({"file": str(cmd.path), "defects": defects.to_dict(orient="records")})
    else:
        for d in defects.itertuples():
            console.print(f"{printable_line(str(cmd.path))}:{defect_line(d)}", highlight=False, markup=False,
                          soft_wrap=True)
        kinds = defects["kind"].value_counts().to_dict()
        console_err.print(f"{len(defects)} defect(s)" + (f": {kinds}" if kinds else ""), highlight=False, markup=False)
    if len(defects):
        raise typer.Exit(1)
