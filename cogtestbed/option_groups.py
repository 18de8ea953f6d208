"""Options shared by several requests, declared once: each a small frozen dataclass that a
request's sub-object inherits, so the option, its help, default, flags and limits exist in one place and every
command and ``ct.`` function taking it reads the same declaration (:mod:`cogtestbed.request`).

Their fields are keyword-only (a request's own fields may lack defaults); the command line, the ``ct.``
functions and the ``request`` block of an output file see them as the request's own options.
``tests/test_options_declared_once.py`` fails when an option name is declared in two request classes outside
its shrinking allowlist.  Imports nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cogtestbed.bounds import Cost
from cogtestbed.request import as_items, as_list, as_name, as_text, option

#: The help of ``sessions`` (every reader of published files).
SESSIONS_HELP = ("refuse (default) or split: a run of a file without trial key (CogBench probabilistic reasoning) "
                 "that judges a condition again is refused, or numbered as the run's next session.")

#: The help of ``population`` (every command drawing simulated subjects from people).
POPULATION_HELP = ("Draw the subjects' parameters from a population: human:NAME (shipped; `cogtestbed population "
                   "list`) or a population file (`cogtestbed population build`): one posterior draw of the people's "
                   "group parameters per simulated data set, subjects scattered by its SDs; in a plan with one --llm, "
                   "--model and --effect, the parameter's difference between the LLM and these people (their "
                   "per-subject MLE, their number fixed).")


@dataclass(frozen=True, kw_only=True)
class Level:
    """The test level of a power target."""

    level: float = option(0.05, help="Test level alpha (two-sided).")


@dataclass(frozen=True, kw_only=True)
class Compared:
    """Two settings of one agent whose metric difference is detected."""

    compare: tuple[str, str] | None = option(
        None, help="Two settings of one agent, AGENT:p=v,... AGENT:p=v,... (with --metric).")


@dataclass(frozen=True, kw_only=True)
class Assured:
    """The assurance of a precision target."""

    assurance: float = option(0.9, min=0.0, max=1.0, help="Assurance Q of a --precision target.")


@dataclass(frozen=True, kw_only=True)
class BetweenSubjects:
    """The spread of simulated subjects around the population median."""

    sd_between: float = option(0.5, help="Between-subject SD, unconstrained scale.")


@dataclass(frozen=True, kw_only=True)
class LapseTerm:
    """The lapse term of a fitted model."""

    lapse: str = option("none", flags=("--lapse",), help="Lapse term of the fitted model: none, fit (rate fitted) or "
                                                         "fixed=E.")


@dataclass(frozen=True, kw_only=True)
class SubjectSessions:
    """How many sessions one subject plays, all with its one parameter set."""

    #: ``sessions``: sessions of one subject, not how a published file's judgements become sessions (``--sessions``)
    subject_sessions: int | None = option(
        None, name="sessions", flags=("--sessions",), min=1, max=100_000,
        help="Sessions (games, blocks, runs) of each subject, all with the subject's one parameter set: the table "
             "numbers them `session` 0..K-1 under one `subject`, as `fit` reads them (default: the experiment's "
             "default subject: horizon 1000 games, CogBench's, over the design check's suggested size; 1 elsewhere).")


@dataclass(frozen=True, kw_only=True)
class Sessions:
    """How a published file's repeated judgements become sessions."""

    sessions: str | None = option(None, flags=("--sessions",), help=SESSIONS_HELP)


@dataclass(frozen=True, kw_only=True)
class Seed:
    """The seed of what a request draws at random (a study, a simulation, a sampler's chains)."""

    seed: int = option(0, help="Seed of the whole study.")


@dataclass(frozen=True, kw_only=True)
class FitMethod:
    """The fit of a model: per-subject maximum likelihood or the hierarchical model."""

    method: Literal["mle", "hierarchical"] = option("mle", cli_type=str, help="mle or hierarchical.")


#: Most posterior draws per chain a fit may take (and sample again up to), and what each costs: every chain
#: keeps each draw of every parameter (a 30-subject, 3-parameter model: about 100 numbers, 8 bytes each, in
#: each of 4 chains, and its posterior file writes them again).
MAX_DRAWS = 100_000
DRAW_COST = Cost("posterior draws per chain", bytes=2 * 4 * 100 * 8.0,
                 at="for 4 chains of a 30-subject, 3-parameter model")
