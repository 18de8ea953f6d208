"""``cogtestbed transcript-nll``: a local model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :func:`cogtestbed.api.transcripts.transcript_nll`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import app, console_err, print_json


@app.command("transcript-nll")
def transcript_nll(
    path: Annotated[Path, typer.Argument(help="A Psych-201 file (prompts.jsonl or prompts.jsonl.zip).")],
    llm: Annotated[str, typer.Option(help="An in-process model (hf:...).")] = "hf:smollm2-135m",
    participant: Annotated[list[str] | None, typer.Option(
        "--participant", "-p", help="Only this participant id; repeatable (default: every participant).")] = None,
    overflow: Annotated[str, typer.Option(
        help="A transcript longer than the model's context: refuse, truncate (score the first window's "
             "choices, as Centaur's script cuts the text) or window (sliding window).")] = "refuse",
    window: Annotated[int | None, typer.Option(help="Tokens per forward pass (default: the model's context).")] = None,
    min_context: Annotated[int | None, typer.Option(
        help="With --overflow window: tokens each choice is conditioned on at least (default: half the window).")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the per-choice table (CSV).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
) -> None:
    """Per-choice NLL of the human's choices: raw (Centaur's, full vocabulary) and over the options."""
    from cogtestbed.api.transcripts import participant_nll
    from cogtestbed.api.transcripts import transcript_nll as score
    from cogtestbed.outputs import atomic_write_bytes, check_output_file

    if output is not None:
        check_output_file(output, force=force, suffix=".csv")
    choices = score(llm, path, participants=participant, overflow=overflow, window=window, min_context=min_context)
    if output is not None:
        atomic_write_bytes(output, lambda tmp: choices.to_csv(tmp, index=False))
        console_err.print(f"wrote {len(choices)} choices to {output}")
    summary = participant_nll(choices)
    summary["seconds"] = summary["participant"].map(choices.attrs["seconds"])
    print_json({"model": choices.attrs["model"], "overflow": overflow, "window": choices.attrs["window"],
                "participants": summary.to_dict(orient="records")})
