"""Temporal discounting (Ruggeri et al. 2022) as run by CogBench
(``Experiments/TemporalDiscounting/query.py``).

Not procedurally generated: every session asks the same staircase, so CogBench runs it once per
LLM.  Three baselines are asked in turn — gain ``B`` (500), gain ``10·B`` (5000), loss ``B`` — each
a staircase of at most three binary questions "Option 1: <amount> now" vs "Option 2: <amount ·
factor> in 12 months":

======================  =====================  ========================  ==============
Q1 (factor 1.1)         Q2                     Q3                        baseline score
======================  =====================  ========================  ==============
1 (sooner)              1.2 → 2                —                         3
1                       1.2 → 1                1.5 → 2                   4
1                       1.2 → 1                1.5 → 1                   5
2 (later)               1.02 → 1               —                         2
2                       1.02 → 2               1.01 → 1                  1
2                       1.02 → 2               1.01 → 2                  0
======================  =====================  ========================  ==============

The later amount is ``int(base · factor)`` (Python's truncation, as in the code).  The first
baseline fixes the *max value factor* ``mvf`` (1.01, 1.02, 1.1, 1.2 or 1.5; none when all three
answers were "1").  Unless it is none, four anomaly items follow, each adding 1 to the score when
the subject picks Option 1 (CogBench's flag for the item is 1 when it picks Option 2):

* present bias: ``B`` in 12 months vs ``int(B·mvf)`` in 24 months;
* subadditivity: ``B`` now vs ``int(B·((mvf−1)·2+1))`` in 24 months;
* delay–speedup asymmetry: ``B`` now vs "Wait 12 months for the B dollars but with an additional
  ``int(B·(mvf−1))`` dollars";
* delay–length asymmetry: "Wait 12 months to receive ``int(B·mvf)`` dollars now" vs "Pay
  ``int(B·(mvf−1))`` dollars and receive the ``int(B·mvf)`` dollars gain now" (wording sic).

So a session has 7–13 questions (steps) and a score of 0–19 (at most 15 is reachable: the
anomalies are skipped exactly when the first baseline scores 5).

Prompt: each question is a standalone prompt in the code:
``"\\n\\nQ: What do you prefer between the following two options:\\n - Option 1: Receive 500
dollars now.\\n - Option 2: Receive 550 dollars in 12 months.\\n\\nA: I prefer option"`` (the code's trailing space
dropped, :attr:`TextEnv.answer_prefix`).  The
``"paper"`` variant concatenates the earlier questions and answers, as the paper's examples do.

Invalid answers: CogBench aborts the run (NaN score) when the first question of a baseline does
not parse, treats an unparsable later answer as the branch's other option, and silently
randomises empty answers.  Here any invalid answer ends the session: its score is missing and the
run is reported as incomplete (no answer is ever guessed).

Trial-table stimulus columns (one row per question): ``item`` (question name, e.g.
``gain500_q1``, ``present_bias``), ``block`` (``gain``, ``gain_magnitude``, ``loss``,
``anomaly``), ``option1`` / ``option2`` (the option texts), ``amount1`` / ``delay1`` /
``amount2`` / ``delay2`` (signed dollar amounts, delays in years, as a discounter values them),
``scale`` (the baseline amount).  ``action``: 0 = Option 1, 1 = Option 2.  The four text columns
are ``category`` columns (the question list's wording: one code per row, no per-row string).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import Field, model_validator

from cogtestbed.environments.adaptive import DESIGN_COLUMN, AdaptiveFields, chooser_for, is_adaptive
from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_option_number
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.discounting import (
    ANOMALY_ITEMS,
    BLOCKS,
    EXPERIMENT,
    MAX_QUESTIONS,
    MVF_NONE,
    MVF_VALUES,
    N_BASELINE_CODES,
    NOT_ASKED,
    SCHEMA,
)
from cogtestbed.trials import Column, categories, finish_table, outcome_columns

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
#: Staircase factors: first question, after "1" (sooner), after "1" again; after "2", after "2".
UP_FACTORS = (1.1, 1.2, 1.5)
DOWN_FACTORS = (1.1, 1.02, 1.01)


class DiscountingDesign(Design, AdaptiveFields):
    """Design of the task; defaults are CogBench's released code.  ``adaptive`` / ``trials``:
    a session of ``trials`` questions from :func:`adaptive_questions`, each chosen for information on
    the named parameters of the hyperbolic model, instead of the staircase."""

    base_pay: int = Field(default=500, ge=10, le=10**7)
    magnitude_factor: int = Field(default=10, ge=2, le=1000)
    prompt_variant: Literal["code", "paper"] = "code"

    @model_validator(mode="after")
    def _adaptive_length(self) -> DiscountingDesign:
        if bool(self.adaptive) != (self.trials > 0):
            raise InputError("an adaptive session needs both adaptive parameters and trials >= 1 "
                             f"(got adaptive={list(self.adaptive)}, trials={self.trials})")
        return self

    @property
    def n_trials(self) -> int:
        return self.trials if self.adaptive else MAX_QUESTIONS

    @classmethod
    def paper(cls, **overrides: Any) -> DiscountingDesign:
        """Earlier questions and answers concatenated into each prompt (the paper's examples)."""
        return cls(prompt_variant="paper", **overrides)


@dataclass(frozen=True)
class Question:
    """One binary question: option texts and how a discounter values each option."""

    item: str
    block: str
    option1: str
    option2: str
    amount1: float
    delay1: float
    amount2: float
    delay2: float
    scale: float


@dataclass(frozen=True)
class DiscountingSessions(Sessions):
    """The task has no random parts; ``run`` only numbers the sessions."""

    run: np.ndarray  # (N,) int64


def baseline_question(design: DiscountingDesign, block: int, level: int, down: bool) -> Question:
    """Question ``level`` (0–2) of baseline ``block`` on the up (answered 1) or down branch."""
    base = design.base_pay * (design.magnitude_factor if block == 1 else 1)
    factor = (DOWN_FACTORS if down else UP_FACTORS)[level]
    later = int(base * factor)
    if block == 2:
        o1, o2 = f"Pay {base} dollars now.", f"Pay {later} dollars in 12 months."
        a1, a2 = -float(base), -float(later)
    else:
        o1, o2 = f"Receive {base} dollars now.", f"Receive {later} dollars in 12 months."
        a1, a2 = float(base), float(later)
    name = f"{BLOCKS[block]}_q{level + 1}{'_down' if down and level else ''}"
    return Question(name, BLOCKS[block], o1, o2, a1, 0.0, a2, 1.0, float(base))


def anomaly_question(design: DiscountingDesign, item: int, mvf_code: int) -> Question:
    """Anomaly item ``item`` (0–3) for max value factor ``MVF_VALUES[mvf_code]``.

    Amounts use the code's exact expressions (``int(base * ...)``), so e.g. ``mvf = 1.2`` gives an
    additional ``int(500 * (1.2 - 1)) = 99`` dollars.  The delay–length item's Option 2 ("pay P
    and receive G now") is valued as the net ``G − P`` now.
    """
    b = design.base_pay
    mvf = MVF_VALUES[mvf_code]
    g = int(b * mvf)
    if item == 0:
        return Question("present_bias", "anomaly", f"Receive {b} dollars in 12 months.",
                        f"Receive {g} dollars in 24 months.", b, 1.0, g, 2.0, b)
    if item == 1:
        s = int(b * ((mvf - 1) * 2 + 1))
        return Question("subadditivity", "anomaly", f"Receive {b} dollars now.",
                        f"Receive {s} dollars in 24 months.", b, 0.0, s, 2.0, b)
    extra = int(b * (mvf - 1))
    if item == 2:
        return Question("delay_speedup_asymmetry", "anomaly", f"Receive {b} dollars now.",
                        f"Wait 12 months for the {b} dollars but with an additional {extra} dollars.",
                        b, 0.0, b + extra, 1.0, b)
    return Question("delay_length_asymmetry", "anomaly", f"Wait 12 months to receive {g} dollars now.",
                    f"Pay {extra} dollars and receive the {g} dollars gain now.",
                    g, 1.0, g - extra, 0.0, b)


#: Adaptive design space (this project's, not CogBench's): the staircase's question "B dollars
#: now" vs "int(B·f) dollars in m months" over these later/sooner factors f and delays m (months).  The
#: factors reach the indifference point 1 + k·D of every k the prior spans (k ≈ 0.002-100 per year).
ADAPTIVE_FACTORS = (1.01, 1.02, 1.05, 1.1, 1.15, 1.2, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 7.5, 10.0)
ADAPTIVE_MONTHS = (1, 3, 6, 12, 24, 60)
ADAPTIVE_BLOCK = "adaptive"  # = cogtestbed.inference.discounting.ADAPTIVE_BLOCK


def adaptive_questions(design: DiscountingDesign) -> list[Question]:
    """The candidate questions of an adaptive session, code = index (factor-major): CogBench's gain
    question with the later amount and the delay varied (:data:`ADAPTIVE_FACTORS` × :data:`ADAPTIVE_MONTHS`)."""
    b = design.base_pay
    out: list[Question] = []
    for f in ADAPTIVE_FACTORS:
        for m in ADAPTIVE_MONTHS:
            later = int(b * f)
            when = f"in {m} month{'s' if m != 1 else ''}"
            out.append(Question(f"adaptive_{len(out)}", ADAPTIVE_BLOCK, f"Receive {b} dollars now.",
                                f"Receive {later} dollars {when}.", float(b), 0.0, float(later), m / 12.0,
                                float(b)))
    return out


@dataclass
class StaircaseState:
    """Where a session is in the question tree (pure bookkeeping, shared by env and scorer)."""

    block: int = 0
    level: int = 0
    down: bool = False
    score: int = 0
    mvf_code: int = -1
    anomaly: int = -1  # −1: still in the baselines; 0–3: anomaly item; 4: done
    block_scores: list[int] | None = None
    flags: list[int] | None = None

    def __post_init__(self) -> None:
        self.block_scores = [] if self.block_scores is None else self.block_scores
        self.flags = [0, 0, 0, 0] if self.flags is None else self.flags

    @property
    def done(self) -> bool:
        return self.anomaly >= 4

    def question(self, design: DiscountingDesign) -> Question:
        if self.anomaly >= 0:
            return anomaly_question(design, self.anomaly, self.mvf_code)
        return baseline_question(design, self.block, self.level, self.down)

    def answer(self, choice: int) -> None:
        """Advance with ``choice`` (0 = Option 1, 1 = Option 2), following the code's tree."""
        assert self.block_scores is not None and self.flags is not None
        if self.anomaly >= 0:
            if choice == 0:
                self.score += 1
            else:
                self.flags[self.anomaly] = 1
            self.anomaly += 1
            return
        finished, bscore, mvf = _baseline_step(self.level, self.down, choice)
        if not finished:
            self.level, self.down = self.level + 1, (choice == 1 if self.level == 0 else self.down)
            return
        self.block_scores.append(bscore)
        self.score += bscore
        if self.block == 0:
            self.mvf_code = mvf
        self.block, self.level, self.down = self.block + 1, 0, False
        if self.block == 3:
            self.anomaly = 4 if self.mvf_code == MVF_NONE else 0


def _baseline_step(level: int, down: bool, choice: int) -> tuple[bool, int, int]:
    """(finished, baseline score, mvf code) after answering question ``level`` of a baseline."""
    if level == 0:
        return False, 0, -1
    if not down:  # Q1 answered 1 (sooner)
        if level == 1:
            return (True, 3, 3) if choice == 1 else (False, 0, -1)
        return (True, 4, 4) if choice == 1 else (True, 5, MVF_NONE)
    if level == 1:
        return (True, 2, 2) if choice == 0 else (False, 0, -1)
    return (True, 1, 1) if choice == 0 else (True, 0, 0)


#: Question fields that are text / numbers in the trial table.
QUESTION_TEXT_FIELDS = ("item", "block", "option1", "option2")
QUESTION_NUMBER_FIELDS = ("amount1", "delay1", "amount2", "delay2", "scale")
#: ``Outcomes.extra`` key of the codes of the questions asked (a simulation kernel that plays the
#: staircase records them; otherwise the table replays them with :func:`asked_questions`).
QUESTION_CODES = "question"


def question_list(design: DiscountingDesign) -> list[Question]:
    """Every question the staircase can ask, indexed by the codes of :func:`asked_questions`
    (an adaptive design's: :func:`adaptive_questions`)."""
    if is_adaptive(design):
        return adaptive_questions(design)
    baseline = [baseline_question(design, b, level, bool(down)) for b in range(3) for level in range(3)
                for down in range(2)]
    anomalies = [anomaly_question(design, item, m) for item in range(len(ANOMALY_ITEMS))
                 for m in range(len(MVF_VALUES))]
    return baseline + anomalies


@njit(cache=True)
def asked_questions(action: np.ndarray, valid: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Code of the question asked at each step (:data:`NOT_ASKED` after the session ended), by
    replaying :class:`StaircaseState` on the recorded answers (the tree of the module docstring)."""
    n, steps = action.shape
    codes = np.full((n, steps), NOT_ASKED, dtype=np.int64)
    for i in range(n):
        block, level, down, mvf, anomaly = 0, 0, False, -1, -1
        for s in range(steps):
            if not played[i, s] or anomaly >= 4:
                break
            if anomaly >= 0:
                codes[i, s] = N_BASELINE_CODES + 5 * anomaly + mvf
            else:
                codes[i, s] = 6 * block + 2 * level + (1 if down else 0)
            if not valid[i, s]:
                break
            choice = action[i, s]
            if anomaly >= 0:
                anomaly += 1
                continue
            finished, _, code = _baseline_step_jit(level, down, choice)
            if not finished:
                down = (choice == 1) if level == 0 else down
                level += 1
                continue
            if block == 0:
                mvf = code
            block, level, down = block + 1, 0, False
            if block == 3:
                anomaly = 4 if mvf == MVF_NONE else 0
    return codes


_baseline_step_jit = njit(cache=True)(_baseline_step)


def score_answers(design: DiscountingDesign, choices: list[int]) -> dict[str, Any]:
    """CogBench's score, anomaly flags and mvf from a complete list of answers (0/1).

    Returns ``score`` NaN (and ``complete`` False) when the answers stop before the end.
    """
    state = StaircaseState()
    for c in choices:
        if state.done:
            break
        state.answer(int(c))
    out: dict[str, Any] = {
        "complete": state.done,
        "score": float(state.score) if state.done else float("nan"),
        "mvf": MVF_VALUES[state.mvf_code] if 0 <= state.mvf_code < MVF_NONE else float("nan"),
        "anomalies_asked": state.done and state.mvf_code != MVF_NONE,
    }
    assert state.flags is not None and state.block_scores is not None
    for name, flag in zip(ANOMALY_ITEMS, state.flags, strict=True):
        out[name] = float(flag) if state.done else float("nan")
    for name, s in zip(BLOCKS, state.block_scores + [None] * 3, strict=False):
        out[f"score_{name}"] = float("nan") if s is None else float(s)
    return out


# -- prompt forms (cogtestbed.environments.forms): form 0 is CogBench's verbatim prompt; the rest
# are this project's rewordings and orders, with every amount, delay, option number and the answer cue kept.
_QUESTION = PromptForm(1, "paraphrase", "ours: the question reworded", replacements=(
    ("What do you prefer between the following two options:", "Which of these two options do you prefer:"),
))
_ORDER = PromptForm(2, "option-order", "ours: Option 2 listed before Option 1 (each keeps its number)",
                    patterns=((r"( - Option 1: [^\n]*)\n( - Option 2: [^\n]*)", r"\2\n\1"),))
_OPTIONS = PromptForm(3, "paraphrase", "ours: the options' wording ('Get ... dollars ...')", patterns=(
    (r"Option (\d): Receive (\d+) dollars", r"Option \1: Get \2 dollars"),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _QUESTION, _ORDER, _OPTIONS, "ours: question and options reworded, Option 2 listed first (forms 1-3)")


class TemporalDiscountingEnv(TextEnv[DiscountingDesign, DiscountingSessions]):
    """CogBench's temporal-discounting staircase (see module docstring).

    Observation: ``question`` (step index), ``amounts`` / ``delays`` (the two options' signed
    amounts and delays in years), ``scale`` (baseline amount) and ``prompt``.  Action: 0 =
    Option 1, 1 = Option 2.  ``info`` holds the running ``score``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: Option 1/2 as 0/1; published summary rows (``item == "summary"``) carry scores, no answer.
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = DiscountingDesign
    #: The paper's "A: I prefer option"; CogBench's code appends
    #: :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`
    #: (a space), dropped here so the prompt ends as the paper prints it.
    answer_prefix: ClassVar[str] = "I prefer option"

    def __init__(self, design: DiscountingDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        big = float(self.design.base_pay * max(self.design.magnitude_factor, max(ADAPTIVE_FACTORS)) * 2)
        self.observation_space = spaces.Dict(
            {
                "question": spaces.Discrete(self.max_steps(self.design) + 1),
                "amounts": spaces.Box(-big, big, (2,), dtype=np.float64),
                "delays": spaces.Box(0.0, max(2.0, max(ADAPTIVE_MONTHS) / 12.0), (2,), dtype=np.float64),
                "scale": spaces.Box(0.0, big, (), dtype=np.float64),
                "prompt": self.prompt_space(300 * (MAX_QUESTIONS + 1)),
            }
        )
        self.declare_phases(Phase("answer", spaces.Discrete(2), self.parse_answer))
        self._state = StaircaseState()
        self._aborted = False
        self._transcript: list[str] = []
        self._space = adaptive_questions(self.design) if is_adaptive(self.design) else []
        self._chooser: Any = None
        self._code = -1

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return design.n_trials

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(
        cls, design: DiscountingDesign, n: int, rng: np.random.Generator
    ) -> DiscountingSessions:
        """No randomness: every session asks the same staircase."""
        return DiscountingSessions(run=np.arange(n, dtype=np.int64))

    # -- dynamics --------------------------------------------------------------------------
    def _start(self) -> None:
        self._state = StaircaseState()
        self._aborted = False
        self._transcript = []
        if self._space:  # adaptive: the chooser names each question; its codes are recorded
            self._chooser = chooser_for(EXPERIMENT, self.design)
            self.outcomes.extra[QUESTION_CODES] = np.full((1, self.max_steps(self.design)), len(self._space),
                                                          dtype=np.int64)
            self._code = self._chooser.choose()

    def _terminated(self) -> bool:
        if self._space:
            return self._aborted or self.t >= self.design.trials
        return self._aborted or self._state.done or self.t >= MAX_QUESTIONS

    def current_question(self) -> Question:
        if self._space:
            return self._space[self._code]
        return self._state.question(self.design)

    def _play(self, action: Any) -> float:
        return 0.0  # the task pays nothing

    def _record(self, t: int, action: Any, reward: float) -> None:
        if self._space:
            self.outcomes.extra[QUESTION_CODES][0, t] = self._code
        if self._is_no_action(action):
            self._aborted = True  # an invalid answer ends the session (see module docstring)
            return
        if self.design.prompt_variant == "paper":
            self._transcript.append(self._question_text() + f"{A_PREFIX} {self.answer_prefix} {int(action) + 1}.")
        if self._space:
            self._chooser.update(self._code, int(action))
            if t + 1 < self.design.trials:
                self._code = self._chooser.choose()
            return
        self._state.answer(int(action))

    def _observation(self) -> dict[str, Any]:
        if self._terminated():
            return {"question": self.t, "amounts": np.zeros(2), "delays": np.zeros(2),
                    "scale": np.asarray(1.0), "prompt": "(session finished)"}
        q = self.current_question()
        return {
            "question": self.t,
            "amounts": np.array([q.amount1, q.amount2]),
            "delays": np.array([q.delay1, q.delay2]),
            "scale": np.asarray(q.scale, dtype=np.float64),
            "prompt": self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        return {"trial": self.t, "score": self._state.score, "aborted": self._aborted}

    # -- rendering and parsing -------------------------------------------------------------
    def _question_text(self) -> str:
        q = self.current_question()
        return (f"{Q_PREFIX} What do you prefer between the following two options:\n"
                f" - Option 1: {q.option1}\n - Option 2: {q.option2}")

    def render_prompt(self) -> str:
        """The exact string CogBench sends (question + answer prefix; no history in the code)."""
        return "".join(self._transcript) + self._question_text() + f"{A_PREFIX} {self.answer_prefix}"


    def parse_answer(self, text: str) -> ParseResult:
        """Read "1" / "2" (after "I prefer option"), e.g. ``" 1"``, ``" 2."``, ``"1 because"``; an echo
        of both options is no answer (:func:`echo_of_prompt`)."""
        return echo_of_prompt(text, self.shown_prompt(), ("1", "2")) or parse_option_number(text)

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: DiscountingDesign, sessions: DiscountingSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per asked question (unasked steps of shorter sessions are dropped)."""
        played = outcomes.played if outcomes.played is not None else outcomes.valid
        codes = outcomes.extra.get(QUESTION_CODES)  # recorded by a kernel that played the staircase
        if is_adaptive(design) and codes is None:
            raise InputError("outcomes of an adaptive design carry the codes of the questions chosen "
                             "(play it step by step)")
        if codes is None:
            codes = asked_questions(np.ascontiguousarray(outcomes.action, dtype=np.int64),
                                    np.ascontiguousarray(outcomes.valid, dtype=bool),
                                    np.ascontiguousarray(played, dtype=bool))
        questions = question_list(design)
        stim: dict[str, Column] = {}
        for c in QUESTION_TEXT_FIELDS:
            stim[c] = categories(codes, (*(getattr(q, c) for q in questions), None))
        for c in QUESTION_NUMBER_FIELDS:
            stim[c] = np.array([*(getattr(q, c) for q in questions), np.nan], dtype=np.float64)[codes]
        if is_adaptive(design):
            stim[DESIGN_COLUMN] = np.asarray(codes, dtype=np.int64)
        return finish_table(EXPERIMENT, {**stim, **outcome_columns(outcomes)}, agent=agent, params=params,
                            keep=played)
