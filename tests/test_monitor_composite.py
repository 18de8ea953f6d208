"""The composite null of a one-LLM monitor: the region's grid, the interval stored and checked in a plan's
design, the public function's null interval, and type-I at the interval's ends."""

from __future__ import annotations

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, log_capital
from cogtestbed.planning.kinds.monitor.eprocess import tested_scale as on_scale
from cogtestbed.planning.kinds.monitor.monitor_composite import center_width, grid, region_of
from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor, sealed


def test_region_and_grids_are_disjoint_and_cover_the_corners() -> None:
    region = region_of("rw-pm", "optimism_bias")
    assert region == {"alpha": (0.05, 0.95), "beta": (1.0, 30.0)}
    choose, fresh = grid(region, (4, 3)), grid(region, (4, 3), offset=True)
    assert len(choose) == 12 and len(fresh) == 6 + 4
    key = {(p["alpha"], p["beta"]) for p in choose}
    assert not key & {(p["alpha"], p["beta"]) for p in fresh[:6]}
    assert {(0.05, 1.0), (0.95, 30.0)} <= {(p["alpha"], p["beta"]) for p in fresh}
    with pytest.raises(InputError, match="no nuisance region"):
        region_of("rw", "alpha")


def _design(**kw: object) -> dict[str, object]:
    base = {"bounds": [-1.0, 1.0], "level": 0.05, "cap": 30, "planned_bet": 0.5, "halfwidth": 0.06,
            "null_center": -0.04, "null_interval": [-0.10, 0.02], "symmetry_scale": None}
    return sealed({**base, **kw})


def test_the_null_interval_is_stored_and_checked_in_the_plan_design() -> None:
    assert checked_monitor(_design(), "run.monitor")["null_interval"] == [-0.10, 0.02]
    with pytest.raises(InputError, match="is not the null_interval"):
        checked_monitor(_design(null_interval=[-0.10, 0.05]), "run.monitor")
    edited = dict(_design())
    edited["null_interval"] = [-0.2, 0.12]
    with pytest.raises(InputError, match="edited after it was planned"):
        checked_monitor(edited, "run.monitor")


def test_public_monitor_takes_the_null_interval() -> None:
    values = [0.2] * 60  # at the interval's upper end: never rejected against it, rejected against 0 ± 0
    inside = ct.monitor(values, bounds=(-1.0, 1.0), null_interval=(-0.10, 0.21))
    outside = ct.monitor(values, bounds=(-1.0, 1.0))
    assert inside.decision == "continue" and max(inside.e_values) < 2.0
    assert outside.decision == "efficacy"
    assert center_width((-0.10, 0.06)) == pytest.approx((-0.02, 0.08))
    with pytest.raises(InputError, match="lo <= hi"):
        center_width((0.1, -0.1))


@pytest.mark.parametrize("mean", [-0.10, 0.02])
def test_type_one_at_the_interval_ends_is_at_most_alpha(mean: float) -> None:
    rng = np.random.default_rng(5)
    x = np.clip(rng.normal(mean, 0.3, (2000, 150)), -1, 1)
    x += mean - x.mean()  # the population mean exactly at the end
    c, w = center_width((-0.10, 0.02))
    y, m, width = on_scale(x - c, -1 - c, 1 - c, w)
    rate = (first_crossing(log_capital(y, m, planned=0.8, halfwidth=width), 0.05) > 0).mean()
    assert rate <= 0.05 + 1.645 * np.sqrt(0.05 * 0.95 / 2000)


def test_a_plan_with_a_composite_null_stores_the_interval_in_its_sealed_run_design() -> None:
    from cogtestbed.planning.kinds.monitor import monitor_kind as kind
    from cogtestbed.planning.kinds.monitor.monitor_pools import Pools
    from cogtestbed.runs.monitor_run import steps
    from cogtestbed.studies.study_kinds import study_spec

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2)
    rng = np.random.default_rng(2)

    def pools(role: str, n: int, seeds: tuple[int, int]) -> Pools:
        eff, nul = np.clip(rng.normal(0.3, 0.3, n), -0.9, 0.9), np.clip(rng.normal(-0.05, 0.3, n), -0.9, 0.9)
        return Pools(role, eff, nul, seeds, eff[:, None], nul[:, None])

    composite = {"interval": [-0.12, 0.04], "region": {"alpha": [0.05, 0.95], "beta": [1.0, 30.0]},
                 "points": [{"alpha": 0.5, "beta": 3.0, "mean": -0.02, "se": 0.01}], "margin_se": 2.0,
                 "null_model": "rw"}
    from cogtestbed.planning.kinds.monitor.monitor_pools import pool_seeds

    mon = kind.designs_on_pools(spec, pools("choose", 400, pool_seeds(3, "choose")),
                                pools("measure", 800, pool_seeds(3, "measure")), 12, 36, 0.8,
                                200, 3, group_sequential=False, composite=composite)
    assert mon["null_interval"] == [-0.12, 0.04] and mon["null_center"] == pytest.approx(-0.04)
    assert mon["halfwidth"] == pytest.approx(0.08) and mon["planned_bet"] > 0
    run = kind.run_settings({"subjects": 12, "max_calls": None}, mon, spec, {"subjects": 12})
    design = checked_monitor(run["monitor"], "run.monitor")
    assert design["null_interval"] == [-0.12, 0.04] and design["nuisance_region"]["beta"] == [1.0, 30.0]
    # the run's steps test the same interval: values at its upper end are never rejected
    assert not any(s["decision"] == "efficacy" for s in steps(design, [0.04] * 12))
    mon.update({k: None for k in ("dollars_effect", "dollars_null", "dollars_cap", "dollars_per_unit")})
    assert any("nuisance region alpha in [0.05, 0.95]" in line for line in kind.design_table(
        {"monitor": mon, "chosen": {"subjects": 12, "power": 0.8, "mc_se": 0.03, "design": "96 trials"}}))


