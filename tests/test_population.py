"""Issue 52 items 3-4: human populations (the posterior draws of a hierarchical fit's group
parameters) in simulate, recover, power and plan, built from a fit (refusing an unconverged one),
shipped as small files, and the LLM-against-people plan with the people's number fixed."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.hierarchical import Diagnostics
from cogtestbed.inference.population import (
    Population,
    PopulationError,
    load_population,
    population_from_fit,
    shipped_populations,
)
from cogtestbed.registry import get_experiment

EXP = "instrumental-learning"


def _population(n_draws: int = 200, subjects: int = 12, seed: int = 0, sd: float = 0.5) -> Population:
    """A stand-in population of RW± (instrumental learning) around its defaults."""
    model = get_experiment(EXP).model("rw-pm")
    rng = np.random.default_rng(seed)
    mu = {p.name: tuple(rng.normal(float(p.to_unconstrained(p.default)), 0.05, n_draws)) for p in model.parameters}
    sigma = {p.name: tuple(np.abs(rng.normal(sd, 0.02, n_draws))) for p in model.parameters}
    est = {p.name: tuple(float(v) for v in p.inside(p.to_constrained(
        rng.normal(float(p.to_unconstrained(p.default)), sd, subjects)))) for p in model.parameters}
    return Population(name="stand-in", experiment=EXP, model="rw-pm", subjects=subjects, trials=96, mu=mu,
                      sigma=sigma, estimates=est, source="simulated stand-in for people")


class _Fit:
    """A hierarchical fit's two attributes a population reads (an InferenceData and its diagnostics)."""

    def __init__(self, rhat: float | None, divergences: int, chains: int = 2, draws: int = 50) -> None:
        import arviz as az

        rng = np.random.default_rng(1)
        names = get_experiment(EXP).model("rw-pm").parameters.names
        post = {f"{p}_{k}": rng.normal(0.0 if k == "mu" else 0.5, 0.1, (chains, draws)) ** (2 if k == "sigma" else 1)
                for p in names for k in ("mu", "sigma")}
        post.update({p: rng.uniform(0.1, 0.9, (chains, draws, 3)) for p in names})
        self.idata = az.from_dict(posterior=post, dims={p: ["subject"] for p in names},
                                  coords={"subject": [0, 1, 2]})
        self.diagnostics = Diagnostics(max_rhat=rhat, min_ess_bulk=500.0, min_ess_tail=500.0, divergences=divergences,
                                       n_chains=chains, n_draws=draws, seconds=1.0, sampler="nutpie", table=None)


# ----------------------------------------------------------------------------- building one
def test_a_population_keeps_the_fits_posterior_draws_and_refuses_an_unconverged_fit():
    model = get_experiment(EXP).model("rw-pm")
    pop = population_from_fit(_Fit(1.004, 0), name="p", experiment=EXP, model=model, keep=60)
    assert pop.n_draws == 60 and pop.subjects == 3 and set(pop.mu) == set(model.parameters.names)
    assert pop.fit["max_rhat"] == pytest.approx(1.004) and not pop.fit["unconverged_allowed"]
    with pytest.raises(PopulationError, match=r"max R-hat 1.020 \(must be <= 1.01\)"):
        population_from_fit(_Fit(1.02, 0), name="p", experiment=EXP, model=model)
    with pytest.raises(PopulationError, match="3 divergent transitions"):
        population_from_fit(_Fit(1.0, 3), name="p", experiment=EXP, model=model)
    with pytest.raises(PopulationError, match="max R-hat none"):
        population_from_fit(_Fit(None, 0, chains=1), name="p", experiment=EXP, model=model)
    kept = population_from_fit(_Fit(1.02, 3), name="p", experiment=EXP, model=model, allow_unconverged=True)
    assert kept.fit["unconverged_allowed"] and kept.fit["divergences"] == 3


