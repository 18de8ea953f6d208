"""One redaction function for every string that comes from a server or an exception.

A server may echo what it was sent — an error body quoting the ``Authorization`` header is common —
and an exception's message may quote a request.  Every such string passes :func:`redact` before it
is printed or written: error lines on stderr, retry notes (stderr and ``calls.parquet``'s
``retry_log``), warnings, ``run.json`` (``error``, ``scoring``, ``warnings``), the tables' text
columns and the response cache.  It removes

* the configured keys: the values of the environment variables that hold API keys
  (:data:`KEY_VARIABLES`, any variable named ``*_API_KEY``, and those a client names with
  ``api_key_env``, :func:`register_key_variable`), and any key registered with :func:`register_key`;
* anything shaped like a credential whatever its source (:data:`TOKEN_PATTERNS`): ``Bearer …`` and
  ``Basic …`` tokens, ``sk-…`` keys (OpenAI's ``sk-proj-…``, Anthropic's ``sk-ant-…``), and the
  value after ``x-api-key``, ``api-key``, ``api_key`` or ``authorization``.

Each is replaced by :data:`REDACTED`.  The module imports only the standard library, so the
command line's error printer uses it without loading the LLM adapters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: What a removed secret reads as.
REDACTED = "[REDACTED]"
#: Environment variables always read as configured keys.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: Shortest configured key that is removed wherever it appears (a shorter value would also match
#: ordinary words; a key that short is still removed where it is credential-shaped).
MIN_KEY_LENGTH = 8

_registered_keys: set[str] = set()
_registered_variables: set[str] = set()

#: Credential-shaped text, removed whatever its source; group 1 (where present) is kept.
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"""((?:x-api-key|api[-_]key|authorization)["']?\s*[:=]\s*["']?)(?!\s|Bearer\b|Basic\b|\[REDACTED\])"""
               r"""[^\s"',;}\]]{4,}""", re.IGNORECASE),
)


def register_key(value: str | None) -> None:
    """Remove ``value`` (a key this process uses) from every redacted string from now on."""
    if value and len(value) >= MIN_KEY_LENGTH:
        _registered_keys.add(value)


def register_key_variable(name: str) -> None:
    """Treat the environment variable ``name`` (a client's ``api_key_env``) as holding a key."""
    _registered_variables.add(name)


def configured_keys() -> list[str]:
    """The keys :func:`redact` removes verbatim, longest first."""
    names: Iterable[str] = {*KEY_VARIABLES, *_registered_variables,
                            *(n for n in os.environ if n.upper().endswith("_API_KEY"))}
    values = {os.environ.get(n) or "" for n in names} | _registered_keys
    return sorted((v for v in values if len(v) >= MIN_KEY_LENGTH), key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` without any configured key or credential-shaped token (see module docstring)."""
    if not text:
        return text
    for key in configured_keys():
        text = text.replace(key, REDACTED)
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact_json(obj: Any) -> Any:
    """``obj`` (JSON-like: dicts, lists, tuples, strings, numbers) with every string redacted."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k: redact_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(redact_json(v) for v in obj)
    return obj


def redact_url(url: str | None) -> str | None:
    """``url`` without user info, query or fragment (where credentials sometimes hide)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
