"""Issue 68 item 4: the LLM-against-people test's critical p-value calibrated at the planned trial
counts (the study that measures its level, 1,000 studies at three ratios, is
``benchmarks/studies/unequal_trials_level.py``: an hour on two cores, not a test)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cogtestbed.errors import InputError
from cogtestbed.inference.population import load_population
from cogtestbed.planning.kinds.sequential.seqauto import calibration_level
from cogtestbed.studies.driver import run_study
from cogtestbed.studies.people_level import (
    CALIBRATION_FACTOR,
    MIN_NULL_STUDIES,
    calibrated_critical_p,
    calibrated_power,
    calibrated_section,
    calibrated_words,
    calibration_from_nulls,
    nominal_holds,
    null_study_count,
)
from cogtestbed.studies.study_kinds import study_spec


def test_the_critical_p_rejects_at_most_the_target_share_of_null_studies() -> None:
    p = np.arange(1, 1001) / 1000
    crit = calibrated_critical_p(p, 0.03)
    assert crit == pytest.approx(0.031) and int((p < crit).sum()) == 30
    ties = np.r_[np.full(50, 0.01), np.linspace(0.2, 1, 950)]  # 5 % tied at 0.01: none may pass at 3 %
    assert int((ties < calibrated_critical_p(ties, 0.03)).sum()) == 0
    with_nan = np.r_[p[:500], np.full(500, np.nan)]  # a study without a test rejects nothing, still counts
    assert int((with_nan < calibrated_critical_p(with_nan, 0.03)).sum()) == 30
    assert calibrated_critical_p(np.full(10, np.nan), 0.3) == 1.0
    with pytest.raises(InputError, match="target level"):
        calibrated_critical_p(p, -0.01)


def _people_spec(reps: int = 3, **kw):
    pop = load_population("human:cogbench-instrumental")
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="alpha_pos",
                      effect_size=0.3, groups=2, from_population=pop, people=3, people_trials=48, subjects=(3,),
                      trials=(96,), reps=reps, seed=5, **kw)


def test_the_calibrated_power_rejudges_given_studies_at_the_critical_p_in_the_effects_direction() -> None:
    """The plan's calibrated power is read off its fresh studies (no study re-run): p < critical p and the
    direction statistic's sign (the rank test's relative effect, not the Hodges-Lehmann shift) the effect's."""
    rows = pd.DataFrame({"p_value": [0.001, 0.01, 0.02, 0.04, 0.2, 0.003],
                         "estimate": [0.3, 0.2, 0.0, 0.1, 0.4, 0.2],  # a tied-median shift of 0, detected
                         "direction": [0.3, 0.2, 0.1, 0.1, 0.4, -0.2]})  # a wrong-sign rejection, not
    out = calibrated_power(rows, 0.03, 0.5)
    assert out == {"rate": pytest.approx(3 / 6), "mc_se": pytest.approx(np.sqrt(0.25 / 6)), "sims": 6}
    assert calibrated_power(rows, 0.03, 0.0)["rate"] == pytest.approx(4 / 6)  # at no effect every rejection counts
    assert calibrated_power(rows.drop(columns="direction"), 0.03, 0.5)["rate"] == pytest.approx(3 / 6)
    table = run_study(_people_spec(reps=4), workers=1).table  # the power table carries the direction
    assert calibrated_power(table, 0.05, 0.3)["rate"] == pytest.approx(table["detected"].mean())


def test_a_study_detects_at_its_critical_p_not_at_its_level() -> None:
    plain = run_study(_people_spec(), workers=1).table
    strict = run_study(_people_spec(critical_p=1e-300), workers=1).table
    loose = run_study(_people_spec(critical_p=0.999999), workers=1).table
    assert np.array_equal(plain["p_value"].to_numpy(), strict["p_value"].to_numpy())  # the same studies
    assert not strict["detected"].any()
    expect = (loose["p_value"] < 0.999999) & (np.sign(loose["estimate"]) == 1)
    assert loose["detected"].tolist() == expect.tolist() and loose["detected"].sum() >= plain["detected"].sum()


