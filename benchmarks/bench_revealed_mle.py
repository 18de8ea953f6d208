"""Maximum likelihood of the dissonant agent per model (one subject = 480 items x 2 channels).

Target: <= 0.5 s per model after compilation (the numba kernels and BFGS driver compile once
per process).
"""

from __future__ import annotations

import json
import time

from cogtestbed.inference.revealed_model import MODELS
from cogtestbed.simulation import simulate

TRUTH = {"tau": 0.9, "beta_first": 2.0, "beta_label": 1.0, "beta_anchor": 0.5, "kappa": 8.0, "theta": 3.0,
         "beta_pos": 0.5, "noise": 0.02}


def main() -> None:
    model = MODELS["dissonant"]
    trials = simulate("revealed-belief", "dissonant", 11, 0, TRUTH)
    data = model.subject_data(trials)
    model.fit_subject(data[0])  # compile
    times, cpu = [], []
    for s in list(data)[1:]:
        start, c0 = time.perf_counter(), time.process_time()
        model.fit_subject(data[s])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - c0)
    print(json.dumps({"bench": "dissonant MLE per model", "rows": model.n_observations(data[1]),
                      "seconds_mean": round(sum(times) / len(times), 3), "seconds_max": round(max(times), 3),
                      "cpu_seconds_mean": round(sum(cpu) / len(cpu), 3),
                      "target_seconds": 0.5}))


if __name__ == "__main__":
    main()
