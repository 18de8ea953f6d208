"""Remove issue citations ("issue 45", "issues 47, 71", "(#45)") from the package's comments and docstrings and from
the user docs, keeping each sentence grammatical; print what no rule could rewrite, for a human.

    python tools/strip_issue_citations.py            # rewrite in place, print the counts and what is left
    python tools/strip_issue_citations.py --dry-run  # print the same, change nothing

Only comments and docstrings of ``cogtestbed/**/*.py`` are read (a message a user sees, a test's expectation and
code are left alone), and the prose of ``docs/*.md`` outside fenced code blocks; the benchmark records
(``docs/benchmarks.md``, ``docs/results/``, ``benchmarks/``) and ``CHANGELOG.md`` keep their history.  The rules
(:data:`RULES`, in order):

* a parenthesis that is only a citation goes with the space before it: ``plans (issue 53) are`` -> ``plans are``;
* a citation closing a parenthesis goes with its separator: ``(one price, issue 67)`` -> ``(one price)``;
* a citation opening a parenthesis or a comment goes with its colon: ``(issue 71: the search)`` -> ``(the search)``,
  ``# issue 47: the model`` -> ``# the model``;
* a citation closing a sentence or a clause goes with its separator: ``measured; issue 71.`` -> ``measured.``;
* ``(#45)`` goes.

Anything else ("since issue 45 the ...", "issue 47's figures") is printed with its place; rerunning changes nothing.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ITEM = r"\d+(?:[–-]\d+)?"
_N = rf"#?\d{{1,3}}\b(?:,?\s+items?\s+{_ITEM}(?:\s*(?:,|and)\s*{_ITEM})*)?(?!,?\s+items?\b)"
_NS = rf"{_N}(?:\s*(?:,|/|and|&)\s*{_N})*"
_CITE = rf"(?:see\s+|per\s+|since\s+|from\s+|after\s+)?[Ii]ssues?\s+{_NS}"
#: (pattern, replacement) applied in order to a comment's or a docstring's text.
RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"[ \t]?\(\s*{_CITE}\s*\)"), ""),
    (re.compile(rf"\s*[,;:]\s*{_CITE}(?=\s*\))"), ""),
    (re.compile(rf"[ \t]*\(\s*{_CITE}\s*[:;,][ \t]*\n([ \t]*)"), r"\n\1("),  # at a line's end: opens the next
    (re.compile(rf"\(\s*{_CITE}\s*[:;,][ \t]*"), "("),
    (re.compile(rf"(#:?[ \t]*){_CITE}\s*[:;,]\s*"), r"\1"),
    (re.compile(rf"(^|\n)([ \t]*)(?:{_CITE})\s*[:;,]\s*"), r"\1\2"),
    (re.compile(rf"\s*[,;]\s*{_CITE}(?=[.;]|$)", re.M), ""),
    (re.compile(rf"\s*\((?:{_CITE}\s*,\s*)?{_CITE}\)"), ""),
    (re.compile(r"[ \t]?\(#\d+(?:,\s*#\d+)*\)"), ""),
)
LEFT = re.compile(r"\b[Ii]ssues?\s+#?\d{1,3}\b|\(#\d+\)")


def strip_citations(text: str) -> str:
    """``text`` with every citation a rule rewrites removed."""
    for pattern, repl in RULES:
        text = pattern.sub(repl, text)
    return text


def _docstring_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The comments and the string tokens that stand alone as a statement (docstrings, ``#:`` attribute docs)."""
    out, previous = [], tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and previous in (
                tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.ENCODING)):
            out.append(tok)
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return out


def _wrap(text: str, column: int, width: int = 120) -> str:
    """Lines of a rewritten docstring or comment (starting at ``column``) that a joined citation left longer than
    ``width``: broken at the last space that fits, the rest indented as the line."""
    out = []
    for i, line in enumerate(text.split("\n")):
        start = column if i == 0 else 0
        while start + len(line) > width and " " in line.strip():
            indent = line[: len(line) - len(line.lstrip())] if i else " " * 0
            cut = line.rfind(" ", len(indent) + 1, width - start)
            if cut <= len(indent):
                break
            out.append(line[:cut])
            line, start = (indent or " " * (column if i == 0 else 0)) + line[cut + 1:], 0
        out.append(line)
    return "\n".join(out)


def strip_python(source: str) -> str:
    """A module's source with its comments and docstrings stripped of citations (code untouched)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for tok in _docstring_tokens(source):
        a = starts[tok.start[0] - 1] + tok.start[1]
        b = starts[tok.end[0] - 1] + tok.end[1]
        new = strip_citations(tok.string)
        if new != tok.string:
            new = _wrap(new, tok.start[1])
            edits.append((a, b, new))
    for a, b, new in reversed(edits):
        source = source[:a] + new + source[b:]
    return source


def strip_markdown(text: str) -> str:
    """A page with its prose stripped of citations (fenced code blocks untouched)."""
    parts = re.split(r"(^```.*?^```[^\n]*$)", text, flags=re.M | re.S)
    return "".join(part if part.startswith("```") else strip_citations(part) for part in parts)


def targets() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md"))
            if p.name != "benchmarks.md" and "results" not in p.relative_to(ROOT / "docs").parts]
    return sorted((ROOT / "cogtestbed").rglob("*.py")) + docs


def count(paths: list[Path]) -> int:
    return sum(len(LEFT.findall(p.read_text(encoding="utf-8"))) for p in paths)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the counts and what is left, change nothing")
    args = parser.parse_args(argv)
    paths = targets()
    package = [p for p in paths if p.suffix == ".py"]
    before = (count(package), count(paths) - count(package))
    changed = 0
    left: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = strip_python(text) if path.suffix == ".py" else strip_markdown(text)
        if new != text:
            changed += 1
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
        for number, line in enumerate(new.splitlines(), 1):
            if LEFT.search(line):
                left.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    after = (count(package), count(paths) - count(package)) if not args.dry_run else (None, None)
    print(f"citations in the package: {before[0]} -> {after[0]}; in the user docs: {before[1]} -> {after[1]}; "
          f"files rewritten: {changed}")
    print(f"left for a human ({len(left)} lines; in code or strings a user sees, or no rule fits):")
    for entry in left:
        print(f"  {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
