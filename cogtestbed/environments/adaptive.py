"""What an environment needs to play an adaptive session: the design fields that ask for
one, and the chooser of each next trial, which the experiment's spec provides.

An environment whose trials can be chosen freely gives its design class :class:`AdaptiveFields`
(``adaptive``: the parameters to learn about; ``trials``: the session's length) and, when
``design.adaptive`` is set, asks :func:`chooser_for` for a :class:`TrialChooser` at the start of
every session: ``choose()`` names the next candidate of the experiment's design space,
``update(candidate, answer)`` feeds each valid answer back.  The chooser (a posterior over the
model's parameters, :mod:`cogtestbed.inference.adaptive`) lives above this layer, so the spec
registers a factory for it (:func:`register_chooser`) when it is declared; environments stay free
of models.  Because the chooser is deterministic given the answers, every path that plays the
environment (simulation's step path, an LLM run, its dry run) plays the same adaptive session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, Field

from cogtestbed.errors import InputError


class TrialChooser(Protocol):
    """Chooses each next trial of one adaptive session."""

    def choose(self) -> int:
        """Index of the next trial in the design space."""

    def update(self, design: int, answer: Any) -> None:
        """Learn from ``answer`` to candidate ``design``."""


ChooserFactory = Callable[[Any], TrialChooser]
#: Trial-table column of an adaptive session: the index of each trial's design in the design space
#: (the stimulus columns hold the design itself); with the answers it replays the session.
DESIGN_COLUMN = "design_index"
_FACTORIES: dict[str, ChooserFactory] = {}


class AdaptiveFields(BaseModel):
    """Design fields of an adaptive session (mixed into an experiment's design class)."""

    adaptive: tuple[str, ...] = Field(
        default=(), description="parameters whose expected information chooses each next trial "
        "; empty: the published fixed design")
    trials: int = Field(default=0, ge=0, le=10_000,
                        description="trials of an adaptive session (0 with no adaptive parameters)")


def is_adaptive(design: Any) -> bool:
    """Whether ``design`` asks for an adaptive session."""
    return bool(getattr(design, "adaptive", ()))


def register_chooser(experiment: str, factory: ChooserFactory) -> None:
    """Declare how sessions of ``experiment`` choose their trials (called by its spec)."""
    _FACTORIES[experiment] = factory


def chooser_for(experiment: str, design: Any) -> TrialChooser:
    """A fresh chooser for one session of ``design`` (refused in one line where none is declared)."""
    if experiment not in _FACTORIES:
        raise InputError(f"{experiment}: no adaptive design space is declared (build the environment "
                         "through its experiment spec: cogtestbed.get_experiment)")
    return _FACTORIES[experiment](design)
