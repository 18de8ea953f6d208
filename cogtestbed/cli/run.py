"""``cogtestbed run``: a real LLM as N subjects of any registered experiment, two LLMs on the same
sessions, or a sequential plan's looks (a thin layer over :func:`cogtestbed.api.run.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.api.run import (
    DEFAULT_MAX_SERVICE_REQUESTS,
    DEFAULT_RETRY_WINDOW,
    EXIT_BUDGET_STOP,
    PROGRESS_EVERY,
)
from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.simulate import AdaptiveOpt, FormsOpt, TrialsOpt


@app.command()
def run(
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory.")],
    experiment: Annotated[str | None, typer.Argument(
        help="Experiment name, e.g. instrumental-learning (optional with --plan).")] = None,
    llms: Annotated[list[str] | None, typer.Option(
        "--llm", help="BACKEND:MODEL — hf:smollm2-135m (a real model, offline), hf:tiny-random, "
        "hf:<hub id or path>, openai:gpt-4o-mini, "
        "anthropic:claude-...; keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.  Give it twice "
        "(base and instruct, say) to run both on the same sessions and write a paired report.")] = None,
    subjects: Annotated[int, typer.Option(min=1, help="Independent subjects (sessions).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed: the same sessions as `simulate --seed`.")] = 0,
    base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible or Anthropic endpoint (vLLM, Ollama, llama.cpp, LM Studio...); part of the "
        "response cache's key and checked by --resume (see --share-cache).")] = None,
    mode: Annotated[str, typer.Option(
        help="chat | completions (raw prompt, no chat template) | auto.")] = "auto",
    design: Annotated[list[str] | None, typer.Option(
        "--design", help="Design field NAME=VALUE (repeatable), e.g. visits_per_casino=6.")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        min=1, help="Tokens per answer. Default: the experiment's (8 for a one-line answer; belief-coherence "
        "64).")] = None,
    temperature: Annotated[float | None, typer.Option(
        min=0.0, help="Sampling temperature; default: the experiment's paper's (magnitude 0.7, CogBench and "
        "collider 0), else 0 (greedy); the run's manifest records which.")] = None,
    stop: Annotated[list[str] | None, typer.Option(
        help="Stop string (repeatable; backslash escapes such as \\n work). Default: the experiment's "
        "(a newline; belief-coherence's multi-line answers: a blank line).")] = None,
    reask: Annotated[int, typer.Option(min=0, help="Re-asks after an unparseable answer.")] = 0,
    top_logprobs: Annotated[int | None, typer.Option(
        help="Also request the top-k log-probabilities of each answer token.")] = None,
    cache: Annotated[Path | None, typer.Option(
        help="SQLite response cache (default $COGTESTBED_CACHE or ~/.cache/cogtestbed/).")] = None,
    share_cache: Annotated[bool, typer.Option(
        "--share-cache", help="Share cached answers across endpoints: key them by the model's name alone, not "
        "the server's address and served model (then --resume may change --base-url). Only for servers that "
        "serve the very same model.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Subjects played at once.")] = 8,
    rpm: Annotated[float | None, typer.Option(help="Requests per minute limit.")] = None,
    tpm: Annotated[float | None, typer.Option(help="Tokens per minute limit.")] = None,
    max_calls: Annotated[int | None, typer.Option(
        min=0, help="Total new calls of the run directory, over every --resume.")] = None,
    max_cost: Annotated[float | None, typer.Option(
        min=0.0, help="Total spend of the run directory in USD, over every --resume; never exceeded "
        "(each call books its worst case first; a subject starts only if its whole worst case fits).")] = None,
    add_budget: Annotated[list[str] | None, typer.Option(
        "--add-budget", help="With --resume: raise the run's totals, calls=N and/or usd=X (repeatable).")] = None,
    prices: Annotated[Path | None, typer.Option(help="Price table (TOML) overriding the defaults.")] = None,
    allow_unpriced: Annotated[bool, typer.Option(
        "--allow-unpriced", help="--dry-run of a model without a price: count calls and tokens only (without "
        "it such a dry run is refused).")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request (> 0).")] = 60.0,
    retry_for: Annotated[float, typer.Option(
        min=0.0, help=f"Seconds to keep retrying a call through 429/5xx/dropped connections "
        f"(default {DEFAULT_RETRY_WINDOW:g}); each retry is logged and kept in calls.parquet.")] = DEFAULT_RETRY_WINDOW,
    progress_every: Annotated[int, typer.Option(
        min=1, help="When stderr is not a terminal: a progress line per this many subjects.")] = PROGRESS_EVERY,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report calls, tokens and cost; call nothing.")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Send the requests through the provider's batch API (OpenAI Batch API, Anthropic "
        "Message Batches) at its batch price; sessions play in parallel waves, one batch per step.")] = False,
    poll_every: Annotated[float, typer.Option(
        help="With --batch: seconds between polls of a batch.")] = 30.0,
    max_service_requests: Annotated[int, typer.Option(
        min=0, help="With --batch: most requests to the batch API (uploads, polls, downloads, retries) in this "
        "invocation; beyond it the run stops (exit 3) and --resume continues it.")] = DEFAULT_MAX_SERVICE_REQUESTS,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --output.")] = False,
    plan: Annotated[Path | None, typer.Option(
        help="plan.json of `cogtestbed plan`: its experiment, design, subjects, seed, answer settings and "
        "limits; --llm chooses or replaces its LLM(s).")] = None,
    forms: FormsOpt = None,
    reasoning_effort: Annotated[str | None, typer.Option(
        help="A reasoning model's reasoning_effort (OpenAI: low | medium | high; gpt-5 also minimal): the values "
        "each model takes are in the capability table (docs/llm-runs.md).")] = None,
    thinking_budget: Annotated[int | None, typer.Option(
        help="Hidden tokens a reasoning model may spend per call before its answer: Anthropic's extended thinking "
        "on with this budget_tokens (>= 1024); for OpenAI's reasoning models the tokens reserved (default 8192). "
        "The completion limit is this plus --max-tokens.")] = None,
    adaptive: AdaptiveOpt = None,
    trials: TrialsOpt = None,
) -> None:
    """Run an LLM as subjects through an experiment; write the trial table and a manifest.

    Exit status: 0 complete, 2 bad input or a backend error (one line), 3 stopped by the budget.
    """
    from cogtestbed.api.run import PairedRun
    from cogtestbed.api.run import run as run_llm

    opts = {k: v for k, v in locals().items() if k not in ("llms", "output", "experiment", "subjects", "seed",
                                                            "design", "plan", "dry_run", "PairedRun", "run_llm")}
    result = run_llm(experiment, llm=llms, output=output, subjects=subjects, seed=seed, design=design, plan=plan,
                     dry_run=dry_run, **opts)
    if dry_run:
        for estimate in result if isinstance(result, list) else [result]:
            print_json(estimate)
        return
    if isinstance(result, PairedRun) and result.report is not None:
        from cogtestbed.validation.runs.paired import format_report

        console_err.print(format_report(result.report), highlight=False)
    if getattr(result, "status", None) == "stopped":
        raise typer.Exit(EXIT_BUDGET_STOP)
