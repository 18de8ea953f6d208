"""Simulating synthetic subjects: the batch path (numba kernels) and the step path (gymnasium
``reset``/``step`` with ``agent.act``/``agent.update``), which produce identical trial tables for
the same seed.

Seeding: ``SeedSequence(seed)`` is split into an *environment* stream, from which all sessions are
drawn at once (:meth:`TextEnv.sample_sessions`), and an *agent* stream, from which subjects draw
their choice uniforms in subject order.  An LLM run with the same seed meets the same sessions.
An optional :class:`~cogtestbed.lapse.Lapse` (invalid and random answers) draws its
decisions from a third stream (:func:`~cogtestbed.lapse.lapse_rng`), so the first two, and
a lapse-free table, are unchanged by it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, cast, get_args

import numpy as np
import pandas as pd

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.adaptive import is_adaptive
from cogtestbed.environments.base import NO_ACTION, Design, Outcomes, Sessions, TextEnv
from cogtestbed.environments.forms import FORM_COLUMN, OFFSET_PREFIX, FormDesign, FormDraw, FormError, draw_forms
from cogtestbed.errors import InputError
from cogtestbed.interpreted import AGREES_WITH_COMPILED, interpreting
from cogtestbed.lapse import INVALID, NORMAL, RANDOM, Lapse, LapseDraws, draw_lapses, lapse_rng
from cogtestbed.memory import MEMORY_COPIES, check_disk, check_memory
from cogtestbed.parameters import per_subject
from cogtestbed.registry import Experiment, get_experiment
from cogtestbed.subject_draws import Call, NotChunkable, chunk_bounds, chunk_draws, draw_plan
from cogtestbed.trials import pool_runs as pool_runs  # where the CLI's fit and the studies read it before

Method = Literal["auto", "batch", "interpreted", "step"]
#: The paths a run takes: the batch path compiled, the batch path with its kernels run as plain
#: Python (:mod:`cogtestbed.interpreted`), the step path.
Path = Literal["batch", "interpreted", "step"]

#: ``method="auto"`` interprets the batch path's kernels for a run whose estimated Python time
#: (:func:`interpreted_estimate_s`: subjects × a session's most steps × the agent's
#: :meth:`SyntheticAgent.interpreted_cost_us` of the design and parameters) is
#: at most this, once per process; otherwise it compiles them.  cogtestbed's choice, measured
#: 26 Nov 2026 (``python benchmarks/bench_first_call.py --every-experiment --compile``): compiling an
#: experiment's kernels after install costs 1.5–3.6 s of CPU (risky choice's 0.6 s), loading them from
#: numba's cache 0.3–0.9 s; the estimates are upper ones (measured figures 10–50 % below).
INTERPRETED_BUDGET_S = 1.0
_auto_interpreted_runs_left = [1]


def resolve_method(method: str, agent_cls: type[SyntheticAgent], n_subjects: int, steps: int,
                   design: Design | None = None, params: Mapping[str, Any] | None = None) -> Path:
    """The path ``method`` names: ``"batch"``, ``"interpreted"`` or ``"step"`` as given; ``"auto"``
    the interpreted batch path for the first small run of a process (:data:`INTERPRETED_BUDGET_S`, with
    :func:`interpreted_estimate_s` of ``design`` and ``params``: a first call after install compiles no
    kernel), unless the process has compiled a run already; else the batch path (a loop of small runs
    compiles the kernels once, on its second run).  Every path gives the same table.  Choosing the
    interpreted path spends the process's one run: :func:`chosen_path` gives it back if the call fails."""
    checked_method(method)
    if method != "auto":
        return cast(Path, method)
    estimate_s = interpreted_estimate_s(agent_cls, n_subjects, steps, design, params)
    if not AGREES_WITH_COMPILED or estimate_s > INTERPRETED_BUDGET_S or _auto_interpreted_runs_left[0] < 1:
        return "batch"
    _auto_interpreted_runs_left[0] -= 1
    return "interpreted"


