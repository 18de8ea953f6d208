"""Studies of the revealed-belief family: sampling noise floors, samples needed to detect a bias,
parameter recovery and the β_first / β_label identifiability check.

``python benchmarks/studies/revealed_family.py [-o DIR] [--quick] [--only STUDY ...]`` prints every
figure as JSON lines (``--only hierarchical`` for study 7, which the default run leaves out).

1. **Noise floor** (sample-only APIs; this project's addition — the paper scores exact
   next-token distributions and has no noise floor or detection analysis, nor do studies 2–3):
   the metrics of an N-sample estimate of a uniform k-outcome distribution, for k = 2, 6, 12 and
   N = 100, 500, 1000, beside the table computed in this project's design notes
   (``shared/seeds/004_revealed_belief.md`` §8, "[computed]": not the paper's).
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
6. **κ recovery** over a range that crosses the identifiable limit (κ ≲ 15 with the Dirichlet
   ε floor; only items with excluded outcomes carry it), and on a design without such items.
7. **Hierarchical PyMC fit** (scenario-pooled) at a documented design: R-hat, bulk/tail ESS,
   divergences and the verdict, and per parameter r, bias and 50 % / 90 % interval coverage.
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
from cogtestbed.environments.revealed_floor import noise_floor
from cogtestbed.environments.revealed_items import SINGLE_OBSERVATIONS
from cogtestbed.inference.revealed_hierarchical import (
    SCENARIO_POOLED,
    SUBJECT_LEVEL,
    SUBJECT_LEVELS,
    dissonant_pymc_model,
)
from cogtestbed.inference.revealed_model import KAPPA_IDENTIFIED, MODELS
from cogtestbed.simulation import simulate

#: The noise-floor table of this project's design notes (``seeds/004_revealed_belief.md`` §8, computed
#: there by 20k simulations; the paper has no such table), mean / p95 of E[Chebyshev], for comparison.
DESIGN_NOTES_FLOOR = {(2, 100): (0.040, 0.100), (2, 500): (0.018, 0.044), (2, 1000): (0.012, 0.031),
                   (6, 100): (0.060, 0.097), (6, 500): (0.027, 0.045), (6, 1000): (0.019, 0.031),
                   (12, 100): (0.054, 0.077), (12, 500): (0.024, 0.035), (12, 1000): (0.017, 0.025)}
ALPHA = 0.05
POWER = 0.8
N_GRID = (5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000)


def noise_floor_table(reps: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """Study 1: simulated noise floor beside the design notes' computed one (columns
    ``design_notes_*``; not a published figure: the paper has none)."""
    rows = []
    for (k, n), (pub_mean, pub_p95) in DESIGN_NOTES_FLOOR.items():
        f = noise_floor(k, n, reps=reps, seed=seed)
        rows.append({"k": k, "n": n, **f, "design_notes_mean": pub_mean, "design_notes_p95": pub_p95})
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


#: Uniform ranges of the recovery study (biases in the range the paper's tables imply; κ over the
#: range exact distributions identify, :data:`~cogtestbed.inference.revealed_model.KAPPA_IDENTIFIED`).
RECOVERY_RANGES = {"tau": (0.5, 1.5), "beta_first": (0.0, 3.0), "beta_label": (-1.0, 2.0),
                   "beta_anchor": (-0.5, 1.5), "beta_round": (-1.0, 1.0), "beta_mid": (-1.0, 1.0),
                   "kappa": (1.0, 14.0), "theta": (0.0, 6.0), "beta_pos": (-1.0, 2.0)}


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


#: Design of the hierarchical recovery study: every scenario and variant, both channels, with the
#: dice narrowed to d6 and d10 (one and two dice: sums reach 10 and 20, so β_round is seen) and
#: the six single observations (24 items with excluded outcomes identify κ): 374 steps per
#: subject instead of 960, so that NUTS over 8 subjects stays within minutes on two cores.
HIERARCHICAL_DESIGN = {"dice_faces": (6, 10), "n_dice": (1, 2), "observations": SINGLE_OBSERVATIONS}
#: Uniform ranges of κ in the κ study: through the identifiable range and beyond the plateau.
KAPPA_STUDY_RANGE = (0.5, 20.0)


def kappa_recovery(n_subjects: int = 40, noise: float = 0.02, seed: int = 0) -> dict[str, Any]:
    """Study 6: κ over :data:`KAPPA_STUDY_RANGE` (other parameters as in :func:`recovery`).

    Reports r and the median absolute error for true κ ≤ :data:`KAPPA_IDENTIFIED` (where exact
    distributions identify it), the share of estimates ≥ :data:`KAPPA_IDENTIFIED` − 1 for true κ
    beyond (an estimate on the plateau is a lower bound), and, on a design without observation
    items, how far the estimate moves from its start (κ has no likelihood there)."""
    rng = np.random.default_rng([seed, 6])
    truth = {p: rng.uniform(lo, hi, n_subjects) for p, (lo, hi) in RECOVERY_RANGES.items()}
    truth["kappa"] = rng.uniform(*KAPPA_STUDY_RANGE, n_subjects)
    trials = simulate("revealed-belief", "dissonant", n_subjects, seed, {**truth, "noise": noise})
    est = MODELS["dissonant"].fit_mle(trials)["kappa"].to_numpy()
    true = truth["kappa"]
    inside = true <= KAPPA_IDENTIFIED
    no_obs = RevealedDesign(variants=("regular", "independent", "dependent"))
    t2 = simulate("revealed-belief", "dissonant", 4, seed, {k: v[:4] for k, v in truth.items()} | {"noise": noise},
                  design=no_obs)
    est2 = MODELS["dissonant"].fit_mle(t2)["kappa"].to_numpy()
    return {
        "n_identified": int(inside.sum()),
        "r_identified": float(np.corrcoef(true[inside], est[inside])[0, 1]),
        "median_abs_error_identified": float(np.median(np.abs(est[inside] - true[inside]))),
        "r_all": float(np.corrcoef(true, est)[0, 1]),
        "n_beyond": int((~inside).sum()),
        "share_beyond_estimated_large": float(np.mean(est[~inside] >= KAPPA_IDENTIFIED - 1.0)),
        "no_observation_items_estimates": [round(float(v), 3) for v in est2],
    }


def _scenario_trials(n_subjects: int, seed: int, params: dict[str, np.ndarray], design: RevealedDesign,
                     scenario_sd: float, rng: np.random.Generator) -> pd.DataFrame:
    """Simulated trials; with ``scenario_sd`` > 0 each scenario is played with the pooled biases
    shifted by its own Normal(0, scenario_sd) deviation per subject (the hierarchical model's
    scenario level)."""
    if scenario_sd <= 0:
        return simulate("revealed-belief", "dissonant", n_subjects, seed, params, design=design)
    parts = []
    for c, scen in enumerate(design.scenarios):
        shifted = dict(params)
        for name in SCENARIO_POOLED:
            shifted[name] = params[name] + scenario_sd * rng.normal(size=n_subjects)
        sub = design.model_copy(update={"scenarios": (scen,)})
        parts.append(simulate("revealed-belief", "dissonant", n_subjects, seed + 1000 * c, shifted, design=sub))
    return pd.concat(parts, ignore_index=True)


#: Dirichlet noise ν of the hierarchical study's subjects, drawn uniformly (models differ in how
#: noisy their distributions are; a common value would put the population SD of ν at 0).
HIERARCHICAL_NOISE = (0.01, 0.05)


def _worst(table: pd.DataFrame, n: int = 4) -> dict[str, dict[str, float]]:
    """The ``n`` free variables with the lowest bulk ESS, with their R-hat and ESS."""
    rows = table.sort_values("ess_bulk").head(n)
    return {str(i): {"r_hat": float(r["r_hat"]), "ess_bulk": float(r["ess_bulk"]), "ess_tail": float(r["ess_tail"])}
            for i, r in rows.iterrows()}


def hierarchical_recovery(n_subjects: int = 8, draws: int = 1000, tune: int = 1000, chains: int = 2,
                          scenario_sd: float = 0.0, seed: int = 0, subject_level: str = SUBJECT_LEVEL
                          ) -> dict[str, Any]:
    """Study 7: the scenario-pooled hierarchical PyMC fit of the dissonant agent at
    :data:`HIERARCHICAL_DESIGN` (subjects drawn from :data:`RECOVERY_RANGES`): sampler
    diagnostics (R-hat, bulk/tail ESS, divergences, verdict) and, per parameter, r between true
    values and posterior means, bias and the coverage of the central 50 % and 90 % intervals."""
    import warnings

    from cogtestbed.inference.hierarchical import ConvergenceWarning, fit_hierarchical

    rng = np.random.default_rng([seed, 7])
    truth = {p: rng.uniform(lo, hi, n_subjects) for p, (lo, hi) in RECOVERY_RANGES.items()}
    truth["noise"] = rng.uniform(*HIERARCHICAL_NOISE, n_subjects)
    design = RevealedDesign(**HIERARCHICAL_DESIGN)
    trials = _scenario_trials(n_subjects, seed, truth, design, scenario_sd, rng)
    pm_model = dissonant_pymc_model(MODELS["dissonant"], trials, subject_level=subject_level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = fit_hierarchical(pm_model, trials, draws=draws, tune=tune, chains=chains, seed=seed,
                               log_likelihood=False)
    summ = fit.subject_summary()
    rows = {}
    for name, true in truth.items():
        s = summ[summ["parameter"] == name].set_index("subject").loc[list(dict.fromkeys(trials["subject"]))]
        mean = s["mean"].to_numpy()
        rows[name] = {
            "r": float(np.corrcoef(true, mean)[0, 1]) if np.std(true) > 0 else None,
            "bias": float(np.mean(mean - true)),
            "cover50": float(np.mean((s["lo50"] <= true) & (true <= s["hi50"]))),
            "cover90": float(np.mean((s["lo90"] <= true) & (true <= s["hi90"]))),
        }
    return {"subjects": n_subjects, "steps": int(len(trials)), "draws": draws, "tune": tune, "chains": chains,
            "scenario_sd": scenario_sd, "subject_level": subject_level,
            "worst_variables": _worst(fit.diagnostics.table),
            "diagnostics": fit.diagnostics.as_dict() | {"report": fit.diagnostics.report()},
            "recovery": rows}


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


STUDIES = ("floor", "detect", "recovery", "kappa", "identifiability", "hierarchical")


def _round(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v) for v in obj]
    return obj


def _emit(record: dict[str, Any]) -> None:
    print(json.dumps(_round(record)), flush=True)


def _parser() -> argparse.ArgumentParser:
    """The command line of the revealed-belief validation studies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=None, help="write the tables here")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--only", choices=STUDIES, action="append", default=None,
                        help="run only these studies (repeatable; default: all but hierarchical)")
    parser.add_argument("--subjects", type=int, default=8, help="hierarchical study: subjects")
    parser.add_argument("--draws", type=int, default=1000, help="hierarchical study: draws (= tuning steps)")
    parser.add_argument("--chains", type=int, default=4, help="hierarchical study: chains")
    parser.add_argument("--scenario-sd", type=float, default=0.0,
                        help="hierarchical study: true SD of the per-scenario bias deviations")
    parser.add_argument("--subject-level", choices=SUBJECT_LEVELS, default=SUBJECT_LEVEL,
                        help="hierarchical study: parameterisation of the population -> subject level (data: the "
                             "data's choice per parameter, the product's default)")
    return parser