def test_a_plans_calibrated_section_is_for_people_and_says_when_too_few_null_studies() -> None:
    spec = _people_spec()
    rows = pd.DataFrame({"p_value": np.full(10, 0.5), "direction": np.ones(10)})
    assert calibrated_section(spec.model_copy(update={"people": None, "from_population": None}), rows, 0.03) is None
    short = calibrated_section(spec, rows, -0.02)
    assert "10 null studies cannot calibrate" in short["reason"] and calibrated_words(short) == ""
    assert "no fresh studies" in calibrated_section(spec, None, 0.03)["reason"]
    above = {"critical_p": 0.0312, "null_sims": 1000, "power": {"rate": 0.81, "mc_se": 0.02}, "nominal_rate": 0.071,
             "nominal_rate_mc_se": 0.0069, "nominal_holds": False}
    assert calibrated_words(above) == (
        "; the nominal test is above its level (nominal type-I 0.071 ± 0.007 on 1,000 null studies at these trial "
        "counts): use the calibrated test (critical p 0.0312): power 0.810 ± 0.020")
    assert calibrated_words(above, 0.8) == calibrated_words(above)  # 0.81: at the target
    low = {**above, "power": {"rate": 0.635, "mc_se": 0.015}}
    assert calibrated_words(low, 0.8).endswith("power 0.635 ± 0.015 — under the 80% target: this design was "
                                               "sized for the nominal test; plan more subjects (--subjects) before "
                                               "running it")
    holds = {**above, "nominal_rate": 0.055, "nominal_holds": True}
    assert calibrated_words(holds) == ("; the nominal test holds its level here (nominal type-I 0.055 ± 0.007 on "
                                       "1,000 null studies at these trial counts): use it")
    with_power = {**holds, "nominal_power": {"rate": 0.84, "mc_se": 0.0116, "sims": 1000}}
    assert calibrated_words(with_power).endswith(": use it (power 0.840 ± 0.012 on 1,000 fresh studies at this "
                                                 "design)")


def test_the_calibrated_section_reads_both_tests_powers_off_the_fresh_studies() -> None:
    """The nominal test's power (the one recommended where it holds its level) is read off the same fresh
    studies as the calibrated test's, not off the studies whose power chose the design."""
    spec = _people_spec()
    rng = np.random.default_rng(7)
    fresh = pd.DataFrame({"p_value": rng.uniform(0, 0.2, 400), "direction": rng.choice([-1.0, 1.0], 400, p=[.1, .9])})
    nulls = pd.DataFrame({"p_value": rng.uniform(size=1000)})
    asked: list[int] = []
    out = calibrated_section(spec, fresh, 0.0375, nulls=nulls, calibrate=lambda n: asked.append(n))
    hits = (fresh["p_value"] < 0.05) & (fresh["direction"] > 0)
    assert out["nominal_power"]["rate"] == pytest.approx(hits.mean()) and out["nominal_power"]["sims"] == 400
    assert out["nominal_holds"] and out["recommended"] == "nominal"  # an exact test's p-values
    assert asked == [] and "critical_p" not in out and "power" not in out  # nothing calibrated where it holds
    assert "fresh studies" in out["nominal_power"]["studies"]


