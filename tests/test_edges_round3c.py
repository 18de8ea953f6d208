"""Hard edges, third round (issue 41), what remained: the degenerate-answer rule on belief
coherence's single-test path and on hierarchical fits, and progress during a long metrics computation."""

from __future__ import annotations

import math

import pytest

from cogtestbed.conformance.table_checks import constant_answers
from cogtestbed.no_data import degenerate_units
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


# ----------------------------------------------------------------------------- 3. belief's single-test path
@pytest.fixture(scope="module")
def belief_tables():
    spec = get_experiment("belief-coherence")
    table = simulate(spec, "logit-rum", 2, 1, design=spec.design_cls(n_contexts=20))
    return spec, table, constant_answers(table)


def test_a_single_test_on_constant_answers_is_null_with_the_reason_as_in_the_whole_result(belief_tables) -> None:
    spec, _, const = belief_tables
    options = dict(spec.metrics.smoke_options)
    full = spec.metrics(const, **options)
    for name in ("t2", "t4"):  # the tests belief coherence declares unidentified by degenerate answers
        assert spec.metrics.tests[name](const, **options)["p_value"] is None  # the raw test alone: no rule
        alone = spec.metrics.test_result(name, const, **options)
        assert alone["metrics"] == {name: None} and full["metrics"][name] is None
        assert alone["null_reasons"][name] == full["null_reasons"][name]
        assert alone["null_reasons"][name].startswith("degenerate answers: all 1600 valid answers are 0")
        assert any(f.startswith("degenerate answers") and f.endswith(f"null: {name}") for f in alone["flags"])
    t3 = spec.metrics.test_result("t3", const, **options)  # a test the rule leaves as it is
    assert t3["metrics"]["t3"] == full["metrics"]["t3"] and "null_reasons" not in t3


def test_a_single_test_on_varied_answers_is_the_test_as_it_was(belief_tables) -> None:
    spec, table, _ = belief_tables
    options = dict(spec.metrics.smoke_options)
    result = spec.metrics.test_result("t2", table, **options)
    assert result["metrics"]["t2"] == spec.metrics.tests["t2"](table, **options)
    assert 0.0 <= result["metrics"]["t2"]["p_value"] <= 1.0 and "null_reasons" not in result


def test_a_null_test_is_untestable_in_a_study_not_a_crash(belief_tables) -> None:
    from cogtestbed.studies.metric_studies import test_outcome

    spec, _, const = belief_tables
    result = spec.metrics.test_result("t2", const, **dict(spec.metrics.smoke_options))
    reject, p = test_outcome(result, "t2", 0.05)
    assert reject is False and math.isnan(p)
    no_data = spec.metrics.test_result("t2", const.assign(valid=False))
    assert no_data["metrics"] == {"t2": None} and no_data["null_reasons"]["t2"].startswith("no valid answer")


# ----------------------------------------------------------------------------- 2. hierarchical fits
def _one_constant(subject: int = 1):
    table = simulate(get_experiment("instrumental-learning"), "rw-pm", 3, 1)
    table.loc[(table["subject"] == subject) & table["valid"], "action"] = 1
    return table


def _fake_fit(kept):
    """A BayesFit whose posterior holds one draw per kept subject (no sampling)."""
    import arviz as az
    import numpy as np

    from cogtestbed.inference.hierarchical import BayesFit, diagnose

    subjects = sorted(kept["subject"].unique())
    draws = np.arange(2 * 10 * len(subjects), dtype=float).reshape(2, 10, len(subjects)) / 100
    idata = az.from_dict(posterior={"alpha_pos": draws}, coords={"subject": subjects},
                         dims={"alpha_pos": ["subject"]}, sample_stats={"diverging": np.zeros((2, 10), bool)})
    return BayesFit(idata, diagnose(idata), "rw-pm")


