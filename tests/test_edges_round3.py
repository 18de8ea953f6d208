"""Hard edges, third round (issue 41): conflicting rows, declared bounds, full disks, degenerate
answers, the experiment read from a table, large inputs."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.cli import run_cli
from cogtestbed.data.cogbench import DataFormatError, import_instrumental
from cogtestbed.data.rows import drop_agreeing_duplicates
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GPT4 = DATA / "cogbench" / "InstrumentalLearning" / "gpt-4.csv"


# ----------------------------------------------------------------------------- 1. conflicting rows
def _relabelled(tmp_path: Path) -> Path:
    df = pd.read_csv(GPT4, encoding="utf-8-sig")
    df.loc[df["run"] == 1, "run"] = 0
    path = tmp_path / "gpt-4.csv"
    df.to_csv(path, index=False)
    return path


def test_a_relabelled_run_is_refused_naming_run_and_trial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _relabelled(tmp_path)
    with pytest.raises(DataFormatError, match=r"gpt-4.csv: run 0, trial 1 appears more than once with different"):
        import_instrumental(path)
    assert run_cli(["metrics", "instrumental-learning", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run 0, trial 1" in err
    assert len(import_instrumental(GPT4)["subject"].unique()) == 10


def test_a_duplicated_column_name_is_refused(tmp_path: Path) -> None:
    lines = GPT4.read_text(encoding="utf-8-sig").splitlines()
    lines[0] = lines[0].replace("reward0", "choice")
    path = tmp_path / "gpt-4.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match="column 'choice' appears twice"):
        import_instrumental(path)


def test_agreeing_copies_are_dropped_and_missing_values_agree() -> None:
    df = pd.DataFrame({"run": [0, 0, 1, 0], "trial": [0, 1, 0, 1], "x": [1.0, None, 2.0, None], "t": [1, 2, 3, 4]})
    out, n = drop_agreeing_duplicates(df, ("run", "trial"), "f.csv", may_differ=("t",))
    assert n == 1 and out["t"].tolist() == [1, 2, 3]
    with pytest.raises(DataFormatError, match="run 0, trial 1 .* different 't' \\(2 vs 4\\)"):
        drop_agreeing_duplicates(df, ("run", "trial"), "f.csv")


# ----------------------------------------------------------------------------- 2. declared bounds
def test_temperature_zero_is_the_argmax() -> None:
    from cogtestbed.inference.horizon import prob_j

    assert prob_j(1.0, 0.0, 0.0, 0.0, 0.0) == 1.0
    assert prob_j(-1.0, 0.0, 0.0, 0.0, 0.0) == 0.0
    assert prob_j(0.0, 0.0, 0.0, 0.0, 0.0) == 0.5
    table = simulate("horizon", "info-bonus", 3, 1, params={"temperature_h1": 0.0, "temperature_h6": 0.0})
    assert table["valid"].all()


def test_a_point_prior_and_exact_percepts_are_limits() -> None:
    from cogtestbed.inference.magnitude_observers import BOTH_EXACT_WEIGHT, variance_weight

    assert variance_weight(0.0, 1.0) == 1.0 and variance_weight(1.0, 0.0) == 0.0
    assert variance_weight(0.0, 0.0) == BOTH_EXACT_WEIGHT
    assert variance_weight(1.0, 3.0) == pytest.approx(0.75)
    for name in ("prior_sd", "sigma_text", "sigma_image"):
        for value in (0.0, 1e-300, 5e-324):
            table = simulate("magnitude", "observer", 2, 1, params={name: value})
            assert np.isfinite(table.loc[table["valid"], "action"].astype(float)).all(), (name, value)


def test_every_experiment_simulates_at_its_declared_bounds() -> None:
    from cogtestbed.conformance.config import CheckConfig
    from cogtestbed.conformance.edge_checks import edge_values
    from cogtestbed.conformance.suite import check_bound_edges

    assert edge_values(0.0, 1.0) == [0.0, 5e-324, 1.0, np.nextafter(1.0, 0.0)]
    check_bound_edges(get_experiment("horizon"), CheckConfig())


# ----------------------------------------------------------------------------- 3. full disks
@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A tmpfs of 16 KiB (root only; skipped elsewhere); ``grow(kib)`` frees space."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")

    def grow(kib: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={kib}k", str(mount)], check=True)

    try:
        yield mount, grow
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def test_simulate_on_a_full_disk_is_one_line_and_leaves_nothing(tiny_disk, capsys) -> None:
    mount, _ = tiny_disk
    out = mount / "h.parquet"
    argv = ["simulate", "horizon", "-a", "info-bonus", "--subjects", "200", "--sessions", "1", "-o", str(out)]
    assert run_cli(argv) == 2
    line = _one_error_line(capsys)
    # refused before anything is written: the streamed table's size is checked against the free space
    assert "200 simulated horizon sessions" in line and "of disk" in line and f"is free in {mount}" in line
    assert list(mount.iterdir()) == []  # no half file, no temporary file


def _run_args(cache: Path, output: Path, subjects: int = 30) -> list[str]:
    return ["run", "instrumental-learning", "--llm", "hf:tiny-random", "--subjects", str(subjects),
            "--design", "visits_per_casino=2", "--cache", str(cache), "-o", str(output)]


@pytest.mark.parametrize(("full", "kib"), [("cache", 200), ("outputs", 40)])
def test_a_run_that_fills_the_disk_stops_in_one_line_and_resumes(tiny_disk, tmp_path, capsys, full, kib) -> None:
    """The response cache's SQLite file, or the run directory, on a disk that fills mid-run."""
    mount, grow = tiny_disk
    grow(kib)
    disk, local = (mount, tmp_path) if full == "cache" else (tmp_path, mount)
    cache, output = disk / "c.sqlite", local / "run"
    args = _run_args(cache, output)
    assert run_cli(args) == 2
    line = _one_error_line(capsys)
    expected = (rf"cannot write the response cache {re.escape(str(cache))}" if full == "cache"
                else rf"cannot write {re.escape(str(output))}/\S+: No space left on device")
    assert re.search(expected, line), line
    grow(8192)
    assert run_cli([*args, "--resume"]) == 0, capsys.readouterr().err
    table = pd.read_parquet(output / "trials.parquet")
    assert table["subject"].nunique() == 30 and len(table) == 30 * 8