#: Most chains a fit may run; each is a sampler of its own with its own draws.
MAX_CHAINS = 64
CHAIN_COST = Cost("chains", note="each a sampler of its own, tuned and drawn in full")


@dataclass(frozen=True, kw_only=True)
class Chains:
    """A hierarchical fit's MCMC draws and chains."""

    draws: int = option(1000, min=1, max=MAX_DRAWS, cost=DRAW_COST, help="Posterior draws per chain (hierarchical).")
    chains: int = option(4, min=1, max=MAX_CHAINS, cost=CHAIN_COST, help="Chains (hierarchical).")


@dataclass(frozen=True, kw_only=True)
class MaxDraws:
    """How far a hierarchical fit failing only its ESS or R-hat checks samples again."""

    max_draws: int | None = option(
        None, flags=("--max-draws",), min=1, max=MAX_DRAWS, cost=DRAW_COST,
        help="Where a run fails only its ESS or R-hat checks (no divergences), sample again with twice the draws per "
             "chain, up to this many.")


@dataclass(frozen=True, kw_only=True)
class HeadlineMetric:
    """The metric a target or a validity study reads."""

    metric: str | None = option(None, help="Headline metric whose difference is detected.")


@dataclass(frozen=True, kw_only=True)
class MetricTest:
    """A declared test of the metrics result."""

    test: str | None = option(None, help="Key of the metrics result holding a test (p_value/reject).")


@dataclass(frozen=True, kw_only=True)
class AgentSetting:
    """A synthetic agent and its parameter setting."""

    agent: str | None = option(None, help="AGENT[:p=v,...] under which --test runs.")


@dataclass(frozen=True, kw_only=True)
class Effect:
    """The effect a model-level target detects."""

    effect: Mapping[str, float] | str | None = option(
        None, record=as_items, cli_type=str | None,
        help="NAME=SIZE: a model parameter or contrast (with two --llm or --human: the difference of the second "
             "group's median over the first's).")


@dataclass(frozen=True, kw_only=True)
class MaxCost:
    """The dollars an LLM run may cost."""

    max_cost: float | None = option(None, min=0.0, help="Refuse designs costing more (USD).")


@dataclass(frozen=True, kw_only=True)
class LLMs:
    """The LLM(s) a run or a plan names."""

    llm: str | Sequence[str] | None = option(
        None, record=as_list, cli_type=list[str] | None, flags=("--llm",),
        help="BACKEND:MODEL — hf:smollm2-135m (a real model, offline), hf:tiny-random, hf:<hub id or path>, "
             "openai:gpt-4o-mini, anthropic:claude-...; keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.  Give it "
             "twice (base and instruct, say) to run both on the same sessions and write a paired report.")


@dataclass(frozen=True, kw_only=True)
class AgentParams:
    """A synthetic agent's parameter settings."""

    params: Mapping[str, Any] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--param",),
        help="Agent parameter NAME=VALUE (repeatable): settings the model lacks, or the agent's base.")


@dataclass(frozen=True, kw_only=True)
class PromptForms:
    """The prompt forms subjects are assigned to."""

    #: ``forms``: the forms used (K or ids), not the counts of forms a plan searches (``plan --forms``)
    assigned_forms: str | Sequence[int] | None = option(
        None, name="forms", record=as_text, cli_type=str | None, flags=("--forms",),
        help="Prompt forms: K (forms 0..K-1) or ids 0,2,3; subjects are assigned to them, balanced and seeded "
             "(cogtestbed list EXP shows the forms).")


@dataclass(frozen=True, kw_only=True)
class FormSD:
    """How far each prompt form shifts a parameter (synthetic subjects)."""

    form_sd: Mapping[str, float] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--form-sd",),
        help="PARAM=SD (repeatable): each form shifts PARAM by a Normal(0, SD) offset on its unconstrained scale "
             "(synthetic subjects; needs --forms).")


