"""How much invalid and random answers bias headline parameters, ignored vs modelled.

Synthetic subjects with known parameters answer invalidly at rate ε_invalid and uniformly at
random at rate ε_random on every lapse unit (a step, or a whole multi-step trial: a two-step trial,
a BART balloon; :class:`cogtestbed.lapse.Lapse`, default 8 % + 5 %).
Each family is fitted by maximum likelihood four ways:

* ``clean``: data without lapses, the model without a lapse term (the reference);
* ``ignored``: lapsed data, the model without a lapse term (invalid trials are masked out, random
  answers are taken at face value);
* ``fixed``: lapsed data, the lapse mixture p = (1 − ε)·p_model + ε/|A| with ε fixed at the
  simulated random-answer rate (:func:`cogtestbed.inference.base.with_lapse`; e.g. a rate measured
  on a pilot run);
* ``modelled``: lapsed data, the lapse mixture with ε fitted per subject.

For the headline parameter of each family — RW± optimism bias α⁺ − α⁻ (instrumental learning,
Lefebvre et al. 2017), the model-based weight w (two-step, Daw et al. 2011) and the horizon-6
information bonus A₆ (horizon task, Wilson et al. 2014), the mean target pumps on M = 32
balloons (BART, Lejuez et al. 2002; target model) and the slope w of the linear magnitude
observer (regression to the mean; Ma, Wang & Fountas 2025) — and for its noise parameter
(β, β, T₆, the target's logistic scale, σ_dec; scored on the log scale), it prints the recovery bias
(mean estimate − truth), its Monte-Carlo SE, r, RMSE and the coverage of 90 % Wald intervals
(observed information: the Hessian of the NLL at the MLE by central differences of the exact
gradient; a contrast's SE by the delta method; subjects whose Hessian is not positive definite,
typically estimates on a bound, count as not covered and are reported as ``no_se``).

Run: ``python benchmarks/studies/lapse_bias.py [--subjects N] [--invalid 0.08] [--random 0.05]``.
The same recovery (without Wald coverage) runs from the command line, e.g.
``cogtestbed recover --model rw-pm --lapse-invalid 0.08 --lapse-random 0.05 --lapse fit``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.base import CognitiveModel
from cogtestbed.lapse import Lapse
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec
from cogtestbed.studies.study_data import (
    design_for_trials,
    draw_true_parameters,
    fitted_model,
    simulate_model,
)

#: z of a two-sided 90 % interval.
Z90 = 1.6448536269514722
#: Relative step of the finite-difference Hessian.
HESS_STEP = 1e-4


@dataclass(frozen=True)
class Family:
    """One experiment of the study: its model, headline, true-parameter ranges and design."""

    experiment: str
    model: str
    headline: str
    noise: str
    ranges: Mapping[str, tuple[float, float]]
    design: Mapping[str, Any] = field(default_factory=dict)
    runs: int = 1
    subjects_scale: float = 1.0


FAMILIES = (
    Family("instrumental-learning", "rw-pm", "optimism_bias", "beta",
           {"alpha_pos": (0.1, 0.9), "alpha_neg": (0.1, 0.9), "beta": (2.0, 10.0)},
           design={"visits_per_casino": 48}),
    Family("two-step", "hybrid", "w", "beta",
           {"w": (0.0, 1.0), "alpha": (0.2, 0.8), "beta": (2.0, 8.0), "lam": (0.0, 1.0), "persev": (-0.5, 0.5)},
           design={"n_days": 200}, subjects_scale=0.5),
    Family("horizon", "info-bonus", "bonus_h6", "temperature_h6",
           {"bonus_h1": (-5.0, 5.0), "bonus_h6": (0.0, 20.0), "temperature_h1": (2.0, 10.0),
            "temperature_h6": (2.0, 20.0), "bias": (-3.0, 3.0)}, runs=200),
    Family("bart", "target", "target_32", "noise",
           {"target_128": (10.0, 80.0), "target_32": (4.0, 24.0), "target_8": (1.0, 6.0), "noise": (0.5, 4.0)},
           design={"balloons_per_type": 30}),
    Family("magnitude", "linear", "w", "sigma_dec",
           {"w": (0.3, 1.0), "b": (0.0, 0.3), "sigma_dec": (0.05, 0.2)},
           design={"conditions": ("base",), "modalities": ("text",), "trials_per_session": 50}),
)

#: (name, lapsed data, lapse term: None, "fit" or "fixed" at the simulated random rate).
CONDITIONS = (("clean", False, None), ("ignored", True, None), ("fixed", True, "fixed"), ("modelled", True, "fit"))


def headline_weights(model: CognitiveModel, headline: str) -> np.ndarray:
    """Weights of the headline over the model's parameters (a parameter or a named contrast)."""
    contrast = model.contrasts.get(headline, {headline: 1.0})
    return np.array([contrast.get(name, 0.0) for name in model.parameters.names])


