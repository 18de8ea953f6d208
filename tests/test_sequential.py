"""Group-sequential boundaries against published tables and against simulation."""

from __future__ import annotations

import numpy as np
import pytest

from cogtestbed.planning.kinds.sequential.sequential import (
    crossing_probabilities,
    efficacy_bounds,
    expected_information,
    futility_bounds,
    spent,
)

EQUAL3 = [1 / 3, 2 / 3, 1.0]
EQUAL5 = [0.2, 0.4, 0.6, 0.8, 1.0]


@pytest.mark.parametrize(
    ("fractions", "spending", "published"),
    [
        # gsDesign(k = 3, test.type = 1, alpha = 0.025, sfu = sfLDOF): upper bounds
        (EQUAL3, "obrien-fleming", [3.7103, 2.5114, 1.9930]),
        # DeMets & Lan (1994), Table 1, one-sided 0.025, five equally spaced looks
        (EQUAL5, "obrien-fleming", [4.877, 3.357, 2.680, 2.290, 2.031]),
        (EQUAL5, "pocock", [2.438, 2.427, 2.410, 2.397, 2.386]),
    ],
)
def test_efficacy_bounds_match_published_tables(fractions: list[float], spending: str, published: list[float]) -> None:
    bounds = efficacy_bounds(fractions, 0.025, spending)  # type: ignore[arg-type]
    np.testing.assert_allclose(bounds, published, atol=1.5e-3)


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
def test_the_bounds_spend_exactly_alpha_and_a_simulation_agrees(spending: str) -> None:
    fractions = [0.3, 0.55, 1.0]
    bounds = efficacy_bounds(fractions, 0.05, spending)  # type: ignore[arg-type]
    crossing = crossing_probabilities(fractions, bounds)
    np.testing.assert_allclose(np.cumsum(crossing.efficacy), spent(np.array(fractions), 0.05, spending), atol=1e-7)  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    n = 200_000
    steps = rng.standard_normal((n, 3)) * np.sqrt(np.diff([0.0, *fractions]))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    simulated = float((z >= bounds).any(axis=1).mean())
    assert abs(simulated - 0.05) < 4 * np.sqrt(0.05 * 0.95 / n)


def test_power_rises_with_drift_and_futility_lowers_both_error_rates() -> None:
    bounds = efficacy_bounds(EQUAL5, 0.025)
    fixed_drift = 1.959964 + 0.841621  # 80 % power of a fixed one-sided test at .025
    power = crossing_probabilities(EQUAL5, bounds, drift=fixed_drift).reject
    assert 0.78 < power < 0.80  # the sequential design needs slightly more information
    futility = futility_bounds(EQUAL5, bounds, drift=fixed_drift * 1.03, beta=0.2)
    assert np.all(np.diff(futility) > 0) and futility[-1] == bounds[-1]
    null = crossing_probabilities(EQUAL5, bounds, futility, drift=0.0)
    assert null.reject < 0.025
    assert null.reject + null.futility.sum() == pytest.approx(1.0, abs=1e-9)
    assert expected_information(EQUAL5, null) < 0.6  # most null runs stop early for futility


@pytest.mark.parametrize(
    ("fractions", "alpha"),
    [([0.5, 0.4, 1.0], 0.05), ([0.5, 0.9], 0.05), ([0.0, 1.0], 0.05), ([0.5, 1.0], 0.7), ([float("nan"), 1.0], 0.05)],
)
def test_bad_designs_are_refused(fractions: list[float], alpha: float) -> None:
    with pytest.raises(ValueError):
        efficacy_bounds(fractions, alpha)
