"""What the project's server was asked and what it would bill (:class:`Billing`), counted by an ASGI
middleware (:class:`CountRequests`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class Billing:
    """What the server was asked and what it would bill: every POST request that reached it
    (``requests``, faulted ones included) and the usage of every answer it produced (``prompt_tokens``,
    ``completion_tokens``: what a hosted API charges).  ``logprobs=False`` makes the completions
    endpoint answer without log-probabilities (a server that cannot score)."""

    requests: int = 0
    answered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: bool = True
    #: Hidden reasoning tokens billed (part of ``completion_tokens``) by a model acting as a reasoning model
    #: (:mod:`~.emulators.reasoning`).
    reasoning_tokens: int = 0

    def bill(self, usage: Mapping[str, Any], hidden: int = 0) -> None:
        self.answered += 1
        self.prompt_tokens += int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        self.reasoning_tokens += hidden


class CountRequests:
    """ASGI middleware counting the POST requests that reach the server (:class:`Billing`)."""

    def __init__(self, app: Any, billing: Billing) -> None:
        self.app, self.billing = app, billing

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.billing.requests += 1
        await self.app(scope, receive, send)

