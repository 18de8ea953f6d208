"""The design check: expected information of one subject, what it identifies, and the refusals it drives."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from cli_runs import in_process

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.identifiability import (
    MAX_SUGGESTED_SESSIONS,
    identifiability,
    identified_directions,
    implied_r,
    population_sd,
    scored_values,
)
from cogtestbed.registry import experiment_names, get_experiment


@pytest.fixture(scope="module")
def one_game():
    return identifiability("horizon", "info-bonus", sessions=1, chains=10, draws=4, seed=3)


def test_one_horizon_game_identifies_nothing_and_names_the_smallest_design(one_game):
    assert one_game.unidentified == list(get_experiment("horizon").model("info-bonus").parameters.names)
    smallest = one_game.smallest_sessions
    assert smallest is not None and smallest > 5  # five parameters, one choice a game
    refusal = one_game.refusal()
    assert refusal is not None and "\n" not in refusal
    assert "bonus_h6" in refusal and f"--sessions {smallest}" in refusal


def test_the_suggested_size_identifies_every_parameter(one_game):
    big = identifiability("horizon", "info-bonus", sessions=one_game.smallest_sessions, chains=10, draws=0, seed=3)
    assert big.unidentified == [] and big.refusal() is None
    assert big.rank == len(big.table)


def test_se_shrinks_as_one_over_root_sessions():
    a = identifiability("horizon", "info-bonus", sessions=100, chains=10, draws=0, seed=1)
    b = identifiability("horizon", "info-bonus", sessions=400, chains=10, draws=0, seed=1)
    np.testing.assert_allclose(a.table["se"].to_numpy(), 2.0 * b.table["se"].to_numpy(), rtol=1e-12)
    need = a.table["sessions_for_tolerance"].to_numpy(dtype=float, na_value=np.nan)
    reached = ~np.isnan(need)
    assert np.all(need[reached] >= a.table["sessions_to_identify"].to_numpy(dtype=float)[reached])


def test_same_seed_same_table():
    a = identifiability("horizon", "info-bonus", chains=6, draws=1, seed=7)
    b = identifiability("horizon", "info-bonus", chains=6, draws=1, seed=7)
    assert a.table.equals(b.table)


def test_the_rule_states_its_r_and_matches_its_columns(one_game):
    t = one_game.table
    assert implied_r(0.5) == pytest.approx(0.894, abs=1e-3) and "r about 0.89" in one_game.rule
    ratio = t["se_population"] / t["population_sd"]
    np.testing.assert_allclose(t["se_ratio"], ratio)
    need = t["sessions_for_tolerance"].to_numpy(dtype=float, na_value=np.nan)
    want = np.ceil((t["se_population"] / (0.5 * t["population_sd"])) ** 2)
    want = np.maximum(want, t["sessions_to_identify"].to_numpy(dtype=float))
    np.testing.assert_array_equal(need, np.where(want <= MAX_SUGGESTED_SESSIONS, want, np.nan))
    assert one_game.not_identified == [p for p, k in zip(t["parameter"], need, strict=True) if np.isnan(k)]
    assert one_game.suggested_sessions == (None if np.isnan(need).all() else int(np.nanmax(need)))
    assert "suggested:" in one_game.summary()


def test_population_sd_is_the_uniform_samplers():
    """The spread the rule is stated on is that of ``recover --sampler uniform``'s true values, scored as r is."""
    from cogtestbed.studies.study_data import uniform_range

    rng = np.random.default_rng(0)
    for p in get_experiment("horizon").model("info-bonus").parameters:
        lo, hi = uniform_range(p)
        draws = scored_values(p, rng.uniform(lo, hi, 200_000))
        assert population_sd(p) == pytest.approx(float(draws.std()), rel=0.01), p.name


def test_null_directions():
    info = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # the first two move together
    assert identified_directions(info).tolist() == [False, False, True]
    assert identified_directions(np.diag([1.0, 0.0])).tolist() == [True, False]


