"""Every option of a CogBench phenotype (``cogtestbed phenotype``, :func:`cogtestbed.phenotype`), declared
once: :class:`PhenotypeRequest`, from which the command line's options and
``ct.phenotype``'s keywords are made (:mod:`cogtestbed.request`).  Imports nothing heavy."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogtestbed.option_groups import JsonOutput, Output, Overwrite, Sessions
from cogtestbed.request import option, variant
from cogtestbed.simulate_options import ExperimentName


@dataclass(frozen=True)
class PhenotypeRequest(Sessions, Overwrite, JsonOutput, variant(Output, helps={  # type: ignore[misc]
        "output": "Folder for phenotype.csv, phenotype.json and the PNG figures."}),
        variant(ExperimentName, present={"experiment": {"flags": ()}}, helps={  # type: ignore[misc]
            "experiment": "Experiment of every CSV (default: from the folder name or the file's columns)."})):
    """A phenotype, as ``cogtestbed phenotype`` and :func:`cogtestbed.phenotype` take it."""

    paths: Sequence[str | os.PathLike[str]] = option(
        cli_type=list[Path], argument=True,
        help="CogBench CSVs (<Task>/<agent>.csv), trial tables (.parquet) or folders of them.")
    agents: Sequence[str] | None = option(None, cli_type=list[str] | None, flags=("--agent", "-a"),
                                          help="Only these agents (file stems / agent column); repeatable.")
    kind: str = option("all", help="behaviour, performance or all.")
    normalisation: str = option(
        "signed", help="signed: (x-random)/(human-random) as the paper; absolute: |x-random|/|human-random|.")
