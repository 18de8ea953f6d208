"""The generated references (issue 72: reference generated, not written): docs/cli.md from the typer
application (``make docs-cli``) and docs/api-reference.md from the names ``ct.`` exports (``make docs-api``);
regenerating each gives the checked-in file, so neither can drift from the code.  Both generators run in the
test's own process (the same code ``make docs-cli`` and ``make docs-api`` start)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The arguments of ``python -m typer`` that write docs/cli.md (the Makefile's docs-cli target runs the same).
GENERATE = ["cogtestbed.cli", "utils", "docs", "--name", "cogtestbed", "--title", "Command-line reference"]


def test_the_cli_reference_is_current(tmp_path: Path) -> None:
    from typer.cli import app as typer_cli
    from typer.testing import CliRunner

    out = tmp_path / "cli.md"
    done = CliRunner().invoke(typer_cli, [*GENERATE, "--output", str(out)])
    assert done.exit_code == 0, done.output
    generated = out.read_text(encoding="utf-8")
    assert "## `cogtestbed serve`" in generated and "* `--reasoning-as" in generated
    assert generated == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), \
        "docs/cli.md is out of date with the command line: run `make docs-cli`"


def test_the_api_reference_is_current(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "benchmarks" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "api-reference.md"
    assert script.main(["--output", str(out)]) == 0
    generated = out.read_text(encoding="utf-8")
    assert "::: cogtestbed.api.population.population\n" in generated and "::: cogtestbed.api.core.fit\n" in generated
    assert generated == (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8"), \
        "docs/api-reference.md is out of date with ct.'s names: run `make docs-api`"
