"""An experiment from another package: built from ``cogtestbed.extend`` names only, in a temporary
package outside ``cogtestbed`` (nothing installed), it passes ``ct.check`` and ``ct.recover`` runs
on it; declared through the entry-point group it appears in ``ct.experiments()`` and the CLI.

The package is the walk-through's ``coin-guess`` (``docs/examples/coinguess``), copied under a
fresh name so that nothing of the repository's copy is imported."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed import registry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "coinguess"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """(the folder holding the package, its SPEC), the package imported from a temporary folder."""
    root = tmp_path_factory.mktemp("outside")
    shutil.copytree(EXAMPLE, root / "outside_coins", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(root))
    try:
        yield root, importlib.import_module("outside_coins.spec").SPEC
    finally:
        sys.path.remove(str(root))
        registry.EXPERIMENTS.unregister("coin-guess")


def test_the_example_imports_only_extend_from_cogtestbed() -> None:
    for path in EXAMPLE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("cogtestbed"):
                assert node.module == "cogtestbed.extend", f"{path.name} imports {node.module}"


def test_extend_has_every_name_the_walk_through_imports() -> None:
    import cogtestbed.extend as extend

    assert all(hasattr(extend, name) for name in extend.__all__)
    for name in ("ExperimentSpec", "TrialSchema", "TextEnv", "CognitiveModel", "SyntheticAgent", "metrics_result",
                 "same_name_generators", "finish_table", "Parameter", "ParameterSet", "Phase", "ParseResult"):
        assert name in extend.__all__


def test_a_spec_from_another_package_passes_the_quick_checks_and_recovers(outside: tuple[Path, Any]) -> None:
    _, spec = outside
    report = ct.check(spec, checks=["spec_declaration", "tables_module", "phases", "batch_equals_step",
                                    "parameter_bounds", "prior_bounds", "metrics_result"])
    assert report.passed, report.table()
    assert {r.check for r in report.results if r.status == "passed"} >= {"tables_module", "prior_bounds"}
    study = ct.recover("softmax", experiment=spec, subjects=8, reps=2, seed=4, workers=1)
    assert len(study.table) == 16 and study.table["true"].between(0, 100).all()


@pytest.mark.slow
def test_a_spec_from_another_package_passes_every_check_and_the_default_recovery(outside: tuple[Path, Any]) -> None:
    """The issue's test: the whole suite, then ``recover`` with its defaults (50 subjects, 100 reps,
    draws from the hierarchical prior: a β of the log transform beyond its bound of 100 is clipped)."""
    _, spec = outside
    report = ct.check(spec)
    assert report.passed, report.table()
    study = ct.recover("softmax", experiment=spec)
    assert len(study.table) == 50 * 100 and study.table["true"].max() <= 100.0


def test_a_declared_entry_point_reaches_experiments_and_the_cli(outside: tuple[Path, Any]) -> None:
    root, _ = outside
    dist = root / "outside_coins-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-coins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cogtestbed.experiments]\ncoin-guess = outside_coins.spec:SPEC\n")
    registry.EXPERIMENTS.forget_installed()
    registry.EXPERIMENTS.unregister("coin-guess")
    try:
        assert "coin-guess" in ct.experiments()
        assert ct.get_experiment("coin-guess").env_cls.__module__ == "outside_coins.environments.coin"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}:{root}"}
        listed = subprocess.run([sys.executable, "-m", "cogtestbed", "list"], capture_output=True, text=True,
                                cwd=ROOT, env=env, timeout=300)
        assert listed.returncode == 0 and "coin-guess" in listed.stdout, listed.stderr[-1000:]
    finally:
        registry.EXPERIMENTS.forget_installed()
