"""Magnitude estimation (BayesBench) studies on synthetic agents; each prints its figures.

    python benchmarks/studies/magnitude_studies.py recovery      # w_prior, mu_p; q/r, alpha, w_text by trials/session
    python benchmarks/studies/magnitude_studies.py kalman        # q/r: where it is identifiable
    python benchmarks/studies/magnitude_studies.py cue           # alpha and w_text recovery
    python benchmarks/studies/magnitude_studies.py model         # factor-evidence confusion
    python benchmarks/studies/magnitude_studies.py power [-o PNG]  # BCS sign power vs Phi(|dw|/SE)
    python benchmarks/studies/magnitude_studies.py coverage      # 68 % bootstrap intervals
    python benchmarks/studies/magnitude_studies.py hierarchy     # PyMC w_prior hierarchy (one observer)
    python benchmarks/studies/magnitude_studies.py hierarchical [--reps R]  # subject-level static Bayes
    python benchmarks/studies/magnitude_studies.py stimuli -o PNG  # a sheet of the image stimuli
    python benchmarks/studies/magnitude_studies.py observer_bias  # observer cell w_prior vs its analytic weight

Every study seeds itself from one integer (``--seed``) and uses the library's own simulation,
fitters and metrics.  BCS power: SE_Δ = √2·σ_dec·√12/(W·√n) and P(correct sign) = Φ(|Δw|/SE_Δ)
(the OLS slope of a uniform stimulus of width W, two independent fits).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.magnitude import MagnitudeDesign
from cogtestbed.inference.magnitude import (
    MODELS,
    Cube,
    build_cube,
    cue_combination,
    evidence_table,
    magnitude_metrics,
    pooled_w_prior,
    session_fits,
    w_prior_hierarchy,
)
from cogtestbed.simulation import simulate

TEXT_BASE = {"task": "line-ratio", "conditions": "base", "modalities": "text"}


def _r(true: np.ndarray, est: np.ndarray) -> str:
    return (f"r = {np.corrcoef(true, est)[0, 1]:.3f}, bias {np.mean(est - true):+.4f}, "
            f"RMSE {np.sqrt(np.mean((est - true) ** 2)):.4f}")


def recovery(seed: int, n: int = 200) -> None:
    """w_prior recovery at 50 trials per session, σ_dec/W = 0.1 (and 0.2): one fit per session
    (50 trials) and one per subject (3 sessions, shared parameters); then w_prior / μ_p and
    (:func:`trials_sweep`) Kalman q/r, α and w_text by trials per session."""
    rng = np.random.default_rng(seed)
    for sd in (0.1, 0.2):
        w, m = rng.uniform(0.05, 0.95, n), rng.uniform(0.3, 0.7, n)
        design = MagnitudeDesign(**TEXT_BASE, trials_per_session=50)
        t = simulate("magnitude", "static-bayes", n, seed, {"w_prior": w, "mu_p": m, "sigma_dec": sd}, design=design)
        fits = MODELS["static-bayes"].fit_mle(t)
        print(f"sigma_dec/W = {sd}: subject fit (3 sessions x 50 trials): w_prior {_r(w, fits['w_prior'].to_numpy())}; "
              f"mu_p {_r(m, fits['mu_p'].to_numpy())}")
        single = t[t["range"] == "medium"]
        fits1 = MODELS["static-bayes"].fit_mle(single)
        print(f"sigma_dec/W = {sd}: one session (50 trials): w_prior {_r(w, fits1['w_prior'].to_numpy())}")
    print("subject fit (3 sessions) by trials per session and sigma_dec/W: r(w_prior), r(mu_p) "
          "[mu_p ~ U(.3, .7) is weakly identified where w_prior is small]")
    for sd in (0.1, 0.2):
        cells = []
        for trials in (10, 20, 50, 100):
            w, m = rng.uniform(0.05, 0.95, n), rng.uniform(0.3, 0.7, n)
            t = simulate("magnitude", "static-bayes", n, seed + trials, {"w_prior": w, "mu_p": m, "sigma_dec": sd},
                         design=MagnitudeDesign(**TEXT_BASE, trials_per_session=trials))
            fits = MODELS["static-bayes"].fit_mle(t)
            cells.append(f"n={trials}: {np.corrcoef(w, fits['w_prior'])[0, 1]:.3f}, "
                         f"{np.corrcoef(m, fits['mu_p'])[0, 1]:.3f}")
        print(f"  sigma_dec/W = {sd}: " + "; ".join(cells))
    trials_sweep(seed)


#: Trials per session of the recovery sweeps (the issue's grid).
TRIALS_GRID = (10, 20, 50, 100)
#: Range of true log10 q/r where the Kalman gain is identifiable (steady-state gain ≈ 0.1–0.9).
QR_IDENTIFIABLE = (-2.0, 1.0)


def _kalman_fit(rng: np.random.Generator, seed: int, n: int, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """True and MLE log10 q/r of ``n`` Kalman subjects, q/r ~ 10^U(−3, 2), σ_dec/W = 0.1."""
    qr = 10 ** rng.uniform(-3, 2, n)
    design = MagnitudeDesign(**TEXT_BASE, trials_per_session=trials)
    t = simulate("magnitude", "kalman", n, seed, {"q_over_r": qr, "sigma_dec": 0.1}, design=design)
    est = MODELS["kalman"].fit_mle(t)["q_over_r"].to_numpy()
    return np.log10(qr), np.log10(np.maximum(est, 1e-12))


def _alpha_fit(rng: np.random.Generator, seed: int, n: int, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """True and fitted α of ``n`` combiner-alpha subjects (line ratio, base, three modalities)."""
    alpha = rng.uniform(0, 1, n)
    design = MagnitudeDesign(task="line-ratio", conditions="base", trials_per_session=trials)
    t = simulate("magnitude", "combiner-alpha", n, seed, {"alpha": alpha, "sigma_dec": 0.02}, design=design)
    est = np.array([cue_combination(build_cube(g), 1)["alpha"] for _, g in t.groupby("subject")])  # type: ignore[index]
    return alpha, est


def _w_text_fit(rng: np.random.Generator, seed: int, n: int, trials: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """True Oracle text weight σ_I²/(σ_T² + σ_I²) of ``n`` combiner-optimal subjects and their
    cue-combination fits."""
    st, si = rng.uniform(0.05, 0.3, n), rng.uniform(0.05, 0.3, n)
    design = MagnitudeDesign(task="line-ratio", conditions="base", trials_per_session=trials)
    t = simulate("magnitude", "combiner-optimal", n, seed, {"sigma_text": st, "sigma_image": si, "sigma_dec": 0.02},
                 design=design)
    return si**2 / (st**2 + si**2), [cue_combination(build_cube(g), 1) for _, g in t.groupby("subject")]


def _corr(true: np.ndarray, est: np.ndarray) -> float:
    ok = np.isfinite(est)
    return float(np.corrcoef(true[ok], est[ok])[0, 1])


def trials_sweep(seed: int, n_kalman: int = 300, n_cue: int = 150) -> None:
    """r(true, fitted) of Kalman log10 q/r, α and w_text by trials per session (:data:`TRIALS_GRID`)."""
    rng = np.random.default_rng(seed)
    print("by trials per session (3 sessions each): r(true, fitted)")
    for trials in TRIALS_GRID:
        lt, le = _kalman_fit(rng, seed + trials, n_kalman, trials)
        k = (lt >= QR_IDENTIFIABLE[0]) & (lt < QR_IDENTIFIABLE[1])
        alpha, a_est = _alpha_fit(rng, seed + trials, n_cue, trials)
        w_true, res = _w_text_fit(rng, seed + trials, n_cue, trials)
        oracle = np.array([r["w_text_oracle"] for r in res], dtype=np.float64)  # type: ignore[index]
        resid = np.array([r["w_text_non_oracle"]["residual"] for r in res], dtype=np.float64)  # type: ignore[index]
        print(f"  n={trials:3d}: log10 q/r {_corr(lt, le):.3f} (in [{QR_IDENTIFIABLE[0]:+.0f}, "
              f"{QR_IDENTIFIABLE[1]:+.0f}): {_corr(lt[k], le[k]):.3f}); alpha {_corr(alpha, a_est):.3f}; "
              f"w_text Oracle GLS {_corr(w_true, oracle):.3f}, Non-Oracle residual {_corr(w_true, resid):.3f}")


def kalman(seed: int, n: int = 300) -> None:
    """q/r recovery (log scale) by true q/r: the gain saturates at large q/r and the filter is a
    running mean at small q/r, where q/r is not identifiable."""
    lt, le = _kalman_fit(np.random.default_rng(seed), seed, n, 50)
    print(f"log10 q/r overall: {_r(lt, le)}")
    edges = np.arange(-3, 2.5, 1.0)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        k = (lt >= lo) & (lt < hi)
        k_inf = (math.sqrt(10 ** (2 * lo) + 4 * 10 ** lo) + 10 ** lo) / 2
        rmse = np.sqrt(np.mean((le[k] - lt[k]) ** 2))
        print(f"  true log10 q/r in [{lo:+.0f}, {hi:+.0f}): n = {k.sum():3d}, RMSE {rmse:.3f}, "
              f"median |error| {np.median(np.abs(le[k] - lt[k])):.3f}; steady-state gain at the low end "
              f"{k_inf / (k_inf + 1):.3f}")


def cue(seed: int, n: int = 150) -> None:
    """α (combiner-alpha) and the Oracle text weight (combiner-optimal) recovered by the cue-combination fits."""
    rng = np.random.default_rng(seed)
    alpha, est = _alpha_fit(rng, seed, n, 50)
    print(f"alpha (sigma_text = 0.15, sigma_image = 0.1, sigma_dec = 0.02, 3 x 50 trials): {_r(alpha, est)}")
    w_true, res = _w_text_fit(rng, seed, n, 50)
    for key in ("raw", "per_stimulus", "residual"):
        est = np.array([r["w_text_non_oracle"][key] for r in res])  # type: ignore[index]
        print(f"w_text Non-Oracle ({key}): {_r(w_true, est)}")
    print(f"w_text Oracle GLS: {_r(w_true, np.array([r['w_text_oracle'] for r in res]))}")  # type: ignore[index]


def model(seed: int, n: int = 100) -> None:
    """Confusion of the factor-evidence procedure (App. A.8) over generating agents."""
    rng = np.random.default_rng(seed)
    design = MagnitudeDesign(task="marker-location", conditions="base", modalities="text", trials_per_session=50)
    agents: dict[str, dict[str, Any]] = {
        "linear": {"w": rng.uniform(0.5, 1.5, n), "b": rng.uniform(-0.1, 0.3, n), "sigma_dec": 0.1},
        "static-bayes": {"w_prior": rng.uniform(0.1, 0.7, n), "sigma_dec": 0.1},
        "kalman": {"q_over_r": 10 ** rng.uniform(-2, 0, n), "sigma_dec": 0.1},
        "static-bayes-log": {"w_prior": rng.uniform(0.1, 0.7, n), "sigma_dec": 0.1},
    }
    rows = []
    for agent, params in agents.items():
        t = simulate("magnitude", agent, n, seed, params, design=design)
        for _, g in t.groupby("subject"):
            ev = evidence_table(session_fits(build_cube(g)))["marker-location"]["base"]["text"]
            rows.append({"agent": agent, **ev})
    df = pd.DataFrame(rows)
    share = df.groupby("agent", sort=False)[["BAYESIAN", "WEBER", "SEQUENTIAL", "GAIN"]].agg(lambda v: (v > 0.5).mean())
    mean = df.groupby("agent", sort=False)[["BAYESIAN", "WEBER", "SEQUENTIAL", "GAIN"]].mean()
    print("share of subjects with P(factor) > 0.5 (rows: generating agent; 3 sessions x 50 trials, sigma_dec/W = 0.1):")
    print(share.round(2).to_string())
    print("mean P(factor):")
    print(mean.round(3).to_string())


def _bcs_power_cell(sd: float, n: int, dw: float, subjects: int, seed: int) -> tuple[float, float]:
    design = MagnitudeDesign(task="line-ratio", conditions="base,verbal", modalities="text+image", ranges="medium",
                             trials_per_session=n)
    t = simulate("magnitude", "ablation-inconsistent", subjects, seed,
                 {"w_prior": 0.5, "shift": dw, "sigma_dec": sd}, design=design)
    x = t["x"].to_numpy().reshape(subjects, 2, 1, n)
    y = t["action"].to_numpy(dtype=np.float64).reshape(subjects, 2, 1, n)
    w, _ = pooled_w_prior(Cube(x, y, np.empty(0), np.empty(0)))
    correct = (w[:, 1] - w[:, 0]) < 0  # the agent's prior weight drops by dw under the ablation
    se = math.sqrt(2) * sd * math.sqrt(12) / math.sqrt(n)
    return float(correct.mean()), float(stats.norm.cdf(dw / se))


def power(seed: int, subjects: int = 4000, png: str | None = None) -> None:
    """BCS sign power (one ablation, one task) against Φ(|Δw|/SE_Δ) on the grid of the issue."""
    rows = []
    for sd in (0.1, 0.2):
        for n in (30, 50, 100):
            for dw in (0.05, 0.1):
                sim, ana = _bcs_power_cell(sd, n, dw, subjects, seed + len(rows))
                mc = math.sqrt(sim * (1 - sim) / subjects)
                rows.append({"sigma_dec/W": sd, "n": n, "dw": dw, "simulated": sim, "mc_se": mc, "analytic": ana,
                             "diff": sim - ana})
    df = pd.DataFrame(rows)
    print(df.round(4).to_string(index=False))
    print(f"max |simulated - analytic| = {df['diff'].abs().max():.4f} ({subjects} subjects per cell)")
    if png:
        _power_plot(df, png, seed, subjects)


def _power_plot(df: pd.DataFrame, png: str, seed: int, subjects: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ns = np.arange(10, 201)
    for (sd, dw), colour in zip([(0.1, 0.05), (0.1, 0.1), (0.2, 0.05), (0.2, 0.1)], ["C0", "C1", "C2", "C3"],
                                strict=True):
        se = math.sqrt(2) * sd * math.sqrt(12) / np.sqrt(ns)
        ax.plot(ns, stats.norm.cdf(dw / se), color=colour, label=f"σ_dec/W={sd}, Δw={dw}")
        cell = df[(df["sigma_dec/W"] == sd) & (df["dw"] == dw)]
        ax.errorbar(cell["n"], cell["simulated"], yerr=2 * cell["mc_se"], fmt="o", color=colour)
    ax.set_xlabel("trials per session (n)")
    ax.set_ylabel("P(correct sign of Δw_prior)")
    ax.set_title(f"BCS sign power: simulation (points, {subjects} subjects) vs Φ(|Δw|/SE_Δ)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    ax.set_ylim(0.45, 1.01)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def coverage(seed: int, n: int = 300, rounds: int = 30) -> None:
    """Coverage of the 68 % session-preserving bootstrap interval of w_prior (static Bayes agent)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 0.8, n)
    design = MagnitudeDesign(task="line-ratio", conditions="base", modalities="text", trials_per_session=50)
    t = simulate("magnitude", "static-bayes", n, seed, {"w_prior": w, "sigma_dec": 0.15}, design=design)
    hits = []
    for (sid, g), brng in zip(t.groupby("subject"), np.random.default_rng(seed + 1).spawn(n), strict=True):
        cube = build_cube(g)
        T = cube.X.shape[-1]
        draws = []
        for _ in range(rounds):
            idx = np.sort(brng.integers(0, T, size=(*cube.X.shape[:2], cube.X.shape[3], T)), axis=-1)
            draws.append(pooled_w_prior(cube.resample(idx))[0][1, 0, 0])
        lo, hi = np.percentile(draws, [16, 84])
        hits.append(lo <= w[int(sid)] <= hi)
    p = float(np.mean(hits))
    print(f"68 % bootstrap interval of w_prior ({rounds} rounds, 3 x 50 trials, sigma_dec/W = 0.15): coverage "
          f"{p:.3f} ± {math.sqrt(p * (1 - p) / n):.3f} over {n} subjects")


