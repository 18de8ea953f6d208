"""Issue 71 item 1: a plan of an LLM against people fits each simulated subject once.

Its LLM subjects are simulated in seeded blocks (``model_studies.LLM_BLOCK``), so a larger design's
subjects extend a smaller one's; the plan (``power_sims.PowerEvaluator``) hands each repetition's fitted
people and LLM blocks to the next size's task.  The rows are those of the same study run from scratch
(``run_study``), number for number; only the fits are fewer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.population import load_population
from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
from cogtestbed.planning.space import Point
from cogtestbed.studies import model_studies
from cogtestbed.studies.driver import run_study
from cogtestbed.studies.study_kinds import study_spec

COLUMNS = ["rep", "n_subjects", "estimate", "p_value", "detected"]


def _spec(**kw):
    pop = load_population("human:cogbench-instrumental")
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="alpha_pos",
                      effect_size=0.2, groups=2, from_population=pop, people=4, people_trials=48, trials=(48,),
                      reps=3, seed=11, **{"subjects": (3,), **kw})


def _counting(monkeypatch) -> list[int]:
    """Subjects fitted by ``fit_mle``, call by call (those of ``subjects`` where it names them)."""
    seen: list[int] = []
    original = CognitiveModel.fit_mle

    def fit_mle(self, trials, *a, **k):
        named = k.get("subjects")
        seen.append(int(trials["subject"].nunique()) if named is None else len(list(named)))
        return original(self, trials, *a, **k)

    monkeypatch.setattr(CognitiveModel, "fit_mle", fit_mle)
    return seen


def test_a_plan_fits_each_person_and_llm_subject_once_across_sizes(monkeypatch) -> None:
    model_studies._PEOPLE.clear()
    seen = _counting(monkeypatch)
    power = PowerEvaluator(_spec(), workers=1)
    for size in (5, 12, 20, 20):  # 20 twice: the second look adds nothing
        power.ensure(Point(size, 1, 48), 3)
    # 3 repetitions: 4 people each, fitted once; LLM blocks of 10 up to 20 subjects: 2 blocks each.
    assert sum(seen) == 3 * 4 + 3 * 2 * model_studies.LLM_BLOCK
    assert all(len(v["llm"]) == 20 and len(v["people"]) == 4 for v in power.reuse.values()) and len(power.reuse) == 3
    assert not any(str(c).startswith(model_studies.REUSE_PREFIX) for c in power.table(Point(12, 1, 48)).columns)


def test_reused_fits_give_the_rows_of_the_study_run_from_scratch() -> None:
    model_studies._PEOPLE.clear()
    power = PowerEvaluator(_spec(), workers=1)
    power.ensure(Point(7, 1, 48), 3)
    power.ensure(Point(23, 1, 48), 3)  # reuses the 10 subjects of 7's block and the people
    model_studies._PEOPLE.clear()
    fresh = run_study(_spec(subjects=(23,)), workers=1).table
    planned = power.table(Point(23, 1, 48))
    pd.testing.assert_frame_equal(planned[COLUMNS].reset_index(drop=True), fresh[COLUMNS].reset_index(drop=True))
    assert np.isfinite(planned["p_value"]).all()


def test_a_study_of_one_size_fits_its_llm_subjects_not_whole_blocks(monkeypatch) -> None:
    """A study of one size (run_study; a plan's fresh and calibration studies) fits its 13 LLM subjects,
    not the 20 of two whole blocks; its rows are those of the plan's whole-block fits."""
    model_studies._PEOPLE.clear()
    seen = _counting(monkeypatch)
    table = run_study(_spec(subjects=(13,)), workers=1).table
    assert sum(seen) == 3 * 4 + 3 * 13
    model_studies._PEOPLE.clear()
    power = PowerEvaluator(_spec(), workers=1)
    power.ensure(Point(13, 1, 48), 3)
    pd.testing.assert_frame_equal(power.table(Point(13, 1, 48))[COLUMNS].reset_index(drop=True),
                                  table[COLUMNS].reset_index(drop=True))


def test_one_size_studies_carry_their_llm_groups_and_the_test_of_them_is_the_rows(monkeypatch) -> None:
    """``one_size_table`` (a plan's fresh and calibration studies) keeps each study's LLM group; the
    two-group test of the kept people and LLM values gives each row's p-value again."""
    from cogtestbed.planning.plan import one_size_table
    from cogtestbed.registry import get_experiment

    model_studies._PEOPLE.clear()
    seen = _counting(monkeypatch)
    table = one_size_table(_spec(), Point(13, 1, 48), 3, 1, "test")
    assert sum(seen) == 3 * 4 + 3 * 13 and [len(v) for v in table["llm_values"]] == [13, 13, 13]
    evaluator = PowerEvaluator(_spec(), workers=1, one_size=True)
    evaluator.ensure(Point(13, 1, 48), 3)
    model = get_experiment("instrumental-learning").model("rw-pm")
    for (_, row), llm in zip(evaluator.table(Point(13, 1, 48)).iterrows(), evaluator.llm_values(Point(13, 1, 48)),
                             strict=True):
        people = evaluator.reuse[((1, 48, (), int(row["rep"])))]["people"]
        again = model_studies.two_group_mle_row(_spec(), model, people, llm)
        assert again["p_value"] == row["p_value"] and again["detected"] == row["detected"]


def test_a_plans_calibration_nulls_are_the_calibrations_own_studies_and_the_conditional_fits_nothing(
        monkeypatch) -> None:
    """The plan's calibration null studies (run once, with their LLM groups) give the critical p the
    calibration computes on its own; the conditional power and null rejection test the fresh and null
    studies' LLM groups against the real participants without a fit."""
    from types import SimpleNamespace

    from cogtestbed.planning.plan import calibration_nulls, level_nulls, one_size_table
    from cogtestbed.planning.space import study_at
    from cogtestbed.studies import people_level
    from cogtestbed.studies.conditional import conditional_on_sample
    from cogtestbed.studies.people_level import calibrated_section

    monkeypatch.setattr(people_level, "MIN_NULL_STUDIES", 0)  # as many null studies as fresh ones: a short test
    spec, point = _spec(), Point(12, 1, 48)
    fresh = one_size_table(spec, point, 6, 1, "test")
    result = SimpleNamespace(spec=spec, fresh=fresh, chosen=SimpleNamespace(point=point), workers=1)
    nulls = level_nulls(result, 0.2)
    at = study_at(spec, point, 6)
    assert calibrated_section(at, fresh, 0.2, 1, nulls=nulls, calibrate=lambda n: calibration_nulls(result, n)) == \
        calibrated_section(at, fresh, 0.2, 1)
    assert level_nulls(result, 0.0) is None
    seen = _counting(monkeypatch)
    groups = {"power": list(fresh["llm_values"]), "null": list(nulls["llm_values"])}
    out = conditional_on_sample(at, sims=6, workers=1, groups=groups)
    assert seen == [] and out["power"]["sims"] == out["null_rejection"]["sims"] == 6
    for key in ("power", "null_rejection"):  # a share of the 6 given groups, with its binomial MC SE
        rate = out[key]["rate"]  # (which of the two is larger is chance at 6 studies: it differed between CPUs)
        assert 0.0 <= rate <= 1.0 and abs(rate * 6 - round(rate * 6)) < 1e-12
        assert out[key]["mc_se"] == pytest.approx(np.sqrt(rate * (1 - rate) / 6))


def test_an_extended_size_range_reuses_every_design_and_says_each_once(monkeypatch) -> None:
    """A plan whose default size range grows (``Planner.extend_sizes``) searches its combination again
    from the smallest size: the designs it looked at before reuse their simulated studies (none is
    simulated twice) and their power is said once (the λ + 0.5 plan of docs/human-data.md printed its
    10-subject design a second time after "the subjects range is extended to 400").  The studies are
    stand-ins (each repetition detects the effect where its uniform is below 1 − exp(−n/8)), so only the
    search runs."""
    from collections import Counter

    from cogtestbed.planning.plan import Planner
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.space import design_axes
    from cogtestbed.registry import get_experiment

    exp = get_experiment("instrumental-learning")
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.5, seed=3)
    simulated: Counter[tuple[int, int]] = Counter()

    def run(self, payload, tasks):
        for t in tasks:
            simulated[t["n_subjects"], t["rep"]] += 1
        u = np.array([np.random.default_rng([5, t["rep"]]).random() for t in tasks])
        power = 1 - np.exp(-np.array([t["n_subjects"] for t in tasks]) / 8)
        return [pd.DataFrame({"rep": [t["rep"] for t in tasks], "detected": u < power})]

    monkeypatch.setattr(PowerEvaluator, "_run", run)
    size, others = design_axes(spec, exp, "4:6", None, "48")
    said: list[str] = []
    planner = Planner(spec, Pricer(exp, ("openai:gpt-4o-mini",), seed=3), size, others, target=0.8,
                      extend_to=48, on_progress=said.append)
    for combo in planner.combos([a.coarse() for a in planner.others]):
        planner.search_combo(combo)
    planner.extend_sizes()
    assert any("range is extended to 12" in s for s in said)
    looks = Counter(s.split(" subjects,")[0] for s in said if ": power " in s)
    assert looks["4"] == 1 and max(looks.values()) == 1, said  # the 4-subject design is looked at twice, said once
    assert max(simulated.values()) == 1  # no (design, repetition) simulated twice
    assert sum(simulated.values()) == planner.power.simulations == sum(planner.power.done.values())
    assert planner.best is not None and planner.best[1].subjects > 6
