"""Collider studies (Rehder & Waldmann 2017; Dettki 2025), printed as JSON lines.

* ``declared``: every study the collider spec declares, on the generic driver
  (:func:`cogtestbed.studies.driver.run_declared_study`): 3p recovery at judgment noise SD .05
  and .2 (true values uniform on b ∈ [0, .5], m ∈ [.3, 1], p_c ∈ [.2, .8]), 4p recovery, 3p vs
  4p model recovery, LAD validity, explaining-away power.
* ``sbc``: simulation-based calibration of the hierarchical zero-one-inflated Beta model on
  synthetic humans (48 subjects × 20 judgments, human design), generic driver.
* ``misspec``: which signature metrics flag each biased agent relative to the normative CBN
  (:func:`misspecification_table`).
* ``power``: subjects needed to detect the human EA and MV (two-sided one-sample t-test, α = .05)
  by resampling the 48 RW17 subjects and analytically (noncentral t); ≈ 62 (EA) and ≈ 45 (MV)
  at 80 %.
* ``hierarchical``: partial / no / complete pooling fits of the 48 RW17 subjects with PSIS-LOO
  (:func:`cogtestbed.inference.causal_hierarchical.hierarchical_human_study`).

Run ``python benchmarks/studies/collider.py [declared|sbc|misspec|power|hierarchical] [--reps N]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.causal import CausalDesign
from cogtestbed.inference.causal import fit_best, signature_metrics, valid_judgments
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate
from cogtestbed.studies.driver import declared_studies, run_declared_study, run_study, study_spec

HUMAN_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "causal" / "human" / "rw17_collider_ce.csv"
#: The RW17 human 3p fit (Dettki 2025): the base of the biased agents.
HUMAN_FIT = {"b": 0.239, "m1": 0.630, "m2": 0.630, "pc1": 0.529, "pc2": 0.529}
MISSPEC_AGENTS: dict[str, tuple[str, dict[str, float], CausalDesign]] = {
    "cbn": ("cbn", {}, CausalDesign()),
    "weak-ea w=.5": ("weak-ea", {"w": 0.5}, CausalDesign()),
    "associative delta=.1": ("associative", {"delta": 0.1}, CausalDesign()),
    "associative rho=.4": ("associative", {"delta": 0.0, "rho": 0.4}, CausalDesign()),
    "conservative lam=.5": ("conservative", {"lam": 0.5}, CausalDesign()),
    "logistic": ("logistic", {"w0": -1.2, "w1": 1.8, "w2": 1.8, "pc1": 0.53, "pc2": 0.53}, CausalDesign()),
    "distraction gamma=1 (overloaded)": ("distraction", {"gamma": 1.0}, CausalDesign.rw17_overloaded()),
}


def misspecification_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Per subject: signature metrics, the best CBN fit and the flags of a misspecified reasoner.

    Flags: |MV| > .05 (Markov violation), EA − EA implied by the fitted CBN < −.05 (weak
    explaining away), LOOCV R² < .89 (inconsistent), normative-reasoner classification.
    """
    rows = []
    for _, g in valid_judgments(trials).groupby("subject", sort=True):
        task, y = g["task_index"].to_numpy(), g["y"].to_numpy()
        best, _ = fit_best(task, y, "auto")
        p = np.array(best.predictions)
        rows.append({**signature_metrics(task, y), "ea_implied": p[7] - p[5], "loocv_r2": best.loocv_r2,
                     "r2": best.r2, "rmse": best.rmse, "lad": best.lad, "b": best.b, "m": best.m1,
                     "scheme": best.scheme})
    t = pd.DataFrame(rows)
    t["flag_mv"] = t["mv"].abs() > 0.05
    t["flag_weak_ea"] = (t["ea"] - t["ea_implied"]) < -0.05
    t["flag_loocv"] = t["loocv_r2"] < 0.89
    t["normative"] = (t["ea"] > 0.3) & (t["mv"].abs() <= 0.05) & (t["loocv_r2"] >= 0.89)
    return t


