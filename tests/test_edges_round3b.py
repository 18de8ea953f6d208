"""Hard edges, third round (issue 41), the remainder: two sessions under one run id, the input
limit on every path that reads a user's file, the experiment read from the table in the API."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.memory import MemoryLimitError, input_estimate, reading_input
from cogtestbed.registry import experiment_names, get_experiment, write_trials
from cogtestbed.simulation import simulate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PROB = DATA / "cogbench" / "ProbabilisticReasoning"


# ----------------------------------------------------------------------------- 1. two sessions, one id
def _relabelled(tmp_path: Path) -> Path:
    """gpt-4.csv with run 101's session under run 100's id (run 100 judges each condition twice)."""
    rows = pd.read_csv(PROB / "gpt-4.csv")
    rows = rows.loc[:, ~rows.columns.str.startswith("Unnamed")]
    assert list(rows.loc[rows["run"] == 100, "informative_lh"]) == [True, False]
    rows.loc[rows["run"] == 101, "run"] = 100
    path = tmp_path / "gpt-4.csv"
    rows.to_csv(path, index=False)
    return path


def test_a_run_judging_a_condition_twice_is_refused_naming_run_condition_and_override(tmp_path: Path) -> None:
    from cogtestbed.data.rows import RepeatedSessionError

    path = _relabelled(tmp_path)
    exp = get_experiment("probabilistic-reasoning")
    with pytest.raises(RepeatedSessionError) as caught:
        exp.importer("cogbench").load(path)
    msg = str(caught.value)
    assert isinstance(caught.value, ct.DataError) and "\n" not in msg
    assert msg.startswith("gpt-4.csv: run 100, informative_lh True is judged twice (file lines 102 and 104 differ")
    assert "sessions='split' (--sessions split)" in msg
    with pytest.raises(RepeatedSessionError):
        ct.metrics("probabilistic-reasoning", path)


def test_the_cli_refuses_in_one_line_with_exit_2_and_split_keeps_the_sessions(tmp_path: Path, capsys) -> None:
    path = _relabelled(tmp_path)
    for command in (["metrics", str(path)], ["fit", "generalised-bayes", str(path), "-o", str(tmp_path / "f"),
                                             "--method", "mle"], ["phenotype", str(path)]):
        assert run_cli(command) == 2, command
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "run 100, informative_lh True is judged twice" in err[0], (command, err)
    assert run_cli(["metrics", str(path), "--sessions", "split", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["session"] for r in result["per_run"] if r["run"] == 100] == [0, 1]
    assert run_cli(["fit", "generalised-bayes", str(path), "-o", str(tmp_path / "f"), "--method", "mle",
                    "--sessions", "split", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_subjects"] == 1  # the agent's runs pooled, as always
    assert run_cli(["metrics", str(path), "--sessions", "merge"]) == 2
    assert capsys.readouterr().err.strip() == "error: --sessions must be refuse or split, got 'merge'"
    assert run_cli(["metrics", str(DATA / "cogbench" / "HorizonTask" / "gpt-4.csv"), "--sessions", "split"]) == 2
    assert "--sessions applies to files without a trial key" in capsys.readouterr().err


def test_split_numbers_the_repeat_as_the_runs_next_session(tmp_path: Path) -> None:
    exp = get_experiment("probabilistic-reasoning")
    table = exp.read(_relabelled(tmp_path), sessions="split")[0]
    run = table[table["subject"] == 100].sort_values(["session", "trial"])
    assert list(run["session"]) == [0, 0, 1, 1] and list(run["trial"]) == [0, 1, 0, 1]
    result = exp.metrics(table)
    sessions = [r for r in result["per_run"] if r["run"] == 100]
    assert [r["session"] for r in sessions] == [0, 1] and all(r["n_judgements"] == 2 for r in sessions)
    original = exp.metrics(exp.importer("cogbench").load(PROB / "gpt-4.csv"))
    assert result["metrics"]["performance"] == pytest.approx(original["metrics"]["performance"], abs=1e-12)
    assert result["metrics"]["n_runs"] == original["metrics"]["n_runs"]


def test_an_identical_copy_of_a_judgement_is_one_row(tmp_path: Path) -> None:
    rows = pd.read_csv(PROB / "gpt-4.csv")
    path = tmp_path / "gpt-4.csv"
    pd.concat([rows, rows.iloc[[5]]]).to_csv(path, index=False)
    imp = get_experiment("probabilistic-reasoning").importer("cogbench")
    table = imp.load(path)
    assert table.attrs["duplicated_rows_dropped"] == 1
    assert table.drop(columns=[]).equals(imp.load(PROB / "gpt-4.csv"))
    assert int(imp.load(path, sessions="split")["session"].max()) == 1  # split: every repeat is a session


def test_cogbench_claude_files_are_refused_by_default_and_read_with_split() -> None:
    from cogtestbed.data.rows import RepeatedSessionError

    imp = get_experiment("probabilistic-reasoning").importer("cogbench")
    for name, first_run, runs in (("claude-1.csv", 3466, 215), ("claude-2.csv", 118, 2)):
        with pytest.raises(RepeatedSessionError, match=f"^{name}: run {first_run}, informative_lh True is judged"):
            imp.load(PROB / name)
        table = imp.load(PROB / name, sessions="split")
        assert (table["session"] == 1).groupby(table["subject"]).any().sum() == runs
    table = imp.load(PROB / "claude-1.csv", sessions="split")
    assert set(table.groupby(["subject", "session"]).size()) == {1, 2} and len(table) == 9134


# ----------------------------------------------------------------------------- 6. large inputs, every path
def _table(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    write_trials(simulate(get_experiment("two-step"), "hybrid", 40, 1), path, {"experiment": "two-step"})
    return path


def test_a_trial_table_over_the_limit_is_refused_with_its_rows(tmp_path: Path, monkeypatch, capsys) -> None:
    path = _table(tmp_path)
    mib, need, basis = input_estimate(path)
    assert basis == "800 rows" and need > path.stat().st_size
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", f"{mib / 2:g}")
    for args in (["metrics", str(path)], ["fit", "hybrid", str(path), "-o", str(tmp_path / "f"), "--method", "mle"],
                 ["phenotype", str(path)]):
        assert run_cli(args) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "(800 rows)" in err[0], (args, err)
        assert "COGTESTBED_MAX_INPUT_MB=N raises it" in err[0]


def test_a_big_file_read_under_a_raised_limit_shows_progress(tmp_path: Path, monkeypatch, capsys) -> None:
    path = _table(tmp_path)
    monkeypatch.setattr("cogtestbed.memory.PROGRESS_INPUT_MB", 0.0)
    with reading_input(path):
        pass
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"reading {path} (") and "800 rows" in err[0] and "of memory" in err[0]
    assert err[1].startswith(f"read {path} in ")
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", "0.001")
    with pytest.raises(MemoryLimitError, match="the input limit is 0.001 MiB"), reading_input(path):
        pass


def test_the_collider_human_file_is_under_the_limit(monkeypatch) -> None:
    table = simulate(get_experiment("collider"), "cbn", 1, 1)
    human = DATA / "causal" / "human" / "rw17_collider_ce.csv"
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", "0.0001")
    with pytest.raises(MemoryLimitError, match="COGTESTBED_MAX_INPUT_MB"):
        get_experiment("collider").metrics(table, human=str(human))


# ----------------------------------------------------------------------------- 5. the experiment from the table
def test_the_api_reads_the_experiment_from_a_table_or_the_model(tmp_path: Path) -> None:
    table = simulate(get_experiment("collider"), "cbn", 2, 1)
    assert ct.metrics(None, table)["experiment"] == "collider"
    fits = ct.fit(None, table, model="cbn-3p")
    assert list(fits["subject"]) == [0, 1] and fits["identified"].all()
    path = tmp_path / "c.parquet"
    write_trials(table, path, {"experiment": "collider"})
    assert ct.metrics(None, path)["experiment"] == "collider"
    both = pd.concat([table, simulate(get_experiment("two-step"), "hybrid", 1, 1)], ignore_index=True)
    with pytest.raises(ValueError, match="holds trials of collider, two-step: name its experiment"):
        ct.metrics(None, both)


def test_list_json_shows_an_example_for_every_design_field(capsys) -> None:
    for name in experiment_names():
        assert run_cli(["list", name, "--json"]) == 0
        fields = json.loads(capsys.readouterr().out)["design"]["fields"]
        assert fields and all(f["example"].startswith(f"--design {f['name']}=") for f in fields), name


def test_the_importer_conformance_check_catches_an_importer_that_numbers_repeats_silently(tmp_path: Path) -> None:
    import dataclasses

    from cogtestbed.conformance.edge_checks import importer_conflict_problems
    from cogtestbed.data.cogbench import import_probabilistic

    imp = get_experiment("probabilistic-reasoning").importer("cogbench")
    assert importer_conflict_problems(imp, PROB / "gpt-4.csv", tmp_path / "a") == []

    def lenient(path: Path, sessions: str = "split") -> pd.DataFrame:  # today's numbering, no refusal
        return import_probabilistic(path, sessions=sessions)

    problems = importer_conflict_problems(dataclasses.replace(imp, load=lenient), PROB / "gpt-4.csv", tmp_path / "b")
    # the four columns besides run and condition, each fabricated to differ, and the identical copy
    assert len(problems) == 5, problems
    assert sum("is not refused in one line naming 'run 0, informative_lh True'" in p for p in problems) == 4
    assert any("an identical copy of a judgement changes the table" in p for p in problems)
