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
def test_a_probabilistic_run_appended_twice_is_two_sessions_not_one(tmp_path: Path) -> None:
    exp = get_experiment("probabilistic-reasoning")
    rows = pd.read_csv(PROB / "gpt-4.csv")
    rows = rows.loc[:, ~rows.columns.str.startswith("Unnamed")]
    twice = rows[rows["run"] == 100]
    assert list(twice["informative_lh"]) == [True, False]
    relabelled = rows.copy()
    relabelled.loc[relabelled["run"] == 101, "run"] = 100  # run 101's session now under run 100's id
    path = tmp_path / "gpt-4.csv"
    relabelled.to_csv(path, index=False)
    table = exp.importer("cogbench").load(path)
    run = table[table["subject"] == 100].sort_values(["session", "trial"])
    assert list(run["session"]) == [0, 0, 1, 1] and list(run["trial"]) == [0, 1, 0, 1]
    result = exp.metrics(table)
    sessions = [r for r in result["per_run"] if r["run"] == 100]
    assert [r["session"] for r in sessions] == [0, 1] and all(r["n_judgements"] == 2 for r in sessions)
    original = exp.metrics(exp.importer("cogbench").load(PROB / "gpt-4.csv"))
    assert result["metrics"]["performance"] == pytest.approx(original["metrics"]["performance"], abs=1e-12)
    assert result["metrics"]["n_runs"] == original["metrics"]["n_runs"]


def test_claude1_runs_appended_twice_are_numbered_as_sessions() -> None:
    table = get_experiment("probabilistic-reasoning").importer("cogbench").load(PROB / "claude-1.csv")
    sizes = table.groupby(["subject", "session"]).size()
    assert set(sizes) == {1, 2} and (table["session"] == 1).groupby(table["subject"]).any().sum() == 215


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
