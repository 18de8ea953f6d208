"""The one study driver: parameter recovery, model recovery, SBC, power and the metric-level studies.

A study is a declarative :class:`StudySpec` (experiment, kind, models or agent, design grid,
parameter distribution, reps, seed).  It is split into independent *tasks* (one per repetition
and design cell); each task derives its random streams from ``SeedSequence([seed, stream])`` only
(the task's index, or its repetition for the power kinds: common random numbers across a power
curve's sizes, :data:`~cogtestbed.studies.study_kinds.CRN_KINDS`), so a study gives
the identical results table whether its tasks run in this process, on a local process pool or on a
Dask cluster (:func:`run_study`).  Everything dispatches on the experiment spec
(:class:`~cogtestbed.experiments.spec.ExperimentSpec`):

* data *from a model* are simulated by the agent of the model's **generator**
  (``spec.generator(model).agent_params(theta)``), so a model and its agent may differ (the
  collider's ``cbn-3p`` is simulated by the 12-parameter ``cbn`` agent);
* the **pooling unit** decides what one fitted subject is: where an experiment pools sessions
  (CogBench's runs of one LLM), a simulated subject plays ``runs`` sessions with one parameter
  set and the model fits them together (:func:`simulate_runs`); elsewhere a subject is one session;
* ``trials`` scales the design through the declared **trials field** (:func:`design_for_trials`).

Kinds (statistics in :mod:`cogtestbed.studies.summaries`):

=================  ================================================================================
recovery           true vs estimated parameters: r, bias, RMSE (+ interval coverage when Bayesian)
model-recovery     confusion matrix of the best-fitting model per generating model (Wilson & Collins
                   2019), by AIC / BIC (MLE) or PSIS-LOO (hierarchical)
sbc                rank of each true value among thinned posterior draws (Talts et al. 2018)
power              share of simulated studies in which a test on a parameter/contrast rejects
metric-validity    a metric's mean and SD per value of an agent parameter; Spearman ρ, monotonicity
metric-power       share of simulated study pairs in which a metric differs between two agent settings
test-size / -power rejection rate of a statistical test the metrics function reports (``p_value`` /
                   ``reject``) under an agent setting
=================  ================================================================================

Every rate comes with its Monte-Carlo SE √(p(1−p)/reps).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as cf_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import CogtestbedError, InputError
from cogtestbed.experiments._names import unknown_test
from cogtestbed.experiments.spec import STUDY_KINDS, ExperimentSpec, StudyDecl, UnknownNameError
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.hierarchical import (
    ConvergenceWarning,
)
from cogtestbed.parameters import check_parameter_names
from cogtestbed.registry import get_experiment
from cogtestbed.studies.study_data import TaskFn, design_for_trials, study_chunk
from cogtestbed.studies.study_kinds import (
    MetricStudy,
    ModelRecoveryStudy,
    ModelStudy,
    PowerStudy,
    RecoveryStudy,
    StudySpec,
    kind_fields,
    load_study,
    study_spec,
)
from cogtestbed.study_errors import StudyFailure, StudyInputError, WorkerDied


# ----------------------------------------------------------------------------- checks
def check_study(spec: StudySpec) -> ExperimentSpec:
    """Every name and combination of ``spec`` against its experiment (one clear error each).

    Called before any computation, so a nonsense combination fails at once.
    """
    exp = get_experiment(spec.experiment)
    if isinstance(spec, ModelStudy):
        _check_models(spec, exp)
    else:
        _check_agent(spec, exp)
    if any(t is not None for t in spec.trials) and exp.trials_field is None:
        raise InputError(f"experiment {exp.name} has a fixed number of trials per run (no trials field); "
                         "scale runs instead")
    for t in spec.trials:
        design_for_trials(exp, t, spec.design)
    return exp


def _check_agent(spec: MetricStudy, exp: ExperimentSpec) -> None:
    """The agent, its settings, the swept parameter and the metric of a metric-level study."""
    agent = exp.agent(spec.agent)
    names = set(agent.parameters.names)
    for setting in (spec.params, *getattr(spec, "compare", ())):
        check_parameter_names(setting, names, f"agent {spec.agent}")
    fields_ = set(getattr(exp.design_cls, "model_fields", {}))
    if spec.parameter is not None and spec.parameter not in names | fields_:
        raise InputError(f"{spec.parameter!r} is neither a parameter of agent {spec.agent} "
                         f"({', '.join(sorted(names))}) nor a design field ({', '.join(sorted(fields_))})")
    test = getattr(spec, "test", None)
    if test is not None and test not in exp.metrics.tests:
        from cogtestbed.studies.metric_studies import named_tests

        valid_tests = named_tests(exp)  # a headline metric only where its value is a test
        if test not in valid_tests:
            raise unknown_test(test, valid_tests, exp.name, exp.metrics.aliases)
    metric = getattr(spec, "metric", None)
    if metric is not None and metric not in _headline(exp):
        valid = _headline(exp)
        raise InputError(f"{metric!r} is not a headline metric of {exp.name}; "
                         + (f"choose one of: {', '.join(valid)}" if valid else "it declares none"))
    if metric is not None and getattr(spec, "compare", None) is not None:
        exp.metrics.check_comparable(metric, exp.name)


def _check_models(spec: ModelStudy, exp: ExperimentSpec) -> None:
    """The models of a model-level study, their settings and the pooling of runs."""
    for name in spec.models:
        exp.model(name)
    if any(r > 1 for r in spec.runs) and exp.pooling_unit != "session":
        raise InputError(f"experiment {exp.name} pools subjects, not sessions: runs > 1 needs an experiment "
                         "whose pooling unit is the session")
    for m in spec.models:
        _check_model_settings(spec, exp, exp.model(m))
    if isinstance(spec, ModelRecoveryStudy):
        known = {p for m in spec.models for p in exp.model(m).parameters.names}
        check_parameter_names({**spec.fixed, **spec.ranges}, known, f"models {', '.join(spec.models)}")


def concurrent_tasks(spec: StudySpec, workers: int | None) -> int:
    """Tasks of ``spec`` that run at once on ``workers`` local processes (default: the CPU count)."""
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n < 1:
        raise InputError(f"workers must be at least 1, got {n}")
    return 1 if n == 1 else min(n, len(spec.tasks()))


def check_study_memory(spec: StudySpec, exp: ExperimentSpec, concurrent: int = 1) -> int:
    """Estimate the memory of the study's largest task times ``concurrent`` tasks at once and refuse
    up front (:class:`~cogtestbed.memory.MemoryLimitError`) when it exceeds what is available.

    The size of one session's trial table is measured on a one-subject simulation of the agent
    that generates the data; a task holds ``subjects x runs`` sessions (twice that for a metric
    comparison), :data:`~cogtestbed.memory.MEMORY_COPIES` times over.  Returns the estimate.
    """
    from cogtestbed.memory import MEMORY_COPIES, check_memory
    from cogtestbed.simulation import session_bytes

    if isinstance(spec, ModelStudy):
        gen = exp.generator(spec.models[0])
        agent, params = gen.agent, {**dict(gen.fixed), **spec.params}
        subjects = max(spec.subjects)
        if spec.kind == "recovery" and spec.method == "mle":  # simulated and fitted a chunk at a time
            subjects = min(subjects, min(study_chunk(exp, agent, params, design_for_trials(exp, t, spec.design),
                                                     max(spec.runs)) for t in spec.trials))
        sessions = subjects * max(spec.runs)
    else:
        agent, params = spec.agent, dict(spec.params)
        sessions = max(spec.runs) * (2 if spec.kind == "metric-power" else 1)
    per = max(session_bytes(exp, agent, params, design_for_trials(exp, t, spec.design)) for t in spec.trials)
    rows = _estimate_rows(spec, exp)
    need = per * sessions * MEMORY_COPIES * concurrent + rows * ESTIMATE_ROW_BYTES
    of_rows = f", {rows:,} rows of estimates" if rows else ""
    check_memory(need, f"this study ({sessions} sessions per task, {concurrent} task(s) at once{of_rows})",
                 "use fewer subjects, runs or trials, or fewer `workers`")
    return need


#: Bytes of one row of a recovery study's table (a subject's estimate of one parameter with its interval and
#: flags: 128 measured on RW), twice over for the tasks' rows and their concatenation.
ESTIMATE_ROW_BYTES = 2 * 160


def _estimate_rows(spec: StudySpec, exp: ExperimentSpec) -> int:
    """A recovery study's rows, every task's together: at a chunked task's scale they, not the
    trials, bound the study's memory (a row per subject and parameter or contrast)."""
    if spec.kind != "recovery" or not isinstance(spec, ModelStudy):
        return 0
    model = exp.model(spec.models[0])
    per_subject = len(model.parameters) + len(model.contrasts)
    return spec.reps * sum(spec.subjects) * len(spec.trials) * len(spec.runs) * per_subject


