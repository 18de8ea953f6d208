"""Answer parsers shared by the experiments: each reads one completion into an action or a
:class:`~cogtestbed.environments.base.ParseResult` failure with its reason.

CogBench (Coda-Forno et al. 2024) substitutes a random choice for an unreadable answer; these
parsers never do.  Every parser first cuts a completion that runs on into a new ``"Q:"`` turn
(models without a stop sequence often continue the dialogue).
"""

from __future__ import annotations

import re

from cogtestbed.environments.base import ParseResult

#: Start of a new question turn in CogBench's prompts.
Q_PREFIX = "\n\nQ:"

_MACHINE = re.compile(r"machine\s+([A-Za-z])\b", re.IGNORECASE)
_BARE_LETTER = re.compile(r"^\W*([A-Za-z])\W*$")
_LETTER = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")
_LEADING_LETTER = re.compile(r"^\s*([A-Z])(?=[\s.,;:!)]|$)")
#: A chat model restates the prompt's answer prefix ("A: I prefer option"): ``"I prefer option 1:
#: Receive ..."`` is read as option 1 (this project's choice; the paper's completion models continue
#: the prefix with the number itself).
_OPTION_NUMBER = re.compile(r"^[\s\W]*(?:(?:A:\s*)?I\s+prefer\s+)?(?:option\s*)?([12])(?!\d)", re.IGNORECASE)
_DECIMALS = re.compile(r"^\s*(?:0?\.(?=\d))?(\d+)")


def cut_new_turn(text: str) -> str:
    """The completion up to a new ``"Q:"`` turn."""
    return text.split(Q_PREFIX)[0]


def parse_machine(text: str | None, letters: tuple[str, ...], absent: str = "does not exist") -> ParseResult:
    """Read "Machine X" / bare "X" with X one of ``letters``; the action is X's index in ``letters``.

    ``absent`` completes the failure "machine X ..." for a letter that is not in ``letters``.
    """
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    text = cut_new_turn(text)
    named = {m.upper() for m in _MACHINE.findall(text)}
    if not named:
        bare = _BARE_LETTER.match(text) or _offered_leading_letter(text, letters)
        if bare is None:
            return ParseResult.failure(
                f"no machine letter found in {text.strip()[:40]!r} (expected one of {', '.join(letters)})"
            )
        named = {bare.group(1).upper()}
    if len(named) > 1:
        return ParseResult.failure(f"ambiguous answer naming machines {', '.join(sorted(named))}")
    letter = named.pop()
    if letter not in letters:
        return ParseResult.failure(f"machine {letter} {absent} (expected one of {', '.join(letters)})")
    return ParseResult.success(letters.index(letter))


def _offered_leading_letter(text: str, letters: tuple[str, ...]) -> re.Match[str] | None:
    """An offered machine letter opening the completion as a word (``"D is the only one ..."``):
    the prompt ends ``"A: Machine"``, so the completion's first word is the machine's name
    ("Machine D is the only one ...").  Only an offered capital counts, so the English one-letter
    words ("I would ...", "A ...") are not read as a choice unless that letter is on offer."""
    lead = _LEADING_LETTER.match(text)
    return lead if lead is not None and lead.group(1) in letters else None


def parse_option_letter(text: str | None, options: tuple[str, ...], noun: str) -> ParseResult:
    """Read a one-letter option (``"X"``, ``" Y."``, ``"Planet X"``) among ``options``.

    Standalone letters are collected (case-insensitively); exactly one distinct offered letter
    must appear.  CogBench instead keeps the last character of the reply that is an option and
    picks at random when there is none; here that case is a parse failure with its reason.
    """
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    found = {m.upper() for m in _LETTER.findall(text)}
    offered = found & set(options)
    if len(offered) > 1:
        return ParseResult.failure(f"ambiguous answer naming {noun}s {', '.join(sorted(offered))}")
    if not offered:
        other = sorted(found - set(options))
        what = f"{noun} {other[0]} is not offered" if other else f"no {noun} letter found"
        return ParseResult.failure(
            f"{what} in {text.strip()[:40]!r} (expected one of {', '.join(options)})"
        )
    return ParseResult.success(options.index(offered.pop()))


def parse_option_number(text: str | None) -> ParseResult:
    """Read option "1" or "2" at the start of the answer (``"1"``, ``" 2."``, ``"Option 1 because"``,
    a restated ``"I prefer option 2."``); the action is the option number minus one."""
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    m = _OPTION_NUMBER.match(text)
    if m is None:
        return ParseResult.failure(f"no option 1 or 2 at the start of {text.strip()[:40]!r}")
    return ParseResult.success(int(m.group(1)) - 1)


def parse_decimal_digits(text: str | None, what: str = "probability") -> ParseResult:
    """Read the digits completing an answer prefix that ends in ``"0."`` as a number in [0, 1).

    ``"33"`` → 0.33, ``"5"`` → 0.5, ``"07."`` → 0.07; a restated ``"0.33"`` is read as 0.33
    (CogBench strips ``"0."`` for the same reason).  Anything after the digits is ignored; a
    completion that continues into a new ``"Q:"`` turn is cut there first.  No digits → failure.
    """
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    head = cut_new_turn(text)
    match = _DECIMALS.match(head)
    if match is None:
        return ParseResult.failure(f"no {what} digits found in {head.strip()[:40]!r} (expected e.g. '35')")
    return ParseResult.success(float("0." + match.group(1)))
