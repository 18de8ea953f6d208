"""Real LLMs as subjects: one client contract, several backends, and the run machinery.

* :mod:`.base` — the contract (``generate`` / ``score``) and its data types;
* backends: :mod:`.openai_client` (OpenAI and compatible servers), :mod:`.anthropic_client`,
  :mod:`.hf` (local ``transformers`` models and ``hf:tiny-random``);
* :mod:`.agent` — :class:`LLMAgent`, the subject adapter;
* :mod:`.cache`, :mod:`.limits`, :mod:`.retry` — response cache, budget, rate limits, retries;
* :mod:`.runner` — run N subjects through an experiment (``cogtestbed run``);
* :mod:`.server` — a small OpenAI-compatible HTTP server for a local model.

Backends are chosen by a spec ``BACKEND:MODEL`` (:func:`make_client`).  Heavy dependencies
(torch, the SDKs) are imported only when a backend is built.
"""

from __future__ import annotations

from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.agent import Attempt, LLMAgent
from cogtestbed.llm_adapters.base import (
    BackendUnavailable,
    ContinuationScore,
    GenerateRequest,
    Generation,
    LLMClient,
    LLMError,
    ScoreResult,
    ScoringNotSupported,
)

BACKENDS = ("openai", "anthropic", "hf")


def parse_spec(spec: str) -> tuple[str, str]:
    """``"BACKEND:MODEL"`` → (backend, model); the model may itself contain colons."""
    backend, sep, model = spec.partition(":")
    if not sep or not model or backend not in BACKENDS:
        raise InputError(f"--llm must be BACKEND:MODEL with BACKEND one of {', '.join(BACKENDS)} "
                         f"(e.g. hf:tiny-random, openai:gpt-4o-mini), got {spec!r}")
    return backend, model


def make_client(spec: str, *, base_url: str | None = None, mode: str = "auto",
                **options: Any) -> LLMClient:
    """Build the client for ``spec``.

    ``mode``: ``"chat"`` or ``"completions"`` (raw text, no chat template); ``"auto"`` is chat for
    hosted APIs and, for ``hf``, chat exactly when the tokenizer has a chat template.
    ``options`` go to the backend (``timeout``, ``retry``, ``device``, ``api_key_env``...).
    """
    backend, model = parse_spec(spec)
    if mode not in ("auto", "chat", "completions"):
        raise InputError(f"mode must be auto, chat or completions, got {mode!r}")
    if backend == "hf":
        if base_url is not None:
            raise InputError("--base-url is for hosted backends; a local hf model has none (serve "
                             "it with `python -m cogtestbed.llm_adapters.server` and use openai:)")
        from cogtestbed.llm_adapters.hf import HFClient

        chat = None if mode == "auto" else mode == "chat"
        return HFClient.from_pretrained(model, chat=chat, **options)
    if backend == "openai":
        from cogtestbed.llm_adapters.openai_client import OpenAIClient

        return OpenAIClient(model, base_url=base_url, mode="chat" if mode == "auto" else mode,  # type: ignore[arg-type]
                            **options)
    if mode == "completions":
        raise InputError("the Anthropic Messages API is chat only")
    from cogtestbed.llm_adapters.anthropic_client import AnthropicClient

    return AnthropicClient(model, base_url=base_url, **options)


__all__ = [
    "Attempt", "BackendUnavailable", "ContinuationScore", "GenerateRequest", "Generation",
    "LLMAgent", "LLMClient", "LLMError", "ScoreResult", "ScoringNotSupported", "make_client",
    "parse_spec",
]
