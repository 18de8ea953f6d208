"""Conformance checks of an experiment under an LLM subject (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): garbage answers are invalid with a reason,
never replaced by a fallback (:func:`check_garbage_answers`), and an LLM run stops at its budget
without paying for an unfinished subject (:func:`check_llm_budget`).  Both talk to
:class:`ScriptedClient`, an in-process client that answers from a list.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import (
    agent_names,
    fail,
    is_scored,
    play_episode,
    small_design,
    step_space,
)
from cogtestbed.environments.base import Design, TextEnv
from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.llm_adapters.clients.base import GenerateRequest, Generation, LLMClient

#: Answers no environment may accept, at any step.
GARBAGE_ANSWERS: tuple[str, ...] = ("", "   \n", "banana", "\u2182\u2603\u200b\U0001f642 \u03a9\u2248\u00e7\u221a",
                                    "-999999", "NaN")
#: Calls the budget of the LLM budget check allows: fewer than one whole subject of any experiment.
LLM_BUDGET_CALLS = 4
#: Answers a step with a discrete action space (a choice among named options) must reject.
GARBAGE_DISCRETE: tuple[str, ...] = ("999999",)


class ScriptedClient(LLMClient):
    """An in-process LLM client answering from a fixed list (cycled); it records every request.
    It takes chat or raw text, with or without images."""

    backend, model = "conformance", "scripted"
    vision = True

    def __init__(self, answers: Sequence[str], chat: bool = False) -> None:
        if not answers:
            raise InputError("a scripted client needs at least one answer")
        self.answers, self.chat = tuple(answers), chat
        self.requests: list[GenerateRequest] = []

    async def agenerate(self, request: GenerateRequest) -> Generation:
        self.requests.append(request)
        return Generation(text=self.answers[(len(self.requests) - 1) % len(self.answers)])


def check_garbage_answers(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Garbage answers are invalid with a reason at every step, and an LLM subject that only
    answers garbage gets an all-invalid table: never a random fallback."""
    design = small_design(spec, config)
    problems: list[str] = []

    def probe(env: TextEnv[Any, Any], obs: dict[str, Any], t: int) -> None:
        if is_scored(obs):
            return
        answers = GARBAGE_ANSWERS + (GARBAGE_DISCRETE if isinstance(step_space(env), spaces.Discrete) else ())
        for text in answers:
            result = env.parse(text)
            if result.ok or result.action is not None:
                problems.append(f"agent {agent!r}, step {t}: garbage {text!r} parsed as action {result.action!r}")
            elif not (isinstance(result.error, str) and result.error.strip()):
                problems.append(f"agent {agent!r}, step {t}: garbage {text!r} rejected without a reason")

    agent = agent_names(spec)[0]
    play_episode(spec, design, agent, config.seed, probe, config.probe_steps)
    fail(problems, f"{spec.name}: the parser accepts garbage")

    first_prompt = spec.env_cls(design).reset(seed=config.seed)[0]["prompt"]
    # a completion model is only asked text prompts (chat messages need a chat model)
    for chat in (False, True) if isinstance(first_prompt, str) else (True,):
        problems += _garbage_subject_problems(spec, design, config, chat)
    fail(problems, f"{spec.name}: invalid answers are not recorded as invalid")


