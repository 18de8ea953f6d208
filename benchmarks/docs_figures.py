"""List the figures of README.md and docs/ that stand beside a command and that no test checks or regenerates
(issue 72; ``make docs-figures``).

A *figure* here is what a page shows as a command's result:

* a picture (``![...](file.png)``) with a command within :data:`NEAR` lines of it;
* an output block: a fence with no language (or ``text``/``console``) right after a ``bash`` block;
* a result in a ``bash`` block: a comment line holding a decimal number, after a command of the block
  (``#  -> 80 trials per session; P = 0.912``, ``# complete: ... $0.0132``).

A figure counts as *checked* when the line before it carries ``<!-- doc: checked BY -->`` (``BY``: the test
or script that checks or regenerates it), when the picture's file name appears in ``tests/``, or when a test
that names the page also holds most of the figure's decimal numbers (``0.912``, ``1.21``...).  Prints one line
per unchecked figure (``page:line: text``) and their count; ``--json`` prints them as JSON; exit status 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from doc_blocks import BLOCK_PAGES, blocks  # noqa: E402

#: Lines between a picture and the command it stands beside.
NEAR = 15
CHECKED = re.compile(r"<!--\s*doc:\s*checked\b")
COMMAND = re.compile(r"(^|`|\s)(cogtestbed |python benchmarks/|make )")
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+")


@dataclass(frozen=True)
class Figure:
    """One figure: its page, line, kind (picture, output, result) and text (its first line)."""

    page: str
    line: int
    kind: str
    text: str


def _tests_text() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("*.py")}


def figures(page: Path) -> list[Figure]:
    """The figures of ``page`` that stand beside a command."""
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    rel = page.relative_to(ROOT).as_posix()
    out: list[Figure] = []
    command_lines = [i for i, line in enumerate(lines) if COMMAND.search(line)]
    for i, line in enumerate(lines):
        if re.search(r"!\[[^\]]*\]\([^)]+\.(png|svg|jpg)\)", line) and \
                any(abs(i - c) <= NEAR for c in command_lines):
            out.append(Figure(rel, i + 1, "picture", line.strip()))
    fenced = blocks(page, ("bash", "", "text", "console"))
    for prev, block in zip([None, *fenced], fenced, strict=False):
        if block.language == "bash":
            seen_command = False
            for offset, src in enumerate(block.source.splitlines()):
                comment = src.split("#", 1)[1] if "#" in src else ""
                if src.strip() and not src.lstrip().startswith("#"):
                    seen_command = True
                elif seen_command and NUMBER.search(comment):  # a printed number the page shows as a comment
                    out.append(Figure(rel, block.line + offset, "result", src.strip()))
        elif prev is not None and prev.language == "bash" and \
                block.line - (prev.line + prev.source.count("\n")) <= 4:
            first = next((s for s in block.source.splitlines() if s.strip()), "")
            out.append(Figure(rel, block.line, "output", first.strip()[:100]))
    return out


def is_checked(figure: Figure, page_text: list[str], tests: dict[str, str], block_source: str = "") -> bool:
    """Whether a test checks or regenerates ``figure`` (see the module's docstring)."""
    for back in (2, 3):  # the marker on the line before the figure (an output block: before its fence)
        if figure.line - back >= 0 and CHECKED.search(page_text[figure.line - back]):
            return True
    if figure.kind == "picture":
        name = re.search(r"\(([^)]+)\)", figure.text)
        return bool(name) and any(Path(name[1]).name in t for t in tests.values())  # type: ignore[index]
    numbers = set(NUMBER.findall(figure.text + "\n" + block_source))
    page = Path(figure.page).name
    naming = [t for t in tests.values() if page in t or (page == "README.md" and "README" in t)]
    need = max(1, (len(numbers) + 1) // 2)  # most of its numbers in one test, not a stray 0.88
    return bool(numbers) and any(sum(n in t for n in numbers) >= need for t in naming)


def unchecked() -> list[Figure]:
    """Every figure of README.md and docs/ beside a command that no test checks or regenerates."""
    tests = _tests_text()
    out = []
    for page in BLOCK_PAGES:
        text = page.read_text(encoding="utf-8").splitlines()
        outputs = {b.line: b.source for b in blocks(page, ("", "text", "console"))}
        for figure in figures(page):
            if not is_checked(figure, text, tests, outputs.get(figure.line, "")):
                out.append(figure)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    args = parser.parse_args(argv)
    found = unchecked()
    if args.json:
        print(json.dumps({"unchecked": [asdict(f) for f in found], "count": len(found)}))
        return 0
    for f in found:
        print(f"{f.page}:{f.line}: {f.kind}: {f.text}")
    print(f"{len(found)} figures beside a command, neither checked nor regenerated by a test")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
