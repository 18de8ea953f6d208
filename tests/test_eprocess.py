"""The betting e-process of issue 74 (Waudby-Smith & Ramdas 2023): a martingale under the null, valid at
every look on bounded non-normal data, powerful under an effect, its confidence sequence covering."""

import itertools

import numpy as np
import pytest

from cogtestbed.validation.design.eprocess import first_crossing, log_capital, monitor_path, rescale


@pytest.mark.parametrize("m", [0.3, 0.5])
def test_capital_is_a_mean_one_martingale_exactly(m):
    # every sequence of 8 Bernoulli(m) observations enumerated: E[K_t(m)] = 1 at every t (Ville's premise)
    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=8)))
    prob = np.prod(np.where(seqs == 1.0, m, 1 - m), axis=1)
    k = np.exp(log_capital(seqs, m))
    np.testing.assert_allclose(prob @ k, np.ones(8), rtol=1e-12)
    # and not trivially: the capital moves
    assert k[:, -1].max() > 3.0


def test_wrong_mean_is_not_a_martingale():
    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=8)))
    prob = np.prod(np.where(seqs == 1.0, 0.7, 0.3), axis=1)
    assert prob @ np.exp(log_capital(seqs, 0.5))[:, -1] > 1.5


def test_every_look_null_rate_below_alpha_on_skewed_bounded_data():
    rng = np.random.default_rng(1)
    # a statistic piled at its bound: mixture of a point mass at 0 and a Beta, mean known
    n, reps = 200, 4000
    at_bound = rng.random((reps, n)) < 0.3
    y = np.where(at_bound, 0.0, rng.beta(2, 5, (reps, n)))
    mean = 0.7 * 2 / 7
    rate = (first_crossing(log_capital(y, mean), 0.05) > 0).mean()
    assert rate <= 0.05
    # the repeated t-test at every look would be far above 0.05 on the same data
    t = (np.cumsum(y - mean, 1) / np.arange(1, n + 1)) / (
        np.sqrt(np.maximum(np.array([y[:, :k].var(1, ddof=1) if k > 1 else np.ones(reps) for k in range(1, n + 1)]).T,
                           1e-12)) / np.sqrt(np.arange(1, n + 1)))
    assert (np.abs(t[:, 4:]) > 1.96).any(1).mean() > 0.15


def test_power_under_an_effect_and_nan_skipped():
    rng = np.random.default_rng(2)
    y = rng.beta(3, 2, (500, 150))  # mean 0.6 against 0.5
    y[:, ::7] = np.nan
    hit = first_crossing(log_capital(y, 0.5), 0.05)
    assert (hit > 0).mean() > 0.9
    assert np.all(hit[hit > 0] % 7 != 1)  # a NaN step never crosses (its factor is 1)


def test_confidence_sequence_covers_and_shrinks():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(60):
        x = rng.uniform(-1, 1, 120) ** 3 + 0.1  # skewed-free, bounded in [-0.9, 1.1], mean 0.1
        steps = monitor_path(x, -1.0, 1.2, 0.0, 0.05, grid=201)
        covered += all(s.lower <= 0.1 <= s.upper for s in steps)
        assert steps[-1].upper - steps[-1].lower < steps[9].upper - steps[9].lower
    assert covered >= 55
    assert steps[-1].estimate == pytest.approx(np.mean(x))


def test_rescale_refuses_unbounded():
    with pytest.raises(ValueError, match="finite bounds"):
        rescale(np.zeros(3), 0.0, np.inf)


def test_the_planned_bet_keeps_the_martingale_and_grows_faster_where_right():
    from cogtestbed.validation.design.eprocess import planned_bet

    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=8)))
    prob = np.prod(np.where(seqs == 1.0, 0.4, 0.6), axis=1)
    bet = planned_bet(0.2, 0.45, 0.4)
    assert bet == pytest.approx(0.2 / (0.45 ** 2 + 0.04)) and bet <= 0.5 / 0.4
    np.testing.assert_allclose(prob @ np.exp(log_capital(seqs, 0.4, planned=bet)), np.ones(8), rtol=1e-12)
    rng = np.random.default_rng(4)
    y = rng.beta(6, 4, (400, 60))  # mean 0.6 against 0.5
    plain = first_crossing(log_capital(y, 0.5), 0.05)
    planned = first_crossing(log_capital(y, 0.5, planned=planned_bet(0.1, y.std(), 0.5)), 0.05)
    assert (planned > 0).mean() > (plain > 0).mean()
