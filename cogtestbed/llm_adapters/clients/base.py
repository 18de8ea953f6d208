"""The LLM client contract: two operations, the same for every backend.

* :meth:`LLMClient.generate` — a prompt (raw text for completion models, chat messages for chat
  models) → :class:`Generation` (text, token usage, top log-probabilities where the backend gives
  them);
* :meth:`LLMClient.score` — a context and candidate continuations → :class:`ScoreResult`, the
  exact teacher-forced log-probability of each continuation,
  ``log P(o | ctx) = Σ_j log P(t_j | ctx, t_<j)``, summed over the continuation's tokens (the
  revealed-belief probe of *Do Large Language Models Exhibit Cognitive Dissonance?*, 2024).
  Backends that cannot score raise :class:`ScoringNotSupported`.

Both operations are coroutines (``agenerate``/``ascore``) so that many subjects can run
concurrently; the synchronous ``generate``/``score`` wrappers run them on a private event loop,
so they also work inside a running loop (a notebook).

A request is a frozen, JSON-serialisable :class:`GenerateRequest`; its canonical JSON (plus the
backend, model and model fingerprint) is what the response cache hashes.  API keys are never part
of a request, a client's repr, or anything a client writes.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from cogtestbed.errors import CogtestbedError, InputError
from cogtestbed.redact import redact

#: A chat message: ``{"role": "user" | "assistant" | "system", "content": str}``, optionally with
#: ``"images"``: a tuple of PNG/JPEG bytes shown before the text (vision-language models).
Message = Mapping[str, Any]
#: Key of a chat message holding the images it shows.
IMAGES_KEY = "images"
Prompt = str | Sequence[Message]

T = TypeVar("T")

#: Default retry window of hosted backends, in seconds (``--retry-for``): rides out a two-minute
#: outage or rate-limit episode.
DEFAULT_RETRY_WINDOW = 120.0
#: Tokens a chat template or a tokenizer may add around a whole prompt (BOS/EOS, a default system
#: prompt some templates inject, the generation prompt): the fixed part of
#: :meth:`LLMClient.prompt_token_bound` where the model's tokenizer is unknown.
PROMPT_OVERHEAD_TOKENS = 64
#: Tokens a tokenizer may add around a raw (completions) prompt: BOS/EOS and a SentencePiece
#: dummy prefix.
RAW_PROMPT_OVERHEAD_TOKENS = 4
#: Tokens a chat template may add per message (role markers, separators).
MESSAGE_OVERHEAD_TOKENS = 8
#: Tokens one image may cost where the provider's tiling is unknown (high-detail tiles of hosted
#: models stay below ~2,500; LLaVA-NeXT's any-resolution grids below ~3,000).
IMAGE_TOKEN_BOUND = 4096


class LLMError(CogtestbedError, RuntimeError):
    """An LLM backend failed in a way retries did not cure.  Its message is redacted
    (:func:`cogtestbed.redact.redact`) when it is made: it often quotes what a server answered."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ScoringNotSupported(LLMError):
    """The backend cannot return exact log-probabilities of given continuations."""


class BackendUnavailable(LLMError):
    """The backend's optional dependency or credentials are missing."""


