"""Psych-201 transcripts in and out (github.com/marcelbinz/Psych-201, Apache-2.0).

A Psych-201 file is JSON Lines, one record per participant (``prompts.jsonl``, or that file alone
inside a ``.zip``): ``text`` (the experiment transcribed in natural language, every choice marked
``<<…>>``), ``experiment`` (``<data set>/<source file>``), ``participant`` and, in some data sets,
``RTs`` and ``diagnosis``.  Each data set has its own transcript (its ``generate_prompts.py`` is
the authority on what each sentence means), so each is read by its own **parser**: a function of
one :class:`Record` returning that participant's trial rows (:data:`Parser`); the experiment's spec
declares its parsers (:func:`cogtestbed.experiments._psych201.psych201_importer`) and
:func:`read_table_records` assembles their rows into one trial table.

Tables this package writes (:func:`export_records`) are a data set of their own, named
``cogtestbed/<experiment>``: a header (the experiment, the participant's agent and generating
parameters, the table's columns and their types) and one sentence per trial with the choice
marked ``<<…>>``; :func:`decode_export` reads them back into the very table that was written
(every column, in canonical row order).

What cannot be read is refused in one line naming the file and its line
(:class:`Psych201Error`, a :class:`~cogtestbed.errors.DataError`).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.data.rows import DataFormatError
from cogtestbed.errors import InputError
from cogtestbed.schema import ID_COLUMNS, canonical_rows, type_in_words

#: The record fields every Psych-201 line has.
REQUIRED_FIELDS = ("text", "experiment", "participant")
#: The data-set name of the transcripts this package writes (``cogtestbed/<experiment>``).
OWN_DATA_SET = "cogtestbed"
#: How a choice is marked in a transcript.
CHOICE = re.compile(r"<<(.*?)>>", re.S)
#: Agent name of the rows of human participants.
HUMAN_AGENT = "human"
#: Psych-201 data sets no experiment of this package reads, with the reason (every experiment's
#: importer refuses them with it).
REFUSED = {
    "dezfouli": "Dezfouli et al. (2019)'s two-armed bandit runs 12 timed blocks whose reward probabilities "
                "the transcript does not give and which change between blocks; no experiment here has that "
                "design (instrumental-learning's table is 4 casinos with known probabilities, the restless and "
                "horizon bandits pay Gaussian rewards), so its choices cannot be scored or fitted as one of them "
                "without inventing the blocks' probabilities",
}
#: File names read as Psych-201 (``prompts.jsonl``, ``prompts.jsonl.zip``, ``x.zip`` holding one).
SUFFIXES = (".jsonl", ".zip", ".gz")


class Psych201Error(DataFormatError):
    """A file that is not a readable Psych-201 file, or a record its parser cannot read."""


@dataclass(frozen=True)
class Record:
    """One participant's line of a Psych-201 file (``line``: its 1-based line number)."""

    text: str
    experiment: str
    participant: str
    line: int
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def data_set(self) -> str:
        """The data set's name: the ``experiment`` field up to its first ``/``."""
        return data_set_of(self.experiment)

    @property
    def key(self) -> tuple[str, str]:
        """The record's identity: (its ``experiment`` field, i.e. the study or source file, and the
        participant id).  Ids repeat across records (a participant of several studies; a data set
        numbering participants per source file), so the id alone names no one."""
        return (self.experiment, self.participant)

    @property
    def label(self) -> str:
        """``RECORD:ID`` naming this record unambiguously (:func:`select_records` reads it back):
        the source file's stem (``exp1``) where the ``experiment`` field names one, else the field."""
        return f"{record_label(self.experiment)}:{self.participant}"

    def choices(self) -> list[str]:
        """The participant's choices in transcript order (the ``<<…>>`` marks)."""
        return CHOICE.findall(self.text)

    def where(self, path: str | Path) -> str:
        return f"{Path(path).name} line {self.line} (participant {self.participant})"


#: ``parser(record) -> rows``: one participant's trial rows (columns ``session``, ``trial``, the
#: stimulus columns, ``action``, ``reward``, ``valid``, then any extra columns), or raise
#: :class:`Psych201Error` naming what it cannot read (``record.where(path)`` is added).
Parser = Callable[[Record], pd.DataFrame]


