"""The vectorised schema check (``TrialSchema.conforms``) decides exactly as pandera does.

A table that passes is never handed to pandera (so a valid file does not import it); a table that
fails is, and pandera's failure cases build the message.  Here every experiment's simulated table,
and edits of it that break each kind of declaration, get the same verdict from both.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.registry import experiment_names, get_experiment
from cogtestbed.simulation import simulate

ROOT = Path(__file__).resolve().parents[1]


def _pandera_passes(df: pd.DataFrame, name: str) -> bool:
    import pandera.pandas as pa

    schema = get_experiment(name).env_cls.table_schema
    try:
        schema.pandera(name).validate(df.reset_index(drop=True), lazy=True)
    except pa.errors.SchemaErrors:
        return False
    return True


def _first_numeric(df: pd.DataFrame, name: str, col: str) -> None:
    rows = df.index[df["valid"].to_numpy(dtype=bool) & df[col].notna().to_numpy()]
    df.loc[rows[:1], col] = -1e9  # far outside every declared range


EDITS: dict[str, Callable[[pd.DataFrame, str], None]] = {
    "unchanged": lambda df, name: None,
    "reward out of range": lambda df, name: _first_numeric(df, name, "reward"),
    "action out of range": lambda df, name: _first_numeric(df, name, "action"),
    "missing trial": lambda df, name: df.__setitem__("trial", df["trial"].astype("float64").where(df.index != 0)),
    "valid answer without action": lambda df, name: df.__setitem__(
        "action", df["action"].astype("float64").where(df.index != 0)),
    "text in the reward": lambda df, name: df.__setitem__("reward", df["reward"].astype(str)),
    "no valid column": lambda df, name: df.__delitem__("valid"),
    "another experiment": lambda df, name: df.__setitem__("experiment", "nope"),
    "missing experiment": lambda df, name: df.__setitem__("experiment", df["experiment"].where(df.index != 0)),
    "negative session": lambda df, name: df.__setitem__("session", df["session"] - 5),
    "infinite reward": lambda df, name: df.__setitem__(
        "reward", df["reward"].astype("float64").where(df.index != 1, np.inf)),
}


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    out = {}
    for name in experiment_names():
        exp = get_experiment(name)
        agent = next(iter(exp.agents))
        out[name] = simulate(exp, agent, 2, seed=1)
    return out


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_fast_check_agrees_with_pandera(tables: dict[str, pd.DataFrame], edit: str) -> None:
    verdicts = {}
    for name, table in tables.items():
        df = table.copy()
        EDITS[edit](df, name)
        schema = get_experiment(name).env_cls.table_schema
        try:
            fast = schema.conforms(df.reset_index(drop=True), name)
        except Exception:  # noqa: BLE001 - check_table hands such a table to pandera
            fast = False
        verdicts[name] = (fast, _pandera_passes(df, name))
    assert all(fast == slow for fast, slow in verdicts.values()), verdicts
    if edit == "unchanged":
        assert all(fast for fast, _ in verdicts.values()), verdicts
    elif edit not in ("action out of range", "reward out of range"):  # some tasks declare no bounds
        assert not any(fast for fast, _ in verdicts.values()), verdicts


def test_a_rule_across_columns_is_checked_without_pandera(tables: dict[str, pd.DataFrame]) -> None:
    schema = get_experiment("bart").env_cls.table_schema
    df = tables["bart"].reset_index(drop=True)
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
