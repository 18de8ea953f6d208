"""The people's own trials per subject, checked before the experiment is imported.

A plan of an LLM against people (``--human TABLE``, or ``--population`` beside one ``--llm``) plays the people's
own trials per subject; other ``trials`` are refused (:func:`~cogtestbed.planning.request.equal_trials`:
at unequal trials the two-group test of per-subject estimates does not hold its level).  The study built by
:func:`~cogtestbed.planning.request.run_power` refuses them too, but only after the experiment's module,
its compiled kernels and the table are loaded (1.2 s CPU from a cold command line).  :func:`refuse_other_trials`
reads only what the count needs (the Parquet table's ``subject`` column through pyarrow, or the population file's
``trials``), so the refusal of a request and its people comes in well under a second, with the same line.

It refuses only what the later check would refuse with the same line: a request that another option sends to
an earlier refusal there (``looks``, ``fit`` hierarchical or a ``design`` list beside people), a table an
importer reads (not Parquet) or a table without a ``subject`` column is left to that check.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cogtestbed.planning.plan_options import PlanRequest
from cogtestbed.planning.request import equal_trials, human_trials, modal_count
from cogtestbed.planning.sizes import Sizes

#: The plan kinds whose study plays the people's trials (:func:`~cogtestbed.planning.request._study`).
PEOPLE_KINDS = frozenset({"power", "sequential", "hierarchical"})


def refuse_other_trials(kind: str, req: PlanRequest) -> None:
    """Refuse ``req``'s ``trials`` where they are not its people's own trials per subject (one line, the line
    :func:`~cogtestbed.planning.request.equal_trials` gives), reading no more than the count needs; a
    request it cannot judge without the experiment passes (the study's own check judges it)."""
    if kind not in PEOPLE_KINDS or req.sizes.trials is None or req.sizes.design or req.sequential.looks is not None \
            or req.analysis.fit != "mle":
        return
    trials = Sizes.of(req.sizes.trials, "trials")
    human = req.people.human
    if human is not None:
        n = _table_trials(human)
        if n is not None:
            source = str(human) if isinstance(human, (str, os.PathLike)) else "the human sample"
            equal_trials(trials, n, f"the `human` sample {source}")
        return
    llms = [req.llms.llm] if isinstance(req.llms.llm, str) else list(req.llms.llm or [])
    if req.people.population is None or req.target.effect is None or req.target.precision is not None \
            or len(llms) != 1:
        return
    from cogtestbed.inference.population import load_population

    n = load_population(req.people.population).trials
    if n is not None:
        equal_trials(trials, int(n), "a population's people")


def _table_trials(human: Any) -> int | None:
    """The most common number of rows a subject has in the table ``human`` (the largest where several are as
    common: :func:`~cogtestbed.planning.request.human_trials`), from its ``subject`` column alone (a
    Parquet file's read through pyarrow, never through pandas); None where that cannot be read so (a file an
    importer reads, no such column, a missing value)."""
    if isinstance(human, (str, os.PathLike)):
        return modal_count(_parquet_rows(Path(human))) or None
    if hasattr(human, "columns") and "subject" in human.columns and not human["subject"].isna().any():
        return human_trials(human) or None
    return None


def _parquet_rows(path: Path) -> list[int]:
    """The rows of each subject of the Parquet table ``path`` (empty: not such a table with a complete
    ``subject`` column); pyarrow's compute functions count them, so pandas is not imported."""
    if path.suffix != ".parquet" or not path.is_file():
        return []
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
        if "subject" not in table.schema_arrow.names:
            return []
        column = table.read(columns=["subject"]).column("subject")
    except Exception:  # not a Parquet file: the study's reading refuses it in its own words
        return []
    if column.null_count:
        return []
    return [int(n) for n in pc.value_counts(column).field("counts").to_pylist()]


__all__ = ["PEOPLE_KINDS", "refuse_other_trials"]
