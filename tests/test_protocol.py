"""The evaluation protocol: choosing and reporting seed streams apart, every printed figure from the reporting
one, the plan kinds' declarations checked, and the equal-power comparator measured on values."""

from __future__ import annotations

import numpy as np
import pytest

from cogtestbed.planning.equal_power import equal_power_saving, power_curve, size_at
from cogtestbed.planning.kinds import PlanKind, Planned
from cogtestbed.planning.plan_kinds import get_plan_kind, plan_kind_names
from cogtestbed.planning.protocol import ProtocolError, SeedStreams, check_kind, jackknife

#: Registered kinds whose printed figures are not routed through the protocol (their declaration is missing):
#: none; the test fails when a new kind comes without one.
UNDECLARED: set[str] = set()


def test_choosing_and_reporting_streams_differ_and_are_reproducible() -> None:
    a, b = SeedStreams(3, 74), SeedStreams(3, 74)
    choose, report, pilot = a.choosing(4), a.reporting(4), a.choosing(4, pilot=True)
    assert not set(choose) & set(report) and not set(pilot) & set(report) and not set(pilot) & set(choose)
    assert b.choosing(4) == choose and b.reporting(4) == report  # one seed, one set of streams
    assert SeedStreams(4, 74).reporting(4) != report and SeedStreams(3, 75).reporting(4) != report
    # the monitor's pools keep the seeds they had: [seed, 74, role] as before the protocol
    state = np.random.SeedSequence([3, 74, 1]).generate_state(2)
    assert report[:2] == tuple(int(s >> 1) for s in state)


def test_a_figure_from_a_choosing_stream_is_refused() -> None:
    streams = SeedStreams(0, 1)
    choose, report = streams.choosing(2), streams.reporting(2)
    fig = streams.report("power", 0.81, 0.01, report)
    assert fig.value == 0.81 and fig.interval() == pytest.approx((0.81 - 0.0196, 0.81 + 0.0196))
    with pytest.raises(ProtocolError, match="power is reported from seeds .* choosing stream"):
        streams.report("power", 0.9, 0.01, choose)
    with pytest.raises(ProtocolError, match="no seeds"):
        streams.report("power", 0.9, 0.01, ())
    with pytest.raises(ProtocolError, match="reported no figure"):
        SeedStreams(0, 1).check()


def _bad_protocol(seed: int) -> SeedStreams:
    """A kind that picks its design on the choosing pools and prints their power."""
    streams = SeedStreams(seed, 999)
    chosen = streams.choosing(2)
    streams.reporting(2)
    streams.report("power", 0.8, 0.01, chosen)
    return streams


def _run(exp: object, req: object, ctx: object) -> Planned:
    return Planned({})


def test_the_registry_check_fails_a_kind_that_reports_from_its_choosing_pools() -> None:
    declared = {name for name in plan_kind_names() if get_plan_kind(name).protocol is not None}
    for name in declared:
        check_kind(get_plan_kind(name))
    assert set(plan_kind_names()) - declared == UNDECLARED
    for name in UNDECLARED:
        with pytest.raises(ProtocolError, match="declares no evaluation protocol"):
            check_kind(get_plan_kind(name))
    assert "monitor" in declared
    with pytest.raises(ProtocolError, match="choosing stream"):
        check_kind(PlanKind("bad", "reports from its choosing pools", _run, protocol=_bad_protocol))


def test_the_monitor_declaration_follows_its_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The monitor's declaration draws its pools by the roles its plan uses: reporting from the choosing role
    fails the check."""
    import cogtestbed.planning.kinds.monitor.monitor_kind as kind

    check_kind(get_plan_kind("monitor"))
    monkeypatch.setattr(kind, "REPORT_ROLE", "choose")
    with pytest.raises(ProtocolError):
        check_kind(get_plan_kind("monitor"))


def test_size_at_interpolates_the_envelope() -> None:
    sizes = np.array([2, 3, 4, 5, 6])
    power = np.array([0.2, 0.5, 0.45, 0.7, 0.9])
    assert size_at(sizes, power, 0.6) == pytest.approx(4.5)  # the envelope holds 0.5 at 4
    assert size_at(sizes, power, 0.2) == 2 and np.isnan(size_at(sizes, power, 0.95))


def test_jackknife_of_a_mean_is_its_standard_error() -> None:
    rng = np.random.default_rng(0)
    x, groups = rng.normal(size=400), np.repeat(np.arange(400), 1)
    full, se = jackknife(lambda keep: np.array([x[keep].mean()]), groups)
    assert full[0] == pytest.approx(x.mean()) and se[0] == pytest.approx(x.std(ddof=1) / 20, rel=1e-6)


@pytest.mark.parametrize("groups", [1, 2])
def test_a_fixed_design_against_itself_saves_nothing_at_equal_power(groups: int) -> None:
    """The comparator sized for a fixed design's own power (measured on other studies of the same pools) needs
    that design's size: its power equals the design's within MC error and the saving's interval covers 0."""
    rng = np.random.default_rng(11)
    batches, n, units = 10, 15, 400
    shift = 0.75 if groups == 1 else 1.05
    parts = (rng.normal(shift, 1.0, (batches * units, 1)) if groups == 1 else
             np.column_stack([rng.normal(0, 1, batches * units), rng.normal(shift, 1, batches * units)]))
    sizes = np.arange(2, 40)
    hits, hit_which = power_curve(parts, batches, sizes, "t-test", 0.05, 1.0, rng, per_pool=150)
    own, own_which = power_curve(parts, batches, np.array([n]), "t-test", 0.05, 1.0, rng, per_pool=150)
    eq = equal_power_saving(own[0], np.full(own.shape[1], n), own_which, hits, hit_which, sizes)
    assert 0.6 < eq["sequential_power"] < 0.95
    assert abs(eq["fixed_power"] - eq["sequential_power"]) < 3 * np.hypot(eq["fixed_power_se"], 0.02)
    assert abs(eq["fixed_size"] - n) < 1.5 and eq["interval"][0] < 0 < eq["interval"][1]
    assert abs(eq["saving"]) < 0.1 and eq["saving_se"] > 0


