"""Issue 30's leftovers: a failed sampled step says it sampled, dry runs with the model's own
tokenizer, two-step's request range, memory refused from the design, per-experiment stops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app

REVEALED = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
            "--design", "n_samples=3")


def test_a_failed_sampled_step_records_its_method_in_the_row(server: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random-chat", "--mode", "chat",
                                   "--base-url", url, "--subjects", "1", "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    trials = pd.read_parquet(tmp_path / "run" / "trials.parquet")
    assert len(trials) == 4
    failed = trials[~trials["valid"]]
    assert len(failed) >= 1  # the tiny random model's samples match no continuation
    assert failed["parse_error"].str.contains("none of 3 sampled answers matched").all()
    # every row, failed ones included, says the run sampled N = 3 (not NA / 0)
    assert trials["method"].astype(str).tolist() == ["sampled"] * 4
    assert trials["n_samples"].tolist() == [3] * 4
