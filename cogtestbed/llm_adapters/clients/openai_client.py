"""OpenAI-compatible backends through the official ``openai`` SDK.

One client covers OpenAI and every server that speaks its API (vLLM, llama.cpp server, Ollama,
LM Studio, ``transformers serve``, :mod:`cogtestbed.llm_adapters.servers.server`): set ``base_url``.
``mode="chat"`` uses ``/chat/completions`` (a raw prompt becomes one user message, as CogBench
sends it); ``mode="completions"`` uses ``/completions`` with the raw prompt (base models).

The key is read from the environment variable ``api_key_env`` (default ``OPENAI_API_KEY``) at the
first call and kept only in the SDK object; servers that need no key get a placeholder.

``score`` needs the legacy completions endpoint with ``echo`` and ``logprobs`` (vLLM and
:mod:`~cogtestbed.llm_adapters.servers.server` have it; OpenAI's hosted chat models do not): the server
returns the log-probability of every prompt token, and the continuation's tokens are those whose
character offset falls at or after the end of the context.  Only the top-k alternatives are
returned, so ``mass_outside`` is not available.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    IMAGE_TOKEN_BOUND,
    MESSAGE_OVERHEAD_TOKENS,
    NEUTRAL_SAMPLING,
    NEUTRAL_SAMPLING_EXTRAS,
    BackendError,
    BackendUnavailable,
    ContinuationScore,
    GenerateRequest,
    Generation,
    LLMClient,
    LLMError,
    Prompt,
    ScoreResult,
    ScoringNotSupported,
    SdkPerLoop,
    TokenLogprob,
    apply_stop,
    checked_usage,
    finish_score,
    image_data_url,
    message_images,
    reasoning_tokens,
)
from cogtestbed.llm_adapters.clients.capabilities import capability_of, unsent
from cogtestbed.llm_adapters.clients.logprob_probe import says_logprobs_unsupported
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy, call_with_retries, describe_error
from cogtestbed.redact import redact_url, register_key, register_key_variable

Mode = Literal["chat", "completions"]
#: Upper bounds of OpenAI's chat framing, in tokens (documented values: 3 per message, 3 for the
#: reply; one more per message covers a ``name`` field).
OPENAI_TOKENS_PER_MESSAGE, OPENAI_REPLY_PRIMING = MESSAGE_OVERHEAD_TOKENS // 2, 4


def openai_messages(request: GenerateRequest) -> list[dict[str, Any]]:
    """Chat messages for the OpenAI SDK: a message with images becomes content parts, the images
    as base64 ``image_url`` data URLs followed by the text."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        images = message_images(m)
        if not images:
            out.append({"role": m["role"], "content": m["content"]})
            continue
        parts: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": image_data_url(b)}}
                                       for b in images]
        if m["content"]:
            parts.append({"type": "text", "text": m["content"]})
        out.append({"role": m["role"], "content": parts})
    return out

def _request_options(request: GenerateRequest, sends_stop: bool) -> dict[str, Any]:
    """The stop sequences (where the model takes them; else applied to the text, :func:`apply_stop`), seed and
    reasoning effort a request sets."""
    options: dict[str, Any] = {}
    if request.stop and sends_stop:
        options["stop"] = list(request.stop)
    if request.seed is not None:
        options["seed"] = request.seed
    if request.reasoning_effort is not None:
        options["reasoning_effort"] = request.reasoning_effort
    return options


def _completion_fields(request: GenerateRequest) -> dict[str, Any]:
    """A completions body's raw prompt, completion limit and log-probability field."""
    if request.is_chat:
        raise InputError("mode='completions' takes a raw prompt, not chat messages")
    fields: dict[str, Any] = {"prompt": request.prompt, "max_tokens": request.max_tokens}
    if request.top_logprobs is not None:
        fields["logprobs"] = request.top_logprobs
    return fields


def _chat_logprobs(choice: Any, request: GenerateRequest) -> list[TokenLogprob] | None:
    """The token log-probabilities of a chat choice (None: not asked or not returned)."""
    if request.top_logprobs is None or not choice.logprobs or not choice.logprobs.content:
        return None
    return [TokenLogprob(t.token, t.logprob, {a.token: a.logprob for a in t.top_logprobs})
            for t in choice.logprobs.content]


def _completion_logprobs(choice: Any, request: GenerateRequest) -> list[TokenLogprob] | None:
    """The token log-probabilities of a completions choice (None: not asked or not returned)."""
    lp = choice.logprobs
    if request.top_logprobs is None or lp is None or not lp.tokens:
        return None
    tops = lp.top_logprobs or [{}] * len(lp.tokens)
    return [TokenLogprob(t, float(v), dict(top or {}))
            for t, v, top in zip(lp.tokens, lp.token_logprobs, tops, strict=False)]


