"""Instrumental learning recovery numbers (MLE), printed as JSON lines.

1. MLE recovery study, RW±, 100 reps x 50 subjects, prior-sampled parameters: wall time
   (target <= 30 s on 2 cores) on the default local process pool.
2. RW at CogBench's design (96 trials) with beta = 5: recovery r of alpha (target >= 0.8),
   alpha uniform on [0.05, 0.95].
3. The r optimism bias (alpha+ - alpha-) reaches at 96, 192 and 480 trials (RW±, beta = 5,
   alpha+/alpha- uniform on [0.05, 0.95]).
"""

from __future__ import annotations

import json

from cogtestbed.studies.driver import run_study, study_spec

EXP = "instrumental-learning"


def main() -> None:
    spec = study_spec(kind="recovery", experiment=EXP, models=("rw-pm",), subjects=(50,), reps=100,
                     seed=1)
    res = run_study(spec)
    cell = next(iter(res.summary.values()))["parameters"]
    print(json.dumps({"study": "mle recovery rw-pm 100 reps x 50 subjects (prior)",
                      "seconds": round(res.seconds, 1),
                      "r": {k: round(v["r"], 3) for k, v in cell.items()}}), flush=True)

    rng_range = {"alpha": (0.05, 0.95), "alpha_pos": (0.05, 0.95), "alpha_neg": (0.05, 0.95)}
    spec = study_spec(kind="recovery", experiment=EXP, models=("rw",), subjects=(50,), reps=20,
                     seed=2, sampler="uniform", ranges=rng_range, fixed={"beta": 5.0})
    res = run_study(spec)
    a = next(iter(res.summary.values()))["parameters"]["alpha"]
    print(json.dumps({"study": "rw alpha, beta=5, 96 trials", "r": round(a["r"], 3),
                      "bias": round(a["bias"], 3), "rmse": round(a["rmse"], 3)}), flush=True)

    spec = study_spec(kind="recovery", experiment=EXP, models=("rw-pm",), subjects=(50,),
                     trials=(96, 192, 480), reps=10, seed=3, sampler="uniform", ranges=rng_range,
                     fixed={"beta": 5.0})
    res = run_study(spec)
    for cell in res.summary.values():
        p = cell["parameters"]
        print(json.dumps({"study": "rw-pm optimism bias, beta=5", "trials": cell["n_trials"],
                          **{f"r_{k}": round(v["r"], 3) for k, v in p.items()},
                          "rmse_optimism_bias": round(p["optimism_bias"]["rmse"], 3)}), flush=True)


if __name__ == "__main__":
    main()
