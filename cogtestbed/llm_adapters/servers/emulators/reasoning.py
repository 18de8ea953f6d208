"""The project's server as a reasoning model: hidden tokens billed, unsupported fields refused.

:class:`ReasoningModel` makes a model of :mod:`~cogtestbed.llm_adapters.servers.server` act as

* an **OpenAI reasoning model** on ``/v1/chat/completions``: a request carrying a field the capability
  table says such a model refuses (``temperature`` other than 1, ``top_p``, the penalties, ``logprobs``,
  ``stop``, ``max_tokens``, a server-only sampling field) gets OpenAI's 400 with its error shape (``code``
  ``unsupported_parameter`` / ``unsupported_value``); a ``reasoning_effort`` outside :attr:`efforts` too.
  Each answer spends hidden tokens first, out of ``max_completion_tokens``, and bills them inside
  ``completion_tokens`` and as ``completion_tokens_details.reasoning_tokens``; a call whose hidden tokens
  reach the limit comes back empty with ``finish_reason: "length"``; ``n`` choices are ``n`` answers (each
  with its own hidden tokens, the prompt billed once), an ``n`` outside [1, :data:`MAX_CHOICES`] a 400;
* a **Claude model with extended thinking** on ``/v1/messages``: ``thinking: {type: enabled,
  budget_tokens}`` with a budget below 1024 or not below ``max_tokens``, or with a temperature other than 1,
  is refused with Anthropic's error shape; the answer's content is a ``thinking`` block then the text, and
  ``usage.output_tokens`` counts the thinking tokens (Anthropic reports no separate count).

The hidden tokens of a call are a deterministic draw from the request (the same request spends the same),
uniform on ``mean × (1 ± spread)`` with ``mean`` set by the effort (or the thinking budget).  The answer is
the served model's, or :func:`format_answer`'s: the form the prompt asks for (a valid answer in every
experiment of this package), so that runs against the emulator complete with valid answers.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cogtestbed.llm_adapters.clients.base import GenerateRequest
from cogtestbed.llm_adapters.servers.billing import Billing
from cogtestbed.llm_adapters.servers.checks import MAX_TOKENS_LIMIT, anthropic_message, checked_messages, openai_message

if TYPE_CHECKING:
    from cogtestbed.llm_adapters.clients.hf import HFClient

#: Mean hidden tokens per call at each ``reasoning_effort`` (the emulator's own numbers; the model's
#: default effort is ``medium``).
DEFAULT_HIDDEN = {"minimal": 24, "low": 96, "medium": 320, "high": 1200}
#: The fields an OpenAI reasoning model refuses (the capability table's ``openai:o3*`` row: no sampling
#: field, no logprobs, no stop, ``max_completion_tokens`` not ``max_tokens``; and the server-only fields).
REFUSED_FIELDS = ("top_p", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "stop",
                  "max_tokens", "top_k", "min_p", "repeat_penalty", "repetition_penalty")
#: The most choices (``n``) one chat completion asks for (OpenAI's bound); more is a 400.
MAX_CHOICES = 128
#: Anthropic's smallest ``budget_tokens``.
THINKING_MIN = 1024


@dataclass(frozen=True)
class ReasoningModel:
    """How a served model acts as a reasoning model (see module docstring)."""

    efforts: tuple[str, ...] = ("low", "medium", "high")
    hidden: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_HIDDEN))
    spread: float = 0.5
    #: What it answers (the last user message's text -> the answer); None: the served model generates.
    answer: Callable[[str], str] | None = None
    #: The largest completion limit accepted.
    max_limit: int = 128_000

    def hidden_tokens(self, body: Mapping[str, Any], effort: str | None, budget: int | None = None,
                      choice: int = 0) -> int:
        """The hidden tokens of the request ``body``'s ``choice``-th answer: a draw seeded by its messages,
        effort and choice (each of ``n`` choices reasons on its own)."""
        mean = self.hidden[effort or "medium"] if budget is None else min(budget, self.hidden["medium"])
        seeded = [body.get("messages"), body.get("system"), effort, budget] + ([choice] if choice else [])
        key = json.dumps(seeded, sort_keys=True, default=str)
        seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
        u = np.random.default_rng(seed).uniform(-1.0, 1.0)
        return max(1, round(mean * (1.0 + self.spread * u)))


class Refused(ValueError):
    """A request the emulated provider refuses: ``status``, and the provider's error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(json.dumps(body))
        self.status, self.body = status, body


