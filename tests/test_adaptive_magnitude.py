"""Adaptive magnitude estimation (issue 53): each block's stimuli chosen for information on the
static-Bayes observer's parameters; continuous answers update the grid with the kernel's exact
density; a session replays from its seed and answers; the BayesBench metrics refuse its table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import cogtestbed as ct
from cogtestbed.environments.magnitude import ADAPTIVE_STIMULI
from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.adaptive import AdaptiveDesigner, replay
from cogtestbed.inference.adaptive_magnitude import adaptive_space, answer_bins
from cogtestbed.inference.magnitude import MODELS

MODEL = MODELS["static-bayes"]
ONE_BLOCK = {"task": "line-ratio", "conditions": "base", "modalities": "text", "ranges": "medium"}


def _simulate(seed: int = 3, trials: int = 10) -> pd.DataFrame:
    return ct.simulate("magnitude", "static-bayes", subjects=2, seed=seed, adaptive="w_prior,mu_p", trials=trials,
                       design=ONE_BLOCK, params={"w_prior": [0.2, 0.7], "mu_p": 0.5, "sigma_dec": 0.08})


def test_space_is_eleven_positions_and_answer_bins() -> None:
    space = adaptive_space(None)
    assert space.size == 11 and space.continuous
    np.testing.assert_allclose(space.fields["u"], np.linspace(0, 1, 11))
    bins = answer_bins()
    assert len(bins) == 51 and bins[0] == -0.5 and bins[-1] == 1.5


def test_continuous_update_is_the_gaussian_density_at_the_answer() -> None:
    """Bayes' rule with v ~ N((1 − w)u + w·μ_p, σ²) at the exact answer, on every grid node."""
    designer = AdaptiveDesigner(MODEL, adaptive_space(None), points=5)
    axes = designer.table.axes
    z = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    w, mu, s = 1 / (1 + np.exp(-z[:, 0])), z[:, 1], np.exp(z[:, 2])
    post = designer.weights.copy()
    for d, v in [(0, 0.12), (10, 0.81), (5, 0.47)]:
        designer.update(d, v)
        u = ADAPTIVE_STIMULI[d]
        post = post * norm.pdf(v, (1 - w) * u + w * mu, s)
        post /= post.sum()
        np.testing.assert_allclose(designer.weights, post, rtol=1e-8, atol=1e-14)


def test_information_picks_the_ends_for_the_prior_weight_and_the_middle_for_the_prior_mean() -> None:
    """v = u + w(μ_p − u): the prior weight shows where u is far from μ_p (the range's ends, 3.8 x the
    middle's information at the prior), the prior mean where u is near it; once the answers say v = u
    (no prior weight), the stimuli say nothing more about μ_p."""
    space = adaptive_space(None)
    designer = AdaptiveDesigner(MODEL, space, ("w_prior",))
    info_w = designer.information()
    # the two ends tie (the prior is symmetric about u = 1/2): the first is asked, whatever the rounding
    assert info_w[0] == pytest.approx(info_w[10], rel=1e-12) and designer.choose() == 0
    assert int(np.argmax(info_w)) in (0, 10)
    assert info_w[0] == pytest.approx(0.1795, abs=2e-3) and info_w[0] > 3.5 * info_w[5]
    mu = AdaptiveDesigner(MODEL, space, ("mu_p",))
    assert int(np.argmax(mu.information())) == 5
    for _ in range(6):
        mu.update(0, 0.1)
        mu.update(10, 0.9)
    assert mu.information().max() < 0.01


def test_adaptive_session_replays_from_its_seed_and_answers() -> None:
    a, b = _simulate(), _simulate()
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 20 and (a["design_index"] >= 0).all()
    space = adaptive_space(None)
    for _, rows in a.groupby("subject"):
        lo, hi = rows["range_low"].to_numpy(), rows["range_high"].to_numpy()
        chosen = rows["design_index"].to_numpy()
        np.testing.assert_allclose(rows["x"].to_numpy(), lo + np.asarray(ADAPTIVE_STIMULI)[chosen] * (hi - lo))
        v = ((rows["action"] - lo) / (hi - lo)).tolist()
        assert replay(MODEL, space, v, ("w_prior", "mu_p")) == chosen.tolist()
    # a fit of the table is the static-Bayes MLE as for any table
    fit = MODEL.fit_mle(a)
    assert fit["w_prior"].iloc[0] < fit["w_prior"].iloc[1]


def test_refusals_are_one_line() -> None:
    table = _simulate(trials=4)
    one_stimulus = table[table["subject"] == 0].assign(x=lambda t: t["range_low"])
    with pytest.raises(InputError, match="2 distinct stimuli: all 4 valid answers are to the stimulus at u = 0"):
        MODEL.fit_mle(one_stimulus)
    with pytest.raises(DataError, match="magnitude metrics refused: .*chosen adaptively"):
        ct.metrics("magnitude", table)
    with pytest.raises(ValueError, match="cannot play order-reversal"):  # pydantic: a ValueError
        ct.simulate("magnitude", "static-bayes", subjects=1, adaptive="w_prior", trials=3,
                    design={**ONE_BLOCK, "conditions": "base,order-reversal"})
    with pytest.raises(InputError, match="has parameters w_prior, mu_p, sigma_dec"):
        ct.simulate("magnitude", "static-bayes", subjects=1, adaptive="q_over_r", trials=3, design=ONE_BLOCK)
    assert ct.describe("magnitude")["adaptive"]["model"] == "static-bayes"


def test_plan_prices_the_one_block_session_it_simulates() -> None:
    """``plan --adaptive`` simulates the spec's one-block study design and prices the same design (a
    trial per block: calls = trials x sessions, not x the default design's blocks)."""
    p = ct.plan("magnitude", adaptive="w_prior", precision="w_prior=1.0", assurance=0.5, llm="openai:gpt-4o-mini",
                subjects=5, trials="1:4", adaptive_sims=4, seed=3).payload
    for arm in ("fixed", "adaptive"):
        if p[arm]["calls"] is not None:
            assert p[arm]["calls"] == p[arm]["trials"] * 5
    assert p["fixed_design"].startswith("the instrument's own trials")
