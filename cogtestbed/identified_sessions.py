"""The sessions a subject needs before its design identifies a model's parameters, shipped for every package
experiment × model at the experiment's default design, read without importing any experiment or numerical package.

``identified_sessions.json`` beside this module holds, per experiment and model, each parameter's
``sessions_to_identify`` from :func:`cogtestbed.identifiability.identifiability` at the default design
(seeded; the simulated subjects of :data:`cogtestbed.identifiability.REFUSAL_CHAINS`; null: no subject of up to
:data:`cogtestbed.identifiability.MAX_SESSIONS` sessions identifies it), written by ``python -m
cogtestbed.identifiability``.  ``plan`` refuses from it in well under a second where the request alone decides
(a model target at the default design); ``simulate`` and ``fit`` warn from it once.

``identified_rule.json`` holds, for the experiments of :data:`cogtestbed.identifiability.RULE_EXPERIMENTS`,
each parameter's ``sessions_for_tolerance``: the fewest sessions a subject that identify it by the design
check's rule (expected SE over the population at most 0.5 x the population's SD: r about 0.89; null: not up to
:data:`cogtestbed.identifiability.MAX_SUGGESTED_SESSIONS`).  ``fit`` reads it to say which parameters a table's
subjects are too small for (:func:`rule_line`), even where they are of full rank.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

#: The shipped table (:func:`shipped_sessions`).
SHIPPED = Path(__file__).with_name("identified_sessions.json")
#: The shipped rule table (:func:`rule_line`).
SHIPPED_RULE = Path(__file__).with_name("identified_rule.json")
#: The rule's tolerance, implied r and cap (those of :mod:`cogtestbed.identifiability`, repeated so that reading the
#: table imports no numerical package).
RULE_WORDS = "expected SE at most 0.5 x the population's SD: r about 0.89"
RULE_CAP = 1000


@functools.cache
def _read(path: Path) -> dict[str, dict[str, dict[str, int | None]]]:
    """A shipped ``{EXPERIMENT: {MODEL: {PARAMETER: sessions}}}`` table, read once (empty: not shipped)."""
    if not path.exists():
        return {}
    data: dict[str, dict[str, dict[str, int | None]]] = json.loads(path.read_text())
    return data


def rule_line(experiment: str, model: str, sessions: int, word: str = "session(s)",
              flag: str = "--sessions") -> str | None:
    """One line naming the parameters a subject of ``sessions`` sessions of the default design does not identify
    by the design check's rule, with the sessions the check suggests (None: it identifies every parameter, or no
    rule is shipped for the pair)."""
    need = _read(SHIPPED_RULE).get(experiment, {}).get(model)
    if need is None:
        return None
    missing = [p for p, k in need.items() if k is None or k > sessions]
    if not missing:
        return None
    reached = [int(k) for k in need.values() if k is not None]
    never = [p for p, k in need.items() if k is None]
    suggested = (f"the check suggests {max(reached)} sessions a subject ({flag} {max(reached)})" if reached
                 else "no size the check tries identifies any")
    tail = f"; not identified up to {RULE_CAP} sessions: {', '.join(never)}" if never else ""
    return (f"{experiment} / {model}: by the design check's rule ({RULE_WORDS}) a subject of {sessions} {word} "
            f"does not identify {', '.join(missing)}; {suggested}{tail}")


def shipped_sessions(experiment: str, model: str) -> dict[str, int | None] | None:
    """``{PARAMETER: sessions_to_identify}`` of ``model`` at ``experiment``'s default design (None: not shipped)."""
    return _read(SHIPPED).get(experiment, {}).get(model)


def unidentified_at(experiment: str, model: str, sessions: int) -> tuple[list[str], int | None] | None:
    """(the parameters a subject of ``sessions`` sessions of the default design does not identify, the fewest
    sessions that identify every parameter, None where none up to the check's limit does); None where
    nothing is shipped for the pair."""
    need = shipped_sessions(experiment, model)
    if need is None:
        return None
    missing = [p for p, k in need.items() if k is None or k > sessions]
    smallest = None if any(k is None for k in need.values()) else max([1, *[int(k) for k in need.values()
                                                                            if k is not None]])
    return missing, smallest


def refusal_line(experiment: str, model: str, sessions: int, flag: str = "--sessions",
                 word: str = "session(s)") -> str | None:
    """The one line naming what a subject of ``sessions`` sessions of the default design does not identify and
    the smallest design that does (``flag``: the option that sets it); None where it identifies every parameter
    or nothing is shipped."""
    found = unidentified_at(experiment, model, sessions)
    if found is None or not found[0]:
        return None
    missing, smallest = found
    return format_refusal(experiment, model, sessions, missing, smallest, flag, word)


def format_refusal(experiment: str, model: str, sessions: int, missing: list[str], smallest: int | None,
                   flag: str = "--sessions", word: str = "session(s)", limit: int = 128) -> str:
    """The refusal line of :func:`refusal_line` (and :meth:`cogtestbed.identifiability.DesignInformation.refusal`)."""
    fix = (f"the smallest design that identifies them is {smallest} sessions a subject ({flag} {smallest})"
           if smallest is not None else f"no design of up to {limit} sessions a subject identifies them")
    return (f"{experiment} / {model}: a subject of {sessions} {word} does not identify {', '.join(missing)}; "
            f"{fix}")


class IdentificationWarning(UserWarning):
    """Subjects whose sessions do not identify every parameter of a model (``simulate`` and ``fit`` go on)."""


def warn_unidentified(experiment: str, model: str, sessions: int, what: str,
                      rule_what: str | None = None, flag: str = "--sessions") -> str | None:
    """Warn once (one :class:`IdentificationWarning`, one line) where a subject of ``sessions`` sessions of the
    default design does not identify a parameter of ``model``: rank-deficient (:func:`refusal_line`) or, with
    ``rule_what`` given, of full rank but not identified by the design check's rule (:func:`rule_line`);
    ``what`` (``rule_what``): how the line ends (what the caller does anyway); ``flag``: the option that sets the
    sessions.  Returns the line (None: nothing to warn)."""
    import warnings

    line = refusal_line(experiment, model, sessions, flag)
    if line is not None:
        line = f"{line}; {what}"
    elif rule_what is not None and (ruled := rule_line(experiment, model, sessions, flag=flag)) is not None:
        line = f"{ruled}; {rule_what}"
    if line is not None:
        warnings.warn(line, IdentificationWarning, stacklevel=3)
    return line