def checked_method(method: str) -> Method:
    """``method`` if it is one of :data:`Method`, else one clear error."""
    if method not in get_args(Method):
        raise InputError(f"method must be one of {', '.join(map(repr, get_args(Method)))}, got {method!r}")
    return cast(Method, method)


def interpreted_estimate_s(agent_cls: type[SyntheticAgent], n_subjects: int, steps: int,
                           design: Design | None = None, params: Mapping[str, Any] | None = None) -> float:
    """CPU seconds ``n_subjects`` sessions of ``steps`` steps are estimated to take interpreted: the agent's
    per-step figure for this design and these parameters (:meth:`SyntheticAgent.interpreted_cost_us`)."""
    return n_subjects * int(steps) * agent_cls.interpreted_cost_us(design, params or {}) * 1e-6


def plays_step(env_cls: type[TextEnv[Any, Any]], agent_cls: type[SyntheticAgent], design: Design,
               lapse: Lapse | None) -> bool:
    """Whether a run plays the step path whatever its method: an adaptive design (each next trial depends
    on the answers so far; no kernel plays one), or lapses where the agent's kernel does not play them
    (not a :class:`KernelLapsingAgent`) and they cannot be applied after the fact (a step of the design
    depends on an earlier answer: not :meth:`TextEnv.independent_of_answers`)."""
    if is_adaptive(design):
        return True
    lapsing = lapse is not None and lapse.active
    return lapsing and not issubclass(agent_cls, KernelLapsingAgent) and not env_cls.independent_of_answers(design)


@contextmanager
def chosen_path(method: str, exp: Experiment, agent_cls: type[SyntheticAgent], design: Design,
                params: Mapping[str, Any] | None, n_subjects: int, lapse: Lapse | None = None) -> Iterator[Path]:
    """The path a run plays, resolved once up front: ``"step"`` where it plays the step path whatever
    ``method`` asks (:func:`plays_step`; no interpreted run spent), else :func:`resolve_method`.  If the
    block raises (the call refused after the path is chosen: the output file claimed by another writer,
    the memory check, an :class:`InputError` during the run), an interpreted run ``"auto"`` spent is
    given back: the process's one interpreted run goes to a call that completes.  ``n_subjects``: the
    subjects the block simulates on this path (with a memory probe's one subject)."""
    if checked_method(method) != "step" and plays_step(exp.env_cls, agent_cls, design, lapse):
        path: Path = "step"
    else:
        path = resolve_method(method, agent_cls, n_subjects, exp.env_cls.max_steps(design), design, params)
    spent = method == "auto" and path == "interpreted"
    try:
        yield path
    except BaseException:
        if spent:
            _auto_interpreted_runs_left[0] += 1
        raise


