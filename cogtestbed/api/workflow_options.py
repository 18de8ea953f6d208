"""Every option of the smaller workflows, declared once: the conformance suite
(``cogtestbed check``, :func:`cogtestbed.check`), the Psych-201 export (``cogtestbed export``,
:func:`cogtestbed.export`), the metrics (``cogtestbed metrics``, :func:`cogtestbed.metrics`), a
language model's transcript log-likelihood (``cogtestbed transcript-nll``,
:func:`cogtestbed.transcript_nll`) and a cognitive model's held-out NLL (:func:`cogtestbed.heldout_nll`,
Python only).  The ``ct.`` function's keywords and the command line's options are made from these
requests (:mod:`cogtestbed.request`); a command's own options (its positional argument where the
function names it differently, ``--json``, an output file) are its ``cli/`` module's sub-object.

A type is what the ``ct.`` function accepts; ``cli_type`` what the command line parses.  Imports
nothing heavy: the command line builds its help from here.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.bounds import Cost
from cogtestbed.option_groups import CognitiveModel, Importer, MaxLength, Output, Overwrite, Seed, Sessions
from cogtestbed.request import option, variant
from cogtestbed.simulate_options import ExperimentName

if TYPE_CHECKING:
    pass

#: Most tokens a forward pass, a choice's context or a batch may hold (ten times the longest served context).
MAX_CONTEXT_TOKENS = 10_000_000
#: Each token of a pass is held with its key-value cache: smollm2-135m's is 30 layers x 2 x 3 heads x 64 float32s.
TOKENS_IN_MEMORY = Cost("tokens in one forward pass", bytes=30 * 2 * 3 * 64 * 4.0,
                        at="for smollm2-135m's key-value cache alone (float32)")

#: ``options="auto"`` of :func:`cogtestbed.transcript_nll`: the option sets declared for the record's
#: Psych-201 data set, if any.
AUTO = "auto"


@dataclass(frozen=True)
class CheckRequest:
    """The conformance suite's run, as :func:`cogtestbed.check` takes it (the experiment positional;
    ``cogtestbed check`` spells ``quick=False`` as ``--full``)."""

    quick: bool = option(True, cli=False,
                         help="Quick mode: small designs (False: the designs of the declared studies, as --full).")
    checks: Sequence[str] | None = option(None, cli_type=list[str] | None, flags=("--check",),
                                          help="Run only this check (repeatable).")
    data_dir: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None, flags=("--data",),
        help="Published data for the importer check (default $COGTESTBED_DATA_DIR).")


@dataclass(frozen=True)
class ExportRequest(Importer, Overwrite, variant(  # type: ignore[misc]
        Output, present={"output": {"cli_type": Path, "cli_required": True}},
        helps={"output": "File to write (.jsonl, or .zip holding one)."}),
        variant(ExperimentName, present={"experiment": {"flags": ("--experiment",)}}, helps={  # type: ignore[misc]
            "experiment": "Experiment of the table (default: its experiment column, or the importer's)."})):
    """A trial table written in another format, as :func:`cogtestbed.export` takes it (the table
    positional); the command line requires ``--to`` and ``--output``."""

    to: Literal["psych201"] = option("psych201", cli_type=str, cli_required=True, flags=("--to",),
                                     help="Format: psych201 (JSON Lines, one record per subject).")


@dataclass(frozen=True)
class MetricsRequest(Sessions, Importer):
    """What is read for the metrics, as :func:`cogtestbed.metrics` takes it (the experiment and the
    table positional, the experiment's own metrics options as further keywords)."""


@dataclass(frozen=True)
class TranscriptNllRequest(MaxLength):
    """A model's per-choice log-likelihood on transcripts, as :func:`cogtestbed.transcript_nll` takes
    it (the model and the transcripts positional; the command line reads one Psych-201 file)."""

    #: ``llm``: one in-process model scored (the function's positional argument), not the LLMs run (``--llm``)
    scored_llm: Any = option("hf:smollm2-135m", cli_type=str, name="llm", help="An in-process model (hf:...).")
    participants: Sequence[str] | None = option(
        None, cli_type=list[str] | None, flags=("--participant", "-p"),
        help="Only this participant id; repeatable (default: every participant).")
    options: Any = option(
        AUTO, cli=False,
        help="The options of each choice: auto (the option sets declared for the record's Psych-201 data set), None, "
             "a list or a function (cogtestbed.llm_adapters.runs.transcript.transcript_nll).")
    overflow: str = option(
        "refuse", help="A transcript longer than the model's context: refuse, truncate (score the first window's "
                       "choices, as Centaur's script cuts the text) or window (sliding window).")
    window: int | None = option(None, min=1, max=MAX_CONTEXT_TOKENS, cost=TOKENS_IN_MEMORY,
                                help="Tokens per forward pass (default: the model's context).")
    min_context: int | None = option(
        None, min=1, max=MAX_CONTEXT_TOKENS, cost=TOKENS_IN_MEMORY,
        help="With --overflow window: tokens each choice is conditioned on at least (default: half the window).")
    measures: Sequence[str] = option(
        ("psych201", "choice"), cli_type=list[str], flags=("--measure",),
        help="What to compute; repeatable: psych201 (Psych-201's evaluation: summed token NLL per response span, "
             "text cut to --max-length; with Centaur's per-response average) and choice (the per-choice NLL).")
    batch_tokens: int = option(16384, min=1, max=MAX_CONTEXT_TOKENS, cost=TOKENS_IN_MEMORY,
                               help="psych201 measure: padded tokens per batch of participants that share their "
                                    "opening tokens (memory).")
    share_prefix: bool = option(True, help="psych201 measure: run a shared opening once and reuse its key-value "
                                           "cache (off: one plain pass per participant).")
    onednn: bool = option(False, help="The shared passes' linear layers through oneDNN's packed float32 kernels "
                                      "(CPU; about 1.5x faster on AMD CPUs; values differ by float32 rounding, "
                                      "some 1e-4 nats on a participant of 100 choices).")
    checkpoint: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None, help="A JSON Lines file of finished participants: those in it are read back, "
                                         "new ones appended as they finish (resume after a kill).")


@dataclass(frozen=True)
class ValidateRequest(MaxLength):
    """A Psych-201 file checked for every defect, as :func:`cogtestbed.validate` takes it (the file
    positional)."""



@dataclass(frozen=True)
class HeldoutRequest(variant(Seed, helps={"seed": "Seed of the held-out draw (test a count)."}),  # type: ignore[misc]
                     variant(CognitiveModel, defaults={"model": MISSING},  # type: ignore[misc]
                             helps={"model": "The experiment's model to fit, e.g. rw-pm."})):
    """A cognitive model fitted on training subjects and scored on held-out ones, as
    :func:`cogtestbed.heldout_nll` takes it (the experiment and the trials positional; no command)."""

    #: ``test``: the held-out subjects, not a metrics result's test (``--test``)
    held_out: Sequence[Hashable] | int = option(
        cli=False, name="test", help="The held-out subjects: their ids, or how many to draw (seeded by seed).")
    n_starts: int | None = option(None, cli=False,
                                  help="Optimizer starts of the pooled fit (default: the model's own).")
