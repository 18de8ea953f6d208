"""Every option of a plan (``cogtestbed plan``, :func:`cogtestbed.plan`), declared once:
:class:`PlanRequest` and its sub-objects.  The command line's options and help panels, ``ct.plan``'s
keywords and the ``request`` block of ``plan.json`` are made from these declarations
(:mod:`cogtestbed.request`); :func:`~cogtestbed.planning.request.run_plan` reads them.

A type is what :func:`cogtestbed.plan` accepts; ``cli_type`` what the command line parses (text for a
mapping, a repeatable ``NAME=VALUE`` for a list of assignments).  Imports nothing heavy: the command
line builds its help from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from cogtestbed.bounds import Cost
from cogtestbed.option_groups import (
    Adaptive,
    AgentParams,
    AgentSetting,
    AnswerSettings,
    Assured,
    Base,
    BatchMode,
    BetweenSubjects,
    CognitiveModel,
    Compared,
    DaskScheduler,
    Effect,
    FormSD,
    HeadlineMetric,
    Level,
    LLMs,
    MaxCost,
    MetricTest,
    PopulationSource,
    PriceTable,
    ReasoningSettings,
    Seed,
    Unpriced,
    Workers,
)
from cogtestbed.redact import redact_url
from cogtestbed.request import group, option, variant
from cogtestbed.simulate_options import EXPERIMENT_ARGUMENT, DesignFields, ExperimentName
from cogtestbed.studies.options import assignment_items, size_text


def _text(value: Any) -> str:
    """A value as the command line spells it (``--looks 3``, ``--adaptive a,b``)."""
    return value if isinstance(value, str) else ",".join(map(str, value)) if isinstance(value, list | tuple) \
        else str(value)


@dataclass(frozen=True)
class PlanTarget(Compared, Assured, Level, AgentSetting, MetricTest, HeadlineMetric, Effect, CognitiveModel):
    """What the plan must detect or estimate, and how surely."""

    question: str | None = option(
        None, help="The plan kind answering the question (power, sequential, hierarchical, precision, adaptive, mix, "
                   "forms, or a registered one; `cogtestbed plan --help`). Default: chosen from the other options.")
    precision: Mapping[str, float] | str | None = option(
        None, record=assignment_items, cli_type=str | None,
        help="PARAM=HALFWIDTH (with --model): plan for precision instead of power, the cheapest design where "
             "P(|estimate - truth| <= HALFWIDTH) >= --assurance for one subject's MLE of PARAM. Default: none.")
    power: float = option(0.8, help="Target power.")


@dataclass(frozen=True)
class People(PopulationSource):
    """The people an LLM is compared with (one typed group, passed unchanged to the plan kind): a
    sample of people's trials (``human``) or a population of people (``population``); neither: LLMs alone."""

    human: Any = option(
        None, cli_type=Path | None,
        help="A trial table of people (Parquet/CSV, or a file the experiment imports): with one --llm, --model and "
             "--effect, plan the parameter's difference between the LLM and this sample (fitted once per subject).")


@dataclass(frozen=True)
class PlanSizes(variant(DesignFields, helps={  # type: ignore[misc]
        "design": "Design field NAME=VALUE (repeatable); NAME=a,b,c on an integer field (n_contexts, "
                  "trials_per_session, n_reps, ...) gives the values searched: one list at a time, the other fields "
                  "fixed. Default: the design's defaults."})):
    """The sizes searched and the design fields fixed."""

    subjects: Any = option(None, record=size_text, cli_type=str | None,
                           help="Subjects range LO:HI (model-level target; default 10:200).")
    runs: Any = option(None, record=size_text, cli_type=str | None,
                       help="Runs range: units per setting (metric/test target; default 10:200) or sessions per "
                            "subject (pooled experiments).")
    trials: Any = option(
        None, record=size_text, cli_type=str | None,
        help="Range of trials in one run of the whole design (its n_trials), LO:HI or a comma list, reached through "
             "the experiment's trials field (default: the design's count to 5x). The same in the design's terms: "
             "--design FIELD=a,b,c.")


@dataclass(frozen=True)
class PlanSubjects(BetweenSubjects, Base,
                   variant(AgentParams, helps={"params": "Agent parameter NAME=VALUE."})):  # type: ignore[misc]
    """The simulated subjects: their parameters, their lapses, a pilot run's measurements."""

    invalid_rate: float | None = option(None, min=0.0, max=1.0,
                                        help="Expected share of invalid answers (simulated as lapses).")
    random_rate: float = option(0.0, min=0.0, max=1.0, help="Expected share of random answers.")
    pilot: str | os.PathLike[str] | None = option(
        None, cli_type=Path | None,
        help="Pilot run directory: its invalid rate, tokens per call and fitted parameters.")
    lapse_fit: str | None = option(
        None, help="Plan with the lapse-aware fit the researcher will use (model targets): none, fit (a lapse rate "
                   "fitted per subject) or fixed=E. Default: none.")


