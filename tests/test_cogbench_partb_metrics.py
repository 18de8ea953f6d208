"""Two-step, temporal-discounting and BART metrics equal CogBench's own scoring on every released
file (to 1e-6).  The reference functions below are direct transcriptions of CogBench's
``store.py`` (+ the mean over runs of ``Analysis/utils.py``), run on the raw CSVs with pandas and
statsmodels exactly as CogBench does — independent of our importers and metric code.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.registry import get_experiment

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cogbench"
TOL = 1e-6


def _files(task: str) -> list[Path]:
    files = sorted((DATA / task).glob("*.csv"))
    assert files, f"no CogBench files for {task} under {DATA}"
    return files


def _read(path: Path) -> pd.DataFrame:
    # CogBench reads with plain pd.read_csv; the BOM is stripped so its column access works.
    df = pd.read_csv(path, encoding="utf-8-sig")
    # CogBench ran on object-dtype strings: NaN != NaN in elementwise comparisons
    return df.astype({c: object for c in df.columns if df[c].dtype.kind not in "biuf"})


# ------------------------------------------------------------------ CogBench transcriptions
def cogbench_twostep(df: pd.DataFrame) -> tuple[float, float]:
    """TwoStepTask/store.py get_scores + get_interaction_effect."""
    data: dict[str, list] = {"reward": [], "stay": [], "common": []}
    for run_idx in df.run.unique():
        df_idx = df[df.run == run_idx]
        stay = (df_idx.action1.to_numpy()[1:] == df_idx.action1.to_numpy()[:-1]).astype(float)
        reward = df_idx.reward[:-1]
        common = df_idx.action1.to_numpy()[:-1] == df_idx.state.to_numpy()[:-1]
        data["reward"].extend(reward)
        data["stay"].extend(stay)
        data["common"].extend(common)
    d = pd.DataFrame(data)
    d["reward"] = d["reward"].replace(0, -1)
    d["common"] = d["common"].map({False: -1, True: 1})
    d["interaction"] = d["reward"] * d["common"]
    result = smf.ols("stay ~ reward + common + interaction", data=d).fit()
    return float(df["reward"].mean()), float(result.params["interaction"])


def cogbench_bart(full: pd.DataFrame) -> dict[str, float]:
    """BART/store.py per run (base-class loop over range(max run + 1)), then np.mean over runs."""
    rows = []
    for run in range(full["run"].max() + 1):
        df = full[full["run"] == run].reset_index(drop=True)
        adj = np.mean(df[~df["exploded"].astype(bool)]["reward"])  # NaN when every balloon popped
        rows.append({"performance": np.mean(df["reward"]), "risk": np.mean(df["pumps"]),
                     "adjusted_risk": adj})
    scores = pd.DataFrame(rows)
    return {k: float(np.mean(scores[k])) for k in scores}


def cogbench_td(full: pd.DataFrame) -> dict[str, float]:
    """TemporalDiscounting/store.py (df.score[0] per run) + mean over runs."""
    cols = {"score": "score", "present bias": "present_bias", "subaddictivity": "subadditivity",
            "delay-speedup asymmetry-1": "delay_speedup_asymmetry",
            "delay-length asymmetry-2": "delay_length_asymmetry"}
    rows = []
    for run in range(int(full["run"].max()) + 1):
        df = full[full["run"] == run].reset_index(drop=True)
        rows.append({ours: (df[theirs][0] if len(df) else np.nan) for theirs, ours in cols.items()})
    scores = pd.DataFrame(rows).astype(float)
    return {k: float(np.mean(scores[k])) for k in scores}


# ------------------------------------------------------------------ tests
def _ours(experiment: str, path: Path) -> dict:
    exp = get_experiment(experiment)
    table = exp.importer("cogbench").load(path)
    return exp.metrics(table)


@pytest.mark.parametrize("path", _files("TwoStepTask"), ids=lambda p: p.stem)
def test_twostep_matches_cogbench(path: Path) -> None:
    perf, mb = cogbench_twostep(_read(path))
    result = _ours("two-step", path)
    ours = result["metrics"]
    assert ours["performance"] == pytest.approx(perf, abs=TOL)
    if ours["model_basedness"] is None:  # every first-stage choice one value (llama-2-70): CogBench's
        # regression gives ~0 (2e-16); issue 41's rule reports it null with the reason (not identified)
        assert mb == pytest.approx(0.0, abs=TOL)
        assert result["null_reasons"]["model_basedness"].startswith("degenerate answers: all ")
        return
    assert ours["model_basedness"] == pytest.approx(mb, abs=TOL)


@pytest.mark.parametrize("path", _files("BART"), ids=lambda p: p.stem)
def test_bart_matches_cogbench(path: Path) -> None:
    ref = cogbench_bart(_read(path))
    ours = _ours("bart", path)["metrics"]
    for key, value in ref.items():
        assert ours[key] == pytest.approx(value, abs=TOL), key


@pytest.mark.parametrize("path", _files("TemporalDiscounting"), ids=lambda p: p.stem)
def test_discounting_matches_cogbench(path: Path) -> None:
    ref = cogbench_td(_read(path))
    ours = _ours("temporal-discounting", path)["metrics"]
    for key, value in ref.items():
        assert ours[key] == pytest.approx(value, abs=TOL, nan_ok=True), key


def test_twostep_human_missing_trials_are_invalid_but_scored_as_cogbench() -> None:
    table = get_experiment("two-step").importer("cogbench").load(DATA / "TwoStepTask" / "human.csv")
    assert int((~table["valid"]).sum()) == 7
    m = get_experiment("two-step").metrics(table)["metrics"]
    assert m["invalid_rate"] == pytest.approx(7 / 8000)
    assert np.isfinite(m["model_basedness_valid_only"])


def test_bart_all_popped_run_is_flagged() -> None:
    m = _ours("bart", DATA / "BART" / "text-davinci-003.csv")
    assert any("every balloon popped" in f for f in m["flags"])
    assert any(np.isnan(r["adjusted_risk"]) for r in m["per_run"])


def test_discounting_nan_run_is_flagged() -> None:
    m = _ours("temporal-discounting", DATA / "TemporalDiscounting" / "claude-1.csv")
    assert m["metrics"]["n_incomplete"] == 1 and m["metrics"]["score"] == 7.0


@pytest.mark.parametrize(("experiment", "task"), [("two-step", "TwoStepTask"), ("bart", "BART"),
                                                  ("temporal-discounting", "TemporalDiscounting")])
def test_cli_metrics_json(experiment: str, task: str) -> None:
    path = DATA / task / "gpt-4.csv"
    res = CliRunner().invoke(app, ["metrics", experiment, str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) >= {"metrics", "per_run"}
    keys = {"two-step": ("performance", "model_basedness"),
            "bart": ("performance", "risk", "adjusted_risk"),
            "temporal-discounting": ("score", "present_bias", "subadditivity",
                                     "delay_speedup_asymmetry", "delay_length_asymmetry")}[experiment]
    assert all(k in out["metrics"] for k in keys)