@pytest.mark.slow
def test_the_two_llm_discounting_monitor_saves_at_equal_power() -> None:
    """The temporal-discounting score between two LLMs: the monitor against Welch's test sized for the monitor's
    own power on the fresh pools (the table of benchmarks/studies/monitor.py, one row, other seeds)."""
    import warnings

    from cogtestbed.planning.monitor_questions import declared_questions, validate_question

    import cogtestbed as ct

    q = next(q for q in declared_questions(ct.get_experiment("temporal-discounting"), (2,)) if q.spec is not None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = validate_question(q.spec, sims=1000, seed=1)
    eq = row["equal_power"]
    assert eq["test"] == "welch" and eq["sequential_power"] == row["power"]
    # the comparator's power equals the monitor's within MC error; the saving's joint interval is above 20 %
    assert abs(eq["fixed_power"] - row["power"]) < 3 * np.hypot(eq["fixed_power_se"], row["power_se"]) + 0.03
    assert row["saving"] > 0.25 and row["saving_interval"][0] > 0.2
    assert row["null_upper"] <= 0.05 and set(row["protocol"]["reported"]) >= {"power", "saving", "expected_effect"}


def test_a_futility_boundary_stops_early_and_only_removes_rejections() -> None:
    """Wald's lower boundary on the e-process: under the null the monitor stops far sooner and rejects no more
    often than without it (stopping early only removes rejections); under the effect each study stops by the cap."""
    from cogtestbed.planning.kinds.monitor.monitor_kind import choose_futility, operate
    from cogtestbed.planning.kinds.monitor.monitor_pools import studies

    rng = np.random.default_rng(8)
    eff_pool, nul_pool = np.clip(rng.normal(0.3, 0.5, 4000), -1, 1), np.clip(rng.normal(0.0, 0.5, 4000), -1, 1)
    eff, ew = studies(eff_pool, 400, 90, rng)
    nul, nw = studies(nul_pool, 400, 90, rng)
    rule = (1.0, 0.0, 0.4)  # the symmetry test at scale 0.4 with a planned bet
    plain = operate(eff, ew, nul, nw, -np.inf, np.inf, 0.05, 0.8, *rule, cap=40)
    low = operate(eff, ew, nul, nw, -np.inf, np.inf, 0.05, 0.8, *rule, cap=40, futility=0.2)
    assert low["null_rejection"] <= plain["null_rejection"] and low["power"] <= plain["power"]
    assert low["expected_null"] < 0.6 * plain["expected_null"] and low["expected_effect"] <= plain["expected_effect"]
    assert low["null_rejection_any"] == plain["null_rejection_any"]  # the any-look rate ignores futility
    assert low["paths"]["stop"].max() <= 40
    fut, picked = choose_futility(eff, nul, -np.inf, np.inf, 0.05, 0.8, rule)
    assert picked["reached"] and picked["power"] >= 0.83 and (fut is None or 0 < fut < 1)


def test_each_declaration_follows_its_kinds_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The declarations derive their seeds from the constants the kinds' code uses: a kind whose fresh studies
    moved onto its choosing seeds fails the check."""
    import cogtestbed.planning.kinds.precision.precision as precision
    import cogtestbed.planning.plan as plan

    for name in ("power", "hierarchical", "precision"):
        check_kind(get_plan_kind(name))
    monkeypatch.setattr(plan, "FRESH_SEED_OFFSET", 0)  # the fixed plan's fresh studies on the search's seeds
    with pytest.raises(ProtocolError, match="both the choosing and the reporting"):
        check_kind(get_plan_kind("power"))
    monkeypatch.setattr(precision, "FRESH_KEY", precision.CHOOSE_KEY)
    with pytest.raises(ProtocolError, match="both the choosing and the reporting"):
        check_kind(get_plan_kind("precision"))


def test_an_analytic_figure_needs_no_seeds_but_a_simulated_one_does() -> None:
    streams = SeedStreams(0, 5)
    fig = streams.analytic("power", 0.85, "noncentral t")
    assert fig.mc_se == 0.0 and fig.as_dict()["analytic"] == "noncentral t"
    streams.check()
    assert get_plan_kind("forms").protocol is not None and get_plan_kind("mix").protocol is not None
    chosen = streams.adopt("choosing", (11,))
    with pytest.raises(ProtocolError, match="both"):
        streams.adopt("reporting", chosen)
    with pytest.raises(ProtocolError, match="choosing stream"):
        streams.report("power", 0.8, 0.01, chosen)
