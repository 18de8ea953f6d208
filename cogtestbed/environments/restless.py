"""Restless two-armed bandit with confidence reports (Ershadmanesh et al. 2023), as run by
CogBench (``metacognition-v0``).

Two machines (F = arm 0, J = arm 1); one pays N(60, 8), the other N(40, 8) (sd 8, rounded to two
decimals, shown truncated to whole dollars); the better arm switches at every block boundary,
unannounced.  Released code (Coda-Forno et al. 2024): 4 blocks of fixed lengths [21, 20, 20, 19] = 80
trials, although the prompt says "every 18 to 22 trials"; the ``"paper"`` variant draws each
block length uniformly from 18–22 (the total then varies; the prompt still says 80 as CogBench's).

Every trial is **two steps** (two LLM calls on the same prompt): the choice (answer prefix
``Machine ``), then the confidence that the choice was the better machine (prefix
``Machine {choice} with confidence 0.``, two digits read as 0.XX).  The order in which the two
machine names appear is permuted independently in the instructions and in the question on every
trial.  The history line of a trial shows the reported confidence and the reward.

Invalid answers (CogBench: random choice / confidence 0.0) are recorded with their reason.  An
invalid choice uses up the trial (no confidence step, no history line); an invalid confidence
leaves the trial valid but its confidence missing, and the history shows "0.0" exactly as
CogBench's prompt would.

Accuracy: ``accurate`` = the chosen arm is the better arm on that trial.  CogBench computes it
after the environment has already switched block on a block's last trial (so it scores that trial
against the *next* block's better arm); ``accuracy_rule="cogbench"`` reproduces that quirk.

Trial-table stimulus columns: ``block``, ``block_trial``, ``best_arm``, ``mean0`` / ``mean1``,
``reward0`` / ``reward1`` (pre-drawn), ``confidence`` (NaN if missing), ``confidence_valid``,
``accurate``, ``raw_confidence``, ``confidence_parse_error``.  ``action`` is the arm (CogBench's
``choice``); ``raw_response`` / ``parse_error`` belong to the choice call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import Field, field_validator

from cogtestbed.environments.base import NO_ACTION, Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_decimal_digits, parse_machine
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.restless import EXPERIMENT, SCHEMA
from cogtestbed.trials import Column, finish_table

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
ARMS = ("F", "J")
#: CogBench's default number of runs (paper and code agree).
CODE_RUNS = PAPER_RUNS = 10
CHOICE, CONFIDENCE = 0, 1

CHOICE_SPEC = " Give the answer in the form 'Machine <your choice>'."
CONFIDENCE_SPEC = (
    " Give the answer in the form 'Machine <your choice> with confidence <your confidence>' "
    "(where your confidence of your choice being the best is given on a continuous scale running "
    "from 0 representing 'this was a guess' to 1 representing 'very certain' should be given to "
    "two decimal places)."
)


class RestlessDesign(Design):
    """Design of the restless bandit; defaults are CogBench's released code."""

    means: tuple[float, float] = (40.0, 60.0)
    reward_sd: float = Field(8.0, gt=0.0)
    block_lengths: tuple[int, ...] = (21, 20, 20, 19)
    #: Draw each block length uniformly from this range instead (paper: 18–22); None = fixed.
    random_block_range: tuple[int, int] | None = None
    reward_decimals: int = Field(2, ge=0, le=6)
    accuracy_rule: Literal["correct", "cogbench"] = "correct"

    @field_validator("block_lengths")
    @classmethod
    def _blocks(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(n < 1 for n in v):
            raise InputError("block_lengths must be positive")
        return v

    @field_validator("random_block_range")
    @classmethod
    def _range(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not 1 <= v[0] <= v[1]:
            raise InputError("random_block_range must be (low, high) with 1 <= low <= high")
        return v

    @property
    def n_blocks(self) -> int:
        return len(self.block_lengths)

    @property
    def n_trials(self) -> int:
        """Most trials a session can have."""
        if self.random_block_range is not None:
            return self.n_blocks * self.random_block_range[1]
        return int(sum(self.block_lengths))

    @classmethod
    def paper(cls, **overrides: Any) -> RestlessDesign:
        """Block lengths uniform on 18–22, as the paper and the prompt describe."""
        return cls(random_block_range=(18, 22), **overrides)

    @classmethod
    def cogbench_accuracy(cls, **overrides: Any) -> RestlessDesign:
        """CogBench's accuracy quirk on block-final trials (see module docstring)."""
        return cls(accuracy_rule="cogbench", **overrides)


@dataclass(frozen=True)
class RestlessSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    first_best: np.ndarray  # (N,) int64: better arm in block 0
    block_lengths: np.ndarray  # (N, n_blocks) int64
    rewards: np.ndarray  # (N, T_max, 2) float64, rounded rewards of both arms
    instr_flip: np.ndarray  # (N, T_max) bool: J named first in the instructions
    query_flip: np.ndarray  # (N, T_max) bool: J named first in the question


@njit(cache=True, inline="always")
def _next_block(t: int, b: int, start: int, end: int, lengths: np.ndarray) -> tuple[int, int, int]:
    """(block, its start, its end) of trial ``t`` from those of trial ``t − 1`` (``b``, ``start``, ``end``)
    in a session of block ``lengths``: the step of :func:`block_index` (past the last block, the block
    stays at ``len(lengths)`` and the start at the last block's)."""
    n_blocks = lengths.shape[0]
    while b < n_blocks and t >= end:
        b += 1
        if b < n_blocks:
            start = end
            end += lengths[b]
    return b, start, end


@njit(cache=True, inline="always")
def _better_arm(first_best: np.int64, block: int) -> np.int64:
    """The better arm in ``block``: block 0's ``first_best``, switching at every block end (the
    correct rule of :func:`best_arms`)."""
    return first_best if block % 2 == 0 else 1 - first_best


def draw_blocks(design: RestlessDesign, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the better arm of block 0 (n,), block lengths (n, n_blocks)) of ``n`` sessions, the first draws of
    :meth:`RestlessBanditEnv.sample_sessions`: ``rng.integers`` for the arm, then for the lengths where
    the design draws them (uniform on ``random_block_range``)."""
    first_best = rng.integers(0, 2, size=n).astype(np.int64)
    if design.random_block_range is None:
        fixed = np.asarray(design.block_lengths, dtype=np.int64)
        return first_best, np.broadcast_to(fixed, (n, design.n_blocks)).copy()
    lo, hi = design.random_block_range
    return first_best, rng.integers(lo, hi + 1, size=(n, design.n_blocks)).astype(np.int64)


def block_index(block_lengths: np.ndarray, t_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(block, trial within block) of each of ``t_max`` trials for (N, n_blocks) block lengths.

    ``block`` counts the block ends at or before the trial (past the last block it stays at
    ``n_blocks``); ``within`` is the trial minus the start of its block (the last block's start
    past the end).  One compiled pass over the trials.
    """
    return _block_index(np.ascontiguousarray(block_lengths, dtype=np.int64), t_max)


@njit(cache=True)
def _block_index(block_lengths: np.ndarray, t_max: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    n, n_blocks = block_lengths.shape
    block = np.empty((n, t_max), dtype=np.int64)
    within = np.empty((n, t_max), dtype=np.int64)
    for i in range(n):
        b, start, end = 0, 0, block_lengths[i, 0] if n_blocks else 0
        for t in range(t_max):
            b, start, end = _next_block(t, b, start, end, block_lengths[i])
            block[i, t] = b
            within[i, t] = t - start
    return block, within


def best_arms(first_best: np.ndarray, block: np.ndarray, within: np.ndarray, block_lengths: np.ndarray,
              rule: str) -> np.ndarray:
    """Better arm per trial; ``rule="cogbench"`` scores block-final trials against the next block."""
    best = np.where(block % 2 == 0, first_best[:, None], 1 - first_best[:, None])
    if rule == "cogbench":
        length = np.take_along_axis(block_lengths, np.minimum(block, block_lengths.shape[1] - 1), axis=1)
        best = np.where(within == length - 1, 1 - best, best)
    return best


@njit(cache=True)
def _rounded_rewards(z: np.ndarray, first_best: np.ndarray, block_lengths: np.ndarray, lo_mean: float,
                     hi_mean: float, sd: float, scale: float) -> None:  # pragma: no cover - numba
    """In place: standard normals ``z`` (N, T, 2) become the rewards ``np.round(mean + sd·z, decimals)``,
    ``scale`` = 10^decimals, computed as numpy rounds (``rint((mean + sd·z)·scale) / scale``, the same
    float steps); ``mean`` is ``hi_mean`` on the trial's better arm (block 0: ``first_best``, switching
    at every block end; Ershadmanesh et al. 2023) and ``lo_mean`` on the other."""
    n, t_max, _ = z.shape
    for i in range(n):
        b, start, end = 0, 0, block_lengths[i, 0] if block_lengths.shape[1] else 0
        for t in range(t_max):
            b, start, end = _next_block(t, b, start, end, block_lengths[i])
            best = _better_arm(first_best[i], b)
            for a in range(2):
                mean = hi_mean if a == best else lo_mean
                z[i, t, a] = np.rint((mean + sd * z[i, t, a]) * scale) / scale


# -- prompt forms (cogtestbed.environments.forms): form 0 is the paper's verbatim prompt; the rest
# are this project's rewordings, with every number, letter and the answer cues kept.
_INSTRUCTIONS = PromptForm(1, "paraphrase", "ours: the rules of the casino reworded", replacements=(
    ("You earn $ each time you play on one of these machines with one machine always having a higher average "
     "$ reward.", "Each play on a machine earns you $, and at any time one of the two machines pays more $ on "
     "average."),
    ("However, you are not told about the change of block.", "You will not be told when a block changes."),
))
_GOAL = PromptForm(2, "paraphrase", "ours: the goal sentence reworded", replacements=(
    ("Your goal is to interact with both machines and optimize your $ as much as possible by identifying the best "
     "machine at a given point in time which comes in hand with being attentive at a potential change of block.",
     "Your goal is to earn as many $ as you can by playing both machines and finding out which one is the best at "
     "each point in time, which means watching out for a change of block."),
))
_QUESTION = PromptForm(3, "paraphrase", "ours: the question and the record's heading reworded", patterns=(
    (r"Which machine do you choose between machine (\w) and (\w)\?", r"Which machine do you play, machine \1 or \2?"),
    (r"You have received the following amount of \$ when playing in the past: ", "Your earlier plays went as "
     "follows: "),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _INSTRUCTIONS, _GOAL, _QUESTION, "ours: rules, goal, question and heading all reworded (forms 1-3)")


class RestlessBanditEnv(TextEnv[RestlessDesign, RestlessSessions]):
    """CogBench's restless bandit with confidence reports (see module docstring).

    Steps alternate: ``phase`` 0 = choice (action: arm 0/1), ``phase`` 1 = confidence (action: a
    number in [0, 1]).  Observation: ``phase``, ``trial``, ``choice`` (the arm chosen on this
    trial, −1 in the choice phase), ``last_choice`` / ``last_reward`` (previous trial, −1 / 0.0
    at the start), ``max_steps`` and ``prompt``.  ``info`` holds the hidden ``best_arm``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: Arm 0/1; rewards are points (unbounded Gaussian draws, finite); confidence in [0, 1].
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = RestlessDesign
    #: The confidence phase's answer is continuous, so actions are recorded as floats.
    action_dtype: ClassVar[Any] = np.float64

    def __init__(self, design: RestlessDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        t_max = self.design.n_trials
        self.observation_space = spaces.Dict(
            {
                "trial": spaces.Discrete(t_max + 1),
                "choice": spaces.Discrete(3, start=-1),
                "last_choice": spaces.Discrete(3, start=-1),
                "last_reward": spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float64),
                "max_steps": spaces.Discrete(2 * t_max + 1),
                "prompt": self.prompt_space(2500 + 110 * t_max),
            }
        )
        self.declare_phases(
            Phase("choice", spaces.Discrete(2), self.parse_choice, skip_rest_if_invalid=True),
            Phase("confidence", spaces.Box(0.0, 1.0, shape=(), dtype=np.float64), self.parse_confidence),
        )
        self._history: list[str] = []
        self._choice = NO_ACTION
        self._last = (NO_ACTION, float("nan"))

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return 2 * design.n_trials

    def n_session_trials(self) -> int:
        return int(self._s.block_lengths[0].sum())

    def _terminated(self) -> bool:
        return self.t >= 2 * self.n_session_trials()

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(cls, design: RestlessDesign, n: int, rng: np.random.Generator) -> RestlessSessions:
        """Draw the first better arm, block lengths, rewards and name orders for ``n`` sessions.

        The stream is numpy's: ``rng.integers`` for the first better arm (and random block lengths),
        ``rng.standard_normal((n, T, 2))`` for the rewards, then ``rng.random((n, T))`` twice for the
        name orders; each reward is ``round(mean + sd·z, decimals)`` as ``np.round`` computes it
        (:func:`_rounded_rewards`)."""
        t_max = design.n_trials
        first_best, lengths = draw_blocks(design, n, rng)
        lo_mean, hi_mean = sorted(design.means)
        rewards = rng.standard_normal((n, t_max, 2))
        kernel(_rounded_rewards)(rewards, first_best, lengths, lo_mean, hi_mean, design.reward_sd,
                         10.0 ** design.reward_decimals)
        instr_flip = rng.random((n, t_max)) < 0.5
        query_flip = rng.random((n, t_max)) < 0.5
        return RestlessSessions(first_best=first_best, block_lengths=lengths, rewards=rewards,
                                instr_flip=instr_flip, query_flip=query_flip)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> RestlessSessions:
        assert self.session is not None
        return self.session

    def _start(self) -> None:
        self._history = []
        self._choice = NO_ACTION
        self._last = (NO_ACTION, float("nan"))

    def best_arm(self, trial: int | None = None) -> int:
        t = self.trial if trial is None else trial
        block, within = block_index(self._s.block_lengths, t + 1)
        return int(best_arms(self._s.first_best, block, within, self._s.block_lengths,
                             self.design.accuracy_rule)[0, t])

    def lapse_unit(self) -> int:
        """A lapse covers the whole trial (choice and confidence), the unit of the model's lapse mixture."""
        return self.trial

    def _play(self, action: Any) -> float:
        """Choice phase: the chosen arm's pre-drawn reward; confidence phase: no reward (0)."""
        if self.phase_index == CHOICE:
            self._choice = int(action)
            return float(self._s.rewards[0, self.trial, self._choice])
        return 0.0

    def _record(self, t: int, action: Any, reward: float) -> None:
        """After the confidence phase, add the trial's history line (an invalid confidence is
        shown as CogBench's prompt shows it, ``0.0``; an invalid choice adds no line)."""
        if t % 2 != CONFIDENCE:
            return
        shown = 0.0 if self._is_no_action(action) else float(action)
        rew = float(self.outcomes.reward[0, t - 1])
        self._history.append(
            f"t={self.trial + 1}: You chose {ARMS[self._choice]} with a reported confidence of "
            f"{shown!r}. It rewarded {int(rew)} $.\n"
        )
        self._last = (self._choice, rew)
        self._choice = NO_ACTION

    def _observation(self) -> dict[str, Any]:
        done = self._terminated()
        return {
            "trial": self.trial,
            "choice": self._choice,
            "last_choice": self._last[0],
            # 0.0 when there is no previous reward (last_choice = −1): a gymnasium Box holds no NaN
            "last_reward": np.float64(0.0 if np.isnan(self._last[1]) else self._last[1]),
            "max_steps": self.max_steps(self.design),
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        trial = min(self.trial, self.n_session_trials() - 1)
        return {"trial": trial, "best_arm": self.best_arm(trial)}

    # -- rendering and parsing -------------------------------------------------------------
    def _pair(self, flip: bool) -> tuple[str, str]:
        return (ARMS[1], ARMS[0]) if flip else ARMS

    def base_text(self) -> str:
        """Instructions + history + question (shared by the trial's two calls)."""
        trial = min(self.trial, self.n_session_trials() - 1)
        x = self._pair(bool(self._s.instr_flip[0, trial]))
        y = self._pair(bool(self._s.query_flip[0, trial]))
        instructions = (
            f"{Q_PREFIX} You are going to a casino that owns two slot machines named machine {x[0]} and {x[1]}.\n"
            "You earn $ each time you play on one of these machines with one machine always having "
            "a higher average $ reward. Every 18 to 22 trials a switch of block takes place and the "
            "other slot machine will now give the higher point reward in average. However, you are "
            "not told about the change of block. After each choice you have to indicate how "
            "confident you were about your choice being the best on a scale from 0 to 1. The "
            "casino includes 4 blocks of 18 to 22 trials, for a total of 80 trials 't'. Your goal "
            "is to interact with both machines and optimize your $ as much as possible by "
            "identifying the best machine at a given point in time which comes in hand with being "
            "attentive at a potential change of block. The rewards will range between 20$ and 80$."
        )
        history = ""
        if self._history:
            history = ("\n\nYou have received the following amount of $ when playing in the past: \n"
                       + "".join(self._history))
        query = (f"\n\nYou are now in trial t={trial + 1}. Which machine do you choose between "
                 f"machine {y[0]} and {y[1]}?")
        return instructions + history + query

    def answer_prefix_text(self) -> str:
        """The answer prefix, ending as the paper prints it: "A: Machine" (CogBench's code appends
        :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`, a space, dropped)."""
        if self.t % 2 == CHOICE:
            return "Machine"
        return f"Machine {ARMS[self._choice]} with confidence 0."

    def render_prompt(self) -> str:
        """The exact string CogBench sends for the current call (choice or confidence)."""
        spec = CHOICE_SPEC if self.t % 2 == CHOICE else CONFIDENCE_SPEC
        return self.base_text() + spec + f"{A_PREFIX} " + self.answer_prefix_text()

    def parse_choice(self, text: str) -> ParseResult:
        """Choice phase: "Machine F/J" or "F"/"J"; an echo of the prompt is no answer."""
        return echo_of_prompt(text, self.shown_prompt(), ARMS) or parse_machine(text, ARMS)

    def parse_confidence(self, text: str) -> ParseResult:
        """Confidence phase: the digits after "0." (a restated "Machine X with confidence" is cut)."""
        if text is not None:
            for arm in ARMS:  # a model may restate the prefix
                text = text.replace(f"Machine {arm} with confidence ", "")
        return parse_decimal_digits(text, "confidence")

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: RestlessDesign, sessions: RestlessSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial (both calls) in the schema of :mod:`cogtestbed.trials`: the rows a
        session has (its blocks' trials) built directly, one compiled pass over the sessions
        (:func:`_session_rows`)."""
        lengths = np.ascontiguousarray(sessions.block_lengths, dtype=np.int64)
        session_lengths = lengths.sum(axis=1)
        (choice, valid, reward, block, within, best, mean0, mean1, reward0, reward1, confidence, confidence_valid,
         accurate) = kernel(_session_rows)(np.ascontiguousarray(outcomes.action, dtype=np.float64),
                                   np.ascontiguousarray(outcomes.valid, dtype=bool),
                                   np.ascontiguousarray(sessions.rewards, dtype=np.float64),
                                   np.ascontiguousarray(sessions.first_best, dtype=np.int64), lengths,
                                   session_lengths, design.accuracy_rule == "cogbench", *sorted(design.means))

        def text(arr: np.ndarray | None, k: int) -> np.ndarray | None:
            return None if arr is None else arr[:, k::2]

        columns: dict[str, Column] = {
            "block": block, "block_trial": within, "best_arm": best, "mean0": mean0, "mean1": mean1,
            "reward0": reward0, "reward1": reward1, "confidence": confidence, "confidence_valid": confidence_valid,
            "accurate": accurate,
            "raw_confidence": text(outcomes.raw_response, 1),
            "confidence_parse_error": text(outcomes.parse_error, 1),
            "action": choice, "reward": reward, "valid": valid,
            "raw_response": text(outcomes.raw_response, 0), "parse_error": text(outcomes.parse_error, 0),
        }
        return finish_table(EXPERIMENT, columns, agent=agent, params=params, keep=session_lengths)


@njit(cache=True)
def _session_rows(action: np.ndarray, valid: np.ndarray, rewards: np.ndarray, first_best: np.ndarray,
                  block_lengths: np.ndarray, session_lengths: np.ndarray, cogbench_rule: bool, lo_mean: float,
                  hi_mean: float) -> tuple[np.ndarray, ...]:  # pragma: no cover - numba
    """The table's outcome and stimulus columns of every trial the sessions have (session i's first
    ``session_lengths[i]``, the sum of its ``block_lengths``), session after session, from the two
    steps of each trial (choice at step 2t, confidence at 2t + 1): (choice (NO_ACTION where invalid),
    valid, reward (the chosen arm's, NaN where invalid), block, trial within block, better arm
    (:func:`best_arms`, CogBench's rule if ``cogbench_rule``), mean0, mean1 (the true better arm's
    ``hi_mean``), reward0, reward1, confidence (NaN where missing), confidence valid (and the choice
    valid), accurate (choice = better arm; NaN where invalid))."""
    n = block_lengths.shape[0]
    total = session_lengths.sum()
    choice = np.empty(total, dtype=np.int64)
    chose = np.empty(total, dtype=np.bool_)
    reward = np.empty(total, dtype=np.float64)
    block = np.empty(total, dtype=np.int64)
    within = np.empty(total, dtype=np.int64)
    best_arm = np.empty(total, dtype=np.int64)
    mean0 = np.empty(total, dtype=np.float64)
    mean1 = np.empty(total, dtype=np.float64)
    reward0 = np.empty(total, dtype=np.float64)
    reward1 = np.empty(total, dtype=np.float64)
    confidence = np.empty(total, dtype=np.float64)
    confident = np.empty(total, dtype=np.bool_)
    accurate = np.empty(total, dtype=np.float64)
    r = 0
    for i in range(n):
        lengths = block_lengths[i]
        b, start, end = 0, 0, lengths[0]
        for t in range(session_lengths[i]):
            b, start, end = _next_block(t, b, start, end, lengths)
            true_best = _better_arm(first_best[i], b)
            best = 1 - true_best if cogbench_rule and t == end - 1 else true_best  # a block's last trial
            ok = valid[i, 2 * t]
            a = np.int64(action[i, 2 * t]) if ok else NO_ACTION
            sure = ok and valid[i, 2 * t + 1]
            choice[r], chose[r], block[r], within[r], best_arm[r] = a, ok, b, t - start, best
            mean0[r] = hi_mean if true_best == 0 else lo_mean
            mean1[r] = hi_mean if true_best == 1 else lo_mean
            reward0[r], reward1[r] = rewards[i, t, 0], rewards[i, t, 1]
            reward[r] = rewards[i, t, min(max(a, 0), 1)] if ok else np.nan
            confidence[r] = action[i, 2 * t + 1] if sure else np.nan
            confident[r] = sure
            accurate[r] = (1.0 if a == best else 0.0) if ok else np.nan
            r += 1
    return (choice, chose, reward, block, within, best_arm, mean0, mean1, reward0, reward1, confidence, confident,
            accurate)
