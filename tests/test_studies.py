"""Studies: recovery, model recovery, power, SBC; the same results locally, on a pool and on Dask;
CLI forms of the issue; the HTML report opened in a real headless browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tolerance import assert_frames_close
from typer.testing import CliRunner
from versions import assert_exact_versions

from cogtestbed.cli import app
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import StudySpec, run_study, study_spec
from cogtestbed.studies.report import write_study
from cogtestbed.studies.study_data import design_for_trials

EXP = "instrumental-learning"


def _spec(**kw: object) -> StudySpec:
    base: dict[str, object] = {"kind": "recovery", "experiment": EXP, "models": ("rw-pm",),
                               "subjects": (6,), "reps": 3, "seed": 7}
    base.update(kw)
    return study_spec(**base)  # type: ignore[arg-type]


def test_design_for_trials_maps_to_the_scaling_field() -> None:
    exp = get_experiment(EXP)
    assert design_for_trials(exp, 192, {}).visits_per_casino == 48
    assert design_for_trials(exp, None, {}).n_trials == 96
    with pytest.raises(ValueError, match="cannot make one run"):
        design_for_trials(exp, 97, {})


def test_recovery_mle_summary_and_fixed_parameters() -> None:
    res = run_study(_spec(models=("rw",), fixed={"beta": 5.0}, sampler="uniform"), workers=1)
    params = res.summary["6x96"]["parameters"]
    assert set(params) == {"alpha"}
    assert set(params["alpha"]) >= {"r", "bias", "rmse"}
    assert len(res.table) == 3 * 6
    assert "recovery" in res.verdict.lower()


def test_recovery_has_contrast_rows_and_log_scale_beta() -> None:
    res = run_study(_spec(), workers=1)
    params = res.summary["6x96"]["parameters"]
    assert set(params) == {"alpha_pos", "alpha_neg", "beta", "optimism_bias"}
    assert params["beta"]["scale"] == "log"
    t = res.table
    wide = t.pivot_table(index=["rep", "subject"], columns="parameter", values="true")
    np.testing.assert_allclose(wide["optimism_bias"], wide["alpha_pos"] - wide["alpha_neg"])


def test_local_pool_and_dask_give_the_same_results() -> None:
    """The same tables in-process, on a pool and on Dask, within the tolerance of values computed in
    other processes (a worker may load a kernel from the disk cache).  The Dask cluster's two workers are
    threads of this process (Dask's chunking, submission and gathering); tests/test_dask_processes.py runs
    the same comparison on a scheduler and workers in processes of their own."""
    distributed = pytest.importorskip("distributed")
    spec = _spec(reps=4, subjects=(5,))
    serial = run_study(spec, workers=1).table
    pool = run_study(spec, workers=2).table
    assert_frames_close(serial, pool)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        on_dask = run_study(spec, dask=client.scheduler.address).table
    assert_frames_close(serial, on_dask)


def test_model_recovery_confusion_rows_sum_to_one() -> None:
    res = run_study(_spec(kind="model-recovery", models=("rw", "rw-pm"), reps=2), workers=1)
    for crit in ("aic", "bic"):
        probs = np.asarray(res.summary[crit]["probabilities"])
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
        assert probs.shape == (2, 2)


def test_power_grid_and_mc_error() -> None:
    res = run_study(_spec(kind="power", effect="optimism_bias", effect_size=0.3,
                          subjects=(4, 8), trials=(96, 192), reps=3), workers=1)
    cells = pd.DataFrame(res.summary["cells"])
    assert len(cells) == 4 and set(cells["n_trials"]) == {96, 192}
    assert ((cells["power"] >= 0) & (cells["power"] <= 1)).all()
    p = cells["power"].to_numpy()
    np.testing.assert_allclose(cells["mc_se"], np.sqrt(p * (1 - p) / 3))


def test_power_rejects_unknown_effect() -> None:
    with pytest.raises(ValueError, match="unknown effect"):
        run_study(_spec(kind="power", effect="nonsense", effect_size=0.1, reps=1), workers=1)


def test_hierarchical_recovery_and_sbc_small() -> None:
    # both studies fit rw-pm to 5 subjects: one nutpie compilation (most of a hierarchical fit's cost)
    # serves the recovery fit and both SBC fits; the summaries' keys and ranges are what is asserted
    rec = run_study(_spec(method="hierarchical", reps=1, subjects=(5,), draws=100, tune=100,
                          chains=2), workers=1)
    params = rec.summary["5x96"]["parameters"]
    assert "coverage90" in params["alpha_pos"] and "coverage50" in params["beta"]
    sbc = run_study(_spec(kind="sbc", method="hierarchical", reps=2,
                          subjects=(5,), draws=100, tune=100, chains=2), workers=1)
    assert {"alpha_pos_mu", "alpha_pos_sigma", "beta_mu", "alpha_neg[0]"} <= set(sbc.summary)
    assert all(0 <= v["p_value"] <= 1 for v in sbc.summary.values())


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_html_report_renders_in_headless_browser(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium cannot be installed here (.ci/run installs it on CI)")
    res = run_study(_spec(reps=2), workers=1)
    files = write_study(res, tmp_path)
    assert (tmp_path / "results.parquet").exists()
    assert pd.read_parquet(tmp_path / "results.parquet").shape[0] == len(res.table)
    report = files["report"]
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "Parameter recovery of rw-pm" in dom
    assert dom.count("<img") == 2 and "data:image/png;base64," in dom
    assert "alpha_pos" in dom and "<table" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*base, f"--screenshot={shot}", "--window-size=1200,2400", report.as_uri()],
                   capture_output=True, timeout=120, check=True)
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] > 1000
    # The embedded plots put many non-white pixels on the page (a blank page would not).
    assert (pixels[..., :3].mean(axis=-1) < 0.9).mean() > 0.02


runner = CliRunner()


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_cli_recover_json(tmp_path: Path) -> None:
    out = _json(["recover", EXP, "--model", "rw-pm", "--subjects", "5", "--reps", "2",
                 "--method", "mle", "--seed", "1", "--json", "--workers", "1", "-o", str(tmp_path)])
    assert set(out["parameters"]["alpha_pos"]) >= {"r", "bias", "rmse"}
    assert out["seconds"] > 0 and (tmp_path / "report.html").exists()


def test_cli_model_recovery_and_power_json() -> None:
    out = _json(["model-recovery", EXP, "--model", "rw", "--model", "rw-pm", "--subjects", "4",
                 "--reps", "2", "--json", "--workers", "1"])
    assert out["confusion"]["aic"]["models"] == ["rw", "rw-pm"]
    out = _json(["power", "rw-pm", "--experiment", EXP, "--effect", "optimism_bias=0.2",
                 "--subjects", "4,8", "--trials", "96,192", "--sims", "2", "--json",
                 "--workers", "1"])
    assert len(out["power"]["cells"]) == 4


def test_cli_fit_hierarchical_writes_netcdf(tmp_path: Path, cogbench_dir: Path) -> None:
    import arviz as az

    human = cogbench_dir / "InstrumentalLearning" / "human.csv"
    table = get_experiment(EXP).importer("cogbench").load(human)
    small = tmp_path / "small.parquet"
    from cogtestbed.registry import write_trials

    write_trials(table[table["subject"] < 5].reset_index(drop=True), small, {"source": "test"})
    out = _json(["fit", "rw-pm", str(small), "--method", "hierarchical", "-o", str(tmp_path / "f"),
                 "--draws", "100", "--chains", "2", "--json"])
    assert out["n_subjects"] == 5
    diag = out["diagnostics"]  # sampled once: no --max-draws (the doubling is test_hierarchical's)
    assert diag["draws"] == 100
    idata = az.from_netcdf(tmp_path / "f" / "posterior.nc")
    assert "alpha_pos_pop" in idata.posterior
    assert_exact_versions({k.removeprefix("version_"): v for k, v in idata.posterior.attrs.items()
                           if k.startswith("version_")})
    assert "optimism_bias" in out["population"]
    assert (tmp_path / "f" / "summary.json").exists()


def test_cli_bad_effect_is_a_clear_error() -> None:
    result = runner.invoke(app, ["power", "rw-pm", "--effect", "optimism_bias", "--sims", "1"])
    assert result.exit_code != 0


# ----------------------------------------------------------------------------- full studies (slow)
@pytest.mark.slow
def test_slow_rw_alpha_recovery_at_cogbench_design() -> None:
    spec = study_spec(kind="recovery", experiment=EXP, models=("rw",), subjects=(50,), reps=20,
                     seed=2, sampler="uniform", ranges={"alpha": (0.05, 0.95)}, fixed={"beta": 5.0})
    assert run_study(spec).summary["50x96"]["parameters"]["alpha"]["r"] >= 0.8


@pytest.mark.slow
def test_slow_hierarchical_coverage_and_sbc() -> None:
    spec = study_spec(kind="recovery", experiment=EXP, models=("rw-pm",), method="hierarchical",
                     subjects=(20,), reps=20, seed=11, draws=500, tune=500, chains=2)
    for name, v in run_study(spec, workers=1).summary["20x96"]["parameters"].items():
        if "coverage90" in v:
            assert 0.85 <= v["coverage90"] <= 0.95, name
    sbc = run_study(study_spec(kind="sbc", experiment=EXP, models=("rw-pm",), method="hierarchical",
                              subjects=(10,), reps=60, seed=12, draws=250, tune=500, chains=2),
                    workers=1)
    assert min(v["p_value"] for v in sbc.summary.values()) > 0.01
