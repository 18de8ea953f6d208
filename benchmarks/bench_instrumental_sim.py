"""Batch simulation of RW± on instrumental learning: 10,000 subjects × 96 trials.

Prints trials/s of (a) the numba kernel alone (pre-drawn sessions and uniforms, one core),
(b) the whole batch path (session sampling + kernel + trial table), (c) the Python step loop
(gymnasium ``reset``/``step`` + ``agent.act``/``update``) on a subset, and the ratios, all in one
run.  Targets: kernel ≥ 2×10⁷ trials/s on one core and ≥ 100× the step loop.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _timing import best_of  # noqa: E402

from cogtestbed.agents.instrumental import RWPMAgent  # noqa: E402
from cogtestbed.environments.instrumental import InstrumentalDesign, InstrumentalLearningEnv  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402

N_SUBJECTS = 10_000
N_STEP_SUBJECTS = 100
PARAMS = {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}


def main() -> None:
    design = InstrumentalDesign()
    trials = N_SUBJECTS * design.n_trials
    env_rng, agent_rng = seed_streams(0)
    sessions = InstrumentalLearningEnv.sample_sessions(design, N_SUBJECTS, env_rng)
    uniforms = agent_rng.random((N_SUBJECTS, design.n_trials))
    params = subject_params(RWPMAgent, PARAMS, N_SUBJECTS)

    kernel_s = best_of(lambda: RWPMAgent.simulate_batch(design, sessions, params, uniforms))
    full_s = best_of(lambda: simulate("instrumental-learning", "rw-pm", N_SUBJECTS, 0, PARAMS), 3)
    step_s = best_of(
        lambda: simulate("instrumental-learning", "rw-pm", N_STEP_SUBJECTS, 0, PARAMS, method="step"), 2
    )
    step_rate = N_STEP_SUBJECTS * design.n_trials / step_s
    kernel_rate, full_rate = trials / kernel_s, trials / full_s
    print(f"RW± batch simulation, {N_SUBJECTS} subjects x {design.n_trials} trials ({trials:,} trials)")
    print(f"  numba kernel          : {kernel_s * 1e3:8.1f} ms  {kernel_rate:12.3e} trials/s")
    print(f"  full batch path+table : {full_s * 1e3:8.1f} ms  {full_rate:12.3e} trials/s")
    print(f"  python step loop      : {step_rate:12.3e} trials/s ({N_STEP_SUBJECTS} subjects)")
    print(f"  kernel / step loop    : {kernel_rate / step_rate:10.0f}x")
    print(f"  full path / step loop : {full_rate / step_rate:10.0f}x")
    print(f"  targets: kernel >= 2e7 trials/s [{'OK' if kernel_rate >= 2e7 else 'MISSED'}], "
          f">= 100x step loop [{'OK' if kernel_rate / step_rate >= 100 else 'MISSED'}]")
    assert np.isfinite(kernel_rate)


if __name__ == "__main__":
    main()