#: Design of the w_prior-hierarchy study: one ``observer`` (sigma_dec 0.05, other parameters at
#: their defaults) on the three visual tasks x the base + five BCS conditions x 3 sessions x 30
#: trials, text+image; 4 chains x 1000 draws (1000 tuning steps).
HIERARCHY_DESIGN = {"task": "all", "modalities": "text+image", "trials_per_session": 30}
#: Population of the subject-level study: 20 static-Bayes subjects, logit w_prior ~ N(-0.5, 0.8),
#: mu_p = 0.5, sigma_dec/W = 0.1, line ratio, text, base, 3 x 50 trials; 4 chains x 1000 draws.
POPULATION = {"subjects": 20, "logit_mu": -0.5, "logit_sd": 0.8, "sigma_dec": 0.1, "trials": 50}


def _report(label: str, d: dict[str, Any]) -> None:
    print(f"  {label}: max R-hat {d['max_rhat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f}, min tail ESS "
          f"{d['min_ess_tail']:.0f}, divergences {d['divergences']} -> {'converged' if d['converged'] else 'NOT'}")


#: The known-truth agent of the hierarchy's recovery: static Bayes with w_prior 0.4 in the base
#: condition and 0.4 - shift in every BCS ablation (decision noise only, so the static-Bayes cell
#: model is exact).
HIERARCHY_TRUTH = {"w_prior": 0.4, "shift": 0.1, "sigma_dec": 0.1}


