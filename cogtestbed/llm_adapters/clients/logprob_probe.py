"""Whether a server's log-probabilities can be trusted for exact scoring, checked before a run uses them.

Exact scoring over HTTP (``echo`` + ``logprobs`` on ``/v1/completions``) reads the log-probability
the server reports for each prompt token.  A server can return numbers that are not those
log-probabilities: llama-cpp-python's echoed prompt log-probabilities are shifted by one position
(revealed-belief scores 15–39 nats off, its letter question's top answer changed from [A] to [E]).
Nothing in the response says so, so :func:`probe_scoring` asks the server the same question twice
before any subject's call:

1. **generate**: the probe context :data:`PROBE_CONTEXT` continued by one token at temperature 0
   with the :data:`PROBE_TOP` most likely next tokens and their log-probabilities — what the
   server's sampler sees at that position;
2. **echo**: :data:`PROBE_CONTEXT` + :data:`PROBE_CONTINUATION` echoed with log-probabilities (the
   request every scored step makes) — what the server reports for that token at the same position.

Consistent servers agree: the echoed log-probability of the continuation's first token equals the
log-probability the generation gives it (where it is among the top :data:`PROBE_TOP`), or is at
most the smallest of them (where it is not), within :data:`PROBE_TOLERANCE` nats; no echoed value
is above 0; and the first echoed token carries none (nothing precedes it; checked on every scoring
request, :func:`~.openai_client.OpenAIClient.ascore`).  A server that fails,
or that answers either request with an error saying log-probabilities (or ``echo``) are unsupported
— whatever its HTTP status: llama.cpp without ``--logits_all`` answers HTTP 500 "logprobs is not
supported" — is scored by sampling (:func:`cogtestbed.llm_adapters.runs.runner.decide_scoring` records
why in ``run.json``'s ``scoring``).

Both probe requests go through the run's client (cached, booked on the budget, counted by the dry
run: :data:`PROBE_REQUESTS`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    GenerateRequest,
    LLMClient,
    ScoringNotSupported,
)

#: The probe's context and scored continuation: a few tokens, no trailing space in the context (the
#: continuation starts on a token boundary in byte-level BPE vocabularies), a continuation every
#: language model ranks among its most likely (so the two log-probabilities compared are equal, not
#: only bounded) and a context whose tokens are not (so a value moved by one position differs).
PROBE_CONTEXT, PROBE_CONTINUATION = "The capital of France is", " Paris"
#: Alternatives asked of the generation request (5: OpenAI's legacy completions allow no more).
PROBE_TOP = 5
#: Largest disagreement, in nats, between the echoed and the generated log-probability of one token
#: at one position (cogtestbed's default; float32 kernels and batched prompt evaluation differ by
#: ~1e-3 nats, the shifted echo of llama-cpp-python by nats).
PROBE_TOLERANCE = 0.1
#: The probe's HTTP requests as (prompt, max_tokens, scored): what the dry run counts.
PROBE_REQUESTS: tuple[tuple[str, int, bool], ...] = (
    (PROBE_CONTEXT, 1, False), (PROBE_CONTEXT + PROBE_CONTINUATION, 1, True))

_UNSUPPORTED = re.compile(
    r"not (?:be )?(?:supported|available|enabled|implemented|allowed)|unsupported|does ?n[o']t support|"
    r"cannot|can't|disabled|not compatible|only supported|requires|not permitted|extra inputs|extra_forbidden|"
    r"unrecognized (?:field|argument|parameter)|unknown (?:field|argument|parameter)", re.IGNORECASE)
_SUBJECT = re.compile(r"log[\s_-]?prob|echo", re.IGNORECASE)


def says_logprobs_unsupported(message: str) -> bool:
    """Whether an error message says the server cannot return log-probabilities (or ``echo``):
    "logprobs is not supported ..." (llama.cpp without ``--logits_all``), "echo is not supported",
    "does not support logprobs", "prompt_logprobs ... disabled", a schema that has no such field (vLLM's
    HTTP 422 "Extra inputs are not permitted" naming ``echo``).  Such an error is final whatever
    its HTTP status (it is not retried: :func:`cogtestbed.llm_adapters.middleware.retry.is_retryable`)."""
    return bool(_SUBJECT.search(message)) and bool(_UNSUPPORTED.search(message))


@dataclass
class ProbeResult:
    """The probe's verdict: ``ok`` (exact scoring can be trusted) or the ``reason`` it cannot, with
    the measured values (``checks``) and the retries of its requests."""

    ok: bool
    reason: str
    checks: dict[str, Any] = field(default_factory=dict)
    retries: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "checks": self.checks}


def check_consistency(generated_top: dict[str, float], echoed_tokens: list[str], echoed_values: list[float],
                      tolerance: float = PROBE_TOLERANCE) -> tuple[bool, str, dict[str, Any]]:
    """(consistent, why, measured values) of one position: ``generated_top``, the generation's top
    next tokens and log-probabilities after :data:`PROBE_CONTEXT`; ``echoed_tokens`` /
    ``echoed_values``, the echoed continuation's tokens and log-probabilities."""
    if not echoed_tokens or len(echoed_tokens) != len(echoed_values):
        return False, "the echo returned no log-probability for the probe's continuation", {}
    token, echoed = echoed_tokens[0], float(echoed_values[0])
    checks: dict[str, Any] = {"token": token, "echoed_logprob": echoed,
                              "generated_top": {k: float(v) for k, v in generated_top.items()}}
    if not all(math.isfinite(v) and v <= tolerance for v in echoed_values):
        return False, f"an echoed log-probability is not a log-probability ({echoed_values})", checks
    if not generated_top or not all(math.isfinite(v) for v in generated_top.values()):
        return False, "the generation returned no top log-probabilities to compare with", checks
    if token in generated_top:
        generated = float(generated_top[token])
        checks["generated_logprob"] = generated
        checks["difference"] = abs(echoed - generated)
        if abs(echoed - generated) > tolerance:
            return False, (f"the echoed log-probability of {token!r} after {PROBE_CONTEXT!r} is {echoed:.3f}, "
                           f"generating it from the same prefix gives {generated:.3f} ({abs(echoed - generated):.2f} "
                           f"nats apart, tolerance {tolerance:g})"), checks
        return True, f"echoed and generated log-probabilities agree within {tolerance:g} nats", checks
    floor = min(float(v) for v in generated_top.values())
    checks["generated_floor"] = floor
    if echoed > floor + tolerance:
        return False, (f"the echoed log-probability of {token!r} after {PROBE_CONTEXT!r} is {echoed:.3f}, above "
                       f"every one of the {len(generated_top)} most likely tokens the same server generates "
                       f"there (lowest {floor:.3f}) although it is not among them"), checks
    return True, (f"the echoed log-probability lies below the generation's top {len(generated_top)} "
                  f"(within {tolerance:g} nats)"), checks


