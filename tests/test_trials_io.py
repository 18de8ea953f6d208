"""Trial-table schema, Parquet + manifest round trip, atomic writes."""

from __future__ import annotations

import json
import sys
from importlib import metadata

import pandas as pd
import pyarrow.parquet
import pytest
from versions import assert_exact_versions

from cogtestbed.registry import read_trials, validate_table, write_trials
from cogtestbed.schema import TrialTableError
from cogtestbed.simulation import simulate
from cogtestbed.trials import manifest_path, read_manifest


@pytest.fixture()
def table():
    return simulate("instrumental-learning", "rw", 3, 0, {"alpha": 0.2, "beta": 3.0})


def test_schema_column_order(table):
    cols = list(table.columns)
    assert cols[:4] == ["experiment", "subject", "session", "trial"]
    for c in ("action", "reward", "valid", "raw_response", "parse_error", "agent"):
        assert c in cols
    assert cols[-2:] == ["param_alpha", "param_beta"]
    assert str(table["action"].dtype) == "Int64"


def test_round_trip_with_manifest(tmp_path, table):
    path = write_trials(table, tmp_path / "t.parquet", {"seed": 0, "agent": "rw"})
    back = read_trials(path)
    pd.testing.assert_frame_equal(back, table, check_categorical=False)
    manifest = read_manifest(path)
    assert manifest["seed"] == 0 and manifest["n_rows"] == len(table)
    assert_exact_versions(manifest["versions"])
    assert json.loads(manifest_path(path).read_text())["schema_version"] == 1


def test_torch_is_recorded_only_where_loaded(monkeypatch):
    import types

    from cogtestbed.trials import package_versions

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert "torch" not in package_versions()
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    assert package_versions()["torch"] == metadata.version("torch")


def test_failed_write_leaves_previous_file_intact(tmp_path, table, monkeypatch):
    path = write_trials(table, tmp_path / "t.parquet", {"seed": 0})
    before = path.read_bytes()

    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pyarrow.parquet, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        write_trials(table.iloc[:10], path, {"seed": 1})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_schema_errors_are_clear(tmp_path, table):
    with pytest.raises(TrialTableError, match="lacks required columns: valid"):
        validate_table(table.drop(columns="valid"))
    with pytest.raises(TrialTableError, match="duplicated"):
        validate_table(pd.concat([table, table.iloc[:1]]))
    bad = tmp_path / "x.parquet"
    bad.write_text("not parquet")
    with pytest.raises(TrialTableError, match="not a Parquet trial table"):
        read_trials(bad)
    with pytest.raises(FileNotFoundError):
        read_trials(tmp_path / "missing.parquet")


def test_a_table_is_validated_against_a_schema_without_the_registry() -> None:
    """schema.validate_trials needs the schema only (no registry look-up): a valid table passes, a
    value outside the schema and a table of another experiment are refused."""
    from cogtestbed.schema import validate_trials
    from cogtestbed.tables.horizon import SCHEMA as HORIZON
    from cogtestbed.tables.instrumental import SCHEMA

    table = simulate("instrumental-learning", "rw", 2, seed=0)
    assert validate_trials(table, SCHEMA) is table
    bad = table.copy()
    bad.loc[3, "action"] = 7
    with pytest.raises(TrialTableError, match="action"):
        validate_trials(bad, SCHEMA)
    with pytest.raises(TrialTableError, match="not horizon"):
        validate_trials(table, HORIZON, "horizon")
