"""The horizon task's information-bonus likelihood against its simulating agent: the same choice probability on the
same history, each horizon's parameters read from that horizon's games, and a recovery summary that says when a
population's true values vary too little for r to judge the fit."""

from __future__ import annotations

import numpy as np
import pandas as pd

import cogtestbed as ct
from cogtestbed.inference.horizon import InformationBonus, choice_data
from cogtestbed.studies.summaries import recovery_summary
from cogtestbed.studies.verdict import _recovery_by_r

TRUE = {"bonus_h1": 0.0, "bonus_h6": 10.0, "temperature_h1": 2.0, "temperature_h6": 8.0, "bias": 1.5}


def _table(games: int, seed: int) -> pd.DataFrame:
    return ct.simulate("horizon", "info-bonus", subjects=1, sessions=games, seed=seed, params=TRUE)


def _agent_p_j(table: pd.DataFrame) -> np.ndarray:
    """P(J) at each game's first free choice by the model's equation (Wilson et al. 2014, eq. 1), from counts and
    sums of the forced trials read off the table here (not through the likelihood's data preparation)."""
    out = []
    for _, game in table.sort_values(["session", "trial"]).groupby("session", sort=True):
        forced = game[game["trial"] < 4]
        arm = forced["action"].to_numpy(int)
        reward = forced["reward"].to_numpy(float)
        counts = np.array([(arm == 0).sum(), (arm == 1).sum()], float)
        sums = np.array([reward[arm == 0].sum(), reward[arm == 1].sum()])
        horizon = int(game["horizon"].iloc[0])
        q = (sums[1] / counts[1] - sums[0] / counts[0]
             + (TRUE["bonus_h6"] if horizon > 1 else TRUE["bonus_h1"]) * np.sign(counts[0] - counts[1])
             + TRUE["bias"])
        t = TRUE["temperature_h6"] if horizon > 1 else TRUE["temperature_h1"]
        out.append(1.0 / (1.0 + np.exp(-q / t)))
    return np.array(out)


def test_the_likelihood_gives_each_game_the_agents_choice_probability() -> None:
    table = _table(60, seed=4)
    model = InformationBonus()
    data = next(iter(choice_data(table).values()))
    theta = np.array([TRUE[n] for n in model.parameters.names])
    ll, _ = model.pointwise(theta, data)
    p_j = _agent_p_j(table)
    p_choice = np.where(data.y == 1, p_j, 1.0 - p_j)
    assert data.y.size == 60 and int(data.h6.sum()) == int((table.groupby("session")["horizon"].first() == 6).sum())
    np.testing.assert_allclose(np.exp(ll), p_choice, rtol=1e-12)


def test_each_horizons_parameters_are_recovered_from_its_own_games() -> None:
    """2000 games: every estimate near its own truth and far from the other horizon's (a swap of the horizons'
    labels, or horizon-6 games read as horizon 1, puts bonus_h1 near 10 and temperature_h1 near 8)."""
    fit = InformationBonus().fit_subject(next(iter(choice_data(_table(2000, seed=5)).values())))
    est = fit.params
    assert abs(est["bonus_h1"] - 0.0) < 1.5 and abs(est["bonus_h6"] - 10.0) < 2.0, est
    assert 1.5 < est["temperature_h1"] < 2.7 and 6.0 < est["temperature_h6"] < 10.5, est
    assert abs(est["bias"] - 1.5) < 0.6, est


def _recovery_table(spread: float) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    true = 7.0 + spread * rng.normal(size=30)
    return pd.DataFrame({"n_subjects": 30, "runs": 92, "n_trials": 920, "rep": 0, "subject": np.arange(30),
                         "parameter": "bonus_h6", "true": true, "estimate": true + rng.normal(0.0, 2.0, 30)})


def test_a_population_narrower_than_the_error_is_not_called_poorly_recovered() -> None:
    narrow = recovery_summary(_recovery_table(0.03))["30x920x92runs"]["parameters"]
    entry = narrow["bonus_h6"]
    assert entry["true_sd"] < 0.05 and 1.4 < entry["typical_error"] < 2.8
    assert entry["r_ceiling"] < 0.05
    call = _recovery_by_r(narrow)
    assert "r does not judge bonus_h6" in call and "poorly" not in call
    wide = recovery_summary(_recovery_table(8.0))["30x920x92runs"]["parameters"]["bonus_h6"]
    assert wide["true_sd"] > 5.0 and "r_ceiling" not in wide and wide["r"] > 0.9
