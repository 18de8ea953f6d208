"""No patched third-party internals outside one shim per library (issue 73, item 3).

Each shim (:mod:`cogtestbed.shims`) is pinned to the locked version of its library and lists the
internals it relies on: these tests fail when the installed library is another version or one of
them changed shape, and when a module outside the shims reaches into one of those internals.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from cogtestbed.shims import numba_shim, nutpie_shim, pytensor_shim

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cogtestbed"
#: The private names of numba and nutpie the package once patched in place (issue 73).
INTERNALS = ("_unique_ids", "_lib", "_cache", "_compute_shapes", "_coords", "NUMBA_CACHE_PATH")


def _locked(name: str) -> set[str]:
    found = set()
    for lock in (ROOT / "locks").glob("*.txt"):
        found.update(re.findall(rf"^{name}==(\S+)", lock.read_text(encoding="utf-8"), flags=re.M))
    return found


@pytest.mark.parametrize("shim, library", [(numba_shim, "numba"), (nutpie_shim, "nutpie"),
                                           (pytensor_shim, "pytensor")])
def test_shim_is_pinned_to_the_locked_version(shim: object, library: str) -> None:
    assert _locked(library) == {shim.LOCKED}  # type: ignore[attr-defined]


@pytest.mark.parametrize("shim", [numba_shim, nutpie_shim, pytensor_shim])
def test_the_internals_a_shim_relies_on_still_hold(shim: object) -> None:
    assert shim.problems() == []  # type: ignore[attr-defined]


def test_numba_shim_replaces_the_id_counter_and_numba_draws_from_it() -> None:
    import numba
    from numba.core.bytecode import FunctionIdentity

    before = FunctionIdentity.__dict__["_unique_ids"]
    try:
        FunctionIdentity._unique_ids = itertools.count(1)
        assert numba_shim.counts_ids()
        numba_shim.draw_ids_from(lambda: 123456789)
        assert not numba_shim.counts_ids()
        compiled = numba.njit(lambda x: x + 1)
        assert compiled(1) == 2
        assert FunctionIdentity.from_function(lambda: 0).unique_id == 123456789
    finally:
        FunctionIdentity._unique_ids = before


def test_nutpie_shim_turns_the_terminal_bar_into_the_template_callback() -> None:
    """Inside the block nutpie's terminal kind is the template callback and all else its own; after it,
    nutpie is as it was (the end-to-end lines: tests/test_readable_output.py, sampling off a terminal)."""
    import importlib

    sample = importlib.import_module("nutpie.sample")
    real = sample._lib
    kinds = real.ProgressType
    with nutpie_shim.template_progress("{{ total_draws }}", 3, print):
        assert sample._lib is not real
        assert sample._lib.ProgressType.none is kinds.none
        assert sample._lib.ProgressType.template_callback is kinds.template_callback
        assert sample._lib.ProgressType.indicatif is not kinds.indicatif
        assert sample._lib.PyStorage is real.PyStorage  # everything else is the real module's
        assert type(sample._lib.ProgressType.indicatif(100)) is kinds
    assert sample._lib is real


def test_pytensor_shim_moves_the_numba_cache_and_back(tmp_path: Path) -> None:
    before = pytensor_shim.numba_cache()
    try:
        pytensor_shim.use_numba_cache(tmp_path / "numba")
        assert pytensor_shim.numba_cache() == tmp_path / "numba" and (tmp_path / "numba").is_dir()
        from pytensor.link.numba.cache import NumbaPyTensorCacheLocator  # what numba asks for the folder

        assert NumbaPyTensorCacheLocator.get_cache_path(None) == tmp_path / "numba"  # type: ignore[arg-type]
    finally:
        pytensor_shim.use_numba_cache(before)


def test_no_module_outside_the_shims_reaches_into_those_internals() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "shims":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            if isinstance(node, ast.Attribute) and node.attr in INTERNALS and not own:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("numba", "nutpie"):
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_")]
            if isinstance(node, ast.keyword) and node.arg in INTERNALS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.arg}=")
    assert found == []
