"""The random-effects analysis across prompt forms (issue 42): values, not just shapes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cogtestbed.inference.form_effects import (
    FORM_SD_ESTIMATOR,
    anova_interval,
    anova_tau2,
    bias_corrected_test,
    dl_tau2,
    form_random_effects,
    form_summaries,
    generalisability,
    median_tau2,
    naive_test,
    q_profile_interval,
    reml_tau2,
)


def _data(seed: int, k: int = 8, n: int = 12, tau: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = np.repeat(np.arange(k), n)
    return rng.normal(0, tau, k)[f] + rng.normal(0, 1, k * n), f


def test_effect_test_is_the_t_test_on_form_means() -> None:
    y, f = _data(1)
    r = form_random_effects(y, f, null=0.1)
    means = np.array([y[f == k].mean() for k in range(8)])
    ref = stats.ttest_1samp(means, 0.1)
    assert abs(r.p_value - ref.pvalue) < 1e-12 and abs(r.t - ref.statistic) < 1e-12 and r.df == 7


def test_bias_corrected_test_by_hand() -> None:
    """The bias comes off the mean of the form means, its variance onto the SE, and the df are
    Welch–Satterthwaite's; with no bias and no bias SE it is the plain test on form means."""
    y, f = _data(2)
    means = np.array([y[f == k].mean() for k in range(8)])
    a = means.var(ddof=1) / 8
    r = bias_corrected_test(y, f, bias=0.2, bias_se=0.05, bias_n=200, null=0.1, df_method="satterthwaite")
    se = np.sqrt(a + 0.05**2)
    df = (a + 0.05**2) ** 2 / (a**2 / 7 + 0.05**4 / 199)
    assert r.se == pytest.approx(se, rel=1e-12) and r.df == pytest.approx(df, rel=1e-12)
    assert r.t == pytest.approx((means.mean() - 0.2 - 0.1) / se, rel=1e-12)
    assert r.p_value == pytest.approx(2 * stats.t.sf(abs(r.t), df), rel=1e-10)
    assert 7 < r.df < 207
    hsu = bias_corrected_test(y, f, bias=0.2, bias_se=0.05, bias_n=200, null=0.1)
    assert hsu.df == 7 and hsu.t == pytest.approx(r.t) and hsu.p_value > r.p_value
    with pytest.raises(ValueError, match="df_method"):
        bias_corrected_test(y, f, 0.2, 0.05, 200, df_method="z")
    plain = bias_corrected_test(y, f, 0.0, 0.0, 200, 0.1)
    assert plain.df == pytest.approx(7) and plain.p_value == pytest.approx(form_random_effects(y, f, 0.1).p_value)
    assert bias_corrected_test(y[f == 0], f[f == 0], 0.1, 0.01, 200).p_value is None  # one form
    assert bias_corrected_test(y, f, float("nan"), 0.01, 200).p_value is None


def test_dersimonian_laird_by_hand() -> None:
    m, v = np.array([0.1, 0.5, -0.2, 0.3]), np.array([0.01, 0.02, 0.015, 0.01])
    w = 1 / v
    q = np.sum(w * (m - np.sum(w * m) / w.sum()) ** 2)
    tau2 = (q - 3) / (w.sum() - np.sum(w**2) / w.sum())
    got, got_q = dl_tau2(m, v)
    assert abs(got - tau2) < 1e-12 and abs(got_q - q) < 1e-12


def test_reml_and_median_estimates_by_hand() -> None:
    """Equal variances v: REML τ² is the ANOVA estimate max(0, s_m² − v) (Viechtbauer 2005); the
    median-unbiased τ² solves Q(τ²) = the median of χ²_{K−1}; both 0 when the means agree too well."""
    m, v = np.array([0.1, 0.5, -0.2, 0.3, 0.9]), np.full(5, 0.02)
    assert reml_tau2(m, v) == pytest.approx(np.var(m, ddof=1) - 0.02, abs=1e-7)
    t2 = median_tau2(m, v)
    assert np.sum((m - m.mean()) ** 2) / (0.02 + t2) == pytest.approx(stats.chi2.ppf(0.5, 4), abs=1e-6)
    flat = np.array([0.0, 0.01, -0.01, 0.005, 0.0])
    assert reml_tau2(flat, v) == 0.0 and median_tau2(flat, v) == 0.0
    assert form_random_effects(*_data(1)).tau_dl is not None


