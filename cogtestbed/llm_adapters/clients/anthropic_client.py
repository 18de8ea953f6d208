"""Anthropic models through the official ``anthropic`` SDK (Messages API).

A raw prompt is sent as one user message (CogBench's protocol for chat models).  The key comes
from ``ANTHROPIC_API_KEY`` (or ``api_key_env``).  The API rejects whitespace-only stop sequences,
so those are applied to the returned text instead (:func:`~.base.apply_stop`).
``temperature`` and ``seed`` are not sent as SDK arguments: the temperature travels in the request
body (the API's ``temperature`` field) and the seed, which the API does not take, only keeps
independent samples apart in the cache.  The API returns no log-probabilities: ``score`` raises
:class:`~.base.ScoringNotSupported`.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    BackendUnavailable,
    GenerateRequest,
    Generation,
    LLMClient,
    SdkPerLoop,
    apply_stop,
    checked_usage,
    image_media_type,
    message_images,
)
from cogtestbed.llm_adapters.clients.capabilities import capability_of, unsent
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy, call_with_retries
from cogtestbed.redact import redact_url, register_key, register_key_variable


def anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for the Anthropic SDK: a message with images becomes content blocks, each image
    a base64 ``image`` block, followed by the text block."""
    out: list[dict[str, Any]] = []
    for m in messages:
        images = message_images(m)
        if not images:
            out.append({"role": m["role"], "content": m["content"]})
            continue
        blocks: list[dict[str, Any]] = [
            {"type": "image", "source": {"type": "base64", "media_type": image_media_type(b),
                                         "data": base64.b64encode(b).decode("ascii")}} for b in images]
        if m["content"]:
            blocks.append({"type": "text", "text": m["content"]})
        out.append({"role": m["role"], "content": blocks})
    return out


class AnthropicClient(LLMClient):
    """Claude models via the Messages API (see module docstring)."""

    http = True
    backend = "anthropic"
    chat = True
    vision = True
    #: Anthropic publishes no offline tokenizer; its documentation's rule of thumb is "a token
    #: approximately represents 3.5 English characters" (the dry run's estimate, not exact).
    chars_per_token = 3.5

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "ANTHROPIC_API_KEY", timeout: float = 60.0,
                 retry: RetryPolicy | None = None) -> None:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise BackendUnavailable("the anthropic backend needs: pip install 'cogtestbed[llm]'") from exc
        if not timeout > 0:
            raise InputError(f"`timeout` must be a positive number of seconds, got {timeout:g}")
        self._anthropic = anthropic
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.api_key_env = api_key_env  # the variable's name; the key is read per SDK object
        register_key_variable(api_key_env)  # its value is removed from every message (cogtestbed.redact)
        self._sdk = SdkPerLoop(self._new_sdk)
        self.retries: list[tuple[str, float]] = []
        #: What the model accepts (:mod:`~.capabilities`): extended thinking, and no temperature with it.
        self.capability = capability_of(self.spec)

    def check_ready(self) -> None:
        if not os.environ.get(self.api_key_env) and self.base_url is None:
            raise BackendUnavailable(f"set {self.api_key_env} in the environment for Anthropic")

    def _client(self) -> Any:
        return self._sdk.get()

    def _new_sdk(self) -> Any:
        """The SDK object of the running event loop (made once per loop by :class:`SdkPerLoop`)."""
        self.check_ready()
        key = os.environ.get(self.api_key_env)
        register_key(key)
        return self._anthropic.AsyncAnthropic(api_key=key or "not-needed", base_url=self.base_url,
                                              timeout=self.timeout, max_retries=0)

    def request_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The Messages API body of ``request`` (system text apart, whitespace-only stops left to
        :func:`apply_stop`): what :meth:`agenerate` sends and a Message Batch request's ``params``."""
        messages = request.messages
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": anthropic_messages([m for m in messages if m["role"] != "system"]),
        }
        self._add_options(body, request, system)
        return body

    def _add_options(self, body: dict[str, Any], request: GenerateRequest, system: str) -> None:
        """The optional fields of :meth:`request_body`: temperature, thinking, system text, stops."""
        thinking = request.thinking_budget is not None
        if not unsent(self.capability, {"temperature": request.temperature}, thinking):
            body["temperature"] = request.temperature  # thinking takes no temperature but the default (1)
        if thinking:
            body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
        if system:
            body["system"] = system
        stops = [s for s in request.stop if s.strip()]
        if stops:
            body["stop_sequences"] = stops

    async def agenerate(self, request: GenerateRequest) -> Generation:
        client = self._client()
        kwargs = self.request_body(request)
        if "temperature" in kwargs:
            kwargs["extra_body"] = {"temperature": kwargs.pop("temperature")}
        errors = (self._anthropic.APIConnectionError,)
        try:
            resp = await call_with_retries(lambda: client.messages.create(**kwargs), self.retry, errors,
                                           lambda e, d: self.retries.append((type(e).__name__, d)))
        except BackendError as exc:
            raise BackendError(f"{self.spec} at {self.where}: {exc}", exc.status) from exc.__cause__
        return self.generation(resp, request)

    @property
    def where(self) -> str:
        return redact_url(self.base_url) or "api.anthropic.com"

    def generation(self, resp: Any, request: GenerateRequest) -> Generation:
        """The :class:`Generation` of a Messages API response (the SDK's typed ``Message``): the text blocks'
        text (a thinking block is not the answer).  Thinking tokens bill inside ``output_tokens``; Anthropic
        reports no separate count, so ``reasoning_tokens`` stays None."""
        text = "".join(getattr(block, "text", "") for block in resp.content if getattr(block, "type", "text") == "text")
        text, _ = apply_stop(text, request.stop)
        return Generation(
            text=text,
            prompt_tokens=checked_usage(getattr(resp.usage, "input_tokens", None), "input_tokens", self.where),
            completion_tokens=checked_usage(getattr(resp.usage, "output_tokens", None), "output_tokens",
                                            self.where),
            finish_reason=resp.stop_reason,
        )

    def endpoint_identity(self) -> dict[str, Any] | None:
        """The API's address; Anthropic's models are named by dated ids, so the name is the model."""
        return {"url": self.where, "served_model": None}

    async def aclose(self) -> None:
        await self._sdk.aclose()
