"""RW / RW± likelihoods, the multi-start MLE, the CogBench importer and CogBench's metrics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import differential_evolution

from cogtestbed.data.cogbench import import_instrumental
from cogtestbed.inference.instrumental import MODELS, cogbench_metrics
from cogtestbed.simulation import simulate


def cogbench_nll(params, casino, action, reward, plus_minus):
    """Direct transcription of CogBench's store.py ``nll`` (per-casino values from 0.5, softmax,
    likelihood clipped to [1e-5, 1-1e-5]) in float64 numpy."""
    total = 0.0
    for c in np.unique(casino):
        values = np.ones(2) / 2
        for a, r in zip(action[casino == c], reward[casino == c], strict=True):
            logits = params[-1] * values
            logits = logits - logits.max()
            p = np.exp(logits) / np.exp(logits).sum()
            total += np.log(np.clip(p[a], 1e-5, 1 - 1e-5))
            pe = r - values[a]
            if plus_minus:
                values[a] += (params[0] if pe > 0 else params[1]) * pe
            else:
                values[a] += params[0] * pe
    return -total


@pytest.fixture(scope="module")
def sim_data():
    t = simulate("instrumental-learning", "rw-pm", 6, 4, {"alpha_pos": 0.5, "alpha_neg": 0.2, "beta": 6})
    return MODELS["rw-pm"].subject_data(t)


def test_kernel_nll_equals_cogbench_transcription(sim_data):
    rng = np.random.default_rng(1)
    for d in sim_data.values():
        casino, action = d.casino, d.action
        for _ in range(5):
            theta = np.array([rng.random(), rng.random(), rng.uniform(0, 50)])
            ours = MODELS["rw-pm"].nll(theta, d)
            ref = cogbench_nll(theta, casino, action, d.reward, True)
            assert ours == pytest.approx(ref, rel=1e-10, abs=1e-9)
            ours_rw = MODELS["rw"].nll(theta[[0, 2]], d)
            assert ours_rw == pytest.approx(cogbench_nll(theta[[0, 2]], casino, action, d.reward, False), rel=1e-10)


def test_gradient_matches_finite_differences(sim_data):
    d = next(iter(sim_data.values()))
    for name, theta in (("rw-pm", np.array([0.4, 0.25, 3.0])), ("rw", np.array([0.35, 4.0]))):
        model = MODELS[name]
        _, grad = model.nll_grad(theta, d)
        eps = 1e-6
        fd = [(model.nll(theta + eps * e, d) - model.nll(theta - eps * e, d)) / (2 * eps)
              for e in np.eye(len(theta))]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_pooled_kernel_is_each_subject_alone_and_clipped_trials_carry_no_gradient(sim_data):
    """The RW± kernel over all subjects' trials at once (the hierarchical fit's call: the values reset where the
    subject changes) is each subject's call alone, row by row; a clipped trial's gradient is exactly 0, even
    where β·∂V overflows (β ≥ 1e308)."""
    from cogtestbed.inference.instrumental import CLIP_HI, CLIP_LO, rwpm_pointwise_kernel

    data = list(sim_data.values())
    obs = np.concatenate([np.full(len(d.action), i) for i, d in enumerate(data)])
    arrays = [np.concatenate([getattr(d, f) for d in data]) for f in ("action", "casino", "reward")]
    rng = np.random.default_rng(5)
    for low, high in ((0.5, 20.0), (1e308, 1.7e308)):
        theta = np.column_stack([rng.random(len(data)), rng.random(len(data)), rng.uniform(low, high, len(data))])
        ll, grad = rwpm_pointwise_kernel(theta, obs, *arrays)
        for i, d in enumerate(data):
            ll_i, grad_i = rwpm_pointwise_kernel(theta[i:i + 1], np.zeros(len(d.action), np.int64), d.action, d.casino,
                                                 d.reward)
            np.testing.assert_allclose(ll[obs == i], ll_i, rtol=1e-13)
            np.testing.assert_allclose(grad[obs == i], grad_i, rtol=1e-12, atol=1e-12)
        clipped = (ll == np.log(CLIP_LO)) | (ll == np.log(CLIP_HI))
        assert clipped.any()
        assert np.all(grad[clipped] == 0.0)


def test_mle_recovers_generating_parameters_with_long_sessions():
    from cogtestbed.environments.instrumental import InstrumentalDesign

    design = InstrumentalDesign(visits_per_casino=500)
    t = simulate("instrumental-learning", "rw", 4, 8, {"alpha": 0.3, "beta": 5.0}, design=design)
    fits = MODELS["rw"].fit_mle(t)
    assert np.all(np.abs(fits["alpha"] - 0.3) < 0.1)
    assert np.all(np.abs(fits["beta"] - 5.0) < 1.5)
    assert fits["converged"].all()


def test_mle_is_at_least_as_good_as_cogbench_differential_evolution(cogbench_dir):
    """On real CogBench runs our optimum is never worse than CogBench's DE(maxiter=100)."""
    table = import_instrumental(cogbench_dir / "InstrumentalLearning" / "gpt-4.csv")
    for name, bounds in (("rw", [(0, 1), (0, 1e5)]), ("rw-pm", [(0, 1), (0, 1), (0, 1e5)])):
        model = MODELS[name]
        data = model.subject_data(table)
        for key in list(data)[:3]:
            d = data[key]
            ours = model.fit_subject(d)
            de = differential_evolution(lambda th, d=d, m=model: m.nll(np.asarray(th), d),
                                        bounds=bounds, maxiter=100, seed=0, polish=False)
            assert ours.nll <= de.fun + 1e-6, (name, key, ours.nll, de.fun)


