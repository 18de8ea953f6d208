"""The package's import graph: no cycle among its modules, and the family contract's direction
(agents import their family's models; models, metrics, importers and tables import no agent; the
tables modules import no environment).

Every ``import`` counts, at module level or inside a function (an import deferred for start-up
speed is fine, but it must not close a cycle); only ``if TYPE_CHECKING:`` blocks, which never
run, are left out.  The graph is read from the source with :mod:`ast`, so nothing is imported.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cogtestbed"
#: The models side of every family (CONTRIBUTING.md, "One owner per family"): parameter sets,
#: kernels, likelihoods and metrics, the importers, the tables modules.
MODEL_SIDE = ("cogtestbed.inference", "cogtestbed.data", "cogtestbed.tables")
#: The lapse process (invalid and random answers) is shared by agents and likelihoods: not an agent.
SHARED = ("cogtestbed.agents.lapse",)


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Nodes inside ``if TYPE_CHECKING:`` bodies (imports that never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for sub in node.body for n in ast.walk(sub))
    return skip


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """Dotted names an import statement may load (the module and, for ``from``, its attributes)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([base] if base else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph() -> dict[str, set[str]]:
    """Package module -> the package modules it imports (anywhere in its body)."""
    modules = _module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(node, name, path.name == "__init__.py"):
                while target and target not in modules:  # an attribute of a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "cogtestbed.trials" in graph["cogtestbed.simulation"]
    assert len(graph) > 100


def test_no_import_cycle_among_package_modules() -> None:
    """No cycle, counting function-level imports (a cycle hidden in a function is still one)."""
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as exc:
        pytest.fail("import cycle: " + " -> ".join(exc.args[1]))


def test_a_cycle_is_found() -> None:
    """The check can fail: a hidden cycle in a made-up graph is reported."""
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter({"a": {"b"}, "b": {"c"}, "c": {"a"}}).prepare()


def _imports_of(prefixes: tuple[str, ...], forbidden: tuple[str, ...]) -> list[tuple[str, str]]:
    return sorted((module, target) for module, targets in import_graph().items() if module.startswith(prefixes)
                  for target in targets if target.startswith(forbidden) and target not in SHARED)


def test_models_importers_and_tables_never_import_an_agent() -> None:
    """Every family: the agents depend on the models (their parameter sets and kernels), never the reverse."""
    assert _imports_of(MODEL_SIDE, ("cogtestbed.agents",)) == []


def test_tables_modules_never_import_an_environment() -> None:
    assert _imports_of(("cogtestbed.tables",), ("cogtestbed.environments", "cogtestbed.agents")) == []


def test_the_rule_check_can_fail() -> None:
    """An agent's module is on the agent side: the check sees what it imports."""
    assert ("cogtestbed.agents.instrumental", "cogtestbed.inference.instrumental") in _imports_of(
        ("cogtestbed.agents",), ("cogtestbed.inference",))