def openai_refusal(body: Mapping[str, Any], model: ReasoningModel) -> Refused | None:
    """OpenAI's 400 for the first field of ``body`` a reasoning model refuses, None where it takes them all."""
    def refused(param: str, message: str, code: str) -> Refused:
        return Refused(400, {"error": {"message": message, "type": "invalid_request_error", "param": param,
                                       "code": code}})

    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return refused("temperature", f"Unsupported value: 'temperature' does not support {temperature} with this "
                       "model. Only the default (1) value is supported.", "unsupported_value")
    for name in REFUSED_FIELDS:
        if body.get(name) is not None:
            hint = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
            return refused(name, f"Unsupported parameter: '{name}' is not supported with this model.{hint}",
                           "unsupported_parameter")
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in model.efforts:
        allowed = ", ".join(repr(e) for e in model.efforts)
        return refused("reasoning_effort", f"Unsupported value: 'reasoning_effort' does not support {effort!r} with "
                       f"this model. Supported values are: {allowed}.", "unsupported_value")
    limit = body.get("max_completion_tokens")
    if limit is not None and (type(limit) is not int or not 1 <= limit <= model.max_limit):
        return refused("max_completion_tokens", f"Invalid 'max_completion_tokens': must be an integer in "
                       f"[1, {model.max_limit}], got {limit!r}.", "invalid_value")
    n = body.get("n")
    if n is not None and (type(n) is not int or not 1 <= n <= MAX_CHOICES):
        return refused("n", f"Invalid 'n': must be an integer in [1, {MAX_CHOICES}], got {n!r}.", "invalid_value")
    return None


def anthropic_refusal(body: Mapping[str, Any]) -> Refused | None:
    """Anthropic's 400 for extended thinking asked wrongly (budget below 1024 or not below ``max_tokens``,
    a temperature other than 1 with it), None where the request is fine or asks no thinking."""
    thinking = body.get("thinking")
    if thinking is None:
        return None

    def refused(message: str) -> Refused:
        return Refused(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})

    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled" or not isinstance(budget, int):
        return refused("thinking: expected {type: 'enabled', budget_tokens: int}")
    if budget < THINKING_MIN:
        return refused(f"thinking.budget_tokens: Input should be greater than or equal to {THINKING_MIN}")
    if not isinstance(body.get("max_tokens"), int) or budget >= body["max_tokens"]:
        return refused("`max_tokens` must be greater than `thinking.budget_tokens`")
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return refused("`temperature` may only be set to 1 when thinking is enabled")
    for name in ("top_k", "top_p"):
        if body.get(name) is not None:
            return refused(f"`{name}` may not be set when thinking is enabled")
    return None


def last_user_text(messages: Any) -> str:
    """The text of the last user message of an OpenAI or Anthropic message list."""
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


_EXAMPLE = re.compile(r"Example(?: format)?:\s*\n(.+)\Z", re.S)
_PAIR = re.compile(r"\b(?:[Mm]achine|[Aa]lien|[Pp]lanet)\s+([A-Z])\b\s*(?:and|or)\s+(?:[Mm]achine\s+|[Aa]lien\s+|"
                   r"[Pp]lanet\s+)?([A-Z])\b")


def format_answer(text: str) -> str:
    """An answer in the form the prompt asks for (the emulator's stand-in for a model that follows the
    instructions): the prompt's own example where it shows one; the first of the two options a question
    names (machines, aliens, planets: a letter; ``Option 1 ... Option 2``: ``1``); else a number (a
    probability's digits after ``0.``, a rating)."""
    example = _EXAMPLE.search(text.rstrip())
    if example:
        return example.group(1).strip()
    tail = text[-600:]
    pairs = _PAIR.findall(tail)
    if pairs:
        return pairs[-1][0]
    if "[A]" in tail:  # "reply with one of [A], [B], ...": a bracketed letter
        return "[A]"
    if re.search(r"\bnumber$", tail.rstrip()):  # a text to continue with a number ("lands on face number")
        return "1"
    named = re.findall(r"\b[Mm]achine ([A-Z])\b", text)
    if "Machine <" in tail and named:  # "answer in the form 'Machine <your choice>'": a machine it has seen
        return named[0]
    if re.search(r"[Oo]ption\s*1\b", tail):
        return "1"
    if tail.rstrip().endswith("0."):
        return "5"
    return "50" if re.search(r"\b100\b", tail) else "0.5"