@pytest.mark.slow
def test_reduced_composite_null_table_holds_alpha_at_every_point() -> None:
    """The study's ``--quick`` table: every null point's upper bound ≤ α to the cap and to 3× the cap."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "benchmarks/studies/monitor_composite.py"), "--quick"],
                         capture_output=True, text=True, check=True, cwd=root).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("alpha ")]
    assert len(rows) == 4
    for r in rows:
        assert float(r[-3]) <= 0.05 and float(r[-5]) <= 0.05  # upper bounds to 3x the cap and to the cap
    interval = next(line for line in out.splitlines() if "interval [" in line)
    lo, hi = (float(v) for v in interval.split("interval [")[1].split("]")[0].split(","))
    assert lo < 0 < hi


def test_the_composite_comparator_is_the_one_sided_t_test_against_the_interval_end() -> None:
    """At equal power the one-LLM composite monitor is compared with the fixed test valid for the same null, the
    one-sided t-test of "mean <= the interval's upper end": on N(0.3, 1) units against the end 0.1 it needs
    ((z_.95 + z_.8) / 0.2)^2 ≈ 155 units for power 0.8, where the two-sided t-test against 0 needs about 88."""
    import cogtestbed.planning.kinds.monitor.monitor_kind as kind
    from cogtestbed.planning.kinds.monitor.monitor_pools import Pools

    rng = np.random.default_rng(5)
    z = rng.standard_normal((4000, 1))
    parts = 0.3 + (z - z.mean()) / z.std()  # mean 0.3, SD 1 exactly
    measure = Pools("measure", parts[:, 0], np.empty(0), (1, 2), parts, None)
    which = np.arange(4000) % 10
    paths = {"rejected": rng.random(4000) < 0.8, "stop": np.full(4000, 60)}
    ops = {"expected_null": 60.0, "expected_null_se": 1.0}
    valid = kind._equal_power(measure, paths, which, ops, 300, "t-test", 0.05, 1.0, 0, null_end=0.1)
    plain = kind._equal_power(measure, paths, which, ops, 300, "t-test", 0.05, 1.0, 0)
    assert valid["equal_power"]["test"] == "one-sided t-test against +0.1000"
    assert 140 <= valid["equal_power"]["fixed_size"] <= 172
    assert 78 <= plain["equal_power"]["fixed_size"] <= 98
    assert valid["saving"] == pytest.approx(1 - 60 / valid["equal_power"]["fixed_size"])


def test_a_composite_monitor_is_simulated_to_three_times_the_valid_fixed_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pilot's normal approximation of the valid fixed test's size: ((z_.95 + z_.8) · sd / (mean − end))² + 2,
    at most the longest composite study; an effect inside the null interval gets the longest."""
    import cogtestbed.planning.kinds.monitor.monitor_kind as kind
    from cogtestbed.planning.kinds.monitor.monitor_pools import Pools
    from cogtestbed.studies.study_kinds import study_spec

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2)
    pilot = np.r_[np.full(30, 0.3 - 0.5), np.full(30, 0.3 + 0.5)]  # mean 0.3, sd 0.5 · sqrt(60/59)
    monkeypatch.setattr(kind, "draw_pools", lambda *a, **k: Pools("pilot", pilot, np.empty(0), (1, 2)))
    n = kind.valid_fixed_guess(spec, 96, 1, 0, {"interval": [-0.3, 0.1]}, 0.8)
    assert n == pytest.approx((2.486475 * 0.5 * np.sqrt(60 / 59) / 0.2) ** 2 + 2, rel=1e-4)
    inside = kind.valid_fixed_guess(spec, 96, 1, 0, {"interval": [-0.3, 0.35]}, 0.8)
    assert inside == kind.LONGEST_COMPOSITE / kind.MAX_FACTOR
