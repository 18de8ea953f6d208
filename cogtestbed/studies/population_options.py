"""Every option of building a human population (``cogtestbed population build``,
:func:`cogtestbed.build_population`, :func:`cogtestbed.population_from_fit`), declared once: the command line's options
and the ``ct.`` functions' keywords are made from these requests
(:mod:`cogtestbed.request`).

A type is what the ``ct.`` function accepts; ``cli_type`` what the command line parses.  Imports
nothing heavy: the command line builds its help from here.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.bounds import Cost
from cogtestbed.option_groups import MAX_DRAWS, Chains, CognitiveModel, MaxDraws, Output, Overwrite, Seed
from cogtestbed.request import option, variant
from cogtestbed.simulate_options import EXPERIMENT_ARGUMENT, ExperimentName

if TYPE_CHECKING:
    import pandas as pd


MODEL_HELP = "Model fitted hierarchically, e.g. hybrid."
NAME_HELP = "The population's name."
SOURCE_HELP = "Where the data came from (paper, data set)."
UNCONVERGED_HELP = "Keep a fit with R-hat > 1.01 or divergences (refused without it)."
TABLE_HELP = "Trial table of people (Parquet/CSV, or a file an importer of the experiment reads)."


@dataclass(frozen=True, kw_only=True)
class PopulationKept(variant(CognitiveModel, defaults={"model": MISSING}, helps={"model": MODEL_HELP})):  # type: ignore[misc]
    """What a population keeps of its people and their fit (every way of making one): the fitted table, the
    model, the population's name, where the data came from and whether an unconverged fit may be kept."""

    table_or_path: pd.DataFrame | str | os.PathLike[str] | None = option(cli_type=Path, argument=True,
                                                                         cli_name="table", help=TABLE_HELP)
    name: str = option(help=NAME_HELP)
    #: ``source``: a population's provenance (``--source``), not the importer of a table (``--from``)
    provenance: str = option("", flags=("--source",), name="source", help=SOURCE_HELP)
    allow_unconverged: bool = option(False, flags=("--allow-unconverged",), help=UNCONVERGED_HELP)


@dataclass(frozen=True)
class BuildPopulationRequest(
        PopulationKept, Overwrite,
        variant(Output, present={"output": {"cli_type": Path, "cli_required": True}},  # type: ignore[misc]
                helps={"output": "Population file to write (.json)."}),
        variant(Chains, limits={"chains": (2, None)}, helps={  # type: ignore[misc]
            "draws": "Draws per chain (as many tuning steps unless --tune).", "chains": "Chains."}),
        variant(MaxDraws, defaults={"max_draws": 8000}, helps={  # type: ignore[misc]
            "max_draws": "Draws per chain are doubled up to this while only R-hat or ESS fail."}),
        variant(Seed, helps={"seed": "Sampler seed."}),  # type: ignore[misc]
        variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                helps={"experiment": "Experiment of the trial table, e.g. two-step."})):
    """A population fitted and written, as ``cogtestbed population build`` and
    :func:`cogtestbed.build_population` take it (the command line's ``TABLE`` is the function's
    ``table_or_path``)."""

    from_source: str = option("auto", flags=("--from",), help="Importer of the table (auto: detected).")
    tune: int | None = option(None, cli_type=int, min=1, max=MAX_DRAWS,
                              cost=Cost("tuning steps per chain", note="each a sampler step, as costly as a draw"),
                              help="Tuning steps per chain (default: as many as the draws).")
    sampler: Literal["auto", "nutpie", "pymc", "gibbs"] = option(
        "auto", cli_type=str, help="auto (nutpie where installed), nutpie, pymc, or gibbs (experimental): "
        "Metropolis-within-Gibbs with per-subject HMC and mode jumps, every parameter centred (for subjects with "
        "two posterior modes).")


@dataclass(frozen=True)
class PopulationFromFitRequest(variant(PopulationKept, defaults={"table_or_path": None}, helps={  # type: ignore[misc]
        "model": "The fitted model.",
        "table_or_path": "The fitted table (or its path): each subject's MLE is kept too, which a plan of an LLM "
                         "against these people compares with."}),
        variant(ExperimentName, defaults={"experiment": MISSING}, helps={  # type: ignore[misc]
            "experiment": "The fitted table's experiment."})):
    """A population kept from a hierarchical fit one already has, as :func:`cogtestbed.population_from_fit`
    takes it (no command: ``population build`` fits and keeps in one go)."""

    #: ``fit``: the fit object (the function's positional argument), not a plan's choice of fit (``--fit``)
    bayes_fit: Any = option(argument=True, cli=False, name="fit", help="A hierarchical fit of the model (BayesFit).")