class OpenAIClient(LLMClient):
    """Chat or completions against an OpenAI-compatible endpoint (see module docstring)."""

    http = True
    backend = "openai"

    @property
    def vision(self) -> bool:  # type: ignore[override]
        """Chat mode passes images on (the service decides whether the model accepts them)."""
        return self.mode == "chat"

    def __init__(self, model: str, *, base_url: str | None = None, mode: Mode = "chat",
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 retry: RetryPolicy | None = None, sampling_extras: bool = True) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise BackendUnavailable("the openai backend needs: pip install 'cogtestbed[llm]'") from exc
        if mode not in ("chat", "completions"):
            raise InputError(f"mode must be 'chat' or 'completions', got {mode!r}")
        if not timeout > 0:
            raise InputError(f"`timeout` must be a positive number of seconds, got {timeout:g}")
        self._openai = openai
        self.model = model
        self.base_url = base_url
        self.mode: Mode = mode
        self.chat = mode == "chat"
        self.can_score = mode == "completions"
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        #: Whether a server at ``base_url`` gets :data:`NEUTRAL_SAMPLING_EXTRAS` too (False for a server
        #: that refuses fields OpenAI's API does not have).
        self.sampling_extras = sampling_extras
        self.api_key_env = api_key_env  # the variable's name; the key is read per SDK object
        register_key_variable(api_key_env)  # its value is removed from every message (cogtestbed.redact)
        self._sdk = SdkPerLoop(self._new_sdk)
        self._encoding: Any = None
        self.retries: list[tuple[str, float]] = []
        #: The served model's own tokenizer where it is on this machine (:func:`local_tokenizer`):
        #: loaded at the first count, ``False`` once found unavailable.
        self._twin: Any = None
        #: The served model's entry of ``GET /models`` (:data:`SERVED_MODEL_FIELDS`), read by
        #: :meth:`apreflight`; None before, or where the server lists no models.
        self.served: dict[str, Any] | None = None
        #: Every ``system_fingerprint`` the server's answers carried (OpenAI: its backend configuration).
        self.system_fingerprints: set[str] = set()
        #: What the model accepts (:mod:`~.capabilities`; None: every field is sent, as to any server).
        self.capability = capability_of(self.spec)

    @property
    def fingerprint(self) -> str:
        return f"mode={self.mode}"

    def check_ready(self) -> None:
        if not os.environ.get(self.api_key_env) and self.base_url is None:
            raise BackendUnavailable(f"set {self.api_key_env} in the environment for OpenAI "
                                     "(or pass `base_url` for a local server)")

    def _client(self) -> Any:
        return self._sdk.get()

    def _new_sdk(self) -> Any:
        """The SDK object of the running event loop (made once per loop by :class:`SdkPerLoop`)."""
        self.check_ready()
        key = os.environ.get(self.api_key_env)
        register_key(key)
        return self._openai.AsyncOpenAI(api_key=key or "not-needed", base_url=self.base_url, timeout=self.timeout,
                                        max_retries=0)

    @property
    def where(self) -> str:
        return redact_url(self.base_url) or "api.openai.com"

    async def _call(self, fn: Any) -> Any:
        errors = (self._openai.APIConnectionError,)  # includes APITimeoutError
        try:
            return await call_with_retries(fn, self.retry, errors, self._note_retry)
        except (json.JSONDecodeError, self._openai.APIResponseValidationError) as exc:  # a 200 cut short or garbled
            raise BackendError(f"{self.spec} at {self.where}: the server's answer is not valid JSON "
                               f"(cut short or garbled: {' '.join(str(exc).split())[:120]})") from exc
        except BackendError as exc:
            hint = ""
            if exc.status in (400, 404) and self.mode == "chat" and "chat" in str(exc).lower():
                hint = " (a base model without a chat template needs `mode` completions)"
            raise BackendError(f"{self.spec} at {self.where}: {exc}{hint}", exc.status) from exc.__cause__

    async def apreflight(self) -> None:
        """One quick request before a run (no retries): the server answers and serves the model.

        A server without ``GET /models`` (or one refusing it) is not judged here."""
        client = self._client()
        try:
            listing = await client.models.list()
        except self._openai.APIConnectionError as exc:
            raise BackendError(f"{self.spec}: cannot reach {self.where} ({describe_error(exc)})") from exc
        except self._openai.AuthenticationError as exc:
            raise BackendError(f"{self.spec} at {self.where}: the key was refused "
                               f"({describe_error(exc)})", 401) from exc
        except self._openai.APIStatusError:
            return
        self._check_listing(listing)

    def _check_listing(self, listing: Any) -> None:
        """Note the served model's identity from a ``GET /models`` listing; refuse a model it does not list."""
        entries = list(getattr(listing, "data", []) or [])
        names = [m.id for m in entries]
        for entry in entries:
            if entry.id == self.model:
                self.served = served_model_identity(entry)
        if names and self.model not in names:
            shown = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
            raise BackendError(f"{self.spec}: model {self.model!r} is not served at {self.where} "
                               f"(available: {shown})", 404)

    def _first_choice(self, resp: Any) -> Any:
        """The response's first choice; a response with none (``"choices": []``) or not a response at
        all is a :class:`BackendError` in one line."""
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            shown = "[]" if isinstance(choices, list) else type(resp).__name__
            raise BackendError(f"{self.spec} at {self.where}: the server answered without a choice "
                               f"(choices: {shown})")
        return choices[0]

    def endpoint_identity(self) -> dict[str, Any] | None:
        """The server's address (:meth:`where`) and the served model's ``GET /models`` entry."""
        return {"url": self.where, "served_model": self.served}

    def _note_retry(self, exc: BaseException, delay: float) -> None:
        self.retries.append((type(exc).__name__, delay))

    # -- generate --------------------------------------------------------------------------
    async def agenerate(self, request: GenerateRequest) -> Generation:
        client = self._client()
        kwargs = self.request_body(request)
        extra = {k: kwargs.pop(k) for k in NEUTRAL_SAMPLING_EXTRAS if k in kwargs}  # fields the SDK has no name for
        if extra:
            kwargs["extra_body"] = extra
        if self.mode == "chat":
            resp = await self._call(lambda: client.chat.completions.create(**kwargs))
        else:
            resp = await self._call(lambda: client.completions.create(**kwargs))
        return self.generation(resp, request)

    @property
    def endpoint(self) -> str:
        """The API path of this client's generation requests (what a batch line names)."""
        return "/v1/chat/completions" if self.mode == "chat" else "/v1/completions"

    def request_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The JSON body of the generation request of ``request`` (chat: messages, completions: the raw
        prompt): what :meth:`agenerate` sends and what a Batch API line carries."""
        cap = self.capability
        wanted = {"temperature": request.temperature, **NEUTRAL_SAMPLING}
        dropped = unsent(cap, wanted)
        body: dict[str, Any] = {"model": self.model, **{k: v for k, v in wanted.items() if k not in dropped}}
        reasoning = cap is not None and cap.is_reasoning
        if self.base_url is not None and self.sampling_extras and not reasoning:
            body.update(NEUTRAL_SAMPLING_EXTRAS)
        body.update(_request_options(request, cap is None or cap.stop))
        if self.mode == "chat":
            return {**body, **self._chat_fields(request, reasoning)}
        return {**body, **_completion_fields(request)}

    def _chat_fields(self, request: GenerateRequest, reasoning: bool) -> dict[str, Any]:
        """A chat body's messages, completion limit and log-probability fields."""
        cap = self.capability
        # OpenAI's own endpoint wants max_completion_tokens; compatible servers max_tokens; a reasoning
        # model the capability table's field wherever it is served
        limit = "max_completion_tokens" if self.base_url is None else "max_tokens"
        if reasoning and cap is not None:
            limit = cap.limit_field
        fields: dict[str, Any] = {"messages": openai_messages(request), limit: request.max_tokens}
        if request.top_logprobs is not None and (cap is None or cap.logprobs):
            fields.update(logprobs=True, top_logprobs=request.top_logprobs)
        return fields

    def parse_body(self, body: Any) -> Any:
        """A response body (JSON) of :attr:`endpoint` as the SDK's typed response (a batch's output line);
        ValueError when it is not one."""
        types = self._openai.types
        kind = types.chat.ChatCompletion if self.mode == "chat" else types.Completion
        try:
            return kind.model_validate(body)
        except Exception as exc:  # pydantic's ValidationError: the body is not such a response
            raise InputError(f"not a {self.endpoint} response: {str(exc).splitlines()[0]}") from None

    def generation(self, resp: Any, request: GenerateRequest) -> Generation:
        """The :class:`Generation` of a chat or completions response (the SDK's typed object)."""
        choice = self._first_choice(resp)
        if self.mode == "chat":
            text, logprobs = choice.message.content or "", _chat_logprobs(choice, request)
        else:
            text, logprobs = choice.text or "", _completion_logprobs(choice, request)
        text, _ = apply_stop(text, request.stop)
        fingerprint = getattr(resp, "system_fingerprint", None)
        if isinstance(fingerprint, str) and fingerprint:
            self.system_fingerprints.add(fingerprint)
        usage = resp.usage
        return Generation(
            text=text,
            prompt_tokens=checked_usage(getattr(usage, "prompt_tokens", None), "prompt_tokens", self.where),
            completion_tokens=checked_usage(getattr(usage, "completion_tokens", None), "completion_tokens",
                                            self.where),
            finish_reason=choice.finish_reason,
            logprobs=logprobs,
            reasoning_tokens=checked_usage(reasoning_tokens(usage), "reasoning_tokens", self.where),
        )

    # -- score -----------------------------------------------------------------------------
    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """Scores through ``echo`` + ``logprobs`` (a completions endpoint continues text raw)."""
        if self.mode != "completions":
            raise ScoringNotSupported(
                "scoring needs the completions endpoint with echo + logprobs (mode='completions', "
                "e.g. a vLLM server); chat endpoints return no prompt log-probabilities"
            )
        if not isinstance(context, str):
            raise InputError("mode='completions' scores a raw-text context")
        client = self._client()
        scores = []
        for cont in continuations:
            kwargs = {"model": self.model, "prompt": context + cont, "max_tokens": 1, "echo": True,
                      "logprobs": 1, "temperature": 0.0, **NEUTRAL_SAMPLING}
            try:
                resp = await self._call(lambda kw=kwargs: client.completions.create(**kw))
            except BackendError as exc:  # a 400, or any status whose message says so (llama.cpp: a 500)
                # 422: a server whose request schema has no echo (vLLM: "Extra inputs are not permitted")
                if exc.status not in (400, 422) and not says_logprobs_unsupported(str(exc)):
                    raise
                raise ScoringNotSupported(f"the server refused echo + logprobs: {exc}") from exc
            scores.append(_continuation_from_echo(context, cont, self._first_choice(resp).logprobs))
        return finish_score(context, scores, None, full_distribution=False)

    def local_twin(self) -> LLMClient | None:
        """The served model's own tokenizer, where the server is this machine's and serves a model
        this package loads offline (:func:`local_tokenizer`); None elsewhere."""
        if self._twin is None:
            self._twin = local_tokenizer(self.model, self.base_url, self.mode == "chat") or False
        return self._twin or None

    @property
    def token_source(self) -> str | None:
        """Whose tokenizer counts this client's prompts exactly (None: an estimate)."""
        twin = self.local_twin()
        return None if twin is None else f"the served model's own tokenizer ({twin.spec}, loaded locally)"

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        """Exact where the served model's tokenizer is local (:meth:`local_twin`: the count the server
        bills, chat template, token healing and image tokens included), else the estimate of
        :class:`LLMClient`."""
        twin = self.local_twin()
        if twin is not None:
            return twin.billed_prompt_tokens(prompt)
        return super().billed_prompt_tokens(prompt)

    def prompt_token_bound(self, prompt: Prompt) -> int:
        """The exact count where the served model's tokenizer is local (:meth:`local_twin`).
        OpenAI's own models (no ``base_url``) with tiktoken: the exact count of each message's
        text plus OpenAI's message framing (at most :data:`OPENAI_TOKENS_PER_MESSAGE` per message
        and :data:`OPENAI_REPLY_PRIMING` for the reply; the cookbook's "counting tokens for chat
        completions" gives 3 and 3); any other server: the byte bound of :class:`LLMClient`."""
        if self.local_twin() is not None:
            return self.billed_prompt_tokens(prompt)[0]
        if self.base_url is not None:
            return super().prompt_token_bound(prompt)
        if self._encoding is None:
            self._encoding = _tiktoken_encoding(self.model)
        if self._encoding is False:
            return super().prompt_token_bound(prompt)
        enc = self._encoding
        if isinstance(prompt, str) and self.mode == "completions":
            return len(enc.encode(prompt, disallowed_special=()))
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        return OPENAI_REPLY_PRIMING + sum(
            len(enc.encode(str(m["content"]), disallowed_special=())) + OPENAI_TOKENS_PER_MESSAGE
            + IMAGE_TOKEN_BOUND * len(message_images(m)) for m in messages)

    def count_tokens(self, text: str) -> tuple[int, bool]:
        """tiktoken's count for OpenAI models; ≈ 4 chars/token when no encoding is available."""
        if self._encoding is None:
            self._encoding = _tiktoken_encoding(self.model)
        if self._encoding is False:
            return super().count_tokens(text)
        return len(self._encoding.encode(text, disallowed_special=())), self.base_url is None

    async def aclose(self) -> None:
        await self._sdk.aclose()


