"""Collider validation studies: fast smoke runs in the default suite, full studies marked slow."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogtestbed.data.causal import import_rw17_human
from cogtestbed.validation.causal import (
    misspecification_study,
    model_recovery_study,
    power_study,
    recovery_study,
    sbc_study,
    simulate_synthetic_humans,
)


def test_power_matches_digest(shared_data: Path) -> None:
    human = import_rw17_human(shared_data / "causal" / "human" / "rw17_collider_ce.csv")
    _, summary = power_study(human, ns=(45, 62), sims=500)
    # power for the effects of Dettki 2025: ≈ 62 subjects for EA (d = .36) and ≈ 45 for MV (d = .43) at 80 %
    assert abs(summary["ea"]["n80_analytic"] - 62) <= 2
    assert abs(summary["mv"]["n80_analytic"] - 45) <= 2


def test_recovery_smoke() -> None:
    _, summary = recovery_study(reps=40, noise_sds=(0.05,))
    assert all(summary["sd=0.05"][p]["r"] > 0.95 for p in ("b", "m", "p_c", "lad"))


def test_synthetic_humans_shape() -> None:
    import numpy as np

    trials, truth = simulate_synthetic_humans(np.random.default_rng(0), n_subjects=10)
    assert len(trials) == 200 and trials["subject"].nunique() == 10 and "b_mu" in truth


@pytest.mark.slow
def test_recovery_full() -> None:
    _, s = recovery_study(reps=200)
    assert all(s["sd=0.05"][p]["r"] > 0.99 for p in ("b", "m", "p_c", "lad"))
    assert all(s["sd=0.2"][p]["r"] > 0.9 for p in ("b", "m", "p_c", "lad"))


@pytest.mark.slow
def test_model_recovery_full() -> None:
    _, s = model_recovery_study(reps=200)
    assert s["by_loocv"]["3p"]["3p"] > 0.7 and s["by_loocv"]["4p"]["4p"] > 0.7


@pytest.mark.slow
def test_misspecification_flags() -> None:
    _, s = misspecification_study(reps=100)
    assert s["weak-ea w=.5"]["flag_weak_ea"] > 0.8 and s["cbn"]["flag_weak_ea"] < 0.1
    assert s["associative delta=.1"]["flag_mv"] > 0.8 and s["cbn"]["flag_mv"] < 0.15


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_sbc_hierarchical() -> None:
    _, s = sbc_study(sims=100)
    params = {k: v for k, v in s.items() if k != "fits"}
    assert len(params) == 9
    # Bonferroni over the 9 population parameters: a correct sampler fails this ~1 % of the time
    assert all(v["chi2_p"] > 0.01 / len(params) for v in params.values())
    assert s["fits"]["with_divergences"] <= 5
