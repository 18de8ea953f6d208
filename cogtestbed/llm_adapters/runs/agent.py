"""``LLMAgent(client, env)``: a real model as just another subject.

On every step it sends the observation's ``prompt`` (the exact text, answer prefix included) to
the client, records the raw answer with :meth:`TextEnv.record_response`, parses it with the
environment's own :meth:`TextEnv.parse`, and returns the action — or :data:`NO_ACTION` with the
parse error recorded.  It never substitutes a random choice (CogBench's released code does; Coda-Forno et al. 2024).

Re-asking (``reask=n``): after an unparseable answer the model is asked again up to ``n`` times.
Chat models see their previous answer and a short correction request; completion models get the
same prompt again as a new sample (distinct ``seed``), which only differs at ``temperature > 0``.
Every attempt is kept in :attr:`LLMAgent.attempts`; the trial records the last one.

Scored steps (the observation's ``response`` is a :class:`ScoredResponse`): the agent asks the
client for the exact teacher-forced log-probability of each declared continuation
(``LLMClient.ascore``) and answers with an exact :class:`ScoredAnswer`.  Where the backend raises
:class:`ScoringNotSupported` it draws ``n_samples`` completions at temperature 1 (seeded, so a
rerun is served from the cache), maps each to a continuation with the phase's own parser, and
answers with the empirical distribution (``method="sampled"``, N recorded; completions that
match no continuation are the ``mass_outside``); a score refused in a run that meant to score
exactly is recorded on the step's rows (``score_fallback``) and in the run's :class:`ScoringLog`.
Each call is an :class:`Attempt` row; rows of a scored step carry the step's distribution, method
and N.  Token log-probabilities a backend returns (``top_logprobs``) are kept on the row as JSON.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from cogtestbed.environments.base import NO_ACTION, ParseResult, ScoredAnswer, ScoredResponse, TextEnv
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoreResult,
    ScoringNotSupported,
    run_sync,
)

logger = logging.getLogger(__name__)

REASK_TEMPLATE = ("Your answer could not be read ({reason}). Please answer again, exactly in the "
                  "form the question asks for.")
#: Temperature of the completions that estimate a scored distribution where a backend cannot
#: score: 1, so that the sample shares estimate the model's own next-token distribution.
SAMPLING_TEMPERATURE = 1.0
#: Offset of the attempt index in the sampling seeds of a scored step (keeps them apart from the
#: seeds of text re-asks of the same step).
SAMPLE_SEED_KEY = 1_000_003


@dataclass
class Attempt:
    """One call of an :class:`LLMAgent`: what was asked, what came back, whether it parsed."""

    subject: int
    step: int
    attempt: int
    prompt: str
    raw_response: str
    valid: bool
    parse_error: str | None
    cached: bool
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    #: ``"text"`` (a generation), ``"score"`` (an exact score) or ``"sample"`` (one draw of a
    #: sampled estimate).
    kind: str = "text"
    #: Generated tokens with their top alternatives, as JSON (where the backend returned them).
    top_logprobs: str | None = None
    #: Scored steps: the continuations, the answer's log-probabilities, ``"exact"`` or
    #: ``"sampled"``, the N of a sampled estimate, and the mass outside the continuations.
    continuations: list[str] | None = None
    score_logprobs: list[float] | None = None
    score_method: str | None = None
    score_n: int | None = None
    mass_outside: float | None = None
    #: Retries the call needed (HTTP 429/5xx, dropped connections), and each one's error and wait
    #: as a JSON list.
    retries: int = 0
    retry_log: str | None = None
    #: A sampled scored step of a run that scores exactly: why its exact score was refused.
    score_fallback: str | None = None
    #: Hidden reasoning tokens of the call, part of ``completion_tokens`` (None: the backend reports none).
    reasoning_tokens: int | None = None

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def retry_fields(gen: Generation | ScoreResult) -> dict[str, Any]:
    """The :class:`Attempt` fields of the retries a generation (or a score) needed (and a generation's
    hidden reasoning tokens)."""
    hidden = {"reasoning_tokens": gen.reasoning_tokens} if isinstance(gen, Generation) else {}
    return {"retries": len(gen.retries), "retry_log": json.dumps(gen.retries) if gen.retries else None, **hidden}


#: Finish reasons of an answer cut at its completion limit (OpenAI's ``length``, Anthropic's ``max_tokens``).
LIMIT_REASONS = ("length", "max_tokens")
#: The invalid reason of an answer that reached its completion limit before any visible text.
TRUNCATED_REASON = "truncated"


def truncated_error(gen: Generation, request: GenerateRequest) -> str | None:
    """The parse error of an answer that hit its completion limit with no visible text — a reasoning model
    that spent the limit thinking — with what to change; None for any other answer (it is parsed)."""
    if gen.finish_reason not in LIMIT_REASONS or gen.text.strip():
        return None
    hidden = f" ({gen.reasoning_tokens} of them hidden reasoning)" if gen.reasoning_tokens else ""
    return (f"{TRUNCATED_REASON}: the completion limit of {request.max_tokens} tokens was reached before any "
            f"answer text{hidden}; raise --thinking-budget (a reasoning model) or --max-tokens")


def top_logprobs_json(gen: Generation) -> str | None:
    """The generation's token log-probabilities (with their top alternatives) as JSON."""
    if gen.logprobs is None:
        return None
    return json.dumps([asdict(t) for t in gen.logprobs], ensure_ascii=False)