#: Fields of a ``GET /models`` entry that say which model a server serves under a name: ``id`` and
#: ``owned_by`` (every server), ``root`` and ``parent`` (vLLM: the weights behind a served alias),
#: ``meta`` (llama.cpp: parameters, size, vocabulary).  ``created`` is left out: vLLM stamps it
#: with the time of the listing, so it changes at every request.
SERVED_MODEL_FIELDS = ("id", "owned_by", "root", "parent", "meta")


def served_model_identity(entry: Any) -> dict[str, Any]:
    """The :data:`SERVED_MODEL_FIELDS` of one ``GET /models`` entry (an SDK object or a dict)."""
    data = entry.model_dump() if hasattr(entry, "model_dump") else dict(entry)
    return {k: data[k] for k in SERVED_MODEL_FIELDS if data.get(k) is not None}


#: Host names of this machine: a server there serves files this process can read too.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def local_tokenizer(model: str, base_url: str | None, chat: bool) -> LLMClient | None:
    """The tokenizer of a model served on this machine (``base_url`` on :data:`LOOPBACK`, e.g.
    :mod:`cogtestbed.llm_adapters.servers.server`) that this package loads offline — a built-in name
    (``smollm2-135m``, ``tiny-random[-chat|-vlm]``) or an existing local model directory — as an
    :class:`~.hf.HFClient` rendering prompts as the server does (``chat``:
    its chat template; else the raw text).  None anywhere else (a hosted API, a remote server, a
    hub id), or where the model cannot be loaded here."""
    from pathlib import Path

    from cogtestbed.llm_adapters.clients.hf import BUILT_IN

    if base_url is None or urlsplit(base_url).hostname not in LOOPBACK:
        return None
    if model not in BUILT_IN and not Path(model).is_dir():
        return None
    try:
        from cogtestbed.llm_adapters.clients.hf import HFClient

        return HFClient.from_pretrained(model, device="cpu").with_chat(chat)  # as the server loads it
    except (LLMError, ValueError, OSError):  # no torch, no wheel, no chat template: estimate instead
        return None


