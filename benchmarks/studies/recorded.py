"""Print a study's recorded result from its committed results file (issue 72: a page's figures are generated
from a file, never typed by hand).

``python benchmarks/studies/recorded.py NAME`` prints ``benchmarks/studies/results/NAME.json``: the command that
produced the result, when and on which code, where the figures were transcribed from (when a study of the past
printed them and no script wrote the file), then its tables and notes.  The docs show the output in a ``<!-- doc:
generated -->`` block under this command, so ``make docs-figures`` rewrites the page from the file; a rerun of
the study updates the file (its ``command``), not the page.  ``python benchmarks/studies/recorded.py`` lists the
files.

A results file is a JSON object: ``command`` (the study's command line), ``date``, ``commit`` (the code that ran
it), ``source`` (optional: where the figures were transcribed from, and by whom, when the study did not write the
file itself), ``notes`` (optional text printed after the header), ``output`` (optional: the lines the command
printed, as they are) and ``tables``: a list of objects with an optional ``title``, ``columns`` (the header) and
``rows`` (lists of cells, strings as printed).  A table whose aligned text is wider than :data:`WIDTH` is
printed one row a paragraph (``column: cell`` lines).  A result that no script wrote is transcribed once, with
its provenance (figures a study of the past printed become a ``figure``/``value`` table); a study that is rerun
writes its file with :func:`write` (its command, this checkout's commit and today's date filled in), or the page
shows the study's own output instead.  Prose that quotes a results file is marked ``<!-- doc: checked
tests/test_doc_prose_figures.py::test_prose_figures_are_in_their_study_record NAME -->``: every decimal of the
paragraph must be one this prints.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
#: The widest aligned table printed as a table; a wider one is printed a row a paragraph.
WIDTH = 120


def load(name: str, folder: Path = RESULTS) -> dict[str, Any]:
    """The results file ``NAME.json`` of ``folder``; ``FileNotFoundError`` when there is none."""
    result: dict[str, Any] = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    return result


def figures(pairs: list[tuple[str, str]], title: str | None = None) -> dict[str, Any]:
    """A table of figures, each a label and its value as printed (``render`` prints it like any table)."""
    table: dict[str, Any] = {"columns": ["figure", "value"], "rows": [list(p) for p in pairs]}
    return {"title": title, **table} if title else table


def write(name: str, command: str, tables: list[dict[str, Any]], *, notes: str | None = None,
          output: list[str] | None = None, folder: Path = RESULTS) -> Path:
    """Write ``NAME.json``: ``command`` as run, this checkout's commit (``git rev-parse``; ``+dirty`` with
    uncommitted changes), today's date (UTC), ``notes``, ``output`` and ``tables`` (e.g. :func:`figures`); a
    long study calls it at its end, so that the page prints what it found."""
    import datetime
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=RESULTS.parents[2], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    commit = (git("rev-parse", "--short", "HEAD") or "unknown") + ("+dirty" if git("status", "--porcelain") else "")
    record: dict[str, Any] = {"command": command, "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
                              "commit": commit}
    record |= {k: v for k, v in (("notes", notes), ("output", output)) if v}
    record["tables"] = tables
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def render(record: dict[str, Any]) -> str:
    """The text of a results file: its provenance, notes and tables."""
    out = [_wrap(f"command: {record['command']}", "  "),
           _wrap(f"run: {record['date']} on commit {record['commit']}", "  ")]
    if record.get("source"):
        out.append(_wrap(f"transcribed: {record['source']}", "  "))
    if record.get("notes"):
        out += ["", _wrap(record["notes"])]
    if record.get("output"):
        out += ["", *record["output"]]
    for table in record.get("tables", []):
        out.append("")
        if table.get("title"):
            out.append(_wrap(table["title"]))
        out.append(_table(table["columns"], table["rows"]))
    return "\n".join(out)


def _wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def _table(columns: list[str], rows: list[list[str]]) -> str:
    """An aligned text table, or, when wider than :data:`WIDTH`, each row as ``column: cell`` lines."""
    widths = [max(len(str(c)) for c in column) for column in zip(columns, *rows, strict=True)]
    if sum(widths) + 2 * (len(widths) - 1) <= WIDTH:
        return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                         for line in [columns, *rows])
    blocks = []
    for row in rows:
        lines = [_wrap(f"- {row[0]}", "  ")]
        lines += [textwrap.fill(f"{name}: {cell}", WIDTH, initial_indent="    ", subsequent_indent="      ",
                                break_on_hyphens=False)
                  for name, cell in zip(columns[1:], row[1:], strict=True) if str(cell).strip()]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("name", nargs="?", help="the results file's name, without .json (none: list them)")
    args = parser.parse_args(argv)
    if args.name is None:
        for path in sorted(RESULTS.glob("*.json")):
            print(path.stem)
        return 0
    try:
        record = load(args.name)
    except FileNotFoundError:
        print(f"error: no results file {(RESULTS / args.name).relative_to(RESULTS.parents[2])}.json; "
              f"`python benchmarks/studies/recorded.py` lists them", file=sys.stderr)
        return 2
    print(render(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