def seed_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(environment generator, agent generator) derived from one integer seed."""
    env_seq, agent_seq = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(env_seq), np.random.default_rng(agent_seq)


def subject_params(
    agent_cls: type[SyntheticAgent], params: Mapping[str, Any] | None, n_subjects: int
) -> dict[str, np.ndarray]:
    """Per-subject parameter arrays (scalars broadcast), validated against the bounds."""
    arrays = agent_cls.parameters.validate_array(dict(params or {}))
    return {k: per_subject(v, n_subjects) for k, v in arrays.items()}


def sample_sessions(experiment: Experiment, design: Design, n: int, env_rng: np.random.Generator) -> Sessions:
    return experiment.env_cls.sample_sessions(design, n, env_rng)


def run_stepwise(
    env: TextEnv[Any, Any],
    sessions: Sessions,
    make_subject: Callable[[int], Any],
    on_subject_done: Callable[[int], None] | None = None,
) -> Outcomes:
    """Play every session through ``env.reset``/``env.step`` with a subject per session.

    ``make_subject(i)`` returns an object with ``act(obs)`` and ``update(obs, a, r, next_obs)``
    (a reset synthetic agent or an LLM subject).
    """
    parts = []
    for i in range(sessions.n_subjects):
        subject = make_subject(i)
        obs, _ = env.reset(options={"session": sessions.subject(i)})
        done = False
        while not done:
            action = subject.act(obs)
            t = env.t
            next_obs, _, done, _, _ = env.step(action)
            # the recorded outcome of this step (NaN where nothing was paid), not gymnasium's
            # scalar reward, which reports 0 for an invalid answer
            subject.update(obs, action, float(env.outcomes.reward[0, t]), next_obs)
            obs = next_obs
        parts.append(env.outcomes)
        if on_subject_done is not None:
            on_subject_done(i)
    return Outcomes.stack(parts)


def lapse_after_the_fact(env: TextEnv[Any, Any], sessions: Sessions, outcomes: Outcomes,
                         draws: LapseDraws) -> Outcomes:
    """Apply pre-drawn lapses to a lapse-free batch run of an answer-independent environment.

    Where no step depends on an earlier answer (:attr:`TextEnv.answer_independent`), a lapse
    changes only its own step, and the step path's record of it is what ``env.step`` records
    for that answer at that step: :data:`NO_ACTION` (invalid) or :meth:`TextEnv.random_answer`
    from the step's uniforms (random).  So each lapsed step is played alone on a session reset
    to its subject, and its record (action, reward, validity, the environment's extra columns,
    scored answer) replaces the batch's; every other step keeps the agent's own answer, which
    the step path also gives (the agent answers every step from the same pre-drawn uniforms).
    A lapsed step is played with :meth:`TextEnv.play_step`, which leaves the record ``step`` leaves
    but renders no next observation: nothing here reads one, and rendering can cost far more than
    the step (magnitude draws and encodes PNG stimuli: docs/benchmarks.md).
    Returns new arrays (``outcomes`` is not modified).
    """
    out = _copied(outcomes)
    for i in map(int, np.flatnonzero((draws.kind != NORMAL).any(axis=1))):
        env.reset(options={"session": sessions.subject(i)})
        for t, kind in _lapsed_steps(env, out, draws, i):
            env.t = t
            env.play_step(NO_ACTION if kind == INVALID else env.random_answer(draws.u[i, t]))
            _copy_step(env.outcomes, out, i, t)
    return out


def _copied(outcomes: Outcomes) -> Outcomes:
    """``outcomes`` with every array copied, so that writing a step into the copy leaves it as it was.
    The elements of its object arrays (None, strings, frozen :class:`ScoredAnswer` s) are shared, not
    copied: nothing modifies them in place, and ``copy.deepcopy`` copied them one Python call each."""
    arrays = {f.name: getattr(outcomes, f.name) for f in dataclasses.fields(outcomes) if f.name != "extra"}
    copies: dict[str, Any] = {name: None if a is None else a.copy() for name, a in arrays.items()}
    return dataclasses.replace(outcomes, **copies, extra={k: a.copy() for k, a in outcomes.extra.items()})


def _lapsed_steps(env: TextEnv[Any, Any], outcomes: Outcomes, draws: LapseDraws, i: int) -> list[tuple[int, int]]:
    """(step, lapse kind) of every step of subject ``i`` that the batch run played and whose lapse
    unit lapsed (invalid or random), in order.  Where the environment keeps the base
    :meth:`TextEnv.lapse_unit` (the step itself) they are found with array operations rather than
    by visiting every step in Python; an environment whose unit is computed from the step (a trial
    of several steps) is asked step by step."""
    played = np.ones(outcomes.action.shape[1], dtype=bool) if outcomes.played is None else outcomes.played[i]
    if type(env).lapse_unit is TextEnv.lapse_unit:
        kinds = draws.kind[i]
        return [(int(t), int(kinds[t])) for t in np.flatnonzero(played & np.isin(kinds, (INVALID, RANDOM)))]
    lapsed = []
    for t in map(int, np.flatnonzero(played)):
        env.t = t
        kind = int(draws.kind[i, env.lapse_unit()])
        if kind in (INVALID, RANDOM):
            lapsed.append((t, kind))
    return lapsed


def _copy_step(source: Outcomes, target: Outcomes, i: int, t: int) -> None:
    """Copy step ``t`` of a one-session record into row ``i`` of ``target`` (its fields only)."""
    target.action[i, t] = source.action[0, t]
    target.reward[i, t] = source.reward[0, t]
    target.valid[i, t] = source.valid[0, t]
    for name in ("raw_response", "parse_error", "played", "scored"):
        dst, src = getattr(target, name), getattr(source, name)
        if dst is not None and src is not None:
            dst[i, t] = src[0, t]
    for key, arr in target.extra.items():
        if key in source.extra:
            arr[i, t] = source.extra[key][0, t]


#: A design of at most this many steps a session is measured directly (one simulated subject, a
#: few MiB at most); a larger one is estimated from its step count before anything is allocated.
MEASURED_STEPS = 20_000


def session_bytes(experiment: str | Experiment, agent: str, params: Mapping[str, Any] | None = None,
                  design: Design | None = None, method: Path = "batch") -> int:
    """Bytes of one simulated subject-session's trial table, from the design before any allocation:
    the session's most steps (:meth:`TextEnv.max_steps`, closed form) times the bytes a step takes,
    measured on one simulated subject of ``design`` itself where it has at most :data:`MEASURED_STEPS`
    steps (exact), else of the experiment's default design; on the path ``method`` the run takes (the
    same table either way: a run that compiles nothing measures without compiling)."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    design = design if design is not None else exp.env_cls.design_cls()
    steps = int(exp.env_cls.max_steps(design))
    probe = design if steps <= MEASURED_STEPS else exp.env_cls.design_cls()
    return math.ceil(_bytes_per_step(exp, agent, params, probe, method) * steps)


