"""Hard edges, third round (issue 41): conflicting rows, declared bounds, full disks, degenerate
answers, the experiment read from a table, large inputs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cogtestbed.cli import run_cli
from cogtestbed.data.cogbench import DataFormatError, import_instrumental
from cogtestbed.data.rows import drop_agreeing_duplicates

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
