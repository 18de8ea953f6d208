"""The code blocks and commands of README.md and docs/ (issue 72), read with Sybil.

Sybil (``sybil`` on PyPI) lexes the fenced blocks of a Markdown page with their positions and runs a
``python`` block in a namespace the page's blocks share; :func:`run_bash` runs a ``bash`` block.  What a
block is, is said in the page, in an HTML comment on the line before it (invisible on the site):

* ``<!-- doc: fast -->``: a block that takes seconds; it runs in the default suite;
* ``<!-- doc: skip REASON -->``: a block no test can run (a hosted API's key, a cluster, ``make`` itself);
* anything else runs under ``pytest -m slow tests/test_doc_blocks.py`` (``make test-docs``).

:func:`invocations` finds every ``cogtestbed ...`` command a page names (in a block or in inline code),
for :func:`unknown_words`, which checks each against the command line's commands and options.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose blocks run (CONTRIBUTING.md's blocks are fragments of its walk-through).
BLOCK_PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: The pages whose commands are checked.
PAGES = sorted([*BLOCK_PAGES, ROOT / "CONTRIBUTING.md"])
#: The languages of the blocks that run; other blocks (output, TOML, text) are read, not run.
RUN = ("bash", "python")
MARK = re.compile(r"<!--\s*doc:\s*(fast|skip)\b\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, source, first line (1-based) and the page's marker."""

    page: Path
    language: str
    source: str
    line: int
    kind: str  # "fast" | "slow" | "skip"
    reason: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def _marker(text: str, start: int) -> tuple[str, str]:
    """The marker on the line before the block that starts at offset ``start``: (kind, reason)."""
    before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
    found = MARK.search(before)
    if found is None:
        return "slow", ""
    return found[1], found[2]


def blocks(page: Path, languages: tuple[str, ...] = RUN) -> list[Block]:
    """The fenced blocks of ``page`` in ``languages``, read by Sybil's Markdown lexer."""
    from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

    text = page.read_text(encoding="utf-8")
    out = []
    for region in FencedCodeBlockLexer(language=r".*")(_Doc(text, str(page))):
        language = (region.lexemes.get("language") or "").strip()
        if language not in languages:
            continue
        kind, reason = _marker(text, region.start)
        out.append(Block(page, language, str(region.lexemes["source"]), text.count("\n", 0, region.start) + 2,
                         kind, reason))
    return out


class _Doc:
    """The least of a Sybil document its lexers read."""

    def __init__(self, text: str, path: str) -> None:
        self.text, self.path = text, path


def prepare(workdir: Path) -> None:
    """Make ``workdir`` look like the repository's root to a page's commands: its folders linked in
    (``benchmarks/...`` resolves, outputs stay in ``workdir``), ``.venv`` the environment running the tests,
    and the project's data at ``../shared``, where the pages put it."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("benchmarks", "docs", "tests", "cogtestbed", "locks", "pyproject.toml", "Makefile"):
        link = workdir / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    if not (workdir / ".venv").exists():  # `source .venv/bin/activate`: the interpreter running the tests
        (workdir / ".venv").symlink_to(Path(sys.prefix))
    shared = ROOT.parent / "shared"
    if shared.is_dir() and not (workdir.parent / "shared").exists():
        (workdir.parent / "shared").symlink_to(shared)


def run_bash(block: Block, workdir: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a ``bash`` block with ``set -euo pipefail`` in ``workdir`` (:func:`prepare`), with this
    interpreter's ``cogtestbed`` first on PATH."""
    prepare(workdir)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script(block.source)], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)


def script(source: str) -> str:
    """A ``bash`` block as it runs: a command whose next line is a ``# error: ...`` comment (the refusal
    the page shows) must fail, with exit status 2; every other command must succeed."""
    lines = list(_logical_lines(source))
    out = []
    for k, (_, line) in enumerate(lines):
        following = next((nxt.strip() for _, nxt in lines[k + 1:] if nxt.strip()), "")
        if following.startswith("# error:") and line.strip() and not line.lstrip().startswith("#"):
            out.append(f"set +e; {line}\nstatus=$?; set -e\n"
                       f"[ $status -eq 2 ] || {{ echo 'expected a refusal (exit 2), got '$status >&2; exit 1; }}")
        else:
            out.append(line)
    return "\n".join(out)