def test_recover_refuses_one_game_a_subject_in_one_line():
    with pytest.raises(InputError, match=r"does not identify .*--runs \d+"):
        ct.recover("horizon", "info-bonus", subjects=3, reps=1, runs=1)


def test_bad_arguments_are_one_line():
    with pytest.raises(InputError, match="sessions must be at least 1"):
        identifiability("horizon", "info-bonus", sessions=0)
    with pytest.raises(InputError, match="design of horizon"):
        identifiability("horizon", "info-bonus", design={"reward_sd": -1})


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``cogtestbed ARGS`` in this process (tests/test_cli_instrumental.py starts the real entry point)."""
    return in_process(*args, check=False)


def test_check_design_command():
    proc = cli("check-design", "horizon", "--model", "info-bonus", "--sessions", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["refusal"] is None and [p["parameter"] for p in out["parameters"]][0] == "bonus_h1"
    assert all(p["identifiable"] for p in out["parameters"])
    for p in out["parameters"]:  # the rule: identified exactly where the SE over the population is small enough
        assert p["identified"] == (p["se_ratio"] is not None and p["se_ratio"] <= out["tolerance"])
    assert "r about 0.89" in out["rule"]
    bad = cli("check-design", "horizon", "--model", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_recover_takes_the_experiment_and_model_as_check_design_does():
    """``recover EXPERIMENT --model MODEL`` (as ``plan`` and ``check-design``): one game a subject is refused in
    one line naming the smallest design, before anything is simulated; a bad name is one line too."""
    proc = cli("recover", "horizon", "--model", "info-bonus")  # one game a subject: recover's default --runs 1
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: horizon / info-bonus: a subject of 1 session(s) does not identify bonus_h1")
    assert lines[0].endswith("(--runs 10)")
    for args in (("recover", "horizon", "--model", "nope"), ("recover", "no-such-task", "--model", "info-bonus"),
                 ("sbc", "horizon", "--model", "nope"), ("model-recovery", "no-such-task", "--model", "rw",
                                                          "--model", "rw-pm")):
        bad = cli(*args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, (args, bad.stderr)
        assert "Traceback" not in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("experiment,model", [(e, m) for e in experiment_names()
                                               for m in get_experiment(e).models])
def test_every_experiment_and_model(experiment, model):
    result = identifiability(experiment, model, chains=4, draws=1, seed=0)
    params = list(get_experiment(experiment).model(model).parameters.names)
    assert result.parameters == params
    ok = result.table["identified"].to_numpy(dtype=bool)
    assert np.all(result.table.loc[ok, "se"] > 0)
    assert np.all(result.table["sessions_to_identify"].dropna() >= 1)


@pytest.mark.slow
def test_horizon_recovery_at_the_suggested_size():
    """At the check's suggested games a subject, every parameter it calls identified is recovered (r >= 0.7), true
    values drawn from the population the check's rule is stated on (``sampler="uniform"``: each parameter's prior
    central 90 %), by maximum likelihood, simulations of their own (the check's seed 0, the recovery's seed 1)."""
    check = identifiability("horizon", "info-bonus", seed=0)
    games = check.suggested_sessions
    identified = [p for p in check.parameters if p not in check.not_identified]
    assert games is not None and identified
    at = identifiability("horizon", "info-bonus", sessions=games, seed=0)
    assert [p for p, ok in zip(at.parameters, at.table["identified"], strict=True) if ok] == identified
    study = ct.recover("horizon", "info-bonus", subjects=30, runs=games, reps=1, seed=1, workers=1,
                       sampler="uniform")
    params = next(iter(study.summary.values()))["parameters"]
    print({"games": games, "r": {name: params[name]["r"] for name in check.parameters}})
    for name in identified:
        assert params[name]["r"] >= 0.7, (name, params[name]["r"], games)
