"""Real LLMs as subjects: one client contract, several backends, and the run machinery.

* :mod:`~cogtestbed.llm_adapters.clients.base` — the contract (``generate`` / ``score``) and its data types;
* backends: :mod:`~cogtestbed.llm_adapters.clients.openai_client` (OpenAI and compatible servers),
  :mod:`~cogtestbed.llm_adapters.clients.anthropic_client`,
  :mod:`~cogtestbed.llm_adapters.clients.hf` (local ``transformers`` models and ``hf:tiny-random``);
* :mod:`.agent` — :class:`LLMAgent`, the subject adapter;
* :mod:`.cache`, :mod:`.limits`, :mod:`.retry` — response cache, budget, rate limits, retries;
* :mod:`.runner` — run N subjects through an experiment (``cogtestbed run``);
* :mod:`~cogtestbed.llm_adapters.servers.server` — a small OpenAI-compatible HTTP server for a local model.

Backends are chosen by a spec ``BACKEND:MODEL`` (:func:`make_client`) and registered like
experiments (:mod:`~cogtestbed.llm_adapters.clients.backends`: :func:`register_backend` and the entry-point group
``cogtestbed.backends``), so another package adds one.  Heavy dependencies (torch, the SDKs) are
imported only when a backend is built.
"""

from __future__ import annotations

from cogtestbed.llm_adapters.agent import Attempt, LLMAgent
from cogtestbed.llm_adapters.clients.backends import (
    BUILTIN,
    Backend,
    backend_names,
    get_backend,
    make_client,
    parse_spec,
    register_backend,
)
from cogtestbed.llm_adapters.clients.base import (
    BackendUnavailable,
    ContinuationScore,
    GenerateRequest,
    Generation,
    LLMClient,
    LLMError,
    ScoreResult,
    ScoringNotSupported,
)

#: The package's own backends (every registered one: :func:`backend_names`).
BACKENDS = tuple(BUILTIN)

__all__ = [
    "BACKENDS", "Attempt", "Backend", "BackendUnavailable", "ContinuationScore", "GenerateRequest", "Generation",
    "LLMAgent", "LLMClient", "LLMError", "ScoreResult", "ScoringNotSupported", "backend_names", "get_backend",
    "make_client", "parse_spec", "register_backend",
]
