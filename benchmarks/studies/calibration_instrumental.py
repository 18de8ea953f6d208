"""Calibration of the hierarchical RW± fit: 90 % / 50 % interval coverage and SBC.

Data sets are drawn from the model's own hierarchical prior, so a correct sampler gives 90 %
intervals covering ~90 % of true subject values (target 85-95 % for every parameter) and uniform
SBC ranks (target: chi-square uniformity not rejected at p = 0.01).  Slow (minutes).
"""

from __future__ import annotations

import json
import sys

from cogtestbed.studies.driver import run_study, study_spec

EXP = "instrumental-learning"


def main(reps_cov: int = 20, reps_sbc: int = 100) -> None:
    spec = study_spec(kind="recovery", experiment=EXP, models=("rw-pm",), method="hierarchical",
                     subjects=(20,), reps=reps_cov, seed=11, draws=500, tune=500, chains=2)
    res = run_study(spec, workers=1)
    cell = next(iter(res.summary.values()))["parameters"]
    print(json.dumps({"study": f"hierarchical coverage rw-pm 20 subjects x 96 trials, {reps_cov} reps",
                      "seconds": round(res.seconds), **{k: {m: round(v[m], 3) for m in
                      ("r", "coverage50", "coverage90") if m in v} for k, v in cell.items()}}),
          flush=True)
    spec = study_spec(kind="sbc", experiment=EXP, models=("rw-pm",), method="hierarchical",
                     subjects=(10,), reps=reps_sbc, seed=12, draws=250, tune=500, chains=2)
    res = run_study(spec, workers=1)
    print(json.dumps({"study": f"SBC rw-pm 10 subjects x 96 trials, {reps_sbc} data sets",
                      "seconds": round(res.seconds),
                      "p_values": {k: round(v["p_value"], 3) for k, v in res.summary.items()},
                      "min_p": round(min(v["p_value"] for v in res.summary.values()), 3)}),
          flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
