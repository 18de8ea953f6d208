"""Real LLMs as subjects: one client contract, several backends, and the run machinery.

The package is in four wings, each a sub-package whose ``__init__`` imports nothing:

* :mod:`.clients` — the contract (:mod:`.clients.base`: ``generate`` / ``score``), the backend
  registry (:mod:`.clients.backends`), the backends (OpenAI and compatible servers, Anthropic, local
  ``transformers`` models), and what a hosted model accepts and costs (capabilities, prices);
* :mod:`.middleware` — what wraps a client in a run: response cache, retries, rate limits and the
  budget, batch mode;
* :mod:`.runs` — LLM runs apart from the clients: :mod:`.runs.agent` (:class:`LLMAgent`, the subject
  adapter), :mod:`.runs.runner` (run N subjects through an experiment: ``cogtestbed run``), the dry
  run's pricing (:mod:`.runs.pricing`), the run directory (:mod:`.runs.rundir`);
* :mod:`.servers` — the project's local OpenAI-compatible server, and the **test emulators**
  (:mod:`.servers.emulators`) it can put in front of a model.

Backends are chosen by a spec ``BACKEND:MODEL`` (:func:`make_client`) and registered like
experiments (:mod:`.clients.backends`: :func:`register_backend` and the entry-point group
``cogtestbed.backends``), so another package adds one.  Heavy dependencies (torch, the SDKs) are
imported only when a backend is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from cogtestbed.llm_adapters.runs.agent import Attempt, LLMAgent

#: The package's own backends (every registered one: :func:`backend_names`).
BACKENDS = tuple(BUILTIN)


def __getattr__(name: str) -> Any:
    """:class:`LLMAgent` and :class:`Attempt`, imported when named: the subject adapter imports the environments
    (pandas, numba), which a refusal of a plan's LLM options (its capability row, its price) never needs."""
    if name in ("Attempt", "LLMAgent"):
        from cogtestbed.llm_adapters.runs import agent

        return getattr(agent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKENDS", "Attempt", "Backend", "BackendUnavailable", "ContinuationScore", "GenerateRequest", "Generation",
    "LLMAgent", "LLMClient", "LLMError", "ScoreResult", "ScoringNotSupported", "backend_names", "get_backend",
    "make_client", "parse_spec", "register_backend",
]
