"""The package's import graph: an explicit layer order that every import follows downward
(:data:`LAYERS`: "each module imports only those below it", CONTRIBUTING.md), no cycle among its
modules, and the family contract's direction (agents import their family's models; models,
metrics, importers and tables import no agent; the tables modules import no environment).

Every ``import`` counts, at module level, inside a function (an import deferred for start-up
speed is fine, but it must not go up or close a cycle) or under ``if TYPE_CHECKING:`` (a type-only
import still ties the modules together).  The graph is read from the source with :mod:`ast`, so
nothing is imported.  ``from pkg import mod`` is an edge to ``pkg.mod``; a package module named in a
string (``importlib.import_module("cogtestbed.cli")``, a lazy ``"module:attr"``, a dispatch table's module
name) is an edge too, and so is an entry point of ``pyproject.toml`` in a group the package loads (from the
module naming the group to the entry's module); the enclosing packages an
import runs on its way (``cogtestbed/__init__.py``, ``planning/__init__.py``) are not edges: they
stay light, and every submodule import runs them.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cogtestbed"
#: The models side of every family (CONTRIBUTING.md, "One owner per family"): parameter sets,
#: kernels, likelihoods and metrics, the importers, the tables modules.
MODEL_SIDE = ("cogtestbed.inference", "cogtestbed.data", "cogtestbed.tables")

#: The layer order, bottom first.  A module belongs to the layer of the longest prefix naming it
#: (``cogtestbed.planning.kinds`` before ``cogtestbed.planning``); it may import modules of
#: its own layer (acyclically) and of the layers below, never one above.  The package root
#: (``cogtestbed``: the public API's lazy names) is the top.
LAYERS: tuple[tuple[str, ...], ...] = (
    # base: no package import but each other
    ("cogtestbed.errors", "cogtestbed.no_data", "cogtestbed.outputs", "cogtestbed.schema", "cogtestbed.parameters",
     "cogtestbed.numerics", "cogtestbed.timings", "cogtestbed.formatting", "cogtestbed.lapse",
     "cogtestbed.metrics_result", "cogtestbed.memory", "cogtestbed.progress", "cogtestbed.collector",
     "cogtestbed.redact", "cogtestbed.request", "cogtestbed.option_groups", "cogtestbed.interpreted",
     "cogtestbed.plugins", "cogtestbed.shims", "cogtestbed.subject_draws", "cogtestbed.bounds",
     "cogtestbed.identified_sessions", "cogtestbed.study_errors"),
    ("cogtestbed.trials",),
    ("cogtestbed.tables",),
    ("cogtestbed.environments",),
    ("cogtestbed.data",),
    ("cogtestbed.inference",),
    ("cogtestbed.agents",),
    ("cogtestbed.experiments",),
    ("cogtestbed.registry",),
    ("cogtestbed.simulation", "cogtestbed.simulate_options"),
    ("cogtestbed.identifiability",),  # a design's information, from the registry's models and the simulator
    ("cogtestbed.llm_adapters",),
    ("cogtestbed.studies",),
    ("cogtestbed.planning",),
    ("cogtestbed.conformance",),
    ("cogtestbed.runs",),
    ("cogtestbed.api",),  # the public functions (cogtestbed/__init__.py names them)
    ("cogtestbed.cli",),
    ("cogtestbed.extend",),
    ("cogtestbed.__main__",),
    ("cogtestbed",),
)


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


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              modules: Mapping[str, Path]) -> list[str]:
    """Dotted names an import statement loads: the module of ``import``; for ``from``, each name
    that is a module itself, else the module it is taken from."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([base] if base else [])])
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


@functools.cache
def import_graph(type_checking: bool = True) -> dict[str, set[str]]:
    """Package module -> the package modules it imports (anywhere in its body; with
    ``type_checking``, under ``if TYPE_CHECKING:`` too)."""
    modules = _module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set() if type_checking else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(node, name, path.name == "__init__.py", modules):
                while target and target not in modules:  # an attribute of a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
        graph[name] |= named_modules(tree, name, modules)
    for loader, target in entry_point_edges(_entry_points(), modules):
        graph[loader].add(target)
    return graph


def _entry_points() -> dict[str, dict[str, str]]:
    """The entry-point groups of the project's ``pyproject.toml`` (group -> name -> ``"module:attr"``)."""
    pyproject = PACKAGE.parent / "pyproject.toml"
    if not pyproject.exists():
        return {}
    with pyproject.open("rb") as fh:
        project = tomllib.load(fh).get("project", {})
    return dict(project.get("entry-points", {}))


