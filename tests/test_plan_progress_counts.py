"""The plan's heartbeat counts what is done: the simulated studies of the design under way are in its
running count as they finish (it printed "0 designs and 0 simulated studies so far" while 23 were done)."""

from __future__ import annotations

from cogtestbed.progress import Heartbeat
from cogtestbed.validation.design.power_sims import PowerEvaluator


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
