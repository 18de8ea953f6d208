"""No function or method of the package exceeds cyclomatic complexity 20 (issue 28, item 4).

Radon's count (``and``/``or`` included), which is stricter than ruff's C901 (mccabe)."""

from __future__ import annotations

from pathlib import Path

from radon import complexity as radon_complexity  # the dev extra

MAX_COMPLEXITY = 20
PACKAGE = Path(__file__).resolve().parents[1] / "cogtestbed"


def _blocks(source: str) -> list:
    """Every function and method of a module (closures and methods of nested classes included)."""
    out = []
    todo = list(radon_complexity.cc_visit(source))
    while todo:
        block = todo.pop()
        out.append(block)
        todo.extend(getattr(block, "closures", []))
        todo.extend(getattr(block, "methods", []))
        todo.extend(getattr(block, "inner_classes", []))
    return [b for b in out if not hasattr(b, "methods")]  # classes: their methods are counted


def test_no_function_exceeds_complexity_20() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the package was found
    over = [f"{path.relative_to(PACKAGE.parent)}:{b.lineno} {b.fullname} = {b.complexity}"
            for path in modules for b in _blocks(path.read_text(encoding="utf-8"))
            if b.complexity > MAX_COMPLEXITY]
    assert not over, "radon cyclomatic complexity above 20:\n" + "\n".join(over)
