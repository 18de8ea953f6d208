"""What one fitted unit is: a subject of the table, one of its sessions, or every run of
one agent pooled as one participant — stated by every fit, chosen the same way in Python
(:func:`cogtestbed.fit`, :func:`cogtestbed.fit_and_save`) and on the command line (``fit --unit``).

* ``subject``: each ``subject`` of the table, with all its sessions;
* ``session``: each (subject, session) on its own;
* ``agent``: the runs of each agent pooled as sessions of one participant (CogBench scores the
  runs of one LLM as one participant; :func:`cogtestbed.trials.pool_runs`), within a prompt form;
* ``auto`` (the default): ``agent`` where the experiment pools sessions
  (:attr:`~cogtestbed.experiments.spec.ExperimentSpec.pooling_unit`) and no agent's runs carry
  different true parameters, else ``subject``.

Simulated subjects whose true parameters (``param_*`` columns) differ, and different human
participants (a ``participant`` column), are never pooled: ``auto``
fits them one by one and ``agent`` refuses them (:class:`~cogtestbed.errors.InputError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.experiments.spec import ExperimentSpec

FitUnit = Literal["auto", "subject", "session", "agent"]
FIT_UNITS: tuple[str, ...] = ("auto", "subject", "session", "agent")


@dataclass(frozen=True)
class FitUnits:
    """The unit a fit was run on: its name, how many there were and why that unit."""

    unit: str
    n_units: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "n_units": self.n_units, "unit_reason": self.reason}

    def line(self) -> str:
        """One sentence: ``30 subjects fitted: …``."""
        noun = {"subject": "subject", "session": "session", "agent": "agent (runs pooled)"}[self.unit]
        plural = noun if self.n_units == 1 else noun.replace("subject", "subjects").replace(
            "session", "sessions").replace("agent ", "agents ")
        return f"{self.n_units} {plural} fitted: {self.reason}"


def differing_truth(table: pd.DataFrame, by: str = "agent") -> str | None:
    """A sentence naming a true parameter (``param_*``) that differs between the runs one value of
    ``by`` would pool, or None (no such column, or equal within every group).  Different people
    (a ``participant`` column, the ids of imported human data: Psych-201) are never pooled either."""
    import numpy as np

    if "participant" in table.columns and table.groupby(
            table[by].astype(str) if by in table.columns else np.zeros(len(table)), sort=False
    )["participant"].nunique().max() > 1:
        return "different participants (the table's participant ids: human data) are never pooled"
    cols = [c for c in table.columns if str(c).startswith("param_")]
    if not cols:
        return None
    keys = table[by].astype(str) if by in table.columns else None
    groups = table.groupby(keys, sort=False) if keys is not None else [("", table)]
    for key, g in groups:
        for c in cols:
            values = g[c].dropna().unique()
            if len(values) > 1:
                where = f" within agent {key!r}" if keys is not None else ""
                return (f"simulated subjects with different true parameters ({str(c).removeprefix('param_')} "
                        f"takes {len(values)} values{where}) are never pooled")
    return None


def choose_units(exp: ExperimentSpec, table: pd.DataFrame, unit: str = "auto",
                 separate_runs: bool = False) -> tuple[pd.DataFrame, FitUnits]:
    """The table relabelled so that each ``subject`` is one fitted unit, and the stated unit
    (see the module docstring).  ``separate_runs`` (``--separate-runs``) is ``unit="subject"``."""
    import pandas as pd

    if unit not in FIT_UNITS:
        raise InputError(f"`unit` must be one of {', '.join(FIT_UNITS)}, got {unit!r}")
    if separate_runs:
        if unit not in ("auto", "subject"):
            raise InputError(f"`separate_runs` fits each run (subject of the table) on its own; it contradicts "
                             f"`unit` {unit}")
        unit = "subject"
    pools = exp.pooling_unit == "session"
    mixed = differing_truth(table) if unit in ("auto", "agent") else None  # read only for those two
    if unit == "auto":
        if pools and mixed is None:
            unit, reason = "agent", ("the experiment pools sessions: the runs of each agent are one participant "
                                     "(CogBench's convention); --unit subject fits each run on its own")
        elif pools:
            unit, reason = "subject", f"each subject on its own: {mixed}"
        else:
            unit, reason = "subject", "each subject on its own with all its sessions (the experiment's unit)"
    elif unit == "agent":
        if mixed is not None:
            raise InputError(f"`unit` agent would pool {mixed.removesuffix(' are never pooled')}: simulated "
                             "subjects with different true parameters are never pooled; fit them with `unit` subject")
        reason = "the runs of each agent pooled as one participant (as asked)"
    elif unit == "subject":
        reason = "each subject on its own with all its sessions (as asked)"
    else:
        reason = "each session on its own (as asked)"
    if unit == "agent":
        table = pool_runs_within_forms(table)
    elif unit == "session":
        run = pd.factorize(pd.MultiIndex.from_arrays([table["subject"], table["session"]]), sort=True)[0]
        table = table.assign(subject=run.astype("int64"), session=0)
    return table, FitUnits(unit, int(table["subject"].nunique()), reason)


def pool_runs_within_forms(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`~cogtestbed.trials.pool_runs` by agent, and by form where the table has forms (an
    agent's runs in different prompt forms are different units of a forms analysis)."""
    from cogtestbed.environments.forms import FORM_COLUMN
    from cogtestbed.trials import pool_runs

    if FORM_COLUMN not in table.columns:
        return pool_runs(table)
    agent = table["agent"].astype(str) if "agent" in table.columns else ""
    unit = agent + "|form " + table[FORM_COLUMN].astype(str)
    return pool_runs(table.assign(_pool_unit=unit), by="_pool_unit").drop(columns="_pool_unit")


__all__ = ["FIT_UNITS", "FitUnit", "FitUnits", "choose_units", "differing_truth", "pool_runs_within_forms"]
