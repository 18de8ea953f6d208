"""The :class:`Importer` of an experiment's published data (declared in its spec, re-exported by
:mod:`cogtestbed.experiments.spec`; kept apart so that the importer factories of
:mod:`cogtestbed.experiments._psych201` need no spec)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cogtestbed.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Importer:
    """Reads published data of one source into the experiment's trial table.

    ``file_columns`` maps trial-table columns to the columns of the published file they are read
    from (``action`` ← CogBench's ``choice``), so that a validation error names what the file calls
    the offending column.  ``key`` names the file columns that identify a row (``()``: rows are
    identified by position) and ``may_differ`` the columns the source is documented to change
    between copies of a row: rows sharing a key must agree in every other column
    (:mod:`cogtestbed.data.rows`; conformance check ``importer_conflicts``).  ``repeat_key`` (a
    file without trial key) names the columns identifying one judgement of a session (CogBench
    probabilistic reasoning's run and condition): ``load`` then takes ``sessions`` (``refuse``, its
    default, or ``split``: :func:`~cogtestbed.data.rows.number_sessions`).  ``tabular``: the
    source is a CSV of rows and columns (the conformance suite fabricates conflicting copies of its
    rows); False for a file of per-participant records (Psych-201 transcripts,
    :mod:`cogtestbed.experiments._psych201`), which refuses conflicting records itself.
    """

    source: str
    load: Callable[..., pd.DataFrame]
    sniff: Callable[[Path], bool]
    file_columns: Mapping[str, str] = field(default_factory=dict)
    key: tuple[str, ...] = ()
    may_differ: tuple[str, ...] = ()
    repeat_key: tuple[str, ...] = ()
    tabular: bool = True

    def load_as(self, path: Path, sessions: str | None = None) -> pd.DataFrame:
        """``load(path)``, with ``sessions`` (``refuse`` or ``split``) where given: only an importer
        with a :attr:`repeat_key` takes it (any other refuses it in one line)."""
        if sessions is None:
            return self.load(path)
        from cogtestbed.data.rows import check_sessions_mode

        check_sessions_mode(sessions)
        if not self.repeat_key:
            raise InputError(f"`sessions` applies to files without a trial key; the {self.source!r} importer "
                             + (f"identifies rows by {', '.join(self.key)} and refuses disagreeing copies"
                                if self.key else "has no repeated judgements to number"))
        return self.load(path, sessions=sessions)
