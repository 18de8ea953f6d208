"""Every option of a simulation (``cogtestbed simulate``, :func:`cogtestbed.simulate`), declared once
(issue 51, item 2): :class:`SimulateRequest` and its sub-objects, from which the command line's options
and help panels and ``ct.simulate``'s keywords are made (:mod:`cogtestbed.request`).

A type is what :func:`cogtestbed.simulate` accepts; ``cli_type`` what the command line parses.
Imports nothing heavy: the command line builds its help from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.option_groups import Overwrite, PopulationSource, Seed
from cogtestbed.request import as_items, as_name, as_text, group, option, variant

if TYPE_CHECKING:  # a type only: the command line's help imports no environment
    from cogtestbed.environments.designs import Design

#: The simulation paths (the values of ``cogtestbed.simulation.Method``, repeated here so that the
#: command line's help imports no numerical package; a test keeps them equal).
Method = Literal["auto", "batch", "interpreted", "step"]


@dataclass(frozen=True)
class SimulatedSubjects(PopulationSource, variant(Seed, helps={"seed": "Seed of the whole simulation."})):  # type: ignore[misc]
    """Who is simulated: how many, with which parameters."""

    params: Mapping[str, Any] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--param", "-p"),
        help="Agent parameter NAME=VALUE (repeatable); defaults otherwise.")
    subjects: int = option(10, min=1, help="Number of simulated subjects.")


@dataclass(frozen=True)
class Lapses:
    """Lapses simulated in the synthetic answers (also a sub-object of every study's request)."""

    lapse_invalid: float = option(
        0.0, flags=("--lapse-invalid",),
        help="Rate of invalid answers per step or trial (recorded invalid, as an unparseable LLM answer).")
    lapse_random: float = option(
        0.0, flags=("--lapse-random",),
        help="Rate of uniformly random answers per step or trial (over the valid answers).")


@dataclass(frozen=True)
class SimulatedSessions:
    """The sessions they play: the design, the prompt forms, adaptive trials."""

    #: ``method``: the simulation's path, not a model's fit (``--method mle``)
    simulation: Method = option(
        "auto", name="method",
        help="batch: numba kernels; interpreted: the same kernels as plain Python (no compilation); step: gymnasium "
             "reset/step loop; auto: interpreted for the first run of a process estimated at most 1.0 s of Python, "
             "else batch (identical output).")
    design: Design | Mapping[str, Any] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--design",),
        help="Design field NAME=VALUE (repeatable), e.g. visits_per_casino=48.")
    forms: str | Sequence[int] | None = option(
        None, record=as_text, cli_type=str | None, flags=("--forms",),
        help="Prompt forms: K (forms 0..K-1) or ids 0,2,3; subjects are assigned to them, balanced and seeded "
             "(cogtestbed list EXP shows the forms).")
    form_sd: Mapping[str, float] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--form-sd",),
        help="PARAM=SD (repeatable): each form shifts PARAM by a Normal(0, SD) offset on its unconstrained scale "
             "(synthetic subjects; needs --forms).")
    adaptive: Sequence[str] | str | None = option(
        None, record=as_text, cli_type=str | None, flags=("--adaptive",),
        help="PARAM[,PARAM] or all: an adaptive session, each next trial chosen to maximise the expected information "
             "on these parameters of the experiment's model (needs --trials).")
    trials: int | None = option(None, flags=("--trials",), min=1,
                                help="Trials of an adaptive session (with --adaptive).")


@dataclass(frozen=True)
class SimulateRequest(Overwrite):
    """A simulation, as ``cogtestbed simulate`` and :func:`cogtestbed.simulate` take it."""

    experiment: Any = option(cli_type=str, argument=True, record=as_name,
                             help="Experiment name, e.g. instrumental-learning.")
    #: ``agent``: the agent simulated, by name (its parameters ``--param``), not ``AGENT[:p=v,...]`` of a target
    agent_name: str = option(flags=("--agent", "-a"), name="agent", help="Synthetic agent, e.g. rw-pm.")
    output: str | os.PathLike[str] | None = option(None, cli_type=Path, cli_required=True, flags=("--output", "-o"),
                                                   help="Trial table to write (.parquet).")
    who: SimulatedSubjects = group(SimulatedSubjects, "Subjects")
    sessions: SimulatedSessions = group(SimulatedSessions, "Sessions")
    lapses: Lapses = group(Lapses, "Lapses")
