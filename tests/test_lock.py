"""The lock files (issue 37): every package `make demo` and `make test` install is pinned, the two locks
agree, the test suite runs on the locked versions, and the Makefile installs from them."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT / "locks"
#: The extras each lock covers (the Makefile's demo and test venvs).
EXTRAS = {"demo.txt": ("fast", "llm", "hf"), "test.txt": ("fast", "llm", "hf", "dask", "dev", "docs")}
#: Installed by the Makefile itself, pinned there: the CPU build of torch (never from the lock).
OUTSIDE_THE_LOCK = {"torch"}


def pins(name: str) -> dict[str, str]:
    """{canonical package name: exact version} of one lock file; every requirement line is an ``==`` pin."""
    out = {}
    for line in (LOCKS / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)(\[[^]]*\])?==([^\s;]+)", line)
        assert match, f"{name}: not an exact pin: {line!r}"
        out[canonicalize_name(match[1])] = match[3]
    return out


def declared(extras: tuple[str, ...]) -> set[str]:
    """The packages pyproject.toml asks for, with ``extras``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [*project["dependencies"], *(r for e in extras for r in project["optional-dependencies"][e])]
    return {canonicalize_name(Requirement(r).name) for r in reqs}


@pytest.mark.parametrize("lock", sorted(EXTRAS))
def test_every_declared_package_is_pinned_and_satisfies_its_range(lock: str) -> None:
    locked = pins(lock)
    assert declared(EXTRAS[lock]) - OUTSIDE_THE_LOCK <= set(locked)
    assert not OUTSIDE_THE_LOCK & set(locked)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for raw in [*project["dependencies"], *(r for e in EXTRAS[lock] for r in project["optional-dependencies"][e])]:
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        if name in locked:
            assert req.specifier.contains(locked[name], prereleases=True), (lock, raw, locked[name])


def test_the_demo_lock_is_the_test_lock_restricted() -> None:
    demo, test = pins("demo.txt"), pins("test.txt")
    assert {name: test.get(name) for name in demo} == demo


def test_torch_is_pinned_once_for_the_makefile_and_pyproject() -> None:
    makefile = (ROOT / "Makefile").read_text()
    torch = re.search(r"^TORCH := (torch==\S+)$", makefile, re.M)
    assert torch and torch[1] in (ROOT / "pyproject.toml").read_text()
    for target in ("$(VENV)/.demo:", "$(VENV)/.test:"):
        recipe = makefile.split(target)[1].split("touch")[0]
        assert "-r $(DEMO_LOCK)" in recipe or "-r $(TEST_LOCK)" in recipe, target
    assert "PIP_LOCKED = $(PY) -m pip install -q --no-deps" in makefile


@pytest.mark.skipif(os.environ.get("COGTESTBED_UNLOCKED") == "1", reason="make test-latest: newest releases")
def test_the_suite_runs_on_the_locked_versions() -> None:
    """What this process imports is what the lock says (`make test`); `make test-latest` skips it."""
    mismatched = {}
    for name, version in pins("test.txt").items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            mismatched[name] = (installed, version)
    assert not mismatched, f"installed vs locked: {mismatched} (run `make test`, which installs the lock)"
