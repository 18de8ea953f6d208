"""Up-front time estimates of a study or a plan, from a cheap calibration on this machine.

Before a study's tasks start, one task of its smallest design cell is run twice in this process
(the first run loads the compiled kernels — which the study's forked workers then inherit — the
second is timed), and the whole study is estimated by scaling that time to every task by its
data size, subjects × trials per run × runs (simulating and fitting cost about linearly in the
trials simulated and fitted), divided among the workers; the timed task's rows are kept, so the
study does not run it again.  The figure is printed as an estimate;
the progress lines that follow (:class:`~cogtestbed.progress.TaskProgress`) measure the real rate.

A plan's search is adaptive (how many designs it looks at depends on what it finds), so its
estimate is per look: one simulation of the smallest design is timed the same way and scaled to
the smallest and the largest design of the search.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cogtestbed.progress import clock, duration

#: Fewest tasks for which a study is calibrated first (one or two tasks are their own estimate).
MIN_TASKS = 3


@dataclass(frozen=True)
class StudyEstimate:
    """Estimated wall seconds of a study and what the estimate rests on."""

    seconds: float
    tasks: int
    workers: int
    timed_seconds: float
    timed_label: str
    #: The timed task's rows by index (``run_study(done=...)`` does not run it again).
    done: dict[int, Any] = field(default_factory=dict)

    def line(self, what: str) -> str:
        return (f"{what}: estimated {clock(self.seconds)} for {self.tasks} tasks on {self.workers} worker"
                f"{'s' * (self.workers != 1)} (an estimate: one task of the smallest cell, {self.timed_label}, "
                f"took {self.timed_seconds:.2g} s here, scaled by subjects × trials × runs; the progress "
                "lines follow the real rate)")


def task_units(spec: Any, default_trials: int, task: dict[str, Any]) -> float:
    """A task's data size: subjects × trials per run × runs (the unit its cost is scaled by)."""
    trials = task.get("trials")
    return float(task.get("n_subjects", 1)) * float(trials if trials is not None else default_trials) * \
        float(task.get("runs", 1))


def timed_task(payload: str, task: dict[str, Any]) -> tuple[float, Any]:
    """(seconds, rows) of one task, run twice here: the first run loads the compiled code, the
    second is timed (both give the same rows: a task's seed stream is its index)."""
    from cogtestbed.studies.driver import run_chunk

    run_chunk(payload, [task])
    start = time.perf_counter()
    rows = run_chunk(payload, [task])
    return time.perf_counter() - start, rows


def study_estimate(spec: Any, workers: int | None) -> StudyEstimate | None:
    """The estimated wall time of ``spec``'s tasks on ``workers`` local processes (None for a
    study of fewer than :data:`MIN_TASKS` tasks, or one whose calibration task fails: the study
    itself then reports the error)."""
    import os

    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.labels import design_name
    from cogtestbed.studies.study_data import design_for_trials

    tasks = spec.tasks()
    if len(tasks) < MIN_TASKS:
        return None
    exp = get_experiment(spec.experiment)
    default_trials = int(design_for_trials(exp, None, spec.design).n_trials)
    units = [task_units(spec, default_trials, t) for t in tasks]
    small = min(range(len(tasks)), key=lambda i: (units[i], i))
    try:
        seconds, rows = timed_task(spec.model_dump_json(), tasks[small])
    except Exception:  # noqa: BLE001 - the study reports its own errors; no estimate then
        return None
    n_workers = max(1, min(workers if workers is not None else (os.cpu_count() or 1), len(tasks)))
    total = seconds * sum(units) / units[small]
    # the pool's first task runs alone (its compiled code is inherited), the rest in parallel
    wall = seconds * units[0] / units[small] + (total - seconds * units[0] / units[small]) / n_workers
    task = tasks[small]
    label = f"{task.get('n_subjects', 1)} subject(s) of " + design_name(spec, task.get("trials") or default_trials)
    return StudyEstimate(wall, len(tasks), n_workers, seconds, label, {int(task["index"]): rows})


#: Simulations of the smallest design a plan's estimate times together (one alone carries a chunk's fixed
#: costs, which a look's chunks of several share: a first look measured faster than the estimate's low end).
TIMED_SIMULATIONS = 4

#: The low end of a look's estimate lies this factor below the timed rate: timed under other jobs, the
#: same simulations ran 2x faster later in the plan (``bench_plans.py`` on a load of 5-7).
LOW_END = 2.0


