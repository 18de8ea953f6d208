"""The command-line process: plain values skip typer's pydantic coercion with typer's results, the
process ends without the interpreter's teardown but with its effects, and parameter sets build
their pydantic model only when values are validated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._click import Context
from typer._coercion import build_runtime_param

from cogtestbed.cli import app
from cogtestbed.parameters import Parameter, ParameterError, ParameterSet
from cogtestbed.shims.typer_shim import NOT_PLAIN, PlainCoercion, plain_value, use_plain_coercion

ROOT = Path(__file__).resolve().parents[1]
BART = ROOT.parent / "shared/data/cogbench/BART/gpt-4.csv"


def _command(name: str) -> Any:
    return typer.main.get_command(app).commands[name]


def _params(command: Any) -> dict[str, Any]:
    return {p.name: p for p in command.params}


@pytest.mark.parametrize(("command", "name", "value"), [
    ("metrics", "experiment", "bart"),
    ("metrics", "path", str(BART)),
    ("metrics", "path", "no/such/file.csv"),
    ("metrics", "source", "auto"),
    ("metrics", "as_json", True),
    ("fit", "output", "out/dir"),
    ("fit", "draws", 1000),
    ("fit", "draws", "25"),  # typed on the command line: read as typer would, refused in one plain line if not
    ("fit", "seed", 0),
])
def test_plain_values_are_what_typer_makes_of_them(command: str, name: str, value: Any) -> None:
    cmd = _command(command)
    param = _params(cmd)[name]
    ctx = Context(cmd)
    plain = plain_value(param.type_descriptor, value, param, ctx)
    assert plain is not NOT_PLAIN
    expected = build_runtime_param(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    assert plain == expected and type(plain) is type(expected)


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("path", "data//gpt-4.csv/", Path("data/gpt-4.csv")),  # Path would respell it: typer's message names it
])
def test_values_that_need_converting_go_to_typer(name: str, value: Any, expected: Any) -> None:
    cmd = _command("fit")
    param = _params(cmd)[name]
    ctx = Context(cmd)
    assert plain_value(param.type_descriptor, value, param, ctx) is NOT_PLAIN
    assert PlainCoercion(param.type_descriptor).coerce(value, param=param, ctx=ctx) == expected


def test_typer_still_refuses_bad_values() -> None:
    cmd = _command("fit")
    param = _params(cmd)["draws"]
    with pytest.raises(typer.BadParameter):
        PlainCoercion(param.type_descriptor).coerce("0", param=param, ctx=Context(cmd))  # min=1


def test_every_parameter_of_a_resolved_command_gets_plain_coercion() -> None:
    group = typer.main.get_command(app)
    cmd = group.commands["metrics"]
    ctx = Context(group)
    use_plain_coercion(cmd, ctx)
    for param in [*cmd.params, cmd.get_help_option(ctx)]:
        if hasattr(param, "type_descriptor"):
            assert isinstance(param._runtime_param, PlainCoercion), param.name


def _cli_process(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **env}, check=False)


QUICK = """
import atexit, sys, threading, time
from pathlib import Path
atexit.register(lambda: print("atexit ran", flush=True))
marker = Path(sys.argv[2])
if sys.argv[1] == "thread":  # a non-daemon thread: the process waits for it
    threading.Thread(target=lambda: (time.sleep(0.5), marker.write_text("done"))).start()
sys.argv = ["cogtestbed", *sys.argv[3:]]
from cogtestbed.cli import console_main
console_main()
"""


@pytest.mark.parametrize("switch", ["1", "0"])
def test_the_process_ends_with_its_status_output_and_exit_handlers(switch: str, tmp_path: Path) -> None:
    done = _cli_process(QUICK, "plain", "-", "metrics", "bart", str(BART), "--json", COGTESTBED_QUICK_EXIT=switch)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "atexit ran"
    assert json.loads(lines[-2])["experiment"] == "bart"
    failed = _cli_process(QUICK, "plain", "-", "metrics", "nope", str(BART), COGTESTBED_QUICK_EXIT=switch)
    assert failed.returncode == 2 and "unknown experiment 'nope'" in failed.stderr
    assert failed.stdout.strip().splitlines()[-1] == "atexit ran"


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    marker = tmp_path / "thread.txt"
    done = _cli_process(QUICK, "thread", str(marker), "list")
    assert done.returncode == 0, done.stderr[-2000:]
    assert marker.read_text() == "done"


def test_a_parameter_set_builds_its_pydantic_model_on_first_validation() -> None:
    params = ParameterSet([Parameter.unit("alpha", 0.3), Parameter.positive("beta", 2.0, upper=50.0)], owner="toy")
    assert "_model" not in vars(params)
    assert params.validate({"alpha": 0.5}) == {"alpha": 0.5, "beta": 2.0}
    model = vars(params)["_model"]
    with pytest.raises(ParameterError, match=r"beta=60.0.*less than or equal to 50"):
        params.validate({"beta": 60.0})
    with pytest.raises(ParameterError, match="unknown parameter 'gamma'"):
        params.validate({"gamma": 1.0})
    assert vars(params)["_model"] is model


def test_progress_bars_run_on_the_lazily_built_console():
    """rich's Progress enters its console (``with console:``): the lazy stderr console must forward that."""
    from cogtestbed.cli.app import _LazyConsole, progress

    assert list(progress(range(5), "counting", total=5)) == [0, 1, 2, 3, 4]
    assert list(progress(range(3), "hidden", total=3, enabled=False)) == [0, 1, 2]
    console = _LazyConsole(stderr=True)
    with console as entered:
        assert entered is console._real()


