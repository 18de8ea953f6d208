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

from cogtestbed.shims import numba_shim, nutpie_cfunc, nutpie_shim, pytensor_shim, typer_shim

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cogtestbed"
#: The private names of numba and nutpie the package once patched in place (issue 73).
INTERNALS = ("_unique_ids", "_lib", "_cache", "_compute_shapes", "_coords", "NUMBA_CACHE_PATH", "_runtime_param")


def _locked(name: str) -> set[str]:
    found = set()
    for lock in (ROOT / "locks").glob("*.txt"):
        found.update(re.findall(rf"^{name}==(\S+)", lock.read_text(encoding="utf-8"), flags=re.M))
    return found


@pytest.mark.parametrize("shim, library", [(numba_shim, "numba"), (nutpie_cfunc, "nutpie"), (nutpie_shim, "nutpie"),
                                           (pytensor_shim, "pytensor"), (typer_shim, "typer")])
def test_shim_is_pinned_to_the_locked_version(shim: object, library: str) -> None:
    assert _locked(library) == {shim.LOCKED}  # type: ignore[attr-defined]


@pytest.mark.parametrize("shim", [numba_shim, nutpie_cfunc, nutpie_shim, pytensor_shim, typer_shim])
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


def test_typer_shim_fills_each_parameters_coercion_slot_and_typer_calls_it() -> None:
    import typer
    from typer.main import get_command

    app = typer.Typer()

    @app.command()
    def cmd(name: str = "x", count: int = 1) -> None:
        print(name, count)

    click_cmd = get_command(app)
    params = {p.name: p for p in click_cmd.params}
    assert all(p._runtime_param is None for p in params.values())  # typer builds its own on first use
    ctx = typer_shim.ClickContext(click_cmd)
    typer_shim.use_plain_coercion(click_cmd, ctx)
    assert all(isinstance(p._runtime_param, typer_shim.PlainCoercion) for p in params.values())
    assert params["name"].process_value(ctx, "abc") == "abc"
    assert params["count"].process_value(ctx, "7") == 7  # typer's own coercion, built on demand


def _third_party(module: str) -> bool:
    import sys

    top = module.split(".")[0]
    return bool(top) and top != "cogtestbed" and top not in sys.stdlib_module_names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_reaches(path: Path, root: Path = ROOT) -> list[str]:
    """Imports of a third-party library's private modules or names, and private attributes read off a name
    bound to a third-party module (``import numba`` then ``numba.core._x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _third_party(a.name):
                    modules.add(a.asname or a.name.split(".")[0])
                    found += [f"import {a.name}" for part in a.name.split(".") if _private(part)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _third_party(node.module or ""):
            parts = (node.module or "").split(".")
            found += [f"from {node.module} import {a.name}" for a in node.names
                      if _private(a.name) or any(_private(p) for p in parts)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(ast.unparse(node))
    return [f"{path.relative_to(root)}: {f}" for f in found]


def test_no_module_outside_the_shims_imports_or_reads_a_third_party_private_name() -> None:
    found = [f for path in sorted(PACKAGE.rglob("*.py")) if path.parent.name != "shims" for f in _private_reaches(path)]
    assert found == []


def test_the_private_name_scan_finds_a_reach(tmp_path: Path) -> None:
    """The scan above can fail: each form of reach it looks for is found in a module written to show it."""
    probe = tmp_path / "probe.py"
    probe.write_text("import numba\nfrom typer._click import Context\nfrom nutpie import _lib\n"
                     "x = numba.core.bytecode._unique_ids\n", encoding="utf-8")
    assert _private_reaches(probe, tmp_path) == [
        "probe.py: from typer._click import Context", "probe.py: from nutpie import _lib",
        "probe.py: numba.core.bytecode._unique_ids"]


def test_torch_shim_is_pinned_to_the_makefiles_torch_and_its_kernels_compute_a_linear_layer() -> None:
    """torch is left out of the locks (its CPU wheel is installed by the Makefile's ``TORCH`` pin)."""
    from cogtestbed.shims import torch_shim

    assert re.findall(r"^TORCH := torch==(\S+)", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.M) == [
        torch_shim.LOCKED]
    torch = pytest.importorskip("torch")
    assert torch_shim.problems() == []
    reorder, pointwise = torch_shim.onednn_linear_ops(torch)  # type: ignore[misc]
    w, b, x = torch.tensor([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]]), torch.tensor([0.1, 0.2, 0.3]), torch.ones(4, 2)
    with torch.inference_mode():
        out = pointwise(x, reorder(w, None), b, "none", [], "")
    assert torch.allclose(out, x @ w.T + b) and tuple(out.shape) == (4, 3)


def test_ppi_shim_is_pinned_to_the_locked_ppi_python_and_its_correlation_is_pearsons() -> None:
    import numpy as np

    from cogtestbed.shims import ppi_shim

    assert ppi_shim.problems() == []
    rng = np.random.default_rng(0)
    labels = rng.normal(size=400)
    predicted = labels + rng.normal(size=400)
    assert abs(ppi_shim.ppi_correlation(labels, predicted) - np.corrcoef(labels, predicted)[0, 1]) < 0.01