def _tiktoken_encoding(model: str) -> Any:
    """The model's tiktoken encoding, or False when unavailable (unknown model, offline)."""
    try:
        import tiktoken

        try:
            return tiktoken.encoding_for_model(model)
        except KeyError:
            return tiktoken.get_encoding("o200k_base")
    except Exception:  # tiktoken downloads its tables on first use; offline that fails
        return False


def _continuation_from_echo(context: str, continuation: str, lp: Any) -> ContinuationScore:
    """Sum the echoed prompt-token log-probabilities that belong to the continuation."""
    if lp is None or not lp.tokens or lp.text_offset is None or lp.token_logprobs is None:
        raise ScoringNotSupported("the server returned no echoed prompt log-probabilities")
    if lp.token_logprobs[0] is not None:  # nothing precedes the first token: a shifted echo (logprob_probe)
        raise ScoringNotSupported(f"the server gave the first echoed token {lp.tokens[0]!r} a log-probability "
                                  f"({lp.token_logprobs[0]}); nothing precedes it, so the echoed "
                                  "log-probabilities are not aligned with their tokens")
    if any(v is None for v in lp.token_logprobs[1:len(lp.tokens) - 1]):
        raise ScoringNotSupported("the server gave an echoed prompt token after the first no log-probability: "
                                  "the echoed log-probabilities are not aligned with their tokens")
    start, end = len(context), len(context) + len(continuation)
    tokens, values = [], []
    for tok, off, val in zip(lp.tokens, lp.text_offset, lp.token_logprobs, strict=False):
        if off < start:
            if off + len(tok) > start:
                raise LLMError(f"a token {tok!r} straddles the end of the context; end the context "
                               "on a token boundary (e.g. move a trailing space into the continuation)")
            continue
        if off >= end:
            break  # the one generated token
        if val is None:
            raise LLMError("the server gave no log-probability for a continuation token")
        if not math.isfinite(float(val)):  # NaN / inf: no log-probability (refused, never cached)
            raise ScoringNotSupported(f"the server gave the continuation token {tok!r} a non-finite "
                                      f"log-probability ({val})")
        tokens.append(tok)
        values.append(float(val))
    if not tokens:
        raise LLMError(f"no tokens of continuation {continuation!r} in the echoed prompt")
    return ContinuationScore(continuation, float(sum(values)), tokens, values)
