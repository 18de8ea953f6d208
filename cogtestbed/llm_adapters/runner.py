"""Run N LLM subjects through any registered experiment: cached, resumable, budgeted.

Seeding is the simulator's (:func:`cogtestbed.simulation.seed_streams`): the sessions come from
the environment stream of ``seed``, so an LLM with seed ``S`` meets exactly the sessions that
synthetic subjects with seed ``S`` meet.  Subjects play concurrently (asyncio, at most
``concurrency`` at once); each one's steps are sequential because every prompt renders the
history so far.

Run directory::

    RUN_DIR/run.json                       the run's configuration (checked by --resume)
    RUN_DIR/trials.parquet[.manifest.json] the trial table and its manifest (write_trials)
    RUN_DIR/calls.parquet                  one row per call: prompt, raw answer, parse result

Resuming: every response is committed to the SQLite cache the moment it arrives, and a run's
calls are a deterministic function of its configuration and the earlier answers.  Replaying the
run against the cache therefore re-issues exactly the calls that never completed, and the final
table is the one an uninterrupted run writes.  Tables are written once, atomically, at the end.

Budget stops (``max_calls`` / ``max_cost``): subjects stop before the call that would break the
limit; the table holds the subjects that finished, the manifest says ``status: "stopped"``, and
every answer so far is in the cache and in ``calls.parquet``, so ``--resume`` with a larger
budget continues where the run stopped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.base import Design, Outcomes, Sessions
from cogtestbed.llm_adapters.agent import Attempt, LLMAgent
from cogtestbed.llm_adapters.base import LLMClient
from cogtestbed.llm_adapters.cache import CachedClient
from cogtestbed.llm_adapters.limits import BudgetExhausted, Price
from cogtestbed.registry import Experiment
from cogtestbed.simulation import seed_streams
from cogtestbed.trials import atomic_write_bytes, package_versions, write_json_atomic, write_trials

TRIALS_FILE, CALLS_FILE, CONFIG_FILE = "trials.parquet", "calls.parquet", "run.json"
LLM_PACKAGES = ("openai", "anthropic", "transformers", "torch", "tokenizers", "tiktoken")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's calls (what ``--resume`` checks)."""

    experiment: str
    llm: str
    base_url: str | None
    mode: str
    n_subjects: int
    seed: int
    design: dict[str, Any]
    max_tokens: int = 8
    temperature: float = 0.0
    stop: tuple[str, ...] = ("\n",)
    reask: int = 0
    top_logprobs: int | None = None

    def as_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), default=str))  # tuples → lists, as stored

    def differences(self, stored: dict[str, Any]) -> list[str]:
        mine = self.as_json()
        return [k for k in sorted(set(mine) | set(stored)) if mine.get(k) != stored.get(k)]


@dataclass
class RunResult:
    trials: pd.DataFrame
    calls: pd.DataFrame
    complete: np.ndarray
    status: str
    stats: dict[str, Any] = field(default_factory=dict)


def subject_seeds(seed: int, n: int) -> list[int]:
    """Per-subject sampling seeds (used only at temperature > 0), from the agent stream."""
    _, agent_rng = seed_streams(seed)
    return [int(x) for x in agent_rng.integers(0, 2**31 - 1, size=n)]


def draw_sessions(exp: Experiment, design: Design, n: int, seed: int) -> Sessions:
    env_rng, _ = seed_streams(seed)
    return exp.env_cls.sample_sessions(design, n, env_rng)


async def play_subjects(
    exp: Experiment, design: Design, client: LLMClient, config: RunConfig, *,
    concurrency: int = 8, on_step: Callable[[], None] | None = None,
) -> tuple[Sessions, list[Outcomes], list[bool], list[Attempt], str | None]:
    """Play every subject; returns (sessions, outcomes, complete flags, attempts, stop reason)."""
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    seeds = subject_seeds(config.seed, config.n_subjects)
    gate = asyncio.Semaphore(max(1, concurrency))
    stop_reason: list[str] = []

    async def play(i: int) -> tuple[Outcomes, bool, list[Attempt]]:
        env = exp.env_cls(design)
        agent = LLMAgent(client, env, max_tokens=config.max_tokens, temperature=config.temperature,
                         stop=config.stop, reask=config.reask, top_logprobs=config.top_logprobs,
                         sample_seed=seeds[i], subject=i)
        async with gate:
            obs, _ = env.reset(options={"session": sessions.subject(i)})
            done = False
            try:
                while not done:
                    action = await agent.aact(obs)
                    obs, _, done, _, _ = env.step(action)
                    if on_step is not None:
                        on_step()
            except BudgetExhausted as exc:
                stop_reason.append(str(exc))
        return env.outcomes, done, agent.attempts

    results = await asyncio.gather(*(play(i) for i in range(config.n_subjects)),
                                   return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:  # every other subject has finished and its answers are cached
        raise failures[0]
    outcomes = [r[0] for r in results]  # type: ignore[index]
    complete = [r[1] for r in results]  # type: ignore[index]
    attempts = [a for r in results for a in r[2]]  # type: ignore[index]
    return sessions, outcomes, complete, attempts, (stop_reason[0] if stop_reason else None)


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


def prepare_run_dir(run_dir: Path, config: RunConfig, resume: bool) -> None:
    """Create ``run_dir`` with ``run.json``, or check it matches ``config`` when resuming."""
    path = run_dir / CONFIG_FILE
    if path.exists():
        if not resume:
            raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it "
                                  "(answers come from the cache) or choose another directory")
        stored = json.loads(path.read_text())["config"]
        diff = config.differences(stored)
        if diff:
            raise ValueError(f"--resume: {run_dir} was run with different settings ({', '.join(diff)})")
    elif resume:
        raise FileNotFoundError(f"--resume: no run in {run_dir} (no {CONFIG_FILE})")
    write_json_atomic(path, {"config": config.as_json(), "status": "running"})


