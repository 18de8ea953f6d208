"""Collider studies on the generic driver: fast smoke runs in the default suite, full studies slow.

The human-data power analysis and the misspecification flags are collider-specific analyses kept
in ``benchmarks/studies/collider.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cogtestbed.data.causal import import_rw17_human
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import declared_studies, run_declared_study, run_study, study_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "studies"))
import collider as collider_studies  # noqa: E402

EXP = get_experiment("collider")


def _declared(description_start: str) -> object:
    return next(d for _, d in declared_studies(EXP) if d.description.startswith(description_start))


def test_power_matches_digest(shared_data: Path) -> None:
    human = import_rw17_human(shared_data / "causal" / "human" / "rw17_collider_ce.csv")
    summary = collider_studies.human_power(human, ns=(45, 62), sims=500)
    # the humans' effect sizes (EA d = .36, MV d = .43) need ≈ 62 and ≈ 45 subjects for 80 % power
    assert abs(summary["ea"]["n80_analytic"] - 62) <= 2
    assert abs(summary["mv"]["n80_analytic"] - 45) <= 2


def test_recovery_smoke() -> None:
    decl = _declared("CBN 3p at the thesis design (240 rows), judgment noise SD .05")
    res = run_declared_study(EXP, decl, reps=1, subjects=(12,))
    params = res.summary["12x240"]["parameters"]
    assert all(params[p]["r"] > 0.95 for p in ("b", "m", "p_c"))
    assert "uniform draws (b in [0, 0.5]" in res.verdict


@pytest.mark.slow
def test_recovery_full() -> None:
    for noise, r_min in (("SD .05", 0.99), ("SD .2", 0.9)):
        res = run_declared_study(EXP, _declared(f"CBN 3p at the thesis design (240 rows), judgment noise {noise}"),
                                 reps=10, workers=None)
        assert all(v["r"] > r_min for v in res.summary["20x240"]["parameters"].values())


@pytest.mark.slow
def test_model_recovery_full() -> None:
    res = run_declared_study(EXP, _declared("3p vs 4p"), reps=10, workers=None)
    probs = res.summary["bic"]["probabilities"]
    assert probs[0][0] > 0.7 and probs[1][1] > 0.7


@pytest.mark.slow
def test_misspecification_flags() -> None:
    s = collider_studies.misspecification(reps=100)
    assert s["weak-ea w=.5"]["flag_weak_ea"] > 0.8 and s["cbn"]["flag_weak_ea"] < 0.1
    assert s["associative delta=.1"]["flag_mv"] > 0.8 and s["cbn"]["flag_mv"] < 0.15


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_sbc_hierarchical() -> None:
    spec = study_spec(kind="sbc", experiment="collider", models=("cbn-3p",), method="hierarchical",
                     subjects=(48,), design={"content": "rw17", "scope": "cell"}, reps=100, draws=500, tune=500,
                     chains=2)
    s = run_study(spec).summary
    assert len(s) == 3 * 3 + 3
    # Bonferroni over the variables: a correct sampler fails this ~1 % of the time
    assert all(v["p_value"] > 0.01 / len(s) for v in s.values())
