"""The generated references (issue 72: reference generated, not written): docs/cli.md from the typer
application (``make docs-cli``) and docs/api-reference.md from the names ``ct.`` exports (``make docs-api``);
regenerating each gives the checked-in file, so neither can drift from the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The command that writes docs/cli.md (the Makefile's docs-cli target runs the same).
GENERATE = [sys.executable, "-m", "typer", "cogtestbed.cli", "utils", "docs", "--name", "cogtestbed",
            "--title", "Command-line reference"]


def test_the_cli_reference_is_current(tmp_path: Path) -> None:
    out = tmp_path / "cli.md"
    subprocess.run([*GENERATE, "--output", str(out)], check=True, capture_output=True, cwd=ROOT, timeout=120)
    generated = out.read_text(encoding="utf-8")
    assert "## `cogtestbed serve`" in generated and "* `--reasoning-as" in generated
    assert generated == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), \
        "docs/cli.md is out of date with the command line: run `make docs-cli`"


def test_the_api_reference_is_current(tmp_path: Path) -> None:
    out = tmp_path / "api-reference.md"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "docs_reference.py"), "--output", str(out)],
                   check=True, capture_output=True, cwd=ROOT, timeout=120)
    generated = out.read_text(encoding="utf-8")
    assert "::: cogtestbed.api.population.population\n" in generated and "::: cogtestbed.api.core.fit\n" in generated
    assert generated == (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8"), \
        "docs/api-reference.md is out of date with ct.'s names: run `make docs-api`"