def test_a_write_error_keeps_the_old_file_and_names_the_path(tmp_path: Path) -> None:
    """Without root: a fault-injecting writer (ENOSPC, EDQUOT, EIO) through the atomic writer."""
    from cogtestbed.outputs import WriteFailed, atomic_write_bytes, write_failure

    path = tmp_path / "out.parquet"
    path.write_bytes(b"old")
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        def fail(tmp: Path, code: int = code) -> None:
            tmp.write_bytes(b"half")
            raise OSError(code, os.strerror(code))

        with pytest.raises(WriteFailed, match=f"cannot write {re.escape(str(path))}: {os.strerror(code)}"):
            atomic_write_bytes(path, fail)
        assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]
    pyarrow_style = OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert "No space left on device" in str(write_failure(pyarrow_style, path))
    assert write_failure(OSError(errno.ENOENT, "gone"), path) is None


def test_a_corrupt_cache_row_names_the_cache_and_the_remedy(tmp_path: Path, capsys) -> None:
    import sqlite3

    cache = tmp_path / "c.sqlite"
    args = ["run", "instrumental-learning", "--llm", "hf:tiny-random", "--subjects", "1",
            "--design", "visits_per_casino=2", "--cache", str(cache)]
    assert run_cli([*args, "-o", str(tmp_path / "a")]) == 0
    db = sqlite3.connect(cache)
    db.execute("UPDATE responses SET response = '{not json'")
    db.commit()
    db.close()
    assert run_cli([*args, "-o", str(tmp_path / "b")]) == 2
    line = _one_error_line(capsys)
    assert f"the response cache {cache} has an unreadable row" in line and "deleting that file" in line