#: ``python -m cogtestbed`` with the demo's studies and its pilot → plan made small (fewer reps, subject
#: counts and a coarser plan), patched in the child process before the command runs: the same job,
#: code path and process (stderr a pipe), in seconds instead of minutes.
SMALL_DEMO = """
import runpy

import cogtestbed.api.demo_real as real
from cogtestbed.studies import driver

full_study_spec, full_run_study = driver.study_spec, driver.run_study
SMALL = {"recovery": {"reps": 2, "subjects": (12,)}, "power": {"reps": 4, "subjects": (10, 20)}}


def small_study_spec(**fields):
    return full_study_spec(**{**fields, **SMALL.get(fields.get("kind"), {})})


def one_worker_run_study(spec, workers=None, **kwargs):
    return full_run_study(spec, workers=1, **kwargs)


driver.study_spec, driver.run_study = small_study_spec, one_worker_run_study
real.PLAN_ARGS = {**real.PLAN_ARGS, "effect": "optimism_bias=0.6", "subjects": "8:12", "mc_se": 0.25}
real.FORMS_PILOT = {"forms": 2, "subjects": 4, "visits_per_casino": 1}
runpy.run_module("cogtestbed", run_name="__main__")
"""


def _demo_job(tmp_path: Path, prefix: list[str], *args: str) -> Path:
    """Run ``cogtestbed demo`` as ``make demo`` does (a process of its own, stderr a pipe, progress bars
    included) and check what it must show: exit 0, no traceback, the report naming what it measured."""
    out = tmp_path / "demo_output"
    proc = subprocess.run([sys.executable, *prefix, "demo", "-o", str(out), "--force", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    report = (out / "report.md").read_text()
    assert report.startswith("# cogtestbed demo: instrumental learning") and "## CogBench metrics" in report
    assert {"trials.parquet", "metrics.json", "report.html"} <= {p.name for p in out.iterdir()}
    assert "## A real model: hf:smollm2-135m" in report and "### pilot → plan" in report
    assert "### prompt forms: pilot → forms plan" in report
    assert {"recovery", "power", "real_model"} <= {p.name for p in out.iterdir()}
    for kind in ("recovery", "power"):  # each study's progress (stderr is a pipe: its closing line)
        assert re.search(rf"^demo {kind} study: (\d+)/\1 tasks, ", proc.stderr, re.M), proc.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_demo_job_runs_end_to_end_as_make_demo_runs_it(tmp_path: Path) -> None:
    """``make demo``'s job at its own sizes (minutes; the default suite runs :data:`SMALL_DEMO`)."""
    _demo_job(tmp_path, ["-m", "cogtestbed"])


def test_the_demo_job_runs_end_to_end_with_small_studies(tmp_path: Path) -> None:
    """The demo's whole job with small studies and plan (:data:`SMALL_DEMO`): every part runs, in order,
    and writes its values (the recovery and power tables hold every task's rows)."""
    import pandas as pd

    out = _demo_job(tmp_path, ["-c", SMALL_DEMO], "--subjects", "10")
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["synthetic"]["per_run"]) == 10 and metrics["synthetic"]["metrics"]["n_runs"] == 10
    assert 0.0 <= metrics["synthetic"]["metrics"]["performance"] <= 1.0
    sessions, plan = metrics["real_model"]["sessions"], metrics["real_model"]["plan"]
    assert len(sessions) == 2 and "refused" not in plan  # the pilot's plan is made, not refused
    assert plan["run"]["subjects"] in (8, 9, 10, 11, 12) and 0.0 < plan["pilot"]["invalid_rate"] < 1.0
    forms = metrics["real_model"]["forms_pilot"]  # 2 forms x 2 sessions of 4 trials: never an identified form SD
    assert "--forms 1,2,4,8 --pilot" in forms["command"] and forms["pilot"]["calls"] == 16
    assert forms["identified"] is False and forms["problems"] and "plan" not in forms
    assert forms["assumed_plan"]["form_sd"] == {"alpha_pos": 0.15}
    assert "does NOT identify the form SD" in (out / "report.md").read_text()
    recovery, power = (pd.read_parquet(out / kind / "results.parquet") for kind in ("recovery", "power"))
    assert len(recovery) == 2 * 12 * 4 and set(recovery["rep"]) == {0, 1}  # reps x subjects x parameters
    assert recovery["estimate"].notna().all()
    assert len(power) == 4 * 2 * 2 and set(power["n_subjects"]) == {10, 20}  # reps x subjects x trials
    assert power["p_value"].between(0, 1).all()


def test_the_demo_report_flags_estimates_at_a_bound_and_rounds_metrics() -> None:
    """Per-subject β estimates stuck at the 1e5 bound are flagged (they pull the mean); metrics have 3 digits."""
    from cogtestbed.api.demo import _report

    per_run = {"alpha_pos": [0.4] * 10, "alpha_neg": [0.2] * 10, "beta_pm": [5.0] * 8 + [1e5, 1e5],
               "optimism_bias": [0.2] * 10}
    report = _report({"per_run": per_run, "metrics": {"performance": 0.570625, "n_runs": 50}}, None, 10, 1)
    assert "FLAG: 2 of 10 estimates of beta_pm sit at a bound" in report
    assert '"performance": 0.571' in report and '"n_runs": 50' in report
    assert "alpha_pos sit at a bound" not in report