def _check_model_settings(spec: ModelStudy, exp: ExperimentSpec, model: CognitiveModel) -> None:
    names = set(model.parameters.names)
    if spec.kind != "model-recovery":
        for setting in ("fixed", "ranges", "base"):
            check_parameter_names(getattr(spec, setting, {}), names, f"model {model.name}")
    if isinstance(spec, RecoveryStudy) and names <= set(spec.fixed):
        raise InputError(f"every parameter of {model.name} is fixed ({', '.join(sorted(names))}): nothing is left "
                         "to recover; drop a `fix`")
    if isinstance(spec, PowerStudy):
        model.contrast(spec.effect, {p: 0.0 for p in model.parameters.names})
    if spec.method == "hierarchical" and not model.has_pymc:
        raise InputError(f"model {model.name} has no PyMC version: use method='mle'")
    gen = exp.generator(model.name)
    check_parameter_names(spec.params, set(exp.agent(gen.agent).parameters.names), f"agent {gen.agent}")


def _headline(exp: ExperimentSpec) -> tuple[str, ...]:
    return exp.metrics.headline


# ----------------------------------------------------------------------------- tasks
def run_task(spec: StudySpec, task: Mapping[str, Any]) -> pd.DataFrame:
    """One unit of a study; a pure function of (spec, task): the same rows anywhere."""
    from cogtestbed.studies.metric_studies import METRIC_TASKS
    from cogtestbed.studies.model_studies import MODEL_TASKS

    exp = get_experiment(spec.experiment)
    ss = np.random.SeedSequence([spec.seed, spec.stream(task)])
    param_seq, sim_seq, fit_seq = ss.spawn(3)
    streams = {"rng": np.random.default_rng(param_seq), "sim_seq": sim_seq,
               "fit_seed": int(fit_seq.generate_state(1)[0])}
    design = design_for_trials(exp, task["trials"], spec.design)
    runner: dict[str, TaskFn] = {**MODEL_TASKS, **METRIC_TASKS}
    out = runner[spec.kind](spec, exp, task, design, **streams)
    out.insert(0, "task", int(task["index"]))
    out.insert(1, "rep", int(task["rep"]))
    if isinstance(spec, ModelStudy):  # a subject plays ``runs`` sessions
        out.insert(2, "n_subjects", int(task["n_subjects"]))
        out.insert(3, "runs", int(task["runs"]))
        out.insert(4, "n_trials", int(design.n_trials) * int(task["runs"]))
    else:  # a unit is one session
        out.insert(2, "runs", int(task["runs"]))
        out.insert(3, "n_trials", int(design.n_trials))
    return out


