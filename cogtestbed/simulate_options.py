"""Every option of a simulation (``cogtestbed simulate``, :func:`cogtestbed.simulate`), declared once
: :class:`SimulateRequest` and its sub-objects, from which the command line's options
and help panels and ``ct.simulate``'s keywords are made (:mod:`cogtestbed.request`).

A type is what :func:`cogtestbed.simulate` accepts; ``cli_type`` what the command line parses.
Imports nothing heavy: the command line builds its help from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.option_groups import (
    MAX_SIMULATED_SUBJECTS,
    Adaptive,
    AgentParams,
    FormSD,
    Output,
    Overwrite,
    PopulationSource,
    PromptForms,
    Seed,
    SessionTrials,
    SubjectCount,
    SubjectSessions,
)
from cogtestbed.request import as_items, as_name, group, option, variant

if TYPE_CHECKING:  # types only: the command line's help imports no environment and no experiment
    from cogtestbed.environments.designs import Design
    from cogtestbed.experiments.spec import ExperimentSpec

#: The simulation paths (the values of ``cogtestbed.simulation.Method``, repeated here so that the
#: command line's help imports no numerical package; a test keeps them equal).
Method = Literal["auto", "batch", "interpreted", "step"]


@dataclass(frozen=True, kw_only=True)
class ExperimentName:
    """The experiment a request is about: a shared option group (as those of :mod:`cogtestbed.option_groups`),
    here because its type names an experiment spec, which this layer may know."""

    experiment: str | ExperimentSpec | None = option(
        None, record=as_name, cli_type=str | None, flags=("--experiment", "-e"),
        help="Experiment name. Default: the table's experiment column, else the one experiment declaring the model.")


#: :class:`ExperimentName` as the command's first positional argument (``run [EXPERIMENT]``), and required
#: (``simulate EXPERIMENT``; with ``defaults={"experiment": MISSING}``).
OPTIONAL_EXPERIMENT_ARGUMENT = {"experiment": {"argument": True, "flags": ()}}
EXPERIMENT_ARGUMENT = {"experiment": {"argument": True, "flags": (), "cli_type": str}}


@dataclass(frozen=True, kw_only=True)
class DesignFields:
    """The design's fields set (the experiment's defaults otherwise): a shared option group (as those of
    :mod:`cogtestbed.option_groups`), here because its type names a design, which this layer may know."""

    design: Design | Mapping[str, Any] | Sequence[str] | None = option(
        None, record=as_items, cli_type=list[str] | None, flags=("--design",),
        help="Design field NAME=VALUE (repeatable), e.g. network=alarm; NAME=a,b,c on the experiment's trials field "
             "(n_contexts, trials_per_session, ...) sweeps it. Default: the design's defaults (cogtestbed list "
             "EXPERIMENT).")


@dataclass(frozen=True)
class SimulatedSubjects(
        variant(AgentParams, present={"params": {"flags": ("--param", "-p")}},  # type: ignore[misc]
                helps={"params": "Agent parameter NAME=VALUE (repeatable); defaults otherwise."}),
        PopulationSource,
        # the table's memory, estimated from the design, refuses far fewer subjects than this in one line
        variant(SubjectCount, limits={"subject_count": (None, MAX_SIMULATED_SUBJECTS)}),  # type: ignore[misc]
        variant(Seed, helps={"seed": "Seed of the whole simulation."})):  # type: ignore[misc]
    """Who is simulated: how many, with which parameters."""


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
class SimulatedSessions(
        variant(DesignFields, helps={"design": "Design field NAME=VALUE (repeatable), e.g. visits_per_casino=48."}),  # type: ignore[misc]
        PromptForms, FormSD, Adaptive, SessionTrials, SubjectSessions):
    """The sessions they play: the design, the prompt forms, adaptive trials."""

    #: ``method``: the simulation's path, not a model's fit (``--method mle``)
    simulation: Method = option(
        "auto", name="method",
        help="batch: numba kernels; interpreted: the same kernels as plain Python (no compilation); step: gymnasium "
             "reset/step loop; auto: interpreted for the first run of a process estimated at most 1.0 s of Python, "
             "else batch (identical output).")


@dataclass(frozen=True)
class SimulateRequest(
        Overwrite, variant(Output, present={"output": {"cli_type": Path, "cli_required": True}},  # type: ignore[misc]
                           helps={"output": "Trial table to write (.parquet)."}),
        variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                helps={"experiment": "Experiment name, e.g. instrumental-learning."})):
    """A simulation, as ``cogtestbed simulate`` and :func:`cogtestbed.simulate` take it."""

    #: ``agent``: the agent simulated, by name (its parameters ``--param``), not ``AGENT[:p=v,...]`` of a target
    agent_name: str = option(flags=("--agent", "-a"), name="agent", help="Synthetic agent, e.g. rw-pm.")
    who: SimulatedSubjects = group(SimulatedSubjects, "Subjects")
    sessions: SimulatedSessions = group(SimulatedSessions, "Sessions")
    lapses: Lapses = group(Lapses, "Lapses")
