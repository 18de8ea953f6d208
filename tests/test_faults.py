"""Fault injection: the CLI driven with bad input stops with exit status 2, exactly one line on
stderr, and nothing half-written; study workers report their errors readably and die with their
parent; outputs follow one overwrite policy and ordinary file permissions."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest

from cogtestbed.cli import run_cli
from cogtestbed.experiments.spec import UnknownNameError
from cogtestbed.outputs import atomic_write_bytes, output_dir
from cogtestbed.trials import write_files_together

REPO = Path(__file__).resolve().parents[1]
COGBENCH_IL = REPO.parent / "shared/data/cogbench/InstrumentalLearning/gpt-4.csv"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _fails_cleanly(args: list[str], capsys: pytest.CaptureFixture[str], root: Path) -> str:
    """Run ``cogtestbed ARGS``; assert exit 2, one stderr line, no file added under ``root``."""
    before = _files(root)
    code = run_cli(args)
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert code == 2, (code, out.err)
    assert len(lines) == 1 and lines[0].startswith("error: "), out.err  # exactly one line, no blank ones
    assert _files(root) == before, f"left behind: {_files(root) - before}"
    return lines[0]


# ----------------------------------------------------------------------------- bad option values
BAD_INPUTS = [
    (["recover", "--model", "rw", "--subjects", "-3"], "--subjects must be at least 1, got -3"),
    (["recover", "--model", "rw", "--subjects", "10,,20"], "an empty item"),
    (["recover", "--model", "rw", "--trials", "0"], "--trials must be at least 1, got 0"),
    (["recover", "--model", "rw", "--method", "bogus"], "--method"),
    (["recover", "--model", "rw", "--design", "foo=3"], "foo"),
    (["recover", "--model", "rw", "--reps", "0"], "'--reps'"),
    (["power", "rw-pm", "--effect", "optimism_bias=0.1", "--level", "2"], "--level"),
    (["power", "rw-pm", "--effect", "optimism_bias=0.1", "--base", "foo=2"],
     "foo is not a parameter of model rw-pm; valid: alpha_neg, alpha_pos, beta"),
    (["recover", "--model", "rw", "--param", "alpha=0.1", "--param", "alpha=0.2"], "sets alpha twice"),
    (["recover", "--model", "rw", "--fix", "alpha=0.3", "--fix", "beta=3"], "nothing is left to recover"),
    (["model-recovery", "--model", "rw", "--model", "rw"], "named twice"),
    (["model-recovery", "--model", "rw", "--model", "rw-pm", "--subjects", "-3"], "'--subjects'"),
    (["recover", "--model", "nope"], "choose one of: "),
    (["recover", "--model", "rw", "--workers", "0"], "'--workers'"),
    (["fit", "rw-pm", str(COGBENCH_IL), "-o", "{tmp}/fit", "--draws", "0"], "'--draws'"),
    (["fit", "rw-pm", str(COGBENCH_IL), "-o", "{tmp}/fit", "--chains", "0"], "'--chains'"),
    (["fit", "rw-pm", str(COGBENCH_IL), "-o", "{tmp}/fit", "--method", "bogus"], "--method"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[" ".join(a[:4]) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2(args: list[str], message: str, capsys, tmp_path: Path) -> None:
    line = _fails_cleanly([a.replace("{tmp}", str(tmp_path)) for a in args], capsys, tmp_path)
    assert message in line
    assert "pydantic.dev" not in line and "Value error," not in line


def test_unknown_name_error_pickles_and_never_lists_nothing() -> None:
    err = UnknownNameError("metric option", "scheme", [], "bart")
    assert "choose one of" not in str(err) and "there are none" in str(err)
    back = pickle.loads(pickle.dumps(UnknownNameError("model", "x", ["a", "b"], "e")))
    assert isinstance(back, UnknownNameError) and str(back) == "unknown model 'x' for e; choose one of: a, b"


def test_memory_is_estimated_and_refused_up_front(capsys, tmp_path: Path) -> None:
    line = _fails_cleanly(["recover", "--model", "rw", "--subjects", "100000000", "--reps", "2",
                           "-o", str(tmp_path / "o")], capsys, tmp_path)
    assert "of memory" in line and "is available" in line  # its rows: a recovery task streams its trials
    line = _fails_cleanly(["simulate", "instrumental-learning", "-a", "rw", "--subjects", "100000000",
                           "-o", str(tmp_path / "t.parquet")], capsys, tmp_path)
    assert "needs about" in line


def test_unreachable_dask_fails_fast(capsys, tmp_path: Path, monkeypatch) -> None:
    import cogtestbed.studies.driver as studies

    monkeypatch.setattr(studies, "DASK_CONNECT_TIMEOUT", 1.0)
    line = _fails_cleanly(["recover", "--model", "rw", "--subjects", "2", "--reps", "1", "--dask", "127.0.0.1:1",
                           "-o", str(tmp_path / "o")], capsys, tmp_path)
    assert "cannot reach the Dask scheduler at 127.0.0.1:1" in line


# ----------------------------------------------------------------------------- output paths
def test_output_paths_are_checked_before_computing(capsys, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    full = tmp_path / "full"
    full.mkdir()
    (full / "results.parquet").write_text("old")
    study = ["recover", "--model", "rw", "--subjects", "2", "--reps", "1", "--workers", "1"]
    assert "is not a folder" in _fails_cleanly([*study, "-o", str(tmp_path / "afile")], capsys, tmp_path)
    assert "cannot create output folder" in _fails_cleanly([*study, "-o", str(tmp_path / "afile" / "sub")], capsys,
                                                           tmp_path)
    assert "--force" in _fails_cleanly([*study, "-o", str(full)], capsys, tmp_path)
    assert (full / "results.parquet").read_text() == "old"
    sim = ["simulate", "instrumental-learning", "-a", "rw", "--subjects", "2"]
    (tmp_path / "t.parquet").write_text("old")
    assert "--force" in _fails_cleanly([*sim, "-o", str(tmp_path / "t.parquet")], capsys, tmp_path)
    assert "is a folder" in _fails_cleanly([*sim, "-o", str(full)], capsys, tmp_path)
    assert "must end in .parquet" in _fails_cleanly([*sim, "-o", str(tmp_path / "t.csv")], capsys, tmp_path)
    assert run_cli([*sim, "-o", str(tmp_path / "t.parquet"), "--force"]) == 0
    assert pd.read_parquet(tmp_path / "t.parquet")["subject"].nunique() == 2


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a read-only /proc")
def test_read_only_output_is_one_line(capsys, tmp_path: Path) -> None:
    study = ["recover", "--model", "rw", "--subjects", "2", "--reps", "1", "--workers", "1"]
    line = _fails_cleanly([*study, "-o", "/proc/cogtestbed-out"], capsys, tmp_path)
    assert "cannot create output folder /proc/cogtestbed-out" in line
    line = _fails_cleanly(["simulate", "instrumental-learning", "-a", "rw", "-o", "/proc/t.parquet"], capsys, tmp_path)
    assert "cannot write to /proc" in line


def test_failed_command_leaves_no_empty_output_folder(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError), output_dir(target):
        assert target.is_dir()
        raise RuntimeError("the study failed")
    assert not (tmp_path / "a").exists()
    (tmp_path / "keep").mkdir()
    with pytest.raises(RuntimeError), output_dir(tmp_path / "keep"):
        raise RuntimeError("the study failed")
    assert (tmp_path / "keep").is_dir()  # existed before: kept


def test_atomic_files_get_ordinary_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "a.json", lambda tmp: tmp.write_text("{}"))
        (tmp_path / "b.json").write_text("{}")
        write_files_together({tmp_path / "c.parquet": lambda tmp: tmp.write_text("c")})
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {"a.json": 0o644, "b.json": 0o644, "c.parquet": 0o644}


def test_files_written_together_are_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "t.parquet").write_text("old table")

    def fail(tmp: Path) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_files_together({tmp_path / "t.parquet": lambda tmp: tmp.write_text("new table"),
                              tmp_path / "t.parquet.manifest.json": fail})
    assert (tmp_path / "t.parquet").read_text() == "old table"
    assert _files(tmp_path) == {"t.parquet"}


# ----------------------------------------------------------------------------- study workers
def _raise_unknown(*args: object, **kwargs: object) -> pd.DataFrame:
    raise UnknownNameError("thing", "x", ["a"], "a worker")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_worker_errors_are_one_line_with_any_workers(workers: str, capsys, tmp_path: Path, monkeypatch) -> None:
    from cogtestbed.studies import model_studies

    monkeypatch.setitem(model_studies.MODEL_TASKS, "recovery", _raise_unknown)
    line = _fails_cleanly(["recover", "--model", "rw", "--subjects", "2", "--reps", "4", "--workers", workers,
                           "-o", str(tmp_path / "out")], capsys, tmp_path)
    assert "recovery task 0 (rep 0): unknown thing 'x' for a worker; choose one of: a" in line \
        or "recovery task" in line and "unknown thing 'x'" in line


def test_a_dead_worker_is_one_line(capsys, tmp_path: Path, monkeypatch) -> None:
    from cogtestbed.studies import model_studies

    parent, original = os.getpid(), model_studies.MODEL_TASKS["recovery"]

    def die(*args: object, **kwargs: object) -> pd.DataFrame:
        if os.getpid() == parent:  # the pool plays its first task in the parent before forking
            return original(*args, **kwargs)
        os._exit(9)

    monkeypatch.setitem(model_studies.MODEL_TASKS, "recovery", die)
    line = _fails_cleanly(["recover", "--model", "rw", "--subjects", "2", "--reps", "2", "--workers", "2"],
                          capsys, tmp_path)
    assert "a worker process died" in line


CHILD = textwrap.dedent("""
    import os, sys, time
    from cogtestbed.studies import model_studies

    PARENT, ORIGINAL = os.getpid(), model_studies.MODEL_TASKS["recovery"]

    def hang(*args, **kwargs):
        if os.getpid() == PARENT:  # the pool plays its first task in the parent before forking
            return ORIGINAL(*args, **kwargs)
        time.sleep(600)

    model_studies.MODEL_TASKS["recovery"] = hang
    if sys.argv[1] == "cli":
        sys.argv = ["cogtestbed", "recover", "--model", "rw", "--subjects", "2", "--reps", "4", "--workers", "2"]
        from cogtestbed.cli import main
        main()
    else:
        from cogtestbed.studies.driver import StudySpec, run_study, study_spec
        run_study(study_spec(kind="recovery", experiment="instrumental-learning", models=("rw",),
                            subjects=(2,), reps=4), workers=2)
