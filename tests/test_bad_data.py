"""Bad data never yields a number: every table and importer output is checked against the
experiment's declared schema before anything is computed.  The bad files are real CogBench files
from ../shared/data with one edit each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.cli.app import USER_ERRORS
from cogtestbed.registry import get_experiment, read_trials, validate_table, write_trials
from cogtestbed.schema import TrialTableError
from cogtestbed.simulation import simulate

runner = CliRunner()


def edited(src: Path, dest: Path, edit) -> Path:
    """``src`` (a CogBench CSV) with ``edit(df)`` applied, written to ``dest``."""
    df = pd.read_csv(src, encoding="utf-8-sig")
    edit(df)
    df.to_csv(dest, index=False)
    return dest


def user_error(args: list[str]) -> str:
    """Run the CLI in-process; it must stop with a user error (one line, exit 2 from ``main``)."""
    result = runner.invoke(app, args)
    assert result.exception is not None, result.output
    assert isinstance(result.exception, USER_ERRORS), repr(result.exception)
    message = str(result.exception)
    assert "\n" not in message
    return message


@pytest.fixture(scope="module")
def instrumental_parquet(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("il") / "il.parquet"
    write_trials(simulate("instrumental-learning", "rw-pm", 2, seed=3,
                          params={"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}), path, {})
    return path


# ------------------------------------------------------------------ 1. NaN pumps: an invalid balloon
def test_bart_nan_pumps_is_an_invalid_balloon_not_a_number(cogbench_dir, tmp_path):
    src = cogbench_dir / "BART" / "gpt-4.csv"
    raw = pd.read_csv(src)
    bad = edited(src, tmp_path / "gpt-4.csv", lambda df: df.__setitem__("pumps", df["pumps"].where(df.index != 7)))
    exp = get_experiment("bart")
    table, source = exp.read(bad)
    assert source == "cogbench"
    assert int((~table["valid"]).sum()) == 1
    result = exp.metrics(table)
    assert result["n_invalid"] == 1
    assert result["metrics"]["invalid_rate"] == pytest.approx(1 / len(raw))
    # the run of the voided balloon: risk = mean pumps of its other balloons, as in the file
    run = int(raw.loc[7, "run"])
    kept = raw[(raw["run"] == run) & (raw.index != 7)]
    per_run = {r["run"]: r for r in result["per_run"]}
    assert per_run[run]["risk"] == pytest.approx(kept["pumps"].mean())
    assert np.isfinite(result["metrics"]["risk"]) and 0 < result["metrics"]["risk"] < 128


# ------------------------------------------------------------------ 2. NaN choices: invalid trials
def test_instrumental_missing_choices_are_counted_invalid(cogbench_dir, tmp_path):
    src = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    bad = edited(src, tmp_path / "gpt-4.csv",
                 lambda df: df.__setitem__("choice", df["choice"].where(df["run"] != 0)))
    exp = get_experiment("instrumental-learning")
    table, _ = exp.read(bad)
    run0 = table[table["subject"] == 0]
    assert not run0["valid"].any() and run0["action"].isna().all() and run0["reward"].isna().all()
    model = exp.model("rw-pm")
    fit = model.fit_subject(model.subject_data(run0)[0])
    assert fit.n_obs == 0 and not fit.converged and np.isnan(fit.params["alpha_pos"])


def test_instrumental_every_choice_missing_is_no_valid_trials(cogbench_dir, tmp_path):
    src = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    bad = edited(src, tmp_path / "gpt-4.csv", lambda df: df.__setitem__("choice", np.nan))
    exp = get_experiment("instrumental-learning")
    table, _ = exp.read(bad)
    assert not table["valid"].any()
    with pytest.raises(ValueError, match="no valid trials"):
        exp.model("rw-pm").fit_mle(table)
    result = exp.metrics(table)  # no data, no number: null with a reason, never 0
    assert all(v is None for v in result["metrics"].values()) and result["n_invalid"] == len(table)
    assert "no valid answer" in result["null_reasons"]["performance"]
    message = user_error(["fit", "rw-pm", str(bad), "-o", str(tmp_path / "fit"), "--method", "mle"])
    assert "no valid trials" in message
    assert not (tmp_path / "fit" / "summary.json").exists()


# ------------------------------------------------------------------ 3. a table of another experiment
@pytest.mark.parametrize("other", ["temporal-discounting", "horizon", "two-step", "probabilistic-reasoning",
                                   "restless-bandit", "bart"])
def test_metrics_refuses_a_table_of_another_experiment(instrumental_parquet, other):
    message = user_error(["metrics", other, str(instrumental_parquet)])
    assert f"holds trials of experiment instrumental-learning, not {other}" in message
    assert str(instrumental_parquet) in message


def test_validate_names_the_expected_experiment(instrumental_parquet):
    with pytest.raises(TrialTableError, match="not horizon"):
        read_trials(instrumental_parquet, "horizon")
    assert len(read_trials(instrumental_parquet, "instrumental-learning")) == 2 * 96


# ------------------------------------------------------------------ 4. impossible values
@pytest.mark.parametrize(("column", "value", "named"), [
    ("choice", 5, "column 'action' (file column 'choice')"), ("reward", 7.5, "column 'reward'"),
    ("reward", -1.0, "column 'reward'"),
])
def test_instrumental_impossible_values_name_file_column_row_value(cogbench_dir, tmp_path, column, value, named):
    src = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    bad = edited(src, tmp_path / "bad.csv", lambda df: df.__setitem__(column, df[column].mask(df.index == 10, value)))
    with pytest.raises(TrialTableError) as info:
        get_experiment("instrumental-learning").read(bad)
    message = str(info.value)
    raw = pd.read_csv(src)
    assert str(bad) in message and named in message
    assert f"value {value:g} is not one of " in message
    assert f"(run {raw.loc[10, 'run']}, trial {raw.loc[10, 'trial']})" in message
    assert "\n" not in message


def test_bart_negative_pumps_rejected(cogbench_dir, tmp_path):
    src = cogbench_dir / "BART" / "gpt-4.csv"
    bad = edited(src, tmp_path / "bad.csv", lambda df: df.__setitem__("pumps", df["pumps"].mask(df.index == 3, -2)))
    message = user_error(["metrics", "bart", str(bad)])
    assert "value -2 is not a whole number >= 0" in message and "bad.csv" in message
    assert "column 'pumps'" in message or "column 'action' (file column 'pumps')" in message


def test_bart_pumps_above_the_balloon_maximum_rejected(cogbench_dir, tmp_path):
    src = cogbench_dir / "BART" / "gpt-4.csv"
    bad = edited(src, tmp_path / "bad.csv",
                 lambda df: df.__setitem__("pumps", df["pumps"].mask(df.index == 3, df.loc[3, "max_pumps"] + 1)))
    with pytest.raises(TrialTableError, match="pumps <= max_pumps"):
        get_experiment("bart").read(bad)


def test_non_whole_choice_names_the_file_line(cogbench_dir, tmp_path):
    src = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    bad = edited(src, tmp_path / "bad.csv", lambda df: df.__setitem__("choice", df["choice"].mask(df.index == 4, 0.5)))
    with pytest.raises(ValueError, match=r"column 'choice', line 6: value 0\.5 is not a whole number"):
        get_experiment("instrumental-learning").read(bad)


def test_nan_action_marked_valid_rejected(instrumental_parquet, tmp_path):
    table = pd.read_parquet(instrumental_parquet)
    table.loc[5, "action"] = pd.NA
    path = tmp_path / "edited.parquet"
    table.to_parquet(path, index=False)
    message = user_error(["metrics", "instrumental-learning", str(path)])
    assert "row 5" in message and "a valid answer has an action" in message and "valid=True" in message
    # marked invalid instead, the trial is accepted as an invalid one
    table.loc[5, ["valid", "reward"]] = [False, np.nan]
    table.to_parquet(path, index=False)
    assert int((~read_trials(path, "instrumental-learning")["valid"]).sum()) == 1


def test_a_bad_table_is_never_written(tmp_path):
    table = simulate("two-step", "random", 1, seed=0)
    table.loc[0, "action"] = 3
    with pytest.raises(TrialTableError, match="column 'action', row 0 .*value 3 is not one of 0, 1"):
        write_trials(table, tmp_path / "t.parquet", {})
    assert not (tmp_path / "t.parquet").exists()


def test_common_columns_checked_for_every_experiment():
    table = simulate("horizon", "random", 1, seed=0)
    table["trial"] = table["trial"] - 1
    with pytest.raises(TrialTableError, match="column 'trial', row 0"):
        validate_table(table)
    table = simulate("horizon", "random", 1, seed=0)
    with pytest.raises(TrialTableError, match="lacks column 'horizon'"):
        validate_table(table.drop(columns="horizon"))


# ------------------------------------------------------------------ 5. correlations need enough points
def _recovery_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    true = rng.uniform(0.1, 0.9, n)
    return pd.DataFrame({"n_subjects": 1, "runs": 1, "n_trials": 96, "parameter": "alpha", "true": true,
                         "estimate": true + rng.normal(0, 0.01, n), "scale": "natural"})


def test_recovery_from_too_few_points_is_not_judged():
    from types import SimpleNamespace

    from cogtestbed.studies.driver import study_spec
    from cogtestbed.studies.summaries import MIN_RECOVERY_POINTS, recovery_summary
    from cogtestbed.studies.verdict import verdict

    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw",), subjects=(1,), reps=2)
    two = recovery_summary(_recovery_table(2, np.random.default_rng(0)))
    entry = two["1x96"]["parameters"]["alpha"]
    assert np.isnan(entry["r"]) and entry["r_note"].startswith("too few subjects to judge (n=2")
    text = verdict(SimpleNamespace(spec=spec, summary=two))
    assert "too few subjects to judge (n=2" in text and "recovered well" not in text
    enough = recovery_summary(_recovery_table(MIN_RECOVERY_POINTS, np.random.default_rng(0)))
    assert enough["1x96"]["parameters"]["alpha"]["r"] > 0.99
    # no tolerance stated: the r convention is named, and "recovered well" is kept for a stated tolerance
    judged = verdict(SimpleNamespace(spec=spec, summary=enough))
    assert "r >= 0.8 convention alpha tracks the truth" in judged and "recovered well" not in judged
    flat = _recovery_table(12, np.random.default_rng(1)).assign(true=0.5)
    entry = recovery_summary(flat)["1x96"]["parameters"]["alpha"]
    assert np.isnan(entry["r"]) and entry["r_note"] == "r undefined: no variation in the truth"


# ------------------------------------------------------------------ 6. effect 0 is the type-I error rate
def test_power_at_effect_zero_is_a_two_sided_type_i_error_rate():
    from types import SimpleNamespace

    from cogtestbed.studies.driver import study_spec
    from cogtestbed.studies.model_studies import detected
    from cogtestbed.studies.summaries import power_summary
    from cogtestbed.studies.verdict import verdict

    assert detected(0.01, -0.3, 0.0, 0.05) and detected(0.01, 0.3, 0.0, 0.05)  # either direction at 0
    assert not detected(0.01, -0.3, 0.2, 0.05)  # a wrong-sign rejection is not power
    rng = np.random.default_rng(0)
    estimate = rng.normal(0, 1, 400)
    p = 2 * stats.norm.sf(np.abs(estimate))
    table = pd.DataFrame({"n_subjects": 10, "runs": 1, "n_trials": 96, "effect": "optimism_bias", "effect_size": 0.0,
                          "estimate": estimate, "p_value": p, "test": "t",
                          "detected": [detected(pv, e, 0.0, 0.05) for pv, e in zip(p, estimate, strict=True)]})
    s = power_summary(table)
    cell = s["cells"][0]
    assert "power" not in cell and s["quantity"] == "type-I error rate"
    assert cell["type_i_error"] == pytest.approx(np.mean(p < 0.05)) and 0.03 < cell["type_i_error"] < 0.08
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                     effect_size=0.0, subjects=(10,), reps=400)
    text = verdict(SimpleNamespace(spec=spec, summary=s))
    assert text.startswith("Type-I error rate of optimism_bias") and "Power" not in text


def test_an_environment_without_a_schema_is_an_inconsistent_spec():
    import dataclasses

    spec = get_experiment("instrumental-learning")
    bare = type("BareEnv", (spec.env_cls,), {"table_schema": None})
    with pytest.raises(ValueError, match="BareEnv declares no table_schema"):
        dataclasses.replace(spec, env_cls=bare)
