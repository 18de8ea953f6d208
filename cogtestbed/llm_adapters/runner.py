"""Run N LLM subjects through any registered experiment: cached, resumable, budgeted.

Seeding is the simulator's (:func:`cogtestbed.simulation.seed_streams`): the sessions come from
the environment stream of ``seed``, so an LLM with seed ``S`` meets exactly the sessions that
synthetic subjects with seed ``S`` meet.  Subjects play concurrently (asyncio, at most
``concurrency`` at once); each one's steps are sequential because every prompt renders the
history so far.

Run directory (:mod:`.rundir`: locked while a run is in it, written as one unit)::

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
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.base import NO_ACTION, Design, Outcomes, ScoredResponse, Sessions
from cogtestbed.environments.forms import FormDesign, FormDraw, draw_forms
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.agent import Attempt, LLMAgent, ScoringLog
from cogtestbed.llm_adapters.clients.base import GenerateRequest, LLMClient, Prompt, freeze_prompt
from cogtestbed.llm_adapters.clients.logprob_probe import PROBE_REQUESTS, probe_scoring
from cogtestbed.llm_adapters.clients.prices import UNPRICED_NOTE, Price
from cogtestbed.llm_adapters.hidden_tokens import HiddenTokens, reasons, refusal
from cogtestbed.llm_adapters.middleware.cache import CURRENT_SUBJECT, CachedClient, SubjectTicket
from cogtestbed.llm_adapters.middleware.limits import SUBJECT_PROMPT_MARGIN, Budget, BudgetExhausted, Need
from cogtestbed.llm_adapters.rundir import CONFIG_FILE, TRANSPORT_FIELDS, RunDir, identity_differences
from cogtestbed.no_data import json_safe
from cogtestbed.redact import redact_json
from cogtestbed.registry import Experiment, trials_manifest
from cogtestbed.simulation import seed_streams, with_form_columns
from cogtestbed.trials import MANIFEST_SUFFIX, package_versions, table_to_parquet

TRIALS_FILE, CALLS_FILE = "trials.parquet", "calls.parquet"
LLM_PACKAGES = ("openai", "anthropic", "transformers", "torch", "tokenizers", "tiktoken")
#: Bytes of a parse error quoted back by a re-ask, as the plan of a subject's worst case counts it.
REASK_REASON_BYTES = 256
logger = logging.getLogger(__name__)

__all__ = ["CALLS_FILE", "CONFIG_FILE", "TRIALS_FILE", "RunConfig", "RunResult", "dry_run", "run_experiment",
           "run_warnings", "subject_needs"]


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's calls (what ``--resume`` checks), and ``base_url``, recorded
    with them; the endpoint it reaches is checked apart (``run.json``'s ``endpoint``,
    :func:`~cogtestbed.llm_adapters.rundir.endpoint_change`): it may change on resume only where the
    cache is shared across endpoints."""

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
    #: Prompt forms the subjects are assigned to (balanced, seeded); ``None``: form 0 for all.
    forms: tuple[int, ...] | None = None
    #: ``--reasoning-effort`` (OpenAI's reasoning models; None: the model's default) and ``--thinking-budget``
    #: (Anthropic's extended thinking on; for OpenAI's reasoning models the hidden tokens reserved) (issue 49).
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    #: Hidden tokens each request's completion limit reserves before the answer's ``max_tokens``
    #: (:func:`~cogtestbed.llm_adapters.clients.capabilities.hidden_allowance`); None: not a reasoning run.
    hidden_allowance: int | None = None

    @property
    def completion_limit(self) -> int:
        """The completion limit a request carries: the answer's ``max_tokens`` plus the hidden allowance."""
        return self.max_tokens + (self.hidden_allowance or 0)

    def agent(self, client: LLMClient, env: Any, **kwargs: Any) -> LLMAgent:
        """The :class:`LLMAgent` of this run's answer and reasoning settings."""
        return LLMAgent(client, env, max_tokens=self.completion_limit, temperature=self.temperature, stop=self.stop,
                        reask=self.reask, top_logprobs=self.top_logprobs, reasoning_effort=self.reasoning_effort,
                        thinking_budget=self.thinking_budget if self.hidden_allowance is not None and
                        not _always_reasons(self.llm) else None, **kwargs)

    def as_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), default=str))  # tuples → lists, as stored

    def differences(self, stored: dict[str, Any]) -> list[str]:
        """Identity settings that differ from ``stored`` (transport settings never do)."""
        return identity_differences(self.as_json(), stored)

    def transport(self) -> dict[str, Any]:
        return {k: v for k, v in self.as_json().items() if k in TRANSPORT_FIELDS}