def hierarchy(seed: int, chains: int = 4, draws: int = 1000) -> None:
    """The PyMC w_prior hierarchy (:data:`HIERARCHY_DESIGN`) on one ``observer`` (diagnostics,
    P(dw_prior > 0) per BCS ablation) and on one ``ablation-inconsistent`` agent of known cell
    w_prior (:data:`HIERARCHY_TRUTH`): diagnostics, r and 90 % interval coverage of the cell
    w_prior, and whether each condition level's 90 % interval covers the true logit w."""
    design = MagnitudeDesign(**HIERARCHY_DESIGN)
    for agent, params in (("observer", {"sigma_dec": 0.05}), ("ablation-inconsistent", HIERARCHY_TRUTH)):
        t = simulate("magnitude", agent, 1, seed, params, design=design)
        t = t[t["task"] != "duration"]
        start = time.process_time()
        res = w_prior_hierarchy(t, draws=draws, tune=draws, chains=chains, seed=seed)
        print(f"w_prior hierarchy, {agent} {params}, 3 visual tasks x 6 conditions x 3 sessions x 30 trials, "
              f"text+image, {chains} x {draws} draws ({time.process_time() - start:.0f} s CPU):")
        _report("diagnostics", res["diagnostics"])
        print("  P(dw_prior > 0): " + ", ".join(f"{k} {v:.3f}" for k, v in res["p_delta_w_positive"].items()))
        if agent != "ablation-inconsistent":
            continue

        def true_w(condition: str, p: dict[str, float] = params) -> float:
            return p["w_prior"] - (p["shift"] if condition != "base" else 0.0)

        cells = list(res["w_prior"])
        true = np.array([true_w(c.split("|")[1]) for c in cells])
        est = np.array([res["w_prior"][c]["mean"] for c in cells])
        cover = np.mean([res["w_prior"][c]["lo"] <= w <= res["w_prior"][c]["hi"]
                         for c, w in zip(cells, true, strict=True)])
        print(f"  cell w_prior ({len(cells)} cells): {_r(true, est)}; 90 % interval coverage {cover:.3f}")
        levels = {c: (v, math.log(true_w(c) / (1 - true_w(c)))) for c, v in res["level"].items()}
        print("  condition level (logit w): " + ", ".join(
            f"{c} {v['mean']:+.2f} [{v['lo']:+.2f}, {v['hi']:+.2f}] true {x:+.2f}" for c, (v, x) in levels.items()))
        print(f"  levels covered by their 90 % interval: {sum(v['lo'] <= x <= v['hi'] for v, x in levels.values())}"
              f"/{len(levels)}")


