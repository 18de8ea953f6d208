"""Adaptive belief coherence (issue 53): each next context drawn from the p* bin the MNL decider's
posterior expects to be most informative; the posterior reads the decisions at the context's mean
π0 report; a session replays from its seed and answers; the coherence metrics refuse its table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.environments.belief import ground_truth
from cogtestbed.environments.belief_adaptive import adaptive_bins
from cogtestbed.errors import DataError
from cogtestbed.inference.adaptive import AdaptiveDesigner
from cogtestbed.inference.adaptive_belief import adaptive_space, observations
from cogtestbed.inference.belief_models import MODELS

MODEL = MODELS["mnl"]
SMALL = {"variants": "pi0", "lie_node": "none", "n_reps": 2}
TARGETS = ("mid_yes", "slope_yes")


def _design(trials: int = 8) -> object:
    return ct.get_experiment("belief-coherence").env_cls.design_cls(**SMALL, adaptive=TARGETS, trials=trials)


def _simulate(seed: int = 1, trials: int = 8) -> pd.DataFrame:
    return ct.simulate("belief-coherence", "logit-rum", subjects=2, seed=seed, adaptive=",".join(TARGETS),
                       trials=trials, design=SMALL)


def test_space_is_the_non_empty_bins_at_their_expected_belief() -> None:
    design = _design()
    gt = ground_truth(design)
    filled, belief = adaptive_bins(gt, 20)
    space = adaptive_space(design)
    assert space.size == filled.size == 19 and space.answers == (0, 1, 2)
    assert np.all(np.floor(belief * 20) == filled)  # each bin's P*(x)-weighted mean p* lies in the bin
    assert belief[0] == pytest.approx(0.040, abs=1e-3) and belief[-1] == pytest.approx(0.931, abs=1e-3)


def test_observe_is_the_mnl_likelihood_at_the_reported_belief() -> None:
    designer = AdaptiveDesigner(MODEL, adaptive_space(_design()), points=3)
    z = np.stack([a.ravel() for a in np.meshgrid(*designer.table.axes, indexing="ij")], axis=1)
    post = designer.weights.copy()
    for a, p in [((1, 2), 0.7), ((0,), 0.1), ((2, 2), 0.45)]:
        designer.observe(3, {"a": np.array(a), "p": np.full(len(a), p), "n": np.ones(len(a))})
        x = p - 0.5
        v = np.stack([np.zeros(len(z)), z[:, 0] + z[:, 1] * x, z[:, 2] + z[:, 3] * x], axis=1)
        logp = v - np.log(np.exp(v).sum(axis=1, keepdims=True))
        post = post * np.exp(logp[:, list(a)].sum(axis=1))
        post /= post.sum()
        np.testing.assert_allclose(designer.weights, post, rtol=1e-8, atol=1e-14)


def test_information_on_the_slope_is_at_the_extreme_bins_and_none_at_one_half() -> None:
    """The MNL log-odds are mid + slope·(p − ½): at p = ½ the slope does not show (0.001 nats), at the
    extreme bins it does most (0.21 nats at the prior); the level shows most at ½."""
    space = adaptive_space(_design())
    slope = AdaptiveDesigner(MODEL, space, ("slope_yes",)).information()
    assert int(np.argmax(slope)) == 0 and slope[0] == pytest.approx(0.209, abs=3e-3)
    assert slope[9] < 0.005 and slope[10] < 0.005
    level = AdaptiveDesigner(MODEL, space, ("mid_yes",)).information()
    assert int(np.argmax(level)) in (9, 10)


def test_adaptive_session_replays_from_its_seed_and_answers() -> None:
    a, b = _simulate(), _simulate()
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 2 * 8 * 2 * 2  # subjects x contexts x reps x (belief, decision)
    design = _design()
    filled, _ = adaptive_bins(ground_truth(design), 20)
    space = adaptive_space(design)
    for runs, (_, rows) in zip(observations(a), a.groupby("subject"), strict=True):
        # each context's p* lies in the bin chosen for it
        first = rows.groupby("context_id").first()
        assert np.all(np.minimum(np.floor(first["p_true"] * 20), 19) == filled[first["design_index"]])
        designer = AdaptiveDesigner(MODEL, space, TARGETS)
        chosen = []
        for d, obs in runs:
            chosen.append(designer.choose())
            designer.observe(d, obs)
        assert chosen == first["design_index"].tolist()
    fit = MODEL.fit_mle(a)
    assert np.isfinite(fit["nll"]).all()


def test_refusals_are_one_line() -> None:
    table = _simulate(trials=3)
    with pytest.raises(DataError, match="belief-coherence metrics refused: .*chosen adaptively"):
        ct.metrics("belief-coherence", table)
    with pytest.raises(ValueError, match="needs adaptive parameters, trials >= 1 and the decision phase"):
        ct.simulate("belief-coherence", "logit-rum", subjects=1, adaptive="mid_yes", trials=3,
                    design={**SMALL, "decision": False})
    with pytest.raises(ValueError, match="n_contexts=7 contradicts it"):
        ct.simulate("belief-coherence", "logit-rum", subjects=1, adaptive="mid_yes", trials=3,
                    design={**SMALL, "n_contexts": 7})
    assert ct.describe("belief-coherence")["adaptive"]["parameters"] == ["mid_yes", "slope_yes", "mid_defer",
                                                                         "slope_defer"]


def test_observations_of_a_table_without_a_valid_decision_are_empty() -> None:
    """An LLM that never answers the decision's two lines (SmolLM2-135M) leaves no observation: each
    subject's list is empty (a pandas join on an empty frame once broke this)."""
    table = _simulate(trials=3)
    table = table.assign(valid=table["valid"] & (table["phase"].astype(str) != "decision"))
    assert observations(table) == [[], []]
    assert len(observations(_simulate(trials=3))[0]) == 3


def test_the_adaptive_session_uses_only_the_environments_public_interface() -> None:
    """Issue 73: belief_adaptive reads and writes the environment through public names only (no
    ``env._x``), and the session's adaptive state is the environment's public ``adaptive``."""
    import ast
    from pathlib import Path

    from cogtestbed.environments import belief_adaptive
    from cogtestbed.environments.belief import BeliefCoherenceEnv, BeliefDesign

    tree = ast.parse(Path(belief_adaptive.__file__).read_text(encoding="utf-8"))
    private = [f"{ast.unparse(n)}:{n.lineno}" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")]
    assert private == []
    env = BeliefCoherenceEnv(BeliefDesign(adaptive=("mid_yes",), trials=3, n_reps=1))
    env.reset(seed=4)
    assert isinstance(env.adaptive, belief_adaptive.AdaptiveContexts)
    assert env.adaptive.asked.sum() == 1  # the first context is chosen at the start
    config, theta = env.drawn.config[0, 0], env.drawn.theta[0, 0]
    assert env.adaptive.configs[env.outcomes.extra["design_index"][0, 0]].tolist().count(config) >= 1
    assert theta in (0, 1)