@dataclass(frozen=True, kw_only=True)
class Adaptive:
    """The parameters an adaptive session's trials are chosen for."""

    adaptive: str | Sequence[str] | None = option(
        None, record=as_text, cli_type=str | None, flags=("--adaptive",),
        help="PARAM[,PARAM] or all: an adaptive session, each next trial chosen to maximise the expected information "
             "on these parameters of the experiment's model (needs --trials).")


#: Most subjects one request may run or fit.
MAX_SUBJECTS = 100_000
#: Most subjects ``simulate`` may draw (streamed to its table; the table's memory is checked first).
MAX_SIMULATED_SUBJECTS = 10**9
SUBJECT_COST = Cost("subjects", note="each a whole session: its rows of the trial table, a run's calls, a fit")


@dataclass(frozen=True, kw_only=True)
class SubjectCount:
    """How many subjects are simulated or run."""

    #: ``subjects``: one count, not a grid of counts (``recover``, ``power``) or a range a plan searches
    subject_count: int = option(10, name="subjects", min=1, max=MAX_SUBJECTS, cost=SUBJECT_COST,
                                help="Number of simulated subjects.")


@dataclass(frozen=True, kw_only=True)
class SessionTrials:
    """The length of an adaptive session."""

    #: ``trials``: an adaptive session's length, not the trials of a whole design (a study's or a plan's)
    session_trials: int | None = option(None, name="trials", flags=("--trials",), min=1, max=10_000,
                                        cost=Cost("adaptive trials per session", cpu_seconds=0.015,
                                                  at="at the slowest choice (15 CPU-ms), per subject"),
                                        help="Trials of an adaptive session (with --adaptive).")


@dataclass(frozen=True, kw_only=True)
class Output:
    """Where a command writes what it makes."""

    output: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None, flags=("--output", "-o"),
        help="Write results.parquet, summary.json, plots and report.html here.")


@dataclass(frozen=True, kw_only=True)
class InputPath:
    """The file a command reads."""

    path: str | os.PathLike[str] = option(cli_type=Path, argument=True,
                                          help="Trial table (.parquet) or published data file.")


@dataclass(frozen=True, kw_only=True)
class CognitiveModel:
    """The cognitive model fitted, recovered or planned for."""

    model: str | None = option(None, help="Model of an --effect target, e.g. rw-pm.")


@dataclass(frozen=True, kw_only=True)
class Importer:
    """How a table or published data file is read."""

    source: str = option("auto", flags=("--from",), help="auto (detect), trials, or an importer such as cogbench.")


#: Most local worker processes; each imports the package and its numerical libraries.
MAX_WORKERS = 256
WORKER_COST = Cost("worker processes", bytes=200e6, at="(each imports the package: about 200 MB)")


@dataclass(frozen=True, kw_only=True)
class Workers:
    """The local worker processes of simulated studies."""

    workers: int | None = option(None, min=1, max=MAX_WORKERS, cost=WORKER_COST,
                                 help="Local worker processes (default: CPUs).")


@dataclass(frozen=True, kw_only=True)
class MaxLength:
    """The evaluation's text length (Psych-201)."""

    max_length: int = option(32768, flags=("--max-length",), min=1, max=100_000_000,
                             cost=Cost("characters of text per participant", bytes=4.0,
                                       note="each tokenised and scored"),
                             help="The evaluation's maximum text length in characters (Psych-201 eval.py).")


@dataclass(frozen=True, kw_only=True)
class Overwrite:
    """Whether a command may overwrite what it writes."""

    force: bool = option(False, flags=("--force",), help="Overwrite the output files (or folder) where they exist.")


@dataclass(frozen=True, kw_only=True)
class JsonOutput:
    """Whether a command prints JSON (the command line's own option)."""

    as_json: bool = option(False, flags=("--json",), api=False, json=False, help="Print the result as one JSON object.")


@dataclass(frozen=True, kw_only=True)
class PriceTable:
    """The price table of an LLM run or plan."""

    prices: str | os.PathLike[str] | None = option(None, cli_type=Path | None,
                                                   help="Price table (TOML) overriding the defaults.")


