"""The Metropolis-within-Gibbs sampler of centred hierarchical fits (``sampler="gibbs"``,
:mod:`cogtestbed.inference.hierarchical_gibbs`): each step leaves its exact conditional invariant, checked
against oracles that share nothing with the step (importance sampling, quadrature), and the whole sampler
against an exact posterior by quadrature (slow)."""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.errors import InputError
from cogtestbed.inference import hierarchical_gibbs as gibbs
from cogtestbed.inference.hierarchical import SD_SCALE, kernel_pymc_model
from cogtestbed.registry import get_experiment

SPEKTOR = Path(__file__).resolve().parents[2] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"
NEEDS_SPEKTOR = pytest.mark.skipif(not SPEKTOR.is_file(), reason="the Psych-201 file is not in ../shared/data")

#: The population of the 282-participant nutpie fit (docs/risky-choice.md), on the unconstrained scale.
POP_MU = np.array([np.log(0.971), np.log(0.759 - 0.1), np.log(0.700)])
POP_SD = np.array([0.894, 0.487, 1.24])


def centred_pt() -> object:
    model = copy.copy(get_experiment("risky-choice").model("prospect-theory"))
    model.centred_parameters = tuple(model.parameters.names)  # type: ignore[attr-defined]
    return model


@pytest.fixture(scope="module")
def participant_273(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """Spektor et al.'s Exp. 3 participant 63 (the 282 fit's subject 273): two low regions of λ."""
    with zipfile.ZipFile(SPEKTOR) as z:
        name = next(n for n in z.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX"))
        lines = z.read(name).decode().splitlines()
    records = [json.loads(x) for x in lines]
    line = next(x for x, r in zip(lines, records, strict=True)
                if r["experiment"].endswith("exp3.csv") and r["participant"] == 63)
    path = tmp_path_factory.mktemp("spektor") / "p63.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    return get_experiment("risky-choice").importer("psych201").load(path)


def exact_draws(model: object, table: pd.DataFrame, locs: list[np.ndarray], covs: list[np.ndarray], n: int,
                seed: int) -> tuple[np.ndarray, float, np.ndarray]:
    """``n`` draws of the subject's conditional at the fixed population by sampling-importance-resampling,
    independent of :mod:`hierarchical_gibbs`: an equal mixture of scipy's multivariate t (df 3, 4 × the
    covariances) at ``locs``, weighted by the model's own ``nll_many``.  Returns the draws, P(λ > 4) and
    E[u] of the weighted pool."""
    from scipy import stats
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    comps = [stats.multivariate_t(loc, 4.0 * cov, df=3.0) for loc, cov in zip(locs, covs, strict=True)]
    pool = 40_000
    which = rng.integers(len(comps), size=pool)
    X = np.concatenate([c.rvs(size=int((which == j).sum()), random_state=rng).reshape(-1, 3)
                        for j, c in enumerate(comps)])
    log_q = logsumexp(np.column_stack([c.logpdf(X) for c in comps]), axis=1) - np.log(len(comps))
    params = list(model.parameters)  # type: ignore[attr-defined]
    natural = np.column_stack([p.to_constrained(X[:, j]) for j, p in enumerate(params)])
    data = next(iter(model.subject_data(table).values()))  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        log_lik = -np.asarray(model.nll_many(natural, data))  # type: ignore[attr-defined]
    log_w = np.where(np.isfinite(log_lik), log_lik, -np.inf) + stats.norm.logpdf(X, POP_MU, POP_SD).sum(1) - log_q
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    assert 1.0 / np.sum(w ** 2) > 0.05 * pool, "the importance pool is too degenerate to be an oracle"
    return X[rng.choice(pool, size=n, p=w)], float(w @ (np.exp(X[:, 0]) > 4.0)), w @ X


@NEEDS_SPEKTOR
def test_each_subject_move_keeps_a_bimodal_conditional_stationary(participant_273: pd.DataFrame) -> None:
    """Participant 273's conditional at a fixed population (~19 % of its mass at λ > 4, the rest near
    λ ≈ 1.5, 4.4 nats between): 2,000 copies of the subject started at exact draws (an oracle that shares
    no code with the sampler) stay at it, to within 4.5 binomial / normal SEs, after 8 HMC moves alone and
    after 8 full steps (HMC + mode jump).  A jump without its Hastings correction fails it (checked by hand:
    P(λ > 4) 0.13 against 0.19); subtler biases (a leapfrog that is not reversible, normal draws under a t
    density) drift too slowly to show at 2,000 copies and 8 steps (an audit saw them at 10,000 copies and
    25 steps)."""
    model = centred_pt()
    data = gibbs.subject_data(model, participant_273)
    prop = gibbs.build_proposals(model, data, seed=0)
    assert int(prop.n_modes[0]) == 2, "the mode search finds both low regions"
    assert 1.2 < np.exp(prop.loc[0, 0, 0]) < 2.0 and 5.0 < np.exp(prop.loc[0, 1, 0]) < 12.0
    copies = 2_000
    covs = [prop.chol[0, j] @ prop.chol[0, j].T / gibbs.JUMP_INFLATION for j in range(2)]
    start, share, mean = exact_draws(model, participant_273, [prop.loc[0, 0], prop.loc[0, 1]], covs, copies, 5)
    assert 0.12 < share < 0.3
    m = data.obs_subject.size
    tiled = gibbs.SubjectData(list(range(copies)), np.repeat(np.arange(copies), m),
                              [np.ascontiguousarray(np.concatenate([a] * copies)) for a in data.arrays])
    many = gibbs.Proposals(*(np.repeat(a, copies, axis=0) for a in (prop.loc, prop.chol, prop.log_weight,
                                                                    prop.walk_chol)))
    names = list(model.parameters.names)
    step_class = gibbs._block_step_class()
    sd_u = np.sqrt(((start - mean) ** 2).mean(axis=0))

    def check(U: np.ndarray, what: str) -> None:
        high = np.mean(np.exp(U[:, 0]) > 4.0)
        assert abs(high - share) < 4.5 * np.sqrt(share * (1 - share) / copies), (what, high, share)
        z = (U.mean(axis=0) - mean) / (sd_u / np.sqrt(copies))
        assert np.all(np.abs(z) < 4.5), (what, z)

    for what in ("hmc", "full"):
        step = object.__new__(step_class)
        step_class.__init__(step, vars=[], names=names, likelihood=gibbs.SubjectLikelihood(model, tiled),
                            proposals=many, rng=1)
        step.tune = False
        point = {**{f"{n}_u": start[:, j].copy() for j, n in enumerate(names)},
                 **{f"{n}_mu": POP_MU[j] for j, n in enumerate(names)},
                 **{f"{n}_sigma_log__": np.log(POP_SD[j]) for j, n in enumerate(names)}}
        U = start.copy()
        for _ in range(8):
            if what == "hmc":
                U = step._hamiltonian(U, POP_MU, POP_SD)[0]
            else:
                point, _ = step.step(point)
                U = np.column_stack([point[f"{n}_u"] for n in names])
        check(U, what)


def test_the_population_step_samples_its_exact_conditional() -> None:
    """Given fixed subject values, the population step's draws of (μ, σ) of one parameter match the
    conditional computed by quadrature on a fine grid (its means and SDs within 4.5 Monte Carlo SEs)."""
    import arviz as az

    rng = np.random.default_rng(3)
    model = centred_pt()
    names = list(model.parameters.names)
    params = list(model.parameters)
    U = {n: rng.normal(0.3 * j, 0.4 + 0.3 * j, size=12) for j, n in enumerate(names)}
    prior = (np.array([p.prior_mean for p in params]), np.array([p.prior_sd for p in params]),
             SD_SCALE * np.array([p.prior_sd for p in params]))
    step_class = gibbs._population_step_class()
    step = object.__new__(step_class)
    step_class.__init__(step, vars=[], names=names, prior=prior, rng=5)
    point = {**{f"{n}_u": U[n] for n in names}, **{f"{n}_mu": 0.0 for n in names},
             **{f"{n}_sigma_log__": 0.0 for n in names}}
    draws = []
    for _ in range(6_000):
        point, _ = step.step(point)
        draws.append([point["theta_mu"], np.exp(point["theta_sigma_log__"])])
    chain = np.array(draws, dtype=float)[200:]
    j = names.index("theta")
    m0, s0, c = prior[0][j], prior[1][j], prior[2][j]
    mu_grid, sigma_grid = np.meshgrid(np.linspace(-3, 3, 1201), np.linspace(1e-3, 3, 1200), indexing="ij")
    u = U["theta"]
    log_p = (-0.5 * ((mu_grid - m0) / s0) ** 2 - 0.5 * (sigma_grid / c) ** 2 - u.size * np.log(sigma_grid)
             - 0.5 * ((u[None, None, :] - mu_grid[..., None]) ** 2).sum(-1) / sigma_grid ** 2)
    w = np.exp(log_p - log_p.max())
    w /= w.sum()
    for column, grid in ((0, mu_grid), (1, sigma_grid)):
        exact_mean = float((w * grid).sum())
        exact_sd = float(np.sqrt((w * grid ** 2).sum() - exact_mean ** 2))
        values = chain[:, column]
        assert abs(values.mean() - exact_mean) < 4.5 * float(az.mcse(values[None, :])[0]), (values.mean(), exact_mean)
        squares = (values - values.mean()) ** 2  # the SD's SE through the variance's: se(v) / (2 sd)
        sd_se = float(az.mcse(squares[None, :])[0]) / (2.0 * values.std())
        assert abs(values.std() - exact_sd) < 4.5 * sd_se, (values.std(), exact_sd)


def test_gibbs_samples_centred_and_refuses_what_it_cannot_sample_in_one_line() -> None:
    """A non-centred model is sampled centred (the same posterior); independent subjects, one subject, or
    a model that is not the generic kernel model are refused in one line saying why."""
    from cogtestbed.inference.hierarchical_sampling import fit_hierarchical
    from cogtestbed.simulation import simulate

    exp = get_experiment("risky-choice")
    table = simulate("risky-choice", "prospect-theory", n_subjects=3, seed=0)
    plain = exp.model("prospect-theory")
    centred = gibbs.all_centred(plain, table, True)
    assert set(centred.centred_parameters) == set(plain.parameters.names)
    assert not getattr(exp.model("prospect-theory"), "centred_parameters", ())  # the registry's model unchanged
    for kwargs, words in [({"hierarchical": False}, "independent subjects"), ({}, "at least 2 subjects")]:
        data = table if kwargs else table[table["subject"] == table["subject"].iloc[0]]
        with pytest.raises(InputError, match=words) as err:
            fit_hierarchical(plain, data, draws=5, tune=5, chains=1, sampler="gibbs", **kwargs)
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="independent subjects"):
        gibbs.check_gibbs_model(centred_pt(), kernel_pymc_model(centred_pt(), table, hierarchical=False))
    with pytest.raises(InputError, match="centred"):
        gibbs.check_gibbs_model(plain, kernel_pymc_model(plain, table))
    import pymc as pm

    extra = kernel_pymc_model(centred, table)
    with extra:  # a term the Gibbs steps do not sample: their log density and the model's part
        pm.Potential("extra", 0.1 * extra["lambda_mu"] ** 2)
    with pytest.raises(InputError, match="log density is not the hierarchical model"):
        gibbs.gibbs_steps(centred, table, extra, seed=0)
    assert len(gibbs.gibbs_steps(centred, table, kernel_pymc_model(centred, table), seed=0)) == 3


def test_a_seeded_gibbs_fit_repeats_its_draws_and_reports_its_moves() -> None:
    """The same seed gives the same draws (chains in one process or two); the fit says which sampler ran,
    and its sample statistics hold the subject step's acceptance and mode jumps."""
    from cogtestbed.inference.hierarchical_sampling import fit_hierarchical
    from cogtestbed.simulation import simulate

    table = simulate("risky-choice", "prospect-theory", n_subjects=4, seed=2)
    model = centred_pt()
    runs = [fit_hierarchical(model, table, draws=60, tune=60, chains=2, seed=7, sampler="gibbs", cores=cores,
                             warn=False, log_likelihood=False) for cores in (1, 1, 2)]
    first = runs[0].idata.posterior["lambda"].values
    assert first.shape == (2, 60, 4) and np.unique(first).size > 100
    for other in runs[1:]:
        np.testing.assert_array_equal(other.idata.posterior["lambda"].values, first)
    assert runs[0].diagnostics.sampler == "gibbs"
    rejected = runs[0].diagnostics.divergent_rejections  # reported beside NUTS's divergences, not as them
    assert rejected == int(runs[0].idata.sample_stats["hmc_divergent"].sum()) and runs[0].diagnostics.divergences == 0
    assert "divergent HMC proposals rejected" in runs[0].diagnostics.report()
    stats = runs[0].idata.sample_stats
    assert 0.3 < float(stats["hmc_accept"].mean()) <= 1.0 and "jumps" in stats
    different = fit_hierarchical(model, table, draws=60, tune=60, chains=2, seed=8, sampler="gibbs", cores=1,
                                 warn=False, log_likelihood=False)
    assert not np.array_equal(different.idata.posterior["lambda"].values, first)


@pytest.mark.slow
def test_the_whole_gibbs_sampler_matches_exact_quadrature() -> None:
    """``fit_hierarchical(..., sampler="gibbs")`` end to end (its wiring, priors, tuning and the three steps)
    on the expected-value model (k = 1), 3 simulated deciders × 6 trials, against the exact posterior by
    quadrature: (μ, σ) on a 401 × 400 grid, each subject's u integrated out on a 1-D grid with the model's
    own ``nll_many`` (no code shared with the sampler).  The posterior means of μ, σ and each u agree
    within 4.5 batch-means Monte Carlo SEs."""
    from scipy import stats

    from cogtestbed.inference.hierarchical_sampling import fit_hierarchical
    from cogtestbed.simulation import simulate

    model = get_experiment("risky-choice").model("expected-value")
    table = simulate("risky-choice", "expected-value", n_subjects=3, seed=5)
    table = table.groupby("subject", sort=False).head(6).reset_index(drop=True)
    p = model.parameters["theta"]
    m0, s0, c = p.prior_mean, p.prior_sd, SD_SCALE * p.prior_sd
    ugrid = np.linspace(m0 - 10 * s0, m0 + 10 * s0, 1601)
    log_lik = np.array([-model.nll_many(p.to_constrained(ugrid)[:, None], d)
                        for d in model.subject_data(table).values()])
    mu, sig = np.linspace(m0 - 5 * s0, m0 + 5 * s0, 401), np.linspace(1e-3, 6 * c, 400)
    lik_int, u_num = np.zeros((3, mu.size, sig.size)), np.zeros((3, mu.size, sig.size))
    for a, m in enumerate(mu):
        prior_u = stats.norm.pdf(ugrid[None, :], m, sig[:, None])
        mass = prior_u.sum(1)  # the discrete normal's own mass: exact however narrow σ is against the grid
        for i in range(3):
            f = prior_u * np.exp(log_lik[i] - log_lik[i].max())[None, :]
            lik_int[i, a], u_num[i, a] = f.sum(1) / mass, (f * ugrid).sum(1) / mass
    log_post = (stats.norm.logpdf(mu, m0, s0)[:, None] + stats.halfnorm.logpdf(sig, scale=c)[None, :]
                + np.log(lik_int).sum(0))
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    exact = {"theta_mu": float((w.sum(1) * mu).sum()), "theta_sigma": float((w.sum(0) * sig).sum()),
             **{f"theta_u[{i}]": float((w * u_num[i] / lik_int[i]).sum()) for i in range(3)}}
    fit = fit_hierarchical(model, table, draws=3000, tune=500, chains=4, seed=3, sampler="gibbs", cores=2,
                           warn=False, log_likelihood=False)
    post = fit.idata.posterior
    for name, truth in exact.items():
        x = (fit.idata.unconstrained_posterior["theta_u"].values[:, :, int(name[-2])]  # issue 75: an internal
             if name.startswith("theta_u") else post[name].values)
        batches = x.reshape(x.shape[0] * 25, -1).mean(axis=1)
        se = float(batches.std(ddof=1) / np.sqrt(batches.size))
        assert abs(x.mean() - truth) < 4.5 * se, (name, x.mean(), truth, se)


def test_the_mixture_draws_what_its_density_says() -> None:
    """:func:`mixture_draw` draws each component in proportion to the weights :func:`mixture_logpdf`
    uses, padded slots (weight 0) never: the independence proposal's Hastings ratio rests on it."""
    k, n = 2, 3
    loc = np.array([[[0.0, 0.0], [50.0, 50.0], [-20.0, 10.0]],  # one mode, a padded slot, a tuned slot
                    [[5.0, 5.0], [-5.0, -5.0], [0.0, 0.0]],  # two modes, the tuned slot unused
                    [[1.0, 2.0], [99.0, 99.0], [99.0, 99.0]]])  # one mode only
    with np.errstate(divide="ignore"):
        log_weight = np.log(np.array([[0.5, 0.0, 0.5], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]))
    chol = np.tile(0.1 * np.eye(k), (n, 3, 1, 1))
    chol[2, 0] = [[0.1, 0.0], [0.08, 0.05]]  # a factor that is not symmetric: a transposed draw shows
    prop = gibbs.Proposals(loc, chol, log_weight, np.tile(np.eye(k), (n, 1, 1)))
    rng = np.random.default_rng(0)
    draws = np.array([gibbs.mixture_draw(prop, rng) for _ in range(4000)])  # (4000, n, k)
    assert np.all(np.abs(draws[:, 0] - [50.0, 50.0]).max(axis=1) > 10)  # never the padded slot
    assert np.mean(draws[:, 0, 0] < -10) == pytest.approx(0.5, abs=0.04)
    assert np.mean(draws[:, 1, 0] > 0) == pytest.approx(0.5, abs=0.04)
    assert np.all(np.abs(draws[:, 2] - [1.0, 2.0]).max(axis=1) < 5)
    # the t draw's covariance is L Lᵀ · df / (df − 2) (a normal draw, or Lᵀ, would differ by 40 % or more)
    expected = chol[2, 0] @ chol[2, 0].T * gibbs.JUMP_DF / (gibbs.JUMP_DF - 2)
    np.testing.assert_allclose(np.cov(draws[:, 2].T), expected, rtol=0.2, atol=1e-4)
    log_q = gibbs.mixture_logpdf(draws[:, 0], gibbs.Proposals(*(np.repeat(a[:1], 4000, axis=0) for a in
                                                                 (loc, chol, log_weight, prop.walk_chol))))
    assert np.all(np.isfinite(log_q))
