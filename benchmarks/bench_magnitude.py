"""Magnitude estimation (BayesBench) speed figures, one core.

Prints:
1. batch simulation (text modality, no rendering): trials/s of the numba kernel on pre-drawn
   stimuli, and of the whole batch path (stimuli + kernel + trial table); target ≥ 1e7 trials/s;
2. stimulus rendering: PNG images/s, unblurred and blurred, per visual task; target ≥ 500/s;
3. every observer fit (10 variants per session) + the factor evidence for one subject × 4 tasks ×
   3 sessions × 6 conditions (text only: 72 sessions; and all modalities: 180 sessions); target ≤ 1 s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))


import numpy as np  # noqa: E402
from _timing import best_cpu_of, best_of  # noqa: E402

from cogtestbed.agents.magnitude import AGENTS, simulate_kernel  # noqa: E402
from cogtestbed.environments.magnitude import (  # noqa: E402
    VISUAL_TASKS,
    MagnitudeDesign,
    MagnitudeEnv,
    step_arrays,
    stimulus_image,
)
from cogtestbed.inference.magnitude import build_cube, evidence_table, session_fits  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate  # noqa: E402


def bench_simulation(agent: str, n: int = 3000) -> None:
    design = MagnitudeDesign(modalities="text")
    env_rng, agent_rng = seed_streams(0)
    sessions = MagnitudeEnv.sample_sessions(design, n, env_rng)
    s = step_arrays(design, sessions)
    cls = AGENTS[agent]
    theta = np.ascontiguousarray(np.tile(cls.parameters.vector(cls.parameters.validate({})), (n, 1)))
    u = agent_rng.random((n, design.n_trials * 2))

    def kernel() -> None:
        simulate_kernel(cls.kind, theta, s.x, s.low, s.high, s.blur, s.context, s.condition,  # type: ignore[attr-defined]
                        s.modality, s.trial, s.render_seed, u)

    trials = n * design.n_trials
    t_kernel, c_kernel = best_of(kernel, 3), best_cpu_of(kernel, 3)
    t_full = best_of(lambda: simulate("magnitude", agent, 300, 1, design=design), 2)
    print(f"simulation {agent:>14}: kernel {trials / t_kernel:,.0f} trials/s wall, {trials / c_kernel:,.0f} "
          f"trials/s per CPU second ({n} subjects x {design.n_trials}); full batch path "
          f"{300 * design.n_trials / t_full:,.0f} trials/s wall")


def bench_rendering(n: int = 300) -> None:
    rng = np.random.default_rng(0)
    xs, seeds = rng.uniform(0.1, 0.9, n), rng.integers(0, 2**62, n)
    total, count = 0.0, 0
    for task in VISUAL_TASKS:
        scale = 8.0 if task == "maze-distance" else 1.0
        for blur in (0.0, 2.0):
            def render(task: str = task, blur: float = blur, scale: float = scale) -> None:
                for x, sd in zip(xs, seeds, strict=True):
                    stimulus_image(task, float(x) * scale, int(sd), blur)

            t, c = best_of(render, 2), best_cpu_of(render, 2)
            total, count = total + c, count + n
            print(f"rendering {task:>16} blur {blur:.0f} px: {n / t:,.0f} images/s wall, {n / c:,.0f} per CPU second")
    print(f"rendering, all tasks and both blur levels: {count / total:,.0f} images per CPU second")


def bench_fits() -> None:
    for modalities in ("text", "text,image,text+image"):
        design = MagnitudeDesign(modalities=modalities)
        t = simulate("magnitude", "observer", 1, 3, design=design)
        cube = build_cube(t)
        n_sessions = int(cube.present.sum())
        sec = best_of(lambda cube=cube: evidence_table(session_fits(cube)), 3)
        cpu = best_cpu_of(lambda cube=cube: evidence_table(session_fits(cube)), 3)
        print(f"observer fits + factor evidence, 1 subject x 4 tasks x 3 sessions x 6 conditions "
              f"({modalities}; {n_sessions} sessions x 10 variants): {sec:.3f} s wall, {cpu:.3f} s CPU")


if __name__ == "__main__":
    bench_simulation("static-bayes")
    bench_simulation("observer")
    bench_simulation("kalman")
    bench_rendering()
    bench_fits()
