"""The Newton logit repeats statsmodels' ``Logit.fit()`` exactly (statsmodels is the reference here only).

On every released CogBench horizon file, both exploration regressions give statsmodels'
coefficients and standard errors (to 1e-8, in fact to the bit) and the same iteration count;
on random and separated designs, the same outcome: a fit, a non-converged fit, or the same error.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogtestbed.inference.horizon import exploration_inputs, exploration_logit, first_free_choices
from cogtestbed.inference.logit import NEWTON_MAXITER, PerfectSeparationError, fit_logit
from cogtestbed.registry import get_experiment

sm_discrete = pytest.importorskip("statsmodels.discrete.discrete_model")

HORIZON = Path(__file__).resolve().parents[1].parent / "shared/data/cogbench/HorizonTask"


def statsmodels_fit(y: np.ndarray, x: np.ndarray) -> tuple[Any, ...]:
    """``sm.Logit(y, x).fit()`` as CogBench runs it: ("ok", params, bse, converged, steps) or the error."""
    try:
        model = sm_discrete.Logit(np.asarray(y, dtype=float), x)
        model.raise_on_perfect_prediction = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = model.fit(disp=0)
        return ("ok", np.asarray(res.params), np.asarray(res.bse), res.mle_retvals["converged"],
                res.mle_retvals["iterations"])
    except Exception as exc:
        return (f"{type(exc).__name__}: {exc}",)


def our_fit(y: np.ndarray, x: np.ndarray) -> tuple[Any, ...]:
    try:
        res = fit_logit(y, x)
        return ("ok", res.params, res.bse, res.converged, res.iterations)
    except Exception as exc:
        return (f"{type(exc).__name__}: {exc}",)


def design(x1: np.ndarray, h: np.ndarray) -> np.ndarray:
    return np.column_stack([x1, h, x1 * h, np.ones_like(x1)])


def assert_same(ours: tuple[Any, ...], ref: tuple[Any, ...]) -> None:
    assert ours[0] == ref[0]
    if ref[0] == "ok":
        np.testing.assert_allclose(ours[1], ref[1], rtol=0, atol=1e-8)
        np.testing.assert_allclose(ours[2], ref[2], rtol=0, atol=1e-8)
        np.testing.assert_array_equal(ours[1], ref[1])  # the same operations: the same bits
        np.testing.assert_array_equal(ours[2], ref[2])
        assert ours[3:] == ref[3:]


@pytest.mark.parametrize("path", sorted(HORIZON.glob("*.csv")), ids=lambda p: p.stem)
def test_matches_statsmodels_on_every_cogbench_horizon_file(path: Path) -> None:
    trials = get_experiment("horizon").importer("cogbench").load(path)
    games = first_free_choices(trials)
    for mode in ("equal", "unequal"):
        y, x1, h = exploration_inputs(games, mode)
        ref = statsmodels_fit(y, design(x1, h))
        assert ref[0] == "ok" and ref[3]
        assert_same(our_fit(y, design(x1, h)), ref)
        fit = exploration_logit(y, x1, h)
        assert fit.failure is None and fit.params is not None
        np.testing.assert_array_equal(fit.params, ref[1])


def test_matches_statsmodels_on_random_and_separated_designs() -> None:
    rng = np.random.default_rng(2024)
    outcomes: set[str] = set()
    for i in range(120):
        n = int(rng.integers(3, 60))
        x1 = rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0, 100.0])
        h = np.ones(n) if i % 7 == 0 else rng.choice([-1.0, 1.0], n)
        x = design(x1, h)
        with np.errstate(over="ignore"):
            p = 1 / (1 + np.exp(-x @ (rng.normal(size=4) * rng.choice([0.1, 1.0, 10.0]))))
        y = (x1 > 0).astype(float) if i % 5 == 0 else (rng.random(n) < p).astype(float)
        ref = statsmodels_fit(y, x)
        assert_same(our_fit(y, x), ref)
        outcomes.add(ref[0] if ref[0] != "ok" else f"ok converged={ref[3]}")
    # the cases that matter for CogBench's 0 rule all occurred
    assert {"ok converged=True", "ok converged=False",
            "PerfectSeparationError: Perfect separation detected, results not available"} <= outcomes


def test_failures_are_scored_as_cogbench_does() -> None:
    x1 = np.array([-2.0, -1.0, 1.0, 2.0, -0.5, 0.5])
    h = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    with pytest.raises(PerfectSeparationError):
        fit_logit((x1 > 0).astype(float), design(x1, h))
    failed = exploration_logit((x1 > 0).astype(float), x1, h)
    assert failed.params is None and failed.failure is not None
    assert failed.failure.startswith("PerfectSeparationError")
    assert NEWTON_MAXITER == 35  # statsmodels' DiscreteModel.fit default
