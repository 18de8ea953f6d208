"""The design check: expected information of one subject, what it identifies, and the refusals it drives."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from cli_runs import in_process

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.identifiability import identifiability, identified_directions
from cogtestbed.registry import experiment_names, get_experiment


@pytest.fixture(scope="module")
def one_game():
    return identifiability("horizon", "info-bonus", sessions=1, chains=10, draws=1, seed=3)


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
    need = a.table["sessions_for_tolerance"].to_numpy(dtype=float)
    assert np.all(need >= a.table["sessions_to_identify"].to_numpy(dtype=float))


def test_same_seed_same_table():
    a = identifiability("horizon", "info-bonus", chains=6, draws=1, seed=7)
    b = identifiability("horizon", "info-bonus", chains=6, draws=1, seed=7)
    assert a.table.equals(b.table)


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
    assert all(p["identified"] for p in out["parameters"])
    bad = cli("check-design", "horizon", "--model", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


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
@pytest.mark.xfail(strict=True, reason="measured at 92 games (MLE, seed 1): r = 0.71 bonus_h1, -0.09 bonus_h6, 0.22 "
                   "temperature_h1, -0.13 temperature_h6, 0.61 bias. Not a likelihood fault (tests/test_horizon_"
                   "likelihood.py): the one population drawn from the hierarchical prior has true SD 0.03 $ on "
                   "bonus_h6 and 0.08 (log) on temperature_h6, far under the estimates' error, so r cannot be high; "
                   "with spread-out truths (sampler='uniform') r = 0.70, 0.77, 0.45, 0.34, 0.90: the temperatures "
                   "stay under 0.7 with one free choice a game in the likelihood "
                   "(benchmarks/studies/horizon_recovery_spread.py)")
def test_horizon_recovery_at_the_suggested_size():
    """At the check's suggested games a subject, every parameter it calls identified is recovered (r >= 0.7)."""
    check = identifiability("horizon", "info-bonus", draws=0, seed=0)
    games = int(check.table["sessions_for_tolerance"].max())
    study = ct.recover("horizon", "info-bonus", subjects=30, runs=games, reps=1, seed=1, workers=1)
    params = next(iter(study.summary.values()))["parameters"]
    for name in check.parameters:
        assert params[name]["r"] >= 0.7, (name, params[name]["r"], games)
