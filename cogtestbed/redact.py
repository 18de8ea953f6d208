"""One redaction function for every string that comes from a server or an exception.

A server may echo what it was sent — an error body quoting the ``Authorization`` header is common —
and an exception's message may quote a request.  Every such string passes :func:`redact` before it
is printed or written: error lines on stderr, retry notes (stderr and ``calls.parquet``'s
``retry_log``), warnings, ``run.json`` (``error``, ``scoring``, ``warnings``,
``endpoint.system_fingerprints``), the tables' text columns, the response cache and exported
transcripts.  It removes

* the configured keys: the values of the environment variables that hold API keys
  (:data:`KEY_VARIABLES`, any variable named ``*_API_KEY``, and those a client names with
  ``api_key_env``, :func:`register_key_variable`), and any key registered with :func:`register_key`
  (``--api-key``), in every form a server may echo them (:func:`key_forms`):

  - raw, and any contiguous piece of the key of :data:`MIN_PIECE` characters or more (a key split in
    two is removed piece by piece), and the same of the key reversed (a server that echoes it backwards);
  - percent-encoded, wholly or in part, upper- or lower-case hex, once or twice (``%252F``), and
    JSON-escaped (``\\/``, ``\\u002b``): the text is matched through a decoded view of it;
  - base64, standard and URL-safe, with or without padding, at any of the three byte alignments
    it may have inside a longer encoded string, and any piece of that encoding that spans
    :data:`MIN_PIECE` bytes of the key;

* anything shaped like a credential whatever its source (:data:`TOKEN_PATTERNS`): ``Bearer …`` and
  ``Basic …`` tokens, ``sk-…`` keys (OpenAI's ``sk-proj-…``, Anthropic's ``sk-ant-…``), and the
  value after ``x-api-key``, ``api-key``, ``api_key`` or ``authorization`` — matched through the
  same decoded view, so ``sk%2Dproj…`` or ``Bearer%20…`` is caught too.

Each removed stretch is replaced by :data:`REDACTED`.  Keys containing ``/``, ``+`` or ``=`` (those
of self-hosted servers often do) are handled like any other.  The module imports only the standard
library, so the command line's error printer uses it without loading the LLM adapters.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: What a removed secret reads as.
REDACTED = "[REDACTED]"
#: Environment variables always read as configured keys.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: Shortest configured key that is removed wherever it appears (a shorter value would also match
#: ordinary words; a key that short is still removed where it is credential-shaped).
MIN_KEY_LENGTH = 8
#: Shortest piece of a configured key (characters of the key, bytes under base64) that is removed.
MIN_PIECE = 8
#: Characters of base64 text that hold :data:`MIN_PIECE` bytes of a key whatever their alignment.
_B64_PIECE = 10

_registered_keys: set[str] = set()
_registered_variables: set[str] = set()

#: Credential-shaped text, removed whatever its source; group 1 (where present) is kept.
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"""((?:x-api-key|api[-_]key|authorization)["']?\s*[:=]\s*["']?)(?!\s|Bearer\b|Basic\b|\[REDACTED\])"""
               r"""[^\s"',;}\]]{4,}""", re.IGNORECASE),
)
#: An escape the decoded view reads as one character: ``%XX`` (``%25XX`` too), ``\\uXXXX``, ``\\/``.
_ESCAPE = re.compile(r"%(?:25)?([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})|\\(/)")


def register_key(value: str | None) -> None:
    """Remove ``value`` (a key this process uses) from every redacted string from now on."""
    if value and len(value) >= MIN_KEY_LENGTH:
        _registered_keys.add(value)


def register_key_variable(name: str) -> None:
    """Treat the environment variable ``name`` (a client's ``api_key_env``) as holding a key."""
    _registered_variables.add(name)


