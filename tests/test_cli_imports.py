"""The command line stays import-light: building any help page loads no numerical package.

Run in a fresh interpreter (a test process has long imported everything), so the check sees exactly
what ``cogtestbed --help`` / ``cogtestbed COMMAND --help`` import.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

#: Packages whose import costs seconds (or compiles): none may load for a help page.
HEAVY = ("numpy", "scipy", "pandas", "numba", "pymc", "pytensor", "arviz", "statsmodels", "pyarrow",
         "matplotlib", "sklearn", "pgmpy", "torch", "transformers", "gymnasium")

PROBE = """
import contextlib, io, json, sys
from cogtestbed.cli import app, main
import typer.main
commands = sorted(typer.main.get_command(app).commands)
for args in [["--help"], *[[c, "--help"] for c in commands]]:
    sys.argv = ["cogtestbed", *args]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main()
        except SystemExit as exc:
            assert exc.code in (0, None), (args, exc.code)
    assert "Usage" in out.getvalue(), args
print(json.dumps({"commands": commands, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


@pytest.fixture(scope="module")
def probe() -> dict[str, list[str]]:
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=root, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "", "COLUMNS": "100"}, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_help_pages_import_no_numerical_package(probe: dict[str, list[str]]) -> None:
    assert {"recover", "metrics", "simulate", "run", "fit", "check", "phenotype"} <= set(probe["commands"])
    loaded = sorted(set(HEAVY) & set(probe["modules"]))
    assert loaded == [], f"cogtestbed --help imported {loaded}"


def test_help_pages_build_no_pydantic_adapter(probe: dict[str, list[str]]) -> None:
    """typer coerces an absent help flag through a pydantic TypeAdapter unless it defaults to False."""
    assert "pandera" not in probe["modules"]
    assert "pydantic" not in probe["modules"], "a help page imported pydantic (typer built a TypeAdapter)"


def test_the_cli_method_choices_are_the_simulation_paths() -> None:
    from cogtestbed.cli.simulate import Method as CliMethod
    from cogtestbed.simulation import Method

    assert typing.get_args(CliMethod) == typing.get_args(Method)


def test_user_errors_resolve_to_the_library_classes() -> None:
    from cogtestbed.data.cogbench import DataFormatError
    from cogtestbed.parameters import ParameterError
    from cogtestbed.registry import UnknownNameError

    cli_app = importlib.import_module("cogtestbed.cli.app")
    errors = cli_app.USER_ERRORS
    assert {DataFormatError, ParameterError, UnknownNameError, FileNotFoundError} <= set(errors)
    assert cli_app.is_user_error(UnknownNameError("experiment", "nope", ["a"]))
    assert not cli_app.is_user_error(RuntimeError("a bug"))