def test_default_form_sd_is_the_one_way_anova_by_hand() -> None:
    """Issue 47 item 5: the default τ̂² is (MSB − MSW)/n₀ (= REML for balanced forms, = G-theory's
    σ²_f), its interval the F pivot's; the interval excludes 0 exactly when the ANOVA F test rejects."""
    y, f = _data(4, k=6, n=9, tau=0.6)
    groups = [y[f == k] for k in range(6)]
    msw = np.mean([g.var(ddof=1) for g in groups])
    msb = 9 * np.var([g.mean() for g in groups], ddof=1)
    r = form_random_effects(y, f)
    assert r.tau == pytest.approx(np.sqrt((msb - msw) / 9), rel=1e-10)
    assert r.tau**2 == pytest.approx(generalisability(y, f)["var_form"], rel=1e-10)
    # balanced: REML with a common within-form variance; the REML on per-form v_k differs
    assert r.tau**2 == pytest.approx(reml_tau2(np.array([g.mean() for g in groups]), np.full(6, msw / 9)), rel=1e-5)
    fstat, lo_q, hi_q = msb / msw, stats.f.ppf(0.975, 5, 48), stats.f.ppf(0.025, 5, 48)
    assert r.tau_low == pytest.approx(np.sqrt(max(0, (fstat / lo_q - 1) / 9) * msw), rel=1e-10)
    assert r.tau_high == pytest.approx(np.sqrt((fstat / hi_q - 1) / 9 * msw), rel=1e-10)
    assert r.as_json()["between_form_sd_estimator"] == FORM_SD_ESTIMATOR
    _, n, m, v = form_summaries(y, f)
    assert anova_tau2(n, m, v) == pytest.approx(r.tau**2) and anova_interval(n, m, v) == (r.tau_low, r.tau_high)
    # at τ = 0 with normal values the interval excludes 0 at its nominal 2.5 % (the F test's size)
    excl = sum(form_random_effects(*_data(s, k=8, n=10, tau=0.0)).tau_low > 0 for s in range(400))
    assert 1 <= excl <= 22  # Binomial(400, .025): mean 10
    p_f = stats.f_oneway(*groups).pvalue
    assert (r.tau_low > 0) == (p_f < 0.025)


def test_q_profile_bounds_solve_the_generalised_q() -> None:
    m, v = np.array([0.1, 0.5, -0.2, 0.3, 0.9]), np.full(5, 0.02)
    lo, hi = q_profile_interval(m, v, 0.95)
    for tau, quantile in ((lo, 0.975), (hi, 0.025)):
        w = 1 / (v + tau**2)
        mu = np.sum(w * m) / w.sum()
        assert abs(np.sum(w * (m - mu) ** 2) - stats.chi2.ppf(quantile, 4)) < 1e-6
    assert 0 < lo < hi
    # identical form means: the interval starts at 0
    assert q_profile_interval(np.zeros(5), v)[0] == 0.0


def test_interval_covers_the_truth_about_as_often_as_it_says() -> None:
    hits = 0
    for seed in range(200):
        y, f = _data(seed, k=8, n=20, tau=0.4)
        r = form_random_effects(y, f)
        hits += r.tau_low <= 0.4 <= r.tau_high
    assert 0.85 <= hits / 200 <= 0.99


def test_naive_and_singletons_and_too_few_forms() -> None:
    y, f = _data(3)
    assert abs(naive_test(y).p_value - stats.ttest_1samp(y, 0).pvalue) < 1e-12
    one = form_random_effects(y[:5], np.zeros(5, dtype=np.int64))
    assert one.p_value is None and one.notes
    _, n, _, v = form_summaries([1.0, 2.0, 3.0, 5.0], [0, 0, 0, 1])
    assert list(n) == [3, 1] and np.isfinite(v).all()  # the singleton takes the pooled variance


