"""Hierarchical collider model: numba ZOIB kernel vs the pytensor reference, model structure, a
small fit, SBC bookkeeping; the 4 × 1000 human fit and the SBC study are marked slow."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cogtestbed.data.causal import import_rw17_human
from cogtestbed.inference import causal_hierarchical as ch
from cogtestbed.inference.causal import cbn_predictions
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec
from cogtestbed.studies.study_data import simulate_model
from cogtestbed.studies.summaries import sbc_summary


def simulate_synthetic_humans(rng: np.random.Generator, n_subjects: int) -> pd.DataFrame:
    """One prior draw of the 3p ZOIB model simulated through its generator (human design)."""
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior

    exp = get_experiment("collider")
    model = exp.model("cbn-3p")
    _, subj = sample_hierarchical_prior(model.parameters, n_subjects, rng)
    _, agent = model.sample_nuisance(rng)
    spec = study_spec(kind="sbc", experiment="collider", models=("cbn-3p",), method="hierarchical")
    design = exp.design_cls(content="rw17", scope="cell")
    return simulate_model(spec, exp, "cbn-3p", subj, n_subjects, int(rng.integers(2**31)), design, 1, agent)


@pytest.fixture(scope="module")
def human(shared_data: Path) -> pd.DataFrame:
    return import_rw17_human(shared_data / "causal" / "human" / "rw17_collider_ce.csv")


def _theta(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(.05, .6, n), rng.uniform(.3, .95, n), rng.uniform(.3, .95, n),
                            rng.uniform(.2, .8, n), np.full(n, 4.0), np.full(n, .05), np.full(n, .07)])


def test_table_gradient_matches_closed_forms() -> None:
    out = np.empty((11, 5))
    ch.noisy_or_table_grad(0.2, 0.9, 0.5, 0.3, out)
    assert out[:, 0] == pytest.approx(cbn_predictions(0.2, 0.9, 0.5, 0.3), abs=1e-12)
    x = np.array([0.2, 0.9, 0.5, 0.3])
    for j in range(4):
        hp, hm = x.copy(), x.copy()
        hp[j] += 1e-6
        hm[j] -= 1e-6
        fd = (cbn_predictions(*hp) - cbn_predictions(*hm)) / 2e-6
        assert out[:, j + 1] == pytest.approx(fd, abs=1e-6)


def noisy_or_tasks_pt(b: Any, m1: Any, m2: Any, pc: Any) -> Any:
    """The 11 noisy-OR task probabilities as a pytensor stack (last axis = task I…XI)."""
    import pytensor.tensor as pt

    e00 = b
    e01 = 1 - (1 - b) * (1 - m2)
    e10 = 1 - (1 - b) * (1 - m1)
    e11 = 1 - (1 - b) * (1 - m1) * (1 - m2)
    q = pc
    p11, p10, p01, p00 = q * q, q * (1 - q), (1 - q) * q, (1 - q) * (1 - q)
    z = e11 * p11 + e10 * p10 + e01 * p01 + e00 * p00
    tasks = [
        e00, e01, e11, q, q,
        e11 * p11 / (e11 * p11 + e01 * p01),
        (e11 * p11 + e10 * p10) / z,
        e10 * p10 / (e10 * p10 + e00 * p00),
        (1 - e11) * p11 / ((1 - e11) * p11 + (1 - e01) * p01),
        ((1 - e11) * p11 + (1 - e10) * p10) / (1 - z),
        (1 - e10) * p10 / ((1 - e10) * p10 + (1 - e00) * p00),
    ]
    return pt.stack(tasks, axis=-1)


def zoib_logp(y: Any, mu: Any, kappa: Any, pi: Any) -> Any:
    """Pointwise log-density of the zero-one-inflated Beta (:mod:`cogtestbed.inference.causal_hierarchical`)."""
    import pymc as pm
    import pytensor.tensor as pt

    mu = pt.clip(mu, ch.MU_CLIP, 1 - ch.MU_CLIP)
    y_in = pt.clip(y, ch.MU_CLIP, 1 - ch.MU_CLIP)
    beta = pm.logp(pm.Beta.dist(alpha=mu * kappa, beta=(1 - mu) * kappa), y_in)
    return pt.switch(pt.eq(y, 0.0), pt.log(pi[..., 0]),
                     pt.switch(pt.eq(y, 1.0), pt.log(pi[..., 1]), pt.log(pi[..., 2]) + beta))


def test_kernel_matches_pytensor_zoib_and_finite_differences(human: pd.DataFrame) -> None:
    import pytensor
    import pytensor.tensor as pt

    d = ch.model_data(human)
    th = _theta(len(d["subjects"]))
    ll, grad = ch.zoib_pointwise_kernel(th, d["obs_subject"], d["y"], d["task"])
    b, m1, m2, pc = (pt.dvector() for _ in range(4))
    mu = noisy_or_tasks_pt(b, m1, m2, pc)[d["obs_subject"], d["task"]]
    ref = zoib_logp(pt.as_tensor(d["y"]), mu, pt.as_tensor(4.0), pt.as_tensor(np.array([.05, .07, .88])))
    ref_v = pytensor.function([b, m1, m2, pc], ref)(*th[:, :4].T)
    assert np.abs(ll - ref_v).max() < 1e-10
    for j in range(th.shape[1]):
        tp, tm = th.copy(), th.copy()
        tp[:, j] += 1e-6
        tm[:, j] -= 1e-6
        fd = (ch.zoib_pointwise_kernel(tp, d["obs_subject"], d["y"], d["task"])[0]
              - ch.zoib_pointwise_kernel(tm, d["obs_subject"], d["y"], d["task"])[0]) / 2e-6
        assert np.abs(fd - grad[:, j]).max() < 1e-5 * (1 + np.abs(fd).max())
    # the inflation atoms: log π0 at y = 0, log π1 at y = 1
    assert ll[d["y"] == 0] == pytest.approx(np.log(.05))
    assert ll[d["y"] == 1] == pytest.approx(np.log(.07))


@pytest.mark.parametrize("pooling,free", [
    ("partial", {"b_mu", "b_sigma", "b_z", "m_mu", "m_sigma", "m_z", "p_c_mu", "p_c_sigma", "p_c_z", "kappa", "pi"}),
    ("none", {"b_u", "m_u", "p_c_u", "kappa", "pi"}),
    ("complete", {"b_mu", "m_mu", "p_c_mu", "kappa", "pi"}),
])
def test_model_structure_and_logp(human: pd.DataFrame, pooling: str, free: set[str]) -> None:
    model = ch.build_model(human, "3p", pooling)
    assert {v.name for v in model.free_RVs} == free
    logp = model.compile_logp()(model.initial_point())
    assert np.isfinite(logp)
    assert model.cogtestbed_key == ("collider-zoib", "3p", pooling)


def test_small_fit_runs_with_diagnostics() -> None:
    """6 synthetic subjects, PyMC's NUTS through the Op's ``perform`` (no nutpie compile).

    50 + 50 iterations (the sampling was a quarter of the test's time at 100 + 100): what is asserted is
    structure (the draw count, the subject axis, a finite ESS and LOO), which a wrong axis, name or
    pointwise log-likelihood breaks at any length."""
    from cogtestbed.inference.hierarchical import fit_hierarchical, loo

    trials = simulate_synthetic_humans(np.random.default_rng(3), n_subjects=6)
    assert len(trials) == 120 and trials["subject"].nunique() == 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_hierarchical(ch.build_model(trials, "3p", "partial"), trials, draws=50, tune=50, chains=1,
                               seed=1, sampler="pymc", warn=False, cores=1)
    assert fit.diagnostics.n_draws == 50 and np.isfinite(fit.diagnostics.min_ess_bulk)
    assert fit.idata.posterior["b"].shape == (1, 50, 6)
    assert np.isfinite(loo(fit, by_subject=False).elpd_loo)


def test_compiled_key_tells_subject_counts_apart_under_complete_pooling() -> None:
    """Complete pooling samples and stores no per-subject variable, so its sampled shapes are the same
    for 6 subjects and 4: only the subject count the builder wrote into the graph (``pt.ones(n)``)
    tells them apart, and the compiled-model key holds it (issue 54), so a 4-subject table never runs
    on a 6-subject compilation."""
    from cogtestbed.inference.hierarchical_sampling import _compiled_key, _stored_shapes

    six = simulate_synthetic_humans(np.random.default_rng(3), n_subjects=6)
    four = six[six["subject"].isin(six["subject"].unique()[:4])]
    complete = {n: ch.build_model(t, "3p", "complete") for n, t in ((6, six), (4, four))}
    assert _stored_shapes(complete[6]) == _stored_shapes(complete[4])
    assert _compiled_key(complete[6], "", True) != _compiled_key(complete[4], "", True)
    again = ch.build_model(six.copy(), "3p", "complete")
    assert _compiled_key(again, "", True) == _compiled_key(complete[6], "", True)


def test_sbc_summary_uniform_and_skewed() -> None:
    rng = np.random.default_rng(0)
    n = 400
    rows = [{"variable": "a", "rank": int(rng.integers(0, 200)), "L": 199, "in90": True} for _ in range(n)]
    rows += [{"variable": "b", "rank": int(rng.integers(0, 100)), "L": 199, "in90": True} for _ in range(n)]
    s = sbc_summary(pd.DataFrame(rows))
    assert sum(s["a"]["histogram"]) == n and s["a"]["p_value"] > 0.01
    assert s["b"]["histogram"][5:] == [0] * 5 and s["b"]["p_value"] < 0.01


def test_sbc_nuisance_prior_reaches_the_agent() -> None:
    """SBC draws κ and π from the ZOIB priors and the cbn agent answers with them."""
    model = get_experiment("collider").model("cbn-3p")
    truth, agent = model.sample_nuisance(np.random.default_rng(0))
    assert set(truth) == {"kappa", "pi[0]", "pi[1]"} and agent["kappa"] == pytest.approx(truth["kappa"])
    assert agent["pi0"] == truth["pi[0]"] and agent["pi100"] == truth["pi[1]"] and 0 < truth["pi[0]"] < 1


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_human_hierarchical_fit_converges(human: pd.DataFrame) -> None:
    from cogtestbed.inference.causal_hierarchical import hierarchical_human_study

    _, s = hierarchical_human_study(human)
    for pool in ("partial", "none", "complete"):
        d = s["diagnostics"][pool]
        assert d["max_rhat"] <= 1.01 and d["divergences"] == 0 and d["min_ess_bulk"] >= 400
    # partial pooling predicts held-out judgments at least as well as complete pooling
    assert s["loo_per_judgment"]["partial"]["rank"] < s["loo_per_judgment"]["complete"]["rank"]


def test_near_endpoint_ratings_are_censored_with_exact_gradient(human: pd.DataFrame) -> None:
    """Ratings within CENSOR of 0 / 1 use the Beta tail probability (a double cannot hold the
    draw more precisely); the value matches scipy's incomplete beta and the gradient is exact."""
    from scipy import stats

    d = ch.model_data(human)
    th = _theta(len(d["subjects"]))
    y = d["y"].copy()
    y[:40:2] = 1.0 - 1e-9   # right-censored
    y[1:40:2] = 1e-12       # left-censored
    ll, grad = ch.zoib_pointwise_kernel(th, d["obs_subject"], y, d["task"])
    for j in range(th.shape[1]):
        tp, tm = th.copy(), th.copy()
        tp[:, j] += 1e-6
        tm[:, j] -= 1e-6
        fd = (ch.zoib_pointwise_kernel(tp, d["obs_subject"], y, d["task"])[0]
              - ch.zoib_pointwise_kernel(tm, d["obs_subject"], y, d["task"])[0]) / 2e-6
        assert np.abs(fd[:40] - grad[:40, j]).max() < 1e-5 * (1 + np.abs(fd[:40]).max())
    # value: log(1 − π0 − π1) + log P(Y > 1 − C) for the right-censored ones
    kappa, pic = th[0, 4], 1 - th[0, 5] - th[0, 6]
    s, t = d["obs_subject"][0], d["task"][0]
    table = np.empty((11, 5))
    ch.noisy_or_table_grad(th[s, 0], th[s, 1], th[s, 2], th[s, 3], table)
    mu = table[t, 0]
    tail = stats.beta(mu * kappa, (1 - mu) * kappa).sf(1 - ch.CENSOR)
    assert ll[0] == pytest.approx(np.log(pic) + np.log(tail), rel=1e-4)
