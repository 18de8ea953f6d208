"""Issue 46: two-group tests of a model parameter in plan/power, common random numbers across a
power curve's sizes, and the horizon difference test whose interval is null at 10 runs."""

from __future__ import annotations

import math

import pytest

from cogtestbed.registry import get_experiment


# ----------------------------------------------------------------------------- horizon at 10 runs
def test_a_null_pooled_interval_makes_the_difference_untestable_not_a_crash():
    """Horizon's directed exploration from 10 runs has a null 95 % half-width (with its reason):
    the two-LLM difference test at 10 runs was a TypeError in pooled_se; it is untestable (p NaN,
    not detected)."""
    from cogtestbed.studies.driver import run_task
    from cogtestbed.studies.metric_studies import difference_test, pooled_se
    from cogtestbed.studies.study_kinds import study_spec

    null = {"metrics": {"directed_exploration": 0.0, "directed_exploration_ci": None},
            "null_reasons": {"directed_exploration_ci": "not computable"}}
    given = {"metrics": {"directed_exploration": 0.4, "directed_exploration_ci": 0.196}}
    assert math.isnan(pooled_se(null, "directed_exploration"))
    assert pooled_se(given, "directed_exploration") == pytest.approx(0.1, rel=1e-3)
    test, p = difference_test(null, given, "directed_exploration", "per_run")
    assert test == "z-test on two pooled estimates" and math.isnan(p)
    spec = study_spec(kind="metric-power", experiment="horizon", agent="info-bonus", metric="directed_exploration",
                      compare=({"bonus_h6": 5.0}, {"bonus_h6": 10.0}), runs=(10,), reps=1, seed=0)
    row = run_task(spec, spec.tasks()[0]).iloc[0]
    assert math.isnan(row["p_value"]) and not row["detected"]


# ----------------------------------------------------------------------------- common random numbers
def test_power_curve_sizes_share_random_numbers_and_rise_monotonely():
    """The declared temporal-discounting comparison (k 0.005 vs 0.8; k 0.05 vs 0.3 score alike, so
    its power stayed near alpha at every size and 24 simulations read .208, .083, 0) with common
    random numbers: repetition r of every size plays the same seeds (the 16-run cell of the curve
    equals a study of 16 runs alone, as the planner simulates it), and power rises with the runs."""
    import cogtestbed as ct
    from cogtestbed.studies.driver import run_study
    from cogtestbed.studies.study_kinds import study_spec

    decl = next(d for d in get_experiment("temporal-discounting").studies_of("metric-power"))
    low, high = ({k: float(v) for k, v in side.items()} for side in decl.compare)
    assert low["k"] == 0.005 and high["k"] == 0.8
    compare = tuple("hyperbolic:" + ",".join(f"{k}={v:g}" for k, v in side.items()) for side in (low, high))
    curve = ct.power("temporal-discounting", metric="score", compare=compare, runs=(4, 8, 16), sims=30, seed=3,
                     workers=1)
    power = [c["power"] for c in curve.summary["cells"]]
    assert [c["runs"] for c in curve.summary["cells"]] == [4, 8, 16]
    assert power[0] <= power[1] <= power[2] and power[2] - power[0] >= 0.4
    for c in curve.summary["cells"]:
        assert c["mc_se"] == pytest.approx(math.sqrt(c["power"] * (1 - c["power"]) / 30))
    alone = run_study(study_spec(kind="metric-power", experiment="temporal-discounting", agent="hyperbolic",
                                 metric="score", compare=(low, high), runs=(16,), reps=30, seed=3), workers=1)
    cell = curve.table[curve.table["runs"] == 16].reset_index(drop=True)
    assert cell["difference"].tolist() == pytest.approx(alone.table["difference"].tolist())
    assert cell["p_value"].tolist() == pytest.approx(alone.table["p_value"].tolist(), nan_ok=True)


def test_only_the_power_kinds_share_streams_across_cells():
    from cogtestbed.studies.study_kinds import study_spec

    power = study_spec(kind="metric-power", experiment="temporal-discounting", agent="hyperbolic", metric="score",
                       compare=({"k": 0.005}, {"k": 0.8}), runs=(4, 8), reps=3)
    assert [power.stream(t) for t in power.tasks()] == [0, 1, 2, 0, 1, 2]
    recovery = study_spec(kind="recovery", experiment="temporal-discounting", models=("hyperbolic",),
                          runs=(1, 2), reps=2)
    assert [recovery.stream(t) for t in recovery.tasks()] == [0, 1, 2, 3]


