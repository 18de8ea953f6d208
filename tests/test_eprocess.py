"""The betting e-process of issue 74 (Waudby-Smith & Ramdas 2023): a martingale under the null, valid at
every look on bounded non-normal data, powerful under an effect, its confidence sequence covering."""

import itertools

import numpy as np
import pytest

from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, log_capital, monitor_path, rescale


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
    from cogtestbed.planning.kinds.monitor.eprocess import planned_bet

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


def test_kelly_bet_is_kellys_fraction_on_a_bernoulli_sample():
    # Kelly (1956): on a binary outcome with win probability p against a fair price m, the log-optimal
    # fraction is (p - m) / (m (1 - m)); our bet on y - m is exactly that
    from cogtestbed.planning.kinds.monitor.eprocess import kelly_bet

    y = np.r_[np.ones(70), np.zeros(30)]
    assert kelly_bet(y, 0.5) == pytest.approx((0.7 - 0.5) / 0.25, abs=1e-5)
    assert kelly_bet(y, 0.6) == pytest.approx((0.7 - 0.6) / 0.24, abs=1e-5)
    assert kelly_bet(1 - y, 0.5) == pytest.approx(-0.8, abs=1e-5)  # betting down
    assert kelly_bet(y, 0.5, halfwidth=0.25) == 0.0  # the mean 0.7 lies inside the null interval 0.5 ± 0.25
    # against the interval's end it faces: Kelly's fraction at m = 0.6
    assert kelly_bet(y, 0.5, halfwidth=0.1) == pytest.approx((0.7 - 0.6) / 0.24, abs=1e-5)


def test_a_constant_bet_is_the_bernoulli_likelihood_ratio():
    # Shafer & Vovk: betting lam on a binary y against m is the likelihood ratio of Bernoulli(q) to Bernoulli(m),
    # q = m (1 + lam (1 - m)); with the hedge weight 0 the e-process is that ratio exactly
    y = np.array([1.0, 0, 1, 1, 0, 1, 1, 1])
    m, lam = 0.4, 1.2
    q = m * (1 + lam * (1 - m))
    k = np.cumsum(y)
    t = np.arange(1, 9)
    lr = k * np.log(q / m) + (t - k) * np.log((1 - q) / (1 - m))
    np.testing.assert_allclose(log_capital(y, m, planned=lam, hedge=1e-300), lr, rtol=1e-9)


@pytest.mark.parametrize("mean", [0.35, 0.4, 0.45])
def test_the_composite_null_is_a_supermartingale_everywhere_inside(mean):
    # every Bernoulli(mean) sequence of 8 with mean anywhere in 0.4 ± 0.05: E[K_t] <= 1 at every t, equal at no end
    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=8)))
    prob = np.prod(np.where(seqs == 1.0, mean, 1 - mean), axis=1)
    ek = prob @ np.exp(log_capital(seqs, 0.4, planned=1.5, halfwidth=0.05))
    assert np.all(ek <= 1 + 1e-12) and ek[-1] < 1 - 1e-3
    # outside the interval it is not: the test has power
    prob = np.prod(np.where(seqs == 1.0, 0.7, 0.3), axis=1)
    assert (prob @ np.exp(log_capital(seqs, 0.4, planned=1.5, halfwidth=0.05)))[-1] > 2.0


def test_a_small_null_bias_breaks_a_kelly_sized_bet_and_the_null_interval_restores_it():
    # a statistic on [-1, 1] whose null mean is 0.02, not 0 (an MLE's bias): a Kelly bet against exactly 0
    # rejects far above alpha over 300 looks; against 0 ± 0.03 it stays below
    rng = np.random.default_rng(6)
    x = np.clip(rng.normal(0.02, 0.15, (2000, 300)), -1, 1)
    x += 0.02 - x.mean()
    y = rescale(x, -1, 1)
    bet = 2 * 0.9  # x-scale bet 0.9 on the rescaled scale
    naive = (first_crossing(log_capital(y, 0.5, planned=bet), 0.05) > 0).mean()
    widened = (first_crossing(log_capital(y, 0.5, planned=bet, halfwidth=0.03 / 2), 0.05) > 0).mean()
    assert naive > 0.2 and widened <= 0.05


def test_the_symmetry_test_is_a_martingale_on_any_symmetric_law():
    # unbounded tails are fine: every sign pattern of 6 draws from {±0.1, ±5} (a symmetric law) enumerated
    from cogtestbed.planning.kinds.monitor.eprocess import symmetric_unit

    vals = np.array([-5.0, -0.1, 0.1, 5.0])
    seqs = np.array(list(itertools.product(vals, repeat=6)))
    y = symmetric_unit(seqs, 0.5)
    k = np.exp(log_capital(y, 0.5, planned=1.6))
    np.testing.assert_allclose(k.mean(axis=0), np.ones(6), rtol=1e-12)
    assert k[:, -1].max() > 5.0
    with pytest.raises(ValueError, match="positive finite scale"):
        symmetric_unit(seqs, 0.0)
