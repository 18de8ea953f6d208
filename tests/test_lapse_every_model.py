"""Lapse terms: the declared random-answer densities, recovery of ε, and the lapse unit of multi-step
trials (two-step, restless, BART) shared by simulation and likelihood.  That every model takes a lapse
term (ε = 0 is the model) is the conformance check ``lapse_likelihood``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import model_data, small_design
from cogtestbed.inference.base import with_lapse
from cogtestbed.lapse import INVALID, RANDOM, Lapse, draw_lapses, lapse_rng
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def test_declared_random_answer_densities() -> None:
    """Hand-computed log u of each family's random answer."""
    from cogtestbed.inference.bart import BartData, TargetModel
    from cogtestbed.inference.belief_models import MNLModel
    from cogtestbed.inference.probabilistic import GeneralisedBayes, JudgementData
    from cogtestbed.inference.restless import KalmanChooser, KalmanData, confidence_level_mass

    bart = TargetModel().lapse_log_uniform(BartData(np.zeros(3, np.int64), np.array([0, 3, 5]),
                                                    np.array([False, False, True])))
    assert np.allclose(bart, np.log([0.5, 0.5 ** 4, 0.5 ** 5]))
    assert np.allclose(confidence_level_mass(np.array([1, 2, 50, 98, 99])), [0.015, 0.01, 0.01, 0.01, 0.015])
    assert confidence_level_mass(np.arange(1, 100)).sum() == pytest.approx(1.0)
    conf = KalmanChooser().lapse_log_uniform(KalmanData(np.zeros(3, np.int64), np.array([-1, 1, 40]),
                                                        np.zeros(3), np.zeros(3, np.int64)))
    assert np.allclose(conf, np.log([0.5, 0.5 * 0.015, 0.5 * 0.01]))
    y = np.array([-2.0, 0.0, 3.0])
    q = 1 / (1 + np.exp(-y))
    prob = GeneralisedBayes().lapse_log_uniform(JudgementData(y, y, y))
    assert np.allclose(prob, np.log(q * (1 - q)))
    belief = MNLModel().lapse_log_uniform(type("D", (), {"a": np.zeros(4, np.int64)})())
    assert np.allclose(belief, -math.log(3))


def test_magnitude_uniform_is_over_the_task_answer_range() -> None:
    spec = get_experiment("magnitude")
    table = simulate(spec, "linear", 1, 0, design=small_design(spec, CheckConfig()), lapse=Lapse(0.2, 0.0))
    model = spec.model("kalman")
    data = next(iter(model.subject_data(table).values()))
    log_u = model.lapse_log_uniform(data)
    width = {"marker-location": 1.0, "line-ratio": 1.0, "maze-distance": 100.0, "duration": 600.0}
    tasks = table.sort_values(["session", "trial"], kind="stable")["task"].astype(str)
    expected = np.where(data.valid, -np.log(tasks.map(width).to_numpy(float)), 0.0)
    assert not data.valid.all()
    assert np.allclose(log_u, expected)


def test_revealed_random_answer_is_a_flat_dirichlet_or_uniform_draws() -> None:
    spec = get_experiment("revealed-belief")
    model, data = model_data(spec, "dissonant", CheckConfig())
    log_u = model.lapse_log_uniform(data)
    k, method, nsamp = data.k, data.method, data.nsamp
    expected = np.where(method == 0, [math.lgamma(v) for v in k], -nsamp * np.log(k))
    assert np.allclose(log_u, expected)


@pytest.mark.parametrize(("experiment", "agent", "model", "design", "rate", "tol"), [
    ("magnitude", "linear", "linear",
     {"task": "duration", "conditions": ("base",), "modalities": ("text",), "trials_per_session": 100}, 0.2, 0.06),
    ("bart", "target", "target", {"balloons_per_type": 60}, 0.2, 0.08),
    pytest.param("collider", "cbn", "cbn-4p", {}, 0.2, 0.06, marks=pytest.mark.slow),
])
def test_fitted_lapse_recovers_the_simulated_random_rate(experiment: str, agent: str, model: str,
                                                         design: dict, rate: float, tol: float) -> None:
    """One subject with 300 answers (BART: 180 balloons) and 20 % random lapses (plus 5 % invalid):
    the fitted ε is within ``tol`` (about 2.5 binomial SEs) of 0.2; random answers are drawn exactly
    as the mixture's uniform says."""
    spec = get_experiment(experiment)
    gen = spec.generator(model)
    m = spec.model(model)
    truth = {p.name: np.array([p.default]) for p in m.parameters}
    agent_params = {k: np.asarray(v, dtype=np.float64) for k, v in gen.agent_params(truth).items()}
    n = 1 if experiment != "collider" else 6
    params = {k: np.repeat(v, n) for k, v in agent_params.items()}
    table = simulate(spec, gen.agent, n, 3, params, design=spec.design_cls(**design), lapse=Lapse(0.05, rate))
    table = table.assign(subject=0, session=table["subject"]) if n > 1 else table
    fit = with_lapse(m).fit_mle(table)
    assert abs(float(fit["lapse"].iloc[0]) - rate) < tol


def test_two_step_lapses_cover_whole_trials() -> None:
    """A lapse covers both stages: an invalid trial is invalid at its first stage (no second stage
    asked) exactly where the trial's lapse is INVALID; a random trial answers both stages at random."""
    spec = get_experiment("two-step")
    design = spec.design_cls()
    lapse, n, seed = Lapse(0.2, 0.0), 6, 4
    table = simulate(spec, "hybrid", n, seed, lapse=lapse)
    kind = draw_lapses(lapse, lapse_rng(seed), n, spec.env_cls.max_steps(design)).kind[:, :design.n_trials]
    valid = table.sort_values(["subject", "trial"])["valid"].to_numpy().reshape(n, -1)
    assert np.array_equal(~valid, kind == INVALID)
    rand = simulate(spec, "hybrid", 200, seed, {"beta": 20.0}, lapse=Lapse(0.0, 1.0))
    for column in ("action", "action2"):
        share = float((rand[column] == rand[column].min()).mean())
        assert abs(share - 0.5) < 4 * math.sqrt(0.25 / len(rand))


def test_bart_lapses_cover_whole_balloons() -> None:
    spec = get_experiment("bart")
    lapse, n, seed = Lapse(0.3, 0.0), 5, 2
    table = simulate(spec, "target", n, seed, lapse=lapse)
    kind = draw_lapses(lapse, lapse_rng(seed), n, spec.env_cls.max_steps(spec.design_cls())).kind
    balloons = int(len(table) / n)
    valid = table.sort_values(["subject", "trial"])["valid"].to_numpy().reshape(n, balloons)
    assert np.array_equal(~valid, kind[:, :balloons] == INVALID)
    assert (kind[:, :balloons] == RANDOM).sum() == 0


@pytest.mark.slow
def test_two_step_fitted_lapse_recovers_the_per_trial_rate() -> None:
    """Simulated per-trial lapses are what the per-trial mixture models: one model-based subject,
    1000 trials with 25 % random trials and 5 % invalid ones, ε̂ within 0.06 of 0.25."""
    spec = get_experiment("two-step")
    table = simulate(spec, "model-based", 1, 5, {"alpha": 0.5, "beta": 6.0, "persev": 0.2},
                     design=spec.design_cls(n_days=1000), lapse=Lapse(0.05, 0.25))
    fit = with_lapse(spec.model("model-based")).fit_mle(table)
    assert abs(float(fit["lapse"].iloc[0]) - 0.25) < 0.06
