"""List the figures of README.md and docs/ that stand beside a command and that no test checks or regenerates
(issue 72; ``make docs-figures``).

A *figure* here is what a page shows as a command's result:

* a picture (``![...](file.png)``) with a command within :data:`NEAR` lines of it;
* an output block: a fence with no language (or ``text``/``console``) right after a ``bash`` block;
* a result in a ``bash`` block: a comment line holding a decimal number, after a command of the block
  (``#  -> 80 trials per session; P = 0.912``, ``# complete: ... $0.0132``);
* a result in prose: a paragraph (lines between blank lines, outside fences) that names a command in an inline
  code span (```cogtestbed ...```, ```python benchmarks/...```, ```make ...```) and holds a decimal number outside
  its code spans, itself or (when it ends with a colon) in the list or table right after it (``power 0.820 ±
  0.029``).

A figure counts as *checked* when a marker says what holds it, on the line before it (an output block: before
its fence) or on the comment lines right above the fence of the ``bash`` block it is in (every figure of
the block), a prose figure: on the comment lines right above its paragraph:

* ``<!-- doc: checked BY -->``: ``BY``, a test (``tests/FILE.py`` or ``tests/FILE.py::test_name``, which must
  exist), checks it against the command's output;
* ``<!-- doc: generated -->``: ``make docs-figures`` (``--write``) writes it: an output block is replaced by
  what the ``bash`` block above it prints on stdout (``<!-- doc: generated SHELL -->``: through ``{ BLOCK; }
  SHELL``, e.g. ``2>&1 | grep -v ETA``: stderr too, less its progress lines), a
  picture is redrawn by the command its marker names (``<!-- doc: generated python benchmarks/... -->``) or
  else by the nearest ``bash`` block above it that names the picture's file;
* ``<!-- doc: timing DATE (commit X): WHAT -->``: a dated measurement of time, cost or size (CPU seconds,
  memory, dollars, an install's size) on the code and machine of its day; it counts only with a date
  (``2026-11-24`` or ``24 Nov 2026``) and never stands for a claim about what the command prints today.
  Such figures vary with the machine and its load, so no test can hold them; a result (a rate, an estimate,
  a power, a count a study prints) cannot be excused this way: it is ``checked`` or ``generated`` (a long
  study writes its result to a committed file that ``python benchmarks/studies/recorded.py NAME`` prints
  into a ``generated`` block).  The former ``<!-- doc: record ... -->`` marker no longer counts: it said
  "historical" of results as well as of timings, and the lister cannot tell which a paragraph holds, so
  the marker's author says which by choosing ``timing``.

A figure also counts as checked when the picture's file name appears in ``tests/``, or when a test that names
the page also holds most of the figure's decimal numbers (``0.912``, ``1.21``...).  Prints one line per
unchecked figure (``page:line: text``) and their count; ``--json`` prints them as JSON; ``--write [PAGE ...]``
first regenerates the ``generated`` figures (of the pages named, else of every page: an hour or more); exit
status 0, or 1 when a command that writes a figure fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from doc_blocks import BLOCK_PAGES, Block, blocks, run_bash  # noqa: E402

#: Lines between a picture and the command it stands beside.
NEAR = 15
CHECKED = re.compile(r"<!--\s*doc:\s*(checked|generated|timing|record)\b\s*(.*?)\s*-->")
DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2}|\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4})\b")
COMMAND = re.compile(r"(^|`|\s)(cogtestbed |python benchmarks/|make )")
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+")
#: A command in an inline code span of prose.
INLINE_COMMAND = re.compile(r"(?<!`)`(cogtestbed |python benchmarks/|make )[^`]*`(?!`)")
CODE_SPAN = re.compile(r"`[^`]*`")
#: What is not a figure in prose: a version (``0.3.36``), a reference to a paper's section, equation or remark, a
#: name (``gemini-2.5-pro``), a bound a result is held to (``target ≤ 1.2``), the normal and χ²₁ quantiles (1.96,
#: 1.92), an option's default given after it (```--mc-se``, 0.03``).
NOT_FIGURE = re.compile(r"\d+\.\d+(\.\d+)+|(§|\b(Remark|Eq\.?|Section|App\.|Appendix|Table|Figure|Fig\.)\s*)\d+\.\d+"
                        r"|[A-Za-z]-\d+\.\d+|[≤≥<>]\s*\d*\.\d+|(?<![\w.])(1\.96|1\.92)(?![\d])|`[^`\n]*`,\s*\d+\.\d+")
#: Pages generated from the code, whose text is the commands' help (``make docs-cli``; its test compares them).
REFERENCE_PAGES = ("docs/cli.md", "docs/api-reference.md")


@dataclass(frozen=True)
class Figure:
    """One figure: its page, line, kind (picture, output, result) and text (its first line)."""

    page: str
    line: int
    kind: str
    text: str
    block: int = 0  # a result's: the first line of its bash block (its fence is the line before)


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
                    out.append(Figure(rel, block.line + offset, "result", src.strip(), block.line))
        elif prev is not None and prev.language == "bash" and \
                block.line - (prev.line + prev.source.count("\n")) <= 4:
            first = next((s for s in block.source.splitlines() if s.strip()), "")
            out.append(Figure(rel, block.line, "output", first.strip()[:100]))
    return out + prose_figures(lines, rel)


def paragraphs(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The paragraphs of a page outside its fences and HTML comments: (first line, 0-based; their lines)."""
    out: list[tuple[int, list[str]]] = []
    fence, start = "", 0
    current: list[str] = []
    for i, line in enumerate([*lines, ""]):
        stripped = line.strip()
        if fence or stripped[:3] in ("```", "~~~"):
            if stripped[:3] in ("```", "~~~"):
                fence = "" if fence and stripped.startswith(fence) else fence or stripped[:3]
            stripped = ""  # a fence ends a paragraph
        elif stripped.startswith("<!--") and stripped.endswith("-->"):
            stripped = ""
        if stripped:
            start = start if current else i
            current.append(line)
        elif current:
            out.append((start, current))
            current = []
    return out


