"""Every public function and class of ``ct`` has a numpydoc docstring with a ``Parameters`` section (where it
takes any), a ``Returns`` section (a function) and an ``Examples`` section, and every example runs as a
doctest: the numbers it prints are checked (``ELLIPSIS`` and rounding where floats vary across machines)."""

from __future__ import annotations

import doctest
import inspect
import os
import re
from pathlib import Path

import pytest

import cogtestbed as ct

#: The public functions and classes (``ct.errors`` and ``ct.identifiability`` are modules; ``__version__`` a string).
OBJECTS = sorted(n for n in ct.__all__ if inspect.isfunction(getattr(ct, n)) or inspect.isclass(getattr(ct, n)))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def sections(doc: str) -> list[str]:
    """The numpydoc section headers of ``doc`` (a title over a line of dashes as long as it)."""
    lines = doc.splitlines()
    return [a.strip() for a, b in zip(lines, lines[1:], strict=False)
            if a.strip() and re.fullmatch(r"-{3,}", b.strip()) and len(b.strip()) == len(a.strip())]


def missing(name: str) -> list[str]:
    """The sections the public object ``name`` lacks."""
    obj = getattr(ct, name)
    have = sections(inspect.getdoc(obj) or "")
    need = ["Examples"]
    if inspect.isclass(obj):
        need.insert(0, "Parameters" if "Attributes" not in have else "Attributes")
    else:
        need[:0] = ["Returns"] if not inspect.signature(obj).parameters else ["Parameters", "Returns"]
    return [s for s in need if s not in have]


def test_the_section_check_can_fail() -> None:
    def bare(x: int) -> int:
        """One line."""
        return x

    assert sections("Title\n\nParameters\n----------\nx : int\n") == ["Parameters"]
    ct.bare = bare  # type: ignore[attr-defined]
    try:
        assert missing("bare") == ["Parameters", "Returns", "Examples"]
    finally:
        del ct.bare  # type: ignore[attr-defined]


def test_there_are_public_objects() -> None:
    assert {"simulate", "fit", "plan", "Plan", "monitor"} <= set(OBJECTS) and len(OBJECTS) >= 45


@pytest.mark.parametrize("name", OBJECTS)
def test_every_public_object_has_numpydoc_sections(name: str) -> None:
    assert missing(name) == [], f"ct.{name}'s docstring lacks the numpydoc section(s) {missing(name)}"


@pytest.mark.parametrize("name", OBJECTS)
def test_every_example_runs(name: str, tmp_path: Path) -> None:
    obj = getattr(ct, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, f"ct.{name}", globs={"ct": ct})
    examples = [t for t in tests if t.examples]
    assert examples, f"ct.{name} has no runnable example"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    here = Path.cwd()
    os.chdir(tmp_path)  # an example that writes files writes them here
    try:
        for test in examples:
            runner.run(test)
    finally:
        os.chdir(here)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"ct.{name}: {result.failed} of {result.attempted} example lines failed (above)"
