"""The plan's heartbeat counts what is done: the simulated studies of the design under way are in its
running count as they finish (it printed "0 designs and 0 simulated studies so far" while 23 were done)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
from cogtestbed.progress import Heartbeat


def test_heartbeat_detail_counts_the_phase_units_as_they_finish() -> None:
    hb = Heartbeat(lambda _: None)
    hb.phase("simulating", 24, lambda done: f"{10 + done} so far")
    assert "(10 so far)" in hb.line()
    hb.advance(23)
    assert "23/24 (33 so far)" in hb.line()


def test_power_evaluator_running_count_includes_the_design_under_way() -> None:
    ev = PowerEvaluator.__new__(PowerEvaluator)
    ev.done, ev.simulations = {}, 0
    hb = Heartbeat(lambda _: None)
    hb.phase("fixed plan: simulating 4 runs", 24, ev._so_far("first"))  # type: ignore[arg-type]
    hb.advance(23)
    assert "23/24 (0 earlier designs; 23 simulated studies so far)" in hb.line()
    ev.done, ev.simulations = {"first": 24, "second": 24}, 48  # type: ignore[dict-item]
    hb.phase("fixed plan: simulating 8 runs", 24, ev._so_far("third"))  # type: ignore[arg-type]
    hb.advance(5)
    assert "(2 earlier designs; 53 simulated studies so far)" in hb.line()


def test_a_new_design_has_an_eta_from_the_last_design_rate_before_its_first_result() -> None:
    from cogtestbed.planning.space import Point
    from cogtestbed.progress import clock

    ev = PowerEvaluator.__new__(PowerEvaluator)
    ev.seconds_per_unit = None
    assert ev.expected_seconds(Point(1, 4, 100), 24) is None  # before the first look: no rate
    ev.seconds_per_unit = 0.001  # 1 ms a simulated trial
    expected = ev.expected_seconds(Point(1, 4, 200), 24)
    assert expected == 0.001 * 24 * 4 * 200
    hb = Heartbeat(lambda _: None)
    hb.phase("fixed plan: simulating 4 runs, 200 trials per run", 24, "", expected)
    assert f"0/24, {clock(0.0)} elapsed, ETA" in hb.line() and "(at the last design's rate)" in hb.line()
    hb.advance(12)
    assert "at the last design's rate" not in hb.line()  # its own rate once a result is in


def test_pricing_each_design_is_a_counted_phase() -> None:
    from cogtestbed.planning.plan import Planner
    from cogtestbed.progress import heartbeat

    planner = Planner.__new__(Planner)
    planner.power = SimpleNamespace(workers=1)  # type: ignore[assignment]
    priced: list[int] = []
    planner.unit_cost = lambda combo: priced.append(combo["trials"])  # type: ignore[method-assign]
    with heartbeat(lambda _: None, interval=3600) as hb:
        assert hb is not None
        planner.price_sessions([{"trials": t} for t in (100, 200, 300)])
        assert hb.name.startswith("fixed plan: pricing a session of each design") and (hb.done, hb.total) == (3, 3)
    assert priced == [100, 200, 300]


def test_pricing_the_sessions_runs_on_the_plans_workers() -> None:
    """With 2 workers every combination's session is priced by the pricer's pool (its own counted phase), then read
    from its cache: the loop here ticks nothing more."""
    from cogtestbed.planning.plan import Planner
    from cogtestbed.progress import heartbeat

    planner = Planner.__new__(Planner)
    planner.power = SimpleNamespace(workers=2)  # type: ignore[assignment]
    pooled: list[tuple[list[tuple[int, int]], int]] = []
    planner.pricer = SimpleNamespace(  # type: ignore[assignment]
        price_all=lambda items, workers, label: pooled.append((list(items), workers)))
    planner.point = lambda size, combo: combo["trials"]  # type: ignore[method-assign]
    planner.design = lambda point: point  # type: ignore[method-assign]
    planner.unit_cost = lambda combo: None  # type: ignore[method-assign]
    with heartbeat(lambda _: None, interval=3600) as hb:
        assert hb is not None
        planner.price_sessions([{"trials": t} for t in (100, 200)])
        assert hb.done == 0
    assert pooled == [([(100, 3), (200, 3)], 2)]


def test_the_eta_counts_down_from_the_last_finished_unit() -> None:
    """6 of 24 units done 30 s into the phase: 90 s left then, 70 s twenty seconds later (not 150 s: the wait is
    part of the next chunk); once the countdown has run out, the rate including the wait (200 s for 6: 600 s)."""
    from cogtestbed.progress import Heartbeat

    hb = Heartbeat(lambda _: None)
    hb.phase("fixed plan: simulating 8 runs", 24)
    hb.since, hb.ticked, hb.done = 0.0, 30.0, 6
    assert [hb.remaining(30.0), hb.remaining(50.0), hb.remaining(200.0)] == pytest.approx([90.0, 70.0, 600.0])