def test_generalisability_components() -> None:
    y = np.array([1.0, 2.0, 3.0, 11.0, 12.0, 13.0])
    f = np.array([0, 0, 0, 1, 1, 1])
    g = generalisability(y, f)
    # MS_within = 1, MS_between = 3 * 50 = 150, n0 = 3: var_form = (150 - 1) / 3
    assert abs(g["var_subject"] - 1.0) < 1e-12 and abs(g["var_form"] - 149 / 3) < 1e-12
    assert abs(g["g"] - 1 / (1 + 149 / 3)) < 1e-12
    assert generalisability([1.0, 2.0], [0, 0])["g"] is None


def test_form_metrics_on_a_simulated_table() -> None:
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.inference.form_effects import form_metrics
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    exp = get_experiment("instrumental-learning")
    table = simulate(exp, "rw-pm", 12, 4, forms=FormDesign((0, 1, 2), {"alpha_pos": 1.0}))
    result = exp.metrics(table)
    out = form_metrics(table, exp.metrics, result)
    assert out["forms"] == [0, 1, 2] and set(out["per_form"]) == {"0", "1", "2"}
    b = out["between_forms"]["alpha_pos"]
    assert b["interval"][0] <= b["between_form_sd"] <= b["interval"][1]
    assert out["per_form"]["0"]["n_runs"] == 4


def _forms_table(n: int = 12, sd: float = 1.0):  # type: ignore[no-untyped-def]
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.simulation import simulate

    return simulate("instrumental-learning", "rw-pm", n, 1, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                    forms=FormDesign((0, 1, 2, 3), {"alpha_pos": sd}))


def test_forms_pymc_model_builds_with_crossed_effects() -> None:
    import pytest

    from cogtestbed.inference.hierarchical import forms_pymc_model
    from cogtestbed.registry import get_experiment

    model = get_experiment("instrumental-learning").model("rw-pm")
    table = _forms_table()
    m = forms_pymc_model(model, table, ["alpha_pos"])
    names = {v.name for v in m.free_RVs}
    assert {"alpha_pos_form_sigma", "alpha_pos_form_z", "alpha_pos_z", "beta_z"} <= names
    assert list(m.coords["form"]) == [0, 1, 2, 3]
    assert np.isfinite(m.compile_logp()(m.initial_point()))
    with pytest.raises(ValueError, match="form effects on"):
        forms_pymc_model(model, table, ["zeta"])
    with pytest.raises(ValueError, match="'form' column"):
        forms_pymc_model(model, table.drop(columns="form"), ["alpha_pos"])


@pytest.mark.slow
def test_forms_pymc_model_recovers_the_form_effects() -> None:
    """24 subjects in 4 forms, a strong wording effect on α⁺: the posterior of the form SD is away
    from 0 and the form effects order the forms as their true offsets do (measured: 400 s)."""
    from cogtestbed.inference.hierarchical import fit_hierarchical, forms_pymc_model
    from cogtestbed.registry import get_experiment

    model = get_experiment("instrumental-learning").model("rw-pm")
    table = _forms_table(24, 1.0)
    fit = fit_hierarchical(forms_pymc_model(model, table, ["alpha_pos"]), table, draws=300, tune=300, chains=2,
                           seed=1, warn=False, log_likelihood=False)
    post = fit.idata.posterior
    sigma = post["alpha_pos_form_sigma"].values.ravel()
    assert np.quantile(sigma, 0.05) > 0.05 and fit.diagnostics.divergences == 0
    offsets = fit.idata.unconstrained_posterior["alpha_pos_form_z"]  # the sampler's offsets (issue 75)
    effect = (post["alpha_pos_form_sigma"] * offsets).mean(("chain", "draw")).values
    truth = table.groupby("form")["form_offset_alpha_pos"].first().to_numpy()
    assert stats.spearmanr(effect, truth).statistic > 0.7
