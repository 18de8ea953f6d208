"""Every experiment's parser against a corpus of real and adversarial answers (issue 75): echoed stimuli
(ASCII pictures, the prompt's own numbers and lines), dash and bullet runs, labelled answers after an
echo, two numbers, units, percentages, thousands separators and negative numbers.  An echo is invalid
with its own reason (:data:`~cogtestbed.environments.parsing.ECHO_REASON`); a labelled answer wins over
earlier numbers; a sign is a sign only where it touches the number and ends no dash run.

``fixtures/smollm2_marker_answers.json`` holds SmolLM2-135M-Instruct's real answers to marker-location
prompts (how they were made is in the file's ``about``); the answers quoted in issue 75 (the ASCII
echoes that made 18 of 20 answers of a session "valid") are in :data:`ISSUE_ECHOES`; its ``run_path``
holds SmolLM2's answers through ``cogtestbed run magnitude`` (the issue's path), echoes included.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from parse_checks import check_parsed

from cogtestbed.api.core import get_experiment
from cogtestbed.environments.belief import parse_belief
from cogtestbed.environments.causal_answers import parse_number
from cogtestbed.environments.magnitude import MagnitudeDesign, MagnitudeEnv, parse_magnitude
from cogtestbed.environments.magnitude_stimuli import maze_path, maze_text
from cogtestbed.environments.parsing import ECHO_REASON, parse_decimal_digits, read_number

FIXTURE = Path(__file__).parent / "fixtures" / "smollm2_marker_answers.json"
#: Issue 75's answers: SmolLM2 echoing the marker-location picture (all read as −0 before the issue).
ISSUE_ECHOES = ("|---------------0------|", "-------0-------", "|----0---|")




# ----------------------------------------------------------------------------- magnitude
MARKER = [
    *[(echo, f"!{ECHO_REASON}") for echo in ISSUE_ECHOES],
    ("|----0---|\nAnswer: 0.3", 0.3),            # a labelled answer after an echo
    ("|----0---| 0.3", 0.3),                     # the picture set aside, the number after it read
    ("0.2 ... Answer: 0.3", 0.3),                # a labelled answer wins over an earlier number
    ("Answer: 0.3\nAnswer: 0.4", "!several labelled answers"),
    ("--0.3", 0.3), ("---0.45", 0.45), ("- 0.3", 0.3), ("• 0.3", 0.3),  # dash and bullet runs: no sign
    ("-0.3", "!-0.3 outside the valid range"), ("\u22120.3", "!-0.3 outside"),  # a sign touching the number
    ("0.2-0.3", "!several numbers (0.2, 0.3)"),  # a range: no end of it, nor a negative second number
    ("0.3 or 0.4", "!several numbers"),          # two numbers: neither (the paper's prompt asks for one)
    ("35%", 0.35), ("Estimate: 35 %", 0.35),     # percentages on a unit-interval task
    ("1,250", "!1250 outside"), ("0,35", "!decimal comma"),
    ("The marker is at 0.42 of the line.", 0.42), ("0.35 units", 0.35),
    ("no idea", "!no number"), ("", "!empty answer"),
]


@pytest.mark.parametrize(("text", "expected"), MARKER)
def test_marker_location_answers(text: str, expected: Any) -> None:
    check_parsed(parse_magnitude(text, "marker-location"), expected)


def test_duration_maze_and_ratio_answers_read_units_thousands_and_echoes() -> None:
    for text, expected in [("12.5 seconds", 12.5), ("about 7 s", 7.0), ("2 minutes", 120.0), ("1.5 min.", 90.0),
                           ("1,250 ms", 1.25), ("1,250", "!1250 outside"), ("45%", "!percentage")]:
        check_parsed(parse_magnitude(text, "duration"), expected)
    path = maze_text(maze_path(5.0, 3))
    moves = path.splitlines()
    for text, expected in [(moves[1], f"!{ECHO_REASON}"), ("\n".join(moves[1:4]), f"!{ECHO_REASON}"),
                           (moves[1] + "\nAnswer: 4.9", 4.9), (moves[1] + "\n5.2 units", 5.2),
                           (moves[2].split(". ", 1)[1] + ". So about 4.8.", 4.8), ("4.9", 4.9)]:
        check_parsed(parse_magnitude(text, "maze-distance", (path,)), expected)
    check_parsed(parse_magnitude("|-----|\n|------------|", "line-ratio"), f"!{ECHO_REASON}")
    check_parsed(parse_magnitude("|-----|\n|------------|\n0.4", "line-ratio"), 0.4)


def test_the_environment_sets_aside_its_own_stimulus_and_instructions_not_the_subjects_answers() -> None:
    env = MagnitudeEnv(MagnitudeDesign(task="marker-location", conditions="numerical", modalities="text",
                                       ranges="short", trials_per_session=12))
    obs, _ = env.reset(seed=3)
    for _ in range(11):  # eleven answers: the steering sentence states the range of ten observations
        obs, *_ = env.step(0.25)
    system = obs["prompt"][0]["content"]
    steering = next(s for s in system.split(". ") if "range of" in s)
    check_parsed(env.parse(steering + "."), f"!{ECHO_REASON}")  # the prompt's own numbers
    check_parsed(env.parse(obs["prompt"][-1]["content"]), f"!{ECHO_REASON}")
    check_parsed(env.parse("0.25"), 0.25)  # its own earlier answer is an answer, not an echo


def test_smollm2s_real_marker_answers_parse_as_meant() -> None:
    """The recorded answers: none echoes the picture here (the issue's echoes are :data:`ISSUE_ECHOES`);
    every one is read by the rules: a labelled "Answer: 0" wins, a sentence without a number is invalid,
    never a number made of a dash run.  Several numbers are no answer: "position 0. ... position 1." and
    prose such as "add 1 to the decimal number that would represent a 1-unit increase" (read as the
    answer 0 and 1 by the first-number rule before) are invalid, "several numbers"."""
    data = json.loads(FIXTURE.read_text())
    assert "SmolLM2-135M-Instruct" in data["about"] and len(data["answers"]) >= 20
    seen: Counter[Any] = Counter()
    for row in data["answers"]:
        text = row["raw_response"]
        parsed = parse_magnitude(text, "marker-location", (row.get("stimulus", ""),))
        read = read_number(text)
        if read.value is None:
            assert parsed.action is None and parsed.error == read.reason
        if text.lstrip().startswith("Answer: 0"):
            assert parsed.action == 0.0 and read.labelled
        if "position 0.\n\nThe marker is at position 1." in text:
            assert str(parsed.error).startswith("several numbers (0, 1, 2)"), parsed.error
        seen[parsed.action if parsed.action is not None else parsed.error.split(" ")[0]] += 1
    assert seen == {0.0: 2, 0.02: 2, "several": 15, "no": 2, "number": 1}, seen


#: What the parser at main (ba6188e, before issue 75) made of the run-path answers of the fixture's
#: ``run_path`` (``parse_magnitude(text, "marker-location")``; it took no stimulus):
#:   chat_s1_long (20 picture echoes): '|0-----0-------------|' (3x), '|0-----0-------------|GRE' (2x) -> 0.0
#:     valid; '|---...---0---------|' -> -0.0 valid (the dash run read as a minus sign);
#:     '|1-----1-------------|10' -> 1.0 valid; '|---------------1--------|' (12x) -> invalid "first number -1
#:     outside the valid range" (a dash-run sign); '|2-----1-------------|10' -> invalid "first number 2
#:     outside".  7 of 20 echoes scored as answers (the issue saw 18 of 20), now 0 of 20.
#:   chat_s0: 'Only output the final answer.' (19x) -> invalid "no number" (now: the echo reason).
#:   chat_s2_medium '|**+1. 34' -> 1.0, '|**+N. ..' -> "first number N outside" (now: an enumeration, "several
#:     numbers"); chat_s3 -> 0.99999...: as now.
RUN_PATH_OUTCOMES = {
    "chat_s0": {"no number": 1, ECHO_REASON: 19},
    "chat_s1_long": {ECHO_REASON: 20},
    "chat_s2_medium": {"several numbers": 20},
    "chat_s3_short_mt32": {1.0: 20},
}


def _outcome(parsed: Any) -> Any:
    if parsed.action is not None:
        return round(float(parsed.action), 6)
    error = str(parsed.error)
    return next(key for key in (ECHO_REASON, "no number", "outside", "several numbers") if key in error)


def test_smollm2s_echoes_on_the_run_path_are_invalid_with_the_echo_reason() -> None:
    """The fixture's ``run_path``: SmolLM2-135M through ``cogtestbed run magnitude`` (chat, the
    experiment's 8 tokens and newline stop), as issue 75's user ran it.  Every echoed picture is invalid
    with the echo reason, read bare or with the prompt shown; the echoed instruction needs the prompt
    (bare, it is a sentence without a number).  No labelled answer followed an echo on this path (the
    adversarial ``|----0---|\\nAnswer: 0.3`` in :data:`MARKER` holds that rule)."""
    runs = json.loads(FIXTURE.read_text())["run_path"]["runs"]
    assert [run["name"] for run in runs] == list(RUN_PATH_OUTCOMES)
    for run in runs:
        assert run["mode"] == "chat" and "cogtestbed run magnitude --llm hf:smollm2-135m" in run["command"]
        seen: Counter[Any] = Counter()
        for row in run["answers"]:
            text = row["raw_response"]
            parsed = parse_magnitude(text, "marker-location", (run["system"], row["shown"]))
            seen[_outcome(parsed)] += 1
            if text.startswith("|") and "---" in text:  # an echoed picture: no number, even bare
                assert parse_magnitude(text, "marker-location").error == parsed.error, text
                assert str(parsed.error).startswith(ECHO_REASON), parsed.error
            if text.strip() == "Only output the final answer.":
                assert parsed.error == f"{ECHO_REASON} ('Only output the final answer.')"
        assert dict(seen) == RUN_PATH_OUTCOMES[run["name"]], (run["name"], seen)


# ----------------------------------------------------------------------------- collider
def test_collider_ratings() -> None:
    env = get_experiment("collider").env_cls()
    env.reset(seed=0)
    prompt = env.render_prompt()
    assert "0 means completely unlikely" in prompt
    for text, expected in [
        ("75", 75.0), (" 72.5%", 72.5), ("Answer: 65", 65.0),
        ("On a scale from 0 to 100, my answer: 80", 80.0),                  # labelled after the prompt's numbers
        ("0 means completely unlikely and 100 means completely likely.", f"!{ECHO_REASON}"),
        ("0 means completely unlikely.", f"!{ECHO_REASON}"),            # was read as a rating of 0
        ("0 means completely unlikely.\n70", 70.0),
        ("----75", 75.0), ("- 75", 75.0), ("-5", "!outside [0, 100]"),
        ("I'd say 60 or 70", "!several numbers"), ("0,5", "!decimal comma"), ("1,000", "!decimal comma"),
    ]:
        parsed = env.parse(text)
        if isinstance(expected, float):
            assert parsed.error is None and float(parsed.action) == expected, (text, parsed)
        else:
            check_parsed(parsed, expected)
    assert parse_number("0 means completely unlikely.") == (0.0, None)  # without the prompt: no echo known


# ----------------------------------------------------------------------------- choices
def _env(name: str, seed: int = 0) -> Any:
    env = get_experiment(name).env_cls()
    env.reset(seed=seed)
    return env


def test_bart_and_temporal_discounting_options() -> None:
    bart = _env("bart")
    skip, inflate = bart.option_numbers()
    question = bart.render_prompt().rsplit("Option", 2)
    echo = f" {skip} for 'skip' or Option {inflate} for 'inflate')"
    assert echo.strip() in bart.render_prompt() and question
    for text, expected in [(f" {inflate}", 1), (f" {skip}.", 0), (f"{inflate} because", 1),
                           (echo, f"!{ECHO_REASON}"), (f"-- {inflate}", 1), ("3", "!no option")]:
        check_parsed(bart.parse(text), expected)
    disc = _env("temporal-discounting")
    prompt = disc.render_prompt()
    options = [line.strip(" -") for line in prompt.splitlines() if line.strip().startswith("- Option")]
    for text, expected in [(" 1", 0), (" 2.", 1), ("I prefer option 2.", 1), (options[0], 0),  # one restated option
                           ("\n".join(options), f"!{ECHO_REASON}"), ("12 months", "!no option")]:
        check_parsed(disc.parse(text), expected)


def test_machine_letters_of_the_bandits() -> None:
    horizon = _env("horizon")
    history = [line.strip(" -") for line in horizon.render_prompt().splitlines() if "delivered" in line]
    for text, expected in [(" F", 0), (" J.", 1), ("Machine J", 1), ("\n".join(history[:2]), f"!{ECHO_REASON}"),
                           ("Machine F or Machine J", "!ambiguous"), (" 48", "!no machine letter")]:
        check_parsed(horizon.parse(text), expected)
    inst = _env("instrumental-learning")
    offered = inst.offered_letters()
    prompt = inst.render_prompt()
    ask = prompt[prompt.index("Which machine"):prompt.index("?")]
    arms = {inst.parse(f" {offered[0]}.").action, inst.parse(f"Machine {offered[1]}").action}
    assert arms == {0, 1}  # the arm index of each offered machine in this casino
    for text, expected in [(ask, f"!{ECHO_REASON}"), ("Machine Z", "!is not offered")]:
        check_parsed(inst.parse(text), expected)
    restless = _env("restless-bandit")
    ask = "Which machine do you choose between machine F and J?"
    assert ask in restless.render_prompt()
    for text, expected in [(" F", 0), (" J", 1), (ask, f"!{ECHO_REASON}")]:
        check_parsed(restless.parse(text), expected)
    for text, expected in [("65", 0.65), ("0.65", 0.65), ("5.", 0.5), ("-65", "!no confidence digits"),
                           ("--- 65", 0.65), ("65%", 0.65)]:  # a dash run is no sign, as in every parser
        check_parsed(parse_decimal_digits(text, "confidence"), expected)


def test_letters_of_two_step_risky_choice_and_revealed_belief() -> None:
    two = _env("two-step")
    ask = "Do you want to take the spaceship to planet X or planet Y?"
    for text, expected in [(" X", 0), (" Y.", 1), ("Planet Y", 1), (ask, f"!{ECHO_REASON}"),
                           ("X or Y", "!ambiguous"), (" Z", "!not offered")]:
        check_parsed(two.parse(text), expected)
    risky = _env("risky-choice")
    a, b = risky.letters()
    both = risky.render_prompt().splitlines()[-1].rsplit(" You choose", 1)[0]
    line = both.split(". ")[0] + "."  # lottery a restated alone: read as choosing it
    for text, expected in [(f"{a}>>", 0), (f" {b}", 1), (f"lottery {b}", 1), (both, f"!{ECHO_REASON}"),
                           (line, 0), (f"{a} or {b}", "!ambiguous")]:
        check_parsed(risky.parse(text), expected)
    rev = get_experiment("revealed-belief").env_cls()
    rev.reset(seed=0)
    while rev.current_channel() != "staa":
        rev.step(0)
    answers = rev.render_prompt().split("Answers: ", 1)[1]
    for text, expected in [("[C]", 2), ("C) because", 2), (answers, f"!{ECHO_REASON}"), ("none", "!no answer")]:
        check_parsed(rev.parse(text), expected)


def test_probabilistic_and_belief_answers() -> None:
    prob = _env("probabilistic-reasoning")
    for text, expected in [("33", 0.33), ("0.33", 0.33), (" 07.", 0.07),
                           ("(Give your probability estimate on the scale from 0 to 1", "!no probability digits"),
                           ("-33", "!no probability digits")]:
        check_parsed(prob.parse(text), expected)
    for text, expected in [("No: 0.30\nYes: 0.70", [0.3, 0.7]),
                           # the format's own example: indistinguishable from a report of 50/50, read as one
                           ("No: 0.50\nYes: 0.50", [0.5, 0.5]),
                           ("No: -0.30\nYes: 0.70", "!line 1"), ("No: 30%\nYes: 70%", "!line 1"),
                           ("No: 0,3\nYes: 0,7", "!line 1"), ("Answer:\nNo: 0.3\nYes: 0.7", "!expected exactly 2")]:
        check_parsed(parse_belief(text), expected)


def test_every_registered_experiment_has_a_corpus_here() -> None:
    """A new experiment's parser joins this corpus (issue 75)."""
    import cogtestbed as ct

    covered = {"magnitude", "collider", "bart", "temporal-discounting", "horizon", "instrumental-learning",
               "restless-bandit", "two-step", "risky-choice", "revealed-belief", "probabilistic-reasoning",
               "belief-coherence"}
    assert set(ct.experiments()) <= covered


def test_a_parser_reads_on_a_bare_environment() -> None:
    """Before a reset there is no prompt to echo: the parser still reads (and refuses) answers."""
    horizon = get_experiment("horizon").env_cls()
    assert horizon.shown_prompt() == "" and horizon.parse(" J").action == 1
    check_parsed(MagnitudeEnv().parse("|----0---|"), f"!{ECHO_REASON}")
    check_parsed(get_experiment("collider").env_cls().parse("Answer: 40"), 40.0)