@dataclass(frozen=True, kw_only=True)
class DaskScheduler:
    """Where simulated studies run (not recorded: an address is the machine's, not the request's)."""

    dask: str | None = option(None, flags=("--dask",), json=False,
                              help="Dask scheduler address: the simulated studies run there.")


@dataclass(frozen=True, kw_only=True)
class Base:
    """The population medians of simulated subjects."""

    base: Mapping[str, float] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--base",),
        help="Population median NAME=VALUE before the effect (repeatable).")


@dataclass(frozen=True, kw_only=True)
class PopulationSource:
    """The population simulated subjects are drawn from."""

    population: Any = option(None, record=as_name, cli_type=str | None, flags=("--population",),
                             help=POPULATION_HELP)


#: The most tokens an answer or a call's hidden reasoning may be asked for: no served model answers more (the
#: largest output limits are in the hundreds of thousands); a larger one is a typo.  Our default, no paper's.
MAX_TOKENS_CAP = 1_000_000


@dataclass(frozen=True, kw_only=True)
class ReasoningSettings:
    """A reasoning model's settings (a run sends them; a plan prices the run they make)."""

    reasoning_effort: str | None = option(
        None, help="A reasoning model's reasoning_effort (OpenAI: low | medium | high; gpt-5 also minimal): the "
                   "values each model takes are in the capability table (docs/llm-runs.md).")
    thinking_budget: int | None = option(
        None, max=MAX_TOKENS_CAP, cost=Cost("hidden tokens per call", note="each billed at the output price"),
        help="Hidden tokens a reasoning model may spend per call before its answer: Anthropic's extended "
                   "thinking on with this budget_tokens (>= 1024); for OpenAI's reasoning models the tokens reserved "
                   "(default 8192). The completion limit is this plus --max-tokens.")


#: Most re-asks after an unparseable answer: a model that fails 100 times in a row will not answer.
MAX_REASK = 100


@dataclass(frozen=True, kw_only=True)
class AnswerSettings:
    """How each answer is asked for (a run sends them; a plan prices the run they make)."""

    max_tokens: int | None = option(
        None, min=1, max=MAX_TOKENS_CAP,
        help="Tokens per answer. Default: the experiment's (8 for a one-line answer; belief-coherence 64).")
    temperature: float | None = option(
        None, min=0.0, help="Sampling temperature; default: the experiment's paper's (magnitude 0.7, CogBench and "
                            "collider 0), else 0 (greedy); the run's manifest records which.")
    reask: int = option(0, min=0, max=MAX_REASK, cost=Cost(
        "re-asks per unparseable answer", note="each another paid call of the whole prompt"),
        help="Re-asks after an unparseable answer.")


@dataclass(frozen=True, kw_only=True)
class Unpriced:
    """What a model without a price may do."""

    allow_unpriced: bool = option(
        False, flags=("--allow-unpriced",),
        help="A model without a price: count calls and tokens only (a plan ranks its designs by tokens, a --dry-run "
             "reports no dollars); without it such a plan or dry run is refused.")


@dataclass(frozen=True, kw_only=True)
class BatchMode:
    """The provider's batch API (a run sends through it; a plan prices its runs at its price)."""

    batch: bool = option(
        False, flags=("--batch",),
        help="Send the requests through the provider's batch API (OpenAI Batch API, Anthropic Message Batches) at its "
             "batch price; sessions play in parallel waves, one batch per step. A plan prices its runs so (the "
             "table's batch_discount off, the standard price shown beside it).")


__all__ = ["POPULATION_HELP", "SESSIONS_HELP", "Adaptive", "AgentParams", "AgentSetting", "AnswerSettings", "Assured",
           "Base", "BatchMode", "BetweenSubjects", "Chains", "CognitiveModel", "Compared", "DaskScheduler", "Effect",
           "FitMethod", "FormSD", "HeadlineMetric", "Importer", "InputPath", "JsonOutput", "LLMs", "LapseTerm",
           "Level", "MaxCost", "MaxDraws", "MaxLength", "MetricTest", "Output", "Overwrite", "PopulationSource",
           "PriceTable", "PromptForms", "ReasoningSettings", "Seed", "SessionTrials", "Sessions", "SubjectCount",
           "Unpriced", "Workers"]
