"""Every option of an LLM run (``cogtestbed run``, :func:`cogtestbed.run`), declared once: :class:`RunRequest` and its
sub-objects.  The command line's options and help panels and
``ct.run``'s keywords are made from these declarations (:mod:`cogtestbed.request`); the run itself
(:mod:`cogtestbed.api.run`) reads each LLM's settings from them.

A type is what :func:`cogtestbed.run` accepts; ``cli_type`` what the command line parses.  Imports
nothing heavy: the command line builds its help from here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path

from cogtestbed.bounds import Cost
from cogtestbed.option_groups import (
    MAX_SUBJECTS,
    Adaptive,
    AnswerSettings,
    BatchMode,
    LLMs,
    MaxCost,
    Output,
    PriceTable,
    PromptForms,
    ReasoningSettings,
    Seed,
    SessionTrials,
    SubjectCount,
    Unpriced,
)
from cogtestbed.redact import redact_url
from cogtestbed.request import group, option, variant
from cogtestbed.simulate_options import OPTIONAL_EXPERIMENT_ARGUMENT, DesignFields, ExperimentName

#: Default ``--retry-for`` in seconds; equal to the library's ``DEFAULT_RETRY_WINDOW`` (not imported
#: here: the command line builds its help from this module without the library).
DEFAULT_RETRY_WINDOW = 120.0
#: Default ``--max-service-requests``; equal to the library's ``DEFAULT_MAX_SERVICE_REQUESTS`` (not imported
#: here, as above).
DEFAULT_MAX_SERVICE_REQUESTS = 10_000
#: Progress lines on a non-terminal stderr (logs, CI): one per this many finished subjects.
PROGRESS_EVERY = 10


@dataclass(frozen=True)
class RunLLMs(ReasoningSettings, LLMs):
    """The LLM(s) run and how they are reached."""

    base_url: str | None = option(
        None, record=redact_url,
        help="OpenAI-compatible or Anthropic endpoint (vLLM, Ollama, llama.cpp, LM Studio...); part of the response "
             "cache's key and checked by --resume (see --share-cache).")
    mode: str = option("auto", help="chat | completions (raw prompt, no chat template) | auto.")


@dataclass(frozen=True)
class RunSessions(
        variant(Seed, helps={"seed": "Seed: the same sessions as `simulate --seed`."}),  # type: ignore[misc]
        variant(DesignFields, helps={"design": "Design field NAME=VALUE (repeatable), e.g. visits_per_casino=6."}),  # type: ignore[misc]
        PromptForms, Adaptive, SessionTrials,
        variant(SubjectCount, defaults={"subject_count": 1},  # type: ignore[misc]
                helps={"subject_count": "Independent subjects (sessions)."})):
    """The sessions played: how many, which design, which prompt forms."""



@dataclass(frozen=True)
class RunAnswers(AnswerSettings):
    """What each answer may be (the experiment's own settings by default)."""

    stop: Sequence[str] | None = option(
        None, cli_type=list[str] | None,
        help="Stop string (repeatable; backslash escapes such as \\n work). Default: the experiment's (a newline; "
             "belief-coherence's multi-line answers: a blank line).")
    top_logprobs: int | None = option(None, max=20, cost=Cost("log-probabilities per answer token",
                                                              note="providers return at most 20"),
                                      help="Also request the top-k log-probabilities of each answer token.")


@dataclass(frozen=True)
class RunTransport:
    """The response cache, concurrency, rate limits and retries."""

    cache: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None, help="SQLite response cache (default $COGTESTBED_CACHE or ~/.cache/cogtestbed/).")
    share_cache: bool = option(
        False, flags=("--share-cache",),
        help="Share cached answers across endpoints: key them by the model's name alone, not the server's address "
             "and served model (then --resume may change --base-url). Only for servers that serve the very same "
             "model.")
    concurrency: int = option(8, min=1, max=1024, cost=Cost(
        "subjects played at once", note="each an open connection and a session held in memory"),
        help="Subjects played at once.")
    rpm: float | None = option(None, help="Requests per minute limit.")
    tpm: float | None = option(None, help="Tokens per minute limit.")
    timeout: float = option(60.0, help="Seconds per HTTP request (> 0).")
    retry_for: float = option(
        DEFAULT_RETRY_WINDOW, min=0.0,
        help=f"Seconds to keep retrying a call through 429/5xx/dropped connections (default "
             f"{DEFAULT_RETRY_WINDOW:g}); each retry is logged and kept in calls.parquet.")


@dataclass(frozen=True)
class RunBudget(PriceTable, Unpriced, variant(MaxCost, helps={  # type: ignore[misc]
        "max_cost": "Total spend of the run directory in USD, over every --resume; never exceeded (each call books its "
                    "worst case first; a subject starts only if its whole worst case fits)."})):
    """The run's budget and prices, its dry run and its resumption."""

    max_calls: int | None = option(None, min=0, max=10**9, cost=Cost("calls", note="a cap no run reaches"),
                                   help="Total new calls of the run directory, over every --resume.")
    add_budget: Sequence[str] | None = option(
        None, cli_type=list[str] | None, flags=("--add-budget",),
        help="With --resume: raise the run's totals, calls=N and/or usd=X (repeatable).")
    dry_run: bool = option(False, flags=("--dry-run",), help="Report calls, tokens and cost; call nothing.")
    resume: bool = option(False, flags=("--resume",), help="Continue the run in --output.")


@dataclass(frozen=True)
class RunBatch(BatchMode):
    """The provider's batch API (``--batch``)."""

    poll_every: float = option(30.0, help="With --batch: seconds between polls of a batch.")
    max_service_requests: int = option(
        DEFAULT_MAX_SERVICE_REQUESTS, min=0, max=10_000_000,
        cost=Cost("requests to the batch API", note="each an upload, poll or download"),
        help="With --batch: most requests to the batch API (uploads, polls, downloads, retries) in this invocation; "
             "beyond it the run stops (exit 3) and --resume continues it.")


@dataclass(frozen=True)
class RunRequest(variant(Output, defaults={"output": MISSING}, present={"output": {"cli_type": Path}},  # type: ignore[misc]
                         helps={"output": "Run directory."}),
                 variant(ExperimentName, present=OPTIONAL_EXPERIMENT_ARGUMENT, helps={  # type: ignore[misc]
                     "experiment": "Experiment name, e.g. instrumental-learning (optional with --plan)."})):
    """An LLM run, as ``cogtestbed run`` and :func:`cogtestbed.run` take it (each LLM's settings, a plan's
    applied, are then one :class:`cogtestbed.api.run.LLMRun`)."""

    plan: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None, flags=("--plan", "--monitor"),
        help="plan.json of `cogtestbed plan`: its experiment, design, subjects, seed, answer settings and limits; "
             "--llm chooses or replaces its LLM(s). `--monitor PLAN` is the same option, named for a `plan "
             "--monitor` plan: its run stops at the e-process's boundary or its cap.")
    progress_every: int = option(
        PROGRESS_EVERY, min=1, max=MAX_SUBJECTS, cost=Cost("subjects between progress lines"),
        help="When stderr is not a terminal: a progress line per this many subjects.")
    llms: RunLLMs = group(RunLLMs, "LLMs")
    sessions: RunSessions = group(RunSessions, "Sessions")
    answers: RunAnswers = group(RunAnswers, "Answers")
    transport: RunTransport = group(RunTransport, "Cache, concurrency and retries")
    budget: RunBudget = group(RunBudget, "Budget, prices and resume")
    batch: RunBatch = group(RunBatch, "Batch API")
