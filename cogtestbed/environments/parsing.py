"""Answer parsers shared by the experiments: each reads one completion into an action or a
:class:`~cogtestbed.environments.base.ParseResult` failure with its reason.

CogBench (Coda-Forno et al. 2024) substitutes a random choice for an unreadable answer; these
parsers never do.  Every parser first cuts a completion that runs on into a new ``"Q:"`` turn
(models without a stop sequence often continue the dialogue).
"""

from __future__ import annotations

import re
import unicodedata

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


#: Fullwidth forms of ASCII (U+FF01–U+FF5E: ``０．３５``, ``％``, ``：``, ``Ｆ``) and the ideographic
#: space, then the Arabic decimal and thousands separators and percent sign, as ASCII.
_NUMERALS = str.maketrans({**{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)}, "\u3000": " ",
                           "\u066b": ".", "\u066c": ",", "\u066a": "%"})
#: Any Unicode decimal digit (category ``Nd``: ``٣``, ``७``, ``３``).
_UNICODE_DIGIT = re.compile(r"\d")


def normalize_numerals(text: str) -> str:
    """``text`` with its numbers written in ASCII, the one place every answer parser reads digits.

    Every Unicode decimal digit (category ``Nd``: full-width ``３``, Arabic-Indic ``٣``, Devanagari
    ``३`` …) becomes its ASCII digit; the full-width forms of ASCII (``．`` FULLWIDTH FULL STOP,
    ``，``, ``％``, ``－``, ``：``, full-width letters) become ASCII; ``٫`` ARABIC DECIMAL SEPARATOR is a
    decimal point, ``٬`` ARABIC THOUSANDS SEPARATOR a comma and ``٪`` a percent sign.  So ``０．３５``
    and ``٠٫٣٥`` read 0.35, and a comma keeps the rules of ``,`` (``１，２５０`` is 1250 where
    thousands are accepted; ``０，３５`` is a decimal comma, refused).  Nothing else changes
    (superscripts and fractions such as ``²`` and ``½`` are no digits)."""
    if text.isascii():
        return text
    digits = _UNICODE_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group(0))), text)
    return digits.translate(_NUMERALS)


def cut_new_turn(text: str) -> str:
    """The completion up to a new ``"Q:"`` turn."""
    return text.split(Q_PREFIX)[0]


def parse_machine(text: str | None, letters: tuple[str, ...], absent: str = "does not exist") -> ParseResult:
    """Read "Machine X" / bare "X" with X one of ``letters``; the action is X's index in ``letters``.

    ``absent`` completes the failure "machine X ..." for a letter that is not in ``letters``.
    """
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    text = normalize_numerals(cut_new_turn(text))
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
    text = normalize_numerals(text)
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
    m = _OPTION_NUMBER.match(normalize_numerals(text))
    if m is None:
        return ParseResult.failure(f"no option 1 or 2 at the start of {text.strip()[:40]!r}")
    return ParseResult.success(int(m.group(1)) - 1)


def parse_decimal_digits(text: str | None, what: str = "probability") -> ParseResult:
    """Read the digits completing an answer prefix that ends in ``"0."`` as a number in [0, 1].

    The answer's one number is read by :func:`read_number` (so ``"１．５"``, an enumeration ``"1. 52"``
    and several numbers are never digits): digits alone are the decimals, ``"33"`` → 0.33, ``"5"`` →
    0.5, ``"07."`` → 0.07; a restated ``"0.33"`` or ``".33"`` is read as 0.33 (CogBench strips
    ``"0."`` for the same reason); a percentage ``"65%"`` is 0.65.  A completion that continues into
    a new ``"Q:"`` turn is cut there first.  Anything else (no number, a sign, a number of 1 or more
    with decimals, a thousands separator or exponent) is a failure with its reason.
    """
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    head = cut_new_turn(text)
    read = read_number(head)
    shown = head.strip()[:40]
    if read.value is None:
        return ParseResult.failure(f"no {what} digits found in {shown!r} ({read.reason}; expected e.g. '35')")
    written = read.text.rstrip("% ")
    if read.percent and re.fullmatch(r"\d+(?:\.\d+)?", written) and read.value <= 100.0:
        return ParseResult.success(read.value / 100.0)
    if not read.percent and re.fullmatch(r"\d+", written):
        return ParseResult.success(float("0." + written))
    if not read.percent and re.fullmatch(r"0?\.\d+", written):
        return ParseResult.success(read.value)
    return ParseResult.failure(f"no {what} digits found in {shown!r} ({read.text} is not the digits of a number "
                               f"in [0, 1]; expected e.g. '35')")