def test_rates_say_their_monte_carlo_se():
    from cogtestbed.formatting import rate_text

    assert rate_text(0.208, 24) == "0.208 ± 0.083 MC SE [0.092, 0.4] (24 sims)"
    assert rate_text(0.0, 24) == "0 [0, 0.14] (24 sims)"


# ----------------------------------------------------------------------------- a parameter between two groups
def _two_group_power(effect: float, sims: int, subjects: tuple[int, ...] = (8,), seed: int = 2) -> list[dict]:
    import cogtestbed as ct

    study = ct.power("rw", effect={"alpha": effect}, experiment="instrumental-learning", groups=2,
                     subjects=subjects, sims=sims, seed=seed, workers=1)
    assert set(study.table["test"]) == {"two-sided Welch t-test of two groups' per-subject MLE (alpha)"}
    return study.summary["cells"]


def test_two_group_power_rises_with_the_difference():
    """RW's learning rate between two groups of 8 simulated subjects (two LLMs): the rejection rate
    rises with the difference of the second group's median (0, 0.15, 0.3 on alpha)."""
    rates = [_two_group_power(d, 30)[0] for d in (0.0, 0.15, 0.3)]
    assert "type_i_error" in rates[0] and rates[0]["type_i_error"] <= 0.2
    powers = [rates[0]["type_i_error"], rates[1]["power"], rates[2]["power"]]
    assert powers[0] < powers[1] < powers[2] and powers[2] >= 0.6


@pytest.mark.slow
def test_two_group_type_i_error_is_near_alpha_at_zero_difference():
    """At a zero difference the two-group Welch test of per-subject MLEs rejects at about α = 0.05:
    within 2.6 Monte-Carlo SEs (√(α(1−α)/400) = 0.011) over 400 simulated pairs of groups."""
    cell = _two_group_power(0.0, 400, seed=5)[0]
    assert cell["sims"] == 400 and cell["mc_se"] == pytest.approx(math.sqrt(cell["type_i_error"]
                                                                             * (1 - cell["type_i_error"]) / 400))
    assert abs(cell["type_i_error"] - 0.05) <= 2.6 * math.sqrt(0.05 * 0.95 / 400)


def test_two_group_study_refuses_what_it_cannot_test():
    from cogtestbed.errors import InputError
    from cogtestbed.studies.study_kinds import ReferenceSample, study_spec

    ref = ReferenceSample(source="people.parquet", values=(0.1, 0.2, 0.3))
    with pytest.raises(ValueError, match="needs groups=2"):  # pydantic's ValidationError of the InputError
        study_spec(kind="power", experiment="instrumental-learning", models=("rw",), effect="alpha", reference=ref)
    with pytest.raises(ValueError, match="fewer than 2 fitted subjects"):
        ReferenceSample(source="one.parquet", values=(0.1, float("nan")))
    import cogtestbed as ct

    with pytest.raises(InputError, match="two groups compare a model parameter"):
        ct.power("temporal-discounting", metric="score", compare=("hyperbolic:k=0.01", "hyperbolic:k=0.1"),
                 groups=2, runs=(4,), sims=2)


