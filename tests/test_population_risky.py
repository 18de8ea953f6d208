"""Issue 52: an LLM's loss aversion against a prospect-theory population of people, planned and
priced (``cogtestbed plan risky-choice --model prospect-theory --effect lambda=D --llm A
--population P``).  Slow: every simulated study fits every person and every LLM subject."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cogtestbed.inference.population import Population
from cogtestbed.registry import get_experiment

PEOPLE = 20


def _people(path: str) -> str:
    """A stand-in population of prospect-theory people: medians at the model's prior means (λ 1.22,
    α 0.77, θ 1.35), between-subject SD 0.3 on the log scale, 200 posterior draws."""
    model = get_experiment("risky-choice").model("prospect-theory")
    rng = np.random.default_rng(0)
    mu = {p.name: tuple(rng.normal(float(p.prior_mean), 0.05, 200)) for p in model.parameters}
    sigma = {p.name: tuple(np.abs(rng.normal(0.3, 0.02, 200))) for p in model.parameters}
    est = {p.name: tuple(float(v) for v in p.inside(p.to_constrained(rng.normal(float(p.prior_mean), 0.3, PEOPLE))))
           for p in model.parameters}
    Population(name="pt-stand-in", experiment="risky-choice", model="prospect-theory", subjects=PEOPLE, trials=98,
               mu=mu, sigma=sigma, estimates=est, source="simulated stand-in for people").save(path)
    return path


@pytest.mark.slow
def test_a_plan_of_an_llms_loss_aversion_against_people_prints_a_design_and_its_price(tmp_path, capsys):
    from cogtestbed.cli import run_cli

    path = _people(str(tmp_path / "people.json"))
    argv = ["plan", "risky-choice", "--model", "prospect-theory", "--effect", "lambda=1.0", "--llm",
            "openai:gpt-4o-mini", "--population", path, "--subjects", "5:40", "--trials", "98", "--mc-se", "0.1",
            "--workers", "1", "--json"]
    assert run_cli(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    chosen = plan["chosen"]
    assert 5 <= chosen["subjects"] <= 40 and chosen["trials"] == 98
    assert chosen["power"] >= 0.8 and chosen["mc_se"] <= 0.1
    assert chosen["calls"] == chosen["subjects"] * 98  # one call per trial, no re-asks
    assert chosen["dollars"] > 0 and chosen["prompt_tokens"] > chosen["calls"]
    assert len(plan["cost"]["per_llm"]) == 1
    assert plan["study"]["people"] == PEOPLE and plan["study"]["people_trials"] == 98
    assert plan["target"]["what"].startswith(f"a difference in lambda of 1 between an LLM and {PEOPLE} people")


# ----------------------------------------------------------------------------- the bounded-estimate rule
def test_rank_test_is_brunner_munzel_with_a_hodges_lehmann_shift():
    """:func:`rank_test`: the median pairwise difference, the relative effect, Brunner–Munzel's p; an
    estimate at a bound counts only as the lowest value, however far below the others the optimiser
    left it (Welch's p moves by orders of magnitude with it); complete separation falls back to
    Mann–Whitney's p."""
    from scipy import stats

    from cogtestbed.studies.study_data import rank_test

    shift, relative, p = rank_test(np.array([3.0, 4.0, 6.0]), np.array([1.0, 2.0, 4.0]))
    assert shift == 2.0  # differences 2 1 -1 3 2 0 5 4 2: median 2
    assert relative == pytest.approx((7 + 0.5) / 9 - 0.5)
    assert p == pytest.approx(stats.brunnermunzel([3.0, 4.0, 6.0], [1.0, 2.0, 4.0]).pvalue)
    rng = np.random.default_rng(0)
    people, llm = rng.normal(0.0, 0.5, 270), rng.normal(0.3, 0.5, 20)
    far, near = (np.r_[people, np.full(25, np.log(low))] for low in (1e-6, 0.05))  # 25 λ at the lower bound
    assert rank_test(llm, far) == rank_test(llm, near)
    welch = [stats.ttest_ind(llm, x, equal_var=False).pvalue for x in (far, near)]
    assert welch[0] < welch[1] / 100
    _, relative, p_apart = rank_test(np.array([15.0, 16.0, 17.0]), np.arange(10.0))
    assert relative == 0.5 and p_apart == pytest.approx(stats.mannwhitneyu([15.0, 16.0, 17.0], np.arange(10.0)).pvalue)


def test_bounded_estimate_rule_names_its_parameters():
    from cogtestbed.studies.model_studies import two_group_test

    pt = get_experiment("risky-choice").model("prospect-theory")
    assert [two_group_test(pt, p) for p in ("lambda", "alpha", "theta")] == ["rank"] * 3
    rw = get_experiment("instrumental-learning").model("rw-pm")
    assert two_group_test(rw, "beta") == "welch" and two_group_test(rw, "optimism_bias") == "welch"


@pytest.mark.slow
def test_power_against_people_rises_with_the_llms_subjects(tmp_path):
    """An LLM's λ 0.5 above people's (60 stand-in people at 98 trials, some of whose per-subject λ run to
    a bound): with the rank test the power of a seeded run rises with the LLM's subjects."""
    import cogtestbed as ct

    global PEOPLE
    saved, PEOPLE = PEOPLE, 60
    try:
        path = _people(str(tmp_path / "people.json"))
    finally:
        PEOPLE = saved
    study = ct.power("risky-choice", "prospect-theory", effect={"lambda": 0.5}, population=path, groups=2,
                     subjects=(5, 15, 45), trials=98, sims=60, seed=3, workers=1)
    cells = study.summary["cells"]
    assert [c["n_subjects"] for c in cells] == [5, 15, 45]
    power = [c["power"] for c in cells]
    assert all("Brunner-Munzel" in t for t in study.table["test"].unique())
    assert power[0] < power[1] < power[2] and power[2] - power[0] > 0.3, power


# ----------------------------------------------------------------------------- the shipped Spektor population
SPEKTOR = "human:spektor2024"
#: What ``python benchmarks/studies/build_populations.py spektor2024`` fitted and kept (docs/human-data.md).
SHIPPED_PEOPLE, SHIPPED_TRIALS = 30, 98
SHIPPED_MEDIANS = {"lambda": 1.1178, "alpha": 0.8367, "theta": 0.8348}


def test_spektor_population_ships_with_its_participants_named(capsys):
    """``human:spektor2024``: a converged fit of a named subset of Spektor et al.'s participants, listed."""
    import cogtestbed as ct
    from cogtestbed.cli import run_cli

    assert run_cli(["population", "list"]) == 0
    assert "spektor2024" in capsys.readouterr().out
    pop = ct.population(SPEKTOR)
    model = get_experiment("risky-choice").model("prospect-theory")
    assert (pop.experiment, pop.model, pop.subjects, pop.trials) == ("risky-choice", "prospect-theory", SHIPPED_PEOPLE,
                                                                    SHIPPED_TRIALS)
    assert f"a random subset of {SHIPPED_PEOPLE} of the 282 participants" in pop.source
    assert pop.fit["max_rhat"] <= 1.01 and pop.fit["divergences"] == 0 and pop.fit["chains"] == 4
    assert all(len(v) == SHIPPED_PEOPLE for v in pop.estimates.values())
    medians = pop.medians(model.parameters)
    for name, value in SHIPPED_MEDIANS.items():
        assert medians[name] == pytest.approx(value, abs=5e-4), name


def test_spektor_population_drives_simulate_recover_and_power():
    import cogtestbed as ct

    table = ct.simulate("risky-choice", "prospect-theory", subjects=5, seed=2, population=SPEKTOR)
    true = ct.true_parameters(table)
    assert table["subject"].nunique() == 5 and table.groupby("subject").size().eq(98).all()
    assert true["lambda"].nunique() == 5 and true["lambda"].between(0, 10).all()
    assert table.equals(ct.simulate("risky-choice", "prospect-theory", subjects=5, seed=2, population=SPEKTOR))
    rec = ct.recover("risky-choice", "prospect-theory", population=SPEKTOR, subjects=4, reps=1, seed=1, workers=1)
    assert rec.spec.sampler == "population" and rec.table["true"].notna().all()
    study = ct.power("risky-choice", "prospect-theory", effect={"lambda": 0.5}, population=SPEKTOR, groups=2,
                     subjects=(6,), sims=2, seed=1, workers=1)
    assert study.spec.people == SHIPPED_PEOPLE and study.spec.people_trials == SHIPPED_TRIALS
    assert study.table["test"].str.contains("Brunner-Munzel").all()


@pytest.mark.slow
def test_the_plan_of_gpt_4o_minis_loss_aversion_against_spektors_people(capsys):
    """docs/human-data.md's plan: ``cogtestbed plan risky-choice --model prospect-theory --effect lambda=1.0
    --llm openai:gpt-4o-mini --population human:spektor2024``, run here with ``--workers 1``, chooses
    20-35 subjects x 98 trials at power >= 0.8 with MC SE <= 0.03, against the shipped population's
    people at their trial count, prices subjects x trials calls at a positive price, and names the
    Brunner-Munzel test."""
    from cogtestbed.cli import run_cli

    argv = ["plan", "risky-choice", "--model", "prospect-theory", "--effect", "lambda=1.0", "--llm",
            "openai:gpt-4o-mini", "--population", SPEKTOR, "--workers", "1", "--json"]
    assert run_cli(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    chosen = plan["chosen"]
    assert plan["study"]["people"] == SHIPPED_PEOPLE and plan["study"]["people_trials"] == SHIPPED_TRIALS
    assert 20 <= chosen["subjects"] <= 35 and chosen["trials"] == 98
    assert chosen["power"] >= 0.8 and chosen["mc_se"] <= 0.03
    assert chosen["calls"] == chosen["subjects"] * chosen["trials"] and chosen["dollars"] > 0
    assert "Brunner-Munzel" in json.dumps(plan)


def test_all_282_spektor_participants_ship_as_a_population_fitted_by_gibbs():
    """``human:spektor2024-all``: every participant, the Metropolis-within-Gibbs fit (NUTS missed R-hat 1.01 on
    participant 273's two modes), its population medians as ``build_populations.py spektor2024-all`` kept them
    (docs/risky-choice.md), and simulate draws people from it."""
    import cogtestbed as ct

    pop = ct.population("human:spektor2024-all")
    model = get_experiment("risky-choice").model("prospect-theory")
    assert (pop.subjects, pop.fit["sampler"], pop.fit["chains"], pop.fit["draws"]) == (282, "gibbs", 4, 16000)
    assert pop.fit["max_rhat"] <= 1.01 and pop.fit["divergences"] == 0
    medians = pop.medians(model.parameters)
    for name, value in {"lambda": 0.9707, "alpha": 0.758, "theta": 0.7007}.items():
        assert medians[name] == pytest.approx(value, abs=5e-4), name
    table = ct.simulate("risky-choice", "prospect-theory", subjects=4, seed=1, population="human:spektor2024-all")
    assert table["subject"].nunique() == 4 and ct.true_parameters(table)["lambda"].nunique() == 4


def test_shahar_population_ships_fitted_by_gibbs_and_drives_simulate():
    """``human:shahar2019``: 40 of Shahar et al.'s participants, the hybrid model, the Metropolis-within-Gibbs fit
    (nutpie's stopped at R-hat 1.087 on participant 31's two regions), its medians as kept (docs/human-data.md)."""
    import cogtestbed as ct

    pop = ct.population("human:shahar2019")
    model = get_experiment("two-step").model("hybrid")
    assert (pop.subjects, pop.model, pop.fit["sampler"]) == (40, "hybrid", "gibbs")
    assert pop.fit["max_rhat"] <= 1.01 and pop.fit["divergences"] == 0 and pop.fit["verdict"] == "converged"
    medians = pop.medians(model.parameters)
    for name, value in {"w": 0.3171, "alpha": 0.2551, "beta": 4.219}.items():
        assert medians[name] == pytest.approx(value, rel=1e-3), name
    table = ct.simulate("two-step", "hybrid", subjects=3, seed=1, population="human:shahar2019")
    assert table["subject"].nunique() == 3 and ct.true_parameters(table)["w"].nunique() == 3


@pytest.mark.slow
def test_a_reduced_people_plan_gives_the_recorded_figures(monkeypatch):
    """A reduced plan of an LLM's λ against 30 of Spektor's people (10-40 LLM subjects, MC SE 0.1, 96 null
    and fresh studies) prints the figures the code gave before a group's start grid was shared (recorded from
    that code, seed 0, 29 Nov 2026; ``benchmarks/studies/people_plan_cost.py reduced``): the fits' speed-up
    changed no figure.  About 100-140 CPU-s."""
    import cogtestbed as ct
    import cogtestbed.studies.people_level as people_level

    monkeypatch.setattr(people_level, "MIN_NULL_STUDIES", 20)
    p = ct.plan("risky-choice", model="prospect-theory", effect={"lambda": 1.0}, llm="openai:gpt-4o-mini",
                population="human:spektor2024", subjects="10:40", mc_se=0.1, workers=1).payload
    assert p["chosen"]["subjects"] == 33
    cal = p["calibrated_test"]  # the level null studies are those that calibrated before (the same seeds)
    assert (cal["null_sims"], cal["nominal_rejected"]) == (96, 6)
    assert cal["nominal_holds"] and "critical_p" not in cal  # 6 of 96 holds its level: nothing calibrated
    assert cal["nominal_power"]["rate"] == pytest.approx(83 / 96)
    cond = p["power_conditional"]
    assert (cond["power"]["rate"], cond["null_rejection"]["rate"]) == pytest.approx((93 / 96, 2 / 96))
    assert p["recovery"]["effect_bias"] == pytest.approx(0.039675674650474724, rel=1e-9)
