"""The public API (``import cogtestbed as ct``): lazy names, the functions the command line is a
thin layer over, ``ct.plan`` giving the command line's ``plan.json``, and the README workflow
(simulate → MLE → hierarchical → plot in at most 15 lines of ``ct.`` names)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerance import assert_close

import cogtestbed as ct

ROOT = Path(__file__).resolve().parents[1]
EXP = "instrumental-learning"

#: The README's Python example (README.md, "From Python"): simulate → MLE → hierarchical → plot.
WORKFLOW = '''\
import cogtestbed as ct

trials = ct.simulate("instrumental-learning", "rw-pm", subjects=12, seed=1,
                     params={"alpha_pos": [0.2, 0.5, 0.8] * 4, "alpha_neg": 0.3, "beta": 5.0})
mle = ct.fit("instrumental-learning", trials, model="rw-pm")                    # one row per subject
post = ct.fit("instrumental-learning", trials, model="rw-pm", method="hierarchical", draws=1000, chains=2)
print(post.diagnostics.report())                                                 # R-hat, ESS, divergences
assert post.diagnostics.ok           # R-hat <= 1.01, ESS >= 100 a chain, no divergence (200 draws were too few)
figures = ct.plot_recovery(trials, mle, post)                                    # true vs estimated
'''


def test_the_package_imports_nothing_heavy_and_lists_its_names() -> None:
    code = ("import sys, cogtestbed as ct; print(sorted(m for m in ('numpy', 'pandas', 'pydantic') "
            "if m in sys.modules)); print(all(n in dir(ct) for n in ct.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]
    assert {"simulate", "fit", "recover", "plan", "check", "run", "experiments"} <= set(ct.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ct.nope  # noqa: B018


def test_experiments_stays_the_function_after_the_spec_package_is_imported() -> None:
    import cogtestbed.experiments.spec  # noqa: F401 - the subpackage of the same name, imported

    names = ct.experiments()
    assert EXP in names and "spec" not in names
    assert ct.get_experiment(EXP).name == EXP
    with pytest.raises(ct.UnknownNameError, match="instrumental-learning"):
        ct.get_experiment("no-such-experiment")


def test_simulate_fit_metrics_and_the_recovery_plot(tmp_path: Path) -> None:
    truth = [0.2, 0.5, 0.8] * 4
    trials = ct.simulate(EXP, "rw-pm", subjects=12, seed=1, params={"alpha_pos": truth, "alpha_neg": 0.3, "beta": 5})
    assert trials["subject"].nunique() == 12 and len(trials) == 12 * 96
    assert ct.true_parameters(trials)["alpha_pos"].tolist() == truth
    mle = ct.fit(EXP, trials, model="rw-pm")
    assert list(mle["subject"]) == list(range(12)) and mle["converged"].all()
    assert np.corrcoef(mle["alpha_pos"], truth)[0, 1] > 0.3
    result = ct.metrics(EXP, trials)
    assert result["experiment"] == EXP and len(result["per_run"]) == 12 and result["n_invalid"] == 0
    (png,) = ct.plot_recovery(trials, mle, directory=tmp_path).paths
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_simulate_writes_the_clis_file_and_refuses_bad_input_with_typed_errors(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    trials = ct.simulate(EXP, "rw", subjects=2, seed=3, output=out, design={"visits_per_casino": 6})
    assert out.exists() and len(trials) == 2 * 24
    with pytest.raises(ct.OutputError, match="exists"):
        ct.simulate(EXP, "rw", subjects=2, seed=3, output=out)
    with pytest.raises(ct.ParameterError, match="alpha"):
        ct.simulate(EXP, "rw", subjects=2, params={"alpha": 2.0})
    with pytest.raises(ct.UnknownNameError):
        ct.fit(EXP, trials, model="no-such-model")


def test_a_recovery_study_has_a_table_a_verdict_and_plots(tmp_path: Path) -> None:
    study = ct.recover("rw", subjects=6, reps=2, trials=48, seed=2, workers=1)
    assert set(study.table["parameter"]) == {"alpha", "beta"} and len(study.table) == 2 * 6 * 2
    assert "alpha" in study.verdict
    pngs = study.plot(tmp_path).paths
    assert pngs and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_check_returns_the_report_without_raising() -> None:
    report = ct.check(EXP, checks=["spec_declaration", "tables_module", "prior_bounds"])
    assert report.passed and [r.check for r in report.results] == ["spec_declaration", "tables_module",
                                                                    "prior_bounds"]
    assert "tables_module" in report.table()


def test_prior_draws_respect_the_upper_bound_of_a_log_parameter() -> None:
    """``Parameter.positive(..., upper=100)`` maps the real line past 100: the samplers clip."""
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.parameters import Parameter, ParameterSet

    k = Parameter.positive("k", 1.0, upper=100.0, prior_sd=3.0)
    assert float(k.to_constrained(6.0)) > 100  # the transform itself leaves the bounds
    pop, subj = sample_hierarchical_prior(ParameterSet([k], "test"), 5000, np.random.default_rng(0))
    assert subj["k"].max() <= 100.0 and subj["k"].min() >= 0.0 and 0 <= pop["k_pop"] <= 100


def _without_timings(payload: dict) -> dict:
    """The plan without its timings and the versions of the packages the process had loaded."""
    return {k: ({kk: vv for kk, vv in v.items() if "seconds" not in kk and kk != "versions"}
                if isinstance(v, dict) else v) for k, v in payload.items() if k != "versions"}


def test_ct_plan_gives_the_clis_plan_json(tmp_path: Path) -> None:
    """``ct.plan`` and ``cogtestbed plan`` (run in process: tests/test_cli_process.py starts the real entry
    point) give the same plan file for the same request."""
    from cogtestbed.cli import run_cli

    args = {"model": "rw-pm", "effect": {"optimism_bias": 0.6}, "llm": "openai:gpt-4o-mini", "subjects": (6, 10),
            "trials": [48], "mc_se": 0.2, "seed": 3, "workers": 1}
    plan = ct.plan(EXP, **args)
    files = plan.save(tmp_path / "api")
    assert plan.chosen["power"] >= 0.8 and len(plan.frontier) >= 1 and plan.sequential is None
    assert json.loads(files["plan"].read_text()) == json.loads(json.dumps(plan.to_dict(), default=str))
    assert run_cli(["plan", EXP, "--model", "rw-pm", "--effect", "optimism_bias=0.6", "--llm", "openai:gpt-4o-mini",
                    "--subjects", "6:10", "--trials", "48", "--mc-se", "0.2", "--seed", "3", "--workers", "1",
                    "-o", str(tmp_path / "cli"), "--json"]) == 0
    from_cli = json.loads((tmp_path / "cli" / "plan.json").read_text())
    assert_close(_without_timings(from_cli), _without_timings(json.loads(files["plan"].read_text())))


@pytest.mark.slow
def test_the_readme_workflow_in_at_most_15_lines(tmp_path: Path) -> None:
    lines = [ln for ln in WORKFLOW.splitlines() if ln.strip()]
    assert len(lines) <= 15
    names: dict = {}
    exec(compile(WORKFLOW, "README workflow", "exec"), names)  # noqa: S102 - the documented example, run as written
    assert len(names["mle"]) == 12 and names["post"].idata.posterior["alpha_pos_pop"].size == 2000
    assert names["post"].diagnostics.ok  # the example shows a fit that passes its own diagnostics (issue 72)
    assert names["figures"].paths[0].read_bytes()[:4] == b"\x89PNG"
    readme = (ROOT / "README.md").read_text()
    assert WORKFLOW.split("\n")[2] in readme and WORKFLOW.split("\n")[5] in readme  # this very example


def test_every_ct_name_the_docs_use_exists_with_the_keywords_they_name() -> None:
    """docs/api.md and the README name only ``ct.`` attributes that exist, and each signature the API
    table shows (``ct.fn(a, *, b, c=...)``) names only that function's parameters."""
    import inspect
    import re

    for page in ("docs/api.md", "README.md"):
        text = (ROOT / page).read_text()
        missing = sorted({n for n in re.findall(r"\bct\.([A-Za-z_]+)", text) if not hasattr(ct, n)})
        assert missing == [], f"{page} names ct.{missing}"
    table = (ROOT / "docs" / "api.md").read_text()
    shown = re.findall(r"`ct\.([a-z_]+)\(([^`]*)\)`", table)
    assert len(shown) >= 15
    for name, args in shown:
        params = inspect.signature(getattr(ct, name)).parameters
        named = {a.split("=")[0].strip() for a in args.replace("\\|", "|").split(",")}
        named = {a for a in named if re.fullmatch(r"[a-z_]+", a)}
        assert named <= set(params), f"ct.{name}: the docs name {sorted(named - set(params))}, not parameters"
