"""The CLI forms of the foundation issue, run in process by :func:`cogtestbed.cli.run_cli` (the code behind
``python -m cogtestbed``); one refusal also goes through the real entry point in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_runs import in_process
from tolerance import assert_close

cli = in_process


def test_simulate_then_metrics(tmp_path):
    out = tmp_path / "trials.parquet"
    cli("simulate", "instrumental-learning", "--agent", "rw-pm", "--param", "alpha_pos=0.4",
        "--param", "alpha_neg=0.2", "--param", "beta=5", "--subjects", "50", "--seed", "1", "-o", str(out))
    table = pd.read_parquet(out)
    assert len(table) == 50 * 96 and table["param_alpha_pos"].eq(0.4).all()
    result = json.loads(cli("metrics", "instrumental-learning", str(out), "--json").stdout)
    assert result["experiment"] == "instrumental-learning"
    assert len(result["per_run"]) == 50
    keys = {"run", "performance", "learning_rate", "optimism_bias", "alpha", "beta", "nll_rw",
            "alpha_pos", "alpha_neg", "beta_pm", "nll_rw_pm"}
    assert keys <= set(result["per_run"][0])
    assert result["metrics"]["performance"] == pytest.approx(table["reward"].mean())
    # the pooled estimates land near the generating values
    assert 0.25 < result["metrics"]["learning_rate"] < 0.45


def test_metrics_on_cogbench_csv_detected_and_forced(cogbench_dir):
    path = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    auto = json.loads(cli("metrics", "instrumental-learning", str(path), "--json").stdout)
    forced = json.loads(cli("metrics", "instrumental-learning", str(path), "--from", "cogbench",
                            "--json").stdout)
    assert auto["source"] == forced["source"] == "cogbench"
    assert_close(auto["metrics"], forced["metrics"])
    assert [r["run"] for r in auto["per_run"]] == list(range(10))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "instrumental-learning", "--agent", "rw-pm", "--param", "alpha_pos=1.5", "-o", "x.parquet"],
         "alpha_pos must lie in [0.0, 1.0], got 1.5"),
        (["simulate", "instrumental-learning", "--agent", "td", "-o", "x.parquet"], "unknown agent 'td'"),
        (["simulate", "no-such-task", "--agent", "rw", "-o", "x.parquet"], "unknown experiment"),
        (["simulate", "instrumental-learning", "--agent", "rw", "--param", "alpha", "-o", "x.parquet"],
         "expected NAME=VALUE"),
        (["metrics", "instrumental-learning", "missing.parquet"], "no such file"),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    proc = cli(*args, check=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_the_entry_point_refuses_in_one_line_with_exit_2(tmp_path: Path) -> None:
    """``python -m cogtestbed``, a fresh interpreter: a bad argument is one line on stderr and exit status 2."""
    proc = subprocess.run([sys.executable, "-m", "cogtestbed", "simulate", "instrumental-learning", "--agent",
                           "rw-pm", "--param", "alpha_pos=1.5", "-o", "x.parquet"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error:") and "alpha_pos must lie in [0.0, 1.0], got 1.5" in line
    assert not (tmp_path / "x.parquet").exists()


def test_every_subcommand_has_help():
    top = cli("--help").stdout
    for command in ("simulate", "metrics"):
        assert command in top
        assert "Usage" in cli(command, "--help").stdout
