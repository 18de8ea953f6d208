"""Belief coherence's fast paths give what the straightforward code gives: T1a's per-run estimates from the
paired rows read as arrays (:func:`paired_arrays`) equal the estimates from the canonical table's paired rows
(to 1e-10, on shuffled tables and on random answers with invalid rows), the checks refuse what the canonical
table refuses, the same seed simulates the same table, and a reduced T1a plan chooses the same design."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.inference import belief as B
from cogtestbed.inference.belief_table import BeliefTableError, canonical_table, paired_arrays, paired_rows
from cogtestbed.registry import get_experiment
from cogtestbed.studies.study_data import design_for_trials, simulate_runs

EXP = get_experiment("belief-coherence")
DESIGN = design_for_trials(EXP, None, {"n_contexts": 30, "n_reps": 3})


def _reference(table: pd.DataFrame, renormalise: bool = False) -> dict[int, float]:
    """T1a per subject the straightforward way: the canonical table, its paired rows, one subject at a time."""
    rows = paired_rows(canonical_table(table)[0], renormalise)
    out = {int(s): float("nan") for s in pd.unique(table["subject"])}
    for subject, part in rows.groupby("subject"):
        if len(part) > B.CMI_K:
            out[int(subject)] = B.t1_cmi_arrays(part["a"].to_numpy(), part["p"].to_numpy(), part["theta"].to_numpy(),
                                                part["group"].to_numpy(), n_boot=0, n_perm=0)["estimate"]
    return out


def _randomised(seed: int) -> pd.DataFrame:
    """A simulated table with random answers, invalid rows, missing decisions and rows in random order."""
    rng = np.random.default_rng(seed)
    table = simulate_runs(EXP, "leak", 5, seed, {"leak": 0.3}, DESIGN).copy()
    n = len(table)
    table["p_elicited"] = np.where(table["p_elicited"].notna(), rng.random(n), np.nan)
    table["p_renormalised"] = np.where(table["p_renormalised"].notna(), rng.random(n), np.nan)
    table.loc[rng.random(n) < 0.05, "valid"] = False
    decided = np.flatnonzero((table["phase"] == "decision").to_numpy())
    table.loc[rng.choice(decided, 5, replace=False), "decision"] = pd.NA
    table.loc[(table["subject"] == 4).to_numpy() & (rng.random(n) < 0.95), "valid"] = False  # too few pairs
    return table.iloc[rng.permutation(n)].reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("renormalise", [False, True])
def test_t1a_per_run_estimates_match_the_reference(seed: int, renormalise: bool) -> None:
    table = _randomised(seed)
    fast = B._t1_cmi_by_subject(table, renormalise="yes" if renormalise else "no")
    ref = _reference(table, renormalise)
    assert list(fast) == sorted(ref) and np.isnan(fast[4]) and np.isnan(ref[4])
    np.testing.assert_allclose([fast[s] for s in sorted(ref)], [ref[s] for s in sorted(ref)], rtol=0, atol=1e-10,
                               equal_nan=True)
    rows, frame = paired_arrays(table, renormalise), paired_rows(canonical_table(table)[0], renormalise)
    assert rows is not None
    for column in ("subject", "a", "p", "theta", "group"):
        assert np.array_equal(rows[column], frame[column].to_numpy()), column


def test_paired_arrays_refuse_what_the_canonical_table_refuses() -> None:
    table = simulate_runs(EXP, "leak", 2, 0, {}, DESIGN)
    belief = np.flatnonzero(((table["phase"] == "belief") & (table["variant"] == "pi0")).to_numpy())
    decision = np.flatnonzero((table["phase"] == "decision").to_numpy())
    for broken, match in ((pd.concat([table, table.iloc[belief[:1]]], ignore_index=True), "repeat"),
                          (table.assign(p_true=table["p_true"].where(~table.index.isin(belief[:1]))), "p_true"),
                          (table.assign(decision=table["decision"].where(~table.index.isin(decision[:1]), "Maybe")),
                           "Maybe")):
        with pytest.raises(BeliefTableError, match=match):
            paired_arrays(broken)
        with pytest.raises(BeliefTableError, match=match):
            canonical_table(broken)
    floats = table.assign(subject=table["subject"].astype(float))
    assert paired_arrays(floats) is None  # read the general way
    assert B._t1_cmi_by_subject(floats) == B._t1_cmi_by_subject(table)


def test_the_same_seed_simulates_the_same_table() -> None:
    first = simulate_runs(EXP, "leak", 3, 5, {"leak": 0.05}, DESIGN)
    pd.testing.assert_frame_equal(first, simulate_runs(EXP, "leak", 3, 5, {"leak": 0.05}, DESIGN))
    aux = first.loc[first["phase"] == "lie_aux", "aux_reported"].dropna()
    assert len(aux) and all(s.startswith("{") and s.endswith("}") for s in aux)


def test_a_reduced_t1a_plan_chooses_a_design_with_its_type_one_check() -> None:
    """The T1a headline command on a reduced design (20 contexts × 2, leak 0 against 0.6, 4-8 runs): the
    smallest size reaches the target, priced from its dry run (8 calls a trial, 2 LLMs), with the chosen
    design's permutation test (exact at its level when the runs are exchangeable)."""
    result = ct.plan("belief-coherence", metric="t1_cmi", compare=("leak:leak=0", "leak:leak=0.6"),
                     llm=["openai:gpt-4o", "openai:gpt-4o-mini"], runs="4:8", design={"n_contexts": 20, "n_reps": 2},
                     mc_se=0.1, workers=1)
    chosen = result.payload["chosen"]
    assert (chosen["runs"], chosen["trials"], chosen["sessions_per_llm"]) == (4, 40, 4)
    assert chosen["power"] >= 0.8 and chosen["sims"] >= 24
    assert chosen["calls"] == 4 * 2 * 40 * 8 and chosen["cost_source"] == "dry-run"


@pytest.mark.slow
def test_the_t1a_headline_plan_finishes_with_a_design() -> None:
    """The paper-design T1a plan of the headline question (≤ 2 minutes on two idle cores)."""
    result = ct.plan("belief-coherence", metric="t1_cmi", compare=("leak:leak=0.02", "leak:leak=0.05"),
                     llm=["openai:gpt-4o", "openai:gpt-4o-mini"], runs="2:20", mc_se=0.1, workers=2)
    chosen = result.payload["chosen"]
    assert 2 <= chosen["runs"] <= 20 and chosen["power"] >= 0.8