@dataclass(frozen=True)
class Pricing(PriceTable, ReasoningSettings, AnswerSettings, Unpriced, BatchMode, MaxCost,
              variant(LLMs, helps={  # type: ignore[misc]
                  "llm": "BACKEND:MODEL whose prices and tokenizer cost the design (twice for a difference between two "
                         "LLMs: in a metric, or with --model/--effect in a model parameter). Required for a power "
                         "target; optional with --precision (default: cost in trials)."})):
    """How a plan prices its design (one typed group, passed unchanged to the plan kind): the LLMs
    priced, their prices, batch pricing, the reasoning-token assumption and the answer settings (as run)."""

    assume_reasoning_tokens: str | None = option(
        None, help="A reasoning model's completion tokens per call, hidden ones included: N (priced from N/2 to 2N) "
                   "or LOW:HIGH; without it (or a --pilot of the model) a plan for a reasoning model is refused.")


#: The largest ``max_seconds`` of a plan (30 days: a limit beyond it limits nothing).
MAX_PLAN_SECONDS = 30 * 86_400
#: A simulated sequential study of the search (RW± optimism bias 0.2: about 42 subjects fitted, 1.9 CPU-ms each;
#: docs/benchmarks.md, ``bench_seqplan.py --auto``).
SEQ_STUDY_CPU_SECONDS = 0.08
#: Most simulated studies a sequential or monitor plan may ask for (25 times the monitor's default).
MAX_PLAN_SIMS = 50_000


@dataclass(frozen=True)
class PlanSequential:
    """A group-sequential plan (``--looks``)."""

    looks: int | str | None = option(
        None, record=_text, cli_type=str | None,
        help="Group-sequential plan: looks at equal shares of the size axis (2 or more), or auto: the looks (2-10), "
             "spending function and futility on/off with the cheapest expected cost meeting alpha and power.")
    spending: str = option("obrien-fleming", help="Alpha-spending of a sequential plan: obrien-fleming or pocock.")
    futility: bool = option(False, help="Non-binding futility bounds (beta-spending) too.")
    binding_futility: bool = option(
        False, help="Futility stops count in the type-I error (binding: the run must stop at a futility bound); "
                    "default non-binding.")
    null: str | None = option(None, help="AGENT[:p=v,...] under which a test's null holds (sequential plan of a "
                                         "test).")
    seq_sims: int | None = option(
        None, min=10, max=MAX_PLAN_SIMS,
        cost=Cost("simulated sequential studies", cpu_seconds=SEQ_STUDY_CPU_SECONDS, at="at RW± optimism bias 0.2"),
        help="Simulated sequential studies under the effect; default: as many as give --mc-se at the target power.")
    null_sims: int | None = option(
        None, min=10, max=MAX_PLAN_SIMS,
        cost=Cost("null studies (twice: one set calibrates, one measures)", cpu_seconds=2 * SEQ_STUDY_CPU_SECONDS,
                  at="at RW± optimism bias 0.2"),
        help="Simulated null studies of a sequential plan: as many calibrate its bounds and as many others measure "
             "its type-I error and the fixed design's (default: 1,000, or --seq-sims if more).")
    monitor: bool = option(
        False, help="Plan an anytime-valid monitor of a model effect or of a metric difference between two settings "
                    "(--compare) (a betting e-process looked at after every subject, its futility cap and expected "
                    "subjects and dollars) beside the fixed and the group-sequential design (3 looks, or --looks K) "
                    "at equal power; `run --monitor PLAN` runs a one-LLM plan subject by subject.")
    monitor_sims: int = option(
        2000, min=20, max=MAX_PLAN_SIMS,
        cost=Cost("simulated studies per hypothesis", bytes=18e3, cpu_seconds=2.7e-4,
                  at="at a 26-subject design (looks up to 78 subjects; more with a larger design)"),
        help="Simulated studies per hypothesis a --monitor plan looks at after every subject (null and effect).")


@dataclass(frozen=True)
class PlanFit:
    """The fit the researcher will report."""

    fit: str = option("mle", help="The fit the researcher will report (model targets): mle (the search's per-subject "
                                  "MLE t-test) or hierarchical (then the size is searched with the hierarchical PyMC "
                                  "fit from the MLE's choice, --fit-sims fresh studies per size tried, at most 4 "
                                  "sizes, and the plan is its choice: power, bias, coverage).")
    fit_sims: int | None = option(
        None, max=1_000,
        cost=Cost("hierarchical PyMC fits of a whole simulated study per size tried (up to 4 sizes)", cpu_seconds=10.0,
                  at="at 10 CPU-seconds a fit, the fast end (a fit takes seconds to minutes)"),
        help="Fresh studies --fit hierarchical fits per size it tries (default 20: power to +-0.09).")


@dataclass(frozen=True)
class PlanForms(FormSD):
    """A plan over prompt forms (the ``forms`` plan kind)."""

    forms: str | Sequence[int] | None = option(
        None, cli_type=str | None, flags=("--forms",), record=_text,
        help="Counts of prompt forms to plan over, e.g. 1,2,4,8 (with --model, --effect and --form-sd or --pilot): "
             "forms x subjects chosen jointly by dollars.")


