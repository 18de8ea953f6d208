"""``LLMAgent(client, env)``: a real model as just another subject.

On every step it sends the observation's ``prompt`` (the exact text, answer prefix included) to
the client, records the raw answer with :meth:`TextEnv.record_response`, parses it with the
environment's own :meth:`TextEnv.parse`, and returns the action — or :data:`NO_ACTION` with the
parse error recorded.  It never substitutes a random choice (CogBench does; seed 002 §1).

Re-asking (``reask=n``): after an unparseable answer the model is asked again up to ``n`` times.
Chat models see their previous answer and a short correction request; completion models get the
same prompt again as a new sample (distinct ``seed``), which only differs at ``temperature > 0``.
Every attempt is kept in :attr:`LLMAgent.attempts`; the trial records the last one.

Scored steps (the observation's ``response`` is a
:class:`~cogtestbed.environments.base.ScoredResponse`): a client that can score returns the exact
teacher-forced log-probability of every continuation (``method="exact"``, with the mass outside
the continuations where known); one that cannot is sampled ``n_samples`` times at temperature 1,
each completion read by the environment's parser, and the empirical distribution is the answer
(``method="sampled"``, its N = the samples that parsed; the others are the mass outside).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from cogtestbed.environments.base import NO_ACTION, ScoredAnswer, ScoredResponse, TextEnv
from cogtestbed.llm_adapters.base import GenerateRequest, LLMClient, Prompt, ScoringNotSupported, run_sync

REASK_TEMPLATE = ("Your answer could not be read ({reason}). Please answer again, exactly in the "
                  "form the question asks for.")


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

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


class LLMAgent:
    """A subject backed by an LLM client (see module docstring).

    ``sample_seed`` seeds the per-call ``seed`` at ``temperature > 0`` (derived from it, the step
    and the attempt), so repeated runs draw the same samples and cached answers stay valid.
    """

    def __init__(self, client: LLMClient, env: TextEnv[Any, Any], *, max_tokens: int = 8,
                 temperature: float = 0.0, stop: tuple[str, ...] = ("\n",), reask: int = 0,
                 top_logprobs: int | None = None, sample_seed: int = 0, subject: int = 0) -> None:
        if reask < 0:
            raise ValueError("reask must be >= 0")
        self.client, self.env = client, env
        self.max_tokens, self.temperature, self.stop = max_tokens, temperature, tuple(stop)
        self.reask, self.top_logprobs = reask, top_logprobs
        self.sample_seed, self.subject = sample_seed, subject
        self.attempts: list[Attempt] = []

    # -- requests --------------------------------------------------------------------------
    def _seed(self, step: int, attempt: int) -> int | None:
        if self.temperature == 0:
            return None  # greedy decoding: identical prompts rightly share one answer
        seq = np.random.SeedSequence([self.sample_seed, step, attempt])
        return int(seq.generate_state(1, np.uint32)[0] >> 1)

    def request(self, prompt: Prompt, step: int, attempt: int,
                retry_of: tuple[str, str] | None = None) -> GenerateRequest:
        """The request for ``prompt`` (``retry_of``: previous raw answer and parse error)."""
        if self.client.chat:
            messages: list[dict[str, str]] = (
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
                raise ValueError(f"{self.client.spec} is a completion model but the environment "
                                 "renders chat messages; use a chat model or chat mode")
            final = prompt
        return GenerateRequest(final, self.max_tokens, self.temperature, self.stop,
                               self._seed(step, attempt), self.top_logprobs)

    # -- the agent interface -----------------------------------------------------------------
    async def aact(self, obs: Mapping[str, Any]) -> Any:
        """Ask, parse, maybe re-ask; record the answer on the env; return the action."""
        prompt = obs["prompt"]
        response = obs.get("response")
        if isinstance(response, ScoredResponse):
            return await self._ascored(prompt, response)
        step = self.env.t
        retry_of: tuple[str, str] | None = None
        errors: list[str] = []
        for attempt in range(self.reask + 1):
            req = self.request(prompt, step, attempt, retry_of)
            gen = await self.client.agenerate(req)
            parsed = self.env.parse(gen.text)
            self.attempts.append(Attempt(
                self.subject, step, attempt, _as_text(req.prompt), gen.text, parsed.ok,
                parsed.error, gen.cached, gen.prompt_tokens, gen.completion_tokens,
                gen.finish_reason,
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
        """A scored step: exact scores where the client can, else N samples (module docstring)."""
        if self.client.can_score:
            try:
                result = await self.client.ascore(prompt, response.continuations, response.raw)
            except ScoringNotSupported:
                pass
            else:
                raw = json.dumps({"logprobs": result.logprobs})
                self._log_scored(prompt, raw, True, None, result.cached)
                self.env.record_response(raw, None)
                return ScoredAnswer(np.array(result.logprobs, dtype=np.float64), "exact", result.mass_outside)
        return await self._asampled(prompt, response)

    async def _asampled(self, prompt: Prompt, response: ScoredResponse) -> Any:
        step = self.env.t
        counts = np.zeros(len(response.continuations))
        last = ""
        for i in range(response.n_samples):
            seed = int(np.random.SeedSequence([self.sample_seed, step, i]).generate_state(1, np.uint32)[0] >> 1)
            req = self.request(prompt, step, 0)
            req = GenerateRequest(req.prompt, self.max_tokens, 1.0, self.stop, seed, None)
            gen = await self.client.agenerate(req)
            parsed = self.env.parse(gen.text)
            last = gen.text
            if parsed.ok:
                counts[int(parsed.action)] += 1
        n = int(counts.sum())
        raw = json.dumps({"counts": counts.tolist(), "drawn": response.n_samples})
        if n == 0:
            error = f"none of {response.n_samples} samples named a continuation (last: {last[:30]!r})"
            self._log_scored(prompt, raw, False, error)
            self.env.record_response(raw, error)
            return NO_ACTION
        self._log_scored(prompt, raw, True, None)
        self.env.record_response(raw, None)
        with np.errstate(divide="ignore"):
            return ScoredAnswer(np.log(counts / n), "sampled", 1.0 - n / response.n_samples, n)

    def _log_scored(self, prompt: Prompt, raw: str, ok: bool, error: str | None, cached: bool = False) -> None:
        self.attempts.append(Attempt(self.subject, self.env.t, 0, _as_text(prompt), raw, ok, error, cached,
                                     None, None, None))

    def act(self, obs: Mapping[str, Any]) -> Any:
        """Synchronous :meth:`aact` (for :func:`cogtestbed.simulation.run_stepwise`)."""
        return run_sync(self.aact(obs))

    def update(self, obs: Any, action: Any, reward: float, next_obs: Any) -> None:
        """In-context learning only: the history is in the next prompt."""


def _as_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in prompt)
