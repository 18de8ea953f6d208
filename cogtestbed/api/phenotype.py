"""CogBench's normalised behavioural and performance profile of agents (``cogtestbed
phenotype``; the paper's Fig. 2): :func:`phenotype`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError
from cogtestbed.request import build, derive_api
from cogtestbed.runs.phenotype_options import PhenotypeRequest

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Phenotype:
    """The profile: ``table`` (one row per agent and metric: raw value, the random and human
    references, the ``signed`` and ``absolute`` normalised values), the ``flags`` (metrics whose
    normalisation says nothing), the ``normalisation`` shown and the ``files`` written.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per agent and metric: raw, references, normalised.
    normalisation : str
        The normalisation shown.
    flags : list of str
        Metrics whose normalisation says nothing.
    files : list of pathlib.Path
        The files written.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.simulate_file("instrumental-learning", "rw-pm", subjects=2, seed=1, output="trials.parquet")
    192
    >>> profile = ct.phenotype(["trials.parquet"])
    >>> profile.normalisation, profile.to_dict()["agents"]
    ('signed', ['rw-pm'])
    """

    table: pd.DataFrame
    normalisation: str
    flags: list[str]
    files: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """What ``phenotype --json`` prints and ``phenotype.json`` holds."""
        return {"normalisation": self.normalisation, "agents": list(dict.fromkeys(self.table["agent"])),
                "rows": self.table.to_dict(orient="records"), "flags": self.flags}


@public(paths=('paths',))
@derive_api(PhenotypeRequest)
def phenotype(paths: Sequence[str | os.PathLike[str]], **options: Any) -> Phenotype:
    """Normalise agents' CogBench metrics (random = 0, human = 1) read from CogBench CSVs
    (``<Task>/<agent>.csv``), trial tables or folders of them (``paths``); ``agents``: only these;
    ``kind``: ``behaviour``, ``performance`` or ``all``; ``normalisation``: ``signed``
    ((x - random) / (human - random), as the paper) or ``absolute``.  ``output``: also write
    phenotype.csv, phenotype.json and one PNG figure per kind (``force`` overwrites).
    ``sessions``: ``split`` numbers a second judgement of a condition within one run of a
    CogBench file without trial key (probabilistic reasoning: claude-1.csv and claude-2.csv hold
    such runs) as that run's next session; the default refuses such a file in one line.  It
    applies to those files only (the others' rows have a trial key).

    Returns
    -------
    Phenotype
        ``.table`` (one row per agent and metric, raw and normalised), ``.flags``, ``.files``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.simulate_file("instrumental-learning", "rw-pm", subjects=2, seed=1, output="trials.parquet")
    192
    >>> profile = ct.phenotype(["trials.parquet"])
    >>> sorted(set(profile.table["agent"]))
    ['rw-pm']
    """
    from cogtestbed.outputs import output_dir

    req = build(PhenotypeRequest, {**options, "paths": paths})
    agents, experiment, kind, normalisation = req.agents, req.experiment, req.kind, req.normalisation
    output, force, sessions = req.output, req.force, req.sessions
    if kind not in ("behaviour", "performance", "all"):
        raise InputError(f"`kind` must be behaviour, performance or all, got {kind!r}")
    if normalisation not in ("signed", "absolute"):
        raise InputError(f"`normalisation` must be signed or absolute, got {normalisation!r}")
    kinds = ("behaviour", "performance") if kind == "all" else (kind,)
    out = None if output is None else Path(output)
    with output_dir(out, force):
        return _phenotype([Path(p) for p in paths], None if agents is None else list(agents), experiment, kinds,
                          normalisation, out, sessions)


def _phenotype(paths: list[Path], agents: list[str] | None, experiment: str | None, kinds: tuple[str, ...],
               normalisation: str, output: Path | None, sessions: str | None = None) -> Phenotype:
    from cogtestbed.outputs import atomic_write_bytes
    from cogtestbed.runs.phenotype import metrics_from_files, phenotype_table, plot_phenotype, table_flags
    from cogtestbed.trials import write_json_atomic

    results = metrics_from_files(paths, agents, experiment, kinds, sessions)
    if not results:
        raise InputError("no metrics found: no file matched a registered CogBench experiment/agent")
    table = phenotype_table(results, kinds)
    result = Phenotype(table, normalisation, table_flags(table))
    if output is not None:
        atomic_write_bytes(output / "phenotype.csv", lambda tmp: table.to_csv(tmp, index=False))
        write_json_atomic(output / "phenotype.json", result.to_dict())
        result.files += [output / "phenotype.csv", output / "phenotype.json"]
        for k in kinds:
            if (table["kind"] == k).any():
                result.files.append(plot_phenotype(table, output / f"phenotype_{k}.png", k,  # type: ignore[arg-type]
                                                   normalisation))  # type: ignore[arg-type]
    return result
