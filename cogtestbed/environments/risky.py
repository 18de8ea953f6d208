"""Risky choice between two 50/50 lotteries with gains and losses (Spektor, Kellen, Rieskamp &
Klauer 2024, *Absolute and relative stability of loss aversion across contexts*, JEP:General 153,
454), in the wording of its Psych-201 transcript (``spektor2024lossaversion/generate_prompts.py``).

**Trials.**  Each trial offers two lotteries, each with two outcomes of probability ½; the subject
says which it prefers.  No outcome is shown (one choice was played out for a bonus after the
experiment, as the instructions say).  A session is one *context*: a set of lottery pairs shown in
a random order.  Spektor et al. ran three experiments; the default design is the lottery sets of
their Experiment 2 as its Psych-201 transcript records them (185 participants, 2 sessions of 49
mixed-lottery pairs: :data:`SPEKTOR_EXP2_CONTEXTS`), one context per session, the order of the two
contexts counterbalanced across subjects as in the data (92 and 93 participants).

**What the transcript fixes and what we chose.**  From the generator: the instructions, the
sentence of each trial, the two lottery names drawn without replacement from A–Z per participant,
the "Session k:" headings.  Defaults chosen by cogtestbed, not from the paper: which lottery is
named first and the order of each lottery's two outcomes are drawn at random on every trial
(:data:`RANDOMISE_SIDES`; Experiment 2's transcript always names the narrower lottery first and
its gain first, Experiments 1 and 3 vary both); a trial's prompt holds the instructions and that
trial only (:data:`PROMPT_HISTORY`), not every earlier trial with its choice as the transcript of a
whole session does — a participant saw one trial at a time, with no feedback.

**Prompt.**  Form 0 is the transcript's text up to the choice cue: the instructions, "The
lotteries' names are S and Q.", a blank line, "Session 1:" and the trial's sentence ending
``"You choose <<"``; the answer continues it (``"Q>>."`` in the transcript).

Trial-table stimulus columns: ``x1``, ``x2`` (first-named lottery's outcomes, in the order
stated), ``y1``, ``y2`` (second-named lottery's), ``letter0``, ``letter1`` (the names), ``context``
(index of the design's lottery set) and ``session`` (0-based; the prompt says "Session 1").
``action`` 0 = the first-named lottery; ``reward`` = the expected value of the chosen lottery
(:mod:`cogtestbed.tables.risky`).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import Field, field_validator, model_validator

from cogtestbed.environments.adaptive import DESIGN_COLUMN, AdaptiveFields, chooser_for, is_adaptive
from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import cut_new_turn, echo_of_prompt, normalize_numerals, parse_option_letter
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.risky import EXPERIMENT, OUTCOME_COLUMNS, SCHEMA
from cogtestbed.trials import Column, finish_table, outcome_columns, strings

#: Lottery names: the generator draws two distinct capitals (``randomized_choice_options``: chr 65–90).
LETTERS = string.ascii_uppercase
#: Psych-201's choice cue: the transcript marks each choice ``<<Q>>``; a prompt ends with the cue.
CHOICE_CUE = "<<"
#: Default chosen by cogtestbed, not from the paper: the side (named first) of each lottery and the
#: order of its two outcomes are drawn at random on every trial (see the module docstring).
RANDOMISE_SIDES = True
#: Default chosen by cogtestbed, not from the paper: a trial's prompt holds no earlier trial.
PROMPT_HISTORY = False
#: Largest outcome magnitude a design may state (keeps every number printable as written).
MAX_OUTCOME = 1e6

INSTRUCTIONS = (
    "Dear participant,\n"
    "In this experiment, we want to get to know your preferences.\n"
    "In each trial, you will be shown two 50%-50% lotteries.\n"
    "Each lottery has two outcomes, each occurring with 50% chance (e.g., like flipping a coin).\n"
    "In each trial, your task is to indicate which of the two lotteries you prefer (even if you dislike both "
    "lotteries, there should be one you find preferable).\n"
    "Note there are no right or wrong responses here. We simply want to get to know your preferences.\n"
    "You will get a bonus payment that depends on the choices that you make.\n"
    "At the end of the experiment, one of your choices will be selected at random and the decision that you made "
    "will be played out for the bonus payment."
)

Pair = tuple[float, float, float, float]

#: Spektor et al. (2024) Experiment 2's two lottery sets as its Psych-201 transcript records them
#: (``spektor2024lossaversion/exp2.csv``): each pair (a1, a2, b1, b2) is lottery A's outcomes and
#: lottery B's; every lottery is mixed.  Context 0 spans losses to −64 and gains to 32, context 1
#: gains to 64 and losses to −32; 15 pairs of symmetric lotteries (−x, x) appear in both.
SPEKTOR_EXP2_CONTEXTS: tuple[tuple[Pair, ...], ...] = (
    ((6, -60, 10, -64), (10, -60, 14, -64), (26, -60, 30, -64), (6, -56, 12, -64), (14, -56, 22, -64),
     (14, -56, 18, -60), (6, -52, 10, -56), (8, -52, 6, -56), (18, -52, 26, -60), (22, -52, 26, -56),
     (10, -48, 26, -64), (14, -48, 30, -64), (18, -48, 30, -60), (26, -48, 30, -52), (6, -44, 10, -48),
     (8, -44, 24, -60), (8, -44, 8, -48), (18, -44, 30, -56), (10, -40, 22, -52), (16, -40, 20, -44),
     (18, -40, 30, -52), (6, -36, 18, -48), (10, -36, 14, -40), (18, -36, 22, -40), (22, -36, 26, -40),
     (26, -36, 32, -44), (22, -28, 30, -36), (28, -28, 32, -32), (8, -24, 28, -44), (16, -24, 20, -28),
     (24, -24, 32, -32), (24, -24, 28, -28), (6, -20, 22, -36), (12, -20, 24, -32), (20, -20, 32, -32),
     (20, -20, 28, -28), (20, -20, 24, -24), (8, -16, 32, -40), (16, -16, 32, -32), (16, -16, 28, -28),
     (16, -16, 24, -24), (16, -16, 20, -20), (8, -12, 28, -32), (12, -12, 32, -32), (12, -12, 28, -28),
     (12, -12, 24, -24), (12, -12, 20, -20), (12, -12, 16, -16), (14, -12, 14, -16)),
    ((28, -28, 32, -32), (36, -26, 44, -32), (48, -26, 52, -30), (60, -26, 64, -30), (24, -24, 32, -32),
     (24, -24, 28, -28), (28, -22, 36, -30), (36, -22, 40, -26), (52, -22, 56, -26), (20, -20, 32, -32),
     (20, -20, 28, -28), (20, -20, 24, -24), (36, -18, 40, -22), (40, -18, 52, -30), (44, -18, 56, -30),
     (48, -18, 60, -30), (52, -18, 60, -26), (16, -16, 32, -32), (16, -16, 28, -28), (16, -16, 24, -24),
     (16, -16, 20, -20), (24, -16, 28, -20), (40, -16, 44, -20), (12, -14, 16, -14), (48, -14, 64, -30),
     (56, -14, 64, -22), (56, -14, 60, -18), (12, -12, 32, -32), (12, -12, 28, -28), (12, -12, 24, -24),
     (12, -12, 20, -20), (12, -12, 16, -16), (20, -12, 32, -24), (36, -10, 40, -14), (40, -10, 52, -22),
     (48, -10, 64, -26), (60, -10, 64, -14), (12, -8, 32, -28), (16, -8, 40, -32), (24, -8, 44, -28),
     (44, -8, 60, -24), (44, -8, 48, -8), (52, -8, 56, -6), (20, -6, 36, -22), (36, -6, 48, -18),
     (44, -6, 48, -10), (52, -6, 56, -10), (56, -6, 64, -12), (60, -6, 64, -10)),
)


def format_outcome(value: float) -> str:
    """An outcome as the transcript writes it: a whole number without decimals (``-9``), else as
    Python prints the float."""
    v = float(value)
    return str(int(v)) if v.is_integer() else repr(v)


def _check_pair(pair: Pair) -> None:
    if len(pair) != 4 or any(not math.isfinite(x) or abs(x) > MAX_OUTCOME for x in pair):
        raise InputError(f"a lottery pair is four finite outcomes of magnitude <= {MAX_OUTCOME:g}, got {pair!r}")


class RiskyDesign(Design, AdaptiveFields):
    """Design of the task; defaults: Spektor et al. (2024) Experiment 2 (see the module docstring).

    ``adaptive`` / ``trials``: one session of ``trials`` pairs from :func:`adaptive_pairs`
    (the contexts' distinct pairs), each chosen for information on the named prospect-theory
    parameters; the chosen pair is shown as declared (lottery a named first, outcomes in order: no
    side randomisation) in session 1."""

    #: Lottery sets, one per session; each pair (a1, a2, b1, b2).
    contexts: tuple[tuple[tuple[float, float, float, float], ...], ...] = SPEKTOR_EXP2_CONTEXTS
    #: Passes through the context's pairs in each session, each pass in a fresh random order (1:
    #: each of Experiment 2's 49 pairs once per session, as in the experiment).
    repetitions: int = Field(1, ge=1, le=100)
    #: The order of the contexts drawn per subject (Spektor et al. counterbalanced it).
    counterbalance: bool = True
    randomise_sides: bool = RANDOMISE_SIDES

    @field_validator("contexts")
    @classmethod
    def _contexts(cls, v: tuple[tuple[Pair, ...], ...]) -> tuple[tuple[Pair, ...], ...]:
        if not v or any(not c for c in v):
            raise InputError("contexts must hold at least one non-empty set of lottery pairs")
        if len({len(c) for c in v}) > 1:
            raise InputError(f"every context must hold as many pairs (one session each), got {[len(c) for c in v]}")
        for c in v:
            for pair in c:
                _check_pair(pair)
        return v

    @model_validator(mode="after")
    def _adaptive_length(self) -> RiskyDesign:
        if bool(self.adaptive) != (self.trials > 0):
            raise InputError("an adaptive session needs both adaptive parameters and trials >= 1 "
                             f"(got adaptive={list(self.adaptive)}, trials={self.trials})")
        return self

    @property
    def n_sessions(self) -> int:
        return len(self.contexts)

    @property
    def trials_per_session(self) -> int:
        return self.repetitions * len(self.contexts[0])

    @property
    def n_trials(self) -> int:
        return self.trials if self.adaptive else self.n_sessions * self.trials_per_session


def adaptive_pairs(design: RiskyDesign) -> tuple[tuple[Pair, ...], tuple[int, ...]]:
    """The candidate pairs of an adaptive session: every distinct pair of the design's contexts, in
    order of first appearance, and the context each first appears in."""
    pairs: dict[Pair, int] = {}
    for c, ctx in enumerate(design.contexts):
        for pair in ctx:
            pairs.setdefault(tuple(float(x) for x in pair), c)  # type: ignore[arg-type]
    return tuple(pairs), tuple(pairs.values())


@dataclass(frozen=True)
class RiskySessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    shown: np.ndarray  # (N, T, 4) float64: x1, x2, y1, y2 as the prompt states them
    context: np.ndarray  # (N, T) int64: the lottery set of each trial's session
    session: np.ndarray  # (N, T) int64: 0-based session of each trial
    letters: np.ndarray  # (N, 2) '<U1': names of the first- and second-named lottery


def _pair_orders(n: int, n_pairs: int, passes: int, rng: np.random.Generator) -> np.ndarray:
    """(n, passes · n_pairs) pair indices: ``passes`` fresh random permutations of ``n_pairs`` pairs."""
    keys = rng.random((n, passes, n_pairs))
    return keys.argsort(axis=2, kind="stable").reshape(n, passes * n_pairs)


def draw_sessions(design: RiskyDesign, n: int, rng: np.random.Generator) -> RiskySessions:
    """Letters, context order, trial order, sides and outcome orders for ``n`` sessions, each kind
    for all subjects at once (every draw is made whatever the design's flags)."""
    letters = np.array(list(LETTERS))[rng.random((n, len(LETTERS))).argsort(axis=1, kind="stable")[:, :2]]
    n_ctx, k = design.n_sessions, design.trials_per_session
    order = rng.random((n, n_ctx)).argsort(axis=1, kind="stable")
    if not design.counterbalance:
        order = np.broadcast_to(np.arange(n_ctx), (n, n_ctx)).copy()
    pairs = np.empty((n, n_ctx, k, 4))
    for s in range(n_ctx):
        for c, ctx in enumerate(design.contexts):
            table = np.asarray(ctx, dtype=np.float64)
            drawn = table[_pair_orders(n, len(ctx), design.repetitions, rng)]
            here = order[:, s] == c
            pairs[here, s] = drawn[here]
    swap = rng.random((n, n_ctx, k)) < 0.5
    flip = rng.random((n, n_ctx, k, 2)) < 0.5
    if not design.randomise_sides:
        swap[:], flip[:] = False, False
    a = np.where(flip[..., :1], pairs[..., 1::-1], pairs[..., 0:2])
    b = np.where(flip[..., 1:], pairs[..., 3:1:-1], pairs[..., 2:4])
    shown = np.concatenate([np.where(swap[..., None], b, a), np.where(swap[..., None], a, b)], axis=-1)
    t = n_ctx * k
    context = np.repeat(order, k, axis=1)
    session = np.broadcast_to(np.repeat(np.arange(n_ctx, dtype=np.int64), k), (n, t)).copy()
    return RiskySessions(shown=shown.reshape(n, t, 4), context=context.astype(np.int64), session=session,
                         letters=letters)


def trial_sentence(letters: tuple[str, str], outcomes: np.ndarray) -> str:
    """The transcript's sentence of one trial, up to the choice cue."""
    o = [format_outcome(x) for x in outcomes]
    return (f"The outcomes of lottery {letters[0]} are {o[0]} with 50% chance and {o[1]} with 50% chance. "
            f"The outcomes of lottery {letters[1]} are {o[2]} with 50% chance and {o[3]} with 50% chance. "
            f"You choose {CHOICE_CUE}")


#: The answer as the transcript writes it, ``Q>>``, optionally inside a new ``<<``.
_CUED = re.compile(r"^\s*(?:<<\s*)?([A-Za-z])\s*>>")
_NAMED = re.compile(r"lottery\s+([A-Z])\b", re.IGNORECASE)


def parse_lottery(text: str | None, letters: tuple[str, str]) -> ParseResult:
    """Read the chosen lottery: the transcript's ``"Q>>"``, ``"lottery Q"`` or one standalone offered
    letter (``"Q"``, ``" Q."``); the action is the letter's index in ``letters`` (0 = named first).
    Never guesses: two offered letters, none, or one not offered fail with the reason."""
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    text = normalize_numerals(cut_new_turn(text))
    cued = _CUED.match(text)
    named = {m.upper() for m in _NAMED.findall(text)}
    if cued is not None:
        named = {cued.group(1).upper()}
    if named:
        if len(named) > 1:
            return ParseResult.failure(f"ambiguous answer naming lotteries {', '.join(sorted(named))}")
        letter = named.pop()
        if letter not in letters:
            return ParseResult.failure(f"lottery {letter} is not offered (expected one of {', '.join(letters)})")
        return ParseResult.success(letters.index(letter))
    return parse_option_letter(text, letters, "lottery")


# -- prompt forms (cogtestbed.environments.forms): form 0 is the Psych-201 transcript's wording; the
# rest are this project's, with every outcome, name, probability and the choice cue kept.
_INSTRUCTIONS = PromptForm(1, "paraphrase", "ours: the instructions reworded", replacements=(
    ("In this experiment, we want to get to know your preferences.\n",
     "This experiment is about what you prefer.\n"),
    ("In each trial, you will be shown two 50%-50% lotteries.\n",
     "On every trial you will see two lotteries, each a 50%-50% gamble.\n"),
    ("In each trial, your task is to indicate which of the two lotteries you prefer (even if you dislike both "
     "lotteries, there should be one you find preferable).\n",
     "Your task on every trial is to say which of the two lotteries you prefer (if you like neither, pick the "
     "one you dislike less).\n"),
))
_ORDER = PromptForm(2, "option-order", "ours: the second-named lottery described first (each keeps its name)",
                    patterns=((r"(The outcomes of lottery \w are -?[\d.]+ with 50% chance and -?[\d.]+ with 50% "
                               r"chance\.) (The outcomes of lottery \w are -?[\d.]+ with 50% chance and -?[\d.]+ "
                               r"with 50% chance\.)", r"\2 \1"),))
_SENTENCE = PromptForm(3, "paraphrase", "ours: each lottery's sentence reworded", patterns=(
    (r"The outcomes of lottery (\w) are (-?[\d.]+) with 50% chance and (-?[\d.]+) with 50% chance\.",
     r"Lottery \1 pays \2 with 50% chance or \3 with 50% chance."),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _INSTRUCTIONS, _ORDER, _SENTENCE, "ours: instructions and lottery sentences reworded, the second lottery "
    "described first (forms 1-3)")


class RiskyChoiceEnv(TextEnv[RiskyDesign, RiskySessions]):
    """Choice between two 50/50 lotteries (see module docstring).

    Observation: ``trial`` (0-based), ``outcomes`` (x1, x2, y1, y2 as stated) and ``prompt``.
    Action: 0 = the lottery named first, 1 = the second.  ``info`` holds both lotteries' expected
    values.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: One-shot choices: no feedback, no adaptive design, so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = RiskyDesign
    #: The transcript's choice cue: the answer continues "You choose <<".
    answer_prefix: ClassVar[str] = CHOICE_CUE
    cover_story_note: ClassVar[str | None] = "the transcript tells no story: lotteries are stated as outcomes"

    def __init__(self, design: RiskyDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        d = self.design
        self.observation_space = spaces.Dict({
            "trial": spaces.Discrete(d.n_trials + 1),
            "outcomes": spaces.Box(-MAX_OUTCOME, MAX_OUTCOME, (4,), dtype=np.float64),
            "prompt": self.prompt_space(len(INSTRUCTIONS) + 400),
        })
        self.declare_phases(Phase("choice", spaces.Discrete(2), self.parse_answer))

    @classmethod
    def sample_sessions(cls, design: RiskyDesign, n: int, rng: np.random.Generator) -> RiskySessions:
        """See :func:`draw_sessions`."""
        return draw_sessions(design, n, rng)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> RiskySessions:
        assert self.session is not None
        return self.session

    def _start(self) -> None:
        """Nothing to prepare for a one-shot prompt; an adaptive session gets its chooser."""
        self._pairs: tuple[Pair, ...] = ()
        if is_adaptive(self.design):
            self._pairs = adaptive_pairs(self.design)[0]
            self._chooser: Any = chooser_for(EXPERIMENT, self.design)
            self.outcomes.extra[DESIGN_COLUMN] = np.full((1, self.design.n_trials), -1, dtype=np.int64)
            self._code = self._chooser.choose()

    def _record(self, t: int, action: Any, reward: float) -> None:
        """An adaptive session learns from a valid answer and chooses the next pair (an invalid one
        teaches nothing: the same posterior chooses again)."""
        if not self._pairs:
            return
        self.outcomes.extra[DESIGN_COLUMN][0, t] = self._code
        if not self._is_no_action(action):
            self._chooser.update(self._code, int(action))
        if t + 1 < self.design.n_trials:
            self._code = self._chooser.choose()

    def _cur(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    def _outcomes(self) -> np.ndarray:
        if getattr(self, "_pairs", ()):
            return np.asarray(self._pairs[self._code], dtype=np.float64)
        return np.asarray(self._s.shown[0, self._cur()], dtype=np.float64)

    def _play(self, action: Any) -> float:
        """The expected value of the chosen lottery (no outcome is shown)."""
        o = self._outcomes()
        return float(0.5 * (o[0] + o[1]) if int(action) == 0 else 0.5 * (o[2] + o[3]))

    def _observation(self) -> dict[str, Any]:
        done = self.t >= self.design.n_trials
        return {"trial": self.t, "outcomes": self._outcomes(),
                "prompt": "(session finished)" if done else self.render_prompt()}

    def _info(self) -> dict[str, Any]:
        o = self._outcomes()
        return {"trial": self.t, "ev": (0.5 * (o[0] + o[1]), 0.5 * (o[2] + o[3]))}

    # -- rendering and parsing -------------------------------------------------------------
    def letters(self) -> tuple[str, str]:
        """Names of the first- and second-named lottery."""
        a, b = (str(x) for x in self._s.letters[0])
        return a, b

    def render_prompt(self) -> str:
        """Instructions, the names, the session heading and the trial's sentence up to ``<<``."""
        a, b = self.letters()
        session = 1 if getattr(self, "_pairs", ()) else int(self._s.session[0, self._cur()]) + 1
        return (f"{INSTRUCTIONS}\nThe lotteries' names are {a} and {b}.\n\nSession {session}:\n"
                + trial_sentence((a, b), self._outcomes()))

    def parse_answer(self, text: str) -> ParseResult:
        """See :func:`parse_lottery`; an echo of the lotteries is no answer (:func:`echo_of_prompt`)."""
        return echo_of_prompt(text, self.shown_prompt(), self.letters()) or parse_lottery(text, self.letters())

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: RiskyDesign, sessions: RiskySessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial in the schema of :mod:`cogtestbed.tables.risky` (an adaptive session's:
        the chosen pairs, their ``design_index`` and the context each first appears in)."""
        n, t = sessions.context.shape
        shown, context, session = sessions.shown, sessions.context, sessions.session
        chosen = outcomes.extra.get(DESIGN_COLUMN)
        if is_adaptive(design):
            if chosen is None:
                raise InputError("outcomes of an adaptive design carry the pairs chosen (play it step by step)")
            pairs, first = adaptive_pairs(design)
            t = chosen.shape[1]
            shown = np.asarray(pairs, dtype=np.float64)[chosen]
            context = np.asarray(first, dtype=np.int64)[chosen]
            session = np.zeros((n, t), dtype=np.int64)
        codes = np.searchsorted(np.array(list(LETTERS)), sessions.letters)  # (n, 2)
        stim: dict[str, Column] = {"session": session,
                                   "trial": np.broadcast_to(np.arange(t, dtype=np.int64), (n, t))}
        for j, name in enumerate(OUTCOME_COLUMNS):
            stim[name] = shown[..., j]
        stim["letter0"] = strings(np.repeat(codes[:, :1], t, axis=1), list(LETTERS))
        stim["letter1"] = strings(np.repeat(codes[:, 1:], t, axis=1), list(LETTERS))
        stim["context"] = context
        if is_adaptive(design):
            stim[DESIGN_COLUMN] = chosen
        return finish_table(EXPERIMENT, {**stim, **outcome_columns(outcomes)}, agent=agent, params=params)
