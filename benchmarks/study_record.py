"""Print a study's recorded result from its committed results file (issue 72; ``make docs-figures``).

A study that takes too long to rerun for the docs (minutes to hours of CPU, a local model) keeps its result in
``benchmarks/records/results/NAME.json``: the command that produced it, the commit and date it ran at, how the
file was made (written by the study, or transcribed once from a dated record of the docs) and its figures, each
a label and the value as printed.  A page shows what this prints in a ``generated`` output block under a
``bash`` block running it, and the page's prose quotes those figures under a ``checked`` marker naming
``tests/test_doc_prose_figures.py::test_prose_figures_are_in_their_study_record NAME``::

    python benchmarks/study_record.py NAME [NAME ...]
    python benchmarks/study_record.py --list

Exit status 2 with one line for a name that has no results file.  A study writes its file with
:func:`write` (its command, this checkout's commit and the date filled in); a file transcribed once from a dated
record of the docs says so in its ``provenance``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "records" / "results"
#: The fields every results file holds.
FIELDS = ("study", "command", "commit", "date", "provenance", "figures")


def load(name: str, folder: Path = RESULTS) -> dict[str, object]:
    """The results file of study ``name``; ``FileNotFoundError`` when it has none, ``ValueError`` when a field
    is missing."""
    record = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise ValueError(f"{name}.json lacks {', '.join(missing)}")
    return record


def write(name: str, command: str, figures: list[tuple[str, str]], provenance: str = "written by the study",
          folder: Path = RESULTS) -> Path:
    """Write study ``name``'s results file: ``command`` as run, this checkout's commit (``git rev-parse``;
    ``+dirty`` with uncommitted changes), today's date (UTC) and ``figures`` (label, value as printed); a study
    calls it at its end so that the docs print what it found (``render``)."""
    import datetime
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=RESULTS.parents[2], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    commit = (git("rev-parse", "--short", "HEAD") or "unknown") + ("+dirty" if git("status", "--porcelain") else "")
    record = {"study": name, "command": command, "commit": commit,
              "date": datetime.datetime.now(datetime.UTC).date().isoformat(), "provenance": provenance,
              "figures": [list(f) for f in figures]}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def render(name: str, folder: Path = RESULTS) -> str:
    """What ``study_record.py NAME`` prints: the command, its commit and date, the file's provenance, then one
    line per figure."""
    record = load(name, folder)
    lines = [f"{record['study']}: {record['command']}",
             f"  run {record['date']}, commit {record['commit']}; {record['provenance']}"]
    lines += [f"  {label}: {value}" for label, value in record["figures"]]  # type: ignore[attr-defined]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="a results file's name (without .json)")
    parser.add_argument("--list", action="store_true", help="list the results files")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(p.stem for p in RESULTS.glob("*.json"))))
        return 0
    for name in args.names:
        try:
            print(render(name))
        except FileNotFoundError:
            print(f"error: {name}: no results file {name}.json in {RESULTS} (--list names them)", file=sys.stderr)
            return 2
        except ValueError as error:
            print(f"error: {name}: {error}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