async def probe_scoring(client: LLMClient, tolerance: float = PROBE_TOLERANCE) -> ProbeResult:
    """Ask ``client`` (the run's cached, budgeted client of a completions server) the probe's two
    requests (module docstring) and judge its log-probabilities.  Raises what the requests raise
    except :class:`ScoringNotSupported` and errors saying log-probabilities are unsupported (those
    are a failed probe)."""
    retries: list[str] = []
    try:
        gen = await client.agenerate(GenerateRequest(PROBE_CONTEXT, max_tokens=1, temperature=0.0,
                                                     top_logprobs=PROBE_TOP))
        retries += gen.retries
        score = await client.ascore(PROBE_CONTEXT, [PROBE_CONTINUATION], raw=True)
        retries += score.retries
    except ScoringNotSupported as exc:
        return ProbeResult(False, str(exc), retries=retries)
    except BackendError as exc:
        if not says_logprobs_unsupported(str(exc)):
            raise
        return ProbeResult(False, f"the server answered that log-probabilities are unsupported: {exc}",
                           retries=retries)
    top = dict(gen.logprobs[0].top) if gen.logprobs else {}
    if gen.logprobs:
        top.setdefault(gen.logprobs[0].token, gen.logprobs[0].logprob)
    cont = score.scores[0]
    ok, why, checks = check_consistency(top, list(cont.tokens), list(cont.token_logprobs), tolerance)
    return ProbeResult(ok, why, checks, retries)
