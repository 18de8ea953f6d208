"""The house measures: package lines and files, radon C-rank blocks, names dispatched by string, "issue N"
citations, modules over 800 lines, command-line options, option names declared in more than one request class,
upward imports and import cycles.

    PYTHONPATH=. python benchmarks/house_metrics.py                    # the working tree
    PYTHONPATH=. python benchmarks/house_metrics.py --ref 3371524      # a commit (read with git archive)
    PYTHONPATH=. python benchmarks/house_metrics.py --table 3371524    # markdown rows: that commit vs the tree
    PYTHONPATH=. python benchmarks/house_metrics.py --issue 73         # package lines the issue's commits changed

Counted from the source (:mod:`ast`, radon), except the command-line options, which the commit's own
command line reports (``benchmarks/cli_options.py`` run on the commit's package in a subprocess):

* **package lines / files**: newlines of every ``cogtestbed/**/*.py``, and their number;
* **names dispatched by string**: :func:`string_dispatch` summed over the package's modules;
* **"issue N" lines**: lines of the package matching ``issues? #?[0-9]+`` (case-insensitive), as
  ``grep -rniE "issue[s]? #?[0-9]+" cogtestbed | wc -l`` counts them;
* **modules over 800 lines**: the package modules above the cap;
* **C-rank blocks**: functions and methods (closures and nested classes' methods included, as
  ``tests/test_complexity.py`` walks them) of cyclomatic complexity 11-20 (radon's rank C) or above;
* **CLI options**: every option of every command (``cogtestbed --help`` and below), summed over commands;
* **option fields / names / names in more than one request class**: the class attributes declared with
  ``option(...)`` (the typed requests of ``cogtestbed/request.py``), the distinct names, and the names
  declared in two or more classes;
* **upward imports**: the import graph of ``tests/test_import_graph.py`` on the commit's modules, under
  this tree's layer order (a commit whose modules it does not place, an older layout, under its own order);
* **import cycles**: strongly connected groups of the commit's own import graph.

``--issue N`` measures an issue's own commits, not the tree (which also grows by other issues' features): the
commits **naming the issue** are those of ``git log --no-merges`` (the current branch's history) whose message
says ``issue N`` or lists N after ``issues`` (``issues 51/73``, ``issues 67, 73``; :func:`issue_pattern`);
their **package lines added / removed** are the sums of ``git log --numstat`` over ``cogtestbed/*.py`` (git's
rename detection: a module moved inside the package counts its changed lines only, one moved out of it counts
as removed); each commit is listed with its own sums.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from radon import complexity as radon_complexity

sys.path.insert(0, str(Path(__file__).resolve().parent))
from architecture_measures import HERE, cycles, load_graph_test, measured  # noqa: E402


def _blocks(source: str) -> list[Any]:
    out, todo = [], list(radon_complexity.cc_visit(source))
    while todo:
        block = todo.pop()
        out.append(block)
        todo += [*getattr(block, "closures", []), *getattr(block, "methods", []), *getattr(block, "inner_classes", [])]
    return [b for b in out if not hasattr(b, "methods")]


def _option_fields(tree: ast.AST) -> list[tuple[str, str]]:
    """(class, field) of every ``name: T = option(...)`` in a class body."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    and isinstance(item.value, ast.Call) and ast.unparse(item.value.func).endswith("option")):
                out.append((node.name, item.target.id))
    return out