def test_a_critical_p_is_chosen_on_other_null_studies_than_those_that_report_the_level() -> None:
    """Where the level null studies show the nominal test above α, the critical p is calibrated on
    CALIBRATION_FACTOR times as many other null studies (which report nothing); the calibrated test's type-I is
    measured on the level null studies and its power on the fresh studies."""
    spec = _people_spec()
    rng = np.random.default_rng(8)
    fresh = pd.DataFrame({"p_value": rng.uniform(0, 0.2, 400), "direction": np.ones(400)})
    level = pd.DataFrame({"p_value": rng.uniform(size=1000) * 0.6})  # 8.3 % below 0.05: above its level
    calibration = pd.DataFrame({"p_value": rng.uniform(size=2000) * 0.5})
    asked: list[int] = []

    def calibrate(n: int) -> pd.DataFrame:
        asked.append(n)
        return calibration

    out = calibrated_section(spec, fresh, 0.0375, nulls=level, calibrate=calibrate)
    assert asked == [CALIBRATION_FACTOR * 1000] and not out["nominal_holds"] and out["recommended"] == "calibrated"
    crit = calibrated_critical_p(calibration["p_value"], 0.0375)  # chosen on the calibration studies only
    assert out["critical_p"] == crit and out["calibration_sims"] == 2000
    assert out["nominal_rate"] == pytest.approx(np.mean(level["p_value"] < 0.05))  # measured on the level studies
    assert out["level"]["rate"] == pytest.approx(np.mean(level["p_value"] < crit)) and out["level"]["sims"] == 1000
    assert out["power"]["rate"] == pytest.approx(np.mean(fresh["p_value"] < crit))
    words = calibrated_words(out)
    assert f"calibrated on 2,000 other null studies; type-I {out['level']['rate']:.3f}" in words
    assert words.startswith(f"; the nominal test is above its level (nominal type-I {out['nominal_rate']:.3f} ± 0.007 "
                            "on 1,000 null studies")


def test_a_critical_p_is_calibrated_on_at_least_1000_null_studies_and_the_nominal_test_kept_where_it_holds() -> None:
    """From 178 null studies the critical p was the 4th smallest p-value (for an exact test anywhere in
    ≈ [0.006, 0.048]); from 1,000 it is the 38th, and a nominal test within 2 MC SE of α is kept."""
    assert null_study_count(178) == MIN_NULL_STUDIES == 1000 and null_study_count(1500) == 1500
    target = calibration_level(0.05, null_study_count(178))
    assert math.floor(target * 1000) + 1 == 38
    se = math.sqrt(0.05 * 0.95 / 1000)
    assert nominal_holds(int(1000 * (0.05 + 2 * se)), 1000, 0.05)  # 63 of 1,000: within 2 MC SE
    assert not nominal_holds(int(1000 * (0.05 + 2 * se)) + 1, 1000, 0.05)
    null = np.random.default_rng(0).uniform(size=1000)  # an exact test's p-values
    out = calibration_from_nulls(null, target, 0.05)
    assert out["nominal_holds"] and out["nominal_rate"] == pytest.approx(np.mean(null < 0.05))
    assert 0.02 < out["critical_p"] < 0.06 and out["rejected"] <= target * 1000


def test_a_plan_against_a_population_refuses_other_trials_than_the_peoples_before_simulating(monkeypatch) -> None:
    """Unequal trials per subject are refused (the calibrated test did not hold its level at 2x and 4x the
    people's trials); the people's own count is accepted and searched alone."""
    import cogtestbed as ct
    from cogtestbed.planning import plan as planner

    def never(*_a, **_k):
        raise AssertionError("simulated before refusing")

    monkeypatch.setattr(planner.Planner, "plan", never)
    kw = {"model": "rw-pm", "effect": {"alpha_pos": 0.1}, "llm": ["openai:gpt-4o-mini"],
          "population": "human:cogbench-instrumental"}
    for trials in (192, "96:384", [96, 192]):
        with pytest.raises(InputError, match="`trials` must be the people's own 96 trials"):
            ct.plan("instrumental-learning", trials=trials, **kw)
    with pytest.raises(AssertionError, match="simulated before refusing"):  # 96 passes every check
        ct.plan("instrumental-learning", trials=96, **kw)