def test_two_llm_parameter_plan_is_priced_as_each_llms_dry_run(tmp_path, capsys):
    """``plan --model M --effect P=D --llm A --llm B``: the difference of P between two LLMs, sized
    in subjects per LLM and priced as the sum of each LLM's own ``run --dry-run`` of those subjects
    (run in this process: the command's pricing is compared, not its entry point)."""
    import json

    import cogtestbed as ct
    from cogtestbed.cli import run_cli

    llms = ("openai:gpt-4o-mini", "openai:gpt-4o")
    plan = ct.plan("instrumental-learning", llm=llms, model="rw", effect={"alpha": 0.3}, subjects="4:16",
                   trials="96", mc_se=0.1, seed=1, workers=1)
    payload = plan.to_dict()
    assert payload["target"]["what"].startswith("a difference in alpha of 0.3 between two LLMs")
    # the search chose a design at the target; the printed power is measured on fresh studies at it
    assert payload["power_search"]["rate"] >= 0.8 and payload["run"]["llms"] == list(llms)
    assert payload["power"]["seed"] != 1 and abs(payload["power"]["rate"] - 0.8) < 4 * payload["power"]["mc_se"] + 0.2
    n = payload["chosen"]["subjects"]
    a, b = payload["cost"]["per_llm"]
    assert a["subjects"] == b["subjects"] == n
    total = 0.0
    for llm, report in zip(llms, (a, b), strict=True):
        capsys.readouterr()
        assert run_cli(["run", "instrumental-learning", "--llm", llm, "--subjects", str(n), "--seed", "1", "--design",
                        f"visits_per_casino={payload['run']['design']['visits_per_casino']}",
                        "-o", str(tmp_path / llm.replace(":", "-")), "--dry-run"]) == 0
        dry = json.loads(capsys.readouterr().out)
        assert (dry["calls"], dry["prompt_tokens"]) == (report["calls"], report["prompt_tokens"])
        total += dry["estimated_cost_usd"]
    assert payload["cost"]["dollars"] == pytest.approx(total)


def test_an_llm_against_a_human_sample_plans_one_llm_against_the_fixed_sample(tmp_path):
    """``human=`` (a trial table of people; any table of the experiment): its per-subject MLE is the
    fixed first group, its fitted medians the LLM's base; one LLM is priced."""
    import cogtestbed as ct
    from cogtestbed.registry import write_trials

    people = ct.simulate("instrumental-learning", agent="rw", subjects=12, seed=4,
                         params={"alpha": [0.2, 0.25, 0.3, 0.35] * 3, "beta": 5.0})
    path = write_trials(people, tmp_path / "people.parquet", {"source": "a stand-in for people"})
    plan = ct.plan("instrumental-learning", llm="openai:gpt-4o-mini", model="rw", effect={"alpha": 0.3},
                   human=path, subjects="4:24", trials="96", mc_se=0.1, seed=1, workers=1)
    payload = plan.to_dict()
    # the data set's name, not its path (before: the path, verbatim, in the summary sentence)
    assert payload["target"]["what"] == "a difference in alpha of 0.3 between an LLM and people.parquet (rw)"
    assert str(tmp_path) not in "\n".join(plan.lines())
    assert len(payload["cost"]["per_llm"]) == 1 and payload["power_search"]["rate"] >= 0.8
    with pytest.raises(ValueError, match="`human` is one group"):
        ct.plan("instrumental-learning", llm=("openai:gpt-4o-mini", "openai:gpt-4o"), model="rw",
                effect={"alpha": 0.3}, human=path)


@pytest.mark.slow
def test_two_group_hierarchical_fit_tests_the_posterior_difference():
    """``method="hierarchical"``: each group fitted on its own, the posterior of the difference of
    the population learning rates (second − first, 0.3 simulated) is positive and its interval
    decides the test."""
    import cogtestbed as ct

    study = ct.power("rw", effect={"alpha": 0.3}, experiment="instrumental-learning", groups=2, subjects=(8,),
                     sims=2, seed=1, workers=1, method="hierarchical", draws=300, chains=2)
    rows = study.table
    assert set(rows["test"]) == {"95% posterior interval of the difference of two groups' population values "
                                 "excludes 0"}
    assert (rows["estimate"] > 0.1).all() and (rows["lo"] < rows["estimate"]).all()
    assert (rows["detected"] == (rows["lo"] > 0)).all()


def test_a_two_group_bias_is_measured_against_the_difference_on_the_tests_scale():
    """Two groups on log k: a bias of 0.559 against a true log difference of 0.695 is 80 % of the
    effect, not 559 % of the natural-scale input 0.1."""
    from cogtestbed.planning.plan_report import recovery_warnings

    rec = {"effect": "k", "effect_bias": 0.559, "estimand": 0.695, "effect_size": 0.1, "effect_on_test_scale": 0.695,
           "studies": 178, "coverage": 0.95, "coverage_level": 0.95, "lapse_fit": None}
    (warning,) = recovery_warnings(rec)
    assert "biased by 80% of the effect" in warning
