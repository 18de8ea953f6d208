"""Magnitude metrics on hostile tables (issue 30): no number from no data, one session per block,
row order irrelevant, bounded options, memory estimated before allocation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.cli import run_cli
from cogtestbed.environments.magnitude import MagnitudeDesign
from cogtestbed.inference.magnitude import magnitude_metrics
from cogtestbed.simulation import simulate

DESIGN = MagnitudeDesign(task="line-ratio", conditions="base,verbal,noise-constant", ranges="short,medium",
                         trials_per_session=12)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return simulate("magnitude", "static-bayes", 3, 4, {"w_prior": 0.4}, design=DESIGN)


def _dump(result: dict) -> str:
    return json.dumps(result, sort_keys=True, default=str)


def test_metrics_are_identical_on_a_permuted_table(table: pd.DataFrame) -> None:
    """Subjects are taken in subject order and each subject's bootstrap has its own stream, so
    the rows' order changes nothing, to the last bit (in one process)."""
    a = magnitude_metrics(table, bootstrap=4, seed=1)
    b = magnitude_metrics(table.sample(frac=1.0, random_state=7).reset_index(drop=True), bootstrap=4, seed=1)
    assert a["metrics"]["bcs"] is not None and _dump(a) == _dump(b)


def test_all_invalid_answers_give_null_bcs_with_a_reason_and_a_flag(table: pd.DataFrame) -> None:
    """The README's VLM smoke test printed BCS 0 from 6/6 invalid answers; BCS 0 is also a real
    finding, so no data must read null."""
    bad = table.copy()
    bad["valid"], bad["action"] = False, np.nan
    r = magnitude_metrics(bad, bootstrap=3)
    assert r["metrics"]["bcs"] is None and r["metrics"]["bcs_per_task"] == {}
    assert r["metrics"]["bootstrap"]["bcs"] == {"mean": None, "lo": None, "hi": None}
    assert r["metrics"]["factor_evidence"] == {}  # not 0.5 from ties of unfitted sessions
    assert all(p["bcs"] is None for p in r["per_subject"])
    assert "fitted w_prior" in r["reasons"]["bcs"]
    assert any(f.startswith("BCS null for 3 of 3 subject(s)") for f in r["flags"])
    assert magnitude_metrics(table, bootstrap=0)["reasons"] == {}


def test_a_second_session_of_the_same_block_is_refused(table: pd.DataFrame) -> None:
    """A relabelled subject used to overwrite the first one's cells silently (metrics equal to the
    second subject's alone)."""
    merged = table.copy()
    merged.loc[merged["subject"] == 1, "subject"] = 0
    with pytest.raises(ValueError, match="rows repeat a subject's trial .*subject=0, task=line-ratio"):
        magnitude_metrics(merged)


@pytest.mark.parametrize("rounds", [-1, 1_000_000_000])
def test_bootstrap_rounds_are_bounded(table: pd.DataFrame, rounds: int) -> None:
    with pytest.raises(ValueError, match="`bootstrap` must be 0 .* to 100,000 rounds"):
        magnitude_metrics(table, bootstrap=rounds)


def _simulated(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    assert run_cli(["simulate", "magnitude", "--agent", "static-bayes", "--subjects", "2", "--design",
                    "task=line-ratio", "--design", "conditions=base,verbal", "--design", "ranges=short",
                    "--design", "trials_per_session=8", "-o", str(path)]) == 0
    return path


def _edited(path: Path, name: str, edit: dict[str, object]) -> Path:
    t = pd.read_parquet(path)
    for col, value in edit.items():
        t.loc[5, col] = value
    out = path.with_name(name)
    t.to_parquet(out)
    shutil.copy(str(path) + ".manifest.json", str(out) + ".manifest.json")
    return out


@pytest.mark.parametrize(("argv", "message"), [
    (["--bootstrap", "-1"], "--bootstrap must be 0"),
    (["--bootstrap", "1000000000"], "--bootstrap must be 0"),
])
def test_cli_refuses_bad_options_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              argv: list[str], message: str) -> None:
    path = _simulated(tmp_path)
    capsys.readouterr()
    assert run_cli(["metrics", "magnitude", str(path), *argv, "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_refuses_a_huge_trial_index_by_its_memory_estimate(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """trial = 30,000,000 asked a dense cube of 579 GiB (72 GiB per array) before it was refused."""
    big = _edited(_simulated(tmp_path), "big.parquet", {"trial": 30_000_000})
    capsys.readouterr()
    assert run_cli(["metrics", "magnitude", str(big), "--bootstrap", "0", "--json"]) == 2
    err = capsys.readouterr().err
    assert "trial cube (trial up to 30000000) needs about" in err and "MemoryError" not in err


def test_exact_multimodal_answers_give_a_flagged_null_rre_not_a_crash():
    """Answers without noise that hit every truth (σ_dec 0, w_prior 0): NRMSE_LLM is 0, so RRE and E
    are undefined: null with the reason, not a ZeroDivisionError (found by the matrix run, issue 46)."""
    import cogtestbed as ct

    trials = ct.simulate("magnitude", "static-bayes", subjects=2, seed=53857701,
                         params={"w_prior": 0.0, "mu_p": -1.0, "sigma_dec": 0.0}, design={"trials_per_session": 50})
    result = ct.metrics("magnitude", trials)
    assert result["metrics"]["bayesbench"]["E"] is None
    assert all(v is None for c in result["metrics"]["rre"].values() for v in c.values())
    assert "NRMSE 0" in result["reasons"]["rre"] and any(f.startswith("RRE null for 2 of 2") for f in result["flags"])
