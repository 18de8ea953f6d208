"""What keeps ``cogtestbed plan`` fast without changing what it computes: the MLE start order
(vectorised, the same order as the per-axis reference), the probit-guided size ladder and the
early stop of a hopeless top-up."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from cogtestbed.inference.base import grid_neighbours
from cogtestbed.registry import get_experiment
from cogtestbed.validation.design.plan import Axis, Estimate, Planner, Point


def reference_start_order(grid_nll: np.ndarray, points: int, ndim: int) -> np.ndarray:
    """The start order as first written: local minima along every axis (per-axis views), best first."""
    order = np.argsort(grid_nll, kind="stable")
    values = grid_nll.reshape((points,) * ndim)
    is_min = values <= np.inf
    for axis in range(ndim):
        v, m = np.moveaxis(values, axis, 0), np.moveaxis(is_min, axis, 0)
        m[1:] &= v[1:] <= v[:-1]
        m[:-1] &= v[:-1] <= v[1:]
    flat = is_min.reshape(-1)
    return np.concatenate([order[flat[order]], order[~flat[order]]])


@pytest.mark.parametrize(("points", "ndim"), [(9, 1), (7, 2), (9, 3), (5, 4)])
def test_start_order_equals_the_per_axis_reference(points: int, ndim: int) -> None:
    model: Any = get_experiment("instrumental-learning").model("rw-pm")
    probe = type("Probe", (), {"grid_points": points, "parameters": [None] * ndim})()
    rng = np.random.default_rng(points * 10 + ndim)
    for k in range(60):
        g = rng.normal(size=points ** ndim)
        if k % 3 == 0:
            g = np.round(g, 1)  # ties between neighbours
        if k % 4 == 0:
            g[rng.integers(0, g.size, 3)] = np.nan
        if k % 5 == 0:
            g[rng.integers(0, g.size, 2)] = np.inf
        got = type(model).start_order(probe, g)
        np.testing.assert_array_equal(got, reference_start_order(g, points, ndim))


def test_grid_neighbours_are_the_adjacent_pairs() -> None:
    node, neighbour = grid_neighbours(3, 2)
    pairs = set(zip(node.tolist(), neighbour.tolist(), strict=True))
    assert len(pairs) == len(node) == 2 * 2 * 2 * 3  # 2 directions x 2 axes x 2 gaps x 3 lines
    assert (4, 1) in pairs and (1, 4) in pairs and (4, 3) in pairs and (0, 4) not in pairs


class _Power:
    """Recorded looks of a planner (design → hits/sims), standing in for the simulations."""

    def __init__(self, looks: dict[Point, Estimate]) -> None:
        self.looks = looks

    @property
    def done(self) -> dict[Point, int]:
        return {p: e.sims for p, e in self.looks.items()}

    def estimate(self, point: Point) -> Estimate:
        return self.looks.get(point, Estimate(0, 0))


def _planner(looks: dict[Point, Estimate]) -> Planner:
    planner = Planner.__new__(Planner)
    planner.size, planner.others, planner.target = Axis("subjects", tuple(range(10, 201))), [], 0.8
    planner.power = _Power(looks)  # type: ignore[assignment]
    return planner


def test_the_size_ladder_follows_the_probit_curve_after_two_failures() -> None:
    # a t-test-shaped power curve: Φ(a + b√n) with power 0.8 at n = 30
    b = 0.55
    a = float(stats.norm.ppf(0.8)) - b * math.sqrt(30)
    power = {n: float(stats.norm.cdf(a + b * math.sqrt(n))) for n in (10, 20)}
    values = list(range(10, 201))
    one = _planner({Point(10, 1, None): Estimate(round(96 * power[10]), 96)})
    assert one.next_rung({}, values, 10) == 20  # one failed size: double
    two = _planner({Point(n, 1, None): Estimate(round(960 * power[n]), 960) for n in (10, 20)})
    nxt = two.next_rung({}, values, 20)
    assert 28 <= nxt <= 32  # where the fitted curve reaches 80 %, not the doubled 40
    flat = _planner({Point(10, 1, None): Estimate(0, 96), Point(20, 1, None): Estimate(3, 96)})
    assert flat.next_rung({}, values, 20) == 40  # hardly any detection yet: no extrapolation, double


def test_a_top_up_stops_once_the_design_is_clearly_below_the_target() -> None:
    planner = _planner({})
    assert planner.futile(Estimate(30, 48))  # 0.62: 3 SEs below 0.8
    assert not planner.futile(Estimate(37, 48))  # 0.77: within 2 SEs
    assert not planner.futile(Estimate(0, 0))