# ----------------------------------------------------------------------------- runner
#: Seconds a study waits for a Dask scheduler to answer before giving up.
DASK_CONNECT_TIMEOUT = 5.0
#: Seconds between a pool worker's checks that its parent is alive (where PR_SET_PDEATHSIG is
#: missing, or the parent died before it could be set).
PARENT_POLL_SECONDS = 1.0
#: ``prctl`` option asking Linux to signal this process when its parent dies.
PR_SET_PDEATHSIG = 1


class StudyTaskError(Exception):
    """A task failed in a worker (process pool or Dask): its message, the task, and whether the
    cause was bad input (:class:`ValueError` or an unknown name: one line for the CLI).

    Carried as plain strings, so it crosses process boundaries even where the original exception
    does not pickle; :func:`run_study` re-raises it as :class:`StudyInputError` or
    :class:`StudyFailure`.
    """

    def __init__(self, message: str, user: bool, remote_traceback: str = "", typed: bool = False) -> None:
        super().__init__(message, user, remote_traceback, typed)
        self.message, self.user, self.remote_traceback, self.typed = message, user, remote_traceback, typed

    def __str__(self) -> str:
        return self.message


def run_chunk(spec_json: str, tasks: list[dict[str, Any]]) -> pd.DataFrame:
    """Run a chunk of a study's tasks (in a worker or in process): the spec as its JSON, the rows of
    every task concatenated; a task that fails raises :class:`StudyTaskError` (picklable, with the
    worker's traceback), which :func:`reraise` turns back into the typed error."""
    from cogtestbed.collector import resume_collection

    resume_collection()  # the study's work starts: the collector back on, the start-up frozen
    spec = load_study(spec_json)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        parts = []
        for t in tasks:
            try:
                parts.append(run_task(spec, t))
            except Exception as exc:
                where = f"{spec.kind} task {t['index']} (rep {t['rep']})"
                raise StudyTaskError(f"{where}: {' '.join(str(exc).split()) or type(exc).__name__}",
                                     isinstance(exc, (ValueError, UnknownNameError)), traceback.format_exc(),
                                     isinstance(exc, CogtestbedError)) from None
        return pd.concat(parts, ignore_index=True)


