"""Model-basedness of Shahar et al. (2019)'s 554 two-step participants, read from Psych-201
(issue 52, first done-when bullet).

Prints, each figure with its interval:

* ``import``: participants, trials per participant and per measurement (min / median / max), sessions
  (``--from psych201``);
* ``cogbench``: CogBench's model-basedness (the reward × transition coefficient of the pooled stay
  regression, Coda-Forno et al. 2024) on all participants, with its OLS 95% interval, a 95%
  participant-bootstrap interval, and the per-participant coefficient (median, IQR, share > 0);
* ``mle``: the hybrid model's w (Daw et al. 2011) fitted per participant by MLE: median and mean with
  95% participant-bootstrap intervals, the share at the bounds 0 / 1, the unidentified count;
* ``hierarchical``: the hybrid model fitted hierarchically (PyMC; the population w is
  ``w_pop``, the logistic of the group mean on the logit scale) on ``--hier-subjects`` participants
  drawn with ``--seed`` (all 554 take hours on a 2-core machine), with R-hat, ESS and divergences.

    PYTHONPATH=. python benchmarks/studies/psych201_shahar.py --part import
    PYTHONPATH=. python benchmarks/studies/psych201_shahar.py --part cogbench
    PYTHONPATH=. python benchmarks/studies/psych201_shahar.py --part mle
    PYTHONPATH=. python benchmarks/studies/psych201_shahar.py --part hierarchical --hier-subjects 30 --draws 500

Each part prints one JSON line.  Intervals from the bootstrap resample participants (``--boot``
draws, seeded); the bootstrap and the subset are this study's choices, not a paper's.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import cogtestbed as ct
from cogtestbed.api.core import read_table
from cogtestbed.inference.twostep import regression_summary, stay_design

DATA = Path(__file__).resolve().parents[3] / "shared/data/psych201/shahar2019twosteptask/prompts.jsonl.zip"


def _interval(values: np.ndarray, stat: Any, boot: int, rng: np.random.Generator) -> list[float]:
    """95% percentile interval of ``stat`` over participant resamples of ``values``."""
    idx = rng.integers(0, len(values), size=(boot, len(values)))
    draws = np.array([stat(values[i]) for i in idx])
    return [round(float(q), 4) for q in np.quantile(draws, [0.025, 0.975])]


def import_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Participants, trials per participant and per measurement (session; min / median / max), the
    median share of rare transitions."""
    n = table.groupby("subject").size()
    per_session = table.groupby(["session", "subject"]).size()
    return {
        "part": "import",
        "participants": int(table["subject"].nunique()),
        "trials_min": int(n.min()),
        "trials_median": float(n.median()),
        "trials_max": int(n.max()),
        "sessions": sorted(int(s) for s in table["session"].unique()),
        "session_trials_min_median_max": {
            int(s): [int(c.min()), float(c.median()), int(c.max())] for s, c in per_session.groupby(level="session")
        },
        "rare_share_median": round(float(1 - table.groupby("subject")["common"].mean().median()), 3),
    }


def cogbench_part(table: pd.DataFrame, boot: int, seed: int) -> dict[str, Any]:
    """CogBench's pooled metric, a participant bootstrap of it, and per-participant coefficients."""
    pooled = ct.metrics("two-step", table)["metrics"]
    xtx, xty, per = [], [], []
    for _, rows in table.groupby("subject", sort=True):
        x, y = stay_design(rows)
        xtx.append(x.T @ x)
        xty.append(x.T @ y)
        per.append(regression_summary(x, y)["model_basedness"])
    a, b, coef = np.array(xtx), np.array(xty), np.array(per)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(boot, len(a)))
    boot_mb = np.array([np.linalg.solve(a[i].sum(0), b[i].sum(0))[3] for i in idx])
    return {
        "part": "cogbench",
        "participants": len(a),
        "model_basedness": round(pooled["model_basedness"], 4),
        "ols_95": [
            round(pooled["model_basedness"] - pooled["model_basedness_ci"], 4),
            round(pooled["model_basedness"] + pooled["model_basedness_ci"], 4),
        ],
        "bootstrap_95": [round(float(q), 4) for q in np.quantile(boot_mb, [0.025, 0.975])],
        "per_participant_median": round(float(np.median(coef)), 4),
        "per_participant_iqr": [round(float(q), 4) for q in np.quantile(coef, [0.25, 0.75])],
        "share_positive": round(float(np.mean(coef > 0)), 3),
        "cogbench_human_reference": 0.0263,
        "n_pairs": pooled["n_pairs"],
        "boot": boot,
    }


