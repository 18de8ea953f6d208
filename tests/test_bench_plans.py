"""Issue 71 items 1-2: ``benchmarks/bench_plans.py``'s figures (each look of a plan's search timed from its
lines, the idle-wall estimate) and the plan's estimate of a look on its workers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_plans", ROOT / "benchmarks" / "bench_plans.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_plans"] = module
    spec.loader.exec_module(module)
    return module


def test_each_look_is_timed_from_the_estimate_line_to_its_result_line() -> None:
    bench = _bench()
    said = [(1.0, "note: x\n"), (2.0, "estimate: one simulation takes about 0.1 s ..., so a look of 24-96 simulations "
                                      "takes 1.2 s to 40 s on 2 workers (shared among them); ...\n"),
            (5.0, "fixed plan: simulating 10 subjects: 12/24\n"),
            (7.5, "10 subjects (96 trials per run): power 0.25 ± 0.088 MC SE [0.12, 0.45] (24 sims)\n"),
            (19.5, "20 subjects (96 trials per run): power 0.81 ± 0.04 MC SE [0.72, 0.87] (96 sims)\n"),
            (30.0, "20 subjects: 0.760 after 200 sims, below target\n")]
    assert bench.look_seconds(said) == pytest.approx([5.5, 12.0])
    assert bench.look_seconds(said[:1]) == []
    look = bench.LOOK.search(" ".join("".join(line for _, line in said).split()))
    assert (bench.seconds_of(look["lo"]), bench.seconds_of(look["hi"])) == (1.2, 40.0)
    old = bench.LOOK.search("so a look of 24-96 simulations takes 3.7 s to 24 min 21 s before the workers share it")
    assert bench.seconds_of(old["hi"]) == 24 * 60 + 21


def test_the_idle_wall_is_the_serial_part_plus_the_workers_share() -> None:
    bench = _bench()
    assert bench.idle_wall(130.0, 4.0) == pytest.approx(4.0 + 126.0 / 2)
    assert bench.idle_wall(10.0, 10.0) == 10.0 and bench.idle_wall(9.0, 12.0) == 12.0  # --workers 1: all serial


def test_a_plans_look_estimate_is_shared_among_its_workers() -> None:
    from cogtestbed.planning.estimate import plan_look_line
    from cogtestbed.planning.space import Point
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_kinds import study_spec

    bench = _bench()
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.4, subjects=(4,), trials=(48,), reps=1, seed=1)
    exp = get_experiment("instrumental-learning")
    line = plan_look_line(spec, exp, Point(2, 1, 24), Point(20, 1, 48), 24, 96, workers=2)
    assert "on 2 workers (shared among them)" in line
    one, big = (bench.seconds_of(x) for x in bench.re.findall(r"takes about (.+?) at the smallest design and (.+?) at",
                                                               line)[0])
    look = bench.LOOK.search(line)
    assert bench.seconds_of(look["lo"]) == pytest.approx(24 * one / 2 / 2, rel=0.1)  # LOW_END
    assert bench.seconds_of(look["hi"]) == pytest.approx(96 * big / 2, rel=0.1)
    assert big == pytest.approx(one * 20, rel=0.1)  # 10x the subjects, 2x the trials


def test_the_slowest_step_is_the_plans_not_its_populations_fit() -> None:
    bench = _bench()
    payload = {"study": {"from_population": {"fit": {"seconds": 572.1}}}, "search": {"seconds": 40.0},
               "fit_check": {"seconds": 3.0}}
    assert bench.slowest(payload) == ("search", 40.0)


def test_a_look_below_a_size_already_fitted_is_told_apart() -> None:
    bench = _bench()
    said = [(0.0, "estimate: ... a look of 24-96 simulations takes 1 s to 9 s on 2 workers\n"),
            (2.0, "10 subjects, repetitions=1 (98 trials per run): power 0.58 ± 0.07 MC SE [0.44, 0.71] (48 sims)\n"),
            (9.0, "33 subjects, repetitions=1 (98 trials per run): power 0.84 ± 0.04 MC SE [0.76, 0.9] (96 sims)\n"),
            (9.3, "30 subjects, repetitions=1 (98 trials per run): power 0.77 ± 0.04 MC SE [0.68, 0.84] (96 sims)\n")]
    assert bench.reused_looks(said) == [False, False, True]
    assert bench.look_seconds(said) == pytest.approx([2.0, 7.0, 0.3])


def test_the_pilots_are_made_by_the_docs_own_commands() -> None:
    """Each pilot a documented plan reads is made by the command the docs make it with, word for word."""
    pages = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in
                     [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    for name, command in _bench().PILOTS.items():
        assert command.format(out=name) in pages.replace(" \\ ", " "), name