def prose_figures(lines: list[str], rel: str) -> list[Figure]:
    """The paragraphs that name a command inline and hold a decimal number outside their code spans, themselves
    or in the list or table right after them (see the module's docstring)."""
    if rel in REFERENCE_PAGES:
        return []
    found = paragraphs(lines)
    out = []
    for k, (start, para) in enumerate(found):
        text = "\n".join(para)
        if not INLINE_COMMAND.search(text):
            continue
        numbers = _prose_numbers(text)
        after_start, after = found[k + 1] if k + 1 < len(found) else (0, [""])
        introduces = para[-1].rstrip().endswith(":") and 0 < after_start - start - len(para) <= 2
        if not numbers and introduces and re.match(r"\s*([-*|]|\d+\.\s)", after[0]):
            numbers = _prose_numbers("\n".join(after))
        if numbers:
            out.append(Figure(rel, start + 1, "prose", para[0].strip()[:100]))
    return out


def _prose_numbers(text: str) -> list[str]:
    """The decimal numbers of prose outside its code spans, less versions and section references."""
    return NUMBER.findall(CODE_SPAN.sub("", NOT_FIGURE.sub("", text)))


def is_checked(figure: Figure, page_text: list[str], tests: dict[str, str], block_source: str = "") -> bool:
    """Whether a test checks or regenerates ``figure`` (see the module's docstring)."""
    if any(_holds(line) for line in _marker_lines(figure, page_text)):
        return True
    if figure.kind == "picture":
        name = re.search(r"\(([^)]+)\)", figure.text)
        return bool(name) and any(Path(name[1]).name in t for t in tests.values())  # type: ignore[index]
    numbers = set(NUMBER.findall(figure.text + "\n" + block_source))
    page = Path(figure.page).name
    naming = [t for t in tests.values() if page in t or (page == "README.md" and "README" in t)]
    need = max(1, (len(numbers) + 1) // 2)  # most of its numbers in one test, not a stray 0.88
    return bool(numbers) and any(sum(n in t for n in numbers) >= need for t in naming)


def _holds(line: str) -> bool:
    found = CHECKED.search(line)
    if found is None:
        return False
    if found[1] == "checked":
        return _test_exists(found[2].split(" ", 1)[0])
    if found[1] == "timing":
        return DATE.search(found[2]) is not None
    return found[1] == "generated"  # a ``record`` no longer excuses a figure (see the module's docstring)


def _test_exists(name: str) -> bool:
    """Whether ``name`` (``tests/FILE.py`` or ``tests/FILE.py::test``) is a test of the repository."""
    path, _, test = name.partition("::")
    file = ROOT / path
    if not (path.startswith("tests/") and path.endswith(".py") and file.is_file()):
        return False
    named = rf"def {re.escape(test.split('[')[0])}\b"
    return not test or re.search(named, file.read_text(encoding="utf-8")) is not None


def _comments_above(page_text: list[str], index: int) -> list[str]:
    """The HTML comment lines that end right above line ``index`` (0-based)."""
    out = []
    while index >= 0 and page_text[index].strip().startswith("<!--") and page_text[index].strip().endswith("-->"):
        out.append(page_text[index])
        index -= 1
    return out


def _marker_lines(figure: Figure, page_text: list[str]) -> list[str]:
    """The lines whose marker holds ``figure``: the line before it (an output block: before its fence) and
    the comment lines above the fence of the bash block a result is in."""
    if figure.kind == "prose":
        return _comments_above(page_text, figure.line - 2)
    lines = [page_text[figure.line - back] for back in (2, 3) if 0 <= figure.line - back < len(page_text)]
    if figure.block:
        lines += _comments_above(page_text, figure.block - 3)
    return lines


def unchecked() -> list[Figure]:
    """Every figure of README.md and docs/ beside a command that no test checks or regenerates."""
    tests = _tests_text()
    out = []
    for page in BLOCK_PAGES:
        text = page.read_text(encoding="utf-8").splitlines()
        outputs = {b.line: b.source for b in blocks(page, ("", "text", "console"))}
        outputs.update({start + 1: "\n".join(para) for start, para in paragraphs(text)})
        made = {line for *_, line in _targets(page)}
        for figure in figures(page):
            if figure.line not in made and _generated(text, figure.line) is not None:
                out.append(figure)  # marked generated, but no command above it writes it
            elif not is_checked(figure, text, tests, outputs.get(figure.line, "")):
                out.append(figure)
    return out


def _generated(page_text: list[str], line: int) -> str | None:
    """The ``generated`` marker's options for the figure at ``line`` (1-based; an output block: its first line),
    or None where it has none."""
    for back in (2, 3):
        found = CHECKED.search(page_text[line - back]) if line - back >= 0 else None
        if found is not None and found[1] == "generated":
            return found[2]
    return None


def _targets(page: Path) -> list[tuple[Block, Block | None, str, int]]:
    """The ``generated`` figures of ``page``: (the bash block that makes it, the output block it is or None
    for a picture, the marker's options, the figure's line), in the page's order."""
    text = page.read_text(encoding="utf-8").splitlines()
    fenced = blocks(page, ("bash", "", "text", "console"))
    out: list[tuple[Block, Block | None, str, int]] = []
    for prev, block in zip([None, *fenced], fenced, strict=False):
        options = _generated(text, block.line)
        if block.language != "bash" and prev is not None and prev.language == "bash" and options is not None:
            out.append((prev, block, options, block.line))
    for i, line in enumerate(text):
        options = _generated(text, i + 1)
        name = re.search(r"!\[[^\]]*\]\(([^)]+)\)", line)
        if options is None or name is None:
            continue
        if COMMAND.match(options):  # the marker names the command that draws it
            out.append((Block(page, "bash", options + "\n", i + 1, "slow", ""), None, "", i + 1))
            continue
        above = [b for b in fenced if b.language == "bash" and b.line < i + 1 and Path(name[1]).name in b.source]
        if above:  # the nearest bash block above that names the picture's file
            out.append((above[-1], None, options, i + 1))
    return out


def regenerate(page: Path, timeout: float = 7200, match: str = "") -> list[str]:
    """Rerun the command of every ``generated`` figure of ``page``, in the page's order and in one folder that
    looks like the repository's root (the data at ``../shared``; so a command may read what the one above it
    wrote: a pilot, then its plan), and write each output block's new text into the page; returns the failures
    (``page:line: why``).  ``match``: only the figures whose command holds that text."""
    failures, written = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for command, output, options, _ in _targets(page):
            if match not in command.source:
                continue
            source = f"{{\n{command.source}\n}} {options}" if options and output is not None else command.source
            wide = Block(command.page, "bash", "export COLUMNS=120\n" + source, command.line, "slow", "")
            done = run_bash(wide, Path(tmp) / "repo", timeout)
            if done.returncode != 0:
                failures.append(f"{command.id}: exited {done.returncode}: {done.stderr.strip()[-3000:]}")
            elif output is not None:
                written.append((output, done.stdout.rstrip("\n") + "\n"))
    for output, text in reversed(written):  # bottom up: the lines above keep their numbers
        _replace(page, output, text)
    return failures


def _replace(page: Path, output: Block, new: str) -> None:
    """Replace the text of the output block ``output`` of ``page`` by ``new``."""
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    start = output.line - 1
    end = start
    while not lines[end].lstrip().startswith("```"):
        end += 1
    lines[start:end] = [new]
    page.write_text("".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.add_argument("--write", nargs="*", metavar="PAGE", default=None,
                        help="first regenerate the generated figures of these pages (none named: of every page)")
    parser.add_argument("--match", default="", help="with --write: only the figures whose command holds this text")
    args = parser.parse_args(argv)
    status = 0
    if args.write is not None:
        pages = [Path(p).resolve() for p in args.write] or BLOCK_PAGES
        for page in pages:
            for failure in regenerate(page, match=args.match):
                print(f"failed: {failure}", file=sys.stderr)
                status = 1
    found = unchecked()
    if args.json:
        print(json.dumps({"unchecked": [asdict(f) for f in found], "count": len(found)}))
        return 0
    for f in found:
        print(f"{f.page}:{f.line}: {f.kind}: {f.text}")
    print(f"{len(found)} figures beside a command, neither checked nor regenerated by a test")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