def hierarchical(seed: int, reps: int = 10, chains: int = 4, draws: int = 1000) -> None:
    """Subject-level hierarchical static-Bayes (the generic builder, w_prior centred) over
    ``reps`` populations (:data:`POPULATION`): diagnostics of every fit, recovery of w_prior
    per subject (r, 90 % interval coverage) and coverage of the group-level logit mean by the
    90 % interval of w_prior_mu."""
    from cogtestbed.inference.hierarchical import fit_hierarchical

    pop = POPULATION
    design = MagnitudeDesign(**TEXT_BASE, trials_per_session=pop["trials"])
    rows, true_all, est_all, hit_subj = [], [], [], []
    for rep, rng in enumerate(np.random.default_rng(seed).spawn(reps)):
        w = 1.0 / (1.0 + np.exp(-rng.normal(pop["logit_mu"], pop["logit_sd"], pop["subjects"])))
        t = simulate("magnitude", "static-bayes", pop["subjects"], seed + rep,
                     {"w_prior": w, "sigma_dec": pop["sigma_dec"]}, design=design)
        start = time.process_time()
        fit = fit_hierarchical(MODELS["static-bayes"], t, draws=draws, tune=draws, chains=chains, seed=seed + rep,
                               warn=False, log_likelihood=False)
        post = fit.idata.posterior
        wd = post["w_prior"].values.reshape(-1, pop["subjects"])
        lo, hi = np.quantile(wd, [0.05, 0.95], axis=0)
        mu_lo, mu_hi = np.quantile(post["w_prior_mu"].values.ravel(), [0.05, 0.95])
        true_all.append(w)
        est_all.append(wd.mean(0))
        hit_subj.append((lo <= w) & (w <= hi))
        d = fit.diagnostics
        rows.append({**d.columns(), "r": float(np.corrcoef(w, wd.mean(0))[0, 1]),
                     "mu_covered": bool(mu_lo <= pop["logit_mu"] <= mu_hi), "cpu_s": time.process_time() - start})
        print(f"  rep {rep}: r {rows[-1]['r']:.3f}; {d.report()}", flush=True)
    df = pd.DataFrame(rows)
    true, est = np.concatenate(true_all), np.concatenate(est_all)
    print(f"hierarchical static-Bayes ({reps} populations x {pop['subjects']} subjects x 3 x {pop['trials']} trials, "
          f"{chains} x {draws} draws, {df['cpu_s'].mean():.0f} s CPU per fit):")
    print(f"  worst over fits: max R-hat {df['max_rhat'].max():.4f}, min bulk ESS {df['min_ess_bulk'].min():.0f}, "
          f"min tail ESS {df['min_ess_tail'].min():.0f}, divergences {int(df['divergences'].sum())}; "
          f"{int(df['converged'].sum())}/{reps} converged")
    print(f"  w_prior per subject: {_r(true, est)}; 90 % interval coverage {np.mean(np.concatenate(hit_subj)):.3f}")
    print(f"  group level: 90 % interval of w_prior_mu covers the true logit mean in {df['mu_covered'].mean():.2f} "
          f"of {reps} populations")


