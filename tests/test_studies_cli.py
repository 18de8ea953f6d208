"""Every study kind from the CLI, for the collider and a CogBench task, at tiny sizes; one-line
exit-2 errors for nonsense combinations; the same tables in-process and on a process pool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerance import assert_close, assert_frames_close
from versions import assert_exact_versions

from cogtestbed.cli import main
from cogtestbed.studies.driver import run_study, study_spec


def _cli(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Run ``cogtestbed ARGS`` through the console entry point: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["cogtestbed", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _json(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> dict:
    code, out, err = _cli([*args, "--json", "--workers", "1"], capsys, monkeypatch)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- collider
def test_collider_recover_through_the_generator(capsys, monkeypatch, tmp_path: Path) -> None:
    out = _json(["recover", "collider", "--model", "cbn-3p", "--subjects", "3", "--reps", "1",
                 "--sampler", "uniform", "--param", "noise_sd=0.05", "-o", str(tmp_path / "r")], capsys, monkeypatch)
    assert set(out["parameters"]) == {"b", "m", "p_c"}
    assert out["parameters"]["b"]["rmse"] < 0.1
    assert "uniform draws" in out["verdict"]
    assert {p.name for p in (tmp_path / "r").iterdir()} >= {"results.parquet", "summary.json", "report.html"}
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.endswith(".tmp")]
    assert_exact_versions(json.loads((tmp_path / "r" / "summary.json").read_text())["versions"])


def test_collider_model_recovery_and_parameter_power(capsys, monkeypatch) -> None:
    out = _json(["model-recovery", "collider", "--model", "cbn-3p", "--model", "cbn-4p", "--subjects", "1",
                 "--reps", "1"], capsys, monkeypatch)
    assert np.asarray(out["confusion"]["bic"]["counts"]).sum() == 2
    out = _json(["power", "cbn-3p", "-e", "collider", "--effect", "b=0.1", "--subjects", "2", "--sims", "1"],
                capsys, monkeypatch)
    assert out["power"]["cells"][0]["sims"] == 1 and "two-sided" in out["power"]["test"]


def test_collider_metric_validity_and_metric_power(capsys, monkeypatch) -> None:
    out = _json(["metric-validity", "collider", "--metric", "lad", "--agent", "cbn:m1=0.7,m2=0.7,noise_sd=0.05",
                 "--parameter", "b", "--values", "0.1,0.3,0.5", "--runs", "2", "--reps", "1",
                 "--direction", "decreasing"],
                capsys, monkeypatch)
    cell = out["metric_validity"]["2runs"]
    assert cell["passed"] is True and cell["by_value"][0]["mean"] > cell["by_value"][1]["mean"]
    out = _json(["power", "collider", "--metric", "ea", "--compare", "weak-ea:w=0.0", "weak-ea:w=1.0",
                 "--runs", "3", "--sims", "1"], capsys, monkeypatch)
    assert out["metric_power"]["test"] == "Welch t-test on per-unit values"


@pytest.mark.timeout(600)
def test_collider_sbc_tiny(capsys, monkeypatch) -> None:
    out = _json(["sbc", "collider", "--model", "cbn-3p", "--subjects", "2", "--reps", "1", "--draws", "100",
                 "--chains", "1", "--backend", "pymc", "--design", "content=rw17", "--design", "scope=cell"],
                capsys, monkeypatch)
    assert {"b_mu", "m_sigma", "p_c[0]", "kappa", "pi[0]", "pi[1]"} <= set(out["sbc"])


# ----------------------------------------------------------------------------- a CogBench task
def test_instrumental_every_kind_from_the_cli(capsys, monkeypatch) -> None:
    exp = ["instrumental-learning"]
    out = _json(["recover", *exp, "--model", "rw-pm", "--subjects", "4", "--reps", "1", "--trials", "192"],
                capsys, monkeypatch)
    assert "optimism_bias" in out["parameters"]
    out = _json(["model-recovery", *exp, "--model", "rw", "--model", "rw-pm", "--subjects", "3", "--reps", "1"],
                capsys, monkeypatch)
    assert out["confusion"]["aic"]["models"] == ["rw", "rw-pm"]
    out = _json(["power", "rw-pm", "-e", *exp, "--effect", "optimism_bias=0", "--subjects", "4", "--sims", "2"],
                capsys, monkeypatch)
    assert "type-i error rate" in out["verdict"].lower()
    out = _json(["sbc", *exp, "--model", "rw", "--subjects", "3", "--reps", "1", "--draws", "40", "--chains", "1"],
                capsys, monkeypatch)
    assert {"alpha_mu", "beta_sigma", "alpha[0]"} <= set(out["sbc"])
    out = _json(["validity", "instrumental-learning", "--metric", "learning_rate", "--agent", "rw:beta=5",
                 "--parameter", "alpha", "--values", "0.1,0.4,0.7", "--runs", "4", "--reps", "1"], capsys, monkeypatch)
    assert out["metric_validity"]["4runs"]["spearman"] > 0
    out = _json(["power", "instrumental-learning", "--metric", "optimism_bias", "--compare",
                 "rw-pm:alpha_pos=0.5,alpha_neg=0.3", "rw-pm:alpha_pos=0.3,alpha_neg=0.3", "--runs", "3,6",
                 "--sims", "2"], capsys, monkeypatch)
    assert [c["runs"] for c in out["metric_power"]["cells"]] == [3, 6]


def test_two_step_metric_power_uses_the_pooled_z_test(capsys, monkeypatch) -> None:
    out = _json(["power", "two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0.3", "hybrid:w=0.7",
                 "--runs", "10,20", "--sims", "2"], capsys, monkeypatch)
    assert out["metric_power"]["test"] == "z-test on two pooled estimates"
    assert "fixed agent settings" in out["verdict"]


def test_declared_study_from_the_cli(capsys, monkeypatch) -> None:
    code, out, _ = _cli(["study", "restless-bandit", "--json"], capsys, monkeypatch)
    names = [s["study"] for s in json.loads(out)["studies"]]
    assert code == 0 and "metric-power" in names and "metric-validity:0" in names
    out_ = _json(["study", "restless-bandit", "metric-validity:0", "--reps", "1"], capsys, monkeypatch)
    assert out_["metric_validity"]["10runs"]["direction"] == "decreasing"


# ----------------------------------------------------------------------------- one-line errors
NONSENSE = {
    "model recovery of one model": ["model-recovery", "instrumental-learning", "--model", "rw"],
    "--trials without a trials field": ["recover", "collider", "--model", "cbn-3p", "--trials", "100"],
    "--metric not a headline metric": ["power", "two-step", "--metric", "reward_effect", "--compare", "hybrid:w=0.3",
                                       "hybrid:w=0.7"],
    "unknown experiment": ["recover", "no-such-task", "--model", "rw"],
    "unknown model": ["recover", "collider", "--model", "no-such-model"],
    "a sweep over one value": ["validity", "two-step", "--metric", "model_basedness", "--agent", "hybrid",
                               "--parameter", "w", "--values", "0.5"],
    "unknown agent": ["power", "two-step", "--metric", "model_basedness", "--compare", "nobody:w=1", "nobody:w=2"],
    "unknown agent parameter": ["validity", "two-step", "--metric", "model_basedness", "--agent", "hybrid:nope=1",
                                "--parameter", "w", "--values", "0,1"],
    "sweep of a non-parameter": ["validity", "two-step", "--metric", "model_basedness", "--agent", "hybrid",
                                 "--parameter", "nope", "--values", "0,1"],
    "two agents compared": ["power", "two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0.3",
                            "model-free:alpha=0.5"],
    "effect and metric at once": ["power", "two-step", "--metric", "model_basedness", "--effect", "w=0.1"],
    "runs on a subject-pooled experiment": ["recover", "instrumental-learning", "--model", "rw", "--runs", "5"],
    "trials off the design's step": ["recover", "instrumental-learning", "--model", "rw", "--trials", "97"],
    "unknown effect": ["power", "rw-pm", "--effect", "nonsense=0.1"],
    "effect without a size": ["power", "rw-pm", "--effect", "optimism_bias"],
    "unknown declared study": ["study", "two-step", "no-such-study"],
    "test power without an agent": ["power", "two-step", "--test", "stay_test"],
    "unknown design field": ["recover", "--model", "rw", "--design", "nope=1"],
    "bad sampler": ["recover", "--model", "rw", "--sampler", "sometimes"],
}


@pytest.mark.parametrize("args", list(NONSENSE.values()), ids=list(NONSENSE))
def test_nonsense_exits_2_with_one_line(args: list[str], capsys, monkeypatch) -> None:
    code, out, err = _cli(args, capsys, monkeypatch)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:"), err


def test_output_path_is_checked_before_computing(capsys, monkeypatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = _cli(["recover", "--model", "rw", "--reps", "100000", "-o", str(blocker)], capsys, monkeypatch)
    assert code == 2 and "not a folder" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- driver properties
def test_pool_and_in_process_give_the_same_tables() -> None:
    """Within the tolerance of values computed in other processes (a worker may load a kernel from the
    disk cache)."""
    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                     compare=({"w": 0.2}, {"w": 0.8}), runs=(5, 10), reps=3, seed=4)
    assert_frames_close(run_study(spec, workers=1).table, run_study(spec, workers=2).table)
    rec = study_spec(kind="recovery", experiment="two-step", models=("model-free",), subjects=(2,), runs=(3,),
                    reps=2, seed=4)
    one, two = run_study(rec, workers=1), run_study(rec, workers=2)
    assert_frames_close(one.table, two.table)
    # NaN-safe: r is NaN (undefined) below the minimum number of recovery points
    assert_close(*(json.loads(json.dumps(r.summary, sort_keys=True)) for r in (one, two)))
    assert set(one.table["n_trials"]) == {60}
