"""Degenerate answers (issue 41, item 4): answers without variation identify no model, for every
experiment by one rule (:mod:`cogtestbed.no_data`; conformance check ``constant_answers``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.cli import run_cli
from cogtestbed.inference.base import mle_summary
from cogtestbed.no_data import degenerate_reason, degenerate_units, null_unidentified
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def _one_constant(subject: int = 1) -> pd.DataFrame:
    table = simulate(get_experiment("instrumental-learning"), "rw-pm", 3, 1)
    table.loc[(table["subject"] == subject) & table["valid"], "action"] = 1
    return table


def test_the_rule_names_the_value_and_counts_distinct_values() -> None:
    assert degenerate_reason(np.array([3.0, 3.0])) is not None
    assert "all 2 valid answers are 3;" in degenerate_reason(np.array([3.0, 3.0]))
    assert degenerate_reason(np.array([3.0, 4.0])) is None
    assert "3 distinct values (fewer than 4)" in degenerate_reason(np.array([1, 2, 3, 1]), min_distinct=4)
    assert "all 1 valid answers are 'Yes'" in degenerate_reason(np.array(["Yes"], dtype=object))
    table = pd.DataFrame({"subject": [0, 0, 1, 1, 2], "valid": [True, True, True, True, False],
                          "action": [1, 1, 0, 1, None]})
    assert list(degenerate_units(table)) == [0]  # subject 2 has no valid answer: the no-data rule's


def test_one_constant_run_is_null_in_its_row_and_flagged_the_others_keep_their_values() -> None:
    spec = get_experiment("instrumental-learning")
    table = _one_constant()
    result = spec.metrics(table)
    rows = {r["run"]: r for r in result["per_run"]}
    assert rows[1]["learning_rate"] is None and rows[1]["alpha_pos"] is None
    assert rows[1]["performance"] == float(table[table.subject == 1]["reward"].mean())  # descriptive: kept
    assert rows[0]["learning_rate"] is not None and rows[2]["optimism_bias"] is not None
    assert any(f.startswith("degenerate answers of 1 unit(s) (1)") for f in result["flags"])
    assert result["metrics"]["learning_rate"] is not None  # the table's answers vary


def test_a_constant_table_nulls_what_a_model_estimates_with_the_reason() -> None:
    spec = get_experiment("two-step")
    table = simulate(spec, "hybrid", 2, 3)
    table.loc[table["valid"], "action"] = 0
    result = spec.metrics(table)
    assert result["metrics"]["model_basedness"] is None and result["metrics"]["reward_effect"] is None
    assert result["metrics"]["performance"] is not None
    reason = result["null_reasons"]["model_basedness"]
    assert reason.startswith(f"degenerate answers: all {int(table['valid'].sum())} valid answers are 0;")
    assert any(f.startswith("degenerate answers") and "null: model_basedness" in f for f in result["flags"])


def test_rules_apply_once_when_an_experiment_flags_it_itself() -> None:
    table = simulate(get_experiment("collider"), "cbn", 1, 1)
    table["action"] = 100.0
    flags = get_experiment("collider").metrics(table)["flags"]
    assert sum(f.startswith("degenerate answers") for f in flags) == 1


def test_null_unidentified_leaves_a_varied_table_alone() -> None:
    table = simulate(get_experiment("instrumental-learning"), "rw-pm", 2, 1)
    result = {"metrics": {"learning_rate": 0.3}, "per_run": [{"run": 0, "learning_rate": 0.3}], "flags": []}
    assert null_unidentified(result, table, ("learning_rate",), unit="per_run") == result


def test_fit_identified_skips_a_constant_subject_with_the_reason() -> None:
    model = get_experiment("instrumental-learning").model("rw-pm")
    table = _one_constant()
    fits = model.fit_identified(table)
    assert list(fits["subject"]) == [0, 1, 2]
    # the fitted subjects are judged by their intervals (one-sided where open at a bound), the constant one not fitted
    assert not fits.loc[1, "identified"]
    assert all(fits.loc[k, "identified"] == (fits.loc[k, "null_reason"] is None) for k in (0, 2))
    assert all(str(fits.loc[k, "null_reason"]).startswith(("None", "one-sided interval", "unbounded interval"))
               for k in (0, 2))
    row = fits.iloc[1]
    assert all(math.isnan(row[p]) for p in ("alpha_pos", "alpha_neg", "beta", "nll", "aic"))
    assert row["n_obs"] == 96 and not row["converged"]
    assert row["null_reason"].startswith("degenerate answers: all 96 valid answers are 1;")
    plain = model.fit_mle(table, subjects=[0, 2])  # the identified subjects' estimates are fit_mle's
    assert np.allclose(fits.loc[[0, 2], "alpha_pos"], plain["alpha_pos"])
    summary = mle_summary(fits, model.parameters.names)
    assert summary["n_identified"] == int(fits["identified"].sum()) and summary["aic"] == float(plain["aic"].sum())
    assert summary["flags"][0].startswith("1 subject(s) (1) not fitted: degenerate answers")


def test_cli_fit_of_constant_answers_reports_null_with_the_reason(tmp_path: Path, capsys) -> None:
    table = simulate(get_experiment("temporal-discounting"), "hyperbolic", 2, 1)
    table.loc[table["valid"], "action"] = 0
    path = tmp_path / "t.parquet"
    table.to_parquet(path)
    assert run_cli(["fit", "hyperbolic", str(path), "-o", str(tmp_path / "fit"), "--method", "mle", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean"] == {"k": None, "temperature": None} and out["aic"] is None
    assert out["n_identified"] == 0 and "not fitted: degenerate answers" in out["flags"][0]
    # the two runs of the one agent are pooled (the experiment pools sessions): 2 x 11 answers
    assert out["null_reasons"]["mean"].startswith("degenerate answers: all 22 valid answers are 0;")