@dataclass
class RunResult:
    trials: pd.DataFrame
    calls: pd.DataFrame
    complete: np.ndarray
    status: str
    stats: dict[str, Any] = field(default_factory=dict)


def _always_reasons(llm: str) -> bool:
    """Whether ``llm`` reasons on every call (OpenAI's reasoning models: the thinking budget is only the
    hidden tokens reserved, never sent)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of

    cap = capability_of(llm)
    return cap is not None and cap.always_reasons()


def subject_forms(config: RunConfig) -> list[int]:
    """Each subject's prompt form: :func:`~cogtestbed.environments.forms.draw_forms` of the run's
    forms and seed (form 0 for all without ``forms``), as ``simulate --forms`` assigns them."""
    if config.forms is None:
        return [0] * config.n_subjects
    return [int(f) for f in draw_forms(FormDesign(tuple(config.forms)), config.n_subjects, config.seed).form]


def with_run_forms(table: pd.DataFrame, config: RunConfig) -> pd.DataFrame:
    """``table`` with the ``form`` column of its subjects where the run assigned forms."""
    if config.forms is None:
        return table
    form = np.asarray(subject_forms(config), dtype=np.int64)
    return with_form_columns(table, FormDraw(form, {}, tuple(config.forms)))


def subject_seeds(seed: int, n: int) -> list[int]:
    """Per-subject sampling seeds (used only at temperature > 0), from the agent stream."""
    _, agent_rng = seed_streams(seed)
    return [int(x) for x in agent_rng.integers(0, 2**31 - 1, size=n)]


def draw_sessions(exp: Experiment, design: Design, n: int, seed: int) -> Sessions:
    env_rng, _ = seed_streams(seed)
    return exp.env_cls.sample_sessions(design, n, env_rng)


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


def _score_context(client: LLMClient, prompt: Prompt, response: ScoredResponse) -> Prompt:
    """The context :class:`LLMAgent` scores (raw text for a raw step or a completion model)."""
    if isinstance(prompt, str) and (response.raw or not client.chat):
        return prompt
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


def step_need(agent: LLMAgent, obs: dict[str, Any], budget: Budget) -> Need:
    """Worst case of one step: every re-ask (or every sample of a sampled score) at the prompt's
    token bound plus :data:`SUBJECT_PROMPT_MARGIN`, and ``max_tokens`` of output each.  Prompts are
    tokenized only where tokens cost something (:attr:`Budget.counts_tokens`): a model without a
    price is costed in calls alone, which spares a long session's planning a tokenizer pass a step."""
    client, step = agent.client, agent.env.t

    def bound(prompt: Prompt) -> int:
        if not budget.counts_tokens:
            return 0
        return math.ceil(client.prompt_token_bound(prompt) * (1 + SUBJECT_PROMPT_MARGIN))

    prompt, response = obs["prompt"], obs.get("response")
    if isinstance(response, ScoredResponse):
        k = len(response.continuations)
        if client.can_score:  # one request per continuation on an HTTP server (each: context + it in, 1 out)
            longest = max((len(c.encode()) for c in response.continuations), default=0)
            context = _score_context(client, prompt, response)
            n = client.score_requests(k)
            one = budget.worst((bound(context) + longest) * (k // n), k // n)
            return Need(one.calls * n, one.usd * n)
        one = budget.worst(bound(agent.request(prompt, step, 0).prompt), agent.max_tokens)
        return Need(one.calls * response.n_samples, one.usd * response.n_samples)
    total = Need()
    for attempt in range(agent.reask + 1):
        retry_of = None if attempt == 0 else ("", "x" * REASK_REASON_BYTES)
        tokens = bound(agent.request(prompt, step, attempt, retry_of).prompt)
        total = total + budget.worst(tokens + (agent.max_tokens if attempt else 0), agent.max_tokens)
    return total


def step_requests(client: LLMClient, config: RunConfig, prompt: Prompt, response: Any) -> list[tuple[Prompt, int]]:
    """The HTTP requests of one step as the run makes them (prompt, most tokens out): one for a
    text answer; for a scored step, one per continuation scored (the context and it, one token out)
    where the backend scores, else ``n_samples`` sampled answers (the prompt, ``max_tokens`` out)."""
    if not isinstance(response, ScoredResponse):
        return [(prompt, config.completion_limit)]
    if client.can_score:
        text = prompt if isinstance(prompt, str) else "\n".join(str(m["content"]) for m in prompt)
        n = client.score_requests(len(response.continuations))
        if n == 1:
            return [(text + "".join(response.continuations), len(response.continuations))]
        return [(text + c, 1) for c in response.continuations]
    return [(prompt, config.completion_limit)] * response.n_samples


#: Tokens a generated token may become when its answer is quoted back in a later prompt and tokenised
#: afresh: a token that ends inside a UTF-8 character decodes to U+FFFD, three bytes that a byte-level
#: tokenizer may split into three tokens (measured on hf:tiny-random-vlm: 8 generated tokens quoted
#: back as up to ~16).  The dry run's ceiling books each quoted answer at this many per --max-tokens.
QUOTED_TOKENS_PER_TOKEN = 3


@dataclass
class RequestCount:
    """What :func:`count_requests` counts: requests, prompt tokens (estimated, and bounded as the
    budget books them), most completion tokens, images and their tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    bound_tokens: int = 0
    completion: int = 0
    n_images: int = 0
    img_tokens: int | None = 0
    exact: bool = True
    #: Requests that score a continuation (echo, one token out): their completion is one token
    #: (none where the model's next token ends the text).
    scored_requests: int = 0
    #: Earlier answers quoted in the requests' chat histories (assistant messages).
    quoted_answers: int = 0
    #: Requests that draw one sample of a scored step's sampled estimate (a backend that cannot score).
    sample_requests: int = 0
    #: Requests of the session that makes the most (its steps are asked one after another).
    longest_session: int = 0

    def by_kind(self) -> dict[str, int]:
        """Requests by step kind (``text``, ``sample``, ``score``), as ``calls.parquet``'s ``kind``."""
        return {"text": self.calls - self.scored_requests - self.sample_requests, "sample": self.sample_requests,
                "score": self.scored_requests}


def count_requests(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                   sessions: Sessions, invalid: bool = False) -> RequestCount:
    """Every HTTP request of the run (each session played with valid random actions, seeded), with
    the decided scoring probe (:func:`decide_scoring`) where the run makes one.

    ``invalid``: the playthrough in which every text answer is unparseable instead — stages after an
    invalid answer are skipped, every re-ask is made, and a subject's repeat of one of its own earlier
    requests at temperature 0 is served from the cache (a completions re-ask repeats its question;
    an unchanged history repeats the prompt), so it is not a request."""
    return count_requests_of(exp, design, [(client, config)], sessions, invalid)[0]


def count_requests_of(exp: Experiment, design: Design, pairs: Sequence[tuple[LLMClient, RunConfig]],
                      sessions: Sessions, invalid: bool = False) -> list[RequestCount]:
    """:func:`count_requests` of each ``(client, config)`` pair from one playthrough of the sessions.

    The playthrough (the environment, its seeded random actions, the prompt forms) depends on the
    run's subjects, seed and forms only, never on the client, so the sessions are played once and
    every step's prompt is counted for each pair as :func:`count_requests` counts it alone (a plan
    that prices two LLMs renders each prompt once, not once per LLM).  The configs must agree on
    ``n_subjects``, ``seed`` and ``forms``."""
    config = pairs[0][1]
    if any((c.n_subjects, c.seed, c.forms) != (config.n_subjects, config.seed, config.forms) for _, c in pairs):
        raise InputError("count_requests_of: every config must play the same subjects (n_subjects, seed, forms)")
    counts = [RequestCount() for _ in pairs]
    forms = subject_forms(config)
    for i in range(config.n_subjects):
        env = exp.env_cls(design)
        env.action_space.seed(config.seed * 1_000_003 + i)
        obs, _ = env.reset(options={"session": sessions.subject(i), "form": forms[i]})
        done, asked = False, [set[Any]() for _ in pairs]
        before = [c.calls for c in counts]
        while not done:
            scored = _count_step(pairs, counts, asked, obs, env.t, invalid)
            obs, _, done, _, _ = env.step(NO_ACTION if invalid and not scored else env.action_space.sample())
        for c, b in zip(counts, before, strict=True):
            c.longest_session = max(c.longest_session, c.calls - b)
    for (client, _), c in zip(pairs, counts, strict=True):
        c.prompt_tokens += c.img_tokens or 0
        if exp.env_cls.sampling_note(design) is not None and client.can_score and client.http:
            for prompt, out, scored in PROBE_REQUESTS:  # decide_scoring's probe
                _count_request(c, client, prompt, out, scored=scored)
    return counts


def _count_step(pairs: Sequence[tuple[LLMClient, RunConfig]], counts: list[RequestCount], asked: list[set[Any]],
                obs: dict[str, Any], step: int, invalid: bool) -> bool:
    """Count one step's requests for each pair (:func:`count_requests_of`); whether it is scored."""
    scored = isinstance(obs.get("response"), ScoredResponse)
    for (client, cfg), c, seen in zip(pairs, counts, asked, strict=True):
        requests = step_requests(client, cfg, obs["prompt"], obs.get("response"))
        if invalid and not scored:
            requests = _invalid_step_requests(client, cfg, obs["prompt"], step, seen)
        for prompt, out in requests:
            _count_request(c, client, prompt, out, scored=scored)
    return scored


def _invalid_step_requests(client: LLMClient, config: RunConfig, prompt: Prompt, step: int,
                           asked: set[Any]) -> list[tuple[Prompt, int]]:
    """The new requests of a text step whose every attempt is unparseable: the first ask and each
    re-ask.  At temperature 0 a first ask ``asked`` before is served from the cache, and so is its
    whole chain of re-asks (each quotes the cached answer before it, so it repeats too); ``asked``
    gains the first ask."""
    agent = config.agent(client, None)  # builds requests only
    first = agent.request(prompt, step, 0, None)
    key = (freeze_prompt(first.prompt), first.seed) if config.temperature == 0 else object()
    if key in asked:
        return []
    asked.add(key)
    out: list[tuple[Prompt, int]] = [(first.prompt, config.completion_limit)]
    for attempt in range(1, config.reask + 1):
        request = agent.request(prompt, step, attempt, ("?", "x" * REASK_REASON_BYTES))
        out.append((request.prompt, config.completion_limit))
    return out


def _count_request(c: RequestCount, client: LLMClient, prompt: Prompt, out: int, scored: bool) -> None:
    """Add one HTTP request of ``prompt`` (at most ``out`` tokens out) to ``c``: its prompt tokens
    as billed (:meth:`LLMClient.billed_prompt_tokens`: exact with the model's own tokenizer, images
    included; else an estimate, images by the provider's formula), and the bound the budget books."""
    from cogtestbed.llm_adapters.clients.base import message_images
    from cogtestbed.llm_adapters.clients.image_tokens import image_tokens

    n, is_exact = client.billed_prompt_tokens(prompt)
    c.calls, c.prompt_tokens, c.exact = c.calls + 1, c.prompt_tokens + n, c.exact and is_exact
    # a chat history quotes the subject's earlier answers: the run's are the model's own text, not the
    # playthrough's; re-tokenised, an answer of max_tokens tokens runs to QUOTED_TOKENS_PER_TOKEN x as many
    quoted = 0 if isinstance(prompt, str) else sum(1 for m in prompt if m.get("role") == "assistant")
    c.quoted_answers += quoted
    c.bound_tokens += client.prompt_token_bound(prompt) + quoted * (QUOTED_TOKENS_PER_TOKEN * out + 2)
    c.completion += out
    if scored and client.can_score:
        c.scored_requests += 1
    elif scored:
        c.sample_requests += 1
    for image in () if isinstance(prompt, str) else (b for m in prompt for b in message_images(m)):
        c.n_images += 1
        if is_exact:  # already in the exact count
            continue
        k = image_tokens(client.backend, image)
        c.img_tokens = None if k is None or c.img_tokens is None else c.img_tokens + k


def subject_needs(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                  sessions: Sessions, i: int, budget: Budget) -> list[Need]:
    """Subject ``i``'s worst case, step by step: its session played with valid random actions
    (seeded as :func:`dry_run` plays it), each step costed by :func:`step_need`."""
    forms = subject_forms(config)
    env = exp.env_cls(design)
    env.action_space.seed(config.seed * 1_000_003 + i)
    agent = config.agent(client, env, subject=i)
    obs, _ = env.reset(options={"session": sessions.subject(i), "form": forms[i]})
    needs, done = [], False
    while not done:
        needs.append(step_need(agent, obs, budget))
        obs, _, done, _, _ = env.step(env.action_space.sample())
    return needs


def _cumulative(needs: list[Need]) -> list[Need]:
    """``out[t]``: the worst case of steps ``t..`` (``out[len]`` is zero)."""
    out = [Need()]
    for need in reversed(needs):
        out.append(out[-1] + need)
    return out[::-1]


def budget_outlook(budget: Budget, totals: list[Need]) -> int:
    """How many subjects (in order) the free budget admits at their full worst case."""
    left, n = budget.free(), 0
    for need in totals:
        if not left.covers(need):
            break
        left, n = left - need, n + 1
    return n


async def play_subjects(
    exp: Experiment, design: Design, client: LLMClient, config: RunConfig, *,
    concurrency: int = 8, on_step: Callable[[], None] | None = None,
    on_subject: Callable[[int, bool], None] | None = None, limit: int | None = None,
    scoring_log: ScoringLog | None = None,
) -> tuple[Sessions, list[Outcomes], list[bool], list[Attempt], str | None]:
    """Play every subject (the first ``limit`` only: a sequential plan's look); returns (sessions,
    outcomes, complete flags, attempts, stop reason).  ``scoring_log`` collects the scored steps
    sampled because their exact score was refused mid-run (:class:`~.agent.ScoringLog`)."""
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
            plans[i] = _cumulative(subject_needs(exp, design, client, config, sessions, i, budget))
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
        sent = await client.inner.fetch_ahead(  # type: ignore[attr-defined]
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
               if getattr(client.inner, "books_itself", False) else "the backend cannot score (a chat endpoint)")
        return {"method": "sampled", "probe": None, "reason": why}
    if not client.inner.http:
        return {"method": "exact", "probe": None}
    try:
        probe = await probe_scoring(client)
    except BudgetExhausted as exc:
        raise InputError(f"the budget does not cover even the scoring probe ({len(PROBE_REQUESTS)} "
                         f"requests): {exc}") from None
    retries = {"probe_retries": len(probe.retries), "probe_retry_log": probe.retries}
    if not probe.ok:
        client.can_score = client.inner.can_score = False
        logger.warning("%s", f"exact scoring refused, every scored step is sampled instead: {probe.reason}")
        return {"method": "sampled", "probe": probe.reason, "reason": "the server's log-probabilities failed "
                "the scoring probe (cogtestbed.llm_adapters.clients.logprob_probe)", "probe_checks": probe.checks,
                **retries}
    return {"method": "exact", "probe": f"the server's log-probabilities passed the scoring probe: {probe.reason}",
            "probe_checks": probe.checks, **retries}


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
    steps = {"exact": 0, "sampled": 0}
    fallbacks: dict[str, int] = {}
    if len(scored):
        per_step = scored.groupby(["subject", "step"], sort=True).agg(
            method=("score_method", "first"), fallback=("score_fallback", "first"))
        for method, fallback in zip(per_step["method"], per_step["fallback"], strict=True):
            if method in steps:
                steps[method] += 1
            if isinstance(fallback, str):
                fallbacks[fallback] = fallbacks.get(fallback, 0) + 1
    out["steps"] = steps
    out["calls"] = {kind: int((scored["kind"] == kind).sum()) if len(scored) else 0 for kind in ("score", "sample")}
    out["method"] = (planned if not any(steps.values()) else "mixed" if all(steps.values())
                     else "exact" if steps["exact"] else "sampled")
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
) -> RunResult:
    """Play the run and write its tables (see module docstring).

    ``client.budget``'s limits are the run's totals: on ``--resume`` the stored totals apply
    (given again they must match) and ``add_budget`` raises them.  ``transport``: settings
    recorded in ``run.json`` that may change between invocations (concurrency, timeouts...).
    """
    try:
        if exp.env_cls.uses_images(design):  # fail before any call, not at the first picture
            client.inner.check_images(1)
        await client.inner.apreflight()
        endpoint = client.inner.endpoint_identity()
        rundir = RunDir.open(run_dir, config.as_json(), resume=resume,
                             transport={**config.transport(), "concurrency": concurrency, **(transport or {})},
                             endpoint=None if endpoint is None else {**endpoint, "shared_cache": client.shared})
    except BaseException:
        await client.aclose()
        raise
    try:
        budget = _open_budget(client.budget, rundir, add_budget)
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
            rundir.manifest["batch"] = client.inner.manifest_entry()  # type: ignore[attr-defined]
        commit_tables(rundir, table, calls, manifest, status, stop, spec=exp)
    except BaseException as exc:
        rundir.fail(exc)
        raise
    finally:
        client.budget.ledger = None  # the ledger belongs to this run directory
        await client.aclose()
        rundir.release()
    return RunResult(table, calls, np.asarray(complete), status, stats)


def capability_entry(config: RunConfig) -> dict[str, Any] | None:
    """``run.json``'s ``capability``: the model's row of the capability table
    (:mod:`~cogtestbed.llm_adapters.clients.capabilities`), what the run wanted but does not send (``not_sent``,
    with ``line``, the sentence the run states at its start; None where everything is sent), the reasoning
    controls and the completion limit (the answer's tokens plus the hidden allowance).  None for a model
    the table has no row for (a local model)."""
    from cogtestbed.llm_adapters.clients.base import NEUTRAL_SAMPLING
    from cogtestbed.llm_adapters.clients.capabilities import capability_of, unsent, unsent_line

    cap = capability_of(config.llm)
    if cap is None:
        return None
    thinking = config.thinking_budget is not None and cap.reasoning == "thinking"
    wanted: dict[str, Any] = {"temperature": config.temperature}
    if config.llm.startswith("openai:"):
        wanted.update(NEUTRAL_SAMPLING)
    dropped = unsent(cap, wanted, thinking)
    if config.top_logprobs is not None and not cap.logprobs:
        dropped["top_logprobs"] = config.top_logprobs
    line = unsent_line(config.llm, cap, dropped) if dropped else None
    return {"row": cap.as_json(), "not_sent": dropped, "line": line,
            "stop": "sent" if cap.stop else "applied to the answer text (the model takes no stop strings)",
            "reasoning_effort": config.reasoning_effort, "thinking_budget": config.thinking_budget,
            "completion_limit": {"answer": config.max_tokens, "hidden_allowance": config.hidden_allowance,
                                 "total": config.completion_limit}}


def _open_budget(budget: Budget, rundir: RunDir, add_budget: Need | None) -> Budget:
    """``budget`` with the run directory's totals (raised by ``add_budget``), spend and ledger."""
    add = add_budget or Need()
    budget.max_calls, budget.max_cost = rundir.budget_limits(budget.max_calls, budget.max_cost, int(add.calls), add.usd)
    if budget.max_cost is not None and budget.price is None:
        raise InputError("--max-cost needs a price for the model: add it to the price table (--prices FILE)")
    budget.spent = rundir.spent()
    budget.ledger = rundir.ledger_writer()
    return budget


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
    seen: set[str] = set(getattr(client.inner, "system_fingerprints", ()))
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
    from cogtestbed.llm_adapters.rundir import LEDGER_FILE

    inner = client.inner
    if not isinstance(inner, BatchClient):
        left = unfinished_batches(rundir.path)
        if left:
            raise InputError(f"{rundir.path} has {left} batch(es) in flight: resume it with --batch")
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


def _ceil_usd(usd: float) -> float:
    """``usd`` rounded up to 1e-6 (a ceiling stays a ceiling when printed)."""
    return math.ceil(usd * 1e6 - 1e-6) / 1e6


def _token_counts(client: LLMClient, exact: bool) -> str:
    """Whose count ``prompt_tokens`` is, in words."""
    if not exact:
        return (f"approximate ({client.chars_per_token:g} characters a token, the {client.backend} rule: the "
                "model's tokenizer is not available here); max_cost_usd books one token per UTF-8 byte")
    source = getattr(client, "token_source", None) or f"the model's own tokenizer ({client.spec})"
    return f"exact: {source}, counted as the backend reports usage"


def _completion_note(c: RequestCount, config: RunConfig) -> str:
    """What is known before the run of the completion tokens the server will bill."""
    text = c.calls - c.scored_requests
    parts = []
    if c.scored_requests:
        parts.append(f"{c.scored_requests} scoring requests generate 1 token each (0 where the model's next "
                     "token ends the text)")
    if text:
        hidden = (f" ({config.max_tokens} of the answer, --max-tokens, and {config.hidden_allowance} hidden reasoning, "
                  "--thinking-budget)" if config.hidden_allowance else " (--max-tokens)")
        parts.append(f"{text} answers generate at most {config.completion_limit} tokens each{hidden}: how many, "
                     "the model decides during the run")
    return "; ".join(parts) + "; max_completion_tokens is their ceiling and is what the budget books"


def prompts_fixed(exp: Experiment, design: Design, c: RequestCount) -> bool:
    """Whether the run's prompts are the playthrough's: no step depends on an answer and no chat
    history quotes one."""
    return exp.env_cls.independent_of_answers(design) and c.quoted_answers == 0


def _cost_note(exp: Experiment, design: Design, c: RequestCount) -> str:
    """How the dry run's cost compares with the usage the run will be billed."""
    fixed = prompts_fixed(exp, design, c)
    prompts = ("prompt_tokens is the run's exact count (no prompt renders an earlier answer)" if c.exact and fixed
               else "prompt_tokens is exact for the playthrough's prompts; the run's prompts render its own answers"
               if c.exact else "prompt_tokens is an estimate")
    extra = []
    if c.quoted_answers:
        extra.append(f"{c.quoted_answers} answers quoted in chat histories at "
                     f"{QUOTED_TOKENS_PER_TOKEN} x max_tokens + 2 tokens each")
    if not exp.env_cls.independent_of_answers(design):
        extra.append(f"prompts +{SUBJECT_PROMPT_MARGIN:.0%} as the budget books them")
    return (f"{prompts}; billed cost <= max_cost_usd (the ceiling: completions at max_tokens"
            + "".join(f", {e}" for e in extra) + ")")


def dry_run(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
            price: Price | None, budget: Budget | None = None, hidden: HiddenTokens | None = None) -> dict[str, Any]:
    """Count the calls and tokens a run would spend, without calling the model.

    Prompts depend on earlier answers, so each session is played with valid random actions
    (``env.action_space``, seeded): the history grows as it does for a subject who always
    answers.  Completion tokens are counted at their maximum (``max_tokens`` per call), and the
    re-ask worst case is reported separately.  Cache hits are not subtracted.  Images are counted
    with the provider's documented formula (:mod:`cogtestbed.llm_adapters.clients.image_tokens`: OpenAI's
    512 px tiles, Anthropic's w·h/750) and included in ``prompt_tokens``; backends without one
    report ``image_tokens`` as ``None``.  With a limited ``budget`` the report adds each subject's
    worst case as the budget books it (:func:`subject_needs`) and how many subjects the budget
    admits.  A reasoning model's expected cost needs ``hidden``, its completion tokens per call measured in
    a pilot or assumed (:mod:`~cogtestbed.llm_adapters.hidden_tokens`): then it is a range; without it null,
    with the reason.
    """
    return dry_runs(exp, design, [(client, config, price)], budget, hidden)[0]


def dry_runs(exp: Experiment, design: Design, runs: Sequence[tuple[LLMClient, RunConfig, Price | None]],
             budget: Budget | None = None, hidden: HiddenTokens | None = None) -> list[dict[str, Any]]:
    """:func:`dry_run` of each ``(client, config, price)`` of one design, the sessions played once for
    all of them (:func:`count_requests_of`): each report equals that run's own dry run.  The configs
    must agree on ``n_subjects``, ``seed`` and ``forms``."""
    for client, _, _ in runs:
        if exp.env_cls.uses_images(design):
            client.check_images(1)
    config = runs[0][1]
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    pairs = [(client, cfg) for client, cfg, _ in runs]
    counts = count_requests_of(exp, design, pairs, sessions)
    # answers decide what is asked next: the run's range (its every-answer-invalid playthrough)
    lows = (None if exp.env_cls.independent_of_answers(design)
            else count_requests_of(exp, design, pairs, sessions, invalid=True))
    reports = [_dry_report(exp, design, client, cfg, price, sessions, c, None if lows is None else lows[k], budget)
               for k, ((client, cfg, price), c) in enumerate(zip(runs, counts, strict=True))]
    for (client, cfg, price), c, report in zip(runs, counts, reports, strict=True):
        if reasons(cfg.llm, cfg.thinking_budget):
            report.update(reasoning_cost(cfg, price, c, hidden, client.chars_per_token))
    return reports


def reasoning_cost(config: RunConfig, price: Price | None, c: RequestCount, hidden: HiddenTokens | None,
                   chars_per_token: float = 4.0) -> dict[str, Any]:
    """A reasoning model's dry-run entries: the expected cost and its range from ``hidden`` (completion tokens
    per call by step kind, hidden ones included; estimated prompt tokens re-priced at the pilot's billed
    tokens per character), or null with the reason where nothing measures them."""
    limit = {"answer": config.max_tokens, "hidden_allowance": config.hidden_allowance,
             "per_call": config.completion_limit}
    entry: dict[str, Any] = {"completion_limit": limit, "reasoning_effort": config.reasoning_effort,
                             "thinking_budget": config.thinking_budget}
    if hidden is None:
        why = refusal(config.llm) + " (options of `cogtestbed plan`; max_cost_usd is the ceiling)"
        return {"estimated_cost_usd": None, "estimated_cost_null_reason": why, "reasoning": entry}
    calls = {k: n for k, n in c.by_kind().items() if n}
    entry["completion_tokens_per_call"] = hidden.as_json()
    out: dict[str, Any] = {"reasoning": entry}
    prompt = hidden.prompt_tokens(c.prompt_tokens, chars_per_token, c.exact)
    if prompt != c.prompt_tokens:
        entry["prompt_tokens_calibrated"] = prompt
    if price is not None:
        low, mid, high = hidden.cost_range(price, prompt, calls)
        out.update(estimated_cost_usd=round(mid, 4), estimated_cost_usd_range=[round(low, 4), round(high, 4)])
    return out


def _dry_report(exp: Experiment, design: Design, client: LLMClient, config: RunConfig, price: Price | None,
                sessions: Any, c: RequestCount, low: RequestCount | None, budget: Budget | None) -> dict[str, Any]:
    """One run's dry-run report from its counts (``low``: its every-answer-invalid playthrough, where
    answers decide what is asked next)."""
    calls = c.calls
    # prompts that render earlier answers may run longer than the playthrough's: the budget's margin
    margin = 1.0 if exp.env_cls.independent_of_answers(design) else 1.0 + SUBJECT_PROMPT_MARGIN
    report: dict[str, Any] = {
        "experiment": exp.name, "llm": config.llm, "subjects": config.n_subjects,
        "calls": calls, "prompt_tokens": c.prompt_tokens, "max_completion_tokens": c.completion,
        "images": c.n_images,
        "image_tokens": (c.img_tokens if not c.exact else "in prompt_tokens") if c.n_images else 0,
        "token_counts": _token_counts(client, c.exact),
        "completion_tokens": _completion_note(c, config),
        "price_usd_per_mtok": None if price is None else asdict(price),
        **({"unpriced": UNPRICED_NOTE} if price is None else {}),
        "estimated_cost_usd": None if price is None else round(price.cost(c.prompt_tokens, c.completion), 4),
        "max_cost_usd": None if price is None else _ceil_usd(price.cost(math.ceil(c.bound_tokens * margin),
                                                                       c.completion)),
        "cost_vs_billed": _cost_note(exp, design, c),
        "prompts_are_the_runs": prompts_fixed(exp, design, c),
        "answer_independent": exp.env_cls.independent_of_answers(design),
        "longest_session_calls": c.longest_session,
    }
    report.update(_if_the_server_cannot_score(exp, design, client, config, sessions, price))
    if low is not None:
        report.update(_calls_range(exp, design, config, calls, low))
    if config.reask:
        report["calls_with_all_reasks"] = calls * (1 + config.reask)
    warnings = run_warnings(exp, design, client)
    if warnings:
        report["warnings"] = [w["message"] for w in warnings]
    if budget is not None and budget.limited:
        worst = [sum(subject_needs(exp, design, client, config, sessions, i, budget), Need())
                 for i in range(config.n_subjects)]
        report["worst_case_per_subject"] = {"calls": max(w.calls for w in worst),
                                            "usd": round(max(w.usd for w in worst), 6)}
        report["subjects_within_budget"] = budget_outlook(budget, worst)
    return report


def _if_the_server_cannot_score(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                                sessions: Any, price: Price | None) -> dict[str, Any]:
    """The dry run's ``if_the_server_cannot_score`` entry (empty where the run cannot fall back):
    the run's probe may find a completions server that returns no log-probabilities, and then samples."""
    if exp.env_cls.sampling_note(design) is None or not client.can_score or not client.http:
        return {}
    client.can_score = False
    try:
        alt = count_requests(exp, design, client, config, sessions)
    finally:
        client.can_score = True
    probe = sum(client.billed_prompt_tokens(prompt)[0] for prompt, _, _ in PROBE_REQUESTS)
    probe_out = sum(out for _, out, _ in PROBE_REQUESTS)
    return {"if_the_server_cannot_score": {
        "calls": alt.calls + len(PROBE_REQUESTS), "estimated_cost_usd": None if price is None else round(
            price.cost(alt.prompt_tokens + probe, alt.completion + probe_out), 4),
        "note": f"a completions server that returns no log-probabilities, or inconsistent ones, is found by "
                f"the scoring probe ({len(PROBE_REQUESTS)} requests) before any subject's call; every scored "
                "step is then sampled"}}


def _calls_range(exp: Experiment, design: Design, config: RunConfig, calls: int, low: RequestCount) -> dict[str, Any]:
    """Where answers decide what is asked next: the requests when every answer is invalid (``low``:
    that playthrough's count), the ceiling no run exceeds (every step a session can take, each asked
    1 + reask times) and a note."""
    ceiling = max(calls * (1 + config.reask), config.n_subjects * exp.env_cls.max_steps(design) * (1 + config.reask))
    note = (
        f"the run makes {calls} requests when every answer is valid (none served from the cache; re-asks "
        f"add to it: calls_with_all_reasks) and {low.calls} when every answer is unparseable (later stages "
        "skipped; a subject's repeat of its own request at temperature 0 served from the cache); other "
        "mixes of answers fall in between, and requests that repeat another subject's may be cached too; "
        f"no run makes more than calls_ceiling = {ceiling} (every step a session can take"
        + (", each re-asked" if config.reask else "") + "), which sessions that run longer than the "
        "playthrough's (more pumps, a longer staircase) approach; max_cost_usd covers the playthrough's steps")
    return {"calls_if_every_answer_is_invalid": low.calls, "calls_ceiling": ceiling, "calls_range": note}