def data_set_of(experiment: str) -> str:
    """``shahar2019twosteptask/TST_nspn.csv`` → ``shahar2019twosteptask``."""
    return experiment.split("/", 1)[0]


def record_label(experiment: str) -> str:
    """The short name of a record's ``experiment`` field: ``spektor2019contexteffects/exp1.csv`` →
    ``exp1`` (the source file's stem), the field itself where it names no file after the data set."""
    rest = experiment.split("/", 1)[1] if "/" in experiment else ""
    stem = Path(rest).stem if rest.strip("/") else ""
    return stem or experiment


def _names_of(rec: Record) -> set[str]:
    """Every name :func:`select_records` accepts for ``rec``'s record (before ``:ID``)."""
    rest = rec.experiment.split("/", 1)[1] if "/" in rec.experiment else rec.experiment
    return {rec.experiment, rest, record_label(rec.experiment), Path(rest).name}


def select_records(records: Sequence[Record], wanted: Iterable[str | int]) -> list[Record]:
    """The records ``wanted`` names, in that order: each item is a participant id (``1``) where
    exactly one record has it, or ``RECORD:ID`` (``exp1:1``, ``exp1.csv:1`` or the whole
    ``experiment`` field then ``:1``) naming the record too.  An id that several records share
    is refused in one line naming them (identity is (record, participant)); an unknown one too
    (:class:`~cogtestbed.errors.InputError`)."""
    out: list[Record] = []
    for item in wanted:
        text = str(item)
        found = [r for r in records if r.participant == text]
        record, sep, pid = text.rpartition(":")
        if sep:
            named = [r for r in records if r.participant == pid and record in _names_of(r)]
            found = named or found
        if not found:
            raise InputError(f"participant {text} is not in the transcripts")
        if len(found) > 1:
            names = ", ".join(r.label for r in found[:8]) + (", …" if len(found) > 8 else "")
            raise InputError(f"participant {text} is in {len(found)} records ({names}): identity is (record, "
                                f"participant); name one as RECORD:ID, e.g. {found[0].label}")
        out.extend(found)
    return out


# ----------------------------------------------------------------------------- reading
class InputLimitError(Psych201Error):
    """A Psych-201 file whose content (uncompressed: a zip or gzip member as read) is over the
    input limit (:func:`cogtestbed.memory.input_limit_mb`, ``$COGTESTBED_MAX_INPUT_MB``)."""


def input_limit_bytes() -> int:
    """The input limit in bytes of *content read* (:func:`cogtestbed.memory.input_limit_mb`)."""
    from cogtestbed.memory import input_limit_mb

    return int(input_limit_mb() * 2**20)


def _over_limit(name: str, what: str, limit: int) -> InputLimitError:
    from cogtestbed.memory import MAX_INPUT_ENV

    return InputLimitError(f"{name}: {what} is over the input limit of {limit / 2**20:g} MiB of content read "
                           f"({MAX_INPUT_ENV}=N raises it)")


class _Capped(io.RawIOBase):
    """A binary stream that raises :class:`InputLimitError` as soon as more than ``limit`` bytes
    have been read from it: reading stops at the limit whatever a header declares."""

    def __init__(self, raw: Any, limit: int, name: str, owner: Any = None) -> None:
        self._raw, self._limit, self._name, self._seen, self._owner = raw, limit, name, 0, owner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(min(len(buffer), self._limit + 1 - self._seen) or 1)
        self._seen += len(data)
        if self._seen > self._limit:
            raise _over_limit(self._name, "its uncompressed content", self._limit)
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        if self._owner is not None:  # the zip archive the member came from
            self._owner.close()
        super().close()


