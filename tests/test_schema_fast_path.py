"""The vectorised schema check (``TrialSchema.conforms``) decides exactly as pandera does.

A table that passes is never handed to pandera (so a valid file does not import it); a table that
fails is, and pandera's failure cases build the message.  That every experiment's simulated table,
and edits of it that break each kind of declaration, get the same verdict from both is the
conformance check ``schema_fast_path``; here a rule across columns and the import of a valid file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

ROOT = Path(__file__).resolve().parents[1]


def _pandera_passes(df: pd.DataFrame, name: str) -> bool:
    import pandera.pandas as pa

    try:
        get_experiment(name).schema.pandera(name).validate(df.reset_index(drop=True), lazy=True)
    except pa.errors.SchemaErrors:
        return False
    return True


def test_a_rule_across_columns_is_checked_without_pandera() -> None:
    schema = get_experiment("bart").schema
    df = simulate("bart", "target", 2, seed=1).reset_index(drop=True)
    assert schema.conforms(df, "bart")
    broken = df.copy()
    row = broken.index[broken["valid"].to_numpy(dtype=bool)][0]
    broken.loc[row, "pumps"] = broken.loc[row, "max_pumps"] + 1  # pumps <= max_pumps (and action == pumps) fail
    assert not schema.conforms(broken, "bart")
    assert not _pandera_passes(broken, "bart")


def test_a_valid_file_is_checked_without_importing_pandera(cogbench_dir: Path) -> None:
    gpt4 = str(cogbench_dir / "InstrumentalLearning" / "gpt-4.csv")
    probe = ("import sys; from pathlib import Path; from cogtestbed.registry import get_experiment; "
             f"get_experiment('instrumental-learning').read(Path({gpt4!r})); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandera'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
