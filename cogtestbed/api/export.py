"""``ct.export`` / ``cogtestbed export``: a trial table written in another format (Psych-201 JSON
Lines), checked to read back as the same table before the file is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public
from cogtestbed.api.workflow_options import ExportRequest
from cogtestbed.errors import DataError, InputError
from cogtestbed.request import build, derive_api

if TYPE_CHECKING:
    import pandas as pd

#: The formats :func:`export` writes.
EXPORT_FORMATS: tuple[str, ...] = ("psych201",)


@public(paths=("table_or_path",))
@derive_api(ExportRequest)
def export(table_or_path: pd.DataFrame | str | os.PathLike[str], **options: Any) -> list[dict[str, Any]]:
    """Write a trial table (a DataFrame, a ``.parquet`` file or any file an importer reads) as
    Psych-201 JSON Lines (``cogtestbed export TABLE --to psych201 -o FILE``); returns the records.

    A transcript table (:func:`cogtestbed.transcript_table`, or a scored one from
    :func:`cogtestbed.transcript_nll`), or any Psych-201 file given without ``experiment``, is
    written as it is: the file's own bytes (a zip's content; the archive is new), a scored table's
    extra columns added to each record as ``cogtestbed_scores``
    (:func:`cogtestbed.data.psych201_table.write_transcript_table`).  Otherwise:

    One record per subject (``text``, ``experiment`` = ``cogtestbed/<experiment>``,
    ``participant`` = the subject id): the experiment's description, the participant's agent and
    generating parameters, then one sentence per trial with the choice marked ``<<…>>``
    (:func:`cogtestbed.data.psych201.export_records`).  Reading the file back
    (``--from psych201``) gives the same table: every column, rows in canonical order; this is
    checked before anything is written (a table that would not read back is refused in one line,
    :class:`~cogtestbed.errors.DataError`).  ``output`` ends in ``.jsonl`` or ``.zip`` (None: only
    the records are returned); ``force`` overwrites it.  Rows are written in canonical order, so
    the file does not depend on the table's row order.

    Returns
    -------
    list of dict
        The Psych-201 records written (one per subject), checked to read back as the same table.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> records = ct.export(trials, experiment="instrumental-learning", output="psych201.jsonl")
    >>> len(records), records[0]["text"].startswith("You take part")
    (2, True)
    """
    from cogtestbed.api.core import experiment_for, get_experiment, read_table
    from cogtestbed.data.psych201 import decode_export, export_records, record_of
    from cogtestbed.outputs import claim_file
    from cogtestbed.schema import canonical_rows

    req = build(ExportRequest, options)
    to, output, experiment, source, force = req.to, req.output, req.experiment, req.source, req.force
    if to not in EXPORT_FORMATS:
        raise InputError(f"`to` must be one of {', '.join(EXPORT_FORMATS)}, got {to!r}")
    out = None if output is None else _checked_output(Path(output), force)
    transcripts = _transcript_table(table_or_path, experiment)
    if transcripts is not None:
        return _export_transcripts(transcripts, out, force)
    exp = get_experiment(experiment_for(experiment, table_or_path))
    table, _ = read_table(exp, table_or_path, source)
    if table.empty:
        raise DataError("the table holds no trial: nothing to export")
    records = export_records(table, exp.name, exp.description)
    back = decode_export([record_of(r, i + 1) for i, r in enumerate(records)], exp.name, out or "export")
    expected = canonical_rows(table).reset_index(drop=True)
    problem = _difference(back, expected)
    if problem is not None:
        raise DataError(f"{exp.name}: this table would not read back from Psych-201 unchanged ({problem}); "
                        "nothing written")
    if out is not None:
        from cogtestbed.data.psych201 import write_records

        with claim_file(out, force):
            write_records(records, out)
    return records


def _checked_output(out: Path, force: bool) -> Path:
    """``output``, refused unless a Psych-201 file name that may be written."""
    from cogtestbed.outputs import check_output_file

    if out.suffix.lower() not in (".jsonl", ".zip"):
        raise InputError(f"a Psych-201 file ends in .jsonl or .zip (prompts.jsonl.zip), got {out}")
    check_output_file(out, force)
    return out


def _transcript_table(table_or_path: Any, experiment: Any) -> pd.DataFrame | None:
    """The transcript table to write as it is (:mod:`cogtestbed.data.psych201_table`): a transcript
    table (scored or not; a DataFrame or a ``.parquet`` file), or any Psych-201 file when no
    experiment is named; None for a trial table."""
    import pandas as pd

    from cogtestbed.data.psych201 import first_record
    from cogtestbed.data.psych201_table import transcript_table

    if isinstance(table_or_path, pd.DataFrame):
        return _frame_transcripts(table_or_path)
    path = Path(table_or_path)
    if path.suffix.lower() == ".parquet" and path.is_file():
        import pyarrow.parquet as pq

        names = set(pq.ParquetFile(path).schema_arrow.names)
        transcript = {"layout", "text_json", "before", "chosen", "after"} <= names
        scored = {"record", "participant", "choice"} <= names and bool({"psych201_nll", "logp_raw"} & names)
        return _transcript_table(pd.read_parquet(path), experiment) if transcript or scored else None
    if experiment is None and first_record(path) is not None:
        return transcript_table(path)
    return None


def _frame_transcripts(frame: pd.DataFrame) -> pd.DataFrame | None:
    """:func:`_transcript_table` of a DataFrame: a transcript table, a scored one on its file's records, or None."""
    from cogtestbed.data.psych201_table import is_transcript_table, scored_table

    if is_transcript_table(frame):
        return frame
    scored = {"record", "participant", "choice"} <= set(frame.columns) and bool(
        {"psych201_nll", "logp_raw"} & set(frame.columns))
    if not scored:
        return None
    source = frame.attrs.get("transcripts")  # a transcript-nll table: its scores on its file's records
    if source is None:
        raise InputError("this scored table does not name the Psych-201 file it scored (attrs['transcripts'])")
    return scored_table(frame, source)


def _export_transcripts(table: pd.DataFrame, out: Path | None, force: bool) -> list[dict[str, Any]]:
    """A transcript table written back as Psych-201 (its own bytes; extra columns as scores)."""
    from cogtestbed.data.psych201_table import records_of_table, write_transcript_table
    from cogtestbed.outputs import claim_file

    records = records_of_table(table)  # refuses a table without layouts before anything is written
    if out is not None:
        with claim_file(out, force):
            write_transcript_table(table, out)
    return records


def _difference(back: pd.DataFrame, expected: pd.DataFrame) -> str | None:
    """The first difference between the table read back and the table exported (None: equal)."""
    import pandas as pd

    try:
        pd.testing.assert_frame_equal(back, expected)
    except AssertionError as exc:
        return " ".join(str(exc).split())[:300]
    return None