def cli_options(root: Path) -> int | None:
    """Options summed over every command, as the commit's command line parses them (None: it did not run)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(HERE / "benchmarks" / "cli_options.py")], env=env,
                          capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        return None
    return sum(len(options) for options in json.loads(done.stdout).values())


def _names_module(value: object, modules: set[str]) -> bool:
    return isinstance(value, str) and value.partition(":")[0] in modules and value.startswith("cogtestbed.")


def string_dispatch(tree: ast.AST, modules: set[str]) -> int:
    """Names a module reaches through a string naming a package module: each ``"cogtestbed.x"`` or
    ``"cogtestbed.x:attr"`` literal (``import_module``, a lazy ``Lazy("module:attr")``, a dispatch table's
    ``("module", "function")``), and each use of a module-level constant bound to one (``_run(_REQUEST, "run_power")``
    counts once per call)."""
    bound = {t.id for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
             and isinstance(node.value, ast.Constant) and _names_module(node.value.value, modules)
             for t in node.targets if isinstance(t, ast.Name)}
    bound_values = {id(node.value) for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id in bound for t in node.targets)}
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in bound_values and _names_module(node.value, modules):
            count += 1
        elif isinstance(node, ast.Call):
            count += sum(1 for a in node.args if isinstance(a, ast.Name) and a.id in bound)
    return count


ISSUE = re.compile(r"issues? #?[0-9]+", re.I)  # the ``grep -rniE "issue[s]? #?[0-9]+" cogtestbed`` of the review


def _module_names(root: Path) -> set[str]:
    out = set()
    for path in (root / "cogtestbed").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _upward(root: Path) -> list[str]:
    """Upward imports under this tree's layer order; a commit whose modules this order does not place (an older
    layout) is read under its own ``tests/test_import_graph.py``."""
    graph_test = load_graph_test(HERE)
    graph_test.PACKAGE = root / "cogtestbed"
    graph = graph_test.import_graph()
    top = graph_test.layer_of("cogtestbed")
    if any(m != "cogtestbed" and graph_test.layer_of(m) == top for m in graph):
        graph_test = load_graph_test(root)
        graph_test.PACKAGE = root / "cogtestbed"
        graph = graph_test.import_graph()
    return [f"{m} -> {t}" for m, t in graph_test.upward_imports(graph)]


def _cycles(root: Path) -> int:
    graph_test = load_graph_test(root)
    graph_test.PACKAGE = root / "cogtestbed"
    return len(cycles(graph_test.import_graph()))


def measure(root: Path) -> dict[str, Any]:
    lines = c_rank = files = dispatched = issues = 0
    declared: dict[str, set[str]] = defaultdict(set)
    fields = 0
    long_modules = []
    modules = _module_names(root)
    for path in sorted((root / "cogtestbed").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        files += 1
        lines += source.count("\n")
        if source.count("\n") > 800:
            long_modules.append(str(path.relative_to(root)))
        issues += sum(1 for line in source.splitlines() if ISSUE.search(line))
        c_rank += sum(1 for b in _blocks(source) if b.complexity > 10)
        tree = ast.parse(source)
        dispatched += string_dispatch(tree, modules)
        for cls, name in _option_fields(tree):
            declared[name].add(cls)
            fields += 1
    return {"package_lines": lines, "package_files": files, "c_rank_blocks": c_rank,
            "names_dispatched_by_string": dispatched, "issue_citations": issues, "modules_over_800": long_modules,
            "cli_options": cli_options(root), "option_fields": fields, "option_names": len(declared),
            "names_in_several_requests": sorted(n for n, classes in declared.items() if len(classes) > 1),
            "upward_imports": _upward(root), "import_cycles": _cycles(root)}


ROWS = (("package lines", "package_lines"), ("package files", "package_files"),
        ("radon C-rank blocks (complexity > 10)", "c_rank_blocks"),
        ("names dispatched by string", "names_dispatched_by_string"),
        ('"issue N" lines in the package (grep -rniE "issue[s]? #?[0-9]+" cogtestbed | wc -l)', "issue_citations"),
        ("modules over 800 lines", "modules_over_800"),
        ("CLI options (summed over commands)", "cli_options"), ("option fields in request classes", "option_fields"),
        ("option names", "option_names"),
        ("names declared in more than one request class", "names_in_several_requests"),
        ("upward imports", "upward_imports"), ("import cycles (groups)", "import_cycles"))


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return str(len(value))
    return "n/a" if value is None else f"{value:,}"


def table(before: dict[str, Any], after: dict[str, Any], ref: str) -> str:
    rows = [f"| measure | before ({ref}) | after |", "|---|---:|---:|"]
    rows += [f"| {label} | {_cell(before[key])} | {_cell(after[key])} |" for label, key in ROWS]
    return "\n".join(rows)


def issue_pattern(issue: int) -> str:
    """The extended regular expression (``git log -E --grep``) of a message naming issue ``issue``."""
    return rf"issues? ([0-9]+(/|, | and ))*{issue}([^0-9]|$)"


def issue_lines(issue: int, repo: Path = HERE, pathspec: str = "cogtestbed/*.py") -> list[tuple[str, str, int, int]]:
    """(commit, subject, lines added, lines removed under ``pathspec``) of each commit of ``repo``'s history
    whose message names ``issue`` (merges left out), newest first."""
    log = ["git", "-C", str(repo), "log", "--no-merges", "-E", f"--grep={issue_pattern(issue)}"]
    commits = subprocess.run([*log, "--format=%h%x09%s"], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    numstat = subprocess.run([*log, "--numstat", "--format=@%h", "--", pathspec], check=True, capture_output=True,
                             text=True).stdout
    sums: dict[str, list[int]] = {}
    current = ""
    for line in numstat.splitlines():
        if line.startswith("@"):
            current = line[1:]
            sums[current] = [0, 0]
        elif re.match(r"\d+\t\d+\t", line):  # binary files ("-\t-\t") have no lines
            plus, minus, _ = line.split("\t", 2)
            sums[current][0] += int(plus)
            sums[current][1] += int(minus)
    rows = []
    for entry in commits:
        commit, subject = entry.split("\t", 1)
        added, removed = sums.get(commit, [0, 0])
        rows.append((commit, subject, added, removed))
    return rows


def issue_report(issue: int, repo: Path = HERE) -> str:
    """The commits naming ``issue`` with their package lines, then the sums (``--issue``)."""
    rows = issue_lines(issue, repo)
    added, removed = sum(r[2] for r in rows), sum(r[3] for r in rows)
    out = [f"{commit} +{a:,} -{d:,} {subject}" for commit, subject, a, d in rows]
    out.append(f"{len(rows)} commits name issue {issue} (git log --no-merges -E --grep='{issue_pattern(issue)}'); "
               f"package lines (cogtestbed/*.py) added {added:,}, removed {removed:,}, net {added - removed:+,}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--issue", type=int, default=None)
    known, rest = pre.parse_known_args(argv)
    if known.issue is not None:
        if rest:
            print(f"error: --issue takes no other option: {' '.join(rest)}", file=sys.stderr)
            return 2
        print(issue_report(known.issue))
        return 0
    got = measured(argv, __doc__.split("\n\n")[0], measure)
    if isinstance(got, int):
        return got
    args, after, before = got
    if before is not None:
        print(table(before, after, args.table))
    elif args.json:
        print(json.dumps(after, indent=1))
    else:
        for label, key in ROWS:
            print(f"{label}: {_cell(after[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