def _garbage_subject_problems(spec: ExperimentSpec, design: Design, config: CheckConfig, chat: bool) -> list[str]:
    """One session of an LLM subject (scripted client) that answers nothing but garbage."""
    from cogtestbed.llm_adapters.runs.agent import LLMAgent
    from cogtestbed.simulation import seed_streams

    mode = "chat" if chat else "completion"
    client = ScriptedClient(GARBAGE_ANSWERS, chat=chat)
    env = spec.env_cls(design)
    sessions = spec.env_cls.sample_sessions(design, 1, seed_streams(config.seed)[0])
    subject = LLMAgent(client, env)
    asked: list[int] = []
    obs, _ = env.reset(options={"session": sessions.subject(0)})
    for _ in range(config.probe_steps or spec.env_cls.max_steps(design)):
        asked.append(env.t)
        obs, _, done, truncated, _ = env.step(subject.act(obs))
        if done or truncated:
            break
    outcomes = env.outcomes
    problems = [f"{mode} request {i}: {p}" for i, req in enumerate(client.requests[:50])
                for p in _request_problems(req, chat)]
    if not asked:
        return [*problems, f"{mode} LLM subject was never asked anything"]
    valid = outcomes.valid[0, asked]
    if valid.any():
        steps = [t for t, v in zip(asked, valid, strict=True) if v][:5]
        problems.append(f"{mode} LLM subject answering only garbage has valid steps {steps}: a fallback replaced "
                        "the answer")
    errors = outcomes.parse_error[0, asked] if outcomes.parse_error is not None else np.array([None])
    if any(not (isinstance(e, str) and e.strip()) for e in errors):
        problems.append(f"{mode} LLM subject: a step answered with garbage records no parse error")
    table = spec.env_cls.trials_table(design, sessions, outcomes, agent="conformance:garbage")
    # rows the subject answered (an environment may also record steps it plays itself, such
    # as the forced choices of the horizon task)
    answered = table[table["raw_response"].notna() | table["parse_error"].notna()]
    if answered.empty:
        problems.append(f"{mode} LLM subject: the trial table records none of its answers")
    if answered["valid"].astype(bool).any() or answered["action"].notna().any():
        rows = answered.index[answered["valid"].astype(bool) | answered["action"].notna()].tolist()[:5]
        problems.append(f"{mode} LLM subject: trial-table rows {rows} hold a valid action for a garbage answer")
    if answered["parse_error"].isna().any():
        problems.append(f"{mode} LLM subject: a trial-table row with a garbage answer has no parse_error")
    return problems


def check_llm_budget(spec: ExperimentSpec, config: CheckConfig) -> None:
    """An LLM run of two subjects (a scripted client) on a budget of fewer calls than one subject has
    steps (at most :data:`LLM_BUDGET_CALLS`) stops, says what the next subject needs, never makes more
    calls than the budget and pays for none of a subject that does not finish."""
    import asyncio

    from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache
    from cogtestbed.llm_adapters.middleware.limits import Budget
    from cogtestbed.llm_adapters.runs.config import RunConfig
    from cogtestbed.llm_adapters.runs.runner import run_experiment

    design = small_design(spec, config)
    budget = max(1, min(LLM_BUDGET_CALLS, spec.env_cls.max_steps(design) - 1))
    chat = not isinstance(spec.env_cls(design).reset(seed=0)[0]["prompt"], str)
    client = ScriptedClient(GARBAGE_ANSWERS, chat=chat)
    run = RunConfig(experiment=spec.name, llm=client.spec, base_url=None, mode="chat" if chat else "completions",
                    n_subjects=2, seed=config.seed, design=design.model_dump(mode="json"))
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedClient(client, ResponseCache(Path(tmp) / "c.sqlite"), Budget(max_calls=budget))
        result = asyncio.run(run_experiment(spec, design, cached, run, Path(tmp) / "run"))
    problems = []
    if result.status != "stopped" or "needs up to" not in str(result.stats.get("stopped")):
        problems.append(f"a budget of {budget} calls did not stop the run, saying what a subject needs "
                        f"(status {result.status!r})")
    if result.stats["new_calls"] > budget or len(client.requests) > budget:
        problems.append(f"{len(client.requests)} calls made on a budget of {budget}")
    unfinished = ~result.calls["subject"].isin(np.flatnonzero(result.complete))
    if (unfinished & ~result.calls["cached"]).any():
        problems.append("calls paid for a subject that did not finish")
    fail(problems, f"{spec.name}: an LLM run and its budget")


def _request_problems(request: GenerateRequest, chat: bool) -> list[str]:
    if chat:
        messages = request.messages
        return [] if messages and messages[-1]["role"] == "user" else ["chat request does not end with a user turn"]
    return [] if isinstance(request.prompt, str) else ["completion request is not raw text"]
