"""Options shared by several requests, declared once (issue 73, item 5): each a small frozen dataclass that a
request's sub-object inherits, so the option, its help, default, flags and limits exist in one place and every
command and ``ct.`` function taking it reads the same declaration (:mod:`cogtestbed.request`).

Their fields are keyword-only (a request's own fields may lack defaults); the command line, the ``ct.``
functions and the ``request`` block of an output file see them as the request's own options.
``tests/test_options_declared_once.py`` fails when an option name is declared in two request classes outside
its shrinking allowlist.  Imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

from cogtestbed.request import option

#: The help of ``sessions`` (every reader of published files).
SESSIONS_HELP = ("refuse (default) or split: a run of a file without trial key (CogBench probabilistic reasoning) "
                 "that judges a condition again is refused, or numbered as the run's next session.")


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


__all__ = ["SESSIONS_HELP", "Assured", "BetweenSubjects", "Compared", "LapseTerm", "Level", "MaxLength", "Sessions",
           "Workers"]