def test_mle_matches_a_dense_grid_optimum(sim_data):
    model = MODELS["rw"]
    d = next(iter(sim_data.values()))
    alphas = np.linspace(0.001, 0.999, 200)
    betas = np.exp(np.linspace(np.log(0.01), np.log(200), 200))
    grid = np.array([[a, b] for a in alphas for b in betas])
    best_grid = model.nll_many(grid, d).min()
    assert model.fit_subject(d).nll <= best_grid + 1e-9


def test_importer_reads_every_real_instrumental_file(cogbench_dir):
    folder = cogbench_dir / "InstrumentalLearning"
    files = sorted(folder.glob("*.csv"))
    assert len(files) == 7
    for path in files:
        t = import_instrumental(path)
        assert set(t.groupby("subject").size()) == {96}
        assert t["valid"].all() and t["casino"].between(1, 4).all()
        assert (t.groupby("subject")["casino"].value_counts() == 24).all()
        assert t["agent"].iloc[0] == path.stem


def test_importer_drops_cogbench_duplicated_rows(cogbench_dir):
    t = import_instrumental(cogbench_dir / "InstrumentalLearning" / "random.csv")
    assert t.attrs["duplicated_rows_dropped"] == 59 * 96
    assert t["subject"].nunique() == 59
    # kept rows are the ones whose casino matches their reward probabilities
    probs = {1: (0.25, 0.25), 2: (0.25, 0.75), 3: (0.75, 0.25), 4: (0.75, 0.75)}
    expected = np.array([probs[c] for c in t["casino"]])
    np.testing.assert_array_equal(t[["mean0", "mean1"]].to_numpy(), expected)


def test_human_file_means_filled_from_design(cogbench_dir):
    t = import_instrumental(cogbench_dir / "InstrumentalLearning" / "human.csv")
    assert t["subject"].nunique() == 50
    casino2 = t[t["casino"] == 2]
    assert (casino2["mean0"] == 0.25).all() and (casino2["mean1"] == 0.75).all()


def test_cogbench_metrics_on_real_gpt4_file(cogbench_dir):
    path = cogbench_dir / "InstrumentalLearning" / "gpt-4.csv"
    import pandas as pd

    raw = pd.read_csv(path)
    result = cogbench_metrics(import_instrumental(path))
    per_run = pd.DataFrame(result["per_run"])
    assert len(per_run) == 10
    # performance is the plain mean reward per run, and the reported value is the mean over runs
    np.testing.assert_allclose(per_run["performance"], raw.groupby("run")["reward"].mean().to_numpy())
    assert result["metrics"]["performance"] == pytest.approx(raw["reward"].mean())
    np.testing.assert_allclose(per_run["optimism_bias"], per_run["alpha_pos"] - per_run["alpha_neg"])
    assert result["metrics"]["learning_rate"] == pytest.approx(per_run["alpha"].mean())
    # the fitted NLLs equal CogBench's likelihood at the reported parameters
    run0 = raw[raw["run"] == 0]
    ref = cogbench_nll([per_run.loc[0, "alpha"], per_run.loc[0, "beta"]], run0["task"].to_numpy(),
                       run0["choice"].to_numpy(), run0["reward"].to_numpy(), False)
    assert per_run.loc[0, "nll_rw"] == pytest.approx(ref, rel=1e-9)
    assert ((per_run["alpha"] >= 0) & (per_run["alpha"] <= 1)).all()
