"""Each command is a thin layer over one public API function: what the command prints or writes
equals what the function returns (the same seed, the same options)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from tolerance import assert_close

import cogtestbed as ct
from cogtestbed.cli import run_cli

EXP = "instrumental-learning"


@pytest.fixture(scope="module")
def table_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api_cli") / "trials.parquet"
    ct.simulate(EXP, "rw-pm", subjects=4, seed=3, params={"alpha_pos": 0.6, "alpha_neg": 0.2, "beta": 4.0},
                output=path)
    return path


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out
    return json.loads(out)


def test_fit_mle_writes_the_table_ct_fit_returns(table_file: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["fit", "rw-pm", str(table_file), "-o", str(tmp_path / "cli"), "--method", "mle", "--json"]) == 0
    printed = _json(capsys)
    written = pd.read_csv(tmp_path / "cli" / "mle.csv")
    table = ct.fit(EXP, table_file, model="rw-pm")
    assert list(written["subject"]) == list(table["subject"]) == [0, 1, 2, 3]
    for col in ("alpha_pos", "alpha_neg", "beta", "nll", "aic", "bic"):
        assert_close(written[col].tolist(), table[col].tolist(), rtol=1e-6, where=col)
    saved = ct.fit_and_save("rw-pm", table_file, output=tmp_path / "api", method="mle")
    assert printed["files"] == [str(tmp_path / "cli" / "mle.csv")] and saved["n_subjects"] == 4
    assert_close({k: v for k, v in printed.items() if k not in ("files", "request")},
                 {k: v for k, v in saved.items() if k not in ("files", "request")}, rtol=1e-9, where="fit summary")
    assert {**printed["request"], "output": None} == {**saved["request"], "output": None}  # written to two folders
    assert_close(printed["aic"], float(table["aic"].sum()), rtol=1e-6, where="summed AIC")
    assert json.loads((tmp_path / "cli" / "summary.json").read_text())["aic"] == printed["aic"]


def test_fit_refuses_in_one_line_with_the_same_check_as_ct_fit(table_file: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["fit", "rw-pm", str(table_file), "-o", str(tmp_path / "o"), "--method", "bayes"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --method must be mle or hierarchical, got 'bayes'\n"
    assert not (tmp_path / "o").exists()
    with pytest.raises(ct.InputError, match="`method` must be mle or hierarchical, got 'bayes'"):
        ct.fit(EXP, table_file, model="rw-pm", method="bayes")  # type: ignore[arg-type]


def test_metrics_prints_what_ct_metrics_returns(table_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["metrics", EXP, str(table_file), "--json"]) == 0
    printed = _json(capsys)
    returned = ct.metrics(EXP, table_file)
    assert printed["experiment"] == returned["experiment"] == EXP and printed["path"] == str(table_file)
    assert_close(printed["metrics"], json.loads(json.dumps(returned["metrics"], default=str)), rtol=1e-9,
                 where="metrics")
    assert run_cli(["metrics", str(table_file), "--json"]) == 0  # the experiment read from the file
    assert _json(capsys)["experiment"] == EXP


def test_list_prints_what_ct_describe_returns(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["list", "--json"]) == 0
    assert _json(capsys) == json.loads(json.dumps(ct.describe()))
    assert run_cli(["list", EXP, "--json"]) == 0
    described = ct.describe(EXP)
    assert _json(capsys) == json.loads(json.dumps(described, default=str))
    assert [m["name"] for m in described["models"]][:1] and described["name"] == EXP


def test_check_prints_the_report_ct_check_returns(capsys: pytest.CaptureFixture[str]) -> None:
    only = ["spec_declaration", "parameter_bounds"]
    assert run_cli(["check", EXP, *(a for c in only for a in ("--check", c)), "--json"]) == 0
    printed = _json(capsys)
    report = ct.check(EXP, checks=only)
    assert printed["ok"] is report.passed is True
    assert [(r["check"], r["status"]) for r in printed["results"]] == [(r.check, r.status) for r in report.results]
    assert [r["check"] for r in printed["results"]] == only


def test_run_of_two_llms_dry_run_prints_the_estimates_ct_run_returns(capsys: pytest.CaptureFixture[str]) -> None:
    llms = ["openai:model-a", "openai:model-b"]
    args = ["run", EXP, *(a for m in llms for a in ("--llm", m)), "--base-url", "http://127.0.0.1:9/v1",
            "--allow-unpriced", "--subjects", "2", "-o", "unused", "--dry-run"]
    assert run_cli(args) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    returned = ct.run(EXP, llm=llms, output="unused", subjects=2, dry_run=True, base_url="http://127.0.0.1:9/v1",
                      allow_unpriced=True)
    assert len(printed) == 2 and printed == json.loads(json.dumps(returned, default=str))
    assert printed[0]["calls"] == printed[1]["calls"] > 0
    with pytest.raises(ct.InputError, match="two different models to pair"):
        ct.run(EXP, llm=[llms[0], llms[0]], output="unused", dry_run=True, allow_unpriced=True)


def test_looks_of_a_folder_without_a_sequential_run_is_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ct.InputError, match="holds no sequential run"):
        ct.looks(tmp_path)
    assert run_cli(["looks", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {tmp_path} holds no sequential run")


def test_recover_prints_the_summary_of_the_study_ct_recover_returns(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--subjects", "6", "--reps", "2", "--trials", "48", "--seed", "2", "--workers", "1"]
    assert run_cli(["recover", "--model", "rw", *args, "--json", "-o", str(tmp_path / "cli")]) == 0
    printed = _json(capsys)
    study = ct.recover("rw", subjects=6, reps=2, trials=48, seed=2, workers=1, output=tmp_path / "api")
    returned = json.loads(json.dumps(study.to_dict(), default=str))
    assert printed["report"] == str(tmp_path / "cli" / "report.html") and (tmp_path / "api" / "report.html").exists()
    assert printed["verdict"] == returned["verdict"] and printed["designs"] == returned["designs"]
    assert_close(printed["parameters"], returned["parameters"], rtol=1e-9, where="recovery summary")
    written = pd.read_parquet(tmp_path / "cli" / "results.parquet")
    assert_close(written["estimate"].tolist(), study.table["estimate"].tolist(), rtol=1e-9, where="estimates")
    # the command line's spelling of the options gives the same study
    again = ct.recover("rw", subjects="6", reps=2, trials="48", seed=2, workers=1, design=[])
    assert_close(again.table["estimate"].tolist(), study.table["estimate"].tolist(), rtol=1e-9, where="spelling")


def test_plan_forms_prints_the_plan_ct_plan_forms_returns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.simulation import simulate

    table = simulate(EXP, "rw-pm", 16, 5, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                     forms=FormDesign(tuple(range(4)), {"alpha_pos": 0.5}))
    pilot = tmp_path / "pilot.parquet"
    table.to_parquet(pilot)
    args = ["plan", EXP, "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--forms", "1,2,4", "--pilot",
            str(pilot), "--base", "alpha_pos=0.5", "--base", "alpha_neg=0.5", "--json"]
    assert run_cli(args) == 0
    printed = _json(capsys)
    returned = ct.plan_forms(EXP, forms=[1, 2, 4], model="rw-pm", effect={"optimism_bias": 0.2}, pilot=pilot,
                             base={"alpha_pos": 0.5, "alpha_neg": 0.5})
    assert_close(printed, json.loads(json.dumps(returned, default=str)), rtol=1e-9, where="forms plan")
    assert [row["forms"] for row in printed["designs"]] == [2, 4] and "one_form" in printed
    with pytest.raises(ct.FormError, match="needs `model` and `effect`"):
        ct.plan_forms(EXP, forms="1,2", model=None, effect=None)