def test_a_hierarchical_fit_leaves_out_a_constant_subject_flags_it_and_nulls_its_rows() -> None:
    from cogtestbed.inference.hierarchical import on_identified_subjects

    model = get_experiment("instrumental-learning").model("rw-pm")
    seen = []
    fit = on_identified_subjects(model, _one_constant(), lambda kept: seen.append(kept) or _fake_fit(kept))
    assert sorted(seen[0]["subject"].unique()) == [0, 2]  # the sampler never saw subject 1
    assert list(fit.unidentified) == [1] and fit.unidentified[1].startswith("degenerate answers: all 96 valid "
                                                                             "answers are 1;")
    assert fit.flags == [f"1 subject(s) (1) not fitted: {fit.unidentified[1]}; the posterior (population "
                         "included) is of the other 2 subject(s)"]
    summary = fit.subject_summary().set_index("subject")
    assert list(summary["identified"]) == [True, True, False]
    assert math.isnan(summary.loc[1, "mean"]) and math.isnan(summary.loc[1, "hi90"])
    assert summary.loc[1, "null_reason"] == fit.unidentified[1] and summary["null_reason"].isna().sum() == 2
    assert summary.loc[2, "mean"] == pytest.approx(0.20)  # its draws: 0.01, 0.03, ..., 0.39
    # the rule is the MLE fits' (one owner, CognitiveModel.degenerate_subjects): the same subjects and reasons
    assert fit.unidentified == degenerate_units(_one_constant(), model.min_distinct_answers)


