"""What a plan kind is: one question a plan answers, declared as a :class:`PlanKind`.

A plan kind declares the request it accepts (the options it reads, :attr:`PlanKind.accepts`), checks it
before anything is simulated (:attr:`PlanKind.check`), runs it (:attr:`PlanKind.run`), writes its payload
(:attr:`PlanKind.write`) and says it as text (:attr:`PlanKind.lines`).  The package's own kinds and the
registry that serves them, the command line, :func:`cogtestbed.plan` and :meth:`cogtestbed.Plan.save` are in
:mod:`cogtestbed.planning.plan_kinds`; another package adds one with
:func:`~cogtestbed.planning.plan_kinds.register_plan_kind` or the entry-point group
``cogtestbed.plan_kinds`` (CONTRIBUTING.md, "Adding a plan kind").

Imports nothing heavy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: What a plan says while it works (one line at a time), or None for silence.
Say = Callable[[str], None] | None


@dataclass(frozen=True)
class PlanContext:
    """What a plan kind is given beside its request: the public layer's readers and pricers (the planning
    layer imports nothing above it) and the progress lines' receiver.

    ``read_table(exp, table_or_path, source, sessions)`` → ``(table, source)`` reads a trial table of the
    experiment (:func:`cogtestbed.api.core.read_table`); ``dry_run``: kept for plug-in kinds
    (the package's own kinds, the adaptive one included, price through
    :class:`~cogtestbed.planning.pricing.Pricer`: one price); ``say``: progress lines
    (None: silence)."""

    read_table: Callable[..., Any]
    dry_run: Callable[..., Any] | None = None
    say: Say = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KindOption:
    """An option a plan kind declares for itself (:attr:`PlanKind.options`): ``ct.plan(..., NAME=VALUE)`` takes it
    for that kind only (another kind refuses it; a name no kind declares is refused as an unknown keyword).  Its
    ``name`` may not be one of :class:`~cogtestbed.planning.plan_options.PlanRequest`'s options; ``default``
    is what the kind's run sees when it is not given; ``help`` says what it means, one line."""

    name: str
    default: Any = None
    help: str = ""


@dataclass(frozen=True)
class Planned:
    """A kind's answer: the payload its file holds and the name of the axis it sized."""

    payload: dict[str, Any]
    size_name: str = "subjects"


def _nothing(exp: Any, req: Any) -> None:
    """A kind that checks nothing beyond :attr:`PlanKind.accepts`."""


def _json_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    return [json.dumps(payload.get("chosen", payload), default=str)]


def _never(req: Any) -> bool:
    return False


@dataclass(frozen=True)
class PlanKind:
    """One plan question.

    ``name``: its registered name (the ``question`` option names it; the file it writes is ``NAME.json``
    unless ``write`` says otherwise); ``question``: what it answers, one line (``cogtestbed plan --help``,
    docs/plan.md); ``run(exp, request, context)`` → :class:`Planned`; ``claims(request)``: whether a request
    that names no ``question`` asks this one (kinds asked in ``order``, lowest first; the first that
    claims it plans it); ``check(exp, request)``: the refusals reachable from the request alone, each one
    line, before anything is simulated; ``accepts``: the options (flat keywords of
    :class:`~cogtestbed.planning.plan_options.PlanRequest`) it reads, any other given refused in
    one line (None: every option); ``write(payload, folder)`` → the files written; ``lines(payload,
    size_name)``: the plan as text; ``frontier``: whether its payload has a cost-power frontier to plot;
    ``facts``: whether ``check`` reads no more of the experiment than its
    :class:`~cogtestbed.planning.facts.ExperimentFacts` (it then runs on the shipped facts of a package
    experiment before the experiment is imported, and again on the experiment); ``protocol(seed)``: its use of
    the evaluation protocol (:mod:`~cogtestbed.planning.protocol`): the
    :class:`~cogtestbed.planning.protocol.SeedStreams` it draws from at ``seed``, with the figures it
    prints reported from the reporting stream (None: not declared; :func:`~cogtestbed.
    planning.protocol.check_kind` refuses it); ``options``: the options the kind declares for itself beyond the
    request's (:class:`KindOption`; its run reads them from :attr:`PlanContext.options`)."""

    name: str
    question: str
    run: Callable[[Any, Any, PlanContext], Planned]
    claims: Callable[[Any], bool] = _never
    check: Callable[[Any, Any], None] = _nothing
    accepts: frozenset[str] | None = None
    order: int = 100
    write: Callable[[Mapping[str, Any], Path], dict[str, Path]] | None = None
    lines: Callable[[Mapping[str, Any], str], list[str]] = _json_lines
    frontier: bool = False
    facts: bool = False
    protocol: Callable[[int], Any] | None = None
    options: tuple[KindOption, ...] = ()

    def save(self, payload: Mapping[str, Any], out: Path) -> dict[str, Path]:
        """Write ``payload`` into the folder ``out`` (``write``, else ``NAME.json``)."""
        if self.write is not None:
            return self.write(payload, out)
        from cogtestbed.outputs import atomic_write_bytes

        dest = out / f"{self.name}.json"
        atomic_write_bytes(dest, lambda tmp: tmp.write_text(json.dumps(payload, indent=1, default=str)))
        return {self.name: dest}


__all__ = ["KindOption", "PlanContext", "PlanKind", "Planned", "Say"]
