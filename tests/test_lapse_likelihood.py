"""The lapse mixture of a cognitive model's likelihood: value, gradient, PyMC, recovery of ε."""

from __future__ import annotations

import numpy as np
import pytest
from pymc_checks import pymc_logp_and_nll

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import small_design
from cogtestbed.conformance.likelihood_checks import finite_difference_grad, likelihood_points
from cogtestbed.inference.base import LAPSE, lapse_option, with_lapse
from cogtestbed.lapse import Lapse
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import as_sessions, simulate

EXP = get_experiment("instrumental-learning")
RWPM = {"alpha_pos": 0.5, "alpha_neg": 0.2, "beta": 5.0}


def test_lapse_option_parses_and_rejects() -> None:
    assert lapse_option("none") is None
    assert lapse_option("fit") == "fit"
    assert lapse_option("fixed=0.05") == 0.05
    for bad in ("fixed=1.2", "fixed=x", "sometimes"):
        with pytest.raises(ValueError, match="`lapse`"):
            lapse_option(bad)


def test_nll_is_the_hand_computed_mixture() -> None:
    """Tiny case: 3 trials of one casino, RW± by hand, p = 0.9·p_model + 0.1·½."""
    table = simulate(EXP, "rw-pm", 1, 0, RWPM, lapse=Lapse(0.1, 0.2)).head(40)
    table = table[table["casino"] == table["casino"].iloc[0]].head(3)
    model = with_lapse(EXP.model("rw-pm"), 0.1)
    data = next(iter(model.subject_data(table).values()))
    v = np.full(2, 0.5)
    expected = 0.0
    for a, r, ok in zip(table["action"], table["reward"], table["valid"], strict=True):
        if not ok:
            continue
        p0 = 1.0 / (1.0 + np.exp(-5.0 * (v[0] - v[1])))
        p = p0 if a == 0 else 1 - p0
        expected += np.log(0.9 * p + 0.1 * 0.5)
        delta = r - v[a]
        v[a] += (0.5 if delta > 0 else 0.2) * delta
    assert model.nll(np.array([0.5, 0.2, 5.0]), data) == pytest.approx(-expected, rel=1e-12)


@pytest.mark.parametrize(("experiment", "name"), [("instrumental-learning", "rw-pm"), ("two-step", "hybrid"),
                                                  ("horizon", "info-bonus"), ("temporal-discounting", "hyperbolic")])
def test_gradient_with_a_fitted_lapse_matches_finite_differences(experiment: str, name: str) -> None:
    spec = get_experiment(experiment)
    base = spec.model(name)
    model = with_lapse(base)
    assert model.parameters.names == (*base.parameters.names, "lapse")
    gen = spec.generator(name)
    runs = 30 if spec.pooling_unit == "session" else 1  # horizon: a run is one game
    agent = gen.agent_params({p.name: np.full(runs, p.default) for p in base.parameters})
    table = as_sessions(simulate(spec, gen.agent, runs, 3, agent, design=small_design(spec, CheckConfig(quick=False)),
                                 lapse=Lapse(0.1, 0.1)), runs)
    data = next(iter(model.subject_data(table).values()))
    for theta in likelihood_points(model.parameters, 5):
        nll, grad = model.nll_grad(theta, data)
        fd = finite_difference_grad(lambda t, d=data: model.nll(t, d), theta, model.parameters)
        assert np.allclose(grad, fd, rtol=1e-5, atol=1e-5 * (1 + abs(nll)))
        ll, _ = model.pointwise(theta, data)
        assert nll == pytest.approx(-ll.sum(), rel=1e-12)


def test_zero_lapse_is_the_model() -> None:
    model = EXP.model("rw-pm")
    table = simulate(EXP, "rw-pm", 1, 2, RWPM)
    data = next(iter(model.subject_data(table).values()))
    lapsed = with_lapse(model, 0.0)
    ldata = next(iter(lapsed.subject_data(table).values()))
    theta = np.array([0.4, 0.3, 4.0])
    assert lapsed.nll(theta, ldata) == pytest.approx(model.nll(theta, data), rel=1e-12)


def test_pymc_logp_equals_the_lapse_nll() -> None:
    model = with_lapse(EXP.model("rw-pm"))
    trials = simulate(EXP, "rw-pm", 3, 4, RWPM, lapse=Lapse(0.1, 0.1))
    logp, nll = pymc_logp_and_nll(model, trials, 3)
    assert logp == pytest.approx(-nll, rel=1e-10)


@pytest.mark.slow
def test_lapse_rate_is_recovered() -> None:
    """Pooled over 40 RW± subjects with 20 % random answers, the fitted ε is near 0.2."""
    table = simulate(EXP, "rw-pm", 40, 8, RWPM, lapse=Lapse(0.05, 0.2), design=EXP.design_cls(visits_per_casino=48))
    fits = with_lapse(EXP.model("rw-pm")).fit_mle(table)
    assert abs(float(fits["lapse"].median()) - 0.2) < 0.08
    assert LAPSE.transform == "logit"


def test_recovery_study_fits_the_lapse_term() -> None:
    """A declared-style recovery with simulated lapses and a fitted ε: the spec round-trips through
    JSON (as workers receive it) and ε is scored against the simulated random-answer rate."""
    from cogtestbed.studies.driver import load_study, run_study, study_spec

    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(3,),
                     reps=1, seed=2, sampler="uniform", lapse=Lapse(0.08, 0.05), lapse_fit="fit")
    assert load_study(spec.model_dump_json()) == spec
    rows = run_study(spec, workers=1).table
    lapse_rows = rows[rows["parameter"] == "lapse"]
    assert len(lapse_rows) == 3
    assert np.allclose(lapse_rows["true"], 0.05)
    assert set(rows["parameter"]) == {"alpha_pos", "alpha_neg", "beta", "lapse", "optimism_bias"}
