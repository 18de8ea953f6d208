"""``cogtestbed transcript-nll``: a local model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :func:`cogtestbed.api.transcripts.transcript_nll`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.request import option


@dataclass(frozen=True)
class TranscriptNllRequest:
    """What ``cogtestbed transcript-nll`` scores (its options, declared once: :mod:`cogtestbed.request`)."""

    path: Path = option(argument=True, help="A Psych-201 file (prompts.jsonl or prompts.jsonl.zip).")
    llm: str = option("hf:smollm2-135m", help="An in-process model (hf:...).")
    participant: list[str] | None = option(
        None, flags=("--participant", "-p"),
        help="Only this participant id; repeatable (default: every participant).")
    overflow: str = option(
        "refuse", help="A transcript longer than the model's context: refuse, truncate (score the first window's "
                       "choices, as Centaur's script cuts the text) or window (sliding window).")
    window: int | None = option(None, help="Tokens per forward pass (default: the model's context).")
    min_context: int | None = option(
        None, help="With --overflow window: tokens each choice is conditioned on at least (default: half the "
                   "window).")
    output: Path | None = option(None, flags=("--output", "-o"), help="Write the per-choice table (CSV).")
    force: bool = option(False, flags=("--force",), help="Overwrite an existing output file.")


@request_command(app, TranscriptNllRequest, name="transcript-nll")
def transcript_nll(req: TranscriptNllRequest) -> None:
    """Per-choice NLL of the human's choices: raw (Centaur's, full vocabulary) and over the options."""
    path, llm, participant, overflow = req.path, req.llm, req.participant, req.overflow
    window, min_context, output, force = req.window, req.min_context, req.output, req.force
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
