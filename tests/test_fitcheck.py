"""``plan --fit hierarchical`` (issue 40 item 6): the chosen design re-measured with the hierarchical fit,
and the recovery warning saying whether that fit (or ``--lapse-fit``) removes the per-subject MLE's bias."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cogtestbed.planning.fitcheck import population_effect, summarise
from cogtestbed.planning.plan_report import recovery_warnings
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec


def _spec(**extra: object) -> object:
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, **extra)


def test_population_effect_is_the_contrast_at_the_population_medians():
    model = get_experiment("instrumental-learning").model("rw-pm")
    assert population_effect(_spec(), model) == pytest.approx(0.2, abs=1e-12)
    # a base whose contrast is not zero: the test compares with the base's 0.2, so the estimand is
    # the effect's 0.2, not the 0.4 it moves the contrast to (a one-sample test against 0 read 0.4)
    spec = _spec(base={"alpha_pos": 0.5, "alpha_neg": 0.3})
    assert population_effect(spec, model) == pytest.approx(0.2, abs=1e-12)


def test_summarise_gives_power_bias_and_coverage_with_their_mc_errors():
    rows = pd.DataFrame({"estimate": [0.1, 0.2, 0.3, np.nan], "lo": [0.0, 0.1, 0.25, np.nan],
                         "hi": [0.2, 0.3, 0.35, np.nan], "test": ["95% population posterior interval excludes 0"] * 4})
    out = summarise(rows, hits=3, n=4, estimand=0.2, level=0.05, effect_size=0.2, seconds=1.0)
    assert out["power"] == 0.75 and out["power_mc_se"] == pytest.approx(math.sqrt(0.75 * 0.25 / 4))
    assert out["effect_bias"] == pytest.approx(0.0, abs=1e-12)  # mean of the three estimates, 0.2
    assert out["effect_bias_mc_se"] == pytest.approx(0.1 / math.sqrt(3))
    assert out["coverage"] == pytest.approx(2 / 3) and out["coverage_level"] == pytest.approx(0.95)
    assert out["bias_share"] == pytest.approx(0.0, abs=1e-9) and out["draws"] == 500


def test_step_size_is_the_normal_step_in_sqrt_n_bounded_and_bracketed():
    """From 26 subjects at 20 studies, 80 % target, alpha .05: the normal approximation's step in sqrt(N)
    (sqrt(N') = sqrt(N) (z_.025 + z_.8) / (z_.025 + Phi^-1(power))), at most x2 / x1/2, never onto or past
    a size that brackets the answer (a step past it bisects the bracket); no step within one binomial SE
    above the target."""
    from cogtestbed.planning.fitcheck import step_size

    def step(n: int, power: float, tried: dict[int, float] | None = None) -> int | None:
        return step_size(n, power, 20, 0.8, 0.05, tried or {n: power})

    assert step(26, 0.7) == 34  # ceil(26 x (2.8016 / 2.4844)^2 = 33.06)
    assert step(26, 0.5) == 52 and step(26, 0.0) == 52  # (2.8016 / 1.96)^2 = 2.04, bounded to x2
    assert step(26, 0.95) == 15  # floor(26 x (2.8016 / 3.6049)^2 = 15.7): 0.95 clears 0.8 by > 0.089
    assert step(26, 1.0) == 13  # 20/20 read as 1 - 1/40, bounded to x1/2
    assert step(26, 0.85) is None and step(26, 0.8) is None  # within one SE (0.089) above the target: stop
    assert step(15, 0.6, {26: 0.95, 15: 0.6}) == 25  # ceil(15 x 1.602 = 24.03), below the passing 26
    assert step(16, 0.5, {26: 1.0, 16: 0.5}) == 21  # x2 = 32 overshoots the passing 26: the bracket bisected
    assert step(26, 1.0, {26: 1.0, 20: 0.5}) == 23  # x1/2 = 13 undershoots the failing 20: bisected
    assert step(20, 0.7, {20: 0.7, 21: 0.9}) is None  # adjacent failing and passing sizes: done
    assert step(3, 0.95, {3: 0.95}) is None and step(1990, 0.5, {1990: 0.5}) == 2000  # the limits 3 and 2000
    from cogtestbed.planning.fitcheck import affordable_top

    assert affordable_top(24, 0.48, 0.30) == 15 and affordable_top(24, 0.48, None) == 2000  # $0.02 a subject
    assert affordable_top(24, None, 0.30) == 2000 and affordable_top(24, 0.48, 0.01) == 3


def test_search_sizes_finds_the_smallest_size_reaching_the_target_on_a_known_power_curve():
    """A power curve Phi(delta sqrt(N) - 1.96) whose 80 % point is N = 30, measured as 20 studies'
    share (rounded): from below, above and far below, the search ends at 29-31 within 3 steps."""
    from scipy import stats

    from cogtestbed.planning.fitcheck import MAX_STEPS, choose_size, search_sizes
    from cogtestbed.planning.kinds.power.power_sims import Estimate

    delta = (stats.norm.isf(0.025) + stats.norm.ppf(0.8)) / math.sqrt(30)

    def curve(n: int) -> Estimate:
        return Estimate(round(20 * stats.norm.cdf(delta * math.sqrt(n) - stats.norm.isf(0.025))), 20)

    paths = {start: search_sizes(curve, start, 0.8, 20, 0.05) for start in (20, 30, 45, 8)}
    assert {s: list(t) for s, t in paths.items()} == {20: [20, 29], 30: [30], 45: [45, 27, 31], 8: [8, 16, 29]}
    assert [choose_size(t, 0.8) for t in paths.values()] == [(29, True), (30, True), (31, True), (29, True)]
    assert paths[45][27].rate == 0.75 and paths[45][31].rate == 0.8
    never = search_sizes(lambda n: Estimate(0, 20), 10, 0.8, 20, 0.05)  # no power anywhere: doubling, capped
    assert list(never) == [10, 20, 40, 80][:MAX_STEPS + 1] and choose_size(never, 0.8) == (80, False)
    assert list(search_sizes(lambda n: Estimate(0, 20), 10, 0.8, 20, 0.05, top=30)) == [10, 20, 30]


class _FakeHierarchical:
    """Stands in for the hierarchical power study (each study a PyMC fit in the real plan): power on
    the known curve of 80 % at 12 subjects, estimates 0.6 +- 0.1."""

    def __init__(self, spec: object, workers: int = 1, label: str | None = None) -> None:
        self.spec, self.rows = spec, {}

    def ensure(self, point: object, sims: int) -> object:
        from scipy import stats

        from cogtestbed.planning.kinds.power.power_sims import Estimate

        z = stats.norm.isf(0.025)
        p = stats.norm.cdf((z + stats.norm.ppf(0.8)) * math.sqrt(point.subjects / 12) - z)
        hits = round(sims * p)
        self.rows[point] = pd.DataFrame({"estimate": np.linspace(0.5, 0.7, sims), "lo": 0.3, "hi": 0.9,
                                         "test": "95% population posterior interval excludes 0"})
        return Estimate(hits, sims)

    def table(self, point: object) -> pd.DataFrame:
        return self.rows[point]

    def close(self, abort: bool = False) -> None:
        pass


def test_plan_fit_hierarchical_plans_the_hierarchical_choice_in_every_output(tmp_path, monkeypatch):
    """``ct.plan(fit="hierarchical")`` searches the size with the hierarchical test from the MLE's
    choice and plans its choice: the design, cost and power in plan.json are the hierarchical ones
    (the MLE's beside them), the search's sizes and powers are in fit_check, the terminal, report.md
    and report.html (the fits themselves stubbed here; a real one: the slow test below)."""
    import cogtestbed as ct
    import cogtestbed.planning.fitcheck as fitcheck

    monkeypatch.setattr(fitcheck, "PowerEvaluator", _FakeHierarchical, raising=True)
    result = ct.plan("instrumental-learning", llm="openai:gpt-4o-mini", model="rw-pm", effect="optimism_bias=0.6",
                     subjects="24", trials="48", mc_se=0.2, workers=1, fit="hierarchical", fit_sims=20)
    p = result.to_dict()
    check = p["fit_check"]
    # each size decided by its sequential test (issue 47): 24 passes on 20/20 (lower bound 0.815), 12 (0.80) and
    # 15 (0.88) fail (12 at 40 studies: even 60/60 after 32/40 could not pass; 15 undecided to 60), 19 passes
    # on 38/40
    assert [(r["subjects"], r["studies"]) for r in check["search"]] == [(24, 20), (12, 40), (15, 60), (19, 40)]
    assert check["chosen_size"] == 19 and check["reached"] and check["fits"] == 160
    assert p["chosen"]["subjects"] == 19 and p["power"] == {"rate": 0.95, "mc_se": pytest.approx(0.0345, abs=1e-4),
                                                            "sims": 40}
    assert p["mle_chosen"]["chosen"]["subjects"] == 24 and p["run"]["subjects"] == 19
    assert p["cost"]["calls"] == check["search"][3]["calls"] == p["mle_chosen"]["cost"]["calls"] * 19 // 24
    assert p["study"]["method"] == "hierarchical" and check["effect_bias"] == pytest.approx(0.0, abs=1e-12)
    assert "in batches of 20 per size tried, at most 3" in check["note"]
    files = result.save(tmp_path / "plan")
    md, html = files["markdown"].read_text(), files["report"].read_text()
    assert "subjects tried 24 -> 12 -> 15 -> 19: power 1.00 ± 0.00 [0.84, 1.00], 0.80 ± 0.06 [0.65, 0.90]" in md
    assert "20/40/60/40 fresh studies, 160 hierarchical fits" in md
    assert "(40 sims) with the hierarchical fit (--fit hierarchical: the size searched with it; the per-subject " \
        "MLE's one-sample t-test chose 24 subjects" in md
    assert "sizes tried with the hierarchical fit" in html and "chosen 19 subjects" in html


_REC = {"effect": "optimism_bias", "effect_size": 0.2, "effect_bias": -0.064, "estimand": 0.194, "studies": 178,
        "coverage": 0.93, "coverage_level": 0.95, "lapse_fit": None, "random_lapses": False}


def test_the_warning_names_fit_hierarchical_as_the_way_to_find_out_when_not_measured():
    (w,) = recovery_warnings(_REC)
    assert "biased by 32% of the effect" in w and "stays a valid test" in w
    assert "`plan ... --fit hierarchical` plans with the hierarchical fit" in w and "--lapse-fit" not in w


def test_the_warning_says_the_hierarchical_fit_removes_the_bias_with_the_measured_figure():
    check = {"effect_bias": 0.004, "effect_bias_mc_se": 0.01, "studies": 20, "bias_share": 0.02, "coverage": 0.95,
             "power": 0.85}
    (w,) = recovery_warnings(_REC, check)
    assert "the hierarchical fit this plan is made with removes it" in w
    assert "bias +0.004 ± 0.01 (MC SE), 2% of the effect" in w
    assert "--method hierarchical" in w and "power 0.85" in w
    check = {**check, "effect_bias": -0.05, "bias_share": 0.25}  # 0.05 - 2 x 0.01 > 10% of 0.2
    (w,) = recovery_warnings(_REC, check)
    assert "does not remove it either" in w and "more trials per subject" in w
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
    (["--fit", "hierarchical", "--looks", "3"], "--fit hierarchical plans a fixed design"),
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
    assert "Hierarchical search (--fit hierarchical)" in (out / "report.md").read_text()
    check_rows = payload["fit_check"]["search"]
    assert check_rows[0]["subjects"] == payload["mle_chosen"]["chosen"]["subjects"]
    assert payload["chosen"]["subjects"] == payload["fit_check"]["chosen_size"]
