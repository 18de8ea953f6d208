"""The restless bandit's Kalman-chooser model: report probabilities, data handling, recovery."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogtestbed.inference.restless import interval_log_prob, kalman_pointwise_kernel
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

EXP = get_experiment("restless-bandit")
MODEL = EXP.model("kalman")
TRUE = {"drift_sd": 4.0, "beta": 0.3, "confidence_gain": 1.2, "confidence_bias": 0.3,
        "confidence_noise": 0.5}


def _level_probs(gain: float, bias: float, noise: float) -> np.ndarray:
    """P(report level k), k = 1…99, from the kernel at equal beliefs (β = 0)."""
    choice = np.zeros(99, dtype=np.int64)
    levels = np.arange(1, 100, dtype=np.int64)
    theta = np.tile([0.0, 0.0, gain, bias, noise], (99, 1))
    # 99 one-trial subjects at the prior (equal beliefs, u = 0), each choosing arm 0
    ll, _ = kalman_pointwise_kernel(theta, np.arange(99, dtype=np.int64), choice, levels,
                                    np.full(99, 50.0), np.ones(99, dtype=np.int64))
    return np.exp(ll - math.log(0.5))  # β = 0: the choice term is log ½


@pytest.mark.parametrize("gain,bias,noise", [(1.0, 0.0, 0.5), (2.0, 1.5, 0.05), (0.5, -1.0, 0.3)])
def test_report_levels_form_a_distribution(gain: float, bias: float, noise: float) -> None:
    p = _level_probs(gain, bias, noise)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    # the mode is the level of σ(μ) (μ = κ·logit ½ + δ = δ at equal beliefs)
    assert abs(int(np.argmax(p)) + 1 - round(100 / (1 + math.exp(-bias)))) <= 1


def test_interval_log_prob_tails_and_gradient() -> None:
    # beyond Φ's double range the log-probability is −inf with no gradient (the kernel floors it)
    assert interval_log_prob(-40.0, -39.0) == (-np.inf, 0.0, 0.0)
    for lo, hi in ((-1.0, 0.5), (8.0, 9.0), (-30.0, -29.0), (-np.inf, -3.0), (3.0, np.inf)):
        lp, d_lo, d_hi = interval_log_prob(lo, hi)
        assert np.isfinite(lp)
        if np.isfinite(lo):
            fd = (interval_log_prob(lo + 1e-5, hi)[0] - interval_log_prob(lo - 1e-5, hi)[0]) / 2e-5
            assert d_lo == pytest.approx(fd, rel=1e-4, abs=1e-9)
        if np.isfinite(hi):
            fd = (interval_log_prob(lo, hi + 1e-5)[0] - interval_log_prob(lo, hi - 1e-5)[0]) / 2e-5
            assert d_hi == pytest.approx(fd, rel=1e-4, abs=1e-9)


def test_invalid_choices_are_dropped_and_missing_confidence_counts_only_the_choice() -> None:
    t = simulate(EXP, "kalman", 1, 0, TRUE)
    t.loc[t.index[3], "valid"] = False
    t.loc[t.index[5], ["confidence", "confidence_valid"]] = [np.nan, False]
    d = next(iter(MODEL.subject_data(t).values()))
    assert d.choice.shape[0] == len(t) - 1
    assert (d.conf_level == -1).sum() == 1 and d.new_session[0] == 1 and d.new_session[1:].sum() == 0
    assert MODEL.n_observations(d) == 2 * (len(t) - 1) - 1


def test_mle_recovers_the_kalman_agent() -> None:
    design = EXP.env_cls.design_cls(block_lengths=(21, 20, 20, 19) * 3)
    t = simulate(EXP, "kalman", 4, 3, TRUE, design=design)
    fits = MODEL.fit_mle(t)
    assert fits["converged"].all()
    tolerance = {"drift_sd": 1.0, "beta": 0.12, "confidence_gain": 0.2, "confidence_bias": 0.2,
                 "confidence_noise": 0.1}
    for name, tol in tolerance.items():
        assert np.all(np.abs(fits[name] - TRUE[name]) < tol), (name, fits[name].tolist())