def _detect_study(quick: bool) -> None:
    """Print the samples needed to detect first-option bias and anchoring at power 0.8."""
    for k, p1 in ((4, 0.8), (4, 0.30), (4, 0.35), (2, 0.6), (6, 0.26)):
        _emit({"study": "samples to detect first-option bias", "k": k, "p_first": p1,
               "shift": round(p1 - 1 / k, 3), "n_for_power_0.8": samples_for_first_option(k, p1)})
    for delta in (0.05, 0.1):
        _emit({"study": "samples to detect anchoring (per condition)", "k": 6, "shift": delta,
               "n_for_power_0.8": samples_for_anchoring(delta, reps=1000 if quick else 4000)})


def _hierarchical_study(args: argparse.Namespace) -> None:
    """Print the hierarchical PyMC fit of the dissonant agent and its diagnostics report."""
    res = hierarchical_recovery(n_subjects=args.subjects, draws=args.draws, tune=args.draws, chains=args.chains,
                                scenario_sd=args.scenario_sd, subject_level=args.subject_level)
    _emit({"study": "hierarchical PyMC fit of the dissonant agent (scenario-pooled)",
           "design": {k: list(v) for k, v in HIERARCHICAL_DESIGN.items()},
           **{k: v for k, v in res.items() if k != "diagnostics"},
           "diagnostics": {k: v for k, v in res["diagnostics"].items() if k != "problems"}})
    print(res["diagnostics"]["report"], flush=True)


