"""``benchmarks/house_metrics.py --issue N`` (issue 73 item 7): the package lines an issue's own commits add
and remove, summed from ``git log --numstat`` on a tiny temporary repository (not this one's history)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("house_metrics", BENCH / "house_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True, capture_output=True)


def test_issue_lines_sum_the_package_lines_of_the_commits_naming_the_issue(tmp_path: Path) -> None:
    house = _load()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
    _commit(tmp_path, {"cogtestbed/a.py": "1\n2\n3\n"}, "start (issue 7)")  # +3
    _commit(tmp_path, {"cogtestbed/a.py": "1\n3\n4\n5\n", "docs/x.md": "x\n" * 9}, "edit (issue 70)")  # not 7
    _commit(tmp_path, {"cogtestbed/a.py": "1\n", "cogtestbed/b.toml": "b\n", "README.md": "r\n"},
            "trim (issues 5/7)")  # -3; the toml and README are not package modules
    _commit(tmp_path, {"cogtestbed/sub/c.py": "c\nd\n"}, "docs only (issue 77)")
    _commit(tmp_path, {"docs/y.md": "y\n"}, "docs (issue 7, item 7)")  # names the issue, no package lines
    rows = house.issue_lines(7, tmp_path)
    assert [(subject, added, removed) for _, subject, added, removed in rows] == [
        ("docs (issue 7, item 7)", 0, 0), ("trim (issues 5/7)", 0, 3), ("start (issue 7)", 3, 0)]
    report = house.issue_report(7, tmp_path).splitlines()
    assert report[-1].startswith("3 commits name issue 7")
    assert report[-1].endswith("added 3, removed 3, net +0")
