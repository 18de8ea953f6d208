"""Power by simulation at a design: a plan's :class:`PowerEvaluator` runs the generic study tasks
(:mod:`cogtestbed.studies.driver`) at each design point in growing batches, and
:func:`decided` says when a batch may stop (the estimate clearly above or below the target).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.planning.space import Point, size_axis_name, study_at
from cogtestbed.studies.driver import (
    StudyTaskError,
    dask_client,
    fork_pool,
    reraise,
    run_chunk,
    stop_pool,
)
from cogtestbed.studies.model_studies import REUSE_PREFIX
from cogtestbed.studies.study_kinds import PlannedStudy, PowerStudy

#: A design is called above/below the target once its estimate is this many binomial SEs (at
#: the target) away from it ...
DECIDE_Z = 2.0

#: ... or once it has this many simulations (then its point estimate decides).
DECIDE_MAX_SIMS = 96


#: The Dask client a plan's simulated studies run on (:func:`on_cluster`; None: this machine).
_CLUSTER: ContextVar[Any | None] = ContextVar("plan_cluster", default=None)


@contextmanager
def on_cluster(dask: str | Any | None) -> Iterator[Any | None]:
    """Within the block, every :class:`PowerEvaluator` sends its simulated studies to the Dask scheduler
    ``dask`` (an address or a ``distributed.Client``; None: they run here), as a study's ``--dask`` does
   : the same tasks, seeds and chunks, the rows in task order, so the plan is the local one."""
    if dask is None:
        yield None
        return
    client = dask_client(dask)
    token = _CLUSTER.set(client)
    try:
        yield client
    finally:
        _CLUSTER.reset(token)
        if client is not dask:
            client.close()


def _run_on_cluster(client: Any, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """The rows of ``tasks`` run on ``client``'s workers in chunks (about two per thread), in task order;
    each finished chunk counts on the heartbeat."""
    from distributed import as_completed as finished

    from cogtestbed.progress import tick

    size = max(1, math.ceil(len(tasks) / (2 * max(1, sum(client.nthreads().values())))))
    chunks = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    futures = [client.submit(timed_chunk, payload, c, pure=False) for c in chunks]
    sizes = {f.key: len(c) for f, c in zip(futures, chunks, strict=True)}
    for f in finished(futures):
        f.result()
        tick(sizes[f.key])
    return count_worker_cpu([f.result() for f in futures])


def timed_chunk(payload: str, tasks: list[dict[str, Any]]) -> tuple[pd.DataFrame, float, int]:
    """:func:`~cogtestbed.studies.driver.run_chunk` on a Dask worker, with the CPU seconds it took
    there (the CPU clock of the worker thread running it) and the worker's process id."""
    import os
    import time

    start = time.thread_time()
    rows = run_chunk(payload, tasks)
    return rows, time.thread_time() - start, os.getpid()


def count_worker_cpu(results: list[tuple[pd.DataFrame, float, int]]) -> list[pd.DataFrame]:
    """The rows of :func:`timed_chunk`'s ``results``, their CPU counted in this process's
    (:func:`~cogtestbed.timings.add_remote_cpu`) where a worker in another process spent it (a worker in this
    process is already in its clock)."""
    import os

    from cogtestbed.timings import add_remote_cpu

    add_remote_cpu(sum(cpu for _, cpu, pid in results if pid != os.getpid()))
    return [rows for rows, _, _ in results]


# ----------------------------------------------------------------------------- power by simulation
@dataclass
class Estimate:
    """Power at one design: rejections / simulations, with the binomial MC SE."""

    hits: int
    sims: int

    @property
    def rate(self) -> float:
        return self.hits / self.sims if self.sims else float("nan")

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(p * (1 - p) / self.sims) if self.sims else float("nan")


def outcome_column(spec: PlannedStudy) -> str:
    """The column of a power task's rows that says whether the simulated study detected the effect."""
    return "rejected" if spec.kind in ("test-size", "test-power") else "detected"


def _units(point: Point) -> float:
    """A simulation's size in trials: subjects × runs × trials (1 trial where the design fixes them)."""
    return float(point.subjects) * float(point.runs) * float(point.trials or 1)


