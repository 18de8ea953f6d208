"""Studies of the revealed-belief family: sampling noise floors, samples needed to detect a bias,
parameter recovery and the β_first / β_label identifiability check.

``python -m cogtestbed.validation.revealed [-o DIR] [--quick]`` prints every figure as JSON lines.

1. **Noise floor** (the paper's §8 table, sample-only APIs): the metrics of an N-sample estimate
   of a uniform k-outcome distribution, for k = 2, 6, 12 and N = 100, 500, 1000.
2. **Samples to detect a first-option bias**: P(A) of a k-option choice raised above 1/k; the
   smallest N per item at which a one-sided exact binomial test (α = 0.05) has power ≥ 0.8.
3. **Samples to detect anchoring**: P(previous outcome) in an Independent item vs the same
   outcome in the Regular item (d6, 1/6 + δ for δ = 0.05, 0.1); one-sided two-sample z-test of
   proportions with N samples per condition, power by simulation.
4. **Recovery** of every parameter of the dissonant agent by MLE from exact (Dirichlet-noised)
   distributions over the default grid, biases drawn uniformly.
5. **Identifiability of β_first vs β_label** on preference items: with both option orders (the
   paper's Figure 6 swap) the two are recovered separately; with the marked label always listed
   first they enter the likelihood only through their sum.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.revealed import RevealedDesign
from cogtestbed.inference.revealed import noise_floor
from cogtestbed.inference.revealed_model import MODELS
from cogtestbed.simulation import simulate

#: The paper's §8 noise-floor table (mean / p95 of E[Chebyshev]), for comparison.
PUBLISHED_FLOOR = {(2, 100): (0.040, 0.100), (2, 500): (0.018, 0.044), (2, 1000): (0.012, 0.031),
                   (6, 100): (0.060, 0.097), (6, 500): (0.027, 0.045), (6, 1000): (0.019, 0.031),
                   (12, 100): (0.054, 0.077), (12, 500): (0.024, 0.035), (12, 1000): (0.017, 0.025)}
ALPHA = 0.05
POWER = 0.8
N_GRID = (5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000)


def noise_floor_table(reps: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """Study 1: simulated noise floor beside the published one."""
    rows = []
    for (k, n), (pub_mean, pub_p95) in PUBLISHED_FLOOR.items():
        f = noise_floor(k, n, reps=reps, seed=seed)
        rows.append({"k": k, "n": n, **f, "published_mean": pub_mean, "published_p95": pub_p95})
    return pd.DataFrame(rows)


def binomial_power(n: int, p0: float, p1: float, alpha: float = ALPHA) -> float:
    """Exact power of the one-sided binomial test of H0: p = p0 against p1 > p0 with n draws."""
    crit = int(stats.binom.isf(alpha, n, p0)) + 1  # smallest c with P0(X >= c) <= alpha
    while crit > 0 and stats.binom.sf(crit - 2, n, p0) <= alpha:
        crit -= 1
    return float(stats.binom.sf(crit - 1, n, p1))


def samples_for_first_option(k: int, p1: float) -> int | None:
    """Study 2: smallest N of :data:`N_GRID` with power ≥ 0.8 to detect P(first) = p1 > 1/k."""
    for n in N_GRID:
        if binomial_power(n, 1.0 / k, p1) >= POWER:
            return n
    return None


def two_sample_power(n: int, p0: float, p1: float, reps: int, rng: np.random.Generator) -> float:
    """Power of a one-sided pooled z-test of two proportions with n draws each (simulated)."""
    x0 = rng.binomial(n, p0, size=reps)
    x1 = rng.binomial(n, p1, size=reps)
    pooled = (x0 + x1) / (2 * n)
    se = np.sqrt(np.maximum(pooled * (1 - pooled) * 2 / n, 1e-12))
    z = (x1 - x0) / n / se
    return float(np.mean(z > stats.norm.isf(ALPHA)))


def samples_for_anchoring(delta: float, k: int = 6, reps: int = 4000, seed: int = 0) -> int | None:
    """Study 3: smallest N per condition with power ≥ 0.8 to detect an anchoring shift ``delta``."""
    rng = np.random.default_rng([seed, int(delta * 1000), k])
    for n in N_GRID:
        if two_sample_power(n, 1.0 / k, 1.0 / k + delta, reps, rng) >= POWER:
            return n
    return None


#: Uniform ranges of the recovery study (biases in the range the paper's tables imply).
RECOVERY_RANGES = {"tau": (0.5, 1.5), "beta_first": (0.0, 3.0), "beta_label": (-1.0, 2.0),
                   "beta_anchor": (-0.5, 1.5), "beta_round": (-1.0, 1.0), "beta_mid": (-1.0, 1.0),
                   "kappa": (2.0, 10.0), "theta": (0.0, 6.0), "beta_pos": (-1.0, 2.0)}


def recovery(n_subjects: int = 40, noise: float = 0.02, seed: int = 0,
             design: RevealedDesign | None = None) -> tuple[pd.DataFrame, dict[str, float]]:
    """Study 4: true vs MLE estimates of every parameter (one fit per simulated model) and r."""
    rng = np.random.default_rng(seed)
    truth = {p: rng.uniform(lo, hi, n_subjects) for p, (lo, hi) in RECOVERY_RANGES.items()}
    trials = simulate("revealed-belief", "dissonant", n_subjects, seed, {**truth, "noise": noise}, design=design)
    fits = MODELS["dissonant"].fit_mle(trials)
    table = fits.assign(**{f"true_{p}": v for p, v in truth.items()})
    r = {p: float(np.corrcoef(table[f"true_{p}"], table[p])[0, 1]) for p in truth}
    return table, r


def identifiability(n_subjects: int = 30, seed: int = 0) -> dict[str, Any]:
    """Study 5: β_first and β_label recovered from preference items, with and without the swap."""
    out: dict[str, Any] = {}
    for orders in (("marked-first", "marked-second"), ("marked-first",)):
        design = RevealedDesign(scenarios=("preference",), preference_orders=orders, channels=("revb",))
        rng = np.random.default_rng(seed)
        truth = {"beta_first": rng.uniform(0, 3, n_subjects), "beta_label": rng.uniform(-1, 2, n_subjects)}
        trials = simulate("revealed-belief", "dissonant", n_subjects, seed, {**truth, "noise": 0.02},
                          design=design)
        fits = MODELS["dissonant"].fit_mle(trials)
        key = "both orders" if len(orders) == 2 else "marked label always first"
        out[key] = {
            "r_beta_first": float(np.corrcoef(truth["beta_first"], fits["beta_first"])[0, 1]),
            "r_beta_label": float(np.corrcoef(truth["beta_label"], fits["beta_label"])[0, 1]),
            "r_sum": float(np.corrcoef(truth["beta_first"] + truth["beta_label"],
                                       fits["beta_first"] + fits["beta_label"])[0, 1]),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=None, help="write the tables here")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args(argv)
    reps = 2000 if args.quick else 20_000
    floor = noise_floor_table(reps=reps)
    for row in floor.to_dict("records"):
        print(json.dumps({"study": "noise floor", **{k: round(v, 4) if isinstance(v, float) else v
                                                     for k, v in row.items()}}), flush=True)
    for k, p1 in ((4, 0.8), (4, 0.30), (4, 0.35), (2, 0.6), (6, 0.26)):
        print(json.dumps({"study": "samples to detect first-option bias", "k": k, "p_first": p1,
                          "shift": round(p1 - 1 / k, 3), "n_for_power_0.8": samples_for_first_option(k, p1)}),
              flush=True)
    for delta in (0.05, 0.1):
        print(json.dumps({"study": "samples to detect anchoring (per condition)", "k": 6, "shift": delta,
                          "n_for_power_0.8": samples_for_anchoring(delta, reps=1000 if args.quick else 4000)}),
              flush=True)
    n_sub = 8 if args.quick else 40
    table, r = recovery(n_subjects=n_sub)
    print(json.dumps({"study": "dissonant MLE recovery (exact distributions, noise 0.02)", "subjects": n_sub,
                      "r": {k: round(v, 3) for k, v in r.items()}}), flush=True)
    ident = identifiability(n_subjects=8 if args.quick else 30)
    print(json.dumps({"study": "beta_first vs beta_label on preference items", **{
        k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in ident.items()}}), flush=True)
    if args.output is not None:
        args.output.mkdir(parents=True, exist_ok=True)
        floor.to_csv(args.output / "noise_floor.csv", index=False)
        table.to_csv(args.output / "recovery.csv", index=False)
        (args.output / "identifiability.json").write_text(json.dumps(ident, indent=1))


if __name__ == "__main__":
    main()