def timed_simulation(spec: Any, smallest: Any) -> tuple[float, float] | None:
    """(seconds, low) of one simulation of the design ``smallest``, timed here: :data:`TIMED_SIMULATIONS` of
    them in one chunk after one that loads the compiled code; ``low`` the same without fitting people again
    (an LLM against people: a later look reuses their fits; otherwise ``low`` is ``seconds``).  None when the
    simulation fails (the plan reports its own errors)."""
    from cogtestbed.planning.kinds.power.power_sims import reuses_fits
    from cogtestbed.planning.space import study_at
    from cogtestbed.studies.driver import run_chunk
    from cogtestbed.studies.model_studies import forget_people

    study = study_at(spec, smallest, TIMED_SIMULATIONS)
    payload, tasks = study.model_dump_json(), study.tasks()

    def timed() -> float:  # a few together, as a look's chunks run them (per-chunk costs shared)
        start = time.perf_counter()
        run_chunk(payload, tasks)
        return (time.perf_counter() - start) / len(tasks)

    try:
        run_chunk(payload, tasks[:1])  # loads the compiled code
        forget_people()  # the people a first look fits are timed too
        seconds = timed()
        # a plan that hands its fits on (an LLM against people): a later look fits no people, and as
        # few as one new block of LLM subjects: its low end is a simulation whose people are already fitted
        low = timed() if reuses_fits(spec) else seconds
    except Exception:  # noqa: BLE001 - the plan reports its own errors
        return None
    return seconds, low


def timed_one(spec: Any, point: Any) -> float | None:
    """Seconds of one simulation of the design ``point`` (its code already loaded by :func:`timed_simulation`);
    None when it fails."""
    from cogtestbed.planning.space import study_at
    from cogtestbed.studies.driver import run_chunk

    study = study_at(spec, point, 1)
    try:
        start = time.perf_counter()
        run_chunk(study.model_dump_json(), study.tasks())
    except Exception:  # noqa: BLE001 - the plan reports its own errors
        return None
    return time.perf_counter() - start


def affine_cost(small: tuple[float, float], large: tuple[float, float]) -> Callable[[float], float]:
    """A simulation's seconds as a function of its data size, through two timings ``(units, seconds)``: a
    fixed cost and a cost per unit (never below the smaller design's time: a cost that falls with size is the
    timings' noise), so a study's fixed costs are not scaled by the size as the per-trial cost is."""
    (u0, t0), (u1, t1) = small, large
    slope = max(0.0, (t1 - t0) / (u1 - u0)) if u1 > u0 else t0 / max(u0, 1e-12)

    def seconds(units: float) -> float:
        return t0 + slope * max(0.0, units - u0)
    return seconds


def study_seconds(planner: Any, smallest: Any, largest: Any, seconds: float) -> Callable[[int], float]:
    """Seconds of one simulated study at each size of the searched axis (the other axes at their top): a fixed
    cost and a cost per simulated trial (:func:`affine_cost`) through the smallest
    design's timing (``seconds``) and one study of the largest design timed here; proportional to the data size
    where the largest cannot be timed."""
    def units(point: Any) -> float:
        return design_units(planner.spec, planner.exp, point)

    top = {a.name: a.values[-1] for a in planner.others}
    large = timed_one(planner.spec, largest) if units(largest) > units(smallest) else None
    if large is None:
        return lambda v: seconds * units(planner.point(v, top)) / units(smallest)
    cost = affine_cost((units(smallest), seconds), (units(largest), large))
    return lambda v: cost(units(planner.point(v, top)))


def design_units(spec: Any, exp: Any, point: Any) -> float:
    """A design's data size, subjects × trials × runs (a simulation's time is scaled by it)."""
    from cogtestbed.studies.study_data import design_for_trials

    design = design_for_trials(exp, point.trials, point.design(spec.design))
    return float(point.subjects) * float(design.n_trials) * float(point.runs)


def plan_look_line(spec: Any, exp: Any, smallest: Any, largest: Any, first: int, most: int,
                   workers: int = 1, timed: tuple[float, float] | None = None) -> str | None:
    """``plan``'s per-look estimate: a simulation of the smallest design timed here (:func:`timed_simulation`,
    or ``timed`` as it returned), scaled to the smallest and the largest design; a look of ``first`` to
    ``most`` simulations shared among ``workers`` processes (the wall a user waits for a look, which
    ``benchmarks/bench_plans.py`` checks every look against)."""
    timed = timed if timed is not None else timed_simulation(spec, smallest)
    if timed is None:
        return None
    seconds, low = timed
    big = seconds * design_units(spec, exp, largest) / design_units(spec, exp, smallest)
    unscaled = "".join(f"; {name} not counted" for name, _ in smallest.fields)
    shared = max(1, int(workers))
    on = f"on {shared} workers (shared among them)" if shared > 1 else "on 1 worker"
    return (f"estimate: one simulation takes about {duration(seconds)} at the smallest design and {duration(big)} at "
            f"the largest here (timed, scaled by subjects × trials × runs{unscaled}), so a look of {first}-{most} "
            f"simulations takes {duration(first * low / shared / LOW_END)} to {duration(most * big / shared)} "
            f"{on} (the low end {LOW_END:g}× below the timed rate: a timing on a shared machine varies that much); "
            "the search looks at as many designs as it needs, each printed as it finishes")


__all__ = ["StudyEstimate", "affine_cost", "design_units", "plan_look_line", "study_estimate", "study_seconds",
           "task_units", "timed_one", "timed_simulation", "timed_task"]
