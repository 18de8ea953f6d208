"""The command-line reference, docs/cli.md, is generated from the typer application (issue 72: reference
generated, not written): regenerating it gives the checked-in file, so it cannot drift from the commands.
Regenerate with ``make docs-cli``."""

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