def test_a_plan_against_a_human_table_refuses_other_trials_than_the_samples_before_fitting(tmp_path, monkeypatch,
                                                                                           capsys) -> None:
    """``human=TABLE`` (a fixed sample of people) is held to the same rule: the LLM plays the sample's own trials
    per subject (its most common count); other trials are refused in one line before the sample is fitted or any
    study simulated, through ``ct.plan`` and the command line alike (exit 2)."""
    import cogtestbed as ct
    from cogtestbed.cli import run_cli
    from cogtestbed.planning import plan as planner
    from cogtestbed.planning.request import human_trials
    from cogtestbed.registry import write_trials
    from cogtestbed.studies import model_studies

    people = ct.simulate("instrumental-learning", agent="rw", subjects=4, seed=4, params={"alpha": 0.3, "beta": 5.0})
    assert human_trials(people) == 96 and human_trials(people.iloc[:-10]) == 96  # one subject short: still 96
    path = write_trials(people, tmp_path / "people.parquet", {"source": "a stand-in for people"})

    def never(*_a, **_k):
        raise AssertionError("fitted or simulated before refusing")

    monkeypatch.setattr(planner.Planner, "plan", never)
    monkeypatch.setattr(model_studies, "reference_sample", never)
    kw = {"model": "rw", "effect": {"alpha": 0.1}, "llm": "openai:gpt-4o-mini", "human": path}
    for trials in (192, "96:384", [48, 96]):
        with pytest.raises(InputError, match="`trials` must be the people's own 96 trials per subject in a plan "
                                             "against the `human` sample"):
            ct.plan("instrumental-learning", trials=trials, **kw)
    with pytest.raises(AssertionError, match="fitted or simulated before refusing"):  # 96, or none, passes
        ct.plan("instrumental-learning", **kw)
    code = run_cli(["plan", "instrumental-learning", "--model", "rw", "--effect", "alpha=0.1", "--llm",
                    "openai:gpt-4o-mini", "--human", str(path), "--trials", "192", "-o", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: --trials must be the people's own 96 trials")


def test_other_trials_than_the_peoples_are_refused_before_the_experiment_is_imported(tmp_path) -> None:
    """What a request alone can refuse is refused before anything heavy is imported.  Other ``--trials`` than
    the people's (a ``--human`` Parquet table's most common count, with one subject short; a population's) are
    refused by the command line in the study's own line and exit 2, before the experiment's module, numba or
    pandas is imported (those imports made it slow, 1.2 s CPU; no test times it, the table's ``subject`` column
    alone is read); the people's own count passes that check, and a table an importer reads is left to the
    study's check."""
    import json
    import subprocess
    import sys

    import cogtestbed as ct
    from cogtestbed.planning.kinds.people.people_trials import refuse_other_trials
    from cogtestbed.planning.plan_options import PlanRequest
    from cogtestbed.registry import write_trials
    from cogtestbed.request import build

    people = ct.simulate("instrumental-learning", agent="rw", subjects=4, seed=4, params={"alpha": 0.3, "beta": 5.0})
    path = write_trials(people.iloc[:-10], tmp_path / "people.parquet", {"source": "a stand-in for people"})
    probe = ("import json, sys\nfrom cogtestbed.cli import run_cli\ncode = run_cli(sys.argv[1:])\n"
             "print(json.dumps([code, [m for m in ('numba', 'pandas', 'cogtestbed.inference.instrumental') "
             "if m in sys.modules]]))")
    base = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "alpha_pos=0.1", "--llm",
            "openai:gpt-4o-mini", "--trials", "192", "-o", str(tmp_path / "p")]
    for people_option, whom in ((["--human", str(path)], f"the --human sample {path}"),
                                (["--population", "human:cogbench-instrumental"], "a population's people")):
        proc = subprocess.run([sys.executable, "-c", probe, *base, *people_option], capture_output=True, text=True,
                              timeout=120)
        code, imported = json.loads(proc.stdout.strip().splitlines()[-1])
        assert code == 2 and imported == [], (code, imported)
        assert proc.stderr.strip() == (f"error: --trials must be the people's own 96 trials per subject in a plan "
                                       f"against {whom}: with unequal trials the per-subject estimates differ in "
                                       "precision and the two-group test does not hold its level (docs/human-data.md)")
    kw = {"experiment": "instrumental-learning", "model": "rw-pm", "effect": "alpha_pos=0.1",
          "llm": "openai:gpt-4o-mini"}
    refuse_other_trials("power", build(PlanRequest, {**kw, "human": str(path), "trials": 96}))  # their own: passes
    refuse_other_trials("power", build(PlanRequest, {**kw, "human": people, "trials": "96"}))
    csv = tmp_path / "people.csv"
    people.to_csv(csv, index=False)
    refuse_other_trials("power", build(PlanRequest, {**kw, "human": str(csv), "trials": 192}))  # an importer's
    with pytest.raises(InputError, match="own 96 trials per subject in a plan against the `human` sample the human"):
        refuse_other_trials("power", build(PlanRequest, {**kw, "human": people, "trials": "48:96"}))


def test_a_plan_against_people_of_a_session_pooling_experiment_pools_one_session_per_llm_subject(
        monkeypatch) -> None:
    """Two-step pools sessions per subject (its declared power study: 20): against Shahar's people (317 trials
    each) every LLM subject plays one session of their trials, not 20 (20x the people's trials: unequal
    precision); other ``runs`` are refused before simulating."""
    import cogtestbed as ct
    from cogtestbed.planning import plan as planner

    seen = {}

    def axes(self):
        seen.update({a.name: a.values for a in self.others})
        raise AssertionError("simulated")

    monkeypatch.setattr(planner.Planner, "plan", axes)
    kw = {"model": "hybrid", "effect": {"w": 0.2}, "llm": "openai:gpt-4o-mini", "population": "human:shahar2019"}
    with pytest.raises(AssertionError, match="simulated"):
        ct.plan("two-step", **kw)
    assert tuple(seen["runs"]) == (1,) and len(seen["trials"]) == 1
    with pytest.raises(InputError, match="`runs` must be 1 in a plan against people"):
        ct.plan("two-step", runs="1:20", **kw)


def test_a_people_plans_fresh_studies_are_as_many_as_its_null_studies(monkeypatch) -> None:
    """An LLM-against-people plan reads its calibrated and nominal powers off at least MIN_NULL_STUDIES fresh
    studies (MC SE ≈ 0.015, not 0.035 from 178), so that they do not move with the seed; other plans keep as
    many fresh studies as chose the design."""
    from types import SimpleNamespace

    from cogtestbed.planning import plan as planner

    asked: list[int] = []
    monkeypatch.setattr(planner, "one_size_table", lambda spec, point, sims, *a, **k: asked.append(sims))
    chosen = SimpleNamespace(point=None, estimate=SimpleNamespace(sims=178))
    for spec in (_people_spec(), _people_spec().model_copy(update={"people": None, "from_population": None})):
        planner.Planner.fresh_table(SimpleNamespace(spec=spec, power=SimpleNamespace(workers=1, seconds_per_unit=1.0)),
                                    chosen)
    assert asked == [MIN_NULL_STUDIES, 178]


def test_the_level_null_studies_report_and_the_calibration_null_studies_only_choose() -> None:
    """The power kind's protocol: the nominal and calibrated tests' type-I errors come from the level null studies
    (a reporting stream), the critical p from the calibration null studies (a choosing stream), never one set for
    both."""
    from cogtestbed.planning.kind_protocols import power_protocol
    from cogtestbed.planning.protocol import CHOOSING, REPORTING
    from cogtestbed.studies.people_level import CALIBRATION_SEED_OFFSET, NULL_SEED_OFFSET

    streams = power_protocol(3)
    assert streams.issued[3 + NULL_SEED_OFFSET] == REPORTING and streams.issued[3 + CALIBRATION_SEED_OFFSET] == CHOOSING
    reported = {r.name: r.seeds for r in streams.reported}
    assert reported["nominal_type1"] == reported["calibrated_type1"] == (3 + NULL_SEED_OFFSET,)
    streams.check()
