"""The measures of issue 51 items 3-4 for one checkout: what ``dir(ct)`` shows, how LLM backends
are chosen, where the walk-through's experiment declares its name, and underscore imports across
modules.

    PYTHONPATH=. python benchmarks/api_surface.py [--root CHECKOUT] [--modules a.b c.d ...]

``--root``: another checkout (e.g. ``git worktree add /tmp/before fc6621c``) measured the same way
(its package imported in a subprocess); ``--modules``: the modules whose underscore imports are
listed (default: those issue 51 items 3-4 touched).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: Modules changed by issue 51 items 3-4 (the underscore-import count is listed for these).
TOUCHED = ("cogtestbed", "cogtestbed.api.checks", "cogtestbed.api.core", "cogtestbed.api.errors",
           "cogtestbed.api.fitting", "cogtestbed.api.run", "cogtestbed.api.studies", "cogtestbed.cli.studies",
           "cogtestbed.experiments.spec", "cogtestbed.extend", "cogtestbed.inference.base",
           "cogtestbed.inference.numgrad", "cogtestbed.llm_adapters", "cogtestbed.llm_adapters.clients.backends",
           "cogtestbed.registry", "cogtestbed.conformance.parametrize",
           "cogtestbed.studies.report")
HELPERS = {"Any", "TYPE_CHECKING", "annotations", "importlib", "sys", "types", "typing"}

_DIR = """
import json, inspect, cogtestbed as ct
names = [n for n in dir(ct) if not n.startswith("__")]
errors = [n for n in names if inspect.isclass(getattr(ct, n, None)) and issubclass(getattr(ct, n), Exception)]
print(json.dumps({"names": names, "errors": errors, "has_errors_namespace": hasattr(ct, "errors")
                  and hasattr(getattr(ct, "errors"), "RunDirError")}))
"""


def dir_measures(root: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _DIR], capture_output=True, text=True, check=True, cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}).stdout
    data = json.loads(out)
    names = data["names"]
    return {"names in dir(ct)": len(names), "import helpers shown": sorted(set(names) & HELPERS),
            "private names shown": sorted(n for n in names if n.startswith("_")),
            "error classes in dir(ct)": len(data["errors"]), "ct.errors namespace": data["has_errors_namespace"]}


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in (root / "cogtestbed").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def underscore_imports(root: Path, only: tuple[str, ...]) -> tuple[int, dict[str, list[str]]]:
    """(every ``from cogtestbed.X import _name`` across modules, those of the modules ``only``)."""
    total, listed = 0, {}
    for module, path in _modules(root).items():
        found = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("cogtestbed"):
                found += [f"{node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__") and node.module != module]
        total += len(found)
        if module in only:
            listed[module] = found
    return total, listed


def backend_measures(root: Path) -> dict[str, object]:
    """How a client is built from ``BACKEND:MODEL``: the branches on a backend's name where a client
    is made or configured, and whether an entry-point group / a register function exists."""
    adapters = root / "cogtestbed" / "llm_adapters"
    sources = {p: p.read_text(encoding="utf-8") for p in [adapters / "__init__.py", root / "cogtestbed/api/run.py",
                                                           adapters / "backends.py"] if p.exists()}
    pattern = re.compile(r'backend (==|!=) "(openai|anthropic|hf)"')
    branches = sum(len(pattern.findall(text)) for text in sources.values())
    backends = adapters / "backends.py"
    text = backends.read_text(encoding="utf-8") if backends.exists() else ""
    return {"name branches building a client": branches,
            "entry-point group": "cogtestbed.backends" if "cogtestbed.backends" in text else None,
            "register function": "register_backend" if "def register_backend" in text else None}


def name_declarations(root: Path) -> int:
    """Declarations of the walk-through package's (docs/examples/coinguess) experiment name: the
    literal, the spec's ``name=EXPERIMENT`` and every ``experiment:`` class attribute of a piece."""
    count = 0
    for path in (root / "docs" / "examples" / "coinguess").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        count += len(re.findall(r'"coin-guess"', text)) + len(re.findall(r"name=EXPERIMENT", text))
        count += len(re.findall(r"^\s+experiment: ClassVar", text, re.M))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE)
    parser.add_argument("--modules", nargs="*", default=list(TOUCHED))
    args = parser.parse_args()
    root = args.root.resolve()
    print(f"checkout: {root}")
    for key, value in dir_measures(root).items():
        print(f"  {key}: {value}")
    for key, value in backend_measures(root).items():
        print(f"  {key}: {value}")
    print(f"  declarations of the experiment name in docs/examples/coinguess: {name_declarations(root)}")
    total, listed = underscore_imports(root, tuple(args.modules))
    touched = sum(len(v) for v in listed.values())
    print(f"  underscore imports across modules: {total} in the package, {touched} in the modules listed")
    for module, names in sorted(listed.items()):
        if names:
            print(f"    {module}: {', '.join(names)}")


if __name__ == "__main__":
    main()
