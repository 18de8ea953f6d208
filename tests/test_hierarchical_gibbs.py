"""The Metropolis-within-Gibbs sampler of centred hierarchical fits (``sampler="gibbs"``,
:mod:`cogtestbed.inference.hierarchical_gibbs`): each step leaves its exact conditional invariant, checked
against oracles that share nothing with the step (importance sampling, quadrature), and the whole sampler
agrees with nutpie where both mix (slow)."""

from __future__ import annotations

import copy
import dataclasses
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


def importance_estimate(model: object, data: gibbs.SubjectData, prop: gibbs.Proposals, n: int = 16_000
                        ) -> tuple[np.ndarray, float, float]:
    """E[u] and P(λ > 4) of the subject's conditional at the fixed population, by importance sampling
    from the mode mixture widened twice (heavier than the posterior everywhere), and the draws' ESS."""
    rng = np.random.default_rng(11)
    wide = dataclasses.replace(prop, chol=2.0 * prop.chol)
    rep = gibbs.Proposals(*(np.repeat(a, n, axis=0) for a in (wide.loc, wide.chol, wide.log_weight, wide.walk_chol)))
    X = gibbs.mixture_draw(rep, rng)
    log_q = gibbs.mixture_logpdf(X, rep)
    log_p = gibbs.lik_rows(model, data, 0, X)
    log_w = log_p + gibbs.normal_logpdf(X, POP_MU, POP_SD) - log_q
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return w @ X, float(w @ (np.exp(X[:, 0]) > 4.0)), float(1.0 / np.sum(w ** 2))


@NEEDS_SPEKTOR
def test_the_subject_step_samples_a_bimodal_conditional(participant_273: pd.DataFrame) -> None:
    """At a fixed population, participant 273's conditional has ~20 % of its mass at λ > 4, the rest near
    λ ≈ 1.5 (4.4 nats between).  The subject step's chain (HMC + mode jumps) matches importance sampling on
    E[u] and P(λ > 4) within 4.5 Monte Carlo SEs; a jump step without its Hastings correction fails it
    (checked by hand)."""
    import arviz as az

    model = centred_pt()
    data = gibbs.subject_data(model, participant_273)
    prop = gibbs.build_proposals(model, data, seed=0)
    assert int(prop.n_modes[0]) == 2, "the mode search finds both low regions"
    lam_modes = np.sort(np.exp(prop.loc[0, :2, 0]))
    assert 1.2 < lam_modes[0] < 2.0 and 5.0 < lam_modes[1] < 12.0
    mean_is, share_is, ess = importance_estimate(model, data, prop)
    assert ess > 0.08 * 16_000
    step_class = gibbs._block_step_class()
    step = object.__new__(step_class)
    step_class.__init__(step, vars=[], names=list(model.parameters.names),
                        likelihood=gibbs.SubjectLikelihood(model, data), proposals=prop, rng=1)
    point = {"lambda_u": np.array([0.0]), "alpha_u": np.array([-0.4]), "theta_u": np.array([-0.3]),
             **{f"{n}_mu": POP_MU[j] for j, n in enumerate(model.parameters.names)},
             **{f"{n}_sigma_log__": np.log(POP_SD[j]) for j, n in enumerate(model.parameters.names)}}
    for _ in range(400):
        point, _ = step.step(point)
    step.tune = False
    draws = []
    for _ in range(2_000):
        point, _ = step.step(point)
        draws.append([point[f"{n}_u"][0] for n in model.parameters.names])
    chain = np.array(draws)
    high = (np.exp(chain[:, 0]) > 4.0).astype(float)
    assert 0.1 < share_is < 0.35
    for values, truth in [*zip(chain.T, mean_is, strict=True), (high, share_is)]:
        se = np.hypot(float(az.mcse(values[None, :])[0]), float(np.std(values)) / np.sqrt(ess))  # chain and IS
        assert abs(values.mean() - truth) < 4.5 * se, (values.mean(), truth, se)


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
    stats = runs[0].idata.sample_stats
    assert 0.3 < float(stats["hmc_accept"].mean()) <= 1.0 and "jumps" in stats
    different = fit_hierarchical(model, table, draws=60, tune=60, chains=2, seed=8, sampler="gibbs", cores=1,
                                 warn=False, log_likelihood=False)
    assert not np.array_equal(different.idata.posterior["lambda"].values, first)


@pytest.mark.slow
def test_gibbs_and_nutpie_agree_on_a_population_both_sample() -> None:
    """On 12 deciders drawn from the prior at Spektor et al.'s design, the population medians and SDs of
    the Gibbs sampler and nutpie (both centred, 4 chains × 1,000 draws) agree within 4.5 combined Monte
    Carlo SEs, and both pass R-hat ≤ 1.01."""
    import arviz as az

    from cogtestbed.inference.hierarchical_sampling import fit_hierarchical
    from cogtestbed.simulation import simulate

    table = simulate("risky-choice", "prospect-theory", n_subjects=12, seed=4)
    model = centred_pt()
    fits = {s: fit_hierarchical(model, table, draws=1000, tune=1000, chains=4, seed=1, sampler=s, warn=False,
                                log_likelihood=False) for s in ("gibbs", "nutpie")}
    for fit in fits.values():
        assert fit.diagnostics.max_rhat <= 1.01 and fit.diagnostics.divergences == 0
    names = [f"{n}_{part}" for n in model.parameters.names for part in ("mu", "sigma")]
    summaries = {s: az.summary(f.idata, var_names=names, round_to="none") for s, f in fits.items()}
    a, b = summaries["gibbs"], summaries["nutpie"]
    z = (a["mean"] - b["mean"]) / np.hypot(a["mcse_mean"], b["mcse_mean"])
    assert np.all(np.abs(z) < 4.5), z


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
    prop = gibbs.Proposals(loc, chol, log_weight, np.tile(np.eye(k), (n, 1, 1)))
    rng = np.random.default_rng(0)
    draws = np.array([gibbs.mixture_draw(prop, rng) for _ in range(4000)])  # (4000, n, k)
    assert np.all(np.abs(draws[:, 0] - [50.0, 50.0]).max(axis=1) > 10)  # never the padded slot
    assert np.mean(draws[:, 0, 0] < -10) == pytest.approx(0.5, abs=0.04)
    assert np.mean(draws[:, 1, 0] > 0) == pytest.approx(0.5, abs=0.04)
    assert np.all(np.abs(draws[:, 2] - [1.0, 2.0]).max(axis=1) < 5)
    log_q = gibbs.mixture_logpdf(draws[:, 0], gibbs.Proposals(*(np.repeat(a[:1], 4000, axis=0) for a in
                                                                 (loc, chol, log_weight, prop.walk_chol))))
    assert np.all(np.isfinite(log_q))