def entry_point_edges(groups: Mapping[str, Mapping[str, str]], modules: Mapping[str, Path],
                      sources: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(loader, target) for each entry point of a group the package itself loads: the module that names the group
    in a string (``Registry("cogtestbed.samplers", ...)``, ``entry_points(group=...)``) imports the entry's module
    when it loads the group, an edge the ``import`` statements hide."""
    sources = sources if sources is not None else {m: p.read_text(encoding="utf-8") for m, p in modules.items()}
    out = []
    for group, entries in groups.items():
        loaders = [m for m, text in sources.items() if f'"{group}"' in text]
        for value in entries.values():
            target = value.partition(":")[0].strip()
            while target and target not in modules:
                target = target.rpartition(".")[0]
            out += [(loader, target) for loader in loaders if target and target != loader]
    return sorted(set(out))


def named_modules(tree: ast.AST, module: str, modules: Mapping[str, Path]) -> set[str]:
    """Package modules a module names in a string: ``importlib.import_module("cogtestbed.x")``, a lazy
    ``"cogtestbed.x:attr"`` or a dispatch table's ``("cogtestbed.x", "function")`` load that module at run time,
    so each counts as an import (an edge the ``import`` statements alone would hide)."""
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            target = node.value.partition(":")[0]
            if target in modules and target != module and target.startswith("cogtestbed."):
                named.add(target)
    return named


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the longest prefix naming ``module``."""
    best, found = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    if found < 0:
        raise KeyError(f"{module} is in no layer of LAYERS: add it there")
    return found


def upward_imports(graph: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(module, target) pairs where the target lies in a higher layer than the module."""
    return sorted((m, t) for m, targets in graph.items() for t in targets if layer_of(t) > layer_of(m))


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "cogtestbed.trials" in graph["cogtestbed.simulation"]
    assert len(graph) > 100


def test_every_module_is_in_a_layer() -> None:
    assert [m for m in import_graph() if layer_of(m) < 0] == []


def test_a_module_named_in_a_string_is_an_edge() -> None:
    """``import_module`` with a literal name, a lazy ``"module:attr"`` and a string dispatch are imports."""
    modules = _module_names()
    tree = ast.parse('import importlib\nrun = importlib.import_module("cogtestbed.cli").run_cli\n'
                     'SPEC = Lazy("cogtestbed.agents.bart:BartAgent")\nKIND = _run("cogtestbed.api.plan", "plan")\n')
    named = named_modules(tree, "cogtestbed.llm_adapters.servers.server", modules)
    assert named == {"cogtestbed.cli", "cogtestbed.agents.bart", "cogtestbed.api.plan"}
    assert ("cogtestbed.llm_adapters.servers.server", "cogtestbed.cli") in upward_imports(
        {"cogtestbed.llm_adapters.servers.server": named})


def test_an_entry_point_is_an_edge() -> None:
    """A group the package loads ties its loader to each entry's module: an upward one is found."""
    modules = _module_names()
    sources = {"cogtestbed.plugins": 'SAMPLERS = Registry("cogtestbed.samplers")', "cogtestbed.cli": ""}
    edges = entry_point_edges({"cogtestbed.samplers": {"gibbs": "cogtestbed.cli:GIBBS"},
                               "other.group": {"x": "cogtestbed.errors:X"}}, modules, sources)
    assert edges == [("cogtestbed.plugins", "cogtestbed.cli")]
    assert upward_imports({"cogtestbed.plugins": {"cogtestbed.cli"}}) == [("cogtestbed.plugins", "cogtestbed.cli")]


def test_each_module_imports_only_those_below_it() -> None:
    """No import from a lower layer up (function-level and ``TYPE_CHECKING`` ones included)."""
    assert upward_imports(import_graph()) == []


def test_an_upward_import_is_found() -> None:
    """The layer check can fail: a model taking the metrics result from the spec goes up."""
    graph = {"cogtestbed.inference.bart": {"cogtestbed.experiments.spec", "cogtestbed.metrics_result"}}
    assert upward_imports(graph) == [("cogtestbed.inference.bart", "cogtestbed.experiments.spec")]
    assert layer_of("cogtestbed.studies.driver") > layer_of("cogtestbed.study_errors")


def test_no_import_cycle_among_package_modules() -> None:
    """No cycle, counting function-level and ``TYPE_CHECKING`` imports (a cycle hidden in a
    function or a type annotation is still one)."""
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
                  for target in targets if target.startswith(forbidden))


def test_models_importers_and_tables_never_import_an_agent() -> None:
    """Every family: the agents depend on the models (their parameter sets and kernels), never the reverse."""
    assert _imports_of(MODEL_SIDE, ("cogtestbed.agents",)) == []


def test_tables_modules_never_import_an_environment() -> None:
    assert _imports_of(("cogtestbed.tables",), ("cogtestbed.environments", "cogtestbed.agents")) == []


def test_the_rule_check_can_fail() -> None:
    """An agent's module is on the agent side: the check sees what it imports."""
    assert ("cogtestbed.agents.instrumental", "cogtestbed.inference.instrumental") in _imports_of(
        ("cogtestbed.agents",), ("cogtestbed.inference",))
