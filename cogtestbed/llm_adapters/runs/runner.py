"""Run N LLM subjects through any registered experiment: cached, resumable, budgeted.

Seeding is the simulator's (:func:`cogtestbed.simulation.seed_streams`): the sessions come from
the environment stream of ``seed``, so an LLM with seed ``S`` meets exactly the sessions that
synthetic subjects with seed ``S`` meet.  Subjects play concurrently (asyncio, at most
``concurrency`` at once); each one's steps are sequential because every prompt renders the
history so far.

Run directory (:mod:`~cogtestbed.llm_adapters.runs.rundir`: locked while a run is in it, written as one unit)::

    RUN_DIR/run.json                       identity, transport, budget totals, status and warnings
    RUN_DIR/trials.parquet[.manifest.json] the trial table and its manifest
    RUN_DIR/calls.parquet                  one row per call: prompt, raw answer, parse result, retries
    RUN_DIR/spend.jsonl                    the budget ledger (every booking and settlement)

Resuming: every response is committed to the SQLite cache the moment it arrives, and a run's
calls are a deterministic function of its configuration and the earlier answers.  Replaying the
run against the cache therefore re-issues exactly the calls that never completed, and the final
table is the one an uninterrupted run writes.  Tables are written once, atomically, at the end.

Budgets (``max_calls`` / ``max_cost``) are totals over the run directory, never exceeded
(:class:`~cogtestbed.llm_adapters.middleware.limits.Budget`).  A subject is admitted at its first new call
for its whole remaining worst case, estimated by :func:`subject_needs` (the dry run's playthrough:
valid random actions, every re-ask, a margin on the prompt tokens), so that the budget goes to
subjects that can finish.  A budget stop leaves ``status: "stopped"``; the table holds the subjects
that finished, every answer so far is in the cache and in ``calls.parquet``, and ``--resume``
with ``--add-budget`` continues where the run stopped.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.base import Design, Outcomes, Sessions
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import GenerateRequest, LLMClient
from cogtestbed.llm_adapters.clients.logprob_probe import PROBE_REQUESTS, probe_scoring
from cogtestbed.llm_adapters.middleware.cache import CachedClient
from cogtestbed.llm_adapters.middleware.layers import CURRENT_SUBJECT, SubjectTicket
from cogtestbed.llm_adapters.middleware.limits import Budget, BudgetExhausted, Need, paid_key_event
from cogtestbed.llm_adapters.runs.agent import Attempt, ScoringLog
from cogtestbed.llm_adapters.runs.config import (
    CALLS_FILE,
    LLM_PACKAGES,
    TRIALS_FILE,
    RunConfig,
    RunResult,
    capability_entry,
    draw_sessions,
    subject_forms,
    subject_seeds,
    with_run_forms,
)
from cogtestbed.llm_adapters.runs.requests import (
    budget_outlook,
    cumulative_needs,
    subject_needs,
)
from cogtestbed.llm_adapters.runs.rundir import CONFIG_FILE, RunDir
from cogtestbed.no_data import json_safe
from cogtestbed.redact import redact_json
from cogtestbed.registry import Experiment, trials_manifest
from cogtestbed.trials import MANIFEST_SUFFIX, package_versions, table_to_parquet

logger = logging.getLogger(__name__)

__all__ = ["CALLS_FILE", "CONFIG_FILE", "TRIALS_FILE", "RunConfig", "RunResult", "run_experiment", "run_warnings"]



class OrderedGate:
    """At most ``size`` subjects at once, entering in subject order (so that a subject waiting for
    its budget admission never waits on a lower subject that has not started)."""

    def __init__(self, size: int) -> None:
        self.size, self.next, self.running = max(1, size), 0, 0
        self.cond = asyncio.Condition()

    async def enter(self, i: int) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: self.next == i and self.running < self.size)
            self.next += 1
            self.running += 1
            self.cond.notify_all()

    async def leave(self) -> None:
        async with self.cond:
            self.running -= 1
            self.cond.notify_all()


async def play_subjects(
    exp: Experiment, design: Design, client: LLMClient, config: RunConfig, *,
    concurrency: int = 8, on_step: Callable[[], None] | None = None,
    on_subject: Callable[[int, bool], None] | None = None, limit: int | None = None,
    scoring_log: ScoringLog | None = None,
) -> tuple[Sessions, list[Outcomes], list[bool], list[Attempt], str | None]:
    """Play every subject (the first ``limit`` only: a sequential plan's look); returns (sessions,
    outcomes, complete flags, attempts, stop reason).  ``scoring_log`` collects the scored steps
    sampled because their exact score was refused mid-run (:class:`~cogtestbed.llm_adapters.runs.agent.ScoringLog`)."""
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    seeds = subject_seeds(config.seed, config.n_subjects)
    forms = subject_forms(config)
    gate = OrderedGate(concurrency)
    budget: Budget | None = getattr(client, "budget", None)
    plans: dict[int, list[Need]] = {}
    stop_reason: list[str] = []

    def plan(i: int) -> list[Need]:
        if i not in plans:
            assert budget is not None
            plans[i] = cumulative_needs(subject_needs(exp, design, client, config, sessions, i, budget))
        return plans[i]

    def remaining(i: int, env: Any) -> Need:
        return plan(i)[min(env.t, len(plan(i)) - 1)]

    if budget is not None and budget.limited:
        fits = budget_outlook(budget, [plan(i)[0] for i in range(config.n_subjects)])
        logger.warning("budget: %s left of max_calls=%s, max_cost=%s; at their worst case it admits "
                       "%d of %d subjects (subjects served from the cache cost nothing)",
                       budget.describe(budget.free()), budget.max_calls, budget.max_cost, fits,
                       config.n_subjects)

    async def play(i: int) -> tuple[Outcomes, bool, list[Attempt]]:
        env = exp.env_cls(design)
        agent = config.agent(client, env, sample_seed=seeds[i], subject=i, scoring_log=scoring_log)
        await gate.enter(i)
        token = CURRENT_SUBJECT.set(SubjectTicket(i, lambda: remaining(i, env)))
        done = False
        try:
            obs, _ = env.reset(options={"session": sessions.subject(i), "form": forms[i]})
            while not done:
                action = await agent.aact(obs)
                obs, _, done, _, _ = env.step(action)
                if on_step is not None:
                    on_step()
        except BudgetExhausted as exc:
            stop_reason.append(str(exc))
        finally:
            CURRENT_SUBJECT.reset(token)
            if waves is not None:
                waves.subject_finished()
            if budget is not None:
                await budget.finish(i)
            await gate.leave()
        if on_subject is not None:
            on_subject(i, done)
        return env.outcomes, done, agent.attempts

    played = config.n_subjects if limit is None else min(limit, config.n_subjects)
    waves = getattr(client, "inner", None)  # batch mode: a wave waits for every subject still playing
    if not hasattr(waves, "subject_finished"):
        waves = None
    else:
        waves.live = played  # type: ignore[union-attr]

    async def unplayed(i: int) -> tuple[Outcomes, bool, list[Attempt]]:
        env = exp.env_cls(design)  # reset, not played: the environment's own empty outcomes and extra columns
        env.reset(options={"session": sessions.subject(i), "form": forms[i]})
        return env.outcomes, False, []

    results = await asyncio.gather(*(play(i) for i in range(played)),
                                   *(unplayed(i) for i in range(played, config.n_subjects)),
                                   return_exceptions=True)
    if played < config.n_subjects:
        stop_reason.append(f"sequential plan: this look plays the first {played} subjects")
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:  # every other subject has finished and its answers are cached
        raise failures[0]
    outcomes = [r[0] for r in results]  # type: ignore[index]
    complete = [r[1] for r in results]  # type: ignore[index]
    attempts = [a for r in results for a in r[2]]  # type: ignore[index]
    return sessions, outcomes, complete, attempts, (stop_reason[0] if stop_reason else None)


def first_requests(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                   limit: int | None = None) -> list[tuple[int, GenerateRequest]]:
    """``(subject, request)`` of every first ask the run's subjects make (the first ``limit``), built
    as :func:`play_subjects`' agents build them (:meth:`LLMAgent.first_requests`), their sessions
    played with valid random actions as the dry run plays them.  In an experiment whose prompts depend
    on no answer (``answer_independent``) these are the run's requests; requests whose chat history
    quotes an earlier answer are left out (the play asks them)."""
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    seeds, forms = subject_seeds(config.seed, config.n_subjects), subject_forms(config)
    out: list[tuple[int, GenerateRequest]] = []
    for i in range(config.n_subjects if limit is None else min(limit, config.n_subjects)):
        env = exp.env_cls(design)
        env.action_space.seed(config.seed * 1_000_003 + i)
        # the play's own agent (RunConfig.agent: completion limit and reasoning settings), so the requests
        # sent ahead are the ones the play asks and their answers are found
        agent = config.agent(client, env, sample_seed=seeds[i], subject=i)
        obs, _ = env.reset(options={"session": sessions.subject(i), "form": forms[i]})
        done = False
        while not done:
            out += [(i, r) for r in agent.first_requests(obs)
                    if isinstance(r.prompt, str) or not any(m.get("role") == "assistant" for m in r.prompt)]
            obs, _, done, _, _ = env.step(env.action_space.sample())
    return out


async def send_ahead(exp: Experiment, design: Design, client: CachedClient, config: RunConfig,
                     limit: int | None) -> None:
    """Batch mode: where no prompt depends on an answer (``answer_independent``), every first ask of
    the run goes out in one batch before the subjects play (:meth:`BatchClient.fetch_ahead`)."""
    if exp.env_cls.independent_of_answers(design):
        sent = await client.base.fetch_ahead(  # type: ignore[attr-defined]
            first_requests(exp, design, client, config, limit))
        logger.info("batch mode: %d requests that depend on no answer sent ahead in one batch", sent)


async def decide_scoring(exp: Experiment, design: Design, client: CachedClient) -> dict[str, Any] | None:
    """How the run answers its scored steps, decided before any subject's call: where the backend
    claims to score over HTTP (a completions endpoint), the probe's requests (booked and counted as
    calls like any other; :func:`~cogtestbed.llm_adapters.clients.logprob_probe.probe_scoring`) check that the
    server returns log-probabilities and that they are consistent; if not, the whole run samples
    instead (``client.can_score`` is turned off, so the budget books sampling's worst case), says so
    in one line and records why (``run.json``'s ``scoring``).  ``None`` where the run has no scored
    step or the backend cannot score at all (its warnings say that)."""
    if exp.env_cls.sampling_note(design) is None:
        return None
    if not client.can_score:
        why = ("batch mode: the batch APIs serve no echo + logprobs scoring requests"
               if getattr(client.base, "books_itself", False) else "the backend cannot score (a chat endpoint)")
        return {"method": "sampled", "probe": None, "reason": why}
    if not client.base.http:
        return {"method": "exact", "probe": None}
    try:
        probe = await probe_scoring(client)
    except BudgetExhausted as exc:
        raise InputError(f"the budget does not cover even the scoring probe ({len(PROBE_REQUESTS)} "
                         f"requests): {exc}") from None
    retries = {"probe_retries": len(probe.retries), "probe_retry_log": probe.retries}
    if not probe.ok:
        client.can_score = client.base.can_score = False
        logger.warning("%s", f"exact scoring refused, every scored step is sampled instead: {probe.reason}")
        return {"method": "sampled", "probe": probe.reason, "reason": "the server's log-probabilities failed "
                "the scoring probe (cogtestbed.llm_adapters.clients.logprob_probe)", "probe_checks": probe.checks,
                **retries}
    return {"method": "exact", "probe": f"the server's log-probabilities passed the scoring probe: {probe.reason}",
            "probe_checks": probe.checks, **retries}


def _scored_steps(scored: pd.DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """The scored steps of each method (exact / sampled) and of each fallback reason, from the scoring calls."""
    steps = {"exact": 0, "sampled": 0}
    fallbacks: dict[str, int] = {}
    if not len(scored):
        return steps, fallbacks
    per_step = scored.groupby(["subject", "step"], sort=True).agg(
        method=("score_method", "first"), fallback=("score_fallback", "first"))
    for method, fallback in zip(per_step["method"], per_step["fallback"], strict=True):
        if method in steps:
            steps[method] += 1
        if isinstance(fallback, str):
            fallbacks[fallback] = fallbacks.get(fallback, 0) + 1
    return steps, fallbacks


def _run_method(planned: str, steps: dict[str, int]) -> str:
    """How the run scored: ``mixed`` where it used both methods, else the one it used (``planned``: none)."""
    if not any(steps.values()):
        return planned
    if all(steps.values()):
        return "mixed"
    return "exact" if steps["exact"] else "sampled"


def scoring_provenance(decided: dict[str, Any], calls: pd.DataFrame) -> dict[str, Any]:
    """``run.json``'s ``scoring``: the method decided before the run (``decided``, from
    :func:`decide_scoring`: ``planned_method``, its probe and reason) and what the run did, from its
    call log: the scored steps of each method (``steps``: exact / sampled), the calls of each kind
    (``calls``: score / sample), ``method`` — ``exact``, ``sampled`` or ``mixed`` (both), the planned
    method where no scored step was played — and why steps planned exact were sampled
    (``fallbacks``: each refusal's reason with the steps it sampled)."""
    out = {k: v for k, v in decided.items() if k not in ("steps", "calls", "fallbacks")}
    planned = out["planned_method"] = decided.get("planned_method", decided["method"])
    scored = calls[calls["kind"].isin(["score", "sample"])] if len(calls) else calls
    steps, fallbacks = _scored_steps(scored)
    out["steps"] = steps
    out["calls"] = {kind: int((scored["kind"] == kind).sum()) if len(scored) else 0 for kind in ("score", "sample")}
    out["method"] = _run_method(planned, steps)
    if fallbacks:
        out["fallbacks"] = [{"reason": r, "steps": n} for r, n in sorted(fallbacks.items(), key=lambda x: -x[1])]
        out["why"] = (f"{sum(fallbacks.values())} scored step(s) planned exact were sampled because their exact "
                      "score was refused (fallbacks)")
    return out


def run_warnings(exp: Experiment, design: Design, client: LLMClient) -> list[dict[str, Any]]:
    """What the run's setting costs it, declared by the environment: a backend that cannot score
    answers scored steps with sampled estimates (:meth:`TextEnv.sampling_note`)."""
    if client.can_score:
        return []
    note = exp.env_cls.sampling_note(design)
    return [] if note is None else [note.as_json()]


def build_tables(exp: Experiment, design: Design, sessions: Sessions, outcomes: list[Outcomes],
                 complete: list[bool], attempts: list[Attempt], agent: str
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trial table of the finished subjects, and the call log of every attempt."""
    table = exp.env_cls.trials_table(design, sessions, Outcomes.stack(outcomes), agent=agent)
    done = np.flatnonzero(complete)
    if len(done) < len(complete):
        table = table[table["subject"].isin(done)].reset_index(drop=True)
    columns = list(Attempt.__dataclass_fields__)
    calls = pd.DataFrame([a.as_row() for a in attempts], columns=columns)
    calls = calls.sort_values(["subject", "step", "attempt"], kind="stable").reset_index(drop=True)
    return table, calls


async def run_experiment(
    exp: Experiment, design: Design, client: CachedClient, config: RunConfig, run_dir: Path,
    *, resume: bool = False, concurrency: int = 8, on_step: Callable[[], None] | None = None,
    on_subject: Callable[[int, bool], None] | None = None, extra_manifest: dict[str, Any] | None = None,
    add_budget: Need | None = None, transport: dict[str, Any] | None = None, limit: int | None = None,
    request: dict[str, Any] | None = None,
) -> RunResult:
    """Play the run and write its tables (see module docstring).

    ``client.budget``'s limits are the run's totals: on ``--resume`` the stored totals apply
    (given again they must match) and ``add_budget`` raises them.  ``transport``: settings
    recorded in ``run.json`` that may change between invocations (concurrency, timeouts...);
    ``request``: ``run.json``'s ``request`` block (the options this invocation was given).
    """
    try:
        if exp.env_cls.uses_images(design):  # fail before any call, not at the first picture
            client.base.check_images(1)
        await client.base.apreflight()
        endpoint = client.base.endpoint_identity()
        rundir = RunDir.open(run_dir, config.as_json(), resume=resume,
                             transport={**config.transport(), "concurrency": concurrency, **(transport or {})},
                             endpoint=None if endpoint is None else {**endpoint, "shared_cache": client.shared},
                             request=request)
    except BaseException:
        await client.aclose()
        raise
    try:
        budget = _open_budget(client.budget, rundir, add_budget)
        _own_answers(client, rundir, budget)
        batching = await _start_batches(client, rundir, budget)
        if batching:
            concurrency = config.n_subjects  # every session in each wave
        scoring = await decide_scoring(exp, design, client)  # before any subject's call, booked
        warnings = run_warnings(exp, design, client)
        for warning in warnings:  # before any subject's call
            logger.warning("%s", warning["message"])
        rundir.manifest["warnings"] = warnings
        capability = capability_entry(config)
        if capability is not None:
            rundir.manifest["capability"] = capability
            if capability["line"] is not None:  # what the run wanted but cannot send: one line, before any call
                logger.warning("%s", capability["line"])
        if scoring is not None:
            rundir.manifest["scoring"] = scoring
        if batching:
            await send_ahead(exp, design, client, config, limit)
        scoring_log = ScoringLog(None if scoring is None else scoring["method"])
        sessions, outcomes, complete, attempts, stop = await play_subjects(
            exp, design, client, config, concurrency=concurrency, on_step=on_step, on_subject=on_subject,
            limit=limit, scoring_log=scoring_log)
        note_fingerprints(rundir, client, warnings)
        table, calls = build_tables(exp, design, sessions, outcomes, complete, attempts, config.llm)
        table = with_run_forms(table, config)
        if scoring is not None:
            scoring = rundir.manifest["scoring"] = scoring_provenance(scoring, calls)
        status = "complete" if all(complete) else "stopped"
        stats = _run_stats(table, calls, budget, scoring, complete)
        manifest = {
            "command": "run", "config": config.as_json(), "status": status, "stop_reason": stop,
            "complete_subjects": [int(i) for i in np.flatnonzero(complete)], "stats": stats,
            "llm_versions": package_versions(LLM_PACKAGES), "model_fingerprint": client.fingerprint,
            "cache": str(client.cache.path), "warnings": warnings,
            **({"scoring": scoring} if scoring is not None else {}), **(extra_manifest or {}),
        }
        if batching:
            rundir.manifest["batch"] = client.base.manifest_entry()  # type: ignore[attr-defined]
        commit_tables(rundir, table, calls, manifest, status, stop, spec=exp)
    except BaseException as exc:
        rundir.fail(exc)
        raise
    finally:
        client.budget.ledger = None  # the ledger belongs to this run directory
        client.paid, client.record_paid = set(), None
        await client.aclose()
        rundir.release()
    return RunResult(table, calls, np.asarray(complete), status, stats)


def _open_budget(budget: Budget, rundir: RunDir, add_budget: Need | None) -> Budget:
    """``budget`` with the run directory's totals (raised by ``add_budget``), spend and ledger."""
    add = add_budget or Need()
    budget.max_calls, budget.max_cost = rundir.budget_limits(budget.max_calls, budget.max_cost, int(add.calls), add.usd)
    if budget.max_cost is not None and budget.price is None:
        raise InputError("`max_cost` needs a price for the model: add it to the price table (`prices` FILE)")
    budget.spent = rundir.spent()
    budget.ledger = rundir.ledger_writer()
    return budget


def _own_answers(client: CachedClient, rundir: RunDir, budget: Budget) -> None:
    """Tell ``client`` which stored answers this run directory paid for (its replays are the run's calls, not
    cache hits) and have it record each new one in the run's ledger."""
    ledger = budget.ledger
    client.paid = rundir.paid_keys()
    client.record_paid = None if ledger is None else lambda key: ledger(paid_key_event(key))


def _run_stats(table: pd.DataFrame, calls: pd.DataFrame, budget: Budget, scoring: dict[str, Any] | None,
               complete: list[bool]) -> dict[str, Any]:
    """``run.json``'s ``stats``: calls, cache hits, the budget's totals, retries, subjects, invalid trials."""
    return {
        "calls_total": len(calls),
        "cache_hits": int(calls["cached"].sum()) if len(calls) else 0,
        **budget.summary(),
        "retries": ((int(calls["retries"].sum()) if len(calls) else 0)
                    + int((scoring or {}).get("probe_retries", 0))),
        "subjects_complete": int(np.sum(complete)),
        "invalid_trials": int((~table["valid"]).sum()),
    }


def note_fingerprints(rundir: RunDir, client: CachedClient, warnings: list[dict[str, Any]]) -> None:
    """Add the ``system_fingerprint`` values this invocation's answers carried to ``run.json``'s
    ``endpoint``; where the run had recorded others, a warning (one stderr line, and in ``warnings``):
    OpenAI documents a new fingerprint as a change of the serving configuration that may change answers."""
    endpoint = rundir.manifest.get("endpoint")
    seen: set[str] = set(getattr(client.base, "system_fingerprints", ()))
    if endpoint is None or not seen:
        return
    before = set(endpoint.get("system_fingerprints") or [])
    endpoint["system_fingerprints"] = sorted(before | seen)
    if before and not seen <= before:
        message = (f"the server's system_fingerprint changed during this run ({', '.join(sorted(before))} before, "
                   f"{', '.join(sorted(seen - before))} now): the provider changed its serving configuration, "
                   "which may change answers")
        logger.warning("%s", message)
        warnings.append({"kind": "system_fingerprint", "message": message})


async def _start_batches(client: CachedClient, rundir: RunDir, budget: Budget) -> bool:
    """Batch mode (:mod:`~cogtestbed.llm_adapters.middleware.batch`): attach the run directory, then collect the
    batches an earlier
    invocation left in flight.  False for a run that sends requests one by one — refused where the
    run directory still has batches to collect."""
    from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
    from cogtestbed.llm_adapters.middleware.batch.record import unfinished_batches
    from cogtestbed.llm_adapters.runs.rundir import LEDGER_FILE

    inner = client.base
    if not isinstance(inner, BatchClient):
        left = unfinished_batches(rundir.path)
        if left:
            raise InputError(f"{rundir.path} has {left} batch(es) in flight: resume it with `batch`")
        return False
    inner.attach(rundir.path, client.cache, budget, rundir.path / LEDGER_FILE, client.shared)
    await inner.recover()
    return True


def commit_tables(rundir: RunDir, table: pd.DataFrame, calls: pd.DataFrame, manifest: dict[str, Any],
                  status: str, stop: str | None, spec: Experiment | None = None) -> None:
    """Trial table, its manifest (with the table's SHA-256), call log and ``run.json``: one unit.
    Every text that came from the server is redacted first (:func:`redacted_frame`)."""
    data = _parquet_bytes(redacted_frame(table))
    full = {**trials_manifest(table, manifest, spec), "trials_sha256": hashlib.sha256(data).hexdigest()}
    calls_data = _parquet_bytes(redacted_frame(calls))
    rundir.commit({
        TRIALS_FILE: lambda tmp: tmp.write_bytes(data),
        TRIALS_FILE + MANIFEST_SUFFIX: lambda tmp: tmp.write_text(
            json.dumps(redact_json(json_safe(full)), indent=2, sort_keys=True, default=str, allow_nan=False)),
        CALLS_FILE: lambda tmp: tmp.write_bytes(calls_data),
    }, {**rundir.manifest, "status": status, "stop_reason": stop, "error": None, "stats": manifest["stats"]})


def redacted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every string of its text columns (raw answers, parse errors, retry logs)
    redacted (:func:`~cogtestbed.redact.redact_json`); the same frame where nothing changes."""
    out = frame
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object:
            continue
        cleaned = column.map(lambda v: redact_json(v) if isinstance(v, str | list | tuple) else v)
        changed = [a is not b and a != b for a, b in zip(column, cleaned, strict=True)]
        if any(changed):
            out = out.copy() if out is frame else out
            out[name] = cleaned
    return out


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    table_to_parquet(frame, buffer)
    return buffer.getvalue()


