"""Answers to the collider task's prompts: a rating on 0–100 read from a numeric answer
(:func:`parse_number`) or from causAIign's XML answer with likelihood, confidence and explanation
(:func:`parse_answer`, giving a :class:`CausalAnswer`).  Nothing unreadable is replaced: a failure
carries its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from cogtestbed.environments.base import ParseResult
from cogtestbed.environments.parsing import normalize_numerals, read_number

_NUM = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
_FULL = re.compile(rf"^\s*({_NUM})\s*%?\s*\.?\s*$")
_RESPONSE = re.compile(r"<response>(.*?)</response>", re.DOTALL | re.IGNORECASE)
_FIELD = re.compile(r"<(\w+?)>(.*?)</\1>", re.DOTALL)


@dataclass(frozen=True)
class CausalAnswer:
    """A parsed answer: the rating (0–100) and, where asked for, confidence and explanation."""

    rating: float
    confidence: float | None = None
    explanation: str | None = None

    def __float__(self) -> float:
        return float(self.rating)


def _check_range(value: float, text: str, probability_answers: str) -> str | None:
    if not np.isfinite(value) or value < 0.0 or value > 100.0:
        return f"rating {text!r} is outside [0, 100]"
    if probability_answers == "reject" and 0.0 < value < 1.0 and value != int(value):
        return f"rating {text!r} looks like a probability on the 0-1 scale, not 0-100"
    return None


def parse_number(text: str, probability_answers: str = "accept", strict: bool = False,
                 sources: tuple[str, ...] = ()) -> tuple[float | None, str | None]:
    """A single rating in [0, 100] from ``text``: (value, None) or (None, reason).

    Digits and separators are made ASCII first
    (:func:`~cogtestbed.environments.parsing.normalize_numerals`: ``７０`` and ``٧٠`` are 70).
    Accepted: the whole answer is one number (integer or decimal, optional ``%`` and final
    period); else the last non-empty line is one number (reasoning followed by the answer);
    else (not ``strict``) a labelled answer ("Answer: 72", which wins over the prompt's "0 to 100"
    restated before it), else, once the lines and sentences that repeat the prompt (``sources``)
    are set aside (:func:`~cogtestbed.environments.parsing.strip_echo`), the answer contains exactly
    one number.  Several numbers, no number, only numbers of the repeated prompt ("the answer
    repeats the stimulus"), values outside [0, 100] or an API error message are invalid, with the
    reason.  Unlike causAIign's ``\\b(\\d{1,3})\\b`` (which takes the first 1-3 digit number: its
    departure), "0.85" is 0.85 (not 0), "72.5" is 72.5 (not 72), an echoed "0 means
    completely unlikely" is no rating 0, and a dash run is no minus sign.
    """
    if text is None or not str(text).strip():
        return None, "empty answer"
    s = normalize_numerals(str(text).strip())
    if s.lower().startswith("error"):
        return None, f"answer is an error message: {s[:60]!r}"
    full = _full_number(s)
    if full is not None:
        err = _check_range(float(full), full, probability_answers)
        return (None, err) if err else (float(full), None)
    if strict:
        return None, f"expected a single number in [0, 100], got {s[:60]!r}"
    return _loose_number(s, probability_answers, sources)


def _full_number(s: str) -> str | None:
    """The text of the one number that is the whole answer, else its last non-empty line (None: neither)."""
    candidates = [s]
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if len(lines) > 1:
        candidates.append(lines[-1])
    for cand in candidates:
        m = _FULL.match(cand.replace("**", ""))
        if m:
            return m.group(1)
    return None


def _loose_number(s: str, probability_answers: str, sources: tuple[str, ...]) -> tuple[float | None, str | None]:
    """:func:`parse_number` past its strict forms: the answer's one number as
    :func:`~cogtestbed.environments.parsing.read_number` reads it (a labelled answer, else the one
    number left once the echoes of ``sources`` are set aside)."""
    if re.fullmatch(r"\s*\d+,\d+\s*%?\s*", s):
        return None, f"decimal comma in {s[:60]!r}; expected a number such as 72.5"
    read = read_number(s, sources)
    if read.value is None:
        return None, read.reason
    err = _check_range(read.value, read.text, probability_answers)
    return (None, err) if err else (read.value, None)


def parse_answer(text: str, prompt_type: str, probability_answers: str = "accept",
                 sources: tuple[str, ...] = ()) -> ParseResult:
    """Parse an answer to a collider prompt into a :class:`CausalAnswer` (or a failure).

    ``numeric``: :func:`parse_number`.  ``cot`` / ``numeric_conf``: the ``<response>…</response>``
    block (causAIign's regexes; the whole text if the wrapper is missing), its
    ``<likelihood>`` field must be exactly one number in [0, 100]; ``<confidence>`` is read
    when present (an unreadable confidence is recorded as missing, the rating stays valid) and
    ``<explanation>`` is kept.
    """
    if prompt_type == "numeric":
        value, err = parse_number(text, probability_answers, sources=sources)
        if err is not None:
            return ParseResult.failure(err)
        return ParseResult.success(CausalAnswer(float(value)))  # type: ignore[arg-type]
    if text is None or not str(text).strip():
        return ParseResult.failure("empty answer")
    return _xml_answer(str(text), probability_answers)


def _xml_answer(s: str, probability_answers: str) -> ParseResult:
    """:func:`parse_answer` of a ``cot`` / ``numeric_conf`` answer (non-empty ``s``)."""
    block = _RESPONSE.search(s)
    fields = {k.lower(): v.strip() for k, v in _FIELD.findall(block.group(1) if block else s)}
    if "likelihood" not in fields:
        if s.strip().lower().startswith("error"):
            return ParseResult.failure(f"answer is an error message: {s.strip()[:60]!r}")
        return ParseResult.failure("no <likelihood> field in the XML answer")
    value, err = parse_number(fields["likelihood"], probability_answers, strict=True)
    if err is not None:
        return ParseResult.failure(f"<likelihood>: {err}")
    conf = parse_number(fields["confidence"], "accept", strict=True)[0] if "confidence" in fields else None
    return ParseResult.success(CausalAnswer(float(value), conf, fields.get("explanation")))  # type: ignore[arg-type]