def _bytes_per_step(exp: Experiment, agent: str, params: Mapping[str, Any] | None, design: Design,
                    method: Path = "batch") -> float:
    """Bytes of a one-subject trial table of ``design`` per step the session can take."""
    one = simulate(exp, agent, 1, 0, params, design=design, method=method)
    return int(one.memory_usage(deep=True).sum()) / max(1, int(exp.env_cls.max_steps(design)))


def check_simulation_memory(experiment: str | Experiment, agent: str, n_sessions: int,
                            params: Mapping[str, Any] | None = None, design: Design | None = None,
                            copies: int = MEMORY_COPIES, method: Path = "batch") -> int:
    """Estimate the memory ``n_sessions`` simulated sessions take (``copies`` working copies of the
    table) and refuse at once when it exceeds what is available; return the estimate in bytes."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    fixed = {k: v for k, v in dict(params or {}).items() if not np.ndim(v)}
    need = session_bytes(exp, agent, fixed, design, method) * int(n_sessions) * copies
    check_memory(need, f"{n_sessions} simulated {exp.name} sessions ({copies} working copies)")
    return need


class LapsingSubject:
    """A subject whose answers lapse as pre-drawn (the step path of a :class:`Lapse`).

    ``act`` lets the subject choose (so it draws its own uniforms as on any step), then replaces
    the answer on a lapsed step (the decision of the step's lapse unit,
    :meth:`~TextEnv.lapse_unit`; the random answer from the step's own uniforms):
    :data:`NO_ACTION` (invalid, as an unparseable LLM answer) or the environment's
    :meth:`~TextEnv.random_answer`.  ``update`` passes the answer actually given,
    so a learning subject learns from a random answer's outcome.
    """

    def __init__(self, subject: Any, env: TextEnv[Any, Any], draws: LapseDraws) -> None:
        self.subject, self.env, self.draws = subject, env, draws

    def act(self, obs: Any) -> Any:
        action = self.subject.act(obs)
        kind = int(self.draws.kind[self.env.lapse_unit()])
        if kind == INVALID:
            return NO_ACTION
        if kind == RANDOM:
            return self.env.random_answer(self.draws.u[self.env.t])
        return action

    def update(self, obs: Any, action: Any, reward: float, next_obs: Any) -> None:
        self.subject.update(obs, action, reward, next_obs)


def as_sessions(table: pd.DataFrame, runs: int) -> pd.DataFrame:
    """Relabel a simulated table's runs ``k`` as session ``k % runs`` of subject ``k // runs``.

    The one way runs of one agent are pooled: a model then fits each subject's sessions together
    (CogBench scores an LLM's runs as one participant); ``runs`` = the number of runs pools them all.
    """
    run = table["subject"].to_numpy(dtype=np.int64)
    return table.assign(subject=run // runs, session=run % runs)


def simulate(
    experiment: str | Experiment,
    agent: str,
    n_subjects: int,
    seed: int,
    params: Mapping[str, Any] | None = None,
    design: Design | None = None,
    method: Method = "batch",
    on_subject_done: Callable[[int], None] | None = None,
    lapse: Lapse | None = None,
    forms: FormDesign | None = None,
) -> pd.DataFrame:
    """Simulate ``n_subjects`` synthetic subjects and return their trial table.

    ``params`` maps parameter names to scalars (shared) or arrays of shape (n_subjects,).
    ``method="step"`` plays the gymnasium environment trial by trial (slow, the reference);
    ``"interpreted"`` the batch path with its kernels run as plain Python (no compilation,
    :mod:`cogtestbed.interpreted`); ``"auto"`` chooses (:func:`resolve_method`).  The path is
    resolved once, up front (:func:`chosen_path`): a run that plays the step path whatever ``method``
    asks (:func:`plays_step`) plays it and spends no interpreted run.
    ``lapse``: invalid and random answers (:mod:`cogtestbed.lapse`).  The batch path plays
    them in the agent's kernel where it supports lapses
    (:class:`~cogtestbed.agents.base.KernelLapsingAgent`), applies them to the lapse-free batch run where
    no step depends on an earlier answer (:func:`lapse_after_the_fact`), and otherwise the
    step path is played, whose environment defines what an invalid or random answer does; all give the
    same table, byte for byte.

    ``forms``: subjects are assigned to prompt forms (balanced, seeded from the forms stream of
    ``seed``) and each form shifts the named parameters by its random offset on their
    unconstrained scale; the table gains ``form`` and ``form_offset_<param>`` (the true offset)
    and ``param_<name>`` holds the shifted value each subject was simulated with.  Sessions and
    the agent's draws are those of the same seed without forms.
    """
    exp, agent_cls, design, per_subject, drawn = _subjects(experiment, agent, n_subjects, seed, params, design, forms)
    with chosen_path(method, exp, agent_cls, design, per_subject, n_subjects, lapse) as path, \
            interpreting(path == "interpreted"):
        table = _play(exp, agent, agent_cls, design, n_subjects, seed, per_subject, path, on_subject_done, lapse)
    return table if drawn is None else with_form_columns(table, drawn)


def _subjects(experiment: str | Experiment, agent: str, n_subjects: int, seed: int,
              params: Mapping[str, Any] | None, design: Design | None, forms: FormDesign | None,
              ) -> tuple[Experiment, type[SyntheticAgent], Design, dict[str, np.ndarray], FormDraw | None]:
    """A simulation's experiment, agent class, design (the default where None), each subject's parameters
    (shifted by its prompt form's offsets where ``forms`` is given) and the forms drawn (:func:`simulate`)."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    if n_subjects < 1:
        raise InputError("n_subjects must be at least 1")
    agent_cls = exp.agent(agent)
    per_subject = subject_params(agent_cls, params, n_subjects)
    drawn = None if forms is None else draw_forms(forms, n_subjects, seed)
    if drawn is not None:
        per_subject = shifted_params(agent_cls, per_subject, drawn)
    return exp, agent_cls, design if design is not None else exp.env_cls.design_cls(), per_subject, drawn


def _play(exp: Experiment, agent: str, agent_cls: type[SyntheticAgent], design: Design, n_subjects: int,
          seed: int, per_subject: dict[str, np.ndarray], path: Path,
          on_subject_done: Callable[[int], None] | None, lapse: Lapse | None) -> pd.DataFrame:
    """Draw ``seed``'s sessions and play them on ``path`` (:func:`simulate`): the trial table."""
    env_rng, agent_rng = seed_streams(seed)
    sessions = exp.env_cls.sample_sessions(design, n_subjects, env_rng)
    steps = exp.env_cls.max_steps(design)
    draws = None
    if lapse is not None and lapse.active:
        draws = draw_lapses(lapse, lapse_rng(seed), n_subjects, steps, exp.env_cls.lapse_draws)
    # Both paths read the same rows: on the step path a session that ends early (variable-length
    # tasks) must not shift the next subject's draws.
    rows = agent_rng.random((n_subjects, steps * agent_cls.draws_per_trial))
    return _play_drawn(exp, agent, agent_cls, design, sessions, per_subject, path, on_subject_done, rows, draws,
                       agent_rng)


def _play_drawn(exp: Experiment, agent: str, agent_cls: type[SyntheticAgent], design: Design, sessions: Sessions,
                per_subject: dict[str, np.ndarray], path: Path, on_subject_done: Callable[[int], None] | None,
                rows: np.ndarray, draws: LapseDraws | None, agent_rng: np.random.Generator) -> pd.DataFrame:
    """Play drawn ``sessions`` with the agent's uniform ``rows`` and lapse ``draws`` on ``path``."""
    if path != "step":
        outcomes = _play_batch(exp, agent_cls, design, sessions, per_subject, rows, draws, path)
    else:
        env = exp.env_cls(design)

        def make_subject(i: int) -> Any:
            subject = agent_cls({k: float(v[i]) for k, v in per_subject.items()})
            subject.reset(agent_rng, uniforms=rows[i])
            return subject if draws is None else LapsingSubject(subject, env, draws.subject(i))

        outcomes = run_stepwise(env, sessions, make_subject, on_subject_done)
    return exp.env_cls.trials_table(design, sessions, outcomes, agent=agent, params=per_subject)


#: Bytes of trial table a chunk of :func:`simulate_chunks` aims at when no chunk size is given: a chunk's
#: table, its arrays and its Parquet conversion stay a few hundred MiB whatever the subject count.
CHUNK_BYTES = 48 * 2**20


def simulate_chunks(
    experiment: str | Experiment,
    agent: str,
    n_subjects: int,
    seed: int,
    params: Mapping[str, Any] | None = None,
    design: Design | None = None,
    method: Path = "batch",
    on_subject_done: Callable[[int], None] | None = None,
    lapse: Lapse | None = None,
    forms: FormDesign | None = None,
    chunk: int | None = None,
) -> Iterator[pd.DataFrame]:
    """:func:`simulate`'s trial table in chunks of at most ``chunk`` subjects (default: about
    :data:`CHUNK_BYTES` of table each), in subject order: their concatenation is :func:`simulate`'s
    table for the same arguments, row for row, while memory holds one chunk at a time.

    Every draw is the one the all-at-once run gives the chunk's subjects: the agent's uniforms and the
    lapses are read from their streams' places (:mod:`cogtestbed.subject_draws`), as are the sessions
    where the environment draws them as uniforms with a subject axis first (every session of the chunk
    alone); otherwise all sessions are drawn up front and sliced (their arrays only, not the table).
    ``method`` is a resolved path (:func:`chosen_path`)."""
    exp, agent_cls, design, per_subject, drawn = _subjects(experiment, agent, n_subjects, seed, params, design, forms)
    if chunk is None:
        chunk = chunk_subjects(exp, agent, {k: v[0] for k, v in per_subject.items()}, design, method)
    draws = _ChunkDraws(exp, agent_cls, design, n_subjects, seed, lapse)
    for start, stop in chunk_bounds(n_subjects, chunk):
        part = {k: v[start:stop] for k, v in per_subject.items()}
        done = None if on_subject_done is None else (lambda i, s=start: on_subject_done(i + s))
        with interpreting(method == "interpreted"):
            table = _play_drawn(exp, agent, agent_cls, design, draws.sessions(start, stop), part, method,
                                done, draws.rows(start, stop), draws.lapses(start, stop), draws.agent_rng)
        table["subject"] = table["subject"].to_numpy() + start
        yield table if drawn is None else with_form_columns(table, drawn)


def streams_sessions(experiment: str | Experiment, design: Design | None = None) -> bool:
    """Whether :func:`simulate_chunks` draws the environment's sessions a chunk at a time (uniforms with a
    subject axis first); otherwise they are drawn for every subject up front, and memory grows with them."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    design = design if design is not None else exp.env_cls.design_cls()
    return draw_plan(lambda m, rng: exp.env_cls.sample_sessions(design, m, rng)) is not None


def check_streamed_simulation(experiment: str | Experiment, agent: str, n_sessions: int, chunk: int,
                              where: str | os.PathLike[str], params: Mapping[str, Any] | None = None,
                              design: Design | None = None, method: Path = "batch") -> None:
    """Refuse at once a streamed simulation (:func:`simulate_chunks` to a file in ``where``) that cannot
    finish: a chunk's memory, or every session's where the environment draws its sessions up front
    (:func:`streams_sessions`), and the file's size on disk, bounded above by the table's size in memory."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    streamed = streams_sessions(exp, design)
    check_simulation_memory(exp, agent, chunk if streamed else n_sessions, params, design, method=method)
    fixed = {k: v for k, v in dict(params or {}).items() if not np.ndim(v)}
    check_disk(session_bytes(exp, agent, fixed, design, method) * int(n_sessions), where,
               f"writing {n_sessions} simulated {exp.name} sessions (the table's size in memory, an upper bound)")


def chunk_subjects(experiment: str | Experiment, agent: str, params: Mapping[str, Any] | None = None,
                   design: Design | None = None, method: Path = "batch") -> int:
    """Subjects a chunk of :func:`simulate_chunks` holds by default: about :data:`CHUNK_BYTES` of trial
    table (:func:`session_bytes`), at least one."""
    fixed = {k: v for k, v in dict(params or {}).items() if not np.ndim(v)}
    return max(1, CHUNK_BYTES // max(1, session_bytes(experiment, agent, fixed, design, method)))


class _ChunkDraws:
    """The draws of a :func:`simulate` run, served a chunk of subjects at a time."""

    def __init__(self, exp: Experiment, agent_cls: type[SyntheticAgent], design: Design, n: int, seed: int,
                 lapse: Lapse | None) -> None:
        self.n, self.steps = n, exp.env_cls.max_steps(design)
        self.env_rng, self.agent_rng = seed_streams(seed)
        self.k = self.steps * agent_cls.draws_per_trial
        self.draw_sessions = lambda m, rng: exp.env_cls.sample_sessions(design, m, rng)
        self.plan = draw_plan(self.draw_sessions)
        self.all_sessions: Sessions | None = None
        self.lapse = lapse if lapse is not None and lapse.active else None
        self.lapse_k, self.seed = exp.env_cls.lapse_draws, seed

    def sessions(self, start: int, stop: int) -> Sessions:
        if self.plan is not None:
            try:
                return cast(Sessions, chunk_draws(self.draw_sessions, self.plan, self.env_rng, self.n, start, stop))
            except NotChunkable:  # drawn otherwise than the probes: all at once from here on
                self.plan = None
        if self.all_sessions is None:
            self.all_sessions = self.draw_sessions(self.n, self.env_rng)
        whole = self.all_sessions
        return type(whole)(**{f.name: getattr(whole, f.name)[start:stop] for f in dataclasses.fields(whole)})

    def rows(self, start: int, stop: int) -> np.ndarray:
        plan = (Call((self.k,), shared=False),)
        return chunk_draws(lambda m, rng: rng.random((m, self.k)), plan, self.agent_rng, self.n, start, stop)

    def lapses(self, start: int, stop: int) -> LapseDraws | None:
        if self.lapse is None:
            return None
        lapse, steps, k = self.lapse, self.steps, self.lapse_k
        plan = (Call((steps,), shared=False), Call((steps, k), shared=False))
        return chunk_draws(lambda m, rng: draw_lapses(lapse, rng, m, steps, k), plan, lapse_rng(self.seed),
                           self.n, start, stop)


def _play_batch(exp: Experiment, agent_cls: type[SyntheticAgent], design: Design, sessions: Sessions,
                per_subject: dict[str, np.ndarray], rows: np.ndarray, draws: LapseDraws | None, path: Path) -> Outcomes:
    """The batch path's outcomes (compiled or interpreted): lapses played by the agent's kernel
    (:class:`KernelLapsingAgent`) or applied after the fact (:func:`lapse_after_the_fact`; the path was
    chosen by :func:`plays_step`, so the environment is answer-independent there)."""
    if path == "batch":
        _auto_interpreted_runs_left[0] = 0  # the process has compiled: "auto" compiles from now on
    if draws is None:
        return agent_cls.simulate_batch(design, sessions, per_subject, rows)
    if issubclass(agent_cls, KernelLapsingAgent):
        lapsed = agent_cls.simulate_batch_lapsed(design, sessions, per_subject, rows, draws)
        if lapsed is None:
            raise TypeError(f"{agent_cls.__name__} declares a lapsing kernel but plays no lapsed batch")
        return lapsed
    plain = agent_cls.simulate_batch(design, sessions, per_subject, rows)
    return lapse_after_the_fact(exp.env_cls(design), sessions, plain, draws)


def shifted_params(agent_cls: type[SyntheticAgent], per_subject: dict[str, np.ndarray],
                   drawn: FormDraw) -> dict[str, np.ndarray]:
    """Each subject's parameters shifted by its form's offset on the unconstrained scale; refused in one
    line where a shift leaves a parameter's bounds (a parameter without a transform is shifted on its own,
    bounded scale), so no path simulates a subject its agent would refuse."""
    out = dict(per_subject)
    for name in drawn.offsets:
        if name not in agent_cls.parameters.names:
            raise FormError(f"`form_sd` {name}: agent {agent_cls.name!r} has no parameter {name!r} "
                            f"(it has {', '.join(agent_cls.parameters.names)})")
        p = agent_cls.parameters[name]
        z = np.asarray(p.to_unconstrained(per_subject[name]), dtype=np.float64) + drawn.subject_offsets(name)
        out[name] = np.asarray(p.to_constrained(z), dtype=np.float64)
        outside = ~np.isfinite(out[name]) | (out[name] < p.lower) | (out[name] > p.upper)
        if outside.any():
            raise FormError(f"`form_sd` {name}: a form's offset takes {name} to {float(out[name][outside][0]):g}, "
                            f"outside its bounds [{p.lower:g}, {p.upper:g}] ({_how_shifted(p)}): use a smaller SD or a "
                            "base value further inside")
    return out


def _how_shifted(p: Any) -> str:
    """Why a form's offset can leave ``p``'s bounds: no transform, or one that saturates."""
    if p.transform == "identity":
        return f"{p.name} has no transform, so the offset is added on its own scale"
    return f"the offset saturates {p.name}'s {p.transform} transform"


def with_form_columns(table: pd.DataFrame, drawn: FormDraw) -> pd.DataFrame:
    """``table`` with each row's prompt ``form`` and its true ``form_offset_<param>`` columns."""
    subject = table["subject"].to_numpy(dtype=np.int64)
    extra: dict[str, Any] = {FORM_COLUMN: drawn.form[subject].astype(np.int64)}
    for name in drawn.offsets:
        extra[OFFSET_PREFIX + name] = drawn.subject_offsets(name)[subject]
    return table.assign(**extra)