def test_a_table_without_an_identified_subject_is_refused_not_fitted_to_its_prior(tmp_path, capsys) -> None:
    import cogtestbed as ct
    from cogtestbed.cli import run_cli
    from cogtestbed.no_data import DegenerateAnswers

    table = _one_constant()
    table.loc[table["valid"], "action"] = 1
    with pytest.raises(DegenerateAnswers) as caught:
        ct.fit("instrumental-learning", table, model="rw-pm", method="hierarchical", draws=100, chains=2)
    assert isinstance(caught.value, ct.DataError)
    assert str(caught.value) == ("rw-pm: no subject's answers identify the model: degenerate answers: all 288 valid "
                                 "answers are 1; a model of them is not identified (its parameters and fit are null); "
                                 "a hierarchical posterior would reflect only its prior, so none is sampled "
                                 "(`method` mle reports each subject null with its reason)")
    path = tmp_path / "t.parquet"
    table.to_parquet(path)
    assert run_cli(["fit", "rw-pm", str(path), "-o", str(tmp_path / "fit"), "--method", "hierarchical"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: rw-pm: no subject's answers identify the model")
    # each subject constant on its own value: the table varies, no subject is identified
    table.loc[table["valid"] & (table["subject"] == 2), "action"] = 0
    with pytest.raises(DegenerateAnswers, match="each of the 3 subjects' valid answers is degenerate"):
        ct.fit("instrumental-learning", table, model="rw-pm", method="hierarchical", draws=100, chains=2)


@pytest.mark.slow
def test_a_real_hierarchical_fit_reports_the_constant_subject_in_its_summary(tmp_path, capsys) -> None:
    import json

    from cogtestbed.cli import run_cli

    path = tmp_path / "t.parquet"
    _one_constant().to_parquet(path)
    assert run_cli(["fit", "rw-pm", str(path), "-o", str(tmp_path / "fit"), "--method", "hierarchical",
                    "--draws", "100", "--chains", "2", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["n_subjects"] == 3 and out["n_identified"] == 2 and list(out["unidentified"]) == ["1"]
    assert out["flags"][0].startswith("1 subject(s) (1) not fitted: degenerate answers: all 96 valid answers are 1")
    assert "warning: 1 subject(s) (1) not fitted" in captured.err
    import pandas as pd

    rows = pd.read_csv(tmp_path / "fit" / "subjects.csv")
    assert rows.loc[rows["subject"] == 1, "mean"].isna().all() and rows.loc[rows["subject"] != 1, "mean"].notna().all()


# ----------------------------------------------------------------------------- 4. progress during metrics
def test_a_long_metrics_computation_says_where_it_is_and_ends_with_the_results_counts(monkeypatch) -> None:
    import re

    import cogtestbed as ct
    from cogtestbed.progress import reporting

    monkeypatch.setattr("cogtestbed.progress.UNIT_INTERVAL", 0.01)  # every computation here is "long"
    table = simulate(get_experiment("instrumental-learning"), "rw-pm", 3, 1)
    lines: list[tuple[str, bool]] = []
    with reporting(lambda line, final: lines.append((line, final))):
        result = ct.metrics("instrumental-learning", table)
    assert len(result["per_run"]) == 3
    *during, (closing, final_closing) = lines
    assert final_closing and all(line.startswith("rw-pm fitted") for line, final in during if final)
    last_fit = [line for line, _ in during if line.startswith("rw-pm fitted")][-1]
    assert last_fit.startswith("rw-pm fitted by maximum likelihood to each unit: 3/3, ")  # the last count reached
    assert re.fullmatch(r"metrics of instrumental-learning: done, 3 rows of per_run from 288 trial rows in \d+ s",
                        closing)
    for line, _ in during:  # every count on the way is within the same total
        found = re.search(r": (\d+)/(\d+), ", line)
        assert found is None or int(found[1]) <= int(found[2]) == 3, line
    lines.clear()
    monkeypatch.setattr("cogtestbed.progress.UNIT_INTERVAL", 60.0)  # a short computation says nothing
    with reporting(lambda line, final: lines.append((line, final))):
        ct.metrics("instrumental-learning", table)
    assert lines == []


def test_the_metrics_command_prints_the_progress_lines_on_stderr(tmp_path, monkeypatch, capsys) -> None:
    import json

    from cogtestbed.cli import run_cli

    monkeypatch.setattr("cogtestbed.progress.UNIT_INTERVAL", 0.01)
    path = tmp_path / "t.parquet"
    simulate(get_experiment("instrumental-learning"), "rw-pm", 3, 1).to_parquet(path)
    assert run_cli(["metrics", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["per_run"]) == 3
    err = captured.err.strip().splitlines()
    assert err[-1].startswith("metrics of instrumental-learning: done, 3 rows of per_run from 288 trial rows in ")
    assert [line for line in err if line.startswith("rw-pm fitted")][-1].startswith(
        "rw-pm fitted by maximum likelihood to each unit: 3/3, ")


def test_the_constant_answers_conformance_check_covers_hierarchical_fits() -> None:
    from cogtestbed.conformance.table_checks import hierarchical_constant_problems

    model = get_experiment("instrumental-learning").model("rw-pm")
    one = _one_constant()
    every = one.copy()
    every.loc[every["valid"], "action"] = 1
    assert hierarchical_constant_problems(model, every, True, {0, 1, 2}) == []
    assert hierarchical_constant_problems(model, one, False, {1}) == []

    class Blind:  # a hierarchical fit without the rule
        name, has_pymc, min_distinct_answers = "blind", True, 2

        def degenerate_subjects(self, trials):
            return {}

    assert hierarchical_constant_problems(Blind(), every, True, {0, 1, 2}) == [
        "model 'blind': a hierarchical fit samples answers that identify no model"]
    assert hierarchical_constant_problems(Blind(), one, False, {1}) == [
        "model 'blind': a hierarchical fit samples constant subject(s) [1]"]


@pytest.mark.parametrize(("experiment", "agent", "phase"), [
    ("bart", "target", "BART scores of each run"),
    ("temporal-discounting", "hyperbolic", "discounting scores of each run"),
    ("probabilistic-reasoning", "generalised-bayes", "probabilistic scores of each run (session)"),
    ("restless-bandit", "kalman", "restless-bandit scores of each run"),
])
def test_each_experiments_per_run_loop_counts_the_rows_the_result_holds(experiment, agent, phase,
                                                                       monkeypatch) -> None:
    import cogtestbed as ct
    from cogtestbed.progress import reporting

    monkeypatch.setattr("cogtestbed.progress.UNIT_INTERVAL", 0.001)
    spec = get_experiment(experiment)
    table = simulate(spec, agent, 4, 2)
    lines: list[str] = []
    with reporting(lambda line, final: lines.append(line)):
        result = ct.metrics(experiment, table)
    n = len(result[spec.metrics.unit])
    assert n == 4
    assert [line for line in lines if line.startswith(phase)][-1].startswith(f"{phase}: {n}/{n}, ")
    assert lines[-1].startswith(f"metrics of {experiment}: done, {n} rows of per_run from {len(table)} trial rows")
