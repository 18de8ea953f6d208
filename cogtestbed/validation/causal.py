"""Validation studies of the collider suite (the models of Dettki 2025).

* :func:`recovery_study` — point-estimate recovery of (b, m, pC) and LAD at the thesis's design
  (240 judgments per agent, Gaussian judgment noise SD .05 and .2), true values uniform on
  b ∈ [0, .5], m ∈ [.3, 1], pC ∈ [.2, .8]; Pearson r, bias and RMSE per parameter.
* :func:`model_recovery_study` — 3p vs 4p confusion matrix, selecting by LOOCV R² (the thesis)
  and by BIC.
* :func:`misspecification_study` — which metrics flag each biased agent (weak EA, associative,
  conservative, logistic link, distraction) relative to the normative CBN.
* :func:`power_study` — subjects needed to detect human-sized EA and MV with a one-sample t-test
  (α = .05): by resampling the 48 RW17 subjects, and analytically (noncentral t) from the
  per-subject effect size.  Digest: ≈ 62 (EA) and ≈ 45 (MV) at 80 %.
* :func:`sbc_study` — simulation-based calibration of the hierarchical model
  (:mod:`cogtestbed.inference.causal_hierarchical`) on synthetic humans (48 × 20, human design):
  rank of each true population parameter among posterior draws, χ² uniformity test.

Run ``python -m cogtestbed.validation.causal [recovery|model|misspec|power|sbc] [--reps N]
[-o DIR]``; each writes a Parquet/CSV table and prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.causal import CausalDesign
from cogtestbed.inference.causal import fit_best, fit_cbn, signature_metrics, valid_judgments
from cogtestbed.simulation import simulate

HUMAN_FIT = {"b": 0.239, "m1": 0.630, "m2": 0.630, "pc1": 0.529, "pc2": 0.529}


def _fit_rows(trials: pd.DataFrame) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    v = valid_judgments(trials)
    return [(s, g["task_index"].to_numpy(), g["y"].to_numpy()) for s, g in v.groupby("subject", sort=True)]


def _summary(true: np.ndarray, est: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(true) & np.isfinite(est)
    t, e = true[ok], est[ok]
    return {"r": float(np.corrcoef(t, e)[0, 1]), "bias": float(np.mean(e - t)),
            "rmse": float(np.sqrt(np.mean((e - t) ** 2)))}


# ----------------------------------------------------------------------------- recovery
def recovery_study(reps: int = 200, noise_sds: tuple[float, ...] = (0.05, 0.2), seed: int = 0
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """3p recovery over the digest's grid (module docstring); one 240-row agent per rep."""
    rng = np.random.default_rng(seed)
    rows = []
    for sd in noise_sds:
        b = rng.uniform(0.0, 0.5, reps)
        m = rng.uniform(0.3, 1.0, reps)
        pc = rng.uniform(0.2, 0.8, reps)
        params = {"b": b, "m1": m, "m2": m, "pc1": pc, "pc2": pc, "noise_sd": sd}
        trials = simulate("collider", "cbn", reps, seed=int(rng.integers(2**31)), params=params)
        for s, task, y in _fit_rows(trials):
            f = fit_cbn(task, y, "3p")
            rows.append({"noise_sd": sd, "b": b[s], "m": m[s], "p_c": pc[s], "lad": m[s] - b[s],
                         "b_hat": f.b, "m_hat": f.m1, "p_c_hat": f.p_c, "lad_hat": f.lad,
                         "loocv_r2": f.loocv_r2})
    table = pd.DataFrame(rows)
    summary = {f"sd={sd}": {p: _summary(g[p].to_numpy(), g[f"{p}_hat"].to_numpy())
                            for p in ("b", "m", "p_c", "lad")}
               for sd, g in table.groupby("noise_sd")}
    return table, summary