#: Design of the observer-bias study (:data:`HIERARCHY_DESIGN` without the gradual ramp, whose
#: weight changes every trial): text+image, 3 visual tasks x 5 conditions x 3 sessions x 30 trials.
BIAS_CONDITIONS = ("base", "verbal", "numerical", "noise-constant", "context-long")


def observer_bias(seed: int, n: int = 300) -> None:
    """Cell-level w_prior (shared-slope least squares, :func:`pooled_w_prior`) of ``n`` observers
    against the analytic weight of :func:`~cogtestbed.agents.magnitude.observer_weight`: mean error
    per condition (bias) with its standard error, the SD of one subject-task cell, and the
    correlation of a subject's errors across conditions (the frozen percept noise every condition
    reuses)."""
    from magnitude_family import observer_cell_w_errors

    params = {"sigma_dec": 0.05}
    err, truth = observer_cell_w_errors(n, seed, BIAS_CONDITIONS, params["sigma_dec"])
    corr = np.corrcoef(err.T)[np.triu_indices(len(BIAS_CONDITIONS), 1)]
    print(f"observer cell w_prior vs analytic weight ({n} subjects x 3 visual tasks, text+image, 3 x 30 trials, "
          f"{params}):")
    for k, c in enumerate(BIAS_CONDITIONS):
        e = err[:, k]
        print(f"  {c:15s} true {truth[k]:.3f}  mean error {e.mean():+.4f} ± {e.std() / math.sqrt(len(e)):.4f}  "
              f"SD per cell {e.std():.3f}")
    print(f"  correlation of one subject-task's errors across conditions: {corr.min():.2f}-{corr.max():.2f}; "
          f"subject-tasks whose mean error over conditions exceeds +0.03: {np.mean(err.mean(1) > 0.03):.3f}")


