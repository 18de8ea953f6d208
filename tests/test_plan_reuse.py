"""Issue 71 item 1: a plan of an LLM against people fits each simulated subject once.

Its LLM subjects are simulated in seeded blocks (``model_studies.LLM_BLOCK``), so a larger design's
subjects extend a smaller one's; the plan (``power_sims.PowerEvaluator``) hands each repetition's fitted
people and LLM blocks to the next size's task.  The rows are those of the same study run from scratch
(``run_study``), number for number; only the fits are fewer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.population import load_population
from cogtestbed.validation.design.power_sims import PowerEvaluator
from cogtestbed.validation.design.space import Point
from cogtestbed.validation.studies import model_studies
from cogtestbed.validation.studies.driver import run_study
from cogtestbed.validation.studies.study_kinds import study_spec

COLUMNS = ["rep", "n_subjects", "estimate", "p_value", "detected"]


def _spec(**kw):
    pop = load_population("human:cogbench-instrumental")
    return study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="alpha_pos",
                      effect_size=0.2, groups=2, from_population=pop, people=4, people_trials=48, trials=(48,),
                      reps=3, seed=11, **{"subjects": (3,), **kw})


def _counting(monkeypatch) -> list[int]:
    """Subjects passed to ``fit_mle``, call by call."""
    seen: list[int] = []
    original = CognitiveModel.fit_mle

    def fit_mle(self, trials, *a, **k):
        seen.append(int(trials["subject"].nunique()))
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