def mle_part(table: pd.DataFrame, subjects: int | None, boot: int, seed: int) -> dict[str, Any]:
    """Per-participant MLE of the hybrid model: w's distribution and bootstrap intervals."""
    if subjects is not None:
        table = table[table["subject"] < subjects]
    t0 = time.perf_counter()
    fits = ct.fit("two-step", table, model="hybrid")
    seconds = time.perf_counter() - t0
    # every participant with an estimate: those flagged (a failed fit, an interval unbounded within
    # the declared range or open at one bound) keep theirs, and dropping them would drop the w = 0 and
    # w = 1 participants
    ok = fits[np.isfinite(fits["w"].to_numpy(dtype=float))]
    w = ok["w"].to_numpy(dtype=float)
    rng = np.random.default_rng(seed)
    flagged = fits.loc[~fits["identified"], "null_reason"].astype(str)
    return {
        "part": "mle",
        "participants": len(fits),
        "with_estimate": len(ok),
        "flagged": int((~fits["identified"]).sum()),
        "flagged_w": int(flagged.str.contains("w's likelihood-ratio").sum()),
        "flagged_lam_or_other": int((~flagged.str.contains("w's likelihood-ratio")).sum()),
        "w_median": round(float(np.median(w)), 3),
        "w_median_95": _interval(w, np.median, boot, rng),
        "w_mean": round(float(w.mean()), 3),
        "w_mean_95": _interval(w, np.mean, boot, rng),
        "w_iqr": [round(float(q), 3) for q in np.quantile(w, [0.25, 0.75])],
        # None where every participant is flagged (no unflagged median to give)
        "w_median_unflagged": (round(float(np.median(fits.loc[fits["identified"], "w"])), 3)
                               if fits["identified"].any() else None),
        "share_w_at_0": round(float(np.mean(w < 1e-3)), 3),
        "share_w_at_1": round(float(np.mean(w > 1 - 1e-3)), 3),
        "converged": int(ok["converged"].sum()) if "converged" in ok else None,
        "seconds": round(seconds, 1),
        "boot": boot,
    }


def hierarchical_part(table: pd.DataFrame, subjects: int, draws: int, chains: int, seed: int) -> dict[str, Any]:
    """The hybrid model fitted hierarchically on ``subjects`` participants drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(table["subject"].unique(), size=min(subjects, table["subject"].nunique()), replace=False))
    chosen = table[table["subject"].isin(ids)]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the diagnostics are printed below
        post = ct.fit("two-step", chosen, model="hybrid", method="hierarchical", draws=draws, chains=chains, seed=seed)
    seconds = time.perf_counter() - t0
    w_pop = post.idata.posterior["w_pop"].values.ravel()
    w_subject = post.idata.posterior["w"].mean(dim=("chain", "draw")).values
    diag = post.diagnostics
    return {
        "part": "hierarchical",
        "participants": len(ids),
        "subset_seed": seed,
        "w_pop_mean": round(float(w_pop.mean()), 3),
        "w_pop_95": [round(float(q), 3) for q in np.quantile(w_pop, [0.025, 0.975])],
        "w_subject_posterior_mean_median": round(float(np.median(w_subject)), 3),
        # R-hat needs two chains: null (with its reason) for one
        "max_rhat": None if diag.max_rhat is None else round(diag.max_rhat, 3),
        "max_rhat_reason": diag.rhat_reason,
        "min_ess_bulk": round(diag.min_ess_bulk, 1),
        "min_ess_tail": round(diag.min_ess_tail, 1),
        "divergences": int(diag.divergences),
        "draws": draws,
        "tune": draws,
        "chains": chains,
        "sampler": diag.sampler,
        "seconds": round(seconds, 1),
        "converged": bool(diag.ok),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--part", choices=("import", "cogbench", "mle", "hierarchical", "all"), default="all")
    ap.add_argument("--mle-subjects", type=int, default=None, help="first N participants only (default all)")
    ap.add_argument("--hier-subjects", type=int, default=30)
    ap.add_argument("--draws", type=int, default=500, help="draws and tuning steps per chain")
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    table, source = read_table("two-step", args.data, "psych201")
    assert source == "psych201"
    print(json.dumps(import_summary(table)), flush=True)
    if args.part in ("cogbench", "all"):
        print(json.dumps(cogbench_part(table, args.boot, args.seed)), flush=True)
    if args.part in ("mle", "all"):
        print(json.dumps(mle_part(table, args.mle_subjects, args.boot, args.seed)), flush=True)
    if args.part in ("hierarchical", "all"):
        print(json.dumps(hierarchical_part(table, args.hier_subjects, args.draws, args.chains, args.seed)), flush=True)


if __name__ == "__main__":
    main()