def _bcs_per_task(agent: str, params: dict[str, float], n: int, seed: int) -> np.ndarray:
    """BCS per (subject, visual task) of ``n`` subjects on the default design's visual tasks
    (image and text+image: the modalities BCS fits, App. A.10)."""
    from cogtestbed.tables.magnitude import VISUAL_TASKS

    design = MagnitudeDesign(modalities="image,text+image")
    res = magnitude_metrics(simulate("magnitude", agent, n, seed, params, design=design), bootstrap=0)
    return np.array([[p["bcs_per_task"][t] for t in VISUAL_TASKS] for p in res["per_subject"]], dtype=float)


def identity(seed: int, n: int = 1000) -> None:
    """BCS of identity mappers (w_prior = 0, no prior at all): exact answers y = x tie every Δw_prior
    at 0 and score +1 each (BCS +5 per task); with decision noise the fitted slope clips at 1 half
    the time (w_prior = 0 there), and the ties still count +1."""
    for sigma in (0.0, 0.1):
        b = _bcs_per_task("static-bayes", {"w_prior": 0.0, "sigma_dec": sigma}, n, seed)
        per = b.reshape(-1)
        print(f"identity mapper, sigma_dec/W = {sigma}: BCS per task {per.mean():+.2f} (SD {per.std(ddof=1):.2f}, "
              f"SE {per.std(ddof=1) / math.sqrt(per.size):.2f}; {per.size} subject-tasks); BCS per subject "
              f"{b.sum(1).mean():+.2f}")


