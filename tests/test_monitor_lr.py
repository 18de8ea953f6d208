"""The likelihood-ratio e-process of the one-LLM RW± optimism monitor (monitor_lr): its e-value's mean under
the null, the declared region, the refusal of a contrast without a nested null, and (slow) the reduced
nuisance-region null table."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.monitor.monitor_lr import (
    alt_nodes,
    grid_log_e,
    nuisance_pool,
    null_model_of,
    null_region,
    prior_weights,
    refined_null,
    study_crossing,
)
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import declared_studies, spec_from_decl
from cogtestbed.studies.model_studies import power_parameters

ROOT = Path(__file__).resolve().parents[1]


def _question():  # type: ignore[no-untyped-def]
    exp = get_experiment("instrumental-learning")
    decl = next(d for _, d in declared_studies(exp) if d.kind == "power" and d.parameter == "optimism_bias")
    return exp, spec_from_decl(exp, decl, reps=1)


def test_declared_region_is_the_null_models_box() -> None:
    exp, spec = _question()
    region = null_region(exp, "rw-pm", "optimism_bias")
    assert region == {"alpha": [0.0, 1.0], "beta": [0.0, 1e5]}
    assert null_model_of("rw-pm", "optimism_bias") == "rw"


def test_contrast_without_nested_null_is_refused_in_one_line() -> None:
    with pytest.raises(InputError) as err:
        null_model_of("rw", "alpha")
    assert "\n" not in str(err.value) and "no nested model" in str(err.value)


def test_weights_are_a_distribution_on_the_grid_near_the_effect() -> None:
    exp, spec = _question()
    model = exp.model("rw-pm")
    w = prior_weights(model, power_parameters(spec, model, 500, np.random.default_rng(1)))
    nodes = alt_nodes(model)
    assert w.shape == (nodes.shape[0],) and abs(w.sum() - 1.0) < 1e-12 and (w > 0).all()
    diff = nodes[:, 0] - nodes[:, 1]  # α⁺ − α⁻ of each node
    assert float(w @ diff) > 0.05  # the plan's effect is +0.2: the weights lean that way
    with pytest.raises(InputError):
        grid_log_e(np.zeros((2, nodes.shape[0])), np.zeros((2, 3)), w[:-1])


def test_single_subject_e_value_has_mean_at_most_one_under_the_null() -> None:
    """E_1 = Σ w_k L(θ_k) / sup_null L: its mean over null subjects (one point of the null, few trials so the
    MC is cheap and the likelihoods are far from degenerate) is ≤ 1 within 3 MC SE, and far below 1/α."""
    exp, spec = _question()
    model, null = exp.model("rw-pm"), exp.model("rw")
    w = prior_weights(model, power_parameters(spec, model, 500, np.random.default_rng(2)))
    ll_alt, ll_null, data, _ = nuisance_pool(spec.model_copy(update={"trials": (4,)}), 4, 300, 11,
                                             {"alpha": 0.3, "beta": 3.0})
    e = np.array([math.exp(grid_log_e(ll_alt[i:i + 1], ll_null[i:i + 1], w)[0][0]
                           - refined_null(null, [data[i]], ll_null[i])) for i in range(300)])
    assert e.mean() <= 1.0 + 3 * e.std(ddof=1) / math.sqrt(e.size)
    assert e.max() < 20.0


def test_a_rejection_is_decided_on_the_refined_maximum() -> None:
    """study_crossing never rejects where the refined null maximum brings the e-value under 1/α, and its
    path is the grid bound elsewhere."""
    exp, spec = _question()
    model, null = exp.model("rw-pm"), exp.model("rw")
    w = prior_weights(model, power_parameters(spec, model, 500, np.random.default_rng(3)))
    ll_alt, ll_null, data, _ = nuisance_pool(spec, None, 40, 5)
    t, log_e = study_crossing(null, ll_alt, ll_null, data, w, 0.05)
    num, den = grid_log_e(ll_alt, ll_null, w)
    if t:
        exact = num[t - 1] - refined_null(null, data[:t], ll_null[:t].sum(axis=0))
        assert exact >= -math.log(0.05)
        assert (log_e[: t - 1] < -math.log(0.05)).all()
    else:
        assert (log_e <= num - den + 1e-9).all()


@pytest.mark.slow
def test_reduced_null_table_every_upper_bound_at_most_alpha() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks/studies/monitor_null.py"), "--quick"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("alpha ")]
    assert len(rows) == 4
    for r in rows:
        assert float(r[-2]) <= 0.05 and float(r[-4]) <= 0.05  # upper bounds to 3× the cap and to the cap