def _write_tables(out: dict[str, Any], output: Path) -> None:
    """Write the studies' tables that were run under ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    if "floor" in out:
        out["floor"].to_csv(output / "noise_floor.csv", index=False)
    if "recovery" in out:
        out["recovery"].to_csv(output / "recovery.csv", index=False)
    if "identifiability" in out:
        (output / "identifiability.json").write_text(json.dumps(out["identifiability"], indent=1))


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    only = set(args.only or [s for s in STUDIES if s != "hierarchical"])
    reps = 2000 if args.quick else 20_000
    out: dict[str, Any] = {}
    if "floor" in only:
        out["floor"] = floor = noise_floor_table(reps=reps)
        for row in floor.to_dict("records"):
            _emit({"study": "noise floor", **row})
    if "detect" in only:
        _detect_study(args.quick)
    if "recovery" in only:
        n_sub = 8 if args.quick else 40
        out["recovery"], r = recovery(n_subjects=n_sub)
        _emit({"study": "dissonant MLE recovery (exact distributions, noise 0.02)", "subjects": n_sub, "r": r})
    if "kappa" in only:
        _emit({"study": f"kappa MLE recovery, true kappa ~ U{KAPPA_STUDY_RANGE}, identified up to "
                        f"{KAPPA_IDENTIFIED}", **kappa_recovery(n_subjects=10 if args.quick else 40)})
    if "identifiability" in only:
        out["identifiability"] = ident = identifiability(n_subjects=8 if args.quick else 30)
        _emit({"study": "beta_first vs beta_label on preference items", **ident})
    if "hierarchical" in only:
        _hierarchical_study(args)
    if args.output is not None:
        _write_tables(out, args.output)


if __name__ == "__main__":
    main()