def configured_keys() -> list[str]:
    """The keys :func:`redact` removes (in every form, :func:`key_forms`), longest first."""
    names: Iterable[str] = {*KEY_VARIABLES, *_registered_variables,
                            *(n for n in os.environ if n.upper().endswith("_API_KEY"))}
    values = {os.environ.get(n) or "" for n in names} | _registered_keys
    return sorted((v for v in values if len(v) >= MIN_KEY_LENGTH), key=len, reverse=True)


def base64_cores(key: str) -> list[str]:
    """The base64 text ``key``'s bytes always encode to, standard and URL-safe, at each of the three
    byte alignments the key can have inside a longer encoded string (the characters that depend on
    neighbouring bytes, and the padding, left off)."""
    data = key.encode()
    cores = []
    for align in range(3):
        encoded = base64.b64encode(b"\0" * align + data + b"\0\0").decode()
        start, stop = -(-8 * align // 6), 8 * (align + len(data)) // 6
        core = encoded[start:stop]
        cores += [core, core.translate(str.maketrans("+/", "-_"))]
    return cores


@lru_cache(maxsize=64)
def key_forms(key: str) -> frozenset[str]:
    """The pieces of ``key`` that :func:`redact` removes wherever they appear: every
    :data:`MIN_PIECE`-character piece of the raw key and of the key reversed, and every ten-character
    piece of its base64 forms (:func:`base64_cores`; ten characters hold :data:`MIN_PIECE` bytes at any
    alignment)."""
    pieces = {text[i:i + MIN_PIECE] for text in (key, key[::-1]) for i in range(len(key) - MIN_PIECE + 1)}
    for core in base64_cores(key):
        pieces |= {core[i:i + _B64_PIECE] for i in range(len(core) - _B64_PIECE + 1)}
    return frozenset(pieces)


def _decoded_view(text: str) -> tuple[str, list[int]]:
    """``text`` with its escapes decoded (:data:`_ESCAPE`), and where each of its characters starts
    in ``text`` (one entry more: the end)."""
    chars: list[str] = []
    starts: list[int] = []
    at = 0
    for match in _ESCAPE.finditer(text):
        for i in range(at, match.start()):
            chars.append(text[i])
            starts.append(i)
        hexa, uni, slash = match.groups()
        chars.append(slash or chr(int(hexa or uni, 16)))
        starts.append(match.start())
        at = match.end()
    for i in range(at, len(text)):
        chars.append(text[i])
        starts.append(i)
    starts.append(len(text))
    return "".join(chars), starts


def _key_spans(view: str, pieces: Iterable[frozenset[str]]) -> list[tuple[int, int]]:
    """Where in ``view`` any piece of a configured key sits (half-open spans)."""
    spans = []
    for found in pieces:
        for width in (MIN_PIECE, _B64_PIECE):
            spans += [(i, i + width) for i in range(len(view) - width + 1) if view[i:i + width] in found]
    return spans


def _token_spans(view: str) -> list[tuple[int, int]]:
    """Where in ``view`` a credential-shaped token sits (what :data:`TOKEN_PATTERNS` keep left out)."""
    return [(m.end(1), m.end()) for pattern in TOKEN_PATTERNS for m in pattern.finditer(view)]


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((start, stop))
    return merged


def redact(text: str) -> str:
    """``text`` without any configured key, in any form, or credential-shaped token (see the module
    docstring): each removed stretch reads :data:`REDACTED`."""
    if len(text) < MIN_PIECE:  # too short to hold a piece of a key or a credential-shaped token
        return text
    pieces = [key_forms(key) for key in configured_keys()]
    spans = _key_spans(text, pieces) + _token_spans(text)
    if _ESCAPE.search(text):
        view, starts = _decoded_view(text)
        spans += [(starts[a], starts[b]) for a, b in _key_spans(view, pieces) + _token_spans(view)]
    if not spans:
        return text
    out, at = [], 0
    for start, stop in _merged(spans):
        out += [text[at:start], REDACTED]
        at = stop
    out.append(text[at:])
    return "".join(out)


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