def hessian(model: CognitiveModel, theta: np.ndarray, data: Any) -> np.ndarray:
    """Hessian of the NLL at ``theta`` (natural scale): differences of the exact gradient, central
    where both steps stay inside the bounds, one-sided otherwise."""
    k = len(theta)
    out = np.empty((k, k))
    for i, p in enumerate(model.parameters):
        h = HESS_STEP * max(1.0, abs(theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] = min(theta[i] + h, p.upper)
        down[i] = max(theta[i] - h, p.lower)
        out[:, i] = (model.nll_grad(up, data)[1] - model.nll_grad(down, data)[1]) / (up[i] - down[i])
    return 0.5 * (out + out.T)


def wald_se(model: CognitiveModel, theta: np.ndarray, data: Any, weights: np.ndarray) -> float:
    """SE of the weighted sum of parameters from the observed information (NaN: not PD)."""
    h = hessian(model, theta, data)
    try:
        np.linalg.cholesky(h)
    except np.linalg.LinAlgError:
        return float("nan")
    var = float(weights @ np.linalg.solve(h, weights))
    return float(np.sqrt(var)) if var > 0 else float("nan")


def run_condition(fam: Family, name: str, lapse: Lapse | None, lapse_fit: str | float | None, subjects: int,
                  seed: int) -> pd.DataFrame:
    """Simulate ``subjects`` subjects (the same true parameters and sessions in every condition),
    fit, and return one row per subject and scored quantity: truth, estimate, Wald SE."""
    exp = get_experiment(fam.experiment)
    spec = study_spec(kind="recovery", experiment=fam.experiment, models=(fam.model,), subjects=(subjects,),
                     runs=(fam.runs,), design=dict(fam.design), sampler="uniform", ranges=dict(fam.ranges),
                     seed=seed, lapse=lapse, lapse_fit=lapse_fit)
    model = exp.model(fam.model)
    _, true = draw_true_parameters(spec, model, subjects, np.random.default_rng(seed))
    design = design_for_trials(exp, None, spec.design)
    trials = simulate_model(spec, exp, fam.model, true, subjects, seed + 1, design, fam.runs)
    fitter = fitted_model(spec, model)
    fits = fitter.fit_mle(trials)
    data = fitter.subject_data(trials)
    order = {s: i for i, s in enumerate(sorted(trials["subject"].unique()))}
    log_noise = model.parameters.parameters[model.parameters.names.index(fam.noise)].transform == "log"
    rows = []
    for quantity in (fam.headline, fam.noise):
        w_base = headline_weights(model, quantity)
        weights = np.concatenate([w_base, np.zeros(len(fitter.parameters) - len(w_base))])
        log = quantity == fam.noise and log_noise
        for _, r in fits.iterrows():
            i = order[r["subject"]]
            theta = np.array([r[p] for p in fitter.parameters.names], dtype=np.float64)
            truth = float(sum(w * true[p][i] for p, w in zip(model.parameters.names, w_base, strict=True)))
            est = float(weights @ theta)
            se = wald_se(fitter, theta, data[r["subject"]], weights)
            if log:  # a log-scale parameter is scored on the log scale (delta method: se / estimate)
                truth, est, se = np.log(truth), np.log(max(est, 1e-12)), se / max(est, 1e-12)
            rows.append({"family": fam.experiment, "quantity": quantity + (" (log)" if log else ""),
                         "condition": name, "subject": r["subject"], "true": truth, "estimate": est, "se": se,
                         "lapse_hat": float(r["lapse"]) if "lapse" in r else np.nan,
                         "invalid_share": float(1.0 - trials.loc[trials["subject"] == r["subject"],
                                                                 "valid"].mean())})
    return pd.DataFrame(rows)


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Bias (± its Monte-Carlo SE), median bias (robust to estimates run off to a bound), r, RMSE
    and 90 % Wald coverage per family, quantity and condition."""
    out = []
    for (fam, head, cond), g in rows.groupby(["family", "quantity", "condition"], sort=False):
        err = g["estimate"] - g["true"]
        covered = (np.abs(err) <= Z90 * g["se"]).fillna(False)
        out.append({"family": fam, "quantity": head, "condition": cond, "n": len(g),
                    "bias": err.mean(), "bias_se": err.std(ddof=1) / np.sqrt(len(g)), "median_bias": err.median(),
                    "r": np.corrcoef(g["true"], g["estimate"])[0, 1], "rmse": float(np.sqrt((err ** 2).mean())),
                    "coverage90": float(covered.mean()), "no_se": int(g["se"].isna().sum()),
                    "lapse_hat_median": g["lapse_hat"].median(), "invalid_share": g["invalid_share"].mean()})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subjects", type=int, default=100, help="subjects per family (two-step: half)")
    parser.add_argument("--invalid", type=float, default=0.08)
    parser.add_argument("--random", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--families", nargs="*", default=[f.experiment for f in FAMILIES])
    parser.add_argument("-o", "--output", default=None, help="write the per-subject rows (.parquet)")
    args = parser.parse_args()
    lapse = Lapse(args.invalid, args.random)
    parts = []
    for fam in FAMILIES:
        if fam.experiment not in args.families:
            continue
        n = max(2, int(round(args.subjects * fam.subjects_scale)))
        for name, lapsed, term in CONDITIONS:
            t0 = time.process_time()
            lapse_fit = args.random if term == "fixed" else term
            parts.append(run_condition(fam, name, lapse if lapsed else None, lapse_fit, n, args.seed))
            print(f"{fam.experiment:22s} {name:9s} {n} subjects, {time.process_time() - t0:.0f} s CPU", flush=True)
    rows = pd.concat(parts, ignore_index=True)
    if args.output:
        rows.to_parquet(args.output)
    table = summarise(rows)
    print(f"\nlapse: {args.invalid:.0%} invalid + {args.random:.0%} random answers per lapse unit (step, two-step "
          f"trial, BART balloon); seed {args.seed}")
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
