"""``plan --fit hierarchical`` (issue 40 item 6): the chosen design re-measured with the hierarchical fit,
and the recovery warning saying whether that fit (or ``--lapse-fit``) removes the per-subject MLE's bias."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cogtestbed.registry import get_experiment
from cogtestbed.validation.design.fitcheck import population_effect, summarise
from cogtestbed.validation.design.plan_report import recovery_warnings
from cogtestbed.validation.studies.driver import study_spec


def _spec(**extra: object) -> object:
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, **extra)


def test_population_effect_is_the_contrast_at_the_population_medians():
    model = get_experiment("instrumental-learning").model("rw-pm")
    assert population_effect(_spec(), model) == pytest.approx(0.2, abs=1e-12)
    # a base whose contrast is not zero: the effect moves it by 0.2
    spec = _spec(base={"alpha_pos": 0.5, "alpha_neg": 0.3})
    assert population_effect(spec, model) == pytest.approx(0.4, abs=1e-12)


def test_summarise_gives_power_bias_and_coverage_with_their_mc_errors():
    rows = pd.DataFrame({"estimate": [0.1, 0.2, 0.3, np.nan], "lo": [0.0, 0.1, 0.25, np.nan],
                         "hi": [0.2, 0.3, 0.35, np.nan], "test": ["95% population posterior interval excludes 0"] * 4})
    out = summarise(rows, hits=3, n=4, estimand=0.2, level=0.05, effect_size=0.2, seconds=1.0)
    assert out["power"] == 0.75 and out["power_mc_se"] == pytest.approx(math.sqrt(0.75 * 0.25 / 4))
    assert out["effect_bias"] == pytest.approx(0.0, abs=1e-12)  # mean of the three estimates, 0.2
    assert out["effect_bias_mc_se"] == pytest.approx(0.1 / math.sqrt(3))
    assert out["coverage"] == pytest.approx(2 / 3) and out["coverage_level"] == pytest.approx(0.95)
    assert out["bias_share"] == pytest.approx(0.0, abs=1e-9) and "not a search" in out["note"]


_REC = {"effect": "optimism_bias", "effect_size": 0.2, "effect_bias": -0.064, "estimand": 0.194, "studies": 178,
        "coverage": 0.93, "coverage_level": 0.95, "lapse_fit": None, "random_lapses": False}


def test_the_warning_names_fit_hierarchical_as_the_way_to_find_out_when_not_measured():
    (w,) = recovery_warnings(_REC)
    assert "biased by 32% of the effect" in w and "stays a valid test" in w
    assert "`plan ... --fit hierarchical` re-measures this design" in w and "--lapse-fit" not in w


def test_the_warning_says_the_hierarchical_fit_removes_the_bias_with_the_measured_figure():
    check = {"effect_bias": 0.004, "effect_bias_mc_se": 0.01, "studies": 20, "bias_share": 0.02, "coverage": 0.95,
             "power": 0.85}
    (w,) = recovery_warnings(_REC, check)
    assert "the hierarchical fit removes it at this design" in w and "bias +0.004 ± 0.01 (MC SE), 2% of the effect" in w
    assert "--method hierarchical" in w and "power 0.85" in w
    check = {**check, "effect_bias": -0.05, "bias_share": 0.25}  # 0.05 - 2 x 0.01 > 10% of 0.2
    (w,) = recovery_warnings(_REC, check)
    assert "does not remove it at this design either" in w and "more trials per subject" in w
    check = {**check, "effect_bias": -0.036, "effect_bias_mc_se": 0.027, "bias_share": 0.18}  # 2 studies' figure
    (w,) = recovery_warnings(_REC, check)
    assert "is not settled" in w and "more --fit-sims would tell" in w


def test_the_warning_names_lapse_fit_where_answers_lapse_to_random_choices_and_no_lapse_term_is_fitted():
    (w,) = recovery_warnings({**_REC, "random_lapses": True})
    assert "`plan --lapse-fit fit`" in w
    (w,) = recovery_warnings({**_REC, "random_lapses": True, "lapse_fit": {"kind": "fit"}})
    assert "--lapse-fit" not in w and "with a lapse term" in w


@pytest.mark.parametrize(("extra", "message"), [
    (["--fit", "bayes"], "--fit must be one of mle, hierarchical"),
    (["--fit-sims", "5"], "--fit-sims sets how many studies --fit hierarchical fits"),
    (["--fit", "hierarchical", "--fit-sims", "1"], "--fit-sims must be at least 2"),
    (["--fit", "hierarchical", "--looks", "3"], "--fit hierarchical verifies a fixed design"),
    (["--fit", "hierarchical", "--precision", "optimism_bias=0.5"], "drop one of them"),
])
def test_fit_options_that_cannot_be_planned_are_refused_in_one_line(capsys, extra, message):
    from cogtestbed.cli import run_cli

    effect = [] if "--precision" in extra else ["--effect", "optimism_bias=0.4"]
    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", *effect, "--llm", "openai:gpt-4o-mini",
                    *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err


def test_fit_hierarchical_of_a_metric_target_is_refused(capsys):
    from cogtestbed.cli import run_cli

    code = run_cli(["plan", "two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0.3", "hybrid:w=0.6",
                    "--llm", "openai:gpt-4o", "--fit", "hierarchical"])
    err = capsys.readouterr().err
    assert code == 2 and "--fit hierarchical plans a model target's fit" in " ".join(err.split())


@pytest.mark.slow
def test_plan_fit_hierarchical_verifies_the_chosen_design(tmp_path):
    """A tiny plan with --fit hierarchical: the verification's figures in plan.json, report.md and the
    warnings (each study a real PyMC fit)."""
    import json

    from cogtestbed.cli import run_cli

    out = tmp_path / "plan"
    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.4",
                    "--llm", "openai:gpt-4o-mini", "--subjects", "10:12", "--trials", "96", "--mc-se", "0.1",
                    "--workers", "1", "--fit", "hierarchical", "--fit-sims", "3", "-o", str(out)])
    assert code == 0
    payload = json.loads((out / "plan.json").read_text())
    check = payload["fit_check"]
    assert check["studies"] == 3 and 0.0 <= check["power"] <= 1.0 and check["estimand"] == pytest.approx(0.4)
    assert check["effect_bias"] is not None and abs(check["effect_bias"]) < 0.4
    assert "Hierarchical fit at the chosen design" in (out / "report.md").read_text()
