"""Cost of one log-density + gradient of the hierarchical dissonant model (what NUTS pays per
leapfrog step), at the hierarchical study's design (8 subjects x 374 steps) and at the full grid.

The likelihood is the MLE's numba kernel behind the pointwise Op; the figure is CPU time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from cogtestbed.environments.revealed import RevealedDesign
from cogtestbed.inference.revealed_hierarchical import dissonant_pymc_model
from cogtestbed.inference.revealed_model import MODELS
from cogtestbed.simulation import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent / "studies"))
from revealed_family import HIERARCHICAL_DESIGN  # noqa: E402

REPS = 20


def main() -> None:
    model = MODELS["dissonant"]
    params = {"beta_first": 1.0, "kappa": 6.0, "theta": 3.0, "noise": 0.02}
    for label, design in (("hierarchical study design", RevealedDesign(**HIERARCHICAL_DESIGN)),  # type: ignore[arg-type]
                          ("default grid", RevealedDesign())):
        trials = simulate("revealed-belief", "dissonant", 8, 0, params, design=design)
        m = dissonant_pymc_model(model, trials)
        logp, dlogp = m.compile_logp(), m.compile_dlogp()
        point = m.initial_point()
        logp(point), dlogp(point)
        c0 = time.process_time()
        for _ in range(REPS):
            logp(point)
            dlogp(point)
        cpu = (time.process_time() - c0) / REPS
        print(json.dumps({"bench": "hierarchical dissonant logp + gradient", "design": label, "subjects": 8,
                          "steps": int(len(trials)), "cpu_ms": round(1e3 * cpu, 2),
                          "finite": bool(np.isfinite(logp(point)))}), flush=True)


if __name__ == "__main__":
    main()