def misspecification(reps: int = 100, noise_sd: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """Mean metrics and flag rates of ``reps`` simulated subjects of each biased agent."""
    out = {}
    seeds = np.random.SeedSequence(seed).spawn(len(MISSPEC_AGENTS))
    for (label, (agent, params, design)), ss in zip(MISSPEC_AGENTS.items(), seeds, strict=True):
        base = {} if agent == "logistic" else dict(HUMAN_FIT)
        trials = simulate("collider", agent, reps, int(ss.generate_state(1)[0]), {**base, **params,
                                                                                  "noise_sd": noise_sd}, design)
        t = misspecification_table(trials)
        out[label] = t[["ea", "mv", "loocv_r2", "rmse", "lad", "flag_mv", "flag_weak_ea", "flag_loocv",
                        "normative"]].mean().round(3).to_dict()
    return out


def t_power(d: float, n: int, alpha: float = 0.05) -> float:
    """Power of a two-sided one-sample t-test at effect size ``d`` with ``n`` subjects (noncentral t)."""
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = d * np.sqrt(n)
    return float(1 - stats.nct.cdf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def human_power(human: pd.DataFrame, ns: tuple[int, ...] = (10, 20, 30, 40, 45, 50, 62, 70, 80, 100, 120),
                sims: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """Power to detect the RW17 humans' EA and MV: resampled subjects and noncentral t."""
    v = valid_judgments(human)
    per = pd.DataFrame([signature_metrics(g["task_index"].to_numpy(), g["y"].to_numpy())
                        for _, g in v.groupby("subject")])
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for effect in ("ea", "mv"):
        x = per[effect].to_numpy()
        d = float(x.mean() / x.std(ddof=1))
        curve = []
        for n in ns:
            draws = x[rng.integers(0, len(x), (sims, n))]
            t = draws.mean(1) / (draws.std(1, ddof=1) / np.sqrt(n))
            pw = float(np.mean(2 * stats.t.sf(np.abs(t), n - 1) < alpha))
            curve.append({"n": n, "power_resampled": pw, "mc_se": float(np.sqrt(pw * (1 - pw) / sims)),
                          "power_analytic": t_power(d, n, alpha)})
        hit = [c["n"] for c in curve if c["power_resampled"] >= 0.8]
        out[effect] = {"mean": float(x.mean()), "sd": float(x.std(ddof=1)), "d": d,
                       "n80_analytic": next(n for n in range(3, 2000) if t_power(d, n, alpha) >= 0.8),
                       "n80_resampled_grid": min(hit) if hit else None, "curve": curve}
    return out


def sbc(reps: int = 100, seed: int = 0) -> dict[str, Any]:
    """SBC of the partial-pooling ZOIB model on 48 synthetic humans (2 × 500 draws per fit)."""
    spec = study_spec(kind="sbc", experiment="collider", models=("cbn-3p",), method="hierarchical",
                     subjects=(48,), design={"content": "rw17", "scope": "cell"}, reps=reps, seed=seed,
                     draws=500, tune=500, chains=2)
    res = run_study(spec)
    return {"summary": res.summary, "verdict": res.verdict, "seconds": res.seconds}


def declared(reps: int, seed: int = 0) -> dict[str, Any]:
    exp = get_experiment("collider")
    return {name: run_declared_study(exp, decl, reps=reps, seed=seed, workers=None).verdict
            for name, decl in declared_studies(exp)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=["declared", "sbc", "misspec", "power", "hierarchical"])
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--human", default=str(HUMAN_CSV))
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.study == "declared":
        result: Any = declared(args.reps or 100, args.seed)
    elif args.study == "sbc":
        result = sbc(args.reps or 100, args.seed)
    elif args.study == "misspec":
        result = misspecification(args.reps or 100, seed=args.seed)
    else:
        from cogtestbed.data.causal import import_rw17_human
        from cogtestbed.inference.causal_hierarchical import hierarchical_human_study

        human = import_rw17_human(Path(args.human))
        result = human_power(human, seed=args.seed) if args.study == "power" else \
            hierarchical_human_study(human, seed=args.seed)[1]
    print(json.dumps({"study": args.study, "seconds": round(time.perf_counter() - start, 1), "result": result},
                     default=str), flush=True)


if __name__ == "__main__":
    main()