async def reasoned_chat(body: dict[str, Any], client: HFClient, emu: ReasoningModel, billing: Billing) -> Any:
    """A chat completion of a model acting as an OpenAI reasoning model (this module)."""
    from starlette.responses import JSONResponse

    refusal = openai_refusal(body, emu)
    if refusal is not None:
        return JSONResponse(refusal.body, status_code=refusal.status)
    messages = [openai_message(m) for m in checked_messages(body)]
    limit = body.get("max_completion_tokens") or emu.max_limit
    effort = body.get("reasoning_effort")
    choices, hidden, out, prompt = [], 0, 0, 0
    for index in range(body.get("n") or 1):  # n choices, as the API answers: the prompt billed once
        spent = min(limit, emu.hidden_tokens(body, effort, choice=index))
        text, finish, prompt, answer = await _emulated_answer(client, emu, messages, limit - spent)
        hidden, out = hidden + spent, out + answer
        choices.append({"index": index, "message": {"role": "assistant", "content": text}, "logprobs": None,
                        "finish_reason": finish})
    usage = {"prompt_tokens": prompt, "completion_tokens": hidden + out, "total_tokens": prompt + hidden + out,
             "completion_tokens_details": {"reasoning_tokens": hidden}}
    billing.bill(usage, hidden)
    return JSONResponse({"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                         "created": int(time.time()), "model": body["model"], "choices": choices, "usage": usage})

async def thinking_message(body: dict[str, Any], client: HFClient, emu: ReasoningModel, billing: Billing) -> Any:
    """A Messages API answer with extended thinking (this module)."""
    from starlette.responses import JSONResponse

    refusal = anthropic_refusal(body)
    if refusal is not None:
        return JSONResponse(refusal.body, status_code=refusal.status)
    msgs = [anthropic_message(m) for m in checked_messages(body)]
    budget = int(body["thinking"]["budget_tokens"])
    hidden = emu.hidden_tokens(body, None, budget)
    text, finish, prompt, out = await _emulated_answer(client, emu, msgs, int(body["max_tokens"]) - hidden)
    usage = {"input_tokens": prompt, "output_tokens": hidden + out}
    billing.bill(usage, hidden)
    return JSONResponse({
        "id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "thinking", "thinking": f"(emulated: {hidden} hidden tokens)",
                     "signature": "emulated"}, {"type": "text", "text": text}],
        "stop_reason": "max_tokens" if finish == "length" else "end_turn", "stop_sequence": None, "usage": usage})


async def _emulated_answer(client: HFClient, emu: ReasoningModel, messages: list[dict[str, Any]],
                           room: int) -> tuple[str, str, int, int]:
    """(text, finish reason, prompt tokens, answer tokens) of an emulated reasoning model's answer in the
    ``room`` tokens its hidden ones left: :attr:`ReasoningModel.answer`'s text (cut at ``room`` tokens) or
    the served model's; nothing (``length``) where no room is left."""
    prompt = client.billed_prompt_tokens(messages)[0]
    if room <= 0:
        return "", "length", prompt, 0
    if emu.answer is None:
        gen = await client.agenerate(GenerateRequest(messages, min(room, MAX_TOKENS_LIMIT), 0.0))
        return gen.text, gen.finish_reason or "stop", prompt, gen.completion_tokens or 0
    text = emu.answer(last_user_text(messages))
    ids = client.encode(text, rendered_chat=True)
    if len(ids) > room:
        return str(client.tokenizer.decode(ids[:room])), "length", prompt, room
    return text, "stop", prompt, len(ids)


