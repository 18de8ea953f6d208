"""What a run asks, counted before it asks: the requests of each step (:func:`step_requests`), every
request of a run (:func:`count_requests`, for the dry run and ``plan``) and a subject's worst case
(:func:`subject_needs`, what the budget admits it for)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cogtestbed.environments.base import NO_ACTION, Design, ScoredResponse, Sessions
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import LLMClient, Prompt, freeze_prompt
from cogtestbed.llm_adapters.clients.logprob_probe import PROBE_REQUESTS
from cogtestbed.llm_adapters.middleware.limits import SUBJECT_PROMPT_MARGIN, Budget, Need
from cogtestbed.llm_adapters.runs.agent import LLMAgent
from cogtestbed.llm_adapters.runs.config import (
    REASK_REASON_BYTES,
    RunConfig,
    subject_forms,
)
from cogtestbed.registry import Experiment


def score_context(client: LLMClient, prompt: Prompt, response: ScoredResponse) -> Prompt:
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
            context = score_context(client, prompt, response)
            n = client.score_requests(k)
            one = budget.worst((bound(context) + longest) * (k // n), k // n)
            return Need(one.calls * n, one.usd * n)
        one = budget.worst(bound(agent.request(prompt, step, 0).prompt), agent.max_tokens)
        return Need(one.calls * response.n_samples, one.usd * response.n_samples)
    first = budget.worst(bound(agent.request(prompt, step, 0).prompt), agent.max_tokens)
    if not agent.reask:
        return first
    # every re-ask sends the same prompt (only its seed differs): one priced, counted reask times
    tokens = bound(agent.request(prompt, step, 1, ("", "x" * REASK_REASON_BYTES)).prompt)
    again = budget.worst(tokens + agent.max_tokens, agent.max_tokens)
    return Need(first.calls + agent.reask * again.calls, first.usd + agent.reask * again.usd)


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
    #: Prompt tokens of each session (images included; the scoring probe, a run's own, in none).
    session_prompt_tokens: list[int] = field(default_factory=list)

    def by_kind(self) -> dict[str, int]:
        """Requests by step kind (``text``, ``sample``, ``score``), as ``calls.parquet``'s ``kind``."""
        return {"text": self.calls - self.scored_requests - self.sample_requests, "sample": self.sample_requests,
                "score": self.scored_requests}


def count_requests(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                   sessions: Sessions, invalid: bool = False) -> RequestCount:
    """Every HTTP request of the run (each session played with valid random actions, seeded), with
    the decided scoring probe (:func:`~.runner.decide_scoring`) where the run makes one.

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
        before = [(c.calls, c.prompt_tokens + (c.img_tokens or 0)) for c in counts]
        while not done:
            scored = _count_step(pairs, counts, asked, obs, env.t, invalid)
            obs, _, done, _, _ = env.step(NO_ACTION if invalid and not scored else env.action_space.sample())
        for c, (calls, tokens) in zip(counts, before, strict=True):
            c.longest_session = max(c.longest_session, c.calls - calls)
            c.session_prompt_tokens.append(c.prompt_tokens + (c.img_tokens or 0) - tokens)
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
        requests = _grouped(step_requests(client, cfg, obs["prompt"], obs.get("response")))
        if invalid and not scored:
            requests = _invalid_step_requests(client, cfg, obs["prompt"], step, seen)
        for prompt, out, times in requests:
            _count_request(c, client, prompt, out, scored=scored, times=times)
    return scored


def _grouped(requests: Sequence[tuple[Prompt, int]]) -> list[tuple[Prompt, int, int]]:
    """``requests`` as (prompt, most tokens out, times): a run of one request repeated (a sampled score's
    ``n_samples`` draws of one prompt) counted once, ``times`` times (the same sums)."""
    out: list[tuple[Prompt, int, int]] = []
    for prompt, limit in requests:
        if out and out[-1][0] is prompt and out[-1][1] == limit:
            out[-1] = (prompt, limit, out[-1][2] + 1)
        else:
            out.append((prompt, limit, 1))
    return out


def _invalid_step_requests(client: LLMClient, config: RunConfig, prompt: Prompt, step: int,
                           asked: set[Any]) -> list[tuple[Prompt, int, int]]:
    """The new requests of a text step whose every attempt is unparseable, each with how many times it is
    sent: the first ask once, the re-ask ``reask`` times (every re-ask sends the same prompt, only its seed
    differs: counted, never listed one by one).  At temperature 0 a first ask ``asked`` before is served from
    the cache, and so is its whole chain of re-asks (each quotes the cached answer before it, so it repeats
    too); ``asked`` gains the first ask."""
    agent = config.agent(client, None)  # builds requests only
    first = agent.request(prompt, step, 0, None)
    key = (freeze_prompt(first.prompt), first.seed) if config.temperature == 0 else object()
    if key in asked:
        return []
    asked.add(key)
    out: list[tuple[Prompt, int, int]] = [(first.prompt, config.completion_limit, 1)]
    if config.reask:
        request = agent.request(prompt, step, 1, ("?", "x" * REASK_REASON_BYTES))
        out.append((request.prompt, config.completion_limit, config.reask))
    return out


def _count_request(c: RequestCount, client: LLMClient, prompt: Prompt, out: int, scored: bool,
                   times: int = 1) -> None:
    """Add ``times`` HTTP requests of ``prompt`` (at most ``out`` tokens out) to ``c``: their prompt tokens
    as billed (:meth:`LLMClient.billed_prompt_tokens`: exact with the model's own tokenizer, images
    included; else an estimate, images by the provider's formula), and the bound the budget books."""
    from cogtestbed.llm_adapters.clients.base import message_images
    from cogtestbed.llm_adapters.clients.image_tokens import image_tokens

    n, is_exact = client.billed_prompt_tokens(prompt)
    c.calls, c.prompt_tokens, c.exact = c.calls + times, c.prompt_tokens + n * times, c.exact and is_exact
    # a chat history quotes the subject's earlier answers: the run's are the model's own text, not the
    # playthrough's; re-tokenised, an answer of max_tokens tokens runs to QUOTED_TOKENS_PER_TOKEN x as many
    quoted = 0 if isinstance(prompt, str) else sum(1 for m in prompt if m.get("role") == "assistant")
    c.quoted_answers += quoted * times
    c.bound_tokens += (client.prompt_token_bound(prompt) + quoted * (QUOTED_TOKENS_PER_TOKEN * out + 2)) * times
    c.completion += out * times
    if scored and client.can_score:
        c.scored_requests += times
    elif scored:
        c.sample_requests += times
    for image in () if isinstance(prompt, str) else (b for m in prompt for b in message_images(m)):
        c.n_images += times
        if is_exact:  # already in the exact count
            continue
        k = image_tokens(client.backend, image)
        c.img_tokens = None if k is None or c.img_tokens is None else c.img_tokens + k * times


def subject_needs(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                  sessions: Sessions, i: int, budget: Budget) -> list[Need]:
    """Subject ``i``'s worst case, step by step: its session played with valid random actions
    (seeded as :func:`~.pricing.dry_run` plays it), each step costed by :func:`step_need`."""
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


def cumulative_needs(needs: list[Need]) -> list[Need]:
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