def reraise(exc: StudyTaskError) -> BaseException:
    """The error to raise for a task's :class:`StudyTaskError`: a :class:`StudyInputError` for the
    user's input, else a :class:`StudyFailure` carrying the worker's traceback."""
    if exc.user:
        return StudyInputError(exc.message, typed=exc.typed, remote_traceback=exc.remote_traceback)
    return StudyFailure(f"{exc.message}\n\nworker traceback:\n{exc.remote_traceback}")


def _die_with_parent(parent: int) -> None:
    """Pool-worker initializer: end this worker when the study's process ends.

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``; everywhere: a daemon thread that exits the worker
    once its parent id changes (re-parented after the parent died).  Ctrl-C goes to the parent,
    which shuts the pool down, so workers ignore SIGINT and take SIGTERM's default action.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def dask_client(address: str | Any) -> Any:
    """A ``distributed.Client`` for ``address`` (or ``address`` itself if it is one); a scheduler that
    does not answer within :data:`DASK_CONNECT_TIMEOUT` seconds is one clear :class:`ValueError`."""
    from distributed import Client

    if isinstance(address, Client):
        return address
    try:
        return Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} within {DASK_CONNECT_TIMEOUT:g} s: "
                         f"{' '.join(str(exc).split()) or type(exc).__name__}") from None


def _chunks(tasks: list[dict[str, Any]], workers: int) -> list[list[dict[str, Any]]]:
    """``tasks`` in about four chunks per worker, in order: the per-task overhead (a message, a
    pickled payload, a table) is paid per chunk, and four leave room to balance uneven tasks."""
    size = max(1, math.ceil(len(tasks) / (4 * max(workers, 1))))
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


def _run_dask(payload: str, tasks: list[dict[str, Any]], dask: Any,
              tick: Callable[[int], None]) -> list[pd.DataFrame]:
    """Run ``tasks`` on a Dask cluster as the process pool does (:func:`_run_pool`): every worker
    connected now first runs the study's first task (it compiles, or loads from numba's disk cache,
    every kernel the study uses, so the chunks that follow only compute; one worker's rows are
    kept), then the rest goes in chunks (:func:`_chunks`) over the workers' threads.  A worker that
    joins later compiles on its first chunk."""
    from distributed import as_completed, wait

    client = dask_client(dask)
    parts: list[pd.DataFrame] = []
    try:
        workers = sorted(client.scheduler_info()["workers"])
        if workers:
            warm = [client.submit(run_chunk, payload, tasks[:1], workers=[w], allow_other_workers=False,
                                  pure=False) for w in workers]
            wait(warm)
            try:
                parts.append(warm[0].result())
            except StudyTaskError as exc:
                raise reraise(exc) from None
            tick(1)
            tasks = tasks[1:]
        chunks = _chunks(tasks, sum(client.nthreads().values()))
        futures = [client.submit(run_chunk, payload, c, pure=False) for c in chunks]
        sizes = {f.key: len(c) for f, c in zip(futures, chunks, strict=True)}
        for fut in as_completed(futures):
            try:
                parts.append(fut.result())
            except StudyTaskError as exc:
                raise reraise(exc) from None
            tick(sizes[fut.key])
    finally:
        if client is not dask:
            client.close()
    return parts


def fork_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from this one (they inherit its imported, compiled
    modules) that end with it (:func:`_die_with_parent`); end it early with :func:`stop_pool`."""
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_die_with_parent,
                               initargs=(os.getpid(),))


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel pending chunks and end running workers now (not after their current chunk)."""
    procs = list(getattr(pool, "_processes", {}).values())
    # shutdown() forgets the pool's manager thread (sets the attribute to None), so take it first.
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)
    # The pool's manager thread ends once it sees its workers gone; waiting for it here keeps the
    # interpreter's exit hook (concurrent.futures' _python_exit) from waking it through a pipe that
    # thread is closing at the same moment (CPython 3.11: "OSError: Bad file descriptor" traceback).
    if manager is not None:
        manager.join(timeout=5)


def map_forked(fn: Callable[..., Any], calls: list[tuple[Any, ...]], workers: int) -> list[Any]:
    """``fn`` of each call's arguments, in the calls' order: in this process where ``workers`` ≤ 1 or there is one
    call, else in a fork pool of ``workers`` (:func:`fork_pool`; ended at once on an error or interrupt)."""
    if workers <= 1 or len(calls) < 2:
        return [fn(*args) for args in calls]
    pool = fork_pool(min(workers, len(calls)))
    try:
        out = [f.result() for f in [pool.submit(fn, *args) for args in calls]]
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return out


def map_split(fn: Callable[..., Any], items: Any, workers: int, *common: Any) -> list[Any]:
    """``fn(part, *common)`` on ``workers`` strided parts of ``items`` (a sequence or an array's rows; ``fn`` gives
    one result per item of its part, in order) through :func:`map_forked`, the results in ``items``' order: the
    same list whatever ``workers``."""
    n = max(1, workers)
    done = map_forked(fn, [(items[i::n], *common) for i in range(n)], workers)
    out: list[Any] = [None] * len(items)
    for i, got in enumerate(done):
        out[i::n] = list(got)
    return out


def _run_pool(payload: str, tasks: list[dict[str, Any]], workers: int,
              tick: Callable[[int], None]) -> list[pd.DataFrame]:
    # The first task runs here before the pool starts, so every compiled (or cache-loaded)
    # function it needs is inherited by the forked workers instead of being loaded by each.
    try:
        parts = [run_chunk(payload, tasks[:1])]
    except StudyTaskError as exc:
        raise reraise(exc) from None
    tick(1)
    tasks = tasks[1:]
    # Chunks amortise per-task overhead (process start-up, pickling) on small tasks.
    chunks = _chunks(tasks, workers)
    # fork: workers inherit the imported, JIT-compiled modules (start-up in ms, not seconds).
    pool = fork_pool(min(workers, len(chunks)))
    try:
        futs = {pool.submit(run_chunk, payload, c): c for c in chunks}
        for fut in cf_completed(futs):
            try:
                parts.append(fut.result())
            except StudyTaskError as exc:
                raise reraise(exc) from None
            except BrokenProcessPool:
                first = futs[fut][0]["index"]
                raise WorkerDied(
                    f"a worker process died while running tasks {first}-{first + len(futs[fut]) - 1} "
                    "(killed, or out of memory); rerun with `workers` 1 to see the error") from None
            tick(len(futs[fut]))
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return parts


def run_study(
    spec: StudySpec,
    workers: int | None = None,
    dask: str | Any | None = None,
    on_task_done: Callable[[int], None] | None = None,
    done: Mapping[int, pd.DataFrame] | None = None,
) -> StudyResult:
    """Check ``spec``, run every task and summarise.

    ``workers``: local processes (default: CPU count, 1 = this process).  ``dask``: a scheduler
    address (or a ``distributed.Client``).  ``done``: rows of tasks already run (by index; e.g. the
    task the up-front time estimate timed), not run again.  Rows are sorted by task index, so the
    table is identical whichever way the tasks ran.
    """
    exp = check_study(spec)
    tasks = spec.tasks()
    ready = [done[t["index"]] for t in tasks if done and t["index"] in done]
    tasks = [t for t in tasks if not done or t["index"] not in done]
    payload = spec.model_dump_json()
    start = time.perf_counter()
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    if dask is None:
        check_study_memory(spec, exp, concurrent_tasks(spec, workers))

    def tick(k: int) -> None:
        if on_task_done is not None:
            on_task_done(k)

    if ready:
        tick(len(ready))
    if not tasks:
        parts: list[pd.DataFrame] = []
    elif dask is not None:
        parts = _run_dask(payload, tasks, dask, tick)
    elif n_workers <= 1 or len(tasks) == 1:
        parts = []
        for t in tasks:
            try:
                parts.append(run_chunk(payload, [t]))
            except StudyTaskError as exc:
                raise reraise(exc) from None
            tick(1)
    else:
        parts = _run_pool(payload, tasks, n_workers, tick)
    table = pd.concat([*ready, *parts], ignore_index=True).sort_values("task", kind="stable")
    table = table.drop(columns="task").reset_index(drop=True)
    from cogtestbed.studies.summaries import summarise

    return StudyResult(spec, table, summarise(spec, table), time.perf_counter() - start)


class StudyResult:
    """A finished study: spec, tidy results table, summary dict, wall time."""

    def __init__(self, spec: StudySpec, table: pd.DataFrame, summary: dict[str, Any],
                 seconds: float) -> None:
        self.spec, self.table, self.summary, self.seconds = spec, table, summary, seconds
        #: The user's recovery criterion (``recover --precision``), read by the verdict.
        self.criterion: dict[str, Any] | None = None
        #: The ``request`` block of the study's ``summary.json``: the options it was run with, as the
        #: ``ct.`` function and the command took them (:func:`cogtestbed.request.request_block`); None
        #: for a study run otherwise.
        self.request: dict[str, Any] | None = None

    @property
    def verdict(self) -> str:
        from cogtestbed.studies.verdict import verdict

        return verdict(self)


# ----------------------------------------------------------------------------- declared studies
#: Effect size of a declared power study that names none (on the parameter's natural scale).
DEFAULT_EFFECT_SIZE = 0.2


def spec_from_decl(exp: ExperimentSpec, decl: StudyDecl, **overrides: Any) -> StudySpec:
    """The study the experiment declares (``overrides`` win)."""
    fields: dict[str, Any] = {"kind": decl.kind, "experiment": exp.name, "direction": decl.direction,
                              "params": dict(decl.params), "sampler": decl.sampler,
                              "ranges": {k: tuple(v) for k, v in decl.ranges.items()},
                              "fixed": dict(decl.fixed), "design": dict(decl.design),
                              "metric_options": dict(decl.metric_options)}
    if decl.model is not None:
        fields["models"] = (decl.model,)
    if decl.models:
        fields["models"] = tuple(decl.models)
    if decl.kind in ("recovery", "model-recovery", "sbc"):
        fields["method"] = "hierarchical" if decl.kind == "sbc" else "mle"
    if decl.kind == "power":
        fields["effect"] = decl.parameter
        fields["effect_size"] = decl.values[0] if decl.values else DEFAULT_EFFECT_SIZE
    else:
        fields["parameter"] = decl.parameter
        fields["values"] = tuple(decl.values)
    for name in ("agent", "metric", "test"):
        if getattr(decl, name) is not None:
            fields[name] = getattr(decl, name)
    if decl.compare is not None:
        fields["compare"] = (dict(decl.compare[0]), dict(decl.compare[1]))
    if decl.runs:
        fields["runs"] = tuple(decl.runs)
    if decl.trials:
        fields["trials"] = tuple(decl.trials)
    if decl.subjects:
        fields["subjects"] = tuple(decl.subjects)
    own = kind_fields(decl.kind)  # a declaration's settings that its kind has no use for are left out
    return study_spec(**{**{k: v for k, v in fields.items() if k in own}, **overrides})


def declared_studies(exp: ExperimentSpec, name: str | None = None) -> list[tuple[str, StudyDecl]]:
    """(``kind:index`` name, declaration) of every study ``exp`` declares, or of the one named."""
    out: list[tuple[str, StudyDecl]] = []
    for kind in STUDY_KINDS:
        for i, decl in enumerate(exp.studies_of(kind)):
            out.append((f"{kind}:{i}" if len(exp.studies_of(kind)) > 1 else kind, decl))
    if name is None:
        return out
    found = [(n, d) for n, d in out if n == name]
    if not found:
        raise UnknownNameError("declared study", name, [n for n, _ in out], exp.name)
    return found


def run_declared_study(spec: ExperimentSpec, decl: StudyDecl, reps: int = 1, seed: int = 0,
                       workers: int | None = 1, **overrides: Any) -> StudyResult:
    """Run one of the experiment's declared studies with its declared settings at ``reps``.

    Declared grids are kept; a Bayesian study runs short chains when ``reps`` is 1 (a smoke run).
    """
    extra: dict[str, Any] = {"reps": reps, "seed": seed}
    if reps == 1 and (decl.kind == "sbc"):
        extra.update(draws=100, tune=100, chains=1)
    extra.update(overrides)
    return run_study(spec_from_decl(spec, decl, **extra), workers=workers)