# ----------------------------------------------------------------------------- model recovery
def model_recovery_study(reps: int = 200, noise_sd: float = 0.1, seed: int = 0
                         ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Simulate 3p (m1 = m2) and 4p (m1, m2 independent) agents; select by LOOCV R² and BIC."""
    rng = np.random.default_rng(seed)
    rows = []
    for truth in ("3p", "4p"):
        b = rng.uniform(0.0, 0.5, reps)
        m1 = rng.uniform(0.3, 1.0, reps)
        m2 = m1 if truth == "3p" else rng.uniform(0.3, 1.0, reps)
        pc = rng.uniform(0.2, 0.8, reps)
        trials = simulate("collider", "cbn", reps, seed=int(rng.integers(2**31)),
                          params={"b": b, "m1": m1, "m2": m2, "pc1": pc, "pc2": pc, "noise_sd": noise_sd})
        for s, task, y in _fit_rows(trials):
            best, fits = fit_best(task, y, "auto")
            rows.append({"truth": truth, "by_loocv": best.scheme,
                         "by_bic": min(fits, key=lambda k: fits[k].bic), "m_gap": abs(m1[s] - m2[s])})
    table = pd.DataFrame(rows)
    summary = {crit: pd.crosstab(table["truth"], table[crit], normalize="index").round(3).to_dict("index")
               for crit in ("by_loocv", "by_bic")}
    return table, summary


# ----------------------------------------------------------------------------- misspecification
MISSPEC_AGENTS: dict[str, tuple[str, dict[str, float], CausalDesign]] = {
    "cbn": ("cbn", {}, CausalDesign()),
    "weak-ea w=.5": ("weak-ea", {"w": 0.5}, CausalDesign()),
    "associative delta=.1": ("associative", {"delta": 0.1}, CausalDesign()),
    "associative rho=.4": ("associative", {"delta": 0.0, "rho": 0.4}, CausalDesign()),
    "conservative lam=.5": ("conservative", {"lam": 0.5}, CausalDesign()),
    "logistic": ("logistic", {"w0": -1.2, "w1": 1.8, "w2": 1.8, "pc1": 0.53, "pc2": 0.53}, CausalDesign()),
    "distraction gamma=1 (overloaded)": ("distraction", {"gamma": 1.0}, CausalDesign.rw17_overloaded()),
}


def misspecification_study(reps: int = 100, noise_sd: float = 0.1, seed: int = 0
                           ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fit the CBN (auto scheme) to each agent; report metric distributions and flag rates.

    Flags: |MV| > .05 (Markov violation), EA − EA implied by the fitted CBN < −.05 (weak
    explaining away), LOOCV R² < .89 (inconsistent), normative-reasoner classification, and
    residual RMSE on the tasks a CBN cannot express differently (IV vs V, IX/X/XI).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for label, (agent, params, design) in MISSPEC_AGENTS.items():
        base = {} if agent == "logistic" else dict(HUMAN_FIT)
        trials = simulate("collider", agent, reps, seed=int(rng.integers(2**31)), design=design,
                          params={**base, **params, "noise_sd": noise_sd})
        for _, task, y in _fit_rows(trials):
            best, _ = fit_best(task, y, "auto")
            sig = signature_metrics(task, y)
            p = np.array(best.predictions)
            rows.append({"agent": label, **sig, "ea_implied": p[7] - p[5], "loocv_r2": best.loocv_r2,
                         "r2": best.r2, "rmse": best.rmse, "lad": best.lad, "b": best.b, "m": best.m1,
                         "scheme": best.scheme})
    t = pd.DataFrame(rows)
    t["flag_mv"] = t["mv"].abs() > 0.05
    t["flag_weak_ea"] = (t["ea"] - t["ea_implied"]) < -0.05
    t["flag_loocv"] = t["loocv_r2"] < 0.89
    t["normative"] = (t["ea"] > 0.3) & (t["mv"].abs() <= 0.05) & (t["loocv_r2"] >= 0.89)
    summary = t.groupby("agent", sort=False)[
        ["ea", "mv", "loocv_r2", "rmse", "lad", "flag_mv", "flag_weak_ea", "flag_loocv", "normative"]
    ].mean().round(3).to_dict("index")
    return t, summary


# ----------------------------------------------------------------------------- power
def _t_power(d: float, n: int, alpha: float = 0.05) -> float:
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = d * np.sqrt(n)
    return float(1 - stats.nct.cdf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def power_study(human: pd.DataFrame, ns: tuple[int, ...] = (10, 20, 30, 40, 45, 50, 62, 70, 80, 100, 120),
                sims: int = 2000, alpha: float = 0.05, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Power of a two-sided one-sample t-test of per-subject EA and MV against 0.

    Resampling: draw n subjects with replacement from the 48 RW17 subjects (their own EA / MV).
    Analytic: noncentral t with d = mean / SD of the 48 per-subject values.  Reports the
    smallest n with ≥ 80 % power under each.
    """
    v = valid_judgments(human)
    per = pd.DataFrame([signature_metrics(g["task_index"].to_numpy(), g["y"].to_numpy())
                        for _, g in v.groupby("subject")])
    rng = np.random.default_rng(seed)
    rows = []
    for effect in ("ea", "mv"):
        x = per[effect].to_numpy()
        d = float(x.mean() / x.std(ddof=1))
        for n in ns:
            draws = x[rng.integers(0, len(x), (sims, n))]
            t = draws.mean(1) / (draws.std(1, ddof=1) / np.sqrt(n))
            p = 2 * stats.t.sf(np.abs(t), n - 1)
            pw = float(np.mean(p < alpha))
            rows.append({"effect": effect, "n": n, "power_resampled": pw,
                         "mc_se": float(np.sqrt(pw * (1 - pw) / sims)), "power_analytic": _t_power(d, n, alpha),
                         "mean": float(x.mean()), "sd": float(x.std(ddof=1)), "d": d})
    table = pd.DataFrame(rows)
    summary: dict[str, Any] = {}
    for effect, g in table.groupby("effect"):
        d = float(g["d"].iloc[0])
        n_analytic = next(n for n in range(3, 2000) if _t_power(d, n, alpha) >= 0.8)
        hit = g[g["power_resampled"] >= 0.8]
        summary[str(effect)] = {"mean": float(g["mean"].iloc[0]), "sd": float(g["sd"].iloc[0]), "d": d,
                                "n80_analytic": n_analytic,
                                "n80_resampled_grid": int(hit["n"].min()) if len(hit) else None}
    return table, summary


# ----------------------------------------------------------------------------- human hierarchical fit
def _pareto_k(loo_result: Any) -> dict[str, Any]:
    k = np.asarray(loo_result.pareto_k)
    return {"k_max": float(k.max()), "n_k_gt_0.7": int((k > 0.7).sum()), "n_k_gt_0.5": int((k > 0.5).sum()),
            "n": int(k.size), "good_k": float(getattr(loo_result, "good_k", 0.7))}


def exact_loo_refits(trials: pd.DataFrame, pooling: str, obs: list[int], draws: int = 1000, tune: int = 1000,
                     chains: int = 4, seed: int = 0, scheme: str = "3p") -> list[float]:
    """Exact leave-one-judgment-out elpd of the judgments ``obs`` (positions in
    :func:`~cogtestbed.inference.causal_hierarchical.model_data` order) by refitting without each
    one (the "reloo" remedy for PSIS's Pareto k > 0.7, Vehtari, Gelman & Gabry 2017 §2.1):
    elpd_i = log mean_s p(y_i | θ^(s)), θ^(s) drawn from the posterior without y_i."""
    from scipy.special import logsumexp

    from cogtestbed.inference.causal_hierarchical import build_model, model_data, zoib_pointwise_kernel
    from cogtestbed.inference.hierarchical import fit_hierarchical

    v = valid_judgments(trials)
    d = model_data(trials)
    out = []
    for i in obs:
        rest = v.drop(index=v.index[i])
        fit = fit_hierarchical(build_model(rest, scheme, pooling), rest, draws=draws, tune=tune, chains=chains,
                               seed=seed, warn=True, log_likelihood=False)
        post = fit.idata.posterior
        s = list(post.coords["subject"].values).index(d["subjects"][d["obs_subject"][i]])

        cols = ["b", "m", "m", "p_c"] if scheme == "3p" else ["b", "m1", "m2", "p_c"]
        subj = [(post[c].values[..., s] if post[c].ndim == 3 else post[c].values).reshape(-1) for c in cols]
        pi = post["pi"].values.reshape(-1, 3)
        theta = np.column_stack([*subj, post["kappa"].values.reshape(-1), pi[:, 0], pi[:, 1]])
        ll = zoib_pointwise_kernel(theta, np.arange(len(theta)), np.full(len(theta), d["y"][i]),
                                   np.full(len(theta), d["task"][i]))[0]
        out.append(float(logsumexp(ll) - np.log(len(ll))))
    return out


def hierarchical_human_study(human: pd.DataFrame, draws: int = 1000, tune: int = 1000, chains: int = 4,
                             seed: int = 0, reloo: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Partial, no and complete pooling fits of the 48 RW17 subjects (3p, zero-one-inflated Beta;
    :mod:`cogtestbed.inference.causal_hierarchical`), their diagnostics, population summaries and
    PSIS-LOO comparisons per judgment and per subject, with Pareto-k diagnostics.

    Returns (per-judgment table: subject, task, y and the pointwise elpd and Pareto k of each
    model, summary).  LOO per judgment is the primary comparison (the 20 judgments of a subject
    are exchangeable, no sequence); leave-one-subject-out is reported too, but for no pooling it
    asks the prior to predict a new subject and its Pareto k is high by construction.  With
    ``reloo`` every judgment with Pareto k > 0.7 is refitted exactly (:func:`exact_loo_refits`)
    and ``loo_per_judgment_reloo`` gives the corrected elpd (PSIS for the rest).
    """
    from cogtestbed.inference.causal_hierarchical import build_model, model_data
    from cogtestbed.inference.hierarchical import compare_loo, fit_hierarchical, loo

    fits = {pool: fit_hierarchical(build_model(human, "3p", pool), human, draws=draws, tune=tune, chains=chains,
                                   seed=seed, warn=True) for pool in ("partial", "none", "complete")}
    d = model_data(human)
    table = pd.DataFrame({"subject": np.asarray(d["subjects"])[d["obs_subject"]], "task": d["task"], "y": d["y"]})
    summary: dict[str, Any] = {"diagnostics": {k: {kk: v for kk, v in f.diagnostics.as_dict().items()}
                                               for k, f in fits.items()}}
    post = fits["partial"].idata.posterior
    pop: dict[str, Any] = {}
    for name in ("b_pop", "m_pop", "p_c_pop", "b_sigma", "m_sigma", "p_c_sigma", "kappa"):
        x = post[name].values.reshape(-1)
        pop[name] = {"mean": float(x.mean()), "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}
    pis = post["pi"].values.reshape(-1, 3)
    for j, name in enumerate(("pi0", "pi1")):
        pop[name] = {"mean": float(pis[:, j].mean()), "q05": float(np.quantile(pis[:, j], 0.05)),
                     "q95": float(np.quantile(pis[:, j], 0.95))}
    lad = (post["m"] - post["b"]).values.reshape(-1, post.sizes["subject"])
    pop["lad_subject_mean"] = {"mean": float(lad.mean(1).mean()), "q05": float(np.quantile(lad.mean(1), 0.05)),
                               "q95": float(np.quantile(lad.mean(1), 0.95))}
    summary["partial_population"] = pop
    cpost = fits["complete"].idata.posterior
    summary["complete_pooling"] = {n: float(cpost[n].values.mean()) for n in ("b", "m", "p_c", "kappa")}
    for by_subject, label in ((False, "loo_per_judgment"), (True, "loo_per_subject")):
        cmp = compare_loo(fits, by_subject=by_subject)
        summary[label] = {str(k): {"rank": int(r["rank"]), "elpd": float(r["elpd_loo"]), "se": float(r["se"]),
                                   "d_elpd": float(r["elpd_diff"]), "dse": float(r["dse"]), "p_loo": float(r["p_loo"]),
                                   "warning": bool(r["warning"])} for k, r in cmp.iterrows()}
        for pool, f in fits.items():
            res = loo(f, by_subject=by_subject)
            summary[label][pool].update(_pareto_k(res))
            if not by_subject:
                table[f"elpd_{pool}"] = np.asarray(res.loo_i)
                table[f"k_{pool}"] = np.asarray(res.pareto_k)
    if reloo:
        fixed: dict[str, Any] = {}
        for pool in fits:
            bad = [int(i) for i in np.flatnonzero(table[f"k_{pool}"].to_numpy() > 0.7)]
            exact = exact_loo_refits(human, pool, bad, draws=draws, tune=tune, chains=chains, seed=seed)
            elpd = table[f"elpd_{pool}"].to_numpy().copy()
            psis = elpd[bad].copy()
            elpd[bad] = exact
            table[f"elpd_reloo_{pool}"] = elpd
            fixed[pool] = {"elpd": float(elpd.sum()), "se": float(np.sqrt(len(elpd) * elpd.var())),
                           "refitted": bad, "psis_elpd_i": psis.round(3).tolist(),
                           "exact_elpd_i": np.round(exact, 3).tolist()}
        best = max(fixed, key=lambda k: fixed[k]["elpd"])
        for pool, f in fixed.items():
            diff = table[f"elpd_reloo_{best}"].to_numpy() - table[f"elpd_reloo_{pool}"].to_numpy()
            f["d_elpd"], f["dse"] = float(diff.sum()), float(np.sqrt(len(diff) * diff.var()))
        summary["loo_per_judgment_reloo"] = fixed
    # Which judgments are influential (k > 0.7 under partial or no pooling)?
    infl = table[(table["k_partial"] > 0.7) | (table["k_none"] > 0.7)]
    summary["influential_judgments"] = {
        "n": int(len(infl)), "y_values": sorted(map(float, infl["y"].round(2).unique())),
        "tasks": sorted(map(int, infl["task"].unique())),
        "rows": infl.head(20).round(3).to_dict("records")}
    return table, summary


# ----------------------------------------------------------------------------- SBC
def simulate_synthetic_humans(rng: np.random.Generator, n_subjects: int = 48, scheme: str = "3p"
                              ) -> tuple[pd.DataFrame, dict[str, float]]:
    """One draw from the hierarchical model's prior, simulated through the ``cbn`` agent with the
    zero-one-inflated Beta response model (human design: one cell, 20 judgments per subject)."""
    from cogtestbed.inference.causal_hierarchical import INFLATION_PRIOR, LOG_KAPPA_PRIOR, PARAMS
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior

    pop, subj = sample_hierarchical_prior(PARAMS[scheme], n_subjects, rng)
    kappa = float(np.exp(rng.normal(*LOG_KAPPA_PRIOR)))
    pi = rng.dirichlet(INFLATION_PRIOR)
    m1 = subj["m"] if scheme == "3p" else subj["m1"]
    m2 = subj["m"] if scheme == "3p" else subj["m2"]
    params = {"b": subj["b"], "m1": m1, "m2": m2, "pc1": subj["p_c"], "pc2": subj["p_c"],
              "kappa": max(kappa, 1e-3), "pi0": pi[0], "pi100": pi[1]}
    trials = simulate("collider", "cbn", n_subjects, seed=int(rng.integers(2**31)), params=params,
                      design=CausalDesign.human())
    truth = {k: v for k, v in pop.items() if k.endswith(("_mu", "_sigma"))}
    truth["kappa"] = kappa
    truth["pi0"], truth["pi1"] = float(pi[0]), float(pi[1])
    return trials, truth


#: SBC sampling configuration (reduced from the 4 × 1000 of the human fit: the ranks only need
#: ~100 roughly independent draws per fit; 2 × 500 post-warm-up draws thinned to 199).
SBC_CONFIG = {"chains": 2, "tune": 500, "draws": 500, "n_ranks": 199}


def sbc_study(sims: int = 100, draws: int = SBC_CONFIG["draws"], tune: int = SBC_CONFIG["tune"],
              chains: int = SBC_CONFIG["chains"], seed: int = 0, n_subjects: int = 48,
              n_ranks: int = SBC_CONFIG["n_ranks"], bins: int = 10, scheme: str = "3p",
              ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """SBC (Talts et al. 2018) of the partial-pooling model on synthetic humans (48 × 20).

    Each simulation draws the population parameters from the prior, simulates subjects through
    the ``cbn`` agent's zero-one-inflated Beta response model (:func:`simulate_synthetic_humans`),
    fits :func:`~cogtestbed.inference.causal_hierarchical.build_model` and records the rank of
    every true population parameter (``*_mu``, ``*_sigma``, κ, π0, π1) among ``n_ranks``
    equally spaced (thinned) posterior draws.  Under a correct sampler the ranks are uniform on
    {0, …, n_ranks}; ``bins`` divides n_ranks + 1 so each bin holds equally many rank values.
    Summary per parameter: rank-histogram counts, χ² uniformity p-value, 90 % interval coverage,
    plus the per-fit divergences, max R-hat and seconds.
    """
    from cogtestbed.inference.causal_hierarchical import build_model
    from cogtestbed.inference.hierarchical import fit_hierarchical

    if (n_ranks + 1) % bins:
        raise ValueError(f"bins ({bins}) must divide n_ranks + 1 ({n_ranks + 1})")
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(sims):
        trials, truth = simulate_synthetic_humans(rng, n_subjects, scheme)
        fit = fit_hierarchical(build_model(trials, scheme, "partial"), trials, draws=draws, tune=tune,
                               chains=chains, seed=seed + k, warn=False, log_likelihood=False)
        post = fit.idata.posterior
        for name, true in truth.items():
            pi_col = {"pi0": 0, "pi1": 1}.get(name)
            x = (post[name].values if pi_col is None else post["pi"].values[..., pi_col]).reshape(-1)
            x = x[np.linspace(0, len(x) - 1, n_ranks).round().astype(int)]
            rows.append({"sim": k, "parameter": name, "rank": int(np.sum(x < true)), "n_draws": len(x),
                         "true": true, "post_mean": float(x.mean()),
                         "in90": bool(np.quantile(x, 0.05) <= true <= np.quantile(x, 0.95)),
                         "divergences": fit.diagnostics.divergences, "max_rhat": fit.diagnostics.max_rhat,
                         "min_ess_bulk": fit.diagnostics.min_ess_bulk, "seconds": fit.diagnostics.seconds})
    table = pd.DataFrame(rows)
    return table, sbc_summary(table, bins)


def sbc_summary(table: pd.DataFrame, bins: int = 10) -> dict[str, Any]:
    """Rank histograms and χ² uniformity tests (``bins`` equal bins over 0…n_draws) per parameter."""
    summary: dict[str, Any] = {}
    for name, g in table.groupby("parameter", sort=False):
        n_draws = int(g["n_draws"].iloc[0])
        counts = np.bincount(np.asarray(g["rank"]) * bins // (n_draws + 1), minlength=bins)
        summary[str(name)] = {"chi2_p": float(stats.chisquare(counts).pvalue),
                              "coverage90": float(g["in90"].mean()), "sims": int(len(g)),
                              "rank_histogram": counts.tolist(),
                              "rejected_at_0.01": bool(stats.chisquare(counts).pvalue < 0.01)}
    fits = table.drop_duplicates("sim")
    summary["fits"] = {"sims": int(len(fits)), "with_divergences": int((fits["divergences"] > 0).sum()),
                       "max_rhat_gt_1.01": int((fits["max_rhat"] > 1.01).sum()),
                       "median_seconds": float(fits["seconds"].median())}
    return summary


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=["recovery", "model", "misspec", "power", "sbc", "hierarchical"])
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--human", default=str(Path(__file__).resolve().parents[3] / "shared" / "data" / "causal"
                                           / "human" / "rw17_collider_ce.csv"))
    ap.add_argument("-o", "--out", default="study_output/collider")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    kw: dict[str, Any] = {"seed": args.seed}
    if args.study == "recovery":
        table, summary = recovery_study(**({"reps": args.reps} if args.reps else {}), **kw)
    elif args.study == "model":
        table, summary = model_recovery_study(**({"reps": args.reps} if args.reps else {}), **kw)
    elif args.study == "misspec":
        table, summary = misspecification_study(**({"reps": args.reps} if args.reps else {}), **kw)
    elif args.study in ("power", "hierarchical"):
        from cogtestbed.data.causal import import_rw17_human

        study = power_study if args.study == "power" else hierarchical_human_study
        table, summary = study(import_rw17_human(args.human), **kw)
    else:
        table, summary = sbc_study(**({"sims": args.reps} if args.reps else {}), **kw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{args.study}.csv", index=False)
    result = {"study": args.study, "seconds": round(time.perf_counter() - start, 2), "summary": summary}
    (out / f"{args.study}.json").write_text(json.dumps(result, indent=2, default=str))
    json.dump(result, sys.stdout, indent=1, default=str)
    print()


if __name__ == "__main__":
    main()
