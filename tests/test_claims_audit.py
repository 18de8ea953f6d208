"""The claims audit (``benchmarks/studies/claims_audit.py``): each plan kind's printed figure beside a fresh
re-simulation on seeds the plan never used, and the LLM-vs-people plan's power across seeds
(``benchmarks/studies/people_seed_spread.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from study_scripts import load_study


def test_two_figures_agree_within_two_mc_se_of_their_difference() -> None:
    audit = load_study("claims_audit")
    row = audit.Row("fixed", "power", 0.80, 0.03, 0.72, 0.04, "-")  # 0.08 apart, 2 SE of the difference = 0.10
    assert row.agrees is True
    assert audit.Row("fixed", "power", 0.80, 0.03, 0.69, 0.04, "-").agrees is False  # 0.11 > 0.10
    assert audit.Row("fixed", "type-I", 0.05, 0.0, None, None, "-").agrees is None
    assert "NO" in audit.Row("fixed", "power", 0.9, 0.01, 0.5, 0.01, "d").line()


def test_the_sequential_rule_is_applied_as_the_plan_states_it() -> None:
    """Looks at 2 and 4 subjects; efficacy 1.0 then 1.5 on Z·d, futility −9 (never): a study whose first two
    values are large stops at 2; one that never crosses runs to 4 and accepts."""
    audit = load_study("claims_audit")
    rule = audit.SeqRule((2, 4), (1.0, 1.5), (9.0, 9.0), (-9.0, -9.0), 1.0)
    values = np.array([[1.0, 1.1, 0.0, 0.0],      # t at 2 huge: rejects at the first look
                       [1.0, -1.0, 1.0, -1.0],    # mean 0: never rejects
                       [-1.0, -1.1, -1.0, -1.2]])  # the other direction: not in the effect's (bound 9)
    ours, either, units = rule.run(values, futility=True)
    assert ours.tolist() == [True, False, False]
    assert either.tolist() == [True, False, False]
    assert units.tolist() == [2.0, 4.0, 4.0]
    z = audit.prefix_t_z(values, 2)
    assert z[0] > 1.0 and z[2] < 0


@pytest.mark.slow
def test_the_fixed_and_forms_plans_figures_hold_on_fresh_studies() -> None:
    """Two rows of the audit: the fixed plan's power (its fresh studies) and level, and the forms plan's
    noncentral-t power at fresh subjects' σ and estimand, each within 2 MC SE of 300 fresh studies on seeds the
    plans never used."""
    audit = load_study("claims_audit")
    rows = audit.run_audit(["fixed", "forms"], 300, say=lambda _: None)
    assert {r.kind for r in rows} == {"fixed", "forms"}
    assert all(r.fresh is not None for r in rows), [r.note for r in rows]
    assert all(r.agrees for r in rows), [r.line() for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["looks", "looks-auto", "adaptive", "people"])
def test_every_other_simulated_kinds_figures_hold_on_fresh_studies(kind: str) -> None:
    """A reduced audit row (100 fresh studies a hypothesis) of each other simulated kind: every printed figure
    within 2 MC SE of its fresh re-simulation."""
    audit = load_study("claims_audit")
    rows = audit.run_audit([kind], 100, say=lambda _: None)
    assert rows and all(r.fresh is not None for r in rows), [r.note for r in rows]
    assert all(r.agrees is not False for r in rows), [r.line() for r in rows]


@pytest.mark.slow
def test_the_people_plans_recommended_power_moves_less_than_005_between_seeds() -> None:
    """The λ + 1.0 LLM-vs-people plan on spektor2024-all at seeds 0–4: the recommended test's power (the
    nominal test where it holds its level on ≥ 1,000 null studies) differs by < 0.05 between seeds."""
    spread = load_study("people_seed_spread")
    rows = [spread.plan_at(s, spread.POPULATION, "10:200", 0.03, 2) for s in range(5)]
    assert all(r["null_sims"] >= 1000 for r in rows)
    assert spread.spread(rows) < 0.05, rows


def test_the_predicted_seed_spread_shrinks_with_more_null_and_fresh_studies() -> None:
    """The calibrated power's spread over five seeds, worked out in advance: at 1,000 null and 1,000 fresh studies
    its SD over seeds is about 0.02 (binomial 0.011 and the critical p's order statistic), so a spread ≥ 0.05 is
    about as likely as not; 4,000 of each make it rare."""
    spread = load_study("people_seed_spread")
    now, more = spread.predicted_spread(1000, 1000, reps=4000), spread.predicted_spread(4000, 4000, reps=4000)
    assert 0.016 < now["sd"] < 0.025
    assert more["sd"] < 0.6 * now["sd"]
    assert now["p_spread_ge_005"] > 0.3 and more["p_spread_ge_005"] < 0.05