async def run_experiment(
    exp: Experiment, design: Design, client: CachedClient, config: RunConfig, run_dir: Path,
    *, resume: bool = False, concurrency: int = 8, on_step: Callable[[], None] | None = None,
    extra_manifest: dict[str, Any] | None = None,
) -> RunResult:
    """Play the run and write its tables (see module docstring)."""
    if exp.env_cls.uses_images(design):  # fail before any call, not at the first picture
        client.inner.check_images(1)
    prepare_run_dir(run_dir, config, resume)
    try:
        sessions, outcomes, complete, attempts, stop = await play_subjects(
            exp, design, client, config, concurrency=concurrency, on_step=on_step)
    finally:
        await client.aclose()
    table, calls = build_tables(exp, design, sessions, outcomes, complete, attempts, config.llm)
    status = "complete" if all(complete) else "stopped"
    stats = {
        "calls_total": len(calls),
        "cache_hits": int(calls["cached"].sum()) if len(calls) else 0,
        **client.budget.summary(),
        "retries": len(getattr(client.inner, "retries", [])),
        "subjects_complete": int(np.sum(complete)),
        "invalid_trials": int((~table["valid"]).sum()),
    }
    manifest = {
        "command": "run", "config": config.as_json(), "status": status, "stop_reason": stop,
        "complete_subjects": [int(i) for i in np.flatnonzero(complete)], "stats": stats,
        "llm_versions": package_versions(LLM_PACKAGES), "model_fingerprint": client.fingerprint,
        "cache": str(client.cache.path), **(extra_manifest or {}),
    }
    write_trials(table, run_dir / TRIALS_FILE, manifest)
    atomic_write_bytes(run_dir / CALLS_FILE, lambda tmp: calls.to_parquet(tmp, index=False))
    write_json_atomic(run_dir / CONFIG_FILE, {"config": config.as_json(), "status": status})
    return RunResult(table, calls, np.asarray(complete), status, stats)


def dry_run(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
            price: Price | None) -> dict[str, Any]:
    """Count the calls and tokens a run would spend, without calling the model.

    Prompts depend on earlier answers, so each session is played with valid random actions
    (``env.action_space``, seeded): the history grows as it does for a subject who always
    answers.  Completion tokens are counted at their maximum (``max_tokens`` per call), and the
    re-ask worst case is reported separately.  Cache hits are not subtracted.  Images are counted
    with the provider's documented formula (:mod:`cogtestbed.llm_adapters.image_tokens`: OpenAI's
    512 px tiles, Anthropic's w·h/750) and included in ``prompt_tokens``; backends without one
    report ``image_tokens`` as ``None``.
    """
    from cogtestbed.llm_adapters.base import message_images
    from cogtestbed.llm_adapters.image_tokens import image_tokens

    if exp.env_cls.uses_images(design):
        client.check_images(1)
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    calls = prompt_tokens = n_images = 0
    img_tokens: int | None = 0
    exact = True
    for i in range(config.n_subjects):
        env = exp.env_cls(design)
        env.action_space.seed(config.seed * 1_000_003 + i)
        obs, _ = env.reset(options={"session": sessions.subject(i)})
        done = False
        while not done:
            prompt = obs["prompt"]
            text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
            n, is_exact = client.count_tokens(text)
            calls, prompt_tokens, exact = calls + 1, prompt_tokens + n, exact and is_exact
            for image in () if isinstance(prompt, str) else (b for m in prompt for b in message_images(m)):
                k = image_tokens(client.backend, image)
                n_images += 1
                img_tokens = None if k is None or img_tokens is None else img_tokens + k
            obs, _, done, _, _ = env.step(env.action_space.sample())
    completion = calls * config.max_tokens
    prompt_tokens += img_tokens or 0
    report: dict[str, Any] = {
        "experiment": exp.name, "llm": config.llm, "subjects": config.n_subjects,
        "calls": calls, "prompt_tokens": prompt_tokens, "max_completion_tokens": completion,
        "images": n_images, "image_tokens": img_tokens if n_images else 0,
        "token_counts": "exact (model tokenizer)" if exact else "approximate",
        "price_usd_per_mtok": None if price is None else asdict(price),
        "estimated_cost_usd": None if price is None else round(price.cost(prompt_tokens, completion), 4),
    }
    if config.reask:
        report["calls_with_all_reasks"] = calls * (1 + config.reask)
    return report
