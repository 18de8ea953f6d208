"""Numbers read as meant by every experiment's parser: digits of any script and full-width or Arabic
separators are read as their ASCII forms (``０．３５`` and ``٠٫٣５`` are 0.35, never 0), and an answer
holding several numbers (an enumeration ``1. 0.52``, a restated history ``Estimate 1: 0.4, Estimate 2:
0.5``, a compound ``1 min 30 s``) is refused, "several numbers", never read as one of them.  Every
answer goes through each experiment's own parse entry point (``env.parse``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from parse_checks import check_parsed

from cogtestbed.api.core import get_experiment
from cogtestbed.environments.causal_answers import parse_number
from cogtestbed.environments.magnitude import MagnitudeDesign, MagnitudeEnv, parse_magnitude
from cogtestbed.environments.parsing import normalize_numerals, parse_decimal_digits, read_number


def _env(name: str, **design: Any) -> Any:
    exp = get_experiment(name)
    env = exp.env_cls(exp.design_cls(**design)) if design else exp.env_cls()
    env.reset(seed=0)
    return env


def _magnitude(task: str) -> MagnitudeEnv:
    env = MagnitudeEnv(MagnitudeDesign(task=task, conditions="base", modalities="text", ranges="short",
                                       trials_per_session=4))
    env.reset(seed=0)
    return env




# ----------------------------------------------------------------------------- 1. digits of any script
@pytest.mark.parametrize(("text", "ascii_text"), [
    ("０．３５", "0.35"), ("٠٫٣٥", "0.35"), ("７．８ seconds", "7.8 seconds"), ("۰٫۳۵", "0.35"),  # Persian digits
    ("३५%", "35%"), ("３５％", "35%"), ("١٬٢٥٠", "1,250"), ("１，２５０", "1,250"), ("－０．３", "-0.3"),
    ("Ｍａｃｈｉｎｅ Ｆ", "Machine F"), ("0.35", "0.35"), ("10²", "10²"), ("½", "½"),  # no digits: kept
])
def test_digits_and_separators_are_made_ascii_in_one_place(text: str, ascii_text: str) -> None:
    assert normalize_numerals(text) == ascii_text


#: (experiment's parse entry point, answer, expected): each a reproduction of a wrong number.
SCRIPTS = [
    ("marker-location", "０．３５", 0.35), ("marker-location", "٠٫٣٥", 0.35), ("marker-location", "３５％", 0.35),
    ("marker-location", "Answer: ０．４", 0.4), ("marker-location", "０，３５", "!decimal comma"),
    ("marker-location", "٠٬٣٥", "!decimal comma"), ("line-ratio", "۰٫۲۵", 0.25),
    ("maze-distance", "５．２ units", 5.2), ("duration", "７．８ seconds", 7.8), ("duration", "١٫٥ min", 90.0),
    ("duration", "１，２５０ ms", 1.25),
    ("collider", "７０", 70.0), ("collider", "７２．５", 72.5), ("collider", "٧٢٫٥", 72.5),
    ("collider", "Answer: ７２．５", 72.5),
    ("probabilistic-reasoning", "３３", 0.33), ("probabilistic-reasoning", "０．３３", 0.33),
    ("probabilistic-reasoning", "٣٣", 0.33),
    ("belief-coherence", "No: ０．３０\nYes: ０．７０", [0.3, 0.7]),
    ("belief-coherence", "No: ٠٫٣٠\nYes: ٠٫٧٠", [0.3, 0.7]),
]


def _parse(target: str, text: str) -> Any:
    if target in ("marker-location", "line-ratio", "maze-distance", "duration"):
        return _magnitude(target).parse(text)
    return _env(target).parse(text)


@pytest.mark.parametrize(("target", "text", "expected"), SCRIPTS)
def test_full_width_and_arabic_indic_numbers_are_read_whole(target: str, text: str, expected: Any) -> None:
    parsed = _parse(target, text)
    if target == "collider" and parsed.error is None:
        parsed = type(parsed).success(float(parsed.action))
    check_parsed(parsed, expected)


def test_restless_confidence_and_choices_read_any_script() -> None:
    restless = _env("restless-bandit")
    check_parsed(restless.parse("Ｊ"), 1)
    for text, expected in [("٦٥", 0.65), ("６５％", 0.65), ("０．６５", 0.65), ("１．５", "!not the digits")]:
        check_parsed(parse_decimal_digits(text, "confidence"), expected)


def test_choice_letters_and_belief_decisions_read_full_width_forms() -> None:
    risky = _env("risky-choice")
    a, b = risky.letters()
    check_parsed(risky.parse(chr(ord(b) + 0xFEE0) + "＞＞"), 1)  # full-width "Q>>"
    check_parsed(_env("belief-coherence").parse("No: ０．２\nYes: ０．８"), [0.2, 0.8])  # its first phase
    from cogtestbed.environments.belief import parse_decision

    check_parsed(parse_decision("Ｃａｎ ｄｅｃｉｄｅ： Ｙｅｓ\nＤｅｃｉｓｉｏｎ： Ｎｏ"), [0, 0])  # decided: No


def test_option_numbers_read_any_script() -> None:
    disc = _env("temporal-discounting")
    check_parsed(disc.parse("２"), 1)
    check_parsed(disc.parse(" ١."), 0)
    bart = _env("bart")
    skip, inflate = bart.option_numbers()
    check_parsed(bart.parse(chr(ord("０") + inflate)), 1)
    check_parsed(bart.parse(chr(ord("٠") + skip)), 0)


# ----------------------------------------------------------------------------- 2. several numbers
#: Enumerations, restated histories, ranges and compound durations: no answer ("several numbers").
SEVERAL = [
    ("marker-location", "1. 0.52"), ("marker-location", "Estimate 1: 0.4, Estimate 2: 0.5"),
    ("marker-location", "Trial 3: 0.31\nTrial 4: 0.44"), ("marker-location", "0.2-0.3"),
    ("line-ratio", "1) 0.25"), ("maze-distance", "Step 1: 4.9"), ("duration", "1 min 30 s"),
    ("duration", "1. 7.8 seconds"), ("marker-location", "１． ０．５２"),
    ("collider", "1. 70"), ("collider", "Estimate 1: 40, Estimate 2: 50"),
    ("probabilistic-reasoning", "1. 33"), ("probabilistic-reasoning", "Estimate 1: 40, Estimate 2: 50"),
]


@pytest.mark.parametrize(("target", "text"), SEVERAL)
def test_enumerations_and_restated_history_are_no_answer(target: str, text: str) -> None:
    check_parsed(_parse(target, text), "!several numbers")


def test_restless_confidence_refuses_an_enumeration() -> None:
    check_parsed(parse_decimal_digits("1. 65", "confidence"), "!several numbers")


@pytest.mark.parametrize(("text", "expected"), [
    ("1. 0.52", "several numbers (1, 0.52)"), ("1 min 30 s", "several numbers (1, 30)"),
    ("Estimate 1: 0.4, Estimate 2: 0.5", "several numbers (1, 0.4, 2, 0.5)"),
    ("Answer: 1. 0.52", "several numbers (1, 0.52)"), ("My estimate is 1) 0.4", "several numbers (1, 0.4)"),
])
def test_the_shared_reader_names_the_numbers_it_refused(text: str, expected: str) -> None:
    read = read_number(text)
    assert read.value is None and str(read.reason).startswith(expected), read.reason


# ----------------------------------------------------------------------------- legitimate forms kept
@pytest.mark.parametrize(("task", "text", "expected"), [
    ("marker-location", "0.35", 0.35), ("marker-location", "35%", 0.35), ("marker-location", "Answer: 0.3", 0.3),
    ("marker-location", "Answer: 0.3.", 0.3), ("marker-location", "Answer: 0.3. That is my estimate.", 0.3),
    ("marker-location", "The marker is at 0.42 of the line.", 0.42), ("marker-location", "-0.3", "!outside"),
    ("duration", "7.8 seconds", 7.8), ("duration", "1,250 ms", 1.25), ("duration", "2 minutes", 120.0),
    ("maze-distance", "5.2 units", 5.2),
])
def test_the_usual_forms_still_read(task: str, text: str, expected: Any) -> None:
    check_parsed(parse_magnitude(text, task), expected)
    assert parse_number("1,000") == (None, "decimal comma in '1,000'; expected a number such as 72.5")
    assert parse_number("72.5%") == (72.5, None)


# ----------------------------------------------------------------------------- a session on the local server
class _Answers:
    """The tiny chat model served under another name, answering ``text`` to every request."""

    def __init__(self, model: Any, text: str) -> None:
        self._model, self._text = model, text

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    async def agenerate(self, request: Any, raw: bool = False) -> Any:
        from cogtestbed.llm_adapters.clients.base import Generation

        return Generation(text=self._text, prompt_tokens=3, completion_tokens=2, finish_reason="stop")


def test_a_magnitude_session_against_a_server_answering_full_width_digits_stores_them(tiny_chat: Any,
                                                                                       tmp_path: Any) -> None:
    import cogtestbed as ct
    from cogtestbed.llm_adapters.servers.server import serve

    with serve({"fullwidth": _Answers(tiny_chat, "０．３５")}) as url:  # type: ignore[dict-item]
        result = ct.run("magnitude", llm="openai:fullwidth", base_url=url, mode="chat", output=tmp_path / "run",
                        subjects=1, seed=1, cache=str(tmp_path / "cache.sqlite"),
                        design={"task": "marker-location", "conditions": "base", "modalities": "text",
                                "ranges": "short", "trials_per_session": 6})
    trials = result.trials
    assert len(trials) == 6 and trials["valid"].all()
    np.testing.assert_allclose(trials["action"].to_numpy(dtype=float), 0.35)
    assert (trials["raw_response"] == "０．３５").all()


# ----------------------------------------------------------------------------- every experiment
def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _arabic_indic(text: str) -> str:
    return "".join(chr(0x0660 + int(c)) if c.isdigit() else "\u066b" if c == "." else c for c in text)


def _answer(name: str, env: Any) -> str:
    """A valid answer, in ASCII, to the first step of each registered experiment."""
    fixed = {"magnitude": "Answer: 0.35", "collider": "72.5", "temporal-discounting": "2", "horizon": "Machine J",
             "restless-bandit": " J", "two-step": "Planet Y", "probabilistic-reasoning": "33",
             "belief-coherence": "No: 0.30\nYes: 0.70"}
    if name in fixed:
        return fixed[name]
    if name == "bart":
        return str(env.option_numbers()[1])
    if name == "instrumental-learning":
        return f"Machine {env.offered_letters()[1]}"
    if name == "risky-choice":
        return f"{env.letters()[1]}>>"
    assert name == "revealed-belief", f"a new experiment joins this table: {name}"
    return "[C]" if env.current_channel() == "staa" else env.current_item().labels[-1]


def test_every_experiments_parser_reads_full_width_and_arabic_indic_answers_as_ascii() -> None:
    import cogtestbed as ct

    for name in ct.experiments():
        env = _env(name)
        text = _answer(name, env)
        ascii_read = env.parse(text)
        assert ascii_read.error is None, (name, text, ascii_read)
        for other in (_full_width(text), _arabic_indic(text)):
            read = env.parse(other)
            assert read.error is None, (name, other, read)
            np.testing.assert_array_equal(np.asarray(read.action, dtype=float),
                                          np.asarray(ascii_read.action, dtype=float), err_msg=f"{name} {other!r}")
