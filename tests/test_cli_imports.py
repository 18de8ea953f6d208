"""The command line stays import-light: building any help page loads no numerical package.

Run in a fresh interpreter (a test process has long imported everything), so the check sees exactly
what ``cogtestbed --help`` / ``cogtestbed COMMAND --help`` import.
"""

from __future__ import annotations

import importlib
import json
import os
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


def test_help_pages_skip_the_modules_typers_formatter_imports_but_never_uses(probe: dict[str, list[str]]) -> None:
    """rich.markdown (markdown-it) and rich.traceback (pygments, rich.pretty) are ~40 % of ``--help``'s CPU."""
    assert "markdown_it" not in probe["modules"]
    assert "pygments" not in probe["modules"]
    assert "typer" in probe["modules"]


def test_the_help_formatters_stand_ins_give_the_real_classes() -> None:
    """Where typer's formatter was imported with the stand-ins, a call (typer's "markdown" markup mode)
    gets rich's own Markdown; afterwards ``import rich.markdown`` loads the real module."""
    code = """
import sys
from cogtestbed.cli.app import import_help_formatter
import_help_formatter()
import typer.rich_utils as ru
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
made = ru.Markdown("*hi*")
import rich.markdown
assert type(made) is rich.markdown.Markdown, type(made)
assert rich.markdown.Markdown is not ru.Markdown and "Stand-in" in ru.Markdown.__doc__
print("ok")
"""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": ""}, check=False)
    assert done.stdout.strip() == "ok", done.stderr


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
    for cls in (DataFormatError, ParameterError, UnknownNameError, FileNotFoundError):
        assert issubclass(cls, errors), cls
    assert cli_app.is_user_error(UnknownNameError("experiment", "nope", ["a"]))
    assert not cli_app.is_user_error(RuntimeError("a bug"))


FIT_PROBE = """
import contextlib, io, json, sys
from cogtestbed.cli import run_cli
with contextlib.redirect_stdout(io.StringIO()):
    code = run_cli(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

#: Modules a fitting call on a CogBench file must not import: statsmodels (the horizon regressions
#: run statsmodels' Newton fit without it), scipy.stats (the fits are numba's; scipy.optimize, and with it
#: scipy.special, is imported for the profile-likelihood intervals' root finder, issue 68),
#: pandera (the schema fast path), the study
#: machinery and typer's pydantic adapters (plain values skip them, ``cogtestbed.shims.typer_shim``);
#: the environments and agents (an experiment names them lazily: the table's schema, the importer,
#: the metrics and the models need none), hence gymnasium and pydantic (the designs), the simulation
#: layer, rich (only JSON is printed) and Parquet's file layer (a CSV is read).
NOT_ON_THE_FIT_PATH = ("statsmodels", "scipy.stats", "pandera",
                       "cogtestbed.studies.driver", "typer._adapters", "cogtestbed.environments",
                       "cogtestbed.simulation", "gymnasium", "pydantic", "rich", "pyarrow.parquet")
#: The one agent module a fitting call may import: the lapse kernels every model's likelihood uses.
AGENT_MODULES_ALLOWED = ("cogtestbed.agents", "cogtestbed.lapse")
COGBENCH = Path(__file__).resolve().parents[1].parent / "shared/data/cogbench"
#: gpt-4's released file of every CogBench task (claude-1's where gpt-4 has none).
COGBENCH_FILES = {"bart": "BART/gpt-4.csv", "horizon": "HorizonTask/gpt-4.csv",
                  "instrumental-learning": "InstrumentalLearning/gpt-4.csv",
                  "probabilistic-reasoning": "ProbabilisticReasoning/gpt-4.csv",
                  "restless-bandit": "RestlessBandit/claude-1.csv",
                  "temporal-discounting": "TemporalDiscounting/gpt-4.csv", "two-step": "TwoStepTask/gpt-4.csv"}
FITTING_CALLS = {
    **{f"metrics-{name}": ["metrics", name, path, "--json"] for name, path in COGBENCH_FILES.items()},
    "fit-rw-pm": ["fit", "rw-pm", "InstrumentalLearning/gpt-4.csv", "--method", "mle", "--json", "--force", "-o"],
}


def test_the_fitting_calls_cover_every_cogbench_experiment() -> None:
    from cogtestbed.experiments._cogbench import CITATION
    from cogtestbed.registry import experiment_names, get_experiment

    cogbench = {n for n in experiment_names() if get_experiment(n).citation.startswith(CITATION)}
    assert cogbench == set(COGBENCH_FILES)


def forbidden_on_the_fit_path(modules: list[str]) -> list[str]:
    """The modules of ``modules`` a fitting call must not import (see :data:`NOT_ON_THE_FIT_PATH`)."""
    return sorted(m for m in modules if m.startswith(NOT_ON_THE_FIT_PATH)
                  or (m.startswith("cogtestbed.agents") and m not in AGENT_MODULES_ALLOWED))


def test_the_fit_path_guard_names_what_an_environment_import_brings() -> None:
    """The guard fails on what importing an environment or an agent loads."""
    modules = ["cogtestbed.environments.horizon", "cogtestbed.agents.horizon", "gymnasium.spaces",
               "pydantic.main", "rich.console", "cogtestbed.lapse", "cogtestbed.tables.horizon"]
    assert forbidden_on_the_fit_path(modules) == sorted(modules[:5])


@pytest.mark.parametrize("args", list(FITTING_CALLS.values()), ids=list(FITTING_CALLS))
def test_fitting_calls_import_only_what_they_use(args: list[str], tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    argv = [str(COGBENCH / a) if a.endswith(".csv") else a for a in args] + (
        [str(tmp_path / "fit")] if args[-1] == "-o" else [])
    done = subprocess.run([sys.executable, "-c", FIT_PROBE, *argv], capture_output=True, text=True, cwd=root,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(root), "COLUMNS": "100"}, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["code"] == 0
    loaded = forbidden_on_the_fit_path(probe["modules"])
    assert loaded == [], f"{' '.join(args[:2])} imported {loaded}"
