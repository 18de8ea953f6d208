"""The power ceiling a fixed group of people puts on a plan of an LLM against them (issue 71): the search
stops once the ceiling is shown below the target instead of doubling the LLM's size without end."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scipy import stats

from cogtestbed.planning.ceiling import people_ceiling
from cogtestbed.planning.kinds.power.power_sims import Estimate
from cogtestbed.planning.plan import Planner
from cogtestbed.planning.space import Axis, Point
from cogtestbed.studies.study_kinds import PowerStudy

SIZES = np.array([10.0, 20.0, 40.0, 80.0])


def curve(a: float, b: float, n: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(1 / np.sqrt(a + b / n) - stats.norm.ppf(0.975))


def test_a_people_limited_curve_is_shown_below_the_target_and_its_ceiling_estimated() -> None:
    got = people_ceiling(SIZES, curve(0.2, 3.0, SIZES) * 192, [192] * 4, 0.8)
    assert got is not None and got.below and got.sizes == 4
    assert got.rate == pytest.approx(float(curve(0.2, 0.0, np.array([1.0]))[0]), abs=0.01)  # 0.609


def test_a_reachable_target_is_not_stopped() -> None:
    got = people_ceiling(SIZES, curve(0.05, 3.0, SIZES) * 96, [96] * 4, 0.8)  # ceiling 0.99
    assert got is not None and not got.below and got.lr == 0.0


def test_noisy_looks_near_the_target_are_not_enough_to_stop() -> None:
    # the measured λ + 0.5 ladder against 30 people at 24-48 simulations a size: ceiling ~0.66, not yet
    # shown at 80 LLM subjects; shown once 160 gives 0.667 of 48
    got = people_ceiling(SIZES, [11, 10, 14, 30], [24, 24, 24, 48], 0.8)
    assert got is not None and 0.6 < got.rate < 0.72 and not got.below
    more = people_ceiling([*SIZES, 160], [11, 10, 14, 30, 32], [24, 24, 24, 48, 48], 0.8)
    assert more is not None and more.below and more.sizes == 5


def test_fewer_than_three_sizes_give_no_ceiling() -> None:
    assert people_ceiling(SIZES[:2], [5, 10], [24, 24], 0.8) is None


@pytest.mark.slow
def test_false_stops_stay_rare_when_the_ceiling_is_above_the_target() -> None:
    """Simulated ladders (10-80 LLM subjects, 24-48 simulations a size) whose true ceiling is 0.9, the target
    0.8: stopped at most 5 % of the time."""
    z = stats.norm.ppf(0.975)
    a = 1 / (stats.norm.ppf(0.9) + z) ** 2
    p = curve(a, 3.0, SIZES)
    rng = np.random.default_rng(5)
    stops = sum(bool(getattr(people_ceiling(SIZES, rng.binomial([24, 24, 48, 48], p), [24, 24, 48, 48], 0.8),
                             "below", False)) for _ in range(200))
    assert stops <= 10


def _planner(people: int | None, looks: dict[Point, Estimate]) -> Planner:
    planner = Planner.__new__(Planner)
    planner.size, planner.others, planner.target = Axis("subjects", tuple(range(10, 201))), [], 0.8
    spec: Any = PowerStudy.model_construct(groups=2, people=people, reference=None, level=0.05)  # type: ignore[call-arg]
    planner.spec, planner.ceiling, planner.say = spec, None, lambda _m: None
    planner.power = SimpleNamespace(done={p: e.sims for p, e in looks.items()},  # type: ignore[assignment]
                                    estimate=lambda p: looks.get(p, Estimate(0, 0)))
    return planner


def test_the_search_stops_for_fixed_people_only_and_says_why() -> None:
    p = curve(0.2, 3.0, SIZES)
    looks = {Point(int(n), 1, None): Estimate(int(round(192 * q)), 192) for n, q in zip(SIZES, p, strict=True)}
    fixed = _planner(30, looks)
    assert fixed.people_limited({}) and fixed.ceiling is not None
    assert "against the fixed 30 people the power levels off at about 0.61" in fixed.ceiling.words(30, 0.8)
    assert "at 5 %" in fixed.ceiling.words(30, 0.8)
    two_llms = _planner(None, looks)
    assert not two_llms.people_limited({}) and two_llms.ceiling is None