def prior_dominant(seed: int, n: int = 300) -> None:
    """BCS of the prior-dominant agent at its defaults and at the former ones (w_prior .95, σ_dec .1)."""
    for params in ({}, {"w_prior": 0.95, "sigma_dec": 0.1}):
        b = _bcs_per_task("prior-dominant", params, n, seed).sum(1)
        values, counts = np.unique(b, return_counts=True)
        print(f"prior-dominant {params or '(defaults)'}: BCS = 0 for {np.mean(b == 0):.3f} of {n} subjects; "
              f"mean {b.mean():+.3f}; values {dict(zip(values.tolist(), counts.tolist(), strict=True))}")


def figures(seed: int, n: int = 50) -> None:
    """Fig. 6A / 6C / 7 as metrics on synthetic subjects: the ``observer``'s bias–variance parts
    under steering and its image weight under blur (line ratio, 3 × 30 trials), and the
    cross-validated random-forest vs linear-regression fit (100 trees) of an α-combiner's and of a
    switching combiner's multimodal answers."""
    from cogtestbed.environments.magnitude import CONDITIONS, MODALITIES, TASK_NAMES
    from cogtestbed.inference import magnitude_figures as fig

    design = MagnitudeDesign(task="line-ratio", conditions="base,verbal,numerical,numerical-biased,noise-constant,"
                             "noise-gradual", trials_per_session=30)
    m = magnitude_metrics(simulate("magnitude", "observer", n, seed, design=design), bootstrap=0)["metrics"]
    print(f"observer ({n} subjects, line ratio, 3 x 30 trials), means over subjects:")
    for c, cell in m["bias_variance"]["line-ratio"].items():
        b = cell["text+image"]
        print(f"  Fig. 6A {c:17s} text+image NRMSE^2 {b['nrmse2']:.3f} = bias^2 {b['bias2']:.3f} + variance "
              f"{b['variance']:.3f}")
    weights = m["image_weight"]["line-ratio"]
    print("  Fig. 6C image weight 1 - alpha: " + ", ".join(f"{c} {w:.3f}" for c, w in weights.items()))
    one = MagnitudeDesign(task="line-ratio", conditions="base", ranges="medium", trials_per_session=120)
    k, base = TASK_NAMES.index("line-ratio"), CONDITIONS.index("base")
    t, i, b = (MODALITIES.index(x) for x in ("text", "image", "text+image"))
    rows = {"alpha": [], "switch": []}
    for s in range(20):
        cube = build_cube(simulate("magnitude", "combiner-alpha", 1, seed + s, {"alpha": 0.5}, design=one))
        rows["alpha"].append(fig.combiner_fits(cube, trees=fig.FOREST_TREES)["line-ratio"])
        cube.Y[k, base, b] = np.where(np.abs(cube.Y[k, base, t] - 0.5) < 0.1, cube.Y[k, base, t], cube.Y[k, base, i])
        rows["switch"].append(fig.combiner_fits(cube, trees=fig.FOREST_TREES)["line-ratio"])
    for name, fits in rows.items():
        rf = np.mean([f["random_forest"] for f in fits])
        lr = np.mean([f["linear_regression"] for f in fits])
        print(f"  Fig. 7 {name:6s} combiner (20 subjects x 120 trials): CV RMSE random forest {rf:.4f}, "
              f"linear regression {lr:.4f}")


