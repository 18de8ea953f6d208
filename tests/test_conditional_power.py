"""Issue 68 item 4: an LLM-against-people plan's power and null rejection conditional on the real
human sample (the population's own participants' estimates), each with its MC SE."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogtestbed.inference.population import load_population
from cogtestbed.studies.conditional import conditional_on_sample, participants_reference
from cogtestbed.studies.study_kinds import study_spec


def _spec(effect: float = 0.4, reps: int = 30, name: str = "optimism_bias"):
    pop = load_population("human:cogbench-instrumental")
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect=name,
                      effect_size=effect, groups=2, from_population=pop, people=pop.subjects,
                      people_trials=pop.trials, subjects=(20,), reps=reps, seed=3)


def test_the_reference_is_the_populations_own_participants() -> None:
    spec = _spec()
    ref = participants_reference(spec)
    est = spec.from_population.sample_estimates()
    expected = est["alpha_pos"] - est["alpha_neg"]
    assert np.allclose(ref.values, expected[np.isfinite(expected)])
    assert len(ref.values) == 50 and "own 50 participants" in ref.source


def test_conditional_power_and_null_rejection_carry_their_mc_se() -> None:
    out = conditional_on_sample(_spec(0.3, name="alpha_pos"), sims=30, workers=1)
    power, null = out["power"], out["null_rejection"]
    assert power["sims"] == null["sims"] == 30 and out["n_participants"] == 50
    for fig in (power, null):
        assert fig["mc_se"] == pytest.approx(math.sqrt(fig["rate"] * (1 - fig["rate"]) / 30))
    assert power["rate"] > null["rate"]