class BackendError(LLMError):
    """The backend refused or failed a call and retries did not help (``status``: the HTTP status,
    None for a connection that never answered)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def freeze_prompt(prompt: Prompt) -> str | tuple[tuple[tuple[str, str], ...], ...]:
    """A hashable, canonical form of a prompt (messages become tuples of sorted items; images
    their SHA-256 digests)."""
    if isinstance(prompt, str):
        return prompt
    return tuple(tuple(sorted((str(k), str([image_digest(b) for b in v]) if k == IMAGES_KEY else str(v))
                              for k, v in m.items())) for m in prompt)


def message_images(message: Mapping[str, Any]) -> tuple[bytes, ...]:
    """The images of a chat message (empty when it has none)."""
    return tuple(message.get(IMAGES_KEY) or ())


def image_digest(data: bytes) -> str:
    """``sha256:<hex>`` of an image's bytes: what the cache key and stored requests hold."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def image_media_type(data: bytes) -> str:
    """MIME type of PNG / JPEG / GIF / WebP bytes (by signature; ValueError otherwise)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise InputError("an image must be PNG, JPEG, GIF or WebP bytes")


def image_data_url(data: bytes) -> str:
    """The image as a ``data:`` URL (OpenAI's ``image_url`` content part)."""
    return f"data:{image_media_type(data)};base64,{base64.b64encode(data).decode('ascii')}"


def decode_data_url(url: str) -> bytes:
    """Bytes of a base64 ``data:`` URL (the local server accepts no remote image URLs)."""
    head, sep, payload = url.partition(",")
    if not (url.startswith("data:") and sep and head.endswith(";base64")):
        raise InputError("only base64 data: URLs are accepted as images")
    return base64.b64decode(payload)


#: The sampling every generation asks for explicitly: plain softmax at the request's
#: temperature (greedy at 0) with every truncation and penalty off, on every route.  Servers default
#: otherwise where a request leaves a field out (llama-cpp-python's server: top_k 40, top_p 0.95,
#: min_p 0.05, repeat_penalty 1.1; vLLM: the model's ``generation_config.json``), so a request that
#: names only the temperature is a different request per server.  These fields are OpenAI API fields,
#: sent to every OpenAI-compatible endpoint.
NEUTRAL_SAMPLING: Mapping[str, float] = MappingProxyType(
    {"top_p": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0})
#: The same for the fields OpenAI's API does not have but llama.cpp, vLLM and Ollama read (0 turns
#: top-k off in llama.cpp and vLLM >= 0.8; llama.cpp names its penalty ``repeat_penalty``, vLLM
#: ``repetition_penalty``): sent only to servers at a ``base_url`` (OpenAI refuses unknown fields).
NEUTRAL_SAMPLING_EXTRAS: Mapping[str, float] = MappingProxyType(
    {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0, "repetition_penalty": 1.0})


@dataclass(frozen=True)
class GenerateRequest:
    """One generation request.

    ``prompt`` is raw text (completion) or a sequence of chat messages.  ``seed`` is passed to
    backends that accept one and always enters the cache key, so that independent samples at
    ``temperature > 0`` are distinct cache entries.
    """

    prompt: Prompt
    max_tokens: int = 16
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    top_logprobs: int | None = None
    #: OpenAI's ``reasoning_effort`` (a reasoning model; :mod:`~.capabilities`), None: the model's default.
    reasoning_effort: str | None = None
    #: Anthropic's extended-thinking ``budget_tokens`` (thinking on); ``max_tokens`` then covers it plus the
    #: answer.  None: no thinking.
    thinking_budget: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise InputError("max_tokens must be at least 1")
        if self.temperature < 0:
            raise InputError("temperature must be >= 0")
        if not isinstance(self.prompt, str):
            for m in self.prompt:
                if "role" not in m or "content" not in m:
                    raise InputError(f"chat messages need 'role' and 'content', got {dict(m)!r}")
                for image in message_images(m):
                    if not isinstance(image, bytes):
                        raise InputError(f"message images must be bytes, got {type(image).__name__}")
                    image_media_type(image)
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def is_chat(self) -> bool:
        return not isinstance(self.prompt, str)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The prompt as chat messages (raw text becomes one user message, as CogBench does);
        a message with images keeps them under ``"images"``."""
        if isinstance(self.prompt, str):
            return [{"role": "user", "content": self.prompt}]
        out: list[dict[str, Any]] = []
        for m in self.prompt:
            msg: dict[str, Any] = {"role": str(m["role"]), "content": str(m["content"])}
            if message_images(m):
                msg[IMAGES_KEY] = message_images(m)
            out.append(msg)
        return out

    @property
    def n_images(self) -> int:
        """Images the prompt carries (0 for text)."""
        return 0 if isinstance(self.prompt, str) else sum(len(message_images(m)) for m in self.prompt)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["prompt"] = self.prompt if isinstance(self.prompt, str) else [
            {**m, IMAGES_KEY: [image_digest(b) for b in m[IMAGES_KEY]]} if IMAGES_KEY in m else m
            for m in self.messages]
        d["stop"] = list(self.stop)
        for name in ("reasoning_effort", "thinking_budget"):  # absent when unset: earlier cache keys stand
            if d[name] is None:
                del d[name]
        return d


@dataclass
class TokenLogprob:
    """A generated token, its log-probability and the top alternatives at that position."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Generation:
    """What a backend returned for one :class:`GenerateRequest`."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    logprobs: list[TokenLogprob] | None = None
    #: Set by the response cache: True when this came from the cache (no backend call).
    cached: bool = False
    #: Set by the response cache: the retries this call needed (``"<error>; waited <s>s"``).
    retries: list[str] = field(default_factory=list)
    #: Hidden reasoning tokens the backend reported (OpenAI's ``completion_tokens_details.reasoning_tokens``);
    #: they are part of ``completion_tokens``.  None where the backend reports none.
    reasoning_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("cached")
        d.pop("retries")
        if d["reasoning_tokens"] is None:
            del d["reasoning_tokens"]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any], cached: bool = False) -> Generation:
        lps = d.get("logprobs")
        return cls(
            text=d["text"],
            prompt_tokens=d.get("prompt_tokens"),
            completion_tokens=d.get("completion_tokens"),
            finish_reason=d.get("finish_reason"),
            logprobs=None if lps is None else [TokenLogprob(**x) for x in lps],
            cached=cached,
            reasoning_tokens=d.get("reasoning_tokens"),
        )


@dataclass
class ContinuationScore:
    """Teacher-forced score of one continuation: per-token and summed log-probabilities."""

    continuation: str
    logprob: float
    tokens: list[str]
    token_logprobs: list[float]
    #: The tokenizer merged context and continuation across the boundary, so the continuation
    #: was tokenised on its own and appended to the context's tokens.
    boundary_merge: bool = False


@dataclass
class ScoreResult:
    """Scores of all continuations of one context.

    ``total_prob`` is ``Z = Σ_o P(o | ctx)`` over the listed continuations (the outcome mass a
    revealed-belief distribution is renormalised by).
    ``mass_outside`` is ``1 - Z``, the probability of continuing with none of them; it is given only
    when the backend exposes the full next-token distribution *and* the continuations are
    disjoint events (no continuation's tokens are a prefix of another's), else ``None``.
    """

    context: str
    scores: list[ContinuationScore]
    total_prob: float
    mass_outside: float | None
    #: Set by the response cache: True when this came from the cache (no backend call).
    cached: bool = False
    #: Set by the response cache: the retries of the score's HTTP requests (one line each).
    retries: list[str] = field(default_factory=list)

    @property
    def logprobs(self) -> list[float]:
        return [s.logprob for s in self.scores]

    def as_dict(self) -> dict[str, float]:
        return {s.continuation: s.logprob for s in self.scores}

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("cached")
        d.pop("retries")
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any], cached: bool = False) -> ScoreResult:
        return cls(context=d["context"], scores=[ContinuationScore(**s) for s in d["scores"]],
                   total_prob=d["total_prob"], mass_outside=d["mass_outside"], cached=cached)


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the first occurrence of any stop string (the stop itself is dropped).

    Every backend applies it to its output, so a stop string a backend refused (Anthropic rejects
    whitespace-only stop sequences) still takes effect.
    """
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return (text, False) if cut < 0 else (text[:cut], True)


def finish_score(context: str, scores: list[ContinuationScore], token_ids: Sequence[Sequence[int]] | None,
                 full_distribution: bool) -> ScoreResult:
    """Build a :class:`ScoreResult`, with ``mass_outside`` when it is well defined."""
    import math

    total = float(sum(math.exp(s.logprob) for s in scores))
    outside: float | None = None
    if full_distribution and token_ids is not None and not _any_prefix(token_ids):
        outside = max(0.0, 1.0 - total)
    return ScoreResult(context=context, scores=scores, total_prob=total, mass_outside=outside)


def _any_prefix(seqs: Sequence[Sequence[int]]) -> bool:
    """Whether one token sequence equals or is a prefix of another (events then overlap)."""
    tup = [tuple(s) for s in seqs]
    return any(i != j and b[: len(a)] == a for i, a in enumerate(tup) for j, b in enumerate(tup))


# ----------------------------------------------------------------------------- sync bridge
_LOOP_LOCK = threading.Lock()
_LOOP: list[asyncio.AbstractEventLoop] = []  # the one event loop of the synchronous wrappers, once started


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a client coroutine to completion from synchronous code (even inside a running loop), on one
    event loop that a daemon thread runs."""
    with _LOOP_LOCK:
        if not _LOOP:
            _LOOP.append(asyncio.new_event_loop())
            threading.Thread(target=_LOOP[0].run_forever, name="cogtestbed-llm", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _LOOP[0]).result()


class LLMClient(ABC):
    """Base class of backends (see module docstring).

    Subclasses set :attr:`backend`, :attr:`model` and :attr:`chat` (whether the model takes chat
    messages; completion models take raw text), and implement :meth:`agenerate`.
    """

    backend: str = "base"
    model: str = ""
    #: True: prompts are sent as chat messages; False: as raw text (no chat template).
    chat: bool = False
    #: Exact scoring available (:meth:`ascore` implemented).
    can_score: bool = False
    #: The model accepts images in chat messages (a vision-language model).  Hosted backends
    #: pass images on and let the service decide; local models know.
    vision: bool = False
    #: Every call is an HTTP request sent through :func:`~cogtestbed.llm_adapters.middleware.retry.call_with_retries`
    #: (so the response cache books each request, retries included, as one call of the budget).
    http: bool = False

    def score_requests(self, n_continuations: int) -> int:
        """How many calls one :meth:`ascore` of ``n_continuations`` continuations makes (a local
        model scores them in one pass; an HTTP server takes one request per continuation)."""
        return n_continuations if self.http else 1

    @property
    def fingerprint(self) -> str:
        """Identifies the weights behind :attr:`model` where known (enters the cache key)."""
        return ""

    @property
    def spec(self) -> str:
        return f"{self.backend}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r}, chat={self.chat})"

    @abstractmethod
    async def agenerate(self, request: GenerateRequest) -> Generation:
        """Generate a completion (retries and stop strings handled by the backend)."""

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """Exact log-probability of each continuation given ``context``; ``raw``: a text context
        is continued as is, without the chat template of a chat model."""
        raise ScoringNotSupported(
            f"backend {self.backend!r} cannot score continuations (exact log-probabilities need "
            "a local model or an OpenAI-compatible completions server with echo + logprobs)"
        )

    def check_images(self, n_images: int) -> None:
        """Raise one clear ValueError when images would be sent to a text-only model."""
        if n_images and not self.vision:
            raise InputError(f"{self.spec} is a text-only model but the prompts carry images; use a "
                             "vision-language model (e.g. hf:tiny-random-vlm or a multimodal API model)")

    def endpoint_identity(self) -> dict[str, Any] | None:
        """Where the calls go and what answers them, as part of the response cache's key and
        ``run.json``'s ``endpoint``: ``{"url": ..., "served_model": ...}`` for a server (the served
        model's identity as the server lists it, None where it lists none); None for a local model,
        whose :attr:`fingerprint` already names its weights."""
        return None

    def check_ready(self) -> None:  # noqa: B027 - local backends are always ready
        """Raise :class:`BackendUnavailable` now if a call could not be made (e.g. no key)."""

    async def apreflight(self) -> None:  # noqa: B027 - local backends need no probe
        """Raise :class:`BackendError` before a run if the backend cannot serve the model."""

    #: The estimate of a token's length in characters where the model's tokenizer is not available
    #: here (:meth:`count_tokens`): the provider's own rule of thumb — OpenAI's "one token is about 4
    #: characters of English text" for every OpenAI-compatible server; backends override it.
    chars_per_token: float = 4.0

    def count_tokens(self, text: str) -> tuple[int, bool]:
        """(number of tokens in ``text``, whether the count is exact); without the model's tokenizer
        ``len(text) / chars_per_token`` (at least 1), not exact."""
        return max(1, round(len(text) / self.chars_per_token)), False

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        """(prompt tokens of one request of ``prompt`` as the backend bills them, whether exact): by
        default :meth:`count_tokens` of the text (images not included: the dry run adds the provider's
        image formula); backends that know the model's tokenizer count exactly."""
        text = prompt if isinstance(prompt, str) else "\n".join(str(m["content"]) for m in prompt)
        return self.count_tokens(text)

    def prompt_token_bound(self, prompt: Prompt) -> int:
        """An upper bound on the prompt tokens the backend will bill for ``prompt`` (what a budget
        books before a call).

        Default, for a tokenizer that is not known here: one token per UTF-8 byte of the text —
        byte-level BPE and SentencePiece with byte fallback never make a token of less than one
        byte — plus :data:`RAW_PROMPT_OVERHEAD_TOKENS` for a raw prompt to a completion model, or
        :data:`PROMPT_OVERHEAD_TOKENS`, :data:`MESSAGE_OVERHEAD_TOKENS` per chat message and
        :data:`IMAGE_TOKEN_BOUND` per image.  Backends that know their tokenizer override it with
        an exact count.
        """
        if isinstance(prompt, str) and not self.chat:
            return len(prompt.encode()) + RAW_PROMPT_OVERHEAD_TOKENS
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        return PROMPT_OVERHEAD_TOKENS + sum(
            len(str(m["content"]).encode()) + MESSAGE_OVERHEAD_TOKENS
            + IMAGE_TOKEN_BOUND * len(message_images(m)) for m in prompt)

    # -- synchronous wrappers ----------------------------------------------------------
    def generate(
        self,
        prompt: Prompt,
        max_tokens: int = 16,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        seed: int | None = None,
        top_logprobs: int | None = None,
    ) -> Generation:
        """Synchronous :meth:`agenerate` (see :class:`GenerateRequest` for the arguments)."""
        req = GenerateRequest(prompt, max_tokens, temperature, tuple(stop), seed, top_logprobs)
        return run_sync(self.agenerate(req))

    def score(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """Synchronous :meth:`ascore`."""
        return run_sync(self.ascore(context, continuations, raw))

    async def aclose(self) -> None:  # noqa: B027 - clients without resources keep the default
        """Release network resources."""


def checked_usage(value: Any, name: str, where: str) -> int | None:
    """A token count a server reported, trusted only as a non-negative integer: anything else
    (negative, NaN, a fraction, a string) is None — unknown, so a budget books the call at its worst
    case and never credits it — and one warning line says what the server sent."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    logging.getLogger(__name__).warning(
        "%s reported usage %s=%s: not a token count; recorded as unknown and booked at its worst case",
        where, name, redact(repr(value))[:40])
    return None


def reasoning_tokens(usage: Any) -> Any:
    """OpenAI's ``usage.completion_tokens_details.reasoning_tokens`` (an SDK object or a dict): the hidden
    tokens inside ``completion_tokens``; None where the usage has none."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else getattr(
        usage, "completion_tokens_details", None)
    return details.get("reasoning_tokens") if isinstance(details, dict) else getattr(details, "reasoning_tokens", None)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class SdkPerLoop:
    """A hosted backend's SDK objects, one per event loop (an SDK's HTTP pool belongs to the loop that
    made it): :meth:`get` makes the running loop's with ``make`` the first time, :meth:`aclose` closes all."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._sdk: WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = WeakKeyDictionary()

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        if loop not in self._sdk:
            self._sdk[loop] = self._make()
        return self._sdk[loop]

    async def aclose(self) -> None:
        for sdk in list(self._sdk.values()):
            await sdk.close()
        self._sdk.clear()