def stimuli(seed: int, png: str | None = None) -> None:
    """A picture of the image stimuli (marker, line ratio, maze; unblurred and σ = 2 px blur)."""
    import io

    from PIL import Image

    from cogtestbed.environments.magnitude import stimulus_image

    cases = [("marker-location", 0.7), ("line-ratio", 0.4), ("maze-distance", 7.0)]
    tiles = [Image.open(io.BytesIO(stimulus_image(task, x, seed, blur))).convert("RGB")
             for blur in (0.0, 2.0) for task, x in cases]
    size = tiles[0].size[0]
    sheet = Image.new("RGB", (3 * size + 4, 2 * size + 2), "grey")
    for k, tile in enumerate(tiles):
        sheet.paste(tile, ((k % 3) * (size + 2), (k // 3) * (size + 2)))
    out = png or "magnitude_stimuli.png"
    sheet.save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("study", choices=["recovery", "kalman", "cue", "model", "power", "coverage", "hierarchy",
                                        "hierarchical", "stimuli", "observer_bias", "identity", "prior_dominant",
                                        "figures"])
    ap.add_argument("--reps", type=int, default=10, help="populations of the hierarchical study")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default=None, help="PNG of the power curve (power study)")
    args = ap.parse_args()
    if args.study == "power":
        power(args.seed, png=args.output)
    elif args.study == "hierarchical":
        hierarchical(args.seed, reps=args.reps)
    elif args.study == "stimuli":
        stimuli(args.seed, args.output)
    else:
        globals()[args.study](args.seed)