# ----------------------------------------------------------------------------- 5. newcomer edges
def test_the_experiment_is_read_from_the_table_or_the_model(tmp_path: Path, capsys) -> None:
    from cogtestbed.registry import experiment_of, write_trials

    path = tmp_path / "trials.parquet"
    write_trials(simulate("collider", "cbn", 2, 1), path, {})
    assert experiment_of(None, path) == "collider"
    assert experiment_of(None, GPT4) == "instrumental-learning"
    assert experiment_of(None, model="cbn-3p") == "collider"
    assert experiment_of("horizon", path) == "horizon"
    with pytest.raises(ValueError, match="declared by magnitude, restless-bandit; name one with `experiment`"):
        experiment_of(None, model="kalman")
    assert run_cli(["fit", "cbn-3p", str(path), "--method", "mle", "-o", str(tmp_path / "fit"), "--json"]) == 0
    assert run_cli(["metrics", str(path), "--json"]) == 0
    assert '"experiment": "collider"' in capsys.readouterr().out


def test_tuple_design_fields_take_comma_lists_and_json_and_every_example_is_accepted() -> None:
    from cogtestbed.api.core import design_overrides as _design_overrides
    from cogtestbed.api.describe import describe_experiment
    from cogtestbed.registry import experiment_names
    from cogtestbed.studies.sizes import split_design

    design_cls = get_experiment("collider").design_cls
    assert design_cls(**_design_overrides(["domains=economy,weather"])).domains == ("economy", "weather")
    assert design_cls(**_design_overrides(['cntbl_conds=["ppp", "pmm"]'])).cntbl_conds == ("ppp", "pmm")
    for name in experiment_names():
        exp = get_experiment(name)
        fields = describe_experiment(exp)["design"]["fields"]
        assert len(fields) == len(exp.design_cls.model_fields)
        for f in fields:
            item = f["example"].removeprefix("--design ")
            exp.design_cls(**split_design(exp, [item])[0])
            exp.design_cls(**_design_overrides([item]))


def test_phenotype_warns_only_about_the_metrics_it_was_given(capsys) -> None:
    assert run_cli(["phenotype", str(DATA / "cogbench" / "HorizonTask" / "gpt-4.csv")]) == 0
    err = capsys.readouterr().err
    assert "Optimism bias" not in err and "Horizon task" in err


def test_a_plan_that_tried_one_design_does_not_call_it_cheapest() -> None:
    from cogtestbed.formatting import chosen_design_phrase

    assert chosen_design_phrase([{"design": "a"}]) == "the one design tried"
    assert chosen_design_phrase([{"design": "a"}, {"design": "b"}]) == "cheapest design"


def test_progress_lines_agree_with_the_summary_after_a_budget_stop(tmp_path: Path, capsys) -> None:
    args = [*_run_args(tmp_path / "c.sqlite", tmp_path / "run", subjects=4), "--max-calls", "12"]
    assert run_cli(args) == 3  # a budget stop
    err = capsys.readouterr().err
    import json

    done = json.loads((tmp_path / "run" / "run.json").read_text())["stats"]["subjects_complete"]
    lines = [line for line in err.splitlines() if "subjects done" in line]
    assert lines and lines[-1].startswith(f"{done}/4 subjects done"), err


# ----------------------------------------------------------------------------- 4. degenerate data
def test_constant_collider_answers_are_flagged_and_fit_nothing() -> None:
    table = simulate("collider", "cbn", 1, 1)
    table["action"] = 100.0
    result = get_experiment("collider").metrics(table)
    assert all(result["metrics"][k] is None for k in ("b", "m1", "m2", "p_c", "mae", "aic", "loocv_rmse"))
    assert any("all 240 valid answers are 100" in f for f in result["flags"])
    assert set(result["null_reasons"]) >= {"b", "p_c", "mae"}


# ----------------------------------------------------------------------------- 6. large inputs
def test_a_large_input_is_refused_up_front_with_the_limit_and_the_override(monkeypatch, capsys) -> None:
    path = DATA / "cogbench" / "RestlessBandit" / "random.csv"  # 2.2 MiB
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", "1")
    assert run_cli(["metrics", "restless-bandit", str(path)]) == 2
    line = _one_error_line(capsys)
    assert "is 2 MiB" in line and "the input limit is 1 MiB (COGTESTBED_MAX_INPUT_MB=N raises it)" in line
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", "5")
    assert run_cli(["metrics", "restless-bandit", str(path), "--json"]) == 0