def _zip_member(path: Path) -> tuple[zipfile.ZipFile, zipfile.ZipInfo]:
    """The one ``.jsonl`` member of a Psych-201 zip (``__MACOSX`` resource forks ignored)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise Psych201Error(f"{path.name} is not a readable zip archive: {exc}") from exc
    members = [i for i in archive.infolist() if i.filename.endswith(".jsonl") and not i.filename.startswith("__MACOSX")
               and "/._" not in i.filename and not Path(i.filename).name.startswith("._")]
    if len(members) != 1:
        archive.close()
        raise Psych201Error(f"{path.name}: a Psych-201 zip holds one .jsonl file, found "
                            f"{len(members)} ({', '.join(i.filename for i in members) or 'none'})")
    return archive, members[0]


def open_content(path: str | Path, limit: int | None = None) -> io.BufferedReader:
    """The JSON Lines bytes of a Psych-201 file: the file itself, the one ``.jsonl`` member of a
    zip, or a gzip file's content, **capped at the input limit of content read**
    (:func:`input_limit_bytes`): a zip member is refused by its declared uncompressed size before
    anything is read, and every source stops with :class:`InputLimitError` once more than the
    limit has come out of it (a zip bomb is refused after at most ``limit`` bytes, in memory a
    buffer's worth)."""
    p = Path(path)
    cap = input_limit_bytes() if limit is None else limit
    name = p.name.lower()
    if name.endswith(".zip"):
        archive, member = _zip_member(p)
        if member.file_size > cap:
            archive.close()
            raise _over_limit(p.name, f"its member {member.filename} holds {member.file_size / 2**20:,.0f} MiB "
                                      "uncompressed, which", cap)
        raw: Any = archive.open(member)
        owner: Any = archive
    elif name.endswith(".gz"):
        import gzip

        raw, owner = gzip.open(p, "rb"), None  # noqa: SIM115 - closed with the stream returned
    else:
        if p.stat().st_size > cap:
            raise _over_limit(p.name, f"the file ({p.stat().st_size / 2**20:,.0f} MiB)", cap)
        raw, owner = p.open("rb"), None  # noqa: SIM115 - closed with the stream returned
    return io.BufferedReader(_Capped(raw, cap, p.name, owner), buffer_size=1 << 16)


def read_content(path: str | Path, limit: int | None = None) -> bytes:
    """All the JSON Lines bytes of a Psych-201 file (:func:`open_content`: capped at the limit)."""
    try:
        with open_content(path, limit) as stream:
            return stream.read()
    except (OSError, EOFError, zipfile.BadZipFile) as exc:  # a damaged archive
        raise Psych201Error(f"{Path(path).name}: cannot be read: {exc}") from None


def _open_lines(path: Path) -> io.TextIOBase:
    """The JSON lines of ``path`` as text (:func:`open_content`; a leading BOM is no data)."""
    return io.TextIOWrapper(open_content(path), encoding="utf-8-sig")


def record_of(obj: Any, line: int, name: str = "records") -> Record:
    """A record from a parsed JSON object, checked as :func:`read_records` checks each line."""
    if not isinstance(obj, dict):
        raise Psych201Error(f"{name} line {line}: a Psych-201 record is a JSON object, got {type(obj).__name__}")
    missing = [k for k in REQUIRED_FIELDS if k not in obj]
    if missing:
        raise Psych201Error(f"{name} line {line}: not a Psych-201 record: missing field(s) {', '.join(missing)}")
    text, experiment, participant = obj["text"], obj["experiment"], obj["participant"]
    if not isinstance(text, str) or not isinstance(experiment, str) or not experiment.strip():
        raise Psych201Error(f"{name} line {line}: 'text' and 'experiment' must be non-empty strings")
    if isinstance(participant, bool) or not isinstance(participant, (str, int)) or str(participant).strip() == "":
        raise Psych201Error(f"{name} line {line}: 'participant' must be a string or an integer, got {participant!r}")
    if not CHOICE.search(text) and data_set_of(experiment) != OWN_DATA_SET:  # ours: a subject may never answer
        raise Psych201Error(f"{name} line {line}: the transcript marks no choice with <<…>>")
    extra = {k: v for k, v in obj.items() if k not in REQUIRED_FIELDS}
    return Record(text, experiment, str(participant), line, extra)


def read_records(path: str | Path) -> list[Record]:
    """Every record of a Psych-201 file (``.jsonl`` or ``.jsonl.zip``), each checked
    (:data:`REQUIRED_FIELDS`, at least one marked choice).  A participant's record repeated
    identically is read once; two different records of one participant are refused."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    out: dict[tuple[str, str], Record] = {}
    with _open_lines(p) as lines:
        try:
            for i, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise Psych201Error(f"{p.name} line {i}: not JSON: {exc.msg} (column {exc.colno})") from None
                rec = record_of(obj, i, p.name)
                key = (rec.experiment, rec.participant)
                seen = out.get(key)
                if seen is not None and (seen.text, seen.extra) != (rec.text, rec.extra):
                    raise Psych201Error(f"{p.name}: participant {rec.participant} of {rec.experiment} has two "
                                        f"different records (lines {seen.line} and {i})")
                out.setdefault(key, rec)
        except UnicodeDecodeError as exc:
            raise Psych201Error(f"{p.name} is not UTF-8 text: {exc.reason}") from None
    if not out:
        raise Psych201Error(f"{p.name} holds no Psych-201 record")
    return list(out.values())


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first JSON line of ``path`` as a dict holding :data:`REQUIRED_FIELDS`, or None (a cheap
    sniff: reads one line; never raises)."""
    p = Path(path)
    name = p.name.lower()
    if not name.endswith(SUFFIXES) or not p.is_file():
        return None
    try:
        with _open_lines(p) as lines:
            for raw in lines:
                if raw.strip():
                    obj = json.loads(raw)
                    return obj if isinstance(obj, dict) and all(k in obj for k in REQUIRED_FIELDS) else None
    except (OSError, ValueError, Psych201Error, zipfile.BadZipFile):
        return None
    return None


def unread_reason(path: str | Path) -> str | None:
    """Where ``path`` is a Psych-201 file (its first record), the sentence saying which data set it
    holds and why none of the experiments asked read it (:data:`REFUSED`), else None."""
    record = first_record(path)
    if record is None or not isinstance(record.get("experiment"), str):
        return None
    data_set = data_set_of(record["experiment"])
    why = REFUSED.get(data_set, "no experiment declares a parser for it")
    return f"{Path(path).name} is a Psych-201 file of data set {data_set!r}, which no experiment reads: {why}"


def psych201_defect(path: str | Path) -> str | None:
    """Where ``path`` is named as a Psych-201 file would be (``.jsonl``, ``.zip``) but cannot be read
    as one, the sentence saying why (what :func:`read_records` refuses: not UTF-8, not JSON, a zip
    with other than one ``.jsonl``, no record, ...), so that a failed detection names the defect
    instead of asking for the experiment; else None."""
    p = Path(path)
    if not p.name.lower().endswith(SUFFIXES) or not p.is_file():
        return None
    try:
        read_records(p)
    except Psych201Error as exc:
        return f"cannot tell the experiment from {p}: as a Psych-201 file: {exc}"
    return None


def write_records(records: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    """``records`` as JSON Lines at ``path`` (``.jsonl``, or ``.zip`` holding ``prompts.jsonl``),
    written atomically (:func:`cogtestbed.outputs.atomic_write_bytes`)."""
    from cogtestbed.outputs import atomic_write_bytes

    body = "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    p = Path(path)
    if p.suffix.lower() == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("prompts.jsonl", body)
        body = buf.getvalue()
    atomic_write_bytes(p, lambda tmp: tmp.write_bytes(body))


# ----------------------------------------------------------------------------- assembling
def participant_order(participants: Sequence[str]) -> list[str]:
    """Participants in a fixed order whatever the file's line order: numerically where every id
    is a whole number, else as text (the subject ids are their positions)."""
    if all(re.fullmatch(r"-?\d+", p) for p in participants):
        return sorted(participants, key=int)
    return sorted(participants)


def participant_ids(records: Sequence[Record]) -> dict[str, Record]:
    """Each record under its participant id, qualified by its source file (``exp2:17``) where the data
    set's records come from several files: a data set numbers its participants within each source
    file (Spektor et al. 2024's three experiments each have a participant 1)."""
    if len({r.experiment for r in records}) <= 1:
        return {r.participant: r for r in records}
    return {f"{Path(r.experiment.split('/', 1)[-1]).stem}:{r.participant}": r for r in records}


def read_table_records(path: str | Path, experiment: str, parsers: Mapping[str, Parser],
                       refused: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The trial table of the Psych-201 file ``path`` for ``experiment``: each record read by the
    parser of its data set (``parsers``; the package's own exports by :func:`decode_export`).

    One data set per file.  Human participants become subjects 0, 1, … in
    :func:`participant_order`, with ``agent`` ``human`` and a ``participant`` column holding the
    file's id (:func:`participant_ids`: qualified by source file where the data set has several);
    ``refused`` maps data sets this experiment knows and refuses to the reason.
    """
    p = Path(path)
    records = read_records(p)
    sets = sorted({r.data_set for r in records})
    if len(sets) > 1:
        raise Psych201Error(f"{p.name} holds several Psych-201 data sets ({', '.join(sets)}); split it by data set")
    data_set = sets[0]
    if data_set == OWN_DATA_SET:
        return decode_export(records, experiment, p)
    why = {**REFUSED, **(refused or {})}
    if data_set in why and data_set not in parsers:
        raise Psych201Error(f"{p.name}: Psych-201 data set {data_set!r} is not read as {experiment}: "
                            f"{why[data_set]}")
    parser = parsers.get(data_set)
    if parser is None:
        known = ", ".join(sorted([*parsers, f"{OWN_DATA_SET}/{experiment}"]))
        raise Psych201Error(f"{p.name}: Psych-201 data set {data_set!r} has no parser for experiment {experiment} "
                            f"(it reads: {known})")
    by_id = participant_ids(records)
    parts = []
    for subject, participant in enumerate(participant_order(list(by_id))):
        rec = by_id[participant]
        try:
            rows = parser(rec)
        except Psych201Error as exc:
            raise Psych201Error(f"{rec.where(p)}: {exc}") from None
        parts.append(rows.assign(subject=np.int64(subject), participant=participant))
    return _assemble(experiment, parts)


def _assemble(experiment: str, parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Parsers' rows as one trial table in the schema's column order (ids, stimulus, outcomes,
    agent, then the rest)."""
    from cogtestbed.trials import categorical_dtype

    rows = pd.concat(parts, ignore_index=True)
    n = len(rows)
    names = list(parts[0].columns)
    after = names.index("valid") + 1
    stimulus = [c for c in names[:after] if c not in (*ID_COLUMNS, "action", "reward", "valid", "participant")]
    rest = [c for c in names[after:] if c not in ("subject", "participant")]
    table = pd.DataFrame({
        "experiment": pd.Categorical([experiment] * n, dtype=categorical_dtype((experiment,))),
        "subject": rows["subject"].to_numpy(dtype=np.int64),
        "session": rows["session"].to_numpy(dtype=np.int64),
        "trial": rows["trial"].to_numpy(dtype=np.int64),
        **{c: rows[c] for c in stimulus},
        "action": rows["action"], "reward": rows["reward"].to_numpy(dtype=np.float64),
        "valid": rows["valid"].to_numpy(dtype=bool),
        "raw_response": pd.array([None] * n, dtype="string"), "parse_error": pd.array([None] * n, dtype="string"),
        "agent": pd.Categorical([HUMAN_AGENT] * n, dtype=categorical_dtype((HUMAN_AGENT,))),
        "participant": pd.array(rows["participant"].astype(str), dtype="string"),
        **{c: rows[c] for c in rest},
    })
    return canonical_rows(table)


# ----------------------------------------------------------------------------- own transcripts
#: Columns a participant's header carries (one value per subject), not its trial sentences.
_HEADER_COLUMNS = ("agent",)
_PARAM_PREFIX = "param_"
_TRIAL = re.compile(r"Trial (\d+): (.*)You (?:choose <<(.*?)>>|give no answer)( \(an invalid answer\))?\. "
                    r"You receive (.*)\.\Z")
_INVALID = " (an invalid answer)"


def _json(value: Any) -> str:
    """One cell as JSON, ``<`` and ``>`` escaped so that no value reads as a choice mark."""
    return json.dumps(_plain(value), ensure_ascii=False, allow_nan=True).replace("<", "\\u003c").replace(">", "\\u003e")


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return _plain_scalar(value)


def _plain_scalar(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    try:  # a pyarrow scalar, a list cell
        return _plain(value.as_py())
    except AttributeError:
        return str(value)


def _dtype_of(column: pd.Series) -> Any:
    """The JSON description of a column's dtype (:func:`_restore` reads it back)."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return {"category": [_plain(c) for c in dtype.categories], "ordered": bool(dtype.ordered)}
    if isinstance(dtype, pd.ArrowDtype):
        return {"arrow": str(dtype.pyarrow_dtype)}
    if isinstance(dtype, pd.StringDtype):
        return {"string": "NA" if dtype.na_value is pd.NA else "nan"}
    return str(dtype)


def _restore(values: list[Any], dtype: Any, name: str) -> Any:
    """A column of ``dtype`` (:func:`_dtype_of`) from its JSON values."""
    if isinstance(dtype, dict) and "category" in dtype:
        return pd.Categorical(values, categories=pd.Index(dtype["category"], dtype=_category_index_dtype()),
                              ordered=dtype["ordered"])
    if isinstance(dtype, dict) and "arrow" in dtype:
        import pyarrow as pa

        from cogtestbed.trials import arrow_lists_as_arrow_dtype

        arrow = pa.array(values, type=_arrow_type(dtype["arrow"], name))
        return pd.array(arrow, dtype=arrow_lists_as_arrow_dtype(arrow.type) or pd.ArrowDtype(arrow.type))
    if isinstance(dtype, dict) and "string" in dtype:
        return pd.array(values, dtype=pd.StringDtype(na_value=pd.NA if dtype["string"] == "NA" else np.nan))
    if dtype in ("float64", "float32"):
        return np.array([np.nan if v is None else v for v in values], dtype=dtype)
    resolved = pd.api.types.pandas_dtype(dtype)  # "boolean", "Int64": pandas' nullable (extension) types
    if isinstance(resolved, pd.api.extensions.ExtensionDtype):
        return pd.array(values, dtype=resolved)
    return np.array(values, dtype=resolved)


def _category_index_dtype() -> Any:
    return pd.Index(["a"]).dtype


def _arrow_type(text: str, name: str) -> Any:
    """The pyarrow type written as ``text`` (lists of a primitive type)."""
    import pyarrow as pa

    found = re.fullmatch(r"(large_)?list<(?:item|element): (\w+)>", text)
    if found is None:
        raise Psych201Error(f"column {name!r} has a type the transcript cannot restore: {text}")
    item = pa.type_for_alias(found.group(2))
    return pa.large_list(item) if found.group(1) else pa.list_(item)


def _split_subjects(table: pd.DataFrame) -> list[tuple[int, pd.DataFrame]]:
    return [(int(s), rows) for s, rows in canonical_rows(table).groupby("subject", sort=True)]


def export_records(table: pd.DataFrame, experiment: str, description: str) -> list[dict[str, Any]]:
    """One Psych-201 record per subject of the trial table ``table`` of ``experiment``: the
    package's own transcript (:data:`OWN_DATA_SET`), which :func:`decode_export` reads back into
    ``table`` (every column; rows in canonical order).  Rows are written in canonical order, so
    the file does not depend on the table's row order."""
    columns = [c for c in table.columns if c not in ID_COLUMNS]
    header_cols = [c for c in columns if c in _HEADER_COLUMNS or c.startswith(_PARAM_PREFIX)]
    trial_cols = [c for c in columns if c not in header_cols and c != "action"]
    types = [[c, _dtype_of(table[c])] for c in table.columns]
    out = []
    for subject, rows in _split_subjects(table):
        head = _subject_header(rows, header_cols, subject)
        data = {c: [_json(v) for v in rows[c].tolist()] for c in trial_cols}
        same, shown_cols = _same_and_shown(data, trial_cols)
        lines = [f"You take part in the experiment {experiment} of cogtestbed: {description}.",
                 "Each line below is one trial: what you were shown (each value in JSON), your choice (marked with "
                 "double angle brackets) and what you received.",
                 f"Participant (JSON): {_json(head)}",
                 f"Same on every trial (JSON): {_json(same)}",
                 f"Table columns (JSON): {_json(types)}", "",
                 *_trial_lines(rows, data, shown_cols)]
        out.append({"text": "\n".join(lines) + "\n", "experiment": f"{OWN_DATA_SET}/{experiment}",
                    "participant": str(subject)})
    return out


def _same_and_shown(data: Mapping[str, list[str]], trial_cols: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The trial columns (other than ``reward``/``valid``) with one value on every trial of a
    subject, with that value, and the other columns, which each trial sentence shows."""
    same = {c: json.loads(data[c][0]) for c in trial_cols
            if c not in ("reward", "valid") and len(set(data[c])) == 1}
    shown_cols = [c for c in trial_cols if c not in same and c not in ("reward", "valid")]
    return same, shown_cols


def _subject_header(rows: pd.DataFrame, header_cols: list[str], subject: int) -> dict[str, Any]:
    """The one value per participant of each header column of one subject's rows (refused where
    it varies within the subject)."""
    head = {}
    for c in header_cols:
        values = rows[c].drop_duplicates()
        if len(values) != 1:
            raise Psych201Error(f"column {c!r} varies within subject {subject}: a transcript carries one value "
                                "per participant")
        head[c] = _plain(values.iloc[0])
    return head


def _trial_lines(rows: pd.DataFrame, data: Mapping[str, list[str]], shown_cols: list[str]) -> list[str]:
    """One subject's ``Session S:`` lines and trial sentences (``data``: each trial column's
    values in JSON, in the rows' order)."""
    lines = []
    action = rows["action"].tolist()
    valid = rows["valid"].to_numpy(dtype=bool)
    session = rows["session"].to_numpy()
    trial = rows["trial"].to_numpy()
    current = None
    for i in range(len(rows)):
        if session[i] != current:
            current = session[i]
            lines.append(f"Session {int(current)}:")
        shown = "".join(f"{c} {data[c][i]}, " for c in shown_cols)
        chosen = "give no answer" if _plain(action[i]) is None else f"choose <<{_json(action[i])}>>"
        mark = "" if valid[i] else _INVALID
        lines.append(f"Trial {int(trial[i])}: {shown}You {chosen}{mark}. You receive {data['reward'][i]}.")
    return lines


def _header_json(text: str, label: str, where: str) -> Any:
    found = re.search(rf"^{re.escape(label)} \(JSON\): (.*)$", text, re.M)
    if found is None:
        raise Psych201Error(f"{where}: no '{label} (JSON):' line: not a transcript written by cogtestbed")
    try:
        return json.loads(found.group(1))
    except json.JSONDecodeError as exc:
        raise Psych201Error(f"{where}: the '{label}' line is not JSON: {exc.msg}") from None


def _fields(shown: str, names: list[str], where: str) -> dict[str, Any]:
    """``name VALUE, name VALUE, `` (values in JSON) of one trial sentence."""
    decoder = json.JSONDecoder()
    out, pos = {}, 0
    for name in names:
        if not shown.startswith(f"{name} ", pos):
            raise Psych201Error(f"{where}: expected '{name} …' at {shown[pos:pos + 40]!r}")
        value, pos = decoder.raw_decode(shown, pos + len(name) + 1)
        if not shown.startswith(", ", pos):
            raise Psych201Error(f"{where}: expected ', ' after the value of {name}")
        out[name] = value
        pos += 2
    if pos != len(shown):
        raise Psych201Error(f"{where}: unexpected text {shown[pos:pos + 40]!r}")
    return out


def decode_export(records: Sequence[Record], experiment: str, path: str | Path) -> pd.DataFrame:
    """The trial table of transcripts written by :func:`export_records` (refused in one line
    where a record is of another experiment or does not follow that format)."""
    name = Path(path).name
    wanted = f"{OWN_DATA_SET}/{experiment}"
    columns: dict[str, list[Any]] = {}
    types: list[list[Any]] | None = None
    for rec in sorted(records, key=lambda r: int(r.participant) if r.participant.lstrip("-").isdigit() else 0):
        where = rec.where(name)
        if rec.experiment != wanted:
            raise Psych201Error(f"{where}: a transcript of {rec.experiment}, not of {wanted}")
        if not re.fullmatch(r"-?\d+", rec.participant):
            raise Psych201Error(f"{where}: participant ids of cogtestbed transcripts are subject numbers")
        head = _header_json(rec.text, "Participant", where)
        these = _header_json(rec.text, "Table columns", where)
        if types is None:
            types = these
            columns = {c: [] for c, _ in types}
        elif these != types:
            raise Psych201Error(f"{where}: its columns differ from the first record's")
        try:
            _decode_trials(rec, head, types, columns, where)
        except (ValueError, TypeError, KeyError) as exc:  # a value or line the format does not allow
            if isinstance(exc, Psych201Error):
                raise
            raise Psych201Error(f"{where}: not a transcript cogtestbed wrote: {type(exc).__name__}: {exc}") from None
    assert types is not None
    restored = {}
    for c, t in types:
        try:
            restored[c] = _restore(columns[c], t, c)
        except (ValueError, TypeError, KeyError) as exc:
            if isinstance(exc, Psych201Error):
                raise
            raise Psych201Error(f"{name}: column {c!r} holds values that do not fit its type, "
                                f"{_type_words(t)}: {type(exc).__name__}: {exc}") from None
    return canonical_rows(pd.DataFrame(restored))


def _type_words(dtype: Any) -> str:
    """A dtype as :func:`_dtype_of` writes it, in words (:func:`cogtestbed.schema.type_in_words`)."""
    if isinstance(dtype, dict):
        kind = next(iter(dtype), "")
        return {"category": "categorical", "string": "text"}.get(kind, f"list ({dtype.get('arrow')})")
    return type_in_words(dtype)


def _decode_trials(rec: Record, head: Mapping[str, Any], types: list[list[Any]], columns: dict[str, list[Any]],
                   where: str) -> None:
    """Append one record's trials to ``columns``."""
    names = [c for c, _ in types]
    header_cols, trial_cols = _header_and_trial_columns(names)
    same = _header_json(rec.text, "Same on every trial", where)
    _check_participant_lines(head, same, header_cols, where)
    shown_cols = [c for c in trial_cols if c not in ("reward", "valid") and c not in same]
    fixed = {**same, **head}
    for session, found in _trial_matches(rec, where):
        row = _trial_row(rec, session, found, shown_cols, fixed, where)
        for c in names:
            columns[c].append(row[c])


def _header_and_trial_columns(names: list[str]) -> tuple[list[str], list[str]]:
    """The columns a transcript states once per participant, and those it states per trial."""
    header_cols = [c for c in names if c in _HEADER_COLUMNS or c.startswith(_PARAM_PREFIX)]
    return header_cols, [c for c in names if c not in (*ID_COLUMNS, *header_cols, "action")]


def _check_participant_lines(head: Any, same: Any, header_cols: list[str], where: str) -> None:
    """Refuse participant and same-on-every-trial lines that are not JSON objects, or a
    participant line that lacks a header column."""
    if not isinstance(same, dict) or not isinstance(head, dict):
        raise Psych201Error(f"{where}: the participant and same-on-every-trial lines are JSON objects")
    missing = [c for c in header_cols if c not in head]
    if missing:
        raise Psych201Error(f"{where}: the participant line lacks {', '.join(missing)}")


def _trial_matches(rec: Record, where: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each trial sentence of a transcript's body with the session it is under (refused at the
    first line that is neither a ``Session S:`` line nor a trial sentence under one)."""
    session = None
    body = rec.text.split("\n\n", 1)[1] if "\n\n" in rec.text else ""
    for k, line in enumerate(body.split("\n")):  # only \n ends a line (a JSON string may hold U+2028)
        if not line:
            continue
        if line.startswith("Session ") and line.endswith(":"):
            session = int(line[8:-1])
            continue
        found = _TRIAL.match(line)
        if found is None or session is None:
            raise Psych201Error(f"{where}: transcript line {k + 1} is not a trial sentence: {line[:60]!r}")
        yield session, found


def _trial_row(rec: Record, session: int, found: re.Match[str], shown_cols: list[str], fixed: Mapping[str, Any],
               where: str) -> dict[str, Any]:
    """One trial sentence as a table row (``fixed``: the record's same-on-every-trial and
    participant values)."""
    shown, action, reward = found.group(2), found.group(3), found.group(5)
    values = _fields(shown, shown_cols, where)
    valid = found.group(4) is None
    return {"experiment": rec.experiment.split("/", 1)[1], "subject": int(rec.participant), "session": session,
            "trial": int(found.group(1)), **values, "reward": json.loads(reward), "valid": valid,
            "action": None if action is None else json.loads(action), **fixed}
