"""Hard edges of the richer response kinds (issue 30): list columns validated, no number from a
table that is not a distribution or has no valid answer, results independent of row order.

The bad tables are a simulated revealed-belief run (``simulate revealed-belief --agent dissonant
--param beta_first=2 --param noise=0.05 --subjects 2 --seed 1``) with one edit each, read back
through ``cogtestbed metrics`` (one line, exit 2) or the library."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from study_scripts import load_study
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.cli.app import USER_ERRORS
from cogtestbed.conformance.table_checks import all_invalid, canonical_json, null_problems, permuted
from cogtestbed.errors import one_line
from cogtestbed.registry import get_experiment, write_trials
from cogtestbed.schema import canonical_rows, list_parts
from cogtestbed.simulation import simulate

runner = CliRunner()


@pytest.fixture(scope="module")
def revealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, Path]:
    table = simulate("revealed-belief", "dissonant", 2, seed=1, params={"beta_first": 2.0, "noise": 0.05})
    folder = tmp_path_factory.mktemp("rb")
    write_trials(table, folder / "rb.parquet", {})
    return table, folder


PROBE = load_study("hard_edges_probe")  # its table edits are reused here
_lists, _first_inf = PROBE._lists, PROBE._first_inf


EDITS: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = {
    "probs doubled": (_lists("probs", lambda v: v * 2), "probs lists the answer's renormalised distribution"),
    "probs*3-1": (_lists("probs", lambda v: v * 3 - 1), "summing to 1"),
    "p_star*0.5": (_lists("p_star", lambda v: v * 0.5), "p_star lists a ground-truth distribution"),
    "logprobs+5": (_lists("logprobs", lambda v: v + 5), "logprobs lists log-probabilities"),
    "one inf": (_lists("probs", _first_inf, slice(0, 1)), "probs='[inf"),
    "NaN probs": (_lists("probs", lambda v: v * np.nan, slice(0, 50)), "(and 49 more problems)"),
    "probs too short": (_lists("probs", lambda v: v[:-1], slice(3, 4)), "of length n_outcomes"),
    "correct_option=-1": (lambda t: t.assign(correct_option=-1), "column 'correct_option', row 0"),
    "correct_option=7": (lambda t: t.assign(correct_option=7), "value 7 is not a whole number in [0, 4]"),
    "unknown channel": (lambda t: t.assign(channel=t["channel"].astype(str).where(t.index > 0, "zzz")),
                        "value 'zzz' is not one of 'revb', 'staa'"),
    "no probs": (lambda t: t.drop(columns=["probs"]), "lacks column 'probs'"),
    "no p_star": (lambda t: t.drop(columns=["p_star"]), "lacks column 'p_star'"),
}


def user_error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exception is not None, result.output
    assert isinstance(result.exception, USER_ERRORS), repr(result.exception)
    message = one_line(result.exception)  # what the command line prints (exit 2)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("edit", list(EDITS))
def test_revealed_table_that_is_not_a_distribution_is_refused_in_one_line(revealed, edit: str) -> None:
    table, folder = revealed
    fn, named = EDITS[edit]
    path = folder / f"{edit.replace(' ', '_')}.parquet"
    fn(table.copy()).to_parquet(path)  # as a user's pandas edit writes it (object list columns)
    message = user_error(["metrics", "revealed-belief", str(path), "--json"])
    assert message.startswith(f"{path}: ") and named in message, message


def test_list_parts_reads_arrow_and_object_columns_alike(revealed) -> None:
    table, folder = revealed
    from cogtestbed.registry import read_trials

    arrow = read_trials(folder / "rb.parquet")
    lengths, values = list_parts(arrow["probs"])
    lengths_obj, values_obj = list_parts(pd.Series([np.asarray(v) for v in arrow["probs"]], dtype=object))
    assert lengths.tolist() == lengths_obj.tolist() == arrow["n_outcomes"].tolist()
    assert np.array_equal(values, values_obj, equal_nan=True)


def test_revealed_metrics_of_the_untouched_table_are_numbers(revealed) -> None:
    _, folder = revealed
    result = runner.invoke(app, ["metrics", "revealed-belief", str(folder / "rb.parquet"), "--json",
                                 "--per-item", "no", "--reference", "no"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert 0.2 < metrics["chebyshev"] < 0.3 and 0 <= metrics["staa_error"] < 0.01  # the probe's 0.232, 0.0002


@pytest.mark.parametrize("rows", ["empty", "all invalid"])
def test_revealed_metrics_without_a_valid_answer_are_null_with_a_reason(revealed, rows: str) -> None:
    table, folder = revealed
    bad = table.iloc[:0] if rows == "empty" else all_invalid(table).assign(
        probs=[[np.nan] * k for k in table["n_outcomes"]], logprobs=[[np.nan] * k for k in table["n_outcomes"]])
    path = folder / f"{rows.replace(' ', '_')}.parquet"
    bad.to_parquet(path)
    result = runner.invoke(app, ["metrics", "revealed-belief", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["metrics"] == {k: None for k in get_experiment("revealed-belief").metrics.headline}
    assert null_problems(out, get_experiment("revealed-belief").metrics.headline, len(bad)) == []


def test_a_metric_without_valid_input_is_null_never_infinity(revealed) -> None:
    """Only RevB rows valid: the StaA error has nothing to average and is null (with a reason)."""
    table, _ = revealed
    staa = table["channel"].astype(str) == "staa"
    t = table.assign(valid=~staa, action=table["action"].mask(staa))
    t = t.assign(probs=[[np.nan] * k if s else v for v, k, s in zip(t["probs"], t["n_outcomes"], staa, strict=True)])
    out = get_experiment("revealed-belief").metrics(t, per_item="no", reference="no")
    assert out["metrics"]["staa_error"] is None and "staa_error" in out["null_reasons"]
    assert out["metrics"]["chebyshev"] is not None
    json.dumps(out["metrics"], allow_nan=False)


def test_metrics_of_a_permuted_table_are_identical_to_the_last_bit(revealed) -> None:
    table, _ = revealed
    exp = get_experiment("revealed-belief")
    assert canonical_json(exp.metrics(table)) == canonical_json(exp.metrics(permuted(table)))
    assert canonical_rows(permuted(table)).equals(table)


# ----------------------------------------------------------------------------- one line everywhere
GOOD_RUN = {"experiment": "two-step", "llms": ["hf:tiny-random"], "subjects": 2, "seed": 0,
            "design": {}, "max_tokens": 8, "temperature": 0.0, "reask": 0, "max_calls": None, "max_cost": None}


@pytest.mark.parametrize(("edit", "named"), [
    ({"design": "abc"}, "run.design: Input should be a valid dictionary"),
    ({"run": [1, 2]}, "run: Input should be a valid dictionary"),
    ({"subjects": None}, "run.subjects"),
    ({"seed": "x"}, "run.seed: Input should be a valid integer (got 'x')"),
    ({"subjects": "5"}, "run.subjects: Input should be a valid integer (got '5')"),
    ({"subjects": 2.7}, "run.subjects: Input should be a valid integer (got 2.7)"),
    ({"subjects": 1e12}, "run.subjects: Input should be a valid integer"),
    ({"subjects": 10**12}, "run.subjects: Input should be less than or equal to 1000000"),
    ({"subjects": 0}, "run.subjects: Input should be greater than or equal to 1 (got 0)"),
    ({"subjects": -3}, "run.subjects: Input should be greater than or equal to 1 (got -3)"),
    ({"max_cost": float("nan")}, "run.max_cost: Input should be a finite number"),
    ({"max_cost": -1}, "run.max_cost: Input should be greater than or equal to 0"),
    ({"max_calls": 7.9}, "run.max_calls: Input should be a valid integer (got 7.9)"),
    ({"max_calls": "abc"}, "run.max_calls: Input should be a valid integer (got 'abc')"),
])
def test_a_hand_edited_plan_is_refused_in_one_line(tmp_path: Path, edit: dict, named: str) -> None:
    run: object = [1, 2] if "run" in edit else {**GOOD_RUN, **edit}
    if edit == {"subjects": None}:
        run = {k: v for k, v in GOOD_RUN.items() if k != "subjects"}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan_version": 1, "run": run}))
    message = user_error(["run", "--plan", str(plan), "-o", str(tmp_path / "r"), "--dry-run"])
    assert named in message, message


def test_the_untouched_plan_runs_dry(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan_version": 1, "run": GOOD_RUN}))
    result = runner.invoke(app, ["run", "--plan", str(plan), "-o", str(tmp_path / "r"), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["subjects"] == 2


@pytest.mark.parametrize(("option", "named"), [
    (["--rpm", "0"], "--rpm must be a positive number, got 0"),
    (["--tpm", "-1"], "--tpm must be a positive number"),
    (["--top-logprobs", "-3"], "--top-logprobs must be a count >= 0, got -3"),
])
def test_absurd_run_settings_are_refused_in_one_line(tmp_path: Path, option: list[str], named: str) -> None:
    message = user_error(["run", "two-step", "--llm", "hf:tiny-random", "-o", str(tmp_path / "r"), "--dry-run",
                          *option])
    assert named in message


def test_a_nan_rate_is_refused_in_one_line_naming_the_option(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    code = run_cli(["run", "two-step", "--llm", "hf:tiny-random", "-o", str(tmp_path / "r"), "--dry-run",
                    "--rpm", "nan"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'--rpm': nan is not a finite number" in err


def test_a_design_value_given_twice_is_refused() -> None:
    message = user_error(["simulate", "revealed-belief", "--agent", "dissonant", "--design", "dice_faces=12,12",
                          "--output", "unused.parquet"])
    assert "dice_faces: 12 given twice" in message


def test_metric_options_are_bounded_and_finite() -> None:
    from cogtestbed.metrics_result import MetricOption

    bins = MetricOption("t2_bins", "quantile bins", 10, None, int, low=2, high=1000)
    boot = MetricOption("bootstrap", "rounds", 30, None, int, low=1, high=10_000)
    level = MetricOption("level", "a level", 0.5, None, float, low=0.0, high=1.0)
    assert bins.convert("2") == 2 and boot.convert("10000") == 10_000 and level.convert("0.25") == 0.25
    for option, raw, named in [(bins, "1", "`t2_bins` must lie in [2, 1000], got 1"),
                               (bins, "0", "`t2_bins` must lie in [2, 1000]"),
                               (boot, "-1", "`bootstrap` must lie in [1, 10000], got -1"),
                               (boot, "1000000000", "`bootstrap` must lie in [1, 10000]"),
                               (level, "nan", "`level` must be a finite number"),
                               (level, "inf", "`level` must be a finite number"),
                               (boot, "abc", "`bootstrap`: cannot read 'abc'")]:
        with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
            option.convert(raw)


@pytest.mark.slow
def test_the_probes_reproductions_give_no_number_and_no_traceback() -> None:
    """benchmarks/studies/hard_edges_probe.py: every reproduction of the issue, one process each."""
    rows = PROBE.main()
    assert len(rows) >= 39
    assert not any(r["number"] or r["traceback"] or not r["ok"] for r in rows), [r for r in rows if not r["ok"]]
