"""The LLM backend registry: ``BACKEND:MODEL`` → a client, open to other packages.

A backend is a name and a factory ``factory(model, *, base_url, mode, **options) -> LLMClient``
(:class:`Backend`).  The package's own (``openai``, ``anthropic``, ``hf``) are declared below;
another installed distribution adds one through the entry-point group :data:`ENTRY_POINT_GROUP`
(``[project.entry-points."cogtestbed.backends"] echo = "mypkg.backend:BACKEND"``, a
:class:`Backend` or a bare factory), a script or notebook through :func:`register_backend`.  This
is how experiments are registered (:mod:`cogtestbed.registry`: a function and an entry-point
group); nothing else branches on a backend's name to build a client.

The factory receives ``mode`` as given (``auto``, ``chat`` or ``completions``: checked here) and
decides what ``auto`` means for it; a backend that is not :attr:`Backend.remote` takes no
``base_url`` (refused here) and is given no ``timeout`` / ``retry`` by ``cogtestbed run``.
Factories import their heavy dependencies when called, so listing backends imports none.

A backend with a provider batch API names it in :attr:`Backend.batches` (``run --batch`` asks
:func:`batch_api` for it; nothing branches on a backend's name there either).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogtestbed.errors import InputError
from cogtestbed.plugins import Registry

if TYPE_CHECKING:
    from cogtestbed.llm_adapters.clients.base import LLMClient

#: Entry-point group through which other distributions register backends.
ENTRY_POINT_GROUP = "cogtestbed.backends"
#: What ``mode`` may be (:func:`make_client`).
MODES = ("auto", "chat", "completions")

Factory = Callable[..., "LLMClient"]


@dataclass(frozen=True)
class Backend:
    """One backend: ``factory(model, *, base_url, mode, **options)`` builds its client.

    ``remote``: the client calls a service (it takes ``base_url``, and ``cogtestbed run`` gives it
    ``timeout`` and ``retry``); False for a model run in this process (``hf``), which is refused a
    ``base_url`` with ``local_hint`` (what to do instead) after the reason.  ``batches``: the
    backend's batch API, ``batches(client)`` → a
    :class:`~cogtestbed.llm_adapters.middleware.batch.protocol.Provider` (None: it has none, and
    ``run --batch`` is refused for it).
    """

    name: str
    factory: Factory
    remote: bool = True
    description: str = ""
    local_hint: str = ""
    batches: Callable[[LLMClient], Any] | None = None

    def client(self, model: str, *, base_url: str | None = None, mode: str = "auto", **options: Any) -> LLMClient:
        """The client of ``model`` on this backend."""
        if base_url is not None and not self.remote:
            raise InputError(f"`base_url` is for hosted backends; a local {self.name} model has none"
                             + (f" ({self.local_hint})" if self.local_hint else ""))
        return self.factory(model, base_url=base_url, mode=mode, **options)


# ----------------------------------------------------------------------------- the package's own
def _hf(model: str, *, base_url: str | None, mode: str, **options: Any) -> LLMClient:
    from cogtestbed.llm_adapters.clients.hf import HFClient

    chat = None if mode == "auto" else mode == "chat"
    return HFClient.from_pretrained(model, chat=chat, **options)


def _openai(model: str, *, base_url: str | None, mode: str, **options: Any) -> LLMClient:
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    return OpenAIClient(model, base_url=base_url, mode="chat" if mode == "auto" else mode,  # type: ignore[arg-type]
                        **options)


def _anthropic(model: str, *, base_url: str | None, mode: str, **options: Any) -> LLMClient:
    if mode == "completions":
        raise InputError("the Anthropic Messages API is chat only")
    from cogtestbed.llm_adapters.clients.anthropic_client import AnthropicClient

    return AnthropicClient(model, base_url=base_url, **options)


def _openai_batches(client: LLMClient) -> Any:
    from cogtestbed.llm_adapters.middleware.batch.providers import OpenAIBatches

    return OpenAIBatches(client)


def _anthropic_batches(client: LLMClient) -> Any:
    from cogtestbed.llm_adapters.middleware.batch.providers import AnthropicBatches

    return AnthropicBatches(client)


#: The package's backends, in the order they are listed.
BUILTIN: dict[str, Backend] = {
    "openai": Backend("openai", _openai, description="OpenAI and OpenAI-compatible servers",
                      batches=_openai_batches),
    "anthropic": Backend("anthropic", _anthropic, description="the Anthropic Messages API",
                         batches=_anthropic_batches),
    "hf": Backend("hf", _hf, remote=False, description="a local transformers model (hf:tiny-random, ...)",
                  local_hint="serve it with `python -m cogtestbed.llm_adapters.servers.server` and use openai:"),
}


def _itself(backend: Backend) -> Backend:
    return backend


def _as_backend(name: str, value: Any) -> Backend:
    if isinstance(value, Backend):
        if value.name != name:
            raise InputError(f"backend entry point {name!r} declares a backend named {value.name!r}")
        return value
    if callable(value):
        return Backend(name, value)
    raise TypeError(f"backend {name!r} is neither a Backend nor a factory (got {type(value).__name__})")


#: The backends: the package's own (:data:`BUILTIN`), the plug-ins' (:data:`ENTRY_POINT_GROUP`) and those
#: registered in this process (:func:`register_backend`): the registry pattern experiments and plan kinds share.
BACKENDS: Registry[Backend] = Registry(
    "backend", ENTRY_POINT_GROUP, lambda: {name: functools.partial(_itself, b) for name, b in BUILTIN.items()},
    _as_backend,
    same=lambda a, b: a.factory is b.factory, installed_again=False,
    unknown=lambda name, names: InputError(f"unknown LLM backend {name!r}: choose one of {', '.join(names)}"))


def backend_names() -> list[str]:
    """Every backend: the package's own, then the installed plug-ins', then those registered in
    this process (each group alphabetical)."""
    return BACKENDS.names()


def register_backend(name: str, factory: Factory | Backend, *, remote: bool = True,
                     description: str = "") -> Backend:
    """Register the backend ``name`` in this process (``llm="NAME:MODEL"`` then builds
    ``factory(model, base_url=..., mode=..., **options)``); returns it.  Registering the same
    factory again is a no-op; another one under a taken name (a built-in one's included) is
    refused.  An installed distribution declares the entry point instead (module docstring)."""
    if not name or ":" in name:
        raise InputError(f"a backend name is a non-empty word without ':', got {name!r}")
    backend = factory if isinstance(factory, Backend) else Backend(name, factory, remote, description)
    if backend.name != name:
        raise InputError(f"register_backend({name!r}) was given a backend named {backend.name!r}")
    return BACKENDS.register(name, backend)


def unregister_backend(name: str) -> None:
    """Remove a backend registered in this process (tests, notebooks); the package's own stay."""
    BACKENDS.unregister(name)


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (one :class:`InputError` line listing them where none is)."""
    return BACKENDS.get(name)


def parse_spec(spec: str) -> tuple[str, str]:
    """``"BACKEND:MODEL"`` → (backend, model); the model may itself contain colons.  The backend
    must be registered (the package's own, a plug-in's or one of this process)."""
    backend, sep, model = spec.partition(":")
    if not sep or not model or not BACKENDS.known(backend):
        raise InputError(f"`llm` must be BACKEND:MODEL with BACKEND one of {', '.join(backend_names())} "
                         f"(e.g. hf:tiny-random, openai:gpt-4o-mini), got {spec!r}")
    return backend, model


def batch_api(name: str) -> Callable[[LLMClient], Any] | None:
    """The batch API of the backend called ``name`` (:attr:`Backend.batches`); None where it has none
    or no backend has that name."""
    return get_backend(name).batches if BACKENDS.known(name) else None


def require_batch_api(backend: str, spec: str) -> Callable[[LLMClient], Any]:
    """The batch API of ``backend`` (:func:`batch_api`), refused in one line naming ``spec`` where it has none (a
    plan refuses ``batch`` so from its request alone, before it prices anything)."""
    factory = batch_api(backend)
    if factory is None:
        raise InputError(f"`batch` needs a hosted backend with a batch API (openai:, anthropic:), not {spec}")
    return factory


def make_client(spec: str, *, base_url: str | None = None, mode: str = "auto", **options: Any) -> LLMClient:
    """Build the client for ``spec`` (``BACKEND:MODEL``) through its backend's factory.

    ``mode``: ``"chat"`` or ``"completions"`` (raw text, no chat template); ``"auto"`` is the
    backend's choice (chat for hosted APIs; for ``hf``, chat exactly when the tokenizer has a chat
    template).  ``options`` go to the backend (``timeout``, ``retry``, ``device``, ``api_key_env``...).
    """
    backend, model = parse_spec(spec)
    if mode not in MODES:
        raise InputError(f"mode must be auto, chat or completions, got {mode!r}")
    return get_backend(backend).client(model, base_url=base_url, mode=mode, **options)
