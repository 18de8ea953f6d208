"""Options shared by several requests, declared once (issue 73, item 5): each a small frozen dataclass that a
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
from typing import Any

from cogtestbed.request import as_items, as_name, option

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
class Sessions:
    """How a published file's repeated judgements become sessions."""

    sessions: str | None = option(None, flags=("--sessions",), help=SESSIONS_HELP)


@dataclass(frozen=True, kw_only=True)
class Workers:
    """The local worker processes of simulated studies."""

    workers: int | None = option(None, min=1, help="Local worker processes (default: CPUs).")


@dataclass(frozen=True, kw_only=True)
class MaxLength:
    """The evaluation's text length (Psych-201)."""

    max_length: int = option(32768, flags=("--max-length",),
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


__all__ = ["POPULATION_HELP", "SESSIONS_HELP", "Assured", "Base", "BetweenSubjects", "Compared", "DaskScheduler",
           "JsonOutput", "LapseTerm", "Level", "MaxLength", "Overwrite", "PopulationSource", "PriceTable", "Sessions",
           "Workers"]
