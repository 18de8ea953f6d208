"""Conformance checks at the edges of an experiment's input (registered in
:data:`cogtestbed.conformance.suite.CHECKS`):

* :func:`check_importer_conflicts`: every importer follows :mod:`cogtestbed.data.rows`: a header
  naming a column twice is refused; where the file has a row key, a copy of a row that disagrees
  in any column (but those the source may change) is refused in one line naming the key, and an
  identical copy is dropped (the table equals the original's); where it has no trial key but a
  ``repeat_key`` (run and condition), a second judgement that differs is refused by default in one
  line naming run, condition and the override ``sessions='split'``, which numbers it as the run's
  next session (:func:`repeat_problems`).
* ``check_bound_edges`` (in :mod:`~cogtestbed.conformance`, through
  :func:`bound_edge_problems`): every agent simulates at each declared bound of each parameter, and at
  the nearest double inside it, for two seeds, or refuses the value in one line.
"""

from __future__ import annotations

import csv
import io
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cogtestbed.conformance.harness import fail
from cogtestbed.study_errors import NotApplicable

if TYPE_CHECKING:
    from cogtestbed.conformance.config import CheckConfig
    from cogtestbed.environments.base import Design
    from cogtestbed.experiments.spec import ExperimentSpec, Importer


def sniffed_files(spec: ExperimentSpec, source: str, root: Path, problems: list[str]) -> list[Path]:
    """The files under ``root`` that importer ``source`` recognises; sniff errors, and finding
    none, are appended to ``problems``."""
    importer = spec.importer(source)
    files = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            if importer.sniff(path):
                files.append(path)
        except Exception as exc:  # noqa: BLE001 - sniffing must never raise
            problems.append(f"importer {source!r}: sniff({path.name}) raised {type(exc).__name__}: {exc}")
    if not files:
        problems.append(f"importer {source!r}: no file under {root} is recognised by its sniff()")
    return files


def _write_rows(folder: Path, name: str, rows: list[list[str]], sep: str) -> Path:
    """``rows`` written to ``folder/name`` (the published file's name: importers take the agent
    from it)."""
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, lineterminator="\n").writerows(rows)
    path = folder / name
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def _refusal(load: Callable[[Path], object], path: Path) -> str | None:
    """The one-line message ``load`` refuses ``path`` with (``None``: it loaded)."""
    from cogtestbed.data.rows import DataFormatError

    try:
        load(path)
    except DataFormatError as exc:
        return str(exc)
    return None


def _conflicting_copy(rows: list[list[str]], column: int) -> list[str] | None:
    """A copy of the first data row with ``column`` taken from the first row where it differs."""
    first = rows[1]
    other = next((r for r in rows[2:] if len(r) > column and r[column] != first[column]), None)
    if other is None:
        return None
    copy = list(first)
    copy[column] = other[column]
    return copy


def importer_conflict_problems(importer: Importer, path: Path, tmp: Path) -> list[str]:
    """What ``importer`` gets wrong on fabricated copies of ``path`` (see the module docstring)."""
    from cogtestbed.data.rows import csv_rows

    rows, sep = csv_rows(path)
    rows = [r for r in rows if any(c.strip() for c in r)]
    header, problems = rows[0], []
    where = f"importer {importer.source!r} on {path.name}"
    doubled = _write_rows(tmp / "doubled", path.name, [[*header, header[-1]]] + [[*r, r[-1]] for r in rows[1:]], sep)
    msg = _refusal(importer.load, doubled)
    if msg is None or "\n" in msg or repr(header[-1]) not in msg:
        problems.append(f"{where}: a header naming {header[-1]!r} twice is not refused in one line naming it "
                        f"({msg!r})")
    if importer.repeat_key:
        return problems + repeat_problems(importer, path, rows, sep, tmp)
    return problems + keyed_problems(importer, path, rows, sep, tmp) if importer.key else problems


def _identical_copy_problems(importer: Importer, path: Path, same: Path, where: str) -> list[str]:
    """What an importer gets wrong on ``same``, ``path`` with an identical copy of a row: it must be dropped."""
    try:
        if not importer.load(same).equals(importer.load(path)):
            return [f"{where}: an identical copy of a row changes the table"]
    except Exception as exc:  # noqa: BLE001 - a refusal of an agreeing copy is the finding
        return [f"{where}: an identical copy of a row is refused: {exc}"]
    return []


def keyed_problems(importer: Importer, path: Path, rows: list[list[str]], sep: str, tmp: Path) -> list[str]:
    """What an importer with a row key gets wrong on fabricated copies of the first row of ``path``
    (``rows``): an identical copy must be dropped, one differing in any column but those the source
    may change refused in one line naming the key."""
    header, problems = rows[0], []
    where = f"importer {importer.source!r} on {path.name}"
    key_idx = [header.index(k) for k in importer.key]
    problems += _identical_copy_problems(importer, path, _write_rows(tmp / "same", path.name, [*rows, rows[1]], sep),
                                         where)
    key_text = ", ".join(f"{k} {rows[1][i]}" for k, i in zip(importer.key, key_idx, strict=True))
    for j, name in enumerate(header):
        if j in key_idx or name in importer.may_differ:
            continue
        copy = _conflicting_copy(rows, j)
        if copy is None:
            continue
        conflict = _write_rows(tmp / "conflict", path.name, [*rows, copy], sep)
        msg = _refusal(importer.load, conflict)
        if msg is None or "\n" in msg or key_text not in msg:
            problems.append(f"{where}: a copy of the row of {key_text} with another {name!r} is not refused in "
                            f"one line naming {key_text!r} ({msg!r})")
    return problems


