"""Prompt forms (issue 42): calibration of the hierarchical model's form-SD interval.

Each replicate simulates RW± subjects (α⁺ = α⁻ = 0.5, β = 5, CogBench's 96 trials) in 8 prompt
forms × 10 subjects, each form shifting logit α⁺ by a Normal(0, ``--form-sd``) offset (0.15: the
settings of the MLE figure, ``prompt_forms_rwpm.py``), fits the hierarchical model with crossed
subject and form effects (:func:`~cogtestbed.inference.form_hierarchical.fit_forms_hierarchical`,
form effect on α⁺, 4 chains) and records whether the 95 % central posterior interval of
``alpha_pos_form_sigma`` holds the true SD, its posterior median, and the fit's R-hat, ESS and
divergences.  Prints one JSON line: the coverage with its Monte-Carlo SE (target 85-95 %) and its
exact (Clopper-Pearson) 95 % interval (the binomial SE is 0 when every interval covers), the
bias of the posterior median with its MC SE, the same coverage among the fits that converged
(every parameter's R-hat ≤ 1.01, bulk ESS ≥ 400, no divergence), how many fits' form SD alone
met R-hat ≤ 1.01 and bulk ESS ≥ 400, and the diagnostics' spread.

Run: ``nice -n 10 python benchmarks/studies/prompt_forms_hierarchical.py --studies 80 --rows FILE``
(slow: about a minute of one core a replicate after the first's compilation; ``--part I/N`` runs
every N-th replicate from the I-th, so parts run side by side share one run's seeds).  ``--rows
FILE`` appends each replicate's row to a CSV as it finishes (what completed survives a stop);
``--summarise FILE [FILE ...]`` summarises CSVs (the parts' rows together).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.forms import FormDesign
from cogtestbed.inference.form_hierarchical import fit_forms_hierarchical
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def replicate(seed: int, forms: int, per_form: int, sd: float, draws: int) -> dict[str, Any]:
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    table = simulate(exp, "rw-pm", forms * per_form, seed, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                     forms=FormDesign(tuple(range(forms)), {"alpha_pos": sd}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_forms_hierarchical(model, table, ["alpha_pos"], draws=draws, chains=4, seed=seed, warn=False,
                                     log_likelihood=False, cores=1)
    s = fit.form_sd["alpha_pos"] if fit.form_sd else {}
    d = fit.diagnostics
    lo, hi = s["interval"]
    return {"seed": seed, "true": sd, "median": s["median"], "low": lo, "high": hi, "covered": lo <= sd <= hi,
            "form_sd_rhat": s["r_hat"], "form_sd_ess": s["ess_bulk"], "max_rhat": d.max_rhat,
            "min_ess_bulk": d.min_ess_bulk, "divergences": d.divergences, "seconds": d.seconds}


def summarise(rows: pd.DataFrame) -> dict[str, Any]:
    r = len(rows)
    covered = rows["covered"].astype(bool)
    cov = float(covered.mean())
    ok = (rows["max_rhat"] <= 1.01) & (rows["min_ess_bulk"] >= 400) & (rows["divergences"] == 0)
    err = rows["median"] - rows["true"]
    cov_ok = float(covered[ok].mean()) if ok.any() else None
    from scipy import stats

    ci = stats.binomtest(int(covered.sum()), r).proportion_ci(0.95, method="exact")
    return {"n_studies": r, "coverage": cov, "mc_se": math.sqrt(cov * (1 - cov) / r),
            "coverage_clopper_pearson_95": [float(ci.low), float(ci.high)], "level": 0.95,
            "median_bias": float(err.mean()), "median_bias_mc_se": float(err.std(ddof=1) / math.sqrt(r)) if r > 1
            else None, "mean_posterior_median": float(rows["median"].mean()),
            "mean_interval": [float(rows["low"].mean()), float(rows["high"].mean())],
            "converged": int(ok.sum()), "coverage_converged": cov_ok,
            "form_sd_converged": int(((rows["form_sd_rhat"] <= 1.01) & (rows["form_sd_ess"] >= 400)).sum()),
            "max_form_sd_rhat": float(rows["form_sd_rhat"].max()),
            "max_rhat": float(rows["max_rhat"].max()), "median_max_rhat": float(rows["max_rhat"].median()),
            "min_ess_bulk": float(rows["min_ess_bulk"].min()),
            "median_min_ess_bulk": float(rows["min_ess_bulk"].median()),
            "min_form_sd_ess": float(rows["form_sd_ess"].min()),
            "divergences": int(rows["divergences"].sum()),
            "fits_with_divergences": int((rows["divergences"] > 0).sum()),
            "median_seconds": float(rows["seconds"].median())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=20)
    ap.add_argument("--forms", type=int, default=8)
    ap.add_argument("--per-form", type=int, default=10)
    ap.add_argument("--form-sd", type=float, default=0.15)
    ap.add_argument("--draws", type=int, default=500, help="draws (and tuning steps) per chain")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--rows", type=Path, default=None)
    ap.add_argument("--part", default="0/1")
    ap.add_argument("--summarise", type=Path, nargs="+", default=None)
    args = ap.parse_args()
    start = time.perf_counter()
    if args.summarise is not None:
        rows = pd.concat([pd.read_csv(f) for f in args.summarise], ignore_index=True)
    else:
        part, parts = (int(x) for x in args.part.split("/"))
        seeds = np.random.SeedSequence(args.seed).generate_state(args.studies, dtype=np.uint32)[part::parts]
        out = []
        for s in seeds:
            out.append(replicate(int(s), args.forms, args.per_form, args.form_sd, args.draws))
            if args.rows is not None:
                pd.DataFrame(out[-1:]).to_csv(args.rows, mode="a", header=not args.rows.exists(), index=False)
        rows = pd.DataFrame(out)
    print(json.dumps({"study": f"rw-pm hierarchical forms model, form SD {args.form_sd} on logit α⁺, {args.forms} "
                      f"forms x {args.per_form} subjects x 96 trials, 4 chains x {args.draws} draws",
                      "seconds": round(time.perf_counter() - start), **summarise(rows)}), flush=True)


if __name__ == "__main__":
    main()
