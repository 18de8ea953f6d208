"""The ``psych201`` importer of an experiment: Psych-201 transcripts read by per-data-set parsers.

An experiment declares the Psych-201 data sets it reads in its spec, like its other importers::

    from cogtestbed.experiments._psych201 import psych201_importer

    SPEC = ExperimentSpec(..., importers={**cogbench_importer(...),
                                          **psych201_importer("two-step", {"shahar2019twosteptask": parse_shahar})})

A parser (:data:`cogtestbed.data.psych201.Parser`) turns one participant's
:class:`~cogtestbed.data.psych201.Record` into that participant's trial rows (``session``,
``trial``, stimulus columns, ``action``, ``reward``, ``valid``, extra columns after ``valid``);
the importer numbers the participants (subjects 0, 1, … in
:func:`~cogtestbed.data.psych201.participant_order`, their ids kept in ``participant``), adds the
common columns and hands the table to the schema check.  Every importer also reads the transcripts
``cogtestbed export --to psych201`` writes of its experiment (data set ``cogtestbed/<name>``), and an
experiment that declares none still has that one (:meth:`ExperimentSpec.importer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from cogtestbed.data.psych201 import OWN_DATA_SET, Parser, data_set_of, first_record, read_table_records
from cogtestbed.experiments._importer import Importer

#: The importer's (and ``--from``'s) name.
SOURCE = "psych201"


def psych201_importer(experiment: str, parsers: Mapping[str, Parser] | None = None,
                      refused: Mapping[str, str] | None = None) -> dict[str, Importer]:
    """``{"psych201": Importer}`` of ``experiment``: ``parsers`` maps a Psych-201 data set's name
    (the record's ``experiment`` field up to its first ``/``) to its parser; ``refused`` maps a
    data set the experiment recognises but does not read to the reason (the refusal's one line).
    The importer recognises (``sniff``) a ``.jsonl`` / ``.zip`` file whose first record is of one
    of those data sets, or a transcript of ``experiment`` written by this package."""
    own = dict(parsers or {})
    why = dict(refused or {})

    def load(path: Path) -> pd.DataFrame:
        return read_table_records(path, experiment, own, why)

    def sniff(path: Path) -> bool:
        record = first_record(path)
        if record is None or not isinstance(record.get("experiment"), str):
            return False
        name = record["experiment"]
        return name == f"{OWN_DATA_SET}/{experiment}" or data_set_of(name) in own

    return {SOURCE: Importer(SOURCE, load, sniff, tabular=False)}
