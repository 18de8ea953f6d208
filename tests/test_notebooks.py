"""The documentation's notebooks (docs/notebooks): the default suite checks that each is a clean,
well-formed notebook whose code uses the public API only; ``pytest -m slow`` executes every one
(as ``make docs`` does while it builds the site), and the default suite's fast smoke binds every
``ct.NAME(...)`` call of every notebook to the API's signatures."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
#: The notebooks the docs promise: recovery + its scatter plot, a priced plan with its plot, a local
#: model end to end (SmolLM2), adding an experiment.
EXPECTED = ("01_recovery", "02_plan", "03_local_model", "04_add_experiment")


def _code(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_four_notebooks_are_in_the_site() -> None:
    assert tuple(p.stem for p in NOTEBOOKS) == EXPECTED
    site = (ROOT / "mkdocs.yml").read_text()
    assert all(f"notebooks/{name}.ipynb" in site for name in EXPECTED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_is_clean_and_uses_the_public_api_only(path: Path) -> None:
    nb = json.loads(path.read_text())
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "commit it without outputs"
    imports = []
    for source in _code(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports += [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
    assert [m for m in imports if (m or "").startswith("cogtestbed")] == ["cogtestbed"]
    assert any("ct." in source for source in _code(path))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_runs(path: Path) -> None:
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)


def _ct_calls(source: str) -> list[ast.Call]:
    """The calls ``ct.NAME(...)`` of a cell."""
    return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "ct"]


def _bind(call: ast.Call) -> None:
    """Bind a ``ct.NAME(...)`` call's positional count and keywords to ``NAME``'s signature (TypeError
    naming the argument that does not bind)."""
    import inspect

    import cogtestbed as ct

    signature = inspect.signature(getattr(ct, call.func.attr))  # type: ignore[attr-defined]
    signature.bind(*[None] * len(call.args), **{kw.arg: None for kw in call.keywords if kw.arg is not None})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_calls_the_api_as_it_is_today(path: Path) -> None:
    """The default suite's fast smoke of each notebook (the slow test executes them): every ``ct.NAME(...)``
    it calls is exported and its keywords and number of positional arguments bind to the function's
    signature, so a renamed function or keyword fails here, not first in ``make docs``."""
    import cogtestbed as ct

    calls = [call for source in _code(path) for call in _ct_calls(source)]
    assert calls
    for call in calls:
        name = call.func.attr  # type: ignore[attr-defined]
        assert name in ct.__all__, f"{path.stem}: ct.{name} is not exported"
        _bind(call)


def test_the_api_smoke_would_catch_a_renamed_keyword() -> None:
    """The smoke above can fail: a call with a keyword the function does not take does not bind."""
    (call,) = _ct_calls('ct.simulate("instrumental-learning", "rw-pm", subject=12, seed=1)')
    with pytest.raises(TypeError, match="subject"):
        _bind(call)
