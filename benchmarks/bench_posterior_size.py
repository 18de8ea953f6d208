"""Size of ``posterior.nc`` from ``cogtestbed fit``: 50 RW± subjects x 96 trials, 4 chains x 1000 draws.

Before: arviz's ``to_netcdf`` (zlib without shuffle) of the whole InferenceData, pointwise
log-likelihood included (4 x 1000 x 4800 float64 values, most of the file).  After: what
``fit`` writes by default (:func:`cogtestbed.api.fitting.write_posterior`: shuffle + zlib, no
pointwise log-likelihood), and with ``--log-likelihood``.  Prints one JSON line of sizes in MB.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from cogtestbed.api.fitting import write_posterior
from cogtestbed.inference.hierarchical import fit_hierarchical
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

SUBJECTS, DRAWS, CHAINS = 50, 1000, 4


def main() -> None:
    exp = get_experiment("instrumental-learning")
    trials = simulate(exp, "rw-pm", SUBJECTS, 0, {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0})
    start = time.process_time()
    res = fit_hierarchical(exp.model("rw-pm"), trials, draws=DRAWS, tune=DRAWS, chains=CHAINS, seed=0, warn=False)
    fit_cpu = time.process_time() - start
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before.nc"
        res.idata.to_netcdf(str(before))
        after = write_posterior(res.idata, Path(tmp) / "after.nc")
        with_ll = write_posterior(res.idata, Path(tmp) / "with_ll.nc", log_likelihood=True)
        sizes = {p.stem: round(p.stat().st_size / 1e6, 2) for p in (before, after, with_ll)}
    print(json.dumps({"subjects": SUBJECTS, "trials": int(len(trials) / SUBJECTS), "chains": CHAINS,
                      "draws": DRAWS, "fit_cpu_s": round(fit_cpu, 1), "size_mb": sizes,
                      "reduction": round(sizes["before"] / sizes["after"], 1)}))


if __name__ == "__main__":
    main()
