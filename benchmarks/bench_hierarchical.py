"""Hierarchical RW± (50 subjects x 96 trials, 4 chains x 1000 draws): wall time and diagnostics.

Target: <= 60 s on 2 cores and a converged fit on every repetition: max R-hat <= 1.01, min bulk
AND tail ESS >= 100 per chain, no divergences (the package's own checks,
:class:`~cogtestbed.inference.hierarchical.Diagnostics`).  Prints one JSON line per repetition
(the compile time, first call, is reported separately from the sampling of a second data set of
the same shape, which reuses the compiled model, as studies do) and a closing line with the
verdict; a repetition that fails a check is reported as NOT converged and the script exits 1.

A run that fails only its ESS or R-hat checks is sampled again with twice the draws per chain, up
to :data:`MAX_DRAWS` (``draws_per_chain`` says how many the reported run took): the first data set's
posterior of ``alpha_pos_sigma`` has a long tail towards 0 (2.5 % quantile 0.07, median 0.69), whose
tail ESS from 4 × 1000 draws varies from 82 to 490 with the seed.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from cogtestbed.inference.hierarchical import fit_hierarchical, sample_hierarchical_prior
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

WALL_TARGET_S = 60.0
#: A run short of the ESS floor is sampled again with twice the draws per chain, up to this many
#: (``fit_hierarchical(max_draws=...)``, as ``cogtestbed fit --max-draws``).
MAX_DRAWS = 4000


def main() -> None:
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    rng = np.random.default_rng(2024)
    rows = []
    for rep in range(2):
        _, true = sample_hierarchical_prior(model.parameters, 50, rng)
        trials = simulate(exp, "rw-pm", 50, 100 + rep, true)
        start = time.perf_counter()
        fit = fit_hierarchical(model, trials, draws=1000, tune=1000, chains=4, seed=rep, cores=2, warn=False,
                               max_draws=MAX_DRAWS)
        wall = time.perf_counter() - start
        d = fit.diagnostics
        rows.append({"rep": rep, "wall_s": round(wall, 1), "sampling_s": round(d.seconds, 1),
                     "max_rhat": round(d.max_rhat, 4), "min_ess_bulk": round(d.min_ess_bulk),
                     "min_ess_tail": round(d.min_ess_tail), "divergences": d.divergences,
                     "ess_floor": d.ess_floor, "draws_per_chain": d.n_draws, "converged": d.ok, "verdict": d.verdict,
                     "sampler": d.sampler, "compiled": rep == 0})
        print(json.dumps(rows[-1]), flush=True)
    converged = all(r["converged"] for r in rows)
    fast = rows[-1]["wall_s"] <= WALL_TARGET_S
    print(json.dumps({"benchmark": "hierarchical rw-pm 50x96 4x1000", "converged": converged,
                      "checks": "R-hat, bulk ESS, tail ESS, divergences", "wall_target_met": fast,
                      "target_met": converged and fast,
                      "verdict": "converged" if converged else "NOT converged"}))
    sys.exit(0 if converged else 1)


if __name__ == "__main__":
    main()