class ScoringLog:
    """A run's record of the scored steps it could not score exactly although it meant to
    (:meth:`LLMAgent._ascored` falls back to sampling where a score request is refused): the reasons
    with their counts, and one warning line the first time it happens (``expected``: the method the
    run decided before any subject's call, ``run.json``'s ``scoring.method``)."""

    def __init__(self, expected: str | None) -> None:
        self.expected = expected
        self.fallbacks: dict[str, int] = {}

    def fallback(self, reason: str) -> None:
        """A scored step is sampled because its exact score was refused (``reason``)."""
        if not self.fallbacks and self.expected == "exact":
            logger.warning("%s", f"exact scoring abandoned mid-run: a scored step is sampled instead "
                                 f"({reason}); run.json's scoring counts the steps of each method")
        self.fallbacks[reason] = self.fallbacks.get(reason, 0) + 1


class LLMAgent:
    """A subject backed by an LLM client (see module docstring).

    ``sample_seed`` seeds the per-call ``seed`` at ``temperature > 0`` (derived from it, the step
    and the attempt), so repeated runs draw the same samples and cached answers stay valid.
    """

    def __init__(self, client: LLMClient, env: TextEnv[Any, Any], *, max_tokens: int = 8,
                 temperature: float = 0.0, stop: tuple[str, ...] = ("\n",), reask: int = 0,
                 top_logprobs: int | None = None, sample_seed: int = 0, subject: int = 0,
                 scoring_log: ScoringLog | None = None, reasoning_effort: str | None = None,
                 thinking_budget: int | None = None) -> None:
        if reask < 0:
            raise InputError("reask must be >= 0")
        #: Reasoning controls every request carries (:mod:`~cogtestbed.llm_adapters.clients.capabilities`);
        #: ``max_tokens`` covers them.
        self.reasoning_effort, self.thinking_budget = reasoning_effort, thinking_budget
        self.client, self.env = client, env
        self.max_tokens, self.temperature, self.stop = max_tokens, temperature, tuple(stop)
        self.reask, self.top_logprobs = reask, top_logprobs
        self.sample_seed, self.subject = sample_seed, subject
        self.scoring_log = scoring_log
        self.attempts: list[Attempt] = []

    # -- requests --------------------------------------------------------------------------
    def _seed(self, step: int, attempt: int, temperature: float | None = None) -> int | None:
        if (self.temperature if temperature is None else temperature) == 0:
            return None  # greedy decoding: identical prompts rightly share one answer
        seq = np.random.SeedSequence([self.sample_seed, step, attempt])
        return int(seq.generate_state(1, np.uint32)[0] >> 1)

    def request(self, prompt: Prompt, step: int, attempt: int,
                retry_of: tuple[str, str] | None = None) -> GenerateRequest:
        """The request for ``prompt`` (``retry_of``: previous raw answer and parse error)."""
        if self.client.chat:
            messages: list[dict[str, Any]] = (
                [{"role": "user", "content": prompt}] if isinstance(prompt, str)
                else [dict(m) for m in prompt]
            )
            if retry_of is not None:
                raw, reason = retry_of
                messages += [{"role": "assistant", "content": raw},
                             {"role": "user", "content": REASK_TEMPLATE.format(reason=reason)}]
            final: Prompt = messages
        else:
            if not isinstance(prompt, str):
                raise InputError(f"{self.client.spec} is a completion model but the environment "
                                 "renders chat messages; use a chat model or chat mode")
            final = prompt
        return GenerateRequest(final, self.max_tokens, self.temperature, self.stop,
                               self._seed(step, attempt), self.top_logprobs, self.reasoning_effort,
                               self.thinking_budget)

    def sample_request(self, prompt: Prompt, step: int, draw: int) -> GenerateRequest:
        """The request of draw ``draw`` of a sampled scored step (temperature 1, its own seed)."""
        req = self.request(prompt, step, 0)
        return GenerateRequest(req.prompt, self.max_tokens, SAMPLING_TEMPERATURE, self.stop,
                               self._seed(step, SAMPLE_SEED_KEY + draw, SAMPLING_TEMPERATURE), self.top_logprobs,
                               self.reasoning_effort, self.thinking_budget)


    def _parse(self, gen: Any, req: Any) -> ParseResult:
        """The environment's parse of an answer, or its truncation (limit reached with no answer) as the
        failure's reason (:func:`truncated_error`)."""
        cut = truncated_error(gen, req)
        return self.env.parse(gen.text) if cut is None else ParseResult.failure(cut)
    def first_requests(self, obs: Mapping[str, Any]) -> list[GenerateRequest]:
        """The generation requests :meth:`aact` makes first for ``obs`` whatever the answers: the first
        ask of a text step, or every draw of a scored step the client cannot score (none where it
        scores).  Batch mode sends those of answer-independent steps ahead, in one batch."""
        response, step = obs.get("response"), self.env.t
        if isinstance(response, ScoredResponse):
            if self.client.can_score:
                return []
            return [self.sample_request(obs["prompt"], step, d) for d in range(response.n_samples)]
        return [self.request(obs["prompt"], step, 0)]

    # -- the agent interface -----------------------------------------------------------------
    async def aact(self, obs: Mapping[str, Any]) -> Any:
        """Ask, parse, maybe re-ask; record the answer on the env; return the action.

        A scored step is answered with a :class:`ScoredAnswer` instead (see module docstring).
        """
        response = obs.get("response")
        if isinstance(response, ScoredResponse):
            return await self._ascored(obs["prompt"], response)
        prompt = obs["prompt"]
        step = self.env.t
        retry_of: tuple[str, str] | None = None
        errors: list[str] = []
        for attempt in range(self.reask + 1):
            req = self.request(prompt, step, attempt, retry_of)
            self.client.check_images(req.n_images)
            gen = await self.client.agenerate(req)
            parsed = self._parse(gen, req)
            self.attempts.append(Attempt(
                self.subject, step, attempt, _as_text(req.prompt), gen.text, parsed.ok,
                parsed.error, gen.cached, gen.prompt_tokens, gen.completion_tokens,
                gen.finish_reason, top_logprobs=top_logprobs_json(gen), **retry_fields(gen),
            ))
            if parsed.ok:
                self.env.record_response(gen.text, None)
                return parsed.action
            errors.append(str(parsed.error))
            retry_of = (gen.text, str(parsed.error))
        reason = errors[-1] if len(errors) == 1 else f"{len(errors)} attempts failed; last: {errors[-1]}"
        self.env.record_response(retry_of[0] if retry_of else None, reason)
        return NO_ACTION

    async def _ascored(self, prompt: Prompt, response: ScoredResponse) -> Any:
        """Exact scores of the continuations, or a sampled estimate where the backend cannot score."""
        step = self.env.t
        # a raw scored step continues the text itself (a next-token probe), even on a chat model
        context: Prompt = prompt if (isinstance(prompt, str) and (response.raw or not self.client.chat)) else (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt)
        if not self.client.can_score:  # decided before the run (a probe found no scores): no wasted request
            return await self._asampled(prompt, response, step)
        try:
            result = await self.client.ascore(context, list(response.continuations), response.raw)
        except ScoringNotSupported as exc:  # refused for this step (an error, non-finite values): sampled
            reason = str(exc)
            if self.scoring_log is not None:
                self.scoring_log.fallback(reason)
            return await self._asampled(prompt, response, step, fallback=reason)
        answer = ScoredAnswer(np.asarray(result.logprobs, dtype=np.float64), method="exact",
                              mass_outside=result.mass_outside)
        self.attempts.append(Attempt(
            self.subject, step, 0, _as_text(context), "", True, None, result.cached, None, None, None,
            kind="score", continuations=list(response.continuations),
            score_logprobs=[float(x) for x in answer.logprobs], score_method="exact",
            mass_outside=result.mass_outside, **retry_fields(result),
        ))
        self.env.record_response(None, None)
        return answer

    async def _asampled(self, prompt: Prompt, response: ScoredResponse, step: int,
                        fallback: str | None = None) -> Any:
        """``n_samples`` completions at temperature 1, each mapped to a continuation by the phase's
        parser; the empirical distribution (and the unmatched share) is the answer."""
        k = len(response.continuations)
        counts = np.zeros(k, dtype=np.int64)
        rows: list[Attempt] = []
        for draw in range(response.n_samples):
            req = self.sample_request(prompt, step, draw)
            gen = await self.client.agenerate(req)
            parsed = self._parse(gen, req)
            index = _continuation_index(parsed.action, k) if parsed.ok else None
            if index is not None:
                counts[index] += 1
            rows.append(Attempt(
                self.subject, step, draw, _as_text(req.prompt), gen.text, index is not None,
                parsed.error if index is None else None, gen.cached, gen.prompt_tokens,
                gen.completion_tokens, gen.finish_reason, kind="sample",
                top_logprobs=top_logprobs_json(gen), continuations=list(response.continuations),
                score_fallback=fallback, **retry_fields(gen),
            ))
        try:
            answer = ScoredAnswer.from_counts(counts, n_drawn=response.n_samples)
        except ValueError:
            reason = f"none of {response.n_samples} sampled answers matched a continuation"
            for row in rows:
                row.score_method, row.score_n = "sampled", response.n_samples
            self.attempts.extend(rows)
            self.env.record_response(rows[-1].raw_response if rows else None, reason)
            self.env.record_scoring("sampled", response.n_samples)
            return NO_ACTION
        for row in rows:
            row.score_logprobs = [float(x) for x in answer.logprobs]
            row.score_method, row.score_n, row.mass_outside = "sampled", answer.n_samples, answer.mass_outside
        self.attempts.extend(rows)
        self.env.record_response(None, None)
        return answer

    def act(self, obs: Mapping[str, Any]) -> Any:
        """Synchronous :meth:`aact` (for :func:`cogtestbed.simulation.run_stepwise`)."""
        return run_sync(self.aact(obs))

    def update(self, obs: Any, action: Any, reward: float, next_obs: Any) -> None:
        """In-context learning only: the history is in the next prompt."""


def _continuation_index(action: Any, k: int) -> int | None:
    """The continuation a parsed sample names (an index below ``k``), or None."""
    try:
        index = int(action)
    except (TypeError, ValueError):
        return None
    return index if 0 <= index < k else None


def _as_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(f"[{m['role']}]\n" + "[image]\n" * len(m.get("images") or ()) + str(m["content"])
                       for m in prompt)