class PowerEvaluator:
    """Simulated power of designs through the generic study tasks, extended in batches.

    Design ``d``'s simulation ``k`` is task ``k`` of the study ``spec`` at ``d`` (seed stream
    ``SeedSequence([seed, k])``), so a design's first ``n`` simulations are the same whenever they
    are run, and designs share their random numbers (common random numbers make the power curve
    over the size axis smoother).  Tasks run in a local fork pool of ``workers`` processes.
    """

    def __init__(self, spec: PlannedStudy, workers: int = 1, label: str | None = None, one_size: bool = False) -> None:
        self.spec, self.workers = spec, max(1, workers)
        #: Studies of one size (the fresh and calibration studies at a chosen design): an LLM against
        #: people fits its LLM subjects up to the size, not to whole blocks a larger size would extend.
        self.one_size = one_size
        #: What its simulations are for, on the heartbeat (None: the fixed plan's search).
        self.label = label
        self.rows: dict[Point, list[pd.DataFrame]] = {}
        self.done: dict[Point, int] = {}
        self.pool: ProcessPoolExecutor | None = None
        self.simulations = 0
        #: Wall seconds per simulated trial (subjects × runs × trials) of the last look: the next look's ETA.
        self.seconds_per_unit: float | None = None
        #: An LLM against people: each repetition's people and LLM subjects are fitted once,
        #: their values kept here per (design but its size, repetition) and handed to the next size's task.
        self.reusing = reuses_fits(spec)
        self.reuse: dict[tuple[Any, ...], dict[str, Any]] = {}

    def study_at(self, point: Point, reps: int) -> PlannedStudy:
        return study_at(self.spec, point, reps)

    def estimate(self, point: Point) -> Estimate:
        if point not in self.rows:
            return Estimate(0, 0)
        hits = pd.concat(self.rows[point])[outcome_column(self.spec)].astype(bool)
        return Estimate(int(hits.sum()), int(hits.size))

    def table(self, point: Point) -> pd.DataFrame:
        return pd.concat(self.rows[point], ignore_index=True)

    def ensure(self, point: Point, sims: int) -> Estimate:
        """At least ``sims`` simulations of ``point`` (runs only the missing ones)."""
        from cogtestbed.progress import beat

        have = self.done.get(point, 0)
        if sims > have:
            study = self.study_at(point, sims)
            tasks = study.tasks()[have:sims]
            hb = beat()
            if hb is not None:
                what = self.label or "fixed plan: simulating"
                hb.phase(f"{what} {point.label(size_axis_name(self.spec))}", len(tasks),
                         self._so_far(point) if self.label is None else "", self.expected_seconds(point, len(tasks)))
            if self.reusing:
                tasks = [{**t, "reuse": self.reuse.get(_reuse_key(point, t), {}), "one_size": self.one_size}
                         for t in tasks]
            start = time.perf_counter()
            rows = self._run(study.model_dump_json(), tasks)
            self.seconds_per_unit = (time.perf_counter() - start) / (len(tasks) * _units(point))
            self.rows.setdefault(point, []).extend(self._kept(point, rows) if self.reusing else rows)
            self.done[point] = sims
            self.simulations += len(tasks)
        return self.estimate(point)

    def expected_seconds(self, point: Point, sims: int) -> float | None:
        """Seconds ``sims`` simulations of ``point`` take at the last look's rate per simulated trial
        (subjects × runs × trials); None before the first look."""
        return None if self.seconds_per_unit is None else self.seconds_per_unit * sims * _units(point)

    def _so_far(self, point: Point) -> Callable[[int], str]:
        """The heartbeat's running count: designs simulated before ``point`` and every simulated study
        finished, ``point``'s own included as they finish."""
        designs, before = len([p for p in self.done if p != point]), self.simulations

        def note(done_here: int) -> str:
            return f"{designs} earlier designs; {before + done_here:,} simulated studies so far"
        return note

    def llm_values(self, point: Point) -> list[np.ndarray]:
        """The LLM group's per-subject values (the test's scale) of each study of :meth:`table` at
        ``point``, in its row order (an LLM against people, whose tasks hand their fits back)."""
        table = self.table(point)
        return [np.asarray(self.reuse[_reuse_key(point, row)]["llm"][:int(row["n_subjects"])], float)
                for _, row in table.iterrows()]

    def _kept(self, point: Point, rows: list[pd.DataFrame]) -> list[pd.DataFrame]:
        """``rows`` without their reuse columns, whose values are kept for the next size (a smaller
        size never replaces a larger one's values)."""
        out = []
        for df in rows:
            cols = [c for c in df.columns if str(c).startswith(REUSE_PREFIX)]
            for _, row in df.iterrows():
                key = _reuse_key(point, row)
                values = {c[len(REUSE_PREFIX):]: row[c] for c in cols}
                old = self.reuse.get(key, {}).get("llm")
                if "llm" in values and (old is None or len(old) < len(values["llm"])):
                    self.reuse[key] = values
            out.append(df.drop(columns=cols))
        return out

    def _run(self, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
        """The tasks' rows; a failed task raises as the study driver raises it (bad input: one line)."""
        try:
            return self._run_tasks(payload, tasks)
        except StudyTaskError as exc:
            raise reraise(exc) from None

    def _run_tasks(self, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
        """The tasks' rows, in chunks (a local fork pool whose workers end with this process);
        each finished task counts on the current heartbeat (:func:`cogtestbed.progress.tick`)."""
        from cogtestbed.progress import tick

        client = _CLUSTER.get()
        if client is not None:
            return _run_on_cluster(client, payload, tasks)
        if self.workers == 1 or len(tasks) < 2 * self.workers:
            size = max(1, math.ceil(len(tasks) / 4))
            out = []
            for i in range(0, len(tasks), size):
                out.append(run_chunk(payload, tasks[i:i + size]))
                tick(len(tasks[i:i + size]))
            return out
        first: list[pd.DataFrame] = []
        if self.pool is None:  # the first task here compiles the kernels; forked workers inherit them
            first, tasks = [run_chunk(payload, tasks[:1])], tasks[1:]
            self.pool = fork_pool(self.workers)
        size = math.ceil(len(tasks) / (2 * self.workers))
        futures = {self.pool.submit(run_chunk, payload, tasks[i:i + size]): min(size, len(tasks) - i)
                   for i in range(0, len(tasks), size)}
        for f in as_completed(futures):
            f.result()
            tick(futures[f])
        return [*first, *(f.result() for f in futures)]

    def close(self, abort: bool = False) -> None:
        """Shut the pool down: waiting for its workers, or (``abort``: an interrupt, an error)
        cancelling what is queued and ending the workers now."""
        if self.pool is not None:
            if abort:
                stop_pool(self.pool)
            else:
                self.pool.shutdown()
            self.pool = None

    def ensure_and_close(self, point: Point, sims: int) -> Estimate:
        """:meth:`ensure` ``sims`` simulations at ``point``, then :meth:`close` the pool (ending its
        workers at once if an interrupt or an error stops the simulations)."""
        try:
            est = self.ensure(point, sims)
        except BaseException:
            self.close(abort=True)
            raise
        self.close()
        return est


def reuses_fits(spec: PlannedStudy) -> bool:
    """Whether ``spec``'s tasks hand their fits to the next design: an LLM against a population's
    people by per-subject MLE (:func:`~cogtestbed.studies.model_studies.task_power_groups`)."""
    return isinstance(spec, PowerStudy) and spec.people is not None and spec.method == "mle" and spec.groups == 2


def _reuse_key(point: Point, task: Any) -> tuple[Any, ...]:
    """A repetition of a design but its size: the runs, trials and other fields, and the repetition."""
    return point.runs, point.trials, point.fields, int(task["rep"])


def decided(est: Estimate, target: float) -> bool:
    """Whether the sequential look may stop: the estimate is :data:`DECIDE_Z` SEs from the target."""
    if est.sims >= DECIDE_MAX_SIMS:
        return True
    return abs(est.rate - target) >= DECIDE_Z * math.sqrt(target * (1 - target) / est.sims)


def verdict(hits: int, sims: int, target: float, level: float = 0.95) -> dict[str, Any]:
    """Whether a design searched reaches ``target`` (every size searched says so), by the search's own
    rule (:func:`decided`): ``reached`` or ``not reached`` once its estimate is :data:`DECIDE_Z` binomial SEs (at
    the target) above or below it, or once it has :data:`DECIDE_MAX_SIMS` simulations (its point estimate then
    decides), else ``undecided``; with the Wilson interval of its power at ``level`` (Wilson 1927)."""
    from statsmodels.stats.proportion import proportion_confint

    if sims <= 0:
        return {"verdict": "undecided", "interval": [0.0, 1.0]}
    rate = hits / sims
    lo, hi = proportion_confint(hits, sims, alpha=1 - level, method="wilson")
    margin = 0.0 if sims >= DECIDE_MAX_SIMS else DECIDE_Z * math.sqrt(target * (1 - target) / sims)
    said = "reached" if rate - target >= margin else "not reached" if target - rate > margin else "undecided"
    return {"verdict": said, "interval": [float(lo), float(hi)]}
