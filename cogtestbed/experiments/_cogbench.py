"""Pieces shared by the CogBench experiment declarations (Coda-Forno et al. 2024)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from cogtestbed.experiments.spec import Decoding, Importer, PhenotypeReference

CITATION = ("Coda-Forno, J., Binz, M., Wang, J. X. & Schulz, E. (2024). CogBench: a large language "
            "model walks into a psychology lab. ICML 2024.")
#: CogBench's decoding (Sec. 3, Methods): "We set the temperature parameter to zero, leading to
#: deterministic responses, and retained the default values for all other parameters."
DECODING = Decoding(0.0, "Coda-Forno et al. 2024, Sec. 3: \"We set the temperature parameter to zero\"")


def cogbench_importer(load: Callable[[Path], pd.DataFrame], columns: tuple[str, ...],
                      excluded: tuple[str, ...] = (), file_columns: Mapping[str, str] | None = None,
                      key: tuple[str, ...] = ("run", "trial"), may_differ: tuple[str, ...] = (),
                      repeat_key: tuple[str, ...] = ()) -> dict[str, Importer]:
    """The ``cogbench`` importer of a task: ``load``, recognising files by their ``columns``
    (and the absence of ``excluded`` ones); ``file_columns`` names the CogBench columns that
    trial-table columns are read from (CogBench's ``run`` is always the ``subject``); ``key`` and
    ``may_differ`` as in :class:`~cogtestbed.experiments.spec.Importer` (the importer's own);
    ``repeat_key`` for a file without trial key (``load`` then takes ``sessions``)."""
    from cogtestbed.data.cogbench import looks_like_cogbench

    names = {"subject": "run", **(file_columns or {})}
    return {"cogbench": Importer("cogbench", load, lambda p: looks_like_cogbench(p, columns, excluded), names,
                                 key, may_differ, repeat_key)}


def behaviour(key: str, label: str, human: float, random: float, task: str) -> PhenotypeReference:
    """A behavioural phenotype metric with CogBench's human / random raw values (Fig. 2)."""
    return PhenotypeReference(key, label, "behaviour", human, random, task)


def performance(label: str, human: float, random: float, task: str) -> PhenotypeReference:
    """The performance phenotype metric of a task with CogBench's human / random raw values."""
    return PhenotypeReference("performance", label, "performance", human, random, task)
