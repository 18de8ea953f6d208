"""Hierarchical RW± (50 subjects x 96 trials, 4 chains x 1000 draws): wall time and diagnostics.

Target: <= 60 s on 2 cores, R-hat <= 1.01, no divergences.  Prints one JSON line; the
compile time (first call) is reported separately from the sampling of a second data set of the
same shape, which reuses the compiled model (what studies do).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from cogtestbed.inference.hierarchical import fit_hierarchical, sample_hierarchical_prior
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def main() -> None:
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    rng = np.random.default_rng(2024)
    rows = []
    for rep in range(2):
        _, true = sample_hierarchical_prior(model.parameters, 50, rng)
        trials = simulate(exp, "rw-pm", 50, 100 + rep, true)
        start = time.perf_counter()
        fit = fit_hierarchical(model, trials, draws=1000, tune=1000, chains=4, seed=rep, cores=2)
        wall = time.perf_counter() - start
        d = fit.diagnostics
        rows.append({"rep": rep, "wall_s": round(wall, 1), "sampling_s": round(d.seconds, 1),
                     "max_rhat": round(d.max_rhat, 4), "min_ess_bulk": round(d.min_ess_bulk),
                     "divergences": d.divergences, "sampler": d.sampler,
                     "compiled": rep == 0})
        print(json.dumps(rows[-1]), flush=True)
    ok = rows[-1]["wall_s"] <= 60 and rows[-1]["max_rhat"] <= 1.01 and rows[-1]["divergences"] == 0
    print(json.dumps({"benchmark": "hierarchical rw-pm 50x96 4x1000", "target_met": ok}))
    sys.exit(0)


if __name__ == "__main__":
    main()
