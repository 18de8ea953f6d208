"""The PyMC contract: likelihood identity with the numba NLL, sampling, diagnostics, LOO."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pymc_checks import pymc_logp_and_nll

from cogtestbed.inference.hierarchical import (
    ConvergenceWarning,
    Diagnostics,
    compare_loo,
    fit_hierarchical,
    loo,
    sample_hierarchical_prior,
)
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

EXP = get_experiment("instrumental-learning")


def _trials(n: int = 6, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return simulate(EXP, "rw-pm", n, seed, {"alpha_pos": rng.uniform(0.1, 0.9, n),
                                            "alpha_neg": rng.uniform(0.1, 0.9, n),
                                            "beta": rng.uniform(1, 12, n)})


@pytest.mark.parametrize("name", ["rw", "rw-pm"])
def test_pymc_loglik_equals_numba_nll(name: str) -> None:
    model = EXP.model(name)
    trials = _trials()
    trials.loc[trials.index[5], "valid"] = False  # invalid trials are skipped by both
    logp, nll = pymc_logp_and_nll(model, trials, 6)
    assert logp == pytest.approx(-nll, rel=1e-10)


def test_pymc_gradient_matches_finite_differences() -> None:
    model = EXP.model("rw-pm")
    pm_model = model.pymc_model(_trials(3), hierarchical=True)
    logp = pm_model.compile_logp()
    dlogp = pm_model.compile_dlogp()
    point = pm_model.initial_point()
    rng = np.random.default_rng(3)
    point = {k: v + 0.3 * rng.normal(size=np.shape(v)) for k, v in point.items()}
    grad = dlogp(point)
    names = [v.name for v in pm_model.value_vars]
    flat, k = [], 0
    for name in names:
        size = np.size(point[name])
        flat.append((name, k, size))
        k += size
    for name, start, size in flat:
        for j in range(size):
            h = 1e-6
            up = {kk: np.array(v, dtype=float, copy=True) for kk, v in point.items()}
            dn = {kk: np.array(v, dtype=float, copy=True) for kk, v in point.items()}
            up[name].reshape(-1)[j] += h
            dn[name].reshape(-1)[j] -= h
            fd = (logp(up) - logp(dn)) / (2 * h)
            assert grad[start + j] == pytest.approx(fd, rel=1e-4, abs=1e-6), (name, j)


def test_contract_names_and_coords() -> None:
    model = EXP.model("rw-pm")
    trials = _trials(4)
    m = model.pymc_model(trials)
    for p in model.parameters.names:
        for suffix in ("_mu", "_sigma", "_z", "", "_pop"):
            assert f"{p}{suffix}" in m.named_vars
    assert list(m.coords["subject"]) == sorted(trials["subject"].unique())
    assert model.has_pymc


def test_fit_hierarchical_returns_idata_diagnostics_and_loo() -> None:
    # 5 subjects of seed 1, as the rw fits below: the rw comparison fit reuses their compiled model (a
    # nutpie compilation is most of a fit's cost); what is asserted is structure (groups, shapes, keys,
    # ordered intervals, a finite LOO), which a wrong name, axis or group breaks at any size
    trials = _trials(5, 1)
    fit = fit_hierarchical(EXP.model("rw-pm"), trials, draws=150, tune=150, chains=2, seed=2,
                           warn=False)
    groups = set(fit.idata.groups())
    assert {"posterior", "log_likelihood", "sample_stats", "constant_data"} <= groups
    d = fit.diagnostics.as_dict()
    assert set(d) >= {"max_rhat", "min_ess_bulk", "min_ess_tail", "divergences", "ok"}
    assert fit.idata.posterior["alpha_pos"].shape == (2, 150, 5)
    summ = fit.subject_summary()
    assert set(summ["parameter"]) == {"alpha_pos", "alpha_neg", "beta"}
    assert (summ["lo90"] <= summ["lo50"]).all() and (summ["hi50"] <= summ["hi90"]).all()
    assert np.isfinite(loo(fit).elpd_loo)
    assert np.isfinite(loo(fit, by_subject=False).elpd_loo)
    rw = fit_hierarchical(EXP.model("rw"), trials, draws=150, tune=150, chains=2, seed=2, warn=False)
    comp = compare_loo({"rw": rw, "rw-pm": fit})
    assert set(comp.index) == {"rw", "rw-pm"}


def test_inference_data_is_shaped_as_pymc_users_expect() -> None:
    """Issue 75: ``observed_data`` holds the observed choices and ``posterior_predictive`` (asked for)
    replicated ones of the same shape, so ``az.plot_ppc`` draws; the posterior holds the model's
    parameters only, population first in ``az.summary`` (the offsets ``_z`` and ``_sigma_log__`` are
    in ``unconstrained_posterior``); no dimension is unnamed; warm-up draws only when asked.  The
    5 subjects of seed 1 reuse the compilation of the fit above."""
    import re

    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    trials = _trials(5, 1)
    model = EXP.model("rw-pm")
    idata = fit_hierarchical(model, trials, draws=150, tune=150, chains=2, seed=2, warn=False,
                             posterior_predictive=True).idata
    groups = set(idata.groups())
    assert {"posterior", "observed_data", "posterior_predictive", "unconstrained_posterior"} <= groups
    assert not [g for g in groups if g.startswith("warmup")]
    valid = trials[trials["valid"].astype(bool)]
    observed = idata.observed_data["choice"]
    assert observed.dims == ("obs",) and observed.size == len(valid)
    assert int(observed.sum()) == int(valid["action"].sum())
    np.testing.assert_array_equal(observed.values, idata.constant_data["action"].values)
    names = model.parameters.names
    population = [f"{p}{s}" for p in names for s in ("_mu", "_sigma", "_pop")]
    assert set(idata.posterior.data_vars) == {*population, *names}
    internals = {f"{p}_z" for p in names} | {f"{p}_sigma_log__" for p in names}
    assert internals == set(idata.unconstrained_posterior.data_vars)
    rows = list(az.summary(idata).index)
    assert rows[0] == "alpha_pos_mu" and not [r for r in rows if "_z[" in r or r.endswith("__")]
    assert rows.index("beta_pop") < min(k for k, r in enumerate(rows) if "[" in r)  # population first
    for g in groups:
        for name, var in idata[g].data_vars.items():
            assert not [d for d in var.dims if re.search(r"_dim_\d+$", d)], (g, name, var.dims)
    ppc = idata.posterior_predictive["choice"]
    assert ppc.shape == (2, 150, len(valid)) and set(np.unique(ppc.values)) <= {0, 1}
    p_one = np.where(observed.values == 1, np.exp(idata.log_likelihood["choice"].values),
                     1 - np.exp(idata.log_likelihood["choice"].values))
    assert abs(float(ppc.mean()) - float(p_one.mean())) < 0.01
    assert len(np.ravel(az.plot_ppc(idata, num_pp_samples=20))) >= 1
    warm = fit_hierarchical(model, trials, draws=20, tune=20, chains=2, seed=2, warn=False, keep_warmup=True)
    assert warm.idata.warmup_posterior.sizes["draw"] == 20 and "warmup_sample_stats" in warm.idata.groups()
    assert "posterior_predictive" not in warm.idata.groups()
    assert warm.with_posterior_predictive(seed=1).posterior_predictive["choice"].shape == (2, 20, len(valid))


def test_same_seed_same_posterior_and_cached_compilation() -> None:
    model = EXP.model("rw")
    a = fit_hierarchical(model, _trials(5, 1), draws=50, tune=50, chains=1, seed=4, warn=False)
    b = fit_hierarchical(model, _trials(5, 1), draws=50, tune=50, chains=1, seed=4, warn=False)
    c = fit_hierarchical(model, _trials(5, 2), draws=50, tune=50, chains=1, seed=4, warn=False)
    np.testing.assert_array_equal(a.idata.posterior["alpha"], b.idata.posterior["alpha"])
    assert not np.array_equal(a.idata.posterior["alpha"], c.idata.posterior["alpha"])


def test_mass_matrix_is_adapted_from_the_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """nutpie adapts the diagonal mass matrix from the draws' variance alone
    (``MASS_MATRIX_FROM_GRADIENTS``, cogtestbed's choice): the setting reaches the sampler and changes
    what it draws; a model that declares the low-rank mass matrix keeps nutpie's estimate."""
    import nutpie

    from cogtestbed.inference import hierarchical_sampling as hs

    seen: list[dict[str, object]] = []
    real = nutpie.sample

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(nutpie, "sample", spy)
    model, trials = EXP.model("rw-pm"), _trials(5, 1)  # a diagonal model (RW declares the low-rank one since issue 71)
    draws = fit_hierarchical(model, trials, draws=50, tune=50, chains=1, seed=4, warn=False, log_likelihood=False)
    assert seen[-1]["use_grad_based_mass_matrix"] is False and seen[-1]["low_rank_modified_mass_matrix"] is False
    monkeypatch.setattr(hs, "MASS_MATRIX_FROM_GRADIENTS", True)
    grads = fit_hierarchical(model, trials, draws=50, tune=50, chains=1, seed=4, warn=False, log_likelihood=False)
    assert seen[-1]["use_grad_based_mass_matrix"] is True
    assert not np.array_equal(draws.idata.posterior["alpha_pos"], grads.idata.posterior["alpha_pos"])
    low_rank = get_experiment("belief-coherence").model("loss")
    assert low_rank.low_rank_mass_matrix and hs._mass_matrix_settings(low_rank) == {
        "low_rank_modified_mass_matrix": True}


def _short(trials: pd.DataFrame, every: int = 7) -> pd.DataFrame:
    """``trials`` with every ``every``-th answer invalid: the same subjects, fewer observations."""
    short = trials.copy()
    short.loc[short.index[::every], "valid"] = False
    return short


def test_compiled_key_holds_what_a_compilation_fixes_and_not_the_observation_count() -> None:
    """Tables with other answers or another number of observations share a compiled model; another
    subject count (the length of the sampled vector) or pooling does not (issue 54)."""
    from cogtestbed.inference.hierarchical_sampling import _compiled_key

    rw = EXP.model("rw")

    def key(trials: pd.DataFrame, hierarchical: bool = True) -> tuple:
        return _compiled_key(rw.pymc_model(trials, hierarchical), rw.name, hierarchical)

    full, short = _trials(5, 1), _short(_trials(5, 1))
    n = {len(rw.pymc_model(t).coords["obs"]) for t in (full, short)}
    assert len(n) == 2  # the short table has fewer observations
    assert key(full) == key(_trials(5, 2)) == key(short)
    assert key(full) != key(_trials(6, 1)) and key(full) != key(full, hierarchical=False)


def test_a_reused_compilation_draws_what_a_fresh_one_draws_on_a_shorter_table() -> None:
    """A fit on the compilation of a longer table (same seed) gives exactly the draws and the
    pointwise log-likelihood of a fit on its own fresh compilation (issue 54)."""
    from cogtestbed.inference import hierarchical_sampling as hs

    model, full, short = EXP.model("rw"), _trials(5, 1), _short(_trials(5, 1))
    fit_hierarchical(model, full, draws=50, tune=50, chains=1, seed=4, warn=False, log_likelihood=False)
    key = hs._compiled_key(model.pymc_model(short, True), model.name, True)
    compiled = hs._COMPILED[key]  # the full table's compilation serves the short one
    reused = fit_hierarchical(model, short, draws=50, tune=50, chains=1, seed=4, warn=False)
    assert hs._COMPILED[key] is compiled
    del hs._COMPILED[key]
    fresh = fit_hierarchical(model, short, draws=50, tune=50, chains=1, seed=4, warn=False)
    assert hs._COMPILED[key] is not compiled
    n_obs = int(short["valid"].sum())
    assert reused.idata.log_likelihood["choice"].shape == (1, 50, n_obs)
    for group in ("posterior", "log_likelihood"):
        for name, values in fresh.idata[group].items():
            np.testing.assert_array_equal(reused.idata[group][name].values, values.values)
    assert not np.array_equal(reused.idata.posterior["alpha"], fit_hierarchical(
        model, full, draws=50, tune=50, chains=1, seed=4, warn=False, log_likelihood=False).idata.posterior["alpha"])


def test_convergence_warning_names_failed_thresholds() -> None:
    diag = Diagnostics(1.2, 10.0, 50.0, 3, 2, 100, 1.0, "x", pd.DataFrame())
    assert not diag.ok
    text = "; ".join(diag.problems)
    assert "R-hat" in text and "bulk ESS" in text and "divergent" in text
    trials = _trials(5, 1)  # the shape of the fit above: its compiled sampler is reused
    with pytest.warns(ConvergenceWarning, match="R-hat|ESS|divergent"):
        fit_hierarchical(EXP.model("rw-pm"), trials, draws=10, tune=10, chains=2, seed=0)


def test_max_draws_doubles_the_draws_until_every_check_passes() -> None:
    """A run short of the ESS floor is sampled again with twice the draws (same seed) up to
    ``max_draws``; divergences are not mended by draws, and a cap below ``draws`` is refused."""
    from cogtestbed.inference.hierarchical_sampling import _more_draws_help

    model, trials = EXP.model("rw"), _trials(5, 1)
    short = fit_hierarchical(model, trials, draws=25, tune=150, chains=2, seed=3, warn=False, log_likelihood=False)
    assert short.diagnostics.n_draws == 25 and not short.diagnostics.ok and short.diagnostics.divergences == 0
    grown = fit_hierarchical(model, trials, draws=25, tune=150, chains=2, seed=3, warn=False, max_draws=1600)
    d = grown.diagnostics
    assert d.ok and d.n_draws in (50, 100, 200, 400, 800, 1600) and grown.idata.posterior.sizes["draw"] == d.n_draws
    assert "log_likelihood" in grown.idata
    capped = fit_hierarchical(model, trials, draws=25, tune=150, chains=2, seed=3, warn=False, max_draws=49,
                              log_likelihood=False)
    assert capped.diagnostics.n_draws == 25  # twice the draws would pass the cap
    assert not _more_draws_help(Diagnostics(1.0, 10.0, 10.0, 2, 2, 100, 1.0, "x", pd.DataFrame()))
    with pytest.raises(ValueError, match="max_draws"):
        fit_hierarchical(model, trials, draws=100, max_draws=50)


def test_hierarchical_prior_sampler_matches_bounds() -> None:
    params = EXP.model("rw-pm").parameters
    pop, subj = sample_hierarchical_prior(params, 1000, np.random.default_rng(0))
    assert set(subj) == set(params.names)
    assert ((subj["alpha_pos"] > 0) & (subj["alpha_pos"] < 1)).all()
    assert (subj["beta"] > 0).all()
    assert {"alpha_pos_mu", "alpha_pos_sigma", "alpha_pos_pop"} <= set(pop)


def test_nonbinary_model_without_pymc_raises() -> None:
    from cogtestbed.inference.base import CognitiveModel

    class NoPymc(CognitiveModel):
        name = "x"
        experiment = "instrumental-learning"
        parameters = EXP.model("rw").parameters

        def subject_data(self, trials):  # type: ignore[no-untyped-def]
            return {}

        def n_observations(self, data):  # type: ignore[no-untyped-def]
            return 0

        def nll_grad(self, theta, data):  # type: ignore[no-untyped-def]
            return 0.0, theta

    assert not NoPymc().has_pymc
    with pytest.raises(NotImplementedError):
        NoPymc().pymc_model(_trials(2))