# ----------------------------------------------------------------------------- numbers
#: Reason of an answer whose only numbers come from the stimulus or the prompt it repeats.
ECHO_REASON = "the answer repeats the stimulus"
#: An ASCII picture or rule echoed from a stimulus: a run of bars, digits and dashes that holds three
#: or more dashes in a row (``|----0---|``, ``-------0-------``, ``|-----|``) and a bar or ends in a
#: dash (:func:`_picture`).  It must not touch a decimal point or another digit at either end, so
#: ``---1.5`` and ``----75`` are numbers after a dash run.
_PICTURE = re.compile(r"(?<![\d.,])[-_=~|\d]*[-_=~]{3,}[-_=~|\d]*(?![\d.,])")
#: A number: a sign only where it touches the digits and is not the end of a run of dashes (nor
#: glued to a word: ``0.2-0.3`` is a range, not 0.2 and −0.3); thousands separators ``1,250``.
_SIGNED = re.compile(
    r"(?:(?<![-\w.,\u2010-\u2015\u2212])(?P<sign>[-+\u2212]))?"
    r"(?<![\w.])(?P<body>[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?![\d])"
    r"(?P<percent>\s*%)?")
#: A decimal comma (``0,35``): read neither as 0 nor as 35.
_DECIMAL_COMMA = re.compile(r",\d+")
#: The word right after a number (its unit, if any).
_UNIT = re.compile(r"\s*([A-Za-z]+)")
#: An answer labelled as such ("Answer: 0.3", "final answer is 0.3", "Estimate = 0.3").
_LABEL = re.compile(r"\b(?:final\s+)?(?:answer|estimate|estimation)\s*(?:is|would\s+be|[:=])\s*\**\s*",
                    re.IGNORECASE)
#: Where an answer's line splits into sentences ("1. 0.52 units east" is one).
_SENTENCES = re.compile(r"(?<=[^\d\s][.!?;])\s+")
#: A segment shorter than this (``"0.35"``, ``"Machine F"``) is an answer even where the stimulus
#: happens to contain it; a longer one found verbatim in the stimulus is an echo.
ECHO_MIN_CHARS = 12
_REMOVED = "\x00"


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def strip_echo(text: str, sources: tuple[str, ...] = ()) -> tuple[str, bool]:
    """``text`` without what repeats the stimulus, and whether anything did.

    Removed: ASCII pictures and rules (:data:`_PICTURE`), and every line or sentence of at least
    :data:`ECHO_MIN_CHARS` characters that appears verbatim (whitespace and case aside) in one of
    ``sources`` (the stimulus and instructions the subject was shown, never its own earlier answers)."""
    out = _PICTURE.sub(_picture, text)
    echoed = out.count(_REMOVED)
    out = out.replace(_REMOVED, " ")
    squashed = tuple(_squash(s) for s in sources if s)
    if squashed:
        kept = []
        for line in out.splitlines():
            if _echoes(line, squashed):
                echoed += 1
                continue
            sentences = _SENTENCES.split(line)
            own = [seg for seg in sentences if not _echoes(seg, squashed)]
            echoed += len(sentences) - len(own)
            kept.append(" ".join(own))
        out = "\n".join(kept)
    return out, bool(echoed)


def _picture(m: re.Match[str]) -> str:
    run = m.group(0)
    return _REMOVED if "|" in run or not run[-1].isdigit() else run


def _echoes(segment: str, squashed: tuple[str, ...]) -> bool:
    key = _squash(segment).strip(" .,;:!?")
    return len(key) >= ECHO_MIN_CHARS and any(key in s for s in squashed)


class NumberRead:
    """What :func:`read_number` found: ``value`` (None on failure), ``reason`` (on failure),
    ``percent`` (written with ``%``), ``text`` (the number as written), ``unit`` (the word right
    after it, lower case: ``"seconds"``, ``"min"``; empty if none) and ``labelled``."""

    __slots__ = ("labelled", "percent", "reason", "text", "unit", "value")

    def __init__(self, value: float | None, reason: str | None = None, *, percent: bool = False,
                 text: str = "", unit: str = "", labelled: bool = False) -> None:
        self.value, self.reason, self.percent, self.text = value, reason, percent, text
        self.unit, self.labelled = unit, labelled


def _number(m: re.Match[str], rest: str, labelled: bool = False) -> NumberRead:
    body = m.group("body")
    comma = _DECIMAL_COMMA.match(rest, m.end("body"))
    if comma is not None:  # what is not a thousands group after a comma: "0,35", "1,5"
        return NumberRead(None, f"decimal comma in {body + comma.group(0)!r}; expected a number such as 0.35")
    exponent = m.group(0)[m.end("body") - m.start():].split("%")[0].strip()
    value = float(body.replace(",", "") + exponent)
    if m.group("sign") in ("-", "\u2212"):
        value = -value
    unit = _UNIT.match(rest, m.end())
    return NumberRead(value, percent=bool(m.group("percent")), text=m.group(0).strip(),
                      unit=unit.group(1).lower() if unit else "", labelled=labelled)