def repeat_problems(importer: Importer, path: Path, rows: list[list[str]], sep: str, tmp: Path) -> list[str]:
    """What an importer without trial key (its ``repeat_key``: run and condition) gets wrong on a
    fabricated second judgement of the first row's run and condition in ``path`` (``rows``): an
    identical copy must be one row; a copy differing in any column must be refused by default in
    one line naming the run and condition and the override ``sessions='split'``, and under that
    override be the run's session 1 (the first column of ``repeat_key`` is the run, the table's
    subject)."""
    header, problems, name = rows[0], [], path.name
    where = f"importer {importer.source!r} on {name}"
    same = _write_rows(tmp / "same", name, [*rows, rows[1]], sep)
    try:
        if not importer.load(same).equals(importer.load(path)):
            problems.append(f"{where}: an identical copy of a judgement changes the table")
    except Exception as exc:  # noqa: BLE001 - a refusal of an identical copy is the finding
        problems.append(f"{where}: an identical copy of a judgement is refused: {exc}")
    key_idx = [header.index(k) for k in importer.repeat_key]
    key_text = ", ".join(f"{k} {rows[1][i]}" for k, i in zip(importer.repeat_key, key_idx, strict=True))
    for j, column in enumerate(header):
        copy = None if j in key_idx else _conflicting_copy(rows, j)
        if copy is None:
            continue
        again = _write_rows(tmp / "again", name, [*rows, copy], sep)
        msg = _refusal(importer.load, again)
        if msg is None or "\n" in msg or key_text not in msg or "sessions='split'" not in msg:
            problems.append(f"{where}: a second judgement of {key_text} with another {column!r} is not refused in "
                            f"one line naming {key_text!r} and sessions='split' ({msg!r})")
            continue
        try:
            split = importer.load(again, sessions="split")
        except Exception as exc:  # noqa: BLE001 - the override must read it
            problems.append(f"{where}: sessions='split' refuses a second judgement of {key_text}: {exc}")
            continue
        run = split["subject"].astype(str) == rows[1][key_idx[0]]
        if int(split.loc[run, "session"].max()) != 1:
            problems.append(f"{where}: under sessions='split' the second judgement of {key_text} is not the run's "
                            "session 1")
    return problems


def check_importer_conflicts(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every importer refuses a duplicated column name and conflicting copies of a keyed row, and
    drops identical copies (on the smallest published file it recognises)."""
    if not spec.importers:
        raise NotApplicable(f"{spec.name} declares no importers")
    root = config.resolved_data_dir()
    if root is None or not root.is_dir():
        raise NotApplicable("no published data directory (pass data_dir or set $COGTESTBED_DATA_DIR)")
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in sorted(spec.importers):
            if not spec.importer(source).tabular:  # per-participant records: they refuse conflicts themselves
                continue
            files = sniffed_files(spec, source, root, problems)
            if files:
                path = min(files, key=lambda p: p.stat().st_size)
                problems += importer_conflict_problems(spec.importer(source), path, Path(tmp))
    fail(problems, f"{spec.name}: importers do not follow the one rule for rows and columns")


# ----------------------------------------------------------------------------- declared bounds
def edge_values(lower: float, upper: float) -> list[float]:
    """The values a declared bound ``[lower, upper]`` is simulated at: each finite bound and the
    nearest double inside it (the smallest positive double where the bound is 0)."""
    import math

    out: list[float] = []
    if math.isfinite(lower):
        out += [lower, math.nextafter(lower, math.inf)]
    if math.isfinite(upper):
        out += [upper, math.nextafter(upper, -math.inf)]
    return out


def bound_edge_problems(spec: ExperimentSpec, agent: str, design: Design | None, seeds: Sequence[int] = (1, 2),
                        n_subjects: int = 2) -> list[str]:
    """What goes wrong when ``agent`` is simulated at each edge value of each parameter: anything
    but a schema-valid table or a one-line :class:`~cogtestbed.parameters.ParameterError`."""
    from cogtestbed.parameters import ParameterError
    from cogtestbed.simulation import simulate

    problems: list[str] = []
    for p in spec.agent(agent).parameters:
        for value in edge_values(p.lower, p.upper):
            for seed in seeds:
                try:
                    simulate(spec, agent, n_subjects, seed, params={p.name: value}, design=design)
                except ParameterError as exc:
                    if "\n" in str(exc) or p.name not in str(exc):
                        problems.append(f"agent {agent!r}, {p.name}={value!r}: refusal is not one line naming it")
                    break
                except Exception as exc:  # noqa: BLE001 - every other outcome is the finding
                    problems.append(f"agent {agent!r}, {p.name}={value!r}, seed {seed}: "
                                    f"{type(exc).__name__}: {exc}".splitlines()[0])
                    break
    return problems