""")


@pytest.mark.parametrize(("entry", "sig"), [("library", signal.SIGKILL), ("cli", signal.SIGTERM)])
def test_workers_die_with_their_parent(entry: str, sig: int, tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script), entry], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = parent.children(recursive=True)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    assert len(workers) >= 2
    proc.send_signal(sig)
    code = proc.wait(timeout=30)
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"{len(alive)} workers outlived their parent"
    if entry == "cli":
        assert code == 128 + signal.SIGTERM


# ----------------------------------------------------------------------------- fit outputs
def test_posterior_is_compressed_and_log_likelihood_optional(tmp_path: Path) -> None:
    import arviz as az
    import xarray as xr

    from cogtestbed.api.fitting import write_posterior

    rng = np.random.default_rng(0)
    idata = az.from_dict(posterior={"alpha": rng.normal(size=(2, 200, 30))},
                         log_likelihood={"y": rng.normal(size=(2, 200, 2000))})
    plain = tmp_path / "plain.nc"
    idata.to_netcdf(str(plain), compress=False)
    slim = write_posterior(idata, tmp_path / "slim.nc")
    full = write_posterior(idata, tmp_path / "full.nc", log_likelihood=True)
    assert slim.stat().st_size < 0.05 * plain.stat().st_size
    assert full.stat().st_size < plain.stat().st_size
    back = az.from_netcdf(str(slim))
    assert "log_likelihood" not in back.groups()
    np.testing.assert_array_equal(back.posterior["alpha"].to_numpy(), idata.posterior["alpha"].to_numpy())
    assert "log_likelihood" in az.from_netcdf(str(full)).groups()
    assert isinstance(back.posterior, xr.Dataset)


# ----------------------------------------------------------------------------- usability
def _fit_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    import json

    assert run_cli(["fit", "hybrid", str(REPO.parent / "shared/data/cogbench/TwoStepTask/gpt-4.csv"), "-e",
                    "two-step", "--method", "mle", "--json", *args]) == 0
    return dict(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))


def test_fit_pools_runs_per_agent_as_the_experiment_declares(capsys, tmp_path: Path) -> None:
    pooled = _fit_json(["-o", str(tmp_path / "a")], capsys)
    assert pooled["n_subjects"] == 1 and pooled["unit"].startswith("agent")
    assert len(pd.read_csv(tmp_path / "a" / "mle.csv")) == 1


@pytest.mark.slow
def test_fit_separate_runs_fits_each_run(capsys, tmp_path: Path) -> None:
    separate = _fit_json(["-o", str(tmp_path / "b"), "--separate-runs"], capsys)
    assert separate["n_subjects"] == 100 and separate["unit"] == "subject" and separate["n_units"] == 100
    assert len(pd.read_csv(tmp_path / "b" / "mle.csv")) == 100


def test_pool_runs_relabels_runs_as_sessions_of_one_agent() -> None:
    from cogtestbed.simulation import pool_runs

    table = pd.DataFrame({"subject": [0, 0, 1, 1, 2, 5], "session": 0, "trial": [0, 1, 0, 1, 0, 0],
                          "agent": ["a", "a", "a", "a", "b", "a"]})
    out = pool_runs(table)
    assert out["subject"].tolist() == [0, 0, 0, 0, 1, 0]
    assert out["session"].tolist() == [0, 0, 1, 1, 0, 2]


def test_list_is_generated_from_the_specs(capsys) -> None:
    import json

    from cogtestbed.registry import experiment_names, get_experiment

    assert run_cli(["list", "--json"]) == 0
    names = [e["name"] for e in json.loads(capsys.readouterr().out)["experiments"]]
    assert names == experiment_names()
    assert run_cli(["list", "instrumental-learning", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    exp = get_experiment("instrumental-learning")
    assert [a["name"] for a in info["agents"]] == list(exp.agents)
    rw = next(m for m in info["models"] if m["name"] == "rw")
    assert {p["name"]: (p["lower"], p["upper"], p["default"]) for p in rw["parameters"]} == {
        p.name: (p.lower, p.upper, p.default) for p in exp.model("rw").parameters}
    assert {f["name"]: f["default"] for f in info["design"]["fields"]}["visits_per_casino"] == 24
    assert info["metrics"]["headline"] == list(exp.metrics.headline)
    assert info["importers"] == ["cogbench", "psych201"] and "model-recovery" in [s["name"] for s in info["studies"]]
    assert run_cli(["list", "two-step"]) == 0
    assert "hybrid" in capsys.readouterr().out
    assert run_cli(["list", "nope"]) == 2


def test_help_texts_name_no_internal_references() -> None:
    import re

    import typer

    from cogtestbed.cli import app

    root = typer.main.get_command(app)
    texts = [root.help or ""]
    for cmd in root.commands.values():  # type: ignore[attr-defined]
        texts.append(cmd.help or "")
        texts.extend(getattr(p, "help", None) or "" for p in cmd.params)
    bad = [t for t in texts if re.search(r"\bissue \d|\bseed \d{3}\b|seed 0\d|DESIGN\.md|helper", t, re.I)]
    assert not bad, bad
    assert len(texts) > 50


def test_messages_and_field_descriptions_name_no_issue_numbers() -> None:
    """Strings the package shows users (refusals, warnings, design-field descriptions) never cite the
    project's issue tracker: every string constant that is not a docstring is scanned."""
    import ast
    import re

    pattern = re.compile(r"\bissues? \d+\b", re.I)
    package = Path(__file__).resolve().parents[1] / "cogtestbed"
    bad = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.value) for node in ast.walk(tree)
                      if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        bad += [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and pattern.search(node.value)]
    assert not bad, bad


def test_study_summary_names_the_true_parameter_distribution(capsys, tmp_path: Path) -> None:
    import json

    assert run_cli(["recover", "--model", "rw", "--subjects", "2", "--reps", "1", "--workers", "1",
                    "--sampler", "uniform", "-o", str(tmp_path / "r"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["true_parameters"].startswith("independent uniform draws")
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["true_parameters"] == payload["true_parameters"]
    assert "True parameters: independent uniform draws" in summary["verdict"]


# ----------------------------------------------------------------------------- response cache paths
def test_a_cache_path_that_is_a_directory_or_unwritable_is_one_clear_error(tmp_path: Path) -> None:
    from cogtestbed.llm_adapters.middleware.cache import ResponseCache

    with pytest.raises(ValueError, match="is a directory; give the path of a file"):
        ResponseCache(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # running as root: permissions do not bind, use /proc instead
            locked = Path("/proc/cogtestbed-cache")
        with pytest.raises(ValueError, match="cannot open the response cache"):
            ResponseCache(locked / "sub" / "c.sqlite")
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert not any((tmp_path / "locked").iterdir())