#: What follows a labelled number that marks it as an enumeration's marker: ``.``, ``)`` or ``:`` and another number
#: on the same line (``Answer: 1. 0.52``, ``Estimate 1) 0.4``).
_ENUMERATED = re.compile(r"[.):][ \t]*([-+]?(?:\d+(?:\.\d*)?|\.\d+))")


def read_number(text: str | None, sources: tuple[str, ...] = ()) -> NumberRead:
    """The one number an answer gives, read as its author meant it: every experiment's answer
    parser reads its numbers here.

    1. Digits and separators are made ASCII first (:func:`normalize_numerals`: ``０．３５`` and
       ``٠٫٣٥`` are 0.35).
    2. A labelled answer ("Answer: 0.3", "My estimate is 0.3") wins over every other number; several
       labelled answers that disagree are ambiguous (a failure).
    3. Else what repeats the stimulus is set aside (:func:`strip_echo`: ASCII pictures, and lines or
       sentences found verbatim in ``sources``) and exactly one number must remain: an answer whose
       only numbers were echoed fails with :data:`ECHO_REASON`, and several numbers fail ("several
       numbers"): an enumeration ``1. 0.52``, a restated history ``Estimate 1: 0.4, Estimate 2: 0.5``,
       a range ``0.2-0.3`` or a compound ``1 min 30 s`` is never read as one of its numbers.
    4. A sign counts only where it touches the number and is not part of a run of dashes
       (``|-----0---|`` is no −0, ``- 0.3`` is a bulleted 0.3); ``1,250`` is 1250; a decimal comma
       (``0,35``) is a failure, not 0 or 35.
    """
    if text is None or not text.strip():
        return NumberRead(None, "empty answer")
    text = normalize_numerals(text)
    labelled = []
    for lab in _LABEL.finditer(text):
        m = _SIGNED.match(text, lab.end())
        if m is None:
            continue
        after = _ENUMERATED.match(text, m.end())
        if after is not None:  # "Answer: 1. 0.52": an enumeration's marker and its number, not one answer
            return NumberRead(None, f"several numbers ({m.group(0).strip()}, {after.group(1)}) in the answer; "
                                    "expected one number")
        labelled.append(_number(m, text, labelled=True))
    if labelled:
        values = {r.value for r in labelled if r.value is not None}
        if len(values) > 1:
            shown = ", ".join(r.text for r in labelled)
            return NumberRead(None, f"several labelled answers ({shown})")
        return labelled[0]
    rest, echoed = strip_echo(text, tuple(normalize_numerals(s) for s in sources))
    found = list(_SIGNED.finditer(rest))
    if not found:
        if echoed:
            return NumberRead(None, f"{ECHO_REASON} ({' '.join(text.split())[:40]!r})")
        return NumberRead(None, f"no number in the answer {text.strip()[:40]!r}")
    first = _number(found[0], rest)
    if first.value is None or len(found) == 1:
        return first
    shown = ", ".join(m.group(0).strip() for m in found[:4]) + (", ..." if len(found) > 4 else "")
    return NumberRead(None, f"several numbers ({shown}) in the answer; expected one number")


def echo_of_prompt(text: str | None, prompt: str, options: tuple[str, ...]) -> ParseResult | None:
    """A failure (:data:`ECHO_REASON`) where a choice answer only repeats its prompt, else None.

    Echoed: every line and sentence of the answer is found verbatim in ``prompt`` (at least
    :data:`ECHO_MIN_CHARS` characters each), and the answer spans two of them or names two or more
    of the offered ``options`` (``" 1 for 'skip' or Option 2 for 'inflate')"``).  One restated
    option (``"Option 1: Receive 500 dollars now."``) names one choice and is read as it.
    """
    if text is None or not text.strip():
        return None
    squashed = (_squash(prompt),)
    segments = [seg for line in text.splitlines() for seg in _SENTENCES.split(line) if seg.strip()]
    if not segments or not all(_echoes(seg, squashed) for seg in segments):
        return None
    named = {o for o in options if re.search(rf"(?<![A-Za-z0-9]){re.escape(o)}(?![A-Za-z0-9])", text)}
    if len(segments) < 2 and len(named) < 2:
        return None
    return ParseResult.failure(f"{ECHO_REASON} ({' '.join(text.split())[:40]!r})")