#: The options of a plan over prompt forms: what ``plan --forms`` reads, the keywords of
#: :func:`cogtestbed.plan_forms` (which requires the first three).
PLAN_FORMS_OPTIONS = ("forms", "model", "effect", "form_sd", "llm", "pilot", "params", "base", "power", "level", "seed",
                      "design", "prices", "allow_unpriced", "max_tokens", "temperature", "reask", "reasoning_effort",
                      "thinking_budget", "assume_reasoning_tokens")


@dataclass(frozen=True)
class PlanAdaptive(variant(Adaptive, present={"adaptive": {"flags": ()}}, helps={  # type: ignore[misc]
        "adaptive": "PARAM[,PARAM] or all: with --precision PARAM=HALFWIDTH, the trials per session adaptive sessions "
                    "and fixed ones of the same design space need (posterior mean within HALFWIDTH of the truth, "
                    "unconstrained scale, with probability --assurance), each priced by --llm."})):
    """Adaptive sessions against fixed ones (``--adaptive``, with ``--precision``)."""

    adaptive_sims: int = option(
        200, min=2, max=10_000,
        cost=Cost("simulated subjects, each an adaptive and a fixed session", cpu_seconds=0.4,
                  at="at 60-trial sessions (docs/adaptive.md)"),
        help="Subjects drawn from the prior that plan --adaptive simulates.")


@dataclass(frozen=True)
class PlanMix:
    """A prediction-powered plan (``--mix``): people and a predictor's units mixed for one population mean."""

    mix: bool = option(
        False, help="Plan a prediction-powered mix (with --model, --estimand, --predictor, --human and --precision "
                    "PARAM=HALFWIDTH): the cheapest (people, predicted units) for the population mean's interval, "
                    "beside people alone, both priced (docs/mix.md).")
    estimand: str | None = option(None, help="The per-person estimand of a --mix plan: a parameter of --model.")
    predictor: str | None = option(
        None, help="A --mix plan's predictor: model (the model fitted on each person's short session), agent (a "
                   "random-parameter agent), llm (--llm continuing each person's short session) or a CSV/Parquet of "
                   "predictions (columns subject, prediction).")
    fee: float = option(10.0, min=0.0, help="Dollars paid a participant (a --mix plan's people; a nominal $10 "
                                           "unless given).")
    predictor_cost: float | None = option(
        None, min=0.0, help="Dollars a predicted unit costs (default: --fee x --short-share for the model predictor, "
                            "0.01 otherwise).")
    short_share: float = option(0.5, min=0.0, max=1.0,
                                help="Share of a person's trials the model predictor sees (a short session).")
    llm_trials: int | None = option(
        None, min=1, max=100_000, cost=Cost("LLM calls per person and stated option", note="each a scored call"),
        help="Trials after each person's short session the llm predictor answers (default: the rest of the session).")
    llm_base_url: str | None = option(None, record=redact_url,
                                      help="OpenAI-compatible endpoint the llm predictor's --llm is served at.")
    llm_max_calls: int | None = option(None, min=0, max=10**9,
                                       cost=Cost("calls", note="a cap, counted before any call"),
                                       help="Refuse an llm predictor needing more calls.")


@dataclass(frozen=True)
class PlanRequest(variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                          helps={"experiment": "Experiment name, e.g. instrumental-learning."}, positional=True),
                  Workers, DaskScheduler,
                  variant(Seed, helps={"seed": "Seed of the simulations and of the planned run."})):  # type: ignore[misc]
    """A fixed, sequential, precision or adaptive plan, as ``cogtestbed plan`` and :func:`cogtestbed.plan`
    take it; read and checked by :func:`~cogtestbed.planning.request.run_plan`."""

    llms: Pricing = group(Pricing, "LLMs and prices")
    target: PlanTarget = group(PlanTarget, "Target")
    people: People = group(People, "Target")
    sizes: PlanSizes = group(PlanSizes, "Sizes")
    simulated: PlanSubjects = group(PlanSubjects, "Simulated subjects")
    mc_se: float = option(0.03, help="Largest Monte-Carlo SE of the chosen design's power.")
    max_seconds: int | None = option(
        None, min=1, max=MAX_PLAN_SECONDS,
        help="Refuse, before it starts, a search that may run past this many seconds (timed on one simulated study "
             "x the studies the search needs, at the top of the searched range), naming the largest range that "
             "fits. The steps after the fixed search (looks, monitor, hierarchical refit) are not counted. "
             "Default: no limit.")
    sequential: PlanSequential = group(PlanSequential, "Sequential plan")
    analysis: PlanFit = group(PlanFit, "Fit")
    prompt_forms: PlanForms = group(PlanForms, "Prompt forms")
    adaptive_sessions: PlanAdaptive = group(PlanAdaptive, "Adaptive sessions")
    mixed: PlanMix = group(PlanMix, "Mixed subjects")