# ----------------------------------------------------------------------------------- commands named
INLINE = re.compile(r"(?<!`)`(cogtestbed [^`\n]+)`(?!`)")
#: Words of a command line that stand for a value the reader fills in.
PLACEHOLDER = re.compile(r"^(\.\.\.|…|[A-Z][A-Z0-9_]*(\.\.\.)?|<[^>]+>|\[.*\]|\{.*\}|\|)$")


@dataclass(frozen=True)
class Invocation:
    """A ``cogtestbed ...`` command a page names: where, and its words after ``cogtestbed``."""

    page: Path
    line: int
    words: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def _logical_lines(source: str) -> Iterator[tuple[int, str]]:
    """A block's lines with ``\\``-continuations joined, each with its offset in the block."""
    held, start = "", 0
    for i, line in enumerate(source.splitlines()):
        if not held:
            start = i
        if line.rstrip().endswith("\\"):
            held += line.rstrip()[:-1] + " "
            continue
        yield start, held + line
        held = ""
    if held:
        yield start, held


def _words(text: str) -> tuple[str, ...] | None:
    text = text.split(" #", 1)[0]
    for sep in ("&&", "||", ";", "|", ">", "2>", "&"):
        text = text.split(f" {sep} ", 1)[0] if f" {sep} " in text else text
    text = text.rstrip("&").strip()
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def invocations(page: Path) -> list[Invocation]:
    """Every ``cogtestbed ...`` command of ``page``: in its ``bash`` blocks (a line, or a part after ``&&``,
    ``$(`` or an environment assignment) and in its inline code spans."""
    text = page.read_text(encoding="utf-8")
    out: list[Invocation] = []
    for block in blocks(page, ("bash", "sh", "console", "")):
        for offset, line in _logical_lines(block.source):
            for part in re.split(r"&&|\|\||;|\||\$\(|`", line):
                head = re.sub(r"^\s*(\$\s+)?((\w+=\S*|time|nohup|exec)\s+)*", "", part)
                words = _words(head[len("cogtestbed "):]) if head.startswith("cogtestbed ") else None
                if words:
                    out.append(Invocation(page, block.line + offset, words))
    for found in INLINE.finditer(text):
        words = _words(found[1][len("cogtestbed "):])
        if words:
            out.append(Invocation(page, text.count("\n", 0, found.start()) + 1, words))
    return out


def _option_names(command: object) -> set[str]:
    names = set()
    for param in getattr(command, "params", ()):
        names |= set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
    return names | {"--help"}


def unknown_words(invocation: Invocation, root: object,
                  extra: Callable[[str, list[str]], set[str]] | None = None) -> list[str]:
    """What ``invocation`` names that the command line ``root`` (a click group) does not have: a command,
    a sub-command or an option; empty when everything it names exists.  ``extra(command, words)``: the
    options a command takes beyond its declared ones (``metrics``: the experiment's own)."""
    command, words = root, list(invocation.words)
    while hasattr(command, "commands") and words:
        word = words[0]
        if word.startswith("-"):
            break
        if PLACEHOLDER.match(word) or word.lower() in {"command", "commands"}:
            return []  # `cogtestbed COMMAND --help`: a placeholder, not a name
        sub = command.commands.get(word)  # type: ignore[attr-defined]
        if sub is None:
            return [f"command {word!r}"]
        command, words = sub, words[1:]
    known = _option_names(command)
    if extra is not None:
        known |= extra(getattr(command, "name", ""), words)
    bad = []
    for word in words:
        if not word.startswith("-") or word in ("-", "--") or re.match(r"^-\d", word):
            continue
        flag = word.split("=", 1)[0]
        if flag.endswith(("...", "…")) or PLACEHOLDER.match(flag):
            continue
        if flag not in known:
            named = " ".join(invocation.words[:len(invocation.words) - len(words)])
            bad.append(f"option {flag!r} of `cogtestbed {named}`")
    return bad
