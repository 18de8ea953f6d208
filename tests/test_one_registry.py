"""One generic registry (issue 73, item 1): experiments, LLM backends, samplers and plan kinds are each a
:class:`cogtestbed.plugins.Registry` (built-ins, entry points, in-process registration), and no other module
reads entry points or keeps a registry of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cogtestbed.errors import InputError
from cogtestbed.plugins import Registry

PACKAGE = Path(__file__).resolve().parents[1] / "cogtestbed"


def _registries() -> dict[str, Registry]:  # type: ignore[type-arg]
    from cogtestbed.inference.hierarchical_sampling import SAMPLERS
    from cogtestbed.llm_adapters.clients.backends import BACKENDS
    from cogtestbed.planning.plan_kinds import PLAN_KINDS
    from cogtestbed.registry import EXPERIMENTS

    return {"experiments": EXPERIMENTS, "backends": BACKENDS, "samplers": SAMPLERS, "plan kinds": PLAN_KINDS}


def test_the_four_kinds_are_one_registry_class_with_their_own_entry_point_groups() -> None:
    found = _registries()
    assert all(type(r) is Registry for r in found.values())
    assert {k: r.group for k, r in found.items()} == {
        "experiments": "cogtestbed.experiments", "backends": "cogtestbed.backends",
        "samplers": "cogtestbed.samplers", "plan kinds": "cogtestbed.plan_kinds"}
    assert all(r.builtin_names() for r in found.values())


@pytest.mark.parametrize("kind", ["experiments", "backends", "samplers", "plan kinds"])
def test_each_registry_refuses_another_thing_under_a_taken_name(kind: str) -> None:
    registry = _registries()[kind]
    name = registry.builtin_names()[0]
    with pytest.raises(InputError, match=repr(name)):
        registry.register(name, object())
    assert registry.get(name) is registry.get(name)


def test_no_module_but_the_registry_reads_entry_points() -> None:
    readers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        calls = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        if "entry_points" in names | calls:
            readers.append(path.relative_to(PACKAGE).as_posix())
    assert readers == ["plugins.py"]
