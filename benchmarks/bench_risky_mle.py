"""Per-subject prospect-theory MLE on risky-choice (98 trials, Spektor et al.'s Exp. 2 design):
process CPU time per fit, and the start grid's NLL by the risky model's own row kernel
(:func:`cogtestbed.inference.risky.pt_nll_rows_kernel`) against the generic tiled pointwise path.

The per-subject MLE is what an LLM-against-people plan spends its time on (every simulated study
fits every person and every LLM subject, issue 52); the 9 x 9 x 9 start grid was three quarters of
each fit before the row kernel.  Also the CPU time of one log-likelihood-and-gradient evaluation
over all 282 Psych-201 Spektor et al. participants' 73,250 choices (what each leapfrog step of their
hierarchical fit costs: the kernel alone and the compiled model's whole gradient; skipped when the
file is not in ../shared/data).

    python benchmarks/bench_risky_mle.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _timing import best_cpu_of  # noqa: E402

from cogtestbed.conformance.suite import prior_draws  # noqa: E402
from cogtestbed.inference.base import CognitiveModel  # noqa: E402
from cogtestbed.inference.risky import MODELS  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.simulation import simulate  # noqa: E402

SUBJECTS = 40
SPEKTOR = Path(__file__).resolve().parents[2] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"


def spektor_gradient_cpu() -> dict[str, float] | None:
    """CPU ms over every valid Spektor choice, subjects at one value each: of
    :func:`pt_pointwise_kernel` (the model's own data packing, each subject's magnitude table) and of
    the hierarchical PyMC model's whole gradient compiled to numba, as nutpie runs it (the kernel and
    the per-subject sum of its rows, :func:`~cogtestbed.inference.hierarchical_op.segment_sum`)."""
    from cogtestbed.inference.hierarchical import pool_model_arrays
    from cogtestbed.inference.risky import pt_pointwise_kernel

    if not SPEKTOR.exists():
        return None
    model = MODELS["prospect-theory"]
    table = get_experiment("risky-choice").importer("psych201").load(SPEKTOR)
    subjects, subject, arrays = pool_model_arrays(model, table)
    theta = np.tile([1.0, 0.8, 1.3], (len(subjects), 1))
    cpu = best_cpu_of(lambda: pt_pointwise_kernel(theta, subject, *arrays.values()))
    pm_model = model.pymc_model(table, True)
    grad = pm_model.compile_fn(pm_model.dlogp(), inputs=pm_model.value_vars, mode="NUMBA", point_fn=False)
    point = pm_model.initial_point()
    values = [point[v.name] for v in pm_model.value_vars]
    grad_cpu = best_cpu_of(lambda: grad(*values))
    return {"choices": len(subject), "subjects": len(subjects), "kernel_cpu_ms": round(1e3 * cpu, 1),
            "gradient_cpu_ms": round(1e3 * grad_cpu, 1)}


def main() -> None:
    model = MODELS["prospect-theory"]
    true = prior_draws(model.parameters, SUBJECTS, np.random.default_rng(0))
    table = simulate(get_experiment("risky-choice"), "prospect-theory", SUBJECTS, 0, params=true)
    data = model.subject_data(table)
    one = next(iter(data.values()))
    grid = model.start_grid()
    fast = best_cpu_of(lambda: model.nll_many(grid, one))
    generic = best_cpu_of(lambda: CognitiveModel.nll_many(model, grid, one))
    fits = best_cpu_of(lambda: model.fit_mle(table), repeats=3)
    print(json.dumps({"bench": "prospect-theory MLE, 98 trials", "grid_rows": len(grid),
                      "grid_nll_cpu_ms": {"row_kernel": round(1e3 * fast, 2), "generic": round(1e3 * generic, 2)},
                      "fit_cpu_ms_per_subject": round(1e3 * fits / SUBJECTS, 2), "subjects": SUBJECTS}))
    print(json.dumps({"bench": "prospect-theory log-likelihood and gradient, all Spektor choices",
                      **(spektor_gradient_cpu() or {"skipped": f"{SPEKTOR} not found"})}))


if __name__ == "__main__":
    main()
