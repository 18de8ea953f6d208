"""Count the words of the user docs (README.md and every page under docs/ except the benchmark records,
docs/benchmarks.md and docs/results/) and print them per page and in all, against the target of 80,000 words.

    python benchmarks/docs_words.py            # the total and the target
    python benchmarks/docs_words.py --pages    # each page's count too, largest first

``make docs`` runs it; ``tests/test_docs_pages.py`` checks the count and that every page says its kind.
A word is what ``wc -w`` counts: a run of characters between whitespace (code blocks included).
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The user docs' word budget.
TARGET = 80_000
#: Measurement records kept beside the docs (history and figures with their commands), not user pages.
RECORDS = ("docs/benchmarks.md", "docs/results/")


def user_pages(root: Path = ROOT) -> list[Path]:
    """README.md and the Markdown pages under docs/, the benchmark records left out."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in pages if not p.relative_to(root).as_posix().startswith(RECORDS)]


def words(path: Path) -> int:
    """The page's words, as ``wc -w`` counts them."""
    return len(path.read_text(encoding="utf-8").split())


def counts(root: Path = ROOT) -> dict[str, int]:
    """Each user page's words, by its path relative to ``root``."""
    return {p.relative_to(root).as_posix(): words(p) for p in user_pages(root)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", action="store_true", help="print each page's count, largest first")
    args = parser.parse_args(argv)
    by_page = counts()
    if args.pages:
        for page, n in sorted(by_page.items(), key=lambda kv: -kv[1]):
            print(f"{n:8,d}  {page}")
    total = sum(by_page.values())
    verdict = "within" if total <= TARGET else f"{total - TARGET:,d} over"
    print(f"user docs: {total:,d} words in {len(by_page)} pages ({verdict} the target of {TARGET:,d}; "
          f"benchmark records not counted: {', '.join(RECORDS)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