def test_a_saved_population_reads_back_equal_and_bad_names_are_one_line(tmp_path):
    pop = _population()
    path = pop.save(tmp_path / "pop.json")
    back = load_population(str(path))
    assert back.mu["beta"] == pytest.approx(pop.mu["beta"], rel=1e-5) and back.subjects == pop.subjects
    with pytest.raises(PopulationError, match="no population 'nowhere.json'"):
        load_population("nowhere.json")
    with pytest.raises(PopulationError, match="human:zzz names none of the shipped populations"):
        load_population("human:zzz")
    (tmp_path / "bad.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(DataError, match="is not a population file"):
        load_population(tmp_path / "bad.json")


@pytest.mark.parametrize("name", shipped_populations())
def test_every_shipped_population_matches_its_model_and_converged(name):
    pop = ct.population(f"human:{name}")
    model = get_experiment(pop.experiment).model(pop.model)
    pop.check(model.parameters)
    assert pop.fit["max_rhat"] <= 1.01 and pop.fit["divergences"] == 0 and not pop.fit["unconverged_allowed"]
    assert pop.estimates and pop.n_draws >= 400 and pop.source


# ----------------------------------------------------------------------------- drawing subjects
def test_one_posterior_draw_per_study_and_the_effect_moves_its_median():
    pop = _population()
    params = get_experiment(EXP).model("rw-pm").parameters
    values, subj = pop.sample(params, 4000, np.random.default_rng(3))
    d = int(np.argmin(np.abs(np.asarray(pop.mu["beta"]) - values["beta_mu"])))
    assert values["beta_mu"] == pytest.approx(pop.mu["beta"][d])
    assert np.median(np.log(subj["beta"])) == pytest.approx(values["beta_mu"], abs=0.05)
    assert np.std(np.log(subj["beta"])) == pytest.approx(pop.sigma["beta"][d], rel=0.05)
    _, moved = pop.sample(params, 4000, np.random.default_rng(3), shift={"alpha_pos": 0.1})
    assert np.median(moved["alpha_pos"]) - np.median(subj["alpha_pos"]) == pytest.approx(0.1, abs=0.01)
    with pytest.raises(PopulationError, match="past its bounds"):
        pop.sample(params, 10, np.random.default_rng(3), shift={"alpha_pos": 0.9})
    # the same seed gives the same subjects; a larger study's subjects extend a smaller one's
    _, small = pop.sample(params, 10, np.random.default_rng(5))
    _, large = pop.sample(params, 30, np.random.default_rng(5))
    assert np.array_equal(small["alpha_neg"], large["alpha_neg"][:10])


def test_simulate_draws_from_a_population_and_refuses_another_agent_or_a_drawn_param(tmp_path):
    path = _population().save(tmp_path / "pop.json")
    out = tmp_path / "sim.parquet"
    a = ct.simulate(EXP, "rw-pm", subjects=6, seed=2, population=str(path), output=out)
    b = ct.simulate(EXP, "rw-pm", subjects=6, seed=2, population=str(path))
    assert a.equals(b) and ct.true_parameters(a)["beta"].nunique() == 6
    from cogtestbed.trials import read_manifest

    assert read_manifest(out)["population"]["name"] == "stand-in"
    with pytest.raises(InputError, match="use `agent` rw-pm"):
        ct.simulate(EXP, "rw", subjects=2, population=str(path))
    with pytest.raises(InputError, match="population stand-in draws beta"):
        ct.simulate(EXP, "rw-pm", subjects=2, population=str(path), params={"beta": 3.0})


# ----------------------------------------------------------------------------- studies and plans
def test_power_and_recover_take_a_population(tmp_path):
    path = str(_population().save(tmp_path / "pop.json"))
    study = ct.power("rw-pm", effect={"optimism_bias": 0.3}, population=path, subjects=(6,), sims=4, seed=1,
                     workers=1)
    assert "population stand-in (rw-pm, 12 subjects): one posterior draw" in study.spec.true_distribution
    two = ct.power("rw-pm", effect={"optimism_bias": 0.3}, population=path, subjects=(6,), sims=2, seed=1,
                   workers=1, groups=2)
    assert two.spec.people == 12 and two.spec.people_trials == 96  # the people's number is fixed: all 12
    rec = ct.recover("rw-pm", population=path, subjects=5, reps=2, seed=1, workers=1)
    assert rec.spec.sampler == "population" and rec.table["true"].notna().all()
    with pytest.raises(InputError, match="drop `base`"):
        ct.power("rw-pm", effect={"optimism_bias": 0.3}, population=path, base={"beta": 3}, subjects=(6,), sims=2)
    with pytest.raises(InputError, match="is of model rw-pm"):
        ct.power("rw", effect={"alpha": 0.1}, experiment=EXP, population=path, subjects=(6,), sims=2)
    with pytest.raises(InputError, match="`population` draws a model's parameters"):
        ct.power(EXP, metric="optimism_bias", compare=("rw-pm:alpha_pos=0.3", "rw-pm:alpha_pos=0.4"),
                 population=path, sims=2)


def test_an_llm_against_a_population_plans_one_llm_against_its_people(tmp_path, monkeypatch):
    """``plan(..., population=...)`` with one LLM: the people (their number fixed, drawn afresh from
    the population) are the first group, the LLM's subjects drawn from it moved by the effect; one
    LLM priced."""
    # 12 people (not 40) and an effect of 0.45 on 2:12 subjects: every simulated study fits people and
    # LLM subjects alike, so this halves the fits; the people's number is still the population file's,
    # fixed through the search (a plan that drew or searched it would say another number below).
    from cogtestbed.planning.plan import FRESH_SEED_OFFSET, Planner
    from cogtestbed.studies import driver
    from cogtestbed.studies.people_level import CALIBRATION_SEED_OFFSET, NULL_SEED_OFFSET, calibrated_power

    path = str(_population(subjects=12).save(tmp_path / "pop.json"))
    seen: dict[str, object] = {"effect_studies": 0, "seeds": set()}
    fresh_table, run_study = Planner.fresh_table, driver.run_study

    def recording_fresh(self, chosen):  # the fresh studies and the search's own at the chosen design
        seen["fresh"], seen["selecting"] = fresh_table(self, chosen), self.power.table(chosen.point)
        return seen["fresh"]

    def counting_run_study(spec, *a, **k):  # the calibration's null studies; the people's effect studies not re-run
        seen["effect_studies"] += int(spec.effect_size != 0 and spec.people is not None)
        seen["seeds"].add(spec.seed)
        return run_study(spec, *a, **k)

    def recording_one_size(spec, *a, **k):  # issue 71: the fresh and the calibration studies, each run once
        seen["one_size"] = [*seen.get("one_size", []), spec.seed]
        return one_size_table(spec, *a, **k)

    from cogtestbed.planning import plan as plan_module

    one_size_table = plan_module.one_size_table
    monkeypatch.setattr(Planner, "fresh_table", recording_fresh)
    monkeypatch.setattr(driver, "run_study", counting_run_study)
    monkeypatch.setattr(plan_module, "one_size_table", recording_one_size)
    from cogtestbed.studies import people_level

    monkeypatch.setattr(people_level, "MIN_NULL_STUDIES", 0)  # as many null studies as fresh ones: a short test
    plan = ct.plan(EXP, llm="openai:gpt-4o-mini", model="rw-pm", effect={"optimism_bias": 0.45}, population=path,
                   subjects="2:12", trials="96", mc_se=0.2, seed=1, workers=1)
    payload = plan.to_dict()
    # issue 68: the calibrated test's power is measured on the fresh studies, not on those that chose the design
    cal, fresh, selecting = payload["calibrated_test"], seen["fresh"], seen["selecting"]
    assert len(fresh) == len(selecting) == cal["nominal_power"]["sims"] == cal["null_sims"] == payload["power"]["sims"]
    assert not np.isin(fresh["p_value"].to_numpy(), selecting["p_value"].to_numpy()).any()
    assert cal["nominal_power"]["rate"] == calibrated_power(fresh, 0.05, 0.45)["rate"]
    assert seen["effect_studies"] == 0 and "fresh studies" in cal["nominal_power"]["studies"]
    if not cal["nominal_holds"]:
        assert cal["power"]["rate"] == calibrated_power(fresh, cal["critical_p"], 0.45)["rate"]
    # the fresh and the level null studies each on seeds of their own, not the search's 1, each run once; a
    # critical p calibrated on other null studies only where the level's show the nominal test above alpha;
    # the conditional figures test their LLM groups against the participants (issue 71): no study of their own
    calibrating = [] if cal["nominal_holds"] else [1 + CALIBRATION_SEED_OFFSET]
    assert seen["one_size"] == [1 + FRESH_SEED_OFFSET, 1 + NULL_SEED_OFFSET, *calibrating] and seen["seeds"] == set()
    assert payload["target"]["what"].startswith("a difference in optimism_bias of 0.45 between an LLM and 12 people "
                                                "of population stand-in")
    assert len(payload["cost"]["per_llm"]) == 1 and payload["power_search"]["rate"] >= 0.8
    assert payload["power"]["rate"] == pytest.approx(fresh["detected"].astype(bool).mean())  # printed: fresh studies
    assert payload["study"]["people"] == 12 and payload["study"]["reference"] is None
    cond = payload["power_conditional"]  # issue 68: against the population's own 12 participants, with MC SE
    assert cond["n_participants"] == 12 and cond["power"]["sims"] == cond["null_rejection"]["sims"] == \
        payload["power"]["sims"]
    from cogtestbed.planning.plan_report import summary_line

    assert 0 < cond["power"]["mc_se"] < 0.2 and "conditional on the real 12 participants" in summary_line(payload)
    assert "(unconditional: new people in every simulated study); conditional on the real" in summary_line(payload)
    assert f"nominal type-I {cal['nominal_rate']:.3f} ± {cal['nominal_rate_mc_se']:.3f} on {cal['null_sims']:,} null " \
        "studies at these trial counts" in summary_line(payload)
    if cal["nominal_holds"]:
        assert "the nominal test holds its level here" in summary_line(payload) and cal["recommended"] == "nominal"
    else:
        assert f"critical p {cal['critical_p']:.4g}): power {cal['power']['rate']:.3f}" in summary_line(payload)
    with pytest.raises(InputError, match="`population` is planned with the per-subject MLE"):
        ct.plan(EXP, llm="openai:gpt-4o-mini", model="rw-pm", effect={"optimism_bias": 0.4}, population=path,
                fit="hierarchical")
    with pytest.raises(InputError, match="`population` compares a model parameter"):
        ct.plan(EXP, llm="openai:gpt-4o-mini", metric="optimism_bias", compare=("rw-pm", "rw-pm"),
                population=path)


def test_the_command_line_lists_shows_and_plans_with_a_population(tmp_path, capsys):
    from cogtestbed.cli import run_cli

    path = str(_population().save(tmp_path / "pop.json"))
    assert run_cli(["population", "show", path]) == 0
    out = capsys.readouterr().out
    assert "stand-in: instrumental-learning, model rw-pm, 12 subjects x 96 trials" in out and "beta" in out
    assert run_cli(["population", "list"]) == 0
    assert run_cli(["simulate", EXP, "--agent", "rw", "-o", str(tmp_path / "x.parquet"),
                    "--population", path]) == 2
    assert "use --agent rw-pm" in capsys.readouterr().err


def test_the_human_populations_study_prints_its_error_rates(monkeypatch, capsys):
    """benchmarks/studies/human_populations.py on the shipped CogBench people, small: 10 LLM subjects
    x 96 trials, 10 simulated studies (seed 1).  The rejections are seeded (0 of 10 under the null,
    most with alpha_pos moved by 0.4; measured), each rate printed with its count, the null's
    Clopper-Pearson upper bound and the power's Monte-Carlo SE computed from them; the script's
    default effect (alpha_pos 0.1, as docs/human-data.md) is accepted."""
    import re
    import sys

    from study_scripts import load_study

    from cogtestbed.planning.kinds.sequential.seqfair import upper_bound

    study = load_study("human_populations")
    monkeypatch.setattr(sys, "argv", ["human_populations.py", "--effect", "alpha_pos", "--size", "0.4",
                                      "--subjects", "10", "--sims", "10"])
    study.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cogbench-instrumental: instrumental-learning, model rw-pm, 50 subjects x 96 trials (median)"
    where = "10 LLM subjects x 96 trials against the 50 people"
    null = re.fullmatch(rf"type-I error \(alpha_pos = 0, the LLM drawn from the population; {where}\): "
                        r"(\d\.\d{3}) \((\d+)/(\d+)\), one-sided 95% upper bound (\d\.\d{3}) \(level 0\.05\)",
                        lines[-3])
    power = re.fullmatch(rf"power \(alpha_pos moved by 0\.4; {where}\): (\d\.\d{{3}}) ± (\d\.\d{{3}}) MC SE "
                         r"\((\d+) sims\)", lines[-2])
    assert null and power, lines[-3:]
    hits, n = int(null[2]), int(null[3])
    assert n == int(power[3]) == 10 and hits <= 2  # seeded: 0 of 10 since LLM subjects are simulated in blocks
    assert null[1] == f"{hits / n:.3f}" and null[4] == f"{upper_bound(hits, n):.3f}"
    rate = float(power[1])
    assert rate >= 0.5 and power[2] == f"{(rate * (1 - rate) / 10) ** 0.5:.3f}"
    monkeypatch.setattr(sys, "argv", ["human_populations.py", "--subjects", "4", "--sims", "2", "--trials", "40"])
    study.main()  # the defaults are not refused
    assert "alpha_pos moved by 0.1; 4 LLM subjects x 40 trials" in capsys.readouterr().out


def test_build_population_tunes_as_long_as_it_draws_unless_told(tmp_path, monkeypatch):
    """``tune`` (``population build --tune``) reaches the sampler; left out, tuning is the draws."""
    from cogtestbed.cli import run_cli

    seen: list[tuple[int, int]] = []

    def fake_fit(model, trials, *, draws, tune, **_):  # type: ignore[no-untyped-def]
        seen.append((draws, tune))
        return _Fit(1.004, 0)

    monkeypatch.setattr("cogtestbed.inference.hierarchical.fit_hierarchical", fake_fit)
    table = ct.simulate(EXP, "rw-pm", subjects=3, seed=0)
    pop = ct.build_population(EXP, table, model="rw-pm", name="p", draws=40, tune=15)
    ct.build_population(EXP, table, model="rw-pm", name="p", draws=40)
    assert seen == [(40, 15), (40, 40)] and pop.fit["max_rhat"] == pytest.approx(1.004)
    path = tmp_path / "t.parquet"
    table.to_parquet(path)
    assert run_cli(["population", "build", EXP, str(path), "--model", "rw-pm", "--name", "p", "--draws", "30",
                    "--tune", "7", "-o", str(tmp_path / "p.json")]) == 0
    assert seen[-1] == (30, 7) and (tmp_path / "p.json").exists()
    with pytest.raises(InputError, match="tune must be at least 1"):
        ct.build_population(EXP, table, model="rw-pm", name="p", tune=0)
    assert run_cli(["population", "build", EXP, str(path), "--model", "rw-pm", "--name", "p", "--tune", "0",
                    "-o", str(tmp_path / "q.json")]) == 2 and len(seen) == 3


def test_build_script_configures_a_copy_of_the_model() -> None:
    """``build_populations.py --centred --low-rank`` sets the options on a copy of the build's model; the
    registry's model (one object per process) keeps its class's declarations for every later fit."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "studies" / "build_populations.py"
    spec = importlib.util.spec_from_file_location("build_populations_script", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    spec.loader.exec_module(script)
    build = script.POPULATIONS["spektor2024"]
    model = script.configured_model(build, centred=True, low_rank=True)
    registry = get_experiment(build.experiment).model(build.model)
    assert model is not registry and type(model) is type(registry)
    assert model.centred_parameters == ("lambda", "alpha", "theta") and model.low_rank_mass_matrix is True
    assert registry.centred_parameters == () and registry.low_rank_mass_matrix is False
    plain = script.configured_model(build, centred=False, low_rank=False)
    assert plain.centred_parameters == () and plain.low_rank_mass_matrix is False
