"""Magnitude estimation (BayesBench) speed figures, one core.

Prints:
1. batch simulation (text modality, no rendering), for every magnitude agent: trials/s per CPU
   second of its numba kernel on pre-drawn stimuli and uniforms, and of the whole batch path
   :func:`cogtestbed.simulation.simulate` (stimuli + uniforms + kernel + trial table), each with
   PASS / FAIL against the target ≥ 1e7 trials/s; then the CPU ns per trial of each stage of the
   full path (static-bayes and observer) to show where the time goes;
2. stimulus rendering: PNG images/s, unblurred and blurred, per visual task; target ≥ 500/s;
3. every observer fit (10 variants per session) + the factor evidence for one subject × 4 tasks ×
   3 sessions × 6 conditions (text only: 72 sessions; and all modalities: 180 sessions); target ≤ 1 s.

Timings are the best of N process-CPU-time runs (the machine is shared) on one core (the process
pins itself).  ``--simulation`` prints part 1 only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):  # one core for every figure
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, str(Path(__file__).resolve().parent))


import numpy as np  # noqa: E402
from _timing import best_cpu_of, best_of  # noqa: E402

from cogtestbed.agents.magnitude import AGENTS, simulate_kernel  # noqa: E402
from cogtestbed.environments.magnitude import (  # noqa: E402
    MagnitudeDesign,
    MagnitudeEnv,
    block_schedule,
    stimulus_image,
    subject_stimuli,
)
from cogtestbed.inference.magnitude import build_cube, evidence_table, session_fits  # noqa: E402
from cogtestbed.simulation import seed_streams, simulate, subject_params  # noqa: E402
from cogtestbed.tables.magnitude import VISUAL_TASKS  # noqa: E402

#: Batch simulation target, trials per CPU second on one core (text modality, no rendering).
SIM_TARGET = 1e7
#: Subjects of the kernel timing (× 3600 text trials each) and of the full-path timing.
KERNEL_SUBJECTS, FULL_SUBJECTS = 3000, 300
REPEATS = 5
TEXT = MagnitudeDesign(modalities="text")


def _verdict(rate: float) -> str:
    return "PASS" if rate >= SIM_TARGET else "FAIL"


def kernel_rate(agent: str, n: int = KERNEL_SUBJECTS) -> float:
    """Trials per CPU second of the agent's numba kernel (pre-drawn stimuli, uniforms, schedule)."""
    env_rng, agent_rng = seed_streams(0)
    sessions = MagnitudeEnv.sample_sessions(TEXT, n, env_rng)
    sch = block_schedule(TEXT)
    x, seeds = subject_stimuli(sessions)
    cls = AGENTS[agent]
    params = subject_params(cls, None, n)
    theta = np.ascontiguousarray(np.column_stack([params[k] for k in cls.parameters.names]))
    u = agent_rng.random((n, TEXT.n_trials * 2))

    def kernel() -> None:
        simulate_kernel(cls.kind, theta, x, seeds, sch.slot, sch.low, sch.high, sch.blur,  # type: ignore[attr-defined]
                        sch.context, sch.condition, sch.modality, sch.trial, sch.starts, u)

    return n * TEXT.n_trials / best_cpu_of(kernel, REPEATS)


def full_rate(agent: str, n: int = FULL_SUBJECTS) -> float:
    """Trials per CPU second of :func:`simulate` (sessions + uniforms + kernel + trial table)."""
    return n * TEXT.n_trials / best_cpu_of(lambda: simulate("magnitude", agent, n, 1, design=TEXT), REPEATS)


def stage_ns(agent: str, n: int = FULL_SUBJECTS) -> dict[str, float]:
    """CPU ns per trial of each stage of the full batch path."""
    cls = AGENTS[agent]
    env_rng, agent_rng = seed_streams(1)
    sessions = MagnitudeEnv.sample_sessions(TEXT, n, env_rng)
    uniforms = agent_rng.random((n, TEXT.n_trials * 2))
    params = subject_params(cls, None, n)
    outcomes = cls.simulate_batch(TEXT, sessions, params, uniforms)
    stages = {
        "sessions": lambda: MagnitudeEnv.sample_sessions(TEXT, n, seed_streams(1)[0]),
        "uniforms": lambda: seed_streams(1)[1].random((n, TEXT.n_trials * 2)),
        "simulate_batch": lambda: cls.simulate_batch(TEXT, sessions, params, uniforms),
        "trial table": lambda: MagnitudeEnv.trials_table(TEXT, sessions, outcomes, agent=agent, params=params),
    }
    return {k: best_cpu_of(f, REPEATS) / (n * TEXT.n_trials) * 1e9 for k, f in stages.items()}


def bench_simulation() -> None:
    print(f"batch simulation, text modality, one core; "
          f"target >= {SIM_TARGET:.0e} trials per CPU second")
    print(f"{'agent':22s} {'kernel trials/s':>16s}        {'full path trials/s':>18s}")
    for agent in AGENTS:
        k, f = kernel_rate(agent), full_rate(agent)
        print(f"{agent:22s} {k:16.3e} {_verdict(k):6s} {f:18.3e} {_verdict(f):6s}", flush=True)
    print(f"(kernel: {KERNEL_SUBJECTS} subjects x {TEXT.n_trials} trials; full path: simulate() of "
          f"{FULL_SUBJECTS} subjects x {TEXT.n_trials} trials)")
    for agent in ("static-bayes", "observer"):
        parts = ", ".join(f"{k} {v:.1f}" for k, v in stage_ns(agent).items())
        print(f"full path stages, {agent}, CPU ns/trial: {parts}")


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
    bench_simulation()
    if "--simulation" not in sys.argv[1:]:
        bench_rendering()
        bench_fits()
