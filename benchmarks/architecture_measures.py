"""The architecture measures of issue 51 (docs/architecture.md, "Measures") for one commit.

    PYTHONPATH=. python benchmarks/architecture_measures.py             # the working tree
    PYTHONPATH=. python benchmarks/architecture_measures.py --ref fc6621c   # a commit (read with git archive)
    PYTHONPATH=. python benchmarks/architecture_measures.py --ref fc6621c --json
    PYTHONPATH=. python benchmarks/architecture_measures.py --table fc6621c   # docs/architecture.md's table

Every figure is counted from the source (nothing of the package is imported):

* **files per workflow**: planning, studies, conformance and LLM runs start at their command
  module (``cli/**/{plan,studies,check,run}.py``) and the public function's module (the lazy-name
  table of ``cogtestbed/__init__.py``: ``plan``, ``power``, ``check``, ``run``); the workflow's files are
  every module of the top half (``cli/``, ``api/``, ``runs/``, ``planning/``, ``studies/``, ``conformance/``,
  ``llm_adapters/``) reachable from
  them by imports (function-level ones included, the graph of ``tests/test_import_graph.py``), counted
  with the folders they lie in.  A workflow's **own** modules are those it reaches and no other of
  the four reaches (planning reaches the studies it runs, so the studies' shared machinery counts as
  theirs, not as planning's): where they lie says whether the workflow has one wing.  Clients,
  middleware and servers are the ``llm_adapters`` modules
  of its folder (``llm_adapters/clients/``, ``middleware/``, ``servers/``) once ``llm_adapters/`` is
  split, else those named in :data:`SUBSYSTEMS` (by file name); for each: its modules, their
  folders, and the other modules sharing those folders.
* **options**: typer options declared per command (``typer.Option`` / ``typer.Argument`` in the
  command modules), the keyword parameters of ``ct.plan``, and whether a typed request exists
  (a ``class PlanRequest``; issue 51 item 2).
* **largest module**, **MI of the worst five** (radon ``mi -s``), modules above 800 lines / under MI 10.
* **underscore imports across modules**: ``from cogtestbed.x import _y`` in another module
  (a private *module* excepted), as ``tests/test_complexity.py`` counts them.
* **upward imports** and **import cycles** (strongly connected groups of modules): the commit's own
  ``tests/test_import_graph.py`` graph and layers.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from radon import metrics as radon_metrics

HERE = Path(__file__).resolve().parents[1]
TOP_HALF = ("cogtestbed.cli", "cogtestbed.api", "cogtestbed.runs", "cogtestbed.planning", "cogtestbed.studies",
            "cogtestbed.conformance", "cogtestbed.llm_adapters")
#: workflow → (command module file name, public function of ``ct``).
WORKFLOWS = {"planning": ("plan.py", "plan"), "studies": ("studies.py", "power"),
             "conformance": ("check.py", "check"), "LLM runs": ("run.py", "run")}
#: The LLM subsystems by module file name (issue 51: "clients/backends, middleware, servers"), where
#: ``llm_adapters/`` is flat; once it is split, each is the modules of its folder ``llm_adapters/NAME/``.
SUBSYSTEMS = {
    "clients": ("anthropic_client.py", "openai_client.py", "hf.py", "llama_cpp.py", "smollm2.py", "backends.py",
                "capabilities.py", "logprob_probe.py", "hidden_tokens.py", "image_tokens.py"),
    "middleware": ("cache.py", "retry.py", "limits.py", "batch.py"),
    "servers": ("server.py", "batch_server.py", "reasoning_emulator.py"),
}
MAX_LINES, MIN_MI = 800, 10.0


def checkout(ref: str | None, into: Path) -> Path:
    """The repository root holding ``cogtestbed/`` and ``tests/`` at ``ref`` (None: this working tree)."""
    if ref is None:
        return HERE
    data = subprocess.run(["git", "-C", str(HERE), "archive", ref, "cogtestbed", "tests/test_import_graph.py"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_graph_test(root: Path) -> ModuleType:
    """The commit's own ``tests/test_import_graph.py`` (its graph reads ``root/cogtestbed``)."""
    spec = importlib.util.spec_from_file_location(f"_graph_{abs(hash(root))}", root / "tests" / "test_import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each one import cycle or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def lazy_names(root: Path) -> dict[str, str]:
    """``ct``'s lazy-name table: public name → module (the dict literal of ``cogtestbed/__init__.py``)."""
    tree = ast.parse((root / "cogtestbed" / "__init__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and len(node.keys) > 5:
            pairs = {k.value: v.value for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
            if "plan" in pairs:
                return pairs
    return {}


def reach(graph: Mapping[str, set[str]], start: Iterable[str]) -> set[str]:
    """Top-half modules reachable from ``start`` (the start included)."""
    seen: set[str] = set()
    todo = [s for s in start if s in graph]
    while todo:
        m = todo.pop()
        if m in seen or not m.startswith(TOP_HALF):
            continue
        seen.add(m)
        todo.extend(graph[m])
    return seen


def folder(module: str, root: Path) -> str:
    """The package a module lies in (a package: itself)."""
    path = root.joinpath(*module.split("."))
    return module if (path / "__init__.py").is_file() else module.rpartition(".")[0]


def workflows(root: Path, graph: Mapping[str, set[str]]) -> dict[str, dict[str, Any]]:
    names = lazy_names(root)
    out: dict[str, dict[str, Any]] = {}
    for workflow, (command, function) in WORKFLOWS.items():
        start = [module_name(root, p) for p in (root / "cogtestbed" / "cli").rglob(command)]
        start += [names[function]] if function in names else []
        files = reach(graph, start)
        folders = sorted({folder(m, root) for m in files})
        out[workflow] = {"files": len(files), "folders": len(folders), "folder_names": folders, "reached": files}
    for workflow, w in list(out.items()):
        others = set().union(*(v["reached"] for k, v in out.items() if k != workflow))
        own = sorted(w["reached"] - others)
        w["own"] = own
        w["own_folders"] = sorted({folder(m, root) for m in own})
    for w in out.values():
        w["reached"] = sorted(w["reached"])
    llm = [p for p in (root / "cogtestbed" / "llm_adapters").rglob("*.py") if p.name != "__init__.py"]
    for subsystem, stems in SUBSYSTEMS.items():
        wing = root / "cogtestbed" / "llm_adapters" / subsystem  # its own folder once llm_adapters/ is split
        mine = [p for p in llm if wing in p.parents] if wing.is_dir() else [p for p in llm if p.name in stems]
        dirs = {p.parent for p in mine}
        others = [p for p in llm if p.parent in dirs and p not in mine]
        out[subsystem] = {"files": len(mine), "folders": len(dirs),
                          "folder_names": sorted(module_name(root, d / "__init__.py") for d in dirs),
                          "other_modules_in_its_folders": len(others)}
    return out


def _options_in(path: Path) -> int:
    source = path.read_text(encoding="utf-8")
    return source.count("typer.Option(") + source.count("typer.Argument(")


def options(root: Path) -> dict[str, Any]:
    cli = root / "cogtestbed" / "cli"
    per_command = {stem: sum(_options_in(p) for p in cli.rglob(f"{stem}.py")) for stem in ("plan", "run", "studies")}
    total = sum(_options_in(p) for p in cli.rglob("*.py"))
    plan_params = None
    api_plan = lazy_names(root).get("plan")
    if api_plan:
        tree = ast.parse(root.joinpath(*api_plan.split(".")).with_suffix(".py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "plan":
                a = node.args
                plan_params = len(a.args) + len(a.kwonlyargs)
    typed = any("class PlanRequest" in p.read_text(encoding="utf-8") for p in (root / "cogtestbed").rglob("*.py"))
    return {"cli_options_total": total, "cli_options_by_module": per_command, "ct_plan_parameters": plan_params,
            "typed_request": typed}


def sizes(root: Path) -> dict[str, Any]:
    rows = []
    for path in sorted((root / "cogtestbed").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        rows.append((path.relative_to(root).as_posix(), source.count("\n"),
                     float(radon_metrics.mi_visit(source, multi=True))))
    largest = max(rows, key=lambda r: r[1])
    worst = sorted(rows, key=lambda r: r[2])[:5]
    return {"modules": len(rows), "lines": sum(r[1] for r in rows),
            "largest": {"module": largest[0], "lines": largest[1]},
            "worst_mi": [{"module": m, "mi": round(mi, 2)} for m, _, mi in worst],
            "over_800_lines": sorted(m for m, n, _ in rows if n > MAX_LINES),
            "under_mi_10": sorted(m for m, _, mi in rows if mi < MIN_MI)}


def _is_module(root: Path, dotted: str) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def underscore_imports(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "cogtestbed").rglob("*.py")):
        own = module_name(root, path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = node.module or ""
            if node.level:
                parts = own.split(".") if path.name == "__init__.py" else own.split(".")[:-1]
                target = ".".join([*parts[:len(parts) - node.level + 1], *([target] if target else [])])
            if target == own or not (target == "cogtestbed" or target.startswith("cogtestbed.")):
                continue
            out += [f"{own} <- {target}.{a.name}" for a in node.names if a.name.startswith("_")
                    and not a.name.startswith("__") and not _is_module(root, f"{target}.{a.name}")]
    return out


def measure(root: Path) -> dict[str, Any]:
    graph_test = load_graph_test(root)
    graph = graph_test.import_graph()
    groups = cycles(graph)
    return {"workflows": workflows(root, graph), "options": options(root), "sizes": sizes(root),
            "underscore_imports": underscore_imports(root),
            "upward_imports": [f"{m} -> {t}" for m, t in graph_test.upward_imports(graph)],
            "cycles": groups}


def report(m: Mapping[str, Any]) -> str:
    lines = ["files per workflow (top-half modules reached; folders):"]
    for name, w in m["workflows"].items():
        extra = (f", {w['other_modules_in_its_folders']} other modules share its folders"
                 if "other_modules_in_its_folders" in w else "")
        lines.append(f"  {name:12s} {w['files']:3d} files in {w['folders']} folders{extra}: "
                     + ", ".join(f.removeprefix("cogtestbed.") for f in w["folder_names"]))
        if "own" in w:
            lines.append(f"  {'':12s} {len(w['own']):3d} reached by no other workflow, in "
                         + ", ".join(f.removeprefix("cogtestbed.") for f in w["own_folders"]))
    o = m["options"]
    lines.append(f"options: {o['cli_options_total']} typer options/arguments in cli/; by module "
                 + ", ".join(f"{k} {v}" for k, v in o["cli_options_by_module"].items())
                 + f"; ct.plan takes {o['ct_plan_parameters']} parameters; typed request (PlanRequest): "
                 + ("yes" if o["typed_request"] else "no (issue 51 item 2 not built)"))
    s = m["sizes"]
    lines.append(f"modules: {s['modules']} ({s['lines']} lines); largest {s['largest']['module']} "
                 f"({s['largest']['lines']} lines)")
    lines.append("worst five MI: " + ", ".join(f"{w['module'].removeprefix('cogtestbed/')} {w['mi']:.1f}"
                                               for w in s["worst_mi"]))
    lines.append(f"above {MAX_LINES} lines: {len(s['over_800_lines'])}; under MI {MIN_MI:g}: {len(s['under_mi_10'])}")
    lines.append(f"underscore imports across modules: {len(m['underscore_imports'])}")
    lines += [f"  {u}" for u in m["underscore_imports"]]
    lines.append(f"upward imports: {len(m['upward_imports'])}; import cycles (strongly connected groups): "
                 f"{len(m['cycles'])}")
    lines += [f"  {u}" for u in m["upward_imports"]] + [f"  cycle: {' <-> '.join(c)}" for c in m["cycles"]]
    return "\n".join(lines)


def _workflow_cell(w: Mapping[str, Any]) -> str:
    cell = f"{w['files']} files, {w['folders']} folder{'s' if w['folders'] != 1 else ''}"
    if "other_modules_in_its_folders" in w:
        cell += f" (+{w['other_modules_in_its_folders']} other modules there)"
    return cell


def _own_cell(w: Mapping[str, Any]) -> str:
    folders = ", ".join(f"`{f.removeprefix('cogtestbed.')}`" for f in w["own_folders"])
    return f"{len(w['own'])} in {len(w['own_folders'])} ({folders})"


def table_rows(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The markdown rows of docs/architecture.md's before/after table."""
    rows = [(f"files per workflow: {name}", _workflow_cell(before["workflows"][name]),
             _workflow_cell(after["workflows"][name])) for name in before["workflows"]]
    rows += [(f"modules only {name} reaches (folders)", _own_cell(before["workflows"][name]),
              _own_cell(after["workflows"][name])) for name in WORKFLOWS]

    def options(m: Mapping[str, Any]) -> str:
        o = m["options"]
        by = ", ".join(f"{k} {v}" for k, v in o["cli_options_by_module"].items())
        typed = "a typed request" if o["typed_request"] else "no typed request"
        return (f"{o['cli_options_total']} `typer.Option`/`Argument` calls in `cli/` ({by}); `ct.plan`'s `def` "
                f"names {o['ct_plan_parameters']} parameters; {typed}")

    def largest(m: Mapping[str, Any]) -> str:
        s = m["sizes"]
        return f"`{s['largest']['module'].removeprefix('cogtestbed/')}` ({s['largest']['lines']:,} lines)"

    def worst(m: Mapping[str, Any]) -> str:
        return "; ".join(f"`{w['module'].removeprefix('cogtestbed/')}` {w['mi']:.1f}" for w in m["sizes"]["worst_mi"])

    def over(m: Mapping[str, Any]) -> str:
        s = m["sizes"]
        return f"{len(s['over_800_lines'])} / {len(s['under_mi_10'])}"

    rows += [("options declared once (item 2)", options(before), options(after)),
             ("modules (lines)", f"{before['sizes']['modules']} ({before['sizes']['lines']:,})",
              f"{after['sizes']['modules']} ({after['sizes']['lines']:,})"),
             ("largest module", largest(before), largest(after)),
             ("MI of the worst five", worst(before), worst(after)),
             (f"modules above {MAX_LINES} lines / under MI {MIN_MI:g}", over(before), over(after)),
             ("underscore imports across modules", str(len(before["underscore_imports"])),
              str(len(after["underscore_imports"]))),
             ("upward imports / import cycles", f"{len(before['upward_imports'])} / {len(before['cycles'])}",
              f"{len(after['upward_imports'])} / {len(after['cycles'])}")]
    return "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)


def measured(argv: list[str] | None, description: str,
             measure_root: Any) -> tuple[argparse.Namespace, dict[str, Any], dict[str, Any] | None] | int:
    """(the options, ``measure_root`` of ``--ref``, of ``--table``'s commit or None) of a measures script's
    command line (this one's and ``house_metrics.py``'s), or exit status 2 with one line for an unreadable commit."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ref", help="a commit to measure (default: the working tree)")
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    parser.add_argument("--table", metavar="BEFORE", help="print the markdown rows comparing commit BEFORE with "
                        "--ref (default: the working tree)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as tmp_before:
        try:
            after = measure_root(checkout(args.ref, Path(tmp)))
            before = measure_root(checkout(args.table, Path(tmp_before))) if args.table else None
        except subprocess.CalledProcessError as exc:
            print(f"error: cannot read commit {args.ref or args.table!r}: {exc.stderr.decode().strip()}",
                  file=sys.stderr)
            return 2
    return args, after, before


def main(argv: list[str] | None = None) -> int:
    got = measured(argv, __doc__.split("\n\n")[0], measure)
    if isinstance(got, int):
        return got
    args, m, before = got
    if before is not None:
        print(table_rows(before, m))
    else:
        print(json.dumps(m, indent=1) if args.json else report(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
