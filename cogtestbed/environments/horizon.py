"""Horizon task (Wilson et al. 2014) as run by CogBench (``wilson2014horizon-v0``).

A stationary two-armed bandit (machines F = arm 0 and J = arm 1).  Each game (CogBench *run*)
starts with 4 forced choices shown in the prompt as past outcomes, then 1 (horizon 1) or 6
(horizon 6) free choices, each one LLM call.  Per game (released code, ``envs/bandits.py``):

* horizon ∈ {1, 6} and information condition equal/unequal, each 50/50;
* means: one arm (chosen 50/50) gets 40 or 60, the other that value + Δ with
  Δ ∈ {−30, −20, −12, −8, −4, 4, 8, 12, 20, 30};
* rewards ``round(N(mean, sd = 8))``, pre-drawn for both arms on every trial;
* forced choices: unequal = shuffled [0,0,0,1] or [0,1,1,1]; equal = shuffled [0,0,1,1].

Prompt: CogBench's ``query.py`` (Coda-Forno et al. 2024): the forced outcomes and every free outcome are
listed as ``- Machine X delivered R dollars.``, the goal line counts the remaining rounds, and the
query specification ``(Give your answe in the format 'Machine <your choice>')`` (sic) precedes the
``Machine`` answer prefix.  The ``"paper"`` variant omits the specification.  An invalid answer is
recorded as such (CogBench picks a random arm): the round is used up and adds no history line.

Trial-table stimulus columns (one row per trial, forced ones included, as in CogBench's CSVs):
``horizon`` (1/6), ``unequal`` (information condition), ``forced`` (forced-choice trial),
``mean0`` / ``mean1`` (true means), ``reward0`` / ``reward1`` (pre-drawn rewards).  ``action`` is the
arm (CogBench's ``choice``).  Rows past a horizon-1 game's fifth trial do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import Field, field_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.draws import RoundedNormal, permute_rows
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_machine
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.horizon import EXPERIMENT, SCHEMA, game_table

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
ARMS = ("F", "J")
#: CogBench's default number of games (``query.py``); the paper says 100.
CODE_RUNS, PAPER_RUNS = 1000, 100
NUM_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


class HorizonDesign(Design):
    """Design of the horizon task; defaults are CogBench's released code."""

    base_means: tuple[float, ...] = (40.0, 60.0)
    deltas: tuple[float, ...] = (-30.0, -20.0, -12.0, -8.0, -4.0, 4.0, 8.0, 12.0, 20.0, 30.0)
    reward_sd: float = Field(8.0, gt=0.0)
    horizons: tuple[int, ...] = (1, 6)
    n_forced: int = Field(4, ge=4, le=4)
    p_unequal: float = Field(0.5, ge=0.0, le=1.0)
    prompt_variant: Literal["code", "paper"] = "code"

    @field_validator("horizons")
    @classmethod
    def _horizons(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(h < 1 or h > len(NUM_WORDS) - 1 for h in v):
            raise InputError(f"horizons must lie in 1..{len(NUM_WORDS) - 1}")
        return v

    @property
    def max_horizon(self) -> int:
        return max(self.horizons)

    @property
    def n_trials(self) -> int:
        """Most trials a game can have (forced + free)."""
        return self.n_forced + self.max_horizon

    @classmethod
    def paper(cls, **overrides: Any) -> HorizonDesign:
        """The paper's prompt (no query specification before the answer prefix)."""
        return cls(prompt_variant="paper", **overrides)


@dataclass(frozen=True)
class HorizonSessions(Sessions):
    """Pre-drawn parts of N games (first axis: game)."""

    horizon: np.ndarray  # (N,) int64
    unequal: np.ndarray  # (N,) bool
    means: np.ndarray  # (N, 2) float64
    rewards: np.ndarray  # (N, n_forced + max_horizon, 2) float64, rounded rewards of both arms
    forced: np.ndarray  # (N, n_forced) int64, forced arms


# -- prompt forms (cogtestbed.environments.forms): form 0 is CogBench's verbatim prompt; the rest
# are this project's rewordings, with every number, letter and the answer cue kept.
_INSTRUCTIONS = PromptForm(1, "paraphrase", "ours: the casino description and the goal reworded", replacements=(
    ("You are going to a casino that owns two slot machines.\nYou earn money each time you play on one of these "
     "machines.", "You are in a casino with two slot machines.\nEach time you play one of them, you win some money."),
    ("Your goal is to maximize the sum of received dollars within",
     "Try to earn as many dollars as possible in total within"),
))
_HISTORY = PromptForm(2, "paraphrase", "ours: the record of past plays reworded", patterns=(
    (r"You have received the following amount of dollars when playing in the past: ",
     "So far the machines have paid you these amounts: "),
    (r"- Machine (\w) delivered (\d+) dollars\.", r"- Machine \1 paid \2 dollars."),
))
_QUESTION = PromptForm(3, "paraphrase", "ours: the question reworded (same answer format)",
                       replacements=(("Q: Which machine do you choose?", "Q: Which machine do you play next?"),))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _INSTRUCTIONS, _HISTORY, _QUESTION, "ours: instructions, record and question all reworded (forms 1-3)")


class HorizonEnv(TextEnv[HorizonDesign, HorizonSessions]):
    """CogBench's horizon task (see module docstring); one step per free choice.

    Observation: ``horizon``, ``unequal`` (0/1), ``free_trial`` (0-based free choice), ``counts``
    and ``sums`` (observations and summed rewards per arm so far, forced trials included),
    ``max_steps`` and ``prompt``.  Action: arm 0 (F) or 1 (J).  ``info`` holds the true ``means``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: Arm 0/1; rewards are whole numbers of points (rounded Gaussian draws).
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = HorizonDesign
    #: The paper's "A: Machine"; CogBench's code appends
    #: :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`
    #: (a space), dropped here so the prompt ends as the paper prints it.
    answer_prefix: ClassVar[str] = "Machine"

    def __init__(self, design: HorizonDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        d = self.design
        big = spaces.Box(-1e6, 1e6, shape=(2,), dtype=np.float64)
        self.observation_space = spaces.Dict(
            {
                "horizon": spaces.Discrete(d.max_horizon + 1),
                "unequal": spaces.Discrete(2),
                "free_trial": spaces.Discrete(d.max_horizon + 1),
                "counts": big,
                "sums": big,
                "max_steps": spaces.Discrete(d.max_horizon + 1),
                "prompt": self.prompt_space(1000 + 40 * d.n_trials),
            }
        )
        self.declare_phases(Phase("answer", spaces.Discrete(2), self.parse_answer))
        self._history: list[str] = []
        self._counts = np.zeros(2)
        self._sums = np.zeros(2)

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return int(design.max_horizon)  # type: ignore[attr-defined]

    def _terminated(self) -> bool:
        return self.t >= int(self._s.horizon[0])

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(cls, design: HorizonDesign, n: int, rng: np.random.Generator) -> HorizonSessions:
        """Draw horizon, condition, means, rewards and forced choices for ``n`` games (whole arrays:
        bounded integers by ``rng.integers``, rounded Gaussian rewards by
        :class:`~cogtestbed.environments.draws.RoundedNormal` where the means are whole numbers,
        forced choices shuffled by :func:`~cogtestbed.environments.draws.permute_rows`)."""
        highs = (len(design.horizons), 2, len(design.base_means), len(design.deltas))
        horizon_pick, arm, base_pick, delta_pick = [rng.integers(0, high, size=n) for high in highs]
        horizon, means = kernel(_game_means)(
            horizon_pick, arm, base_pick, delta_pick, np.asarray(design.horizons, np.int64),
            np.asarray(design.base_means, np.float64), np.asarray(design.deltas, np.float64))
        shape = (n, design.n_trials, 2)
        if _whole_means(design):  # rint(m + sd·z) = m + rint(sd·z) for a whole-number mean m
            rewards = _rounded_normal(design.reward_sd).draw(shape, rng, means[:, None, :])
        else:
            rewards = np.rint(means[:, None, :] + design.reward_sd * rng.standard_normal(shape))
        unequal = rng.random(n) < design.p_unequal
        forced = permute_rows(kernel(_forced_patterns)(unequal, rng.integers(0, 2, size=n)), rng, in_place=True)
        return HorizonSessions(horizon=horizon, unequal=unequal, means=means, rewards=rewards, forced=forced)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> HorizonSessions:
        assert self.session is not None
        return self.session

    def _start(self) -> None:
        s, nf = self._s, self.design.n_forced
        self._history = []
        self._counts = np.zeros(2)
        self._sums = np.zeros(2)
        for t in range(nf):
            arm = int(s.forced[0, t])
            self._observe(arm, float(s.rewards[0, t, arm]))

    def _observe(self, arm: int, reward: float) -> None:
        self._history.append(f"- Machine {ARMS[arm]} delivered {int(reward)} dollars.\n")
        self._counts[arm] += 1
        self._sums[arm] += reward

    def _play(self, action: Any) -> float:
        return float(self._s.rewards[0, self.design.n_forced + self.t, int(action)])

    def _record(self, t: int, action: Any, reward: float) -> None:
        if not self._is_no_action(action):
            self._observe(int(action), reward)

    def _observation(self) -> dict[str, Any]:
        s = self._s
        done = self._terminated()
        return {
            "horizon": int(s.horizon[0]),
            "unequal": int(s.unequal[0]),
            "free_trial": self.t,
            "counts": self._counts.copy(),
            "sums": self._sums.copy(),
            "max_steps": self.max_steps(self.design),
            "prompt": "(game finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        means = tuple(float(x) for x in self._s.means[0])
        return {"trial": self.t, "means": means, "optimal_action": int(np.argmax(means))}

    # -- rendering and parsing -------------------------------------------------------------
    def render_prompt(self) -> str:
        """The exact string CogBench sends (instructions, history, goal, question, spec, prefix)."""
        remaining = int(self._s.horizon[0]) - self.t
        rounds = f"{NUM_WORDS[remaining]} additional round{'s' if remaining > 1 else ''}"
        instructions = (
            "You are going to a casino that owns two slot machines.\n"
            "You earn money each time you play on one of these machines.\n\n"
            "You have received the following amount of dollars when playing in the past: \n"
        )
        goal = f"Your goal is to maximize the sum of received dollars within {rounds}.\n"
        question = f"{Q_PREFIX} Which machine do you choose?"
        spec = "" if self.design.prompt_variant == "paper" else \
            "(Give your answe in the format 'Machine <your choice>')\n"
        return (instructions + "".join(self._history) + "\n" + goal + question + spec
                + f"{A_PREFIX} {self.answer_prefix}")


    def parse_answer(self, text: str) -> ParseResult:
        """Read "Machine F/J" or a bare "F"/"J" (after the "Machine" prefix); an echo of the history
        is no answer (:func:`echo_of_prompt`)."""
        return echo_of_prompt(text, self.shown_prompt(), ARMS) or parse_machine(text, ARMS)

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: HorizonDesign, sessions: HorizonSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial (forced + free) in the schema of :mod:`cogtestbed.trials`: the rows a
        game has (its forced trials and ``horizon`` free ones) are built directly, one compiled
        pass over the games (:func:`_game_rows`)."""
        nf, t_max = design.n_forced, design.n_trials
        lengths = nf + np.asarray(sessions.horizon, dtype=np.int64)
        action, valid, reward, reward0, reward1, trial, forced = kernel(_game_rows)(
            np.ascontiguousarray(sessions.forced, dtype=np.int64),
            np.ascontiguousarray(outcomes.action, dtype=np.int64), np.ascontiguousarray(outcomes.valid, dtype=bool),
            np.ascontiguousarray(sessions.rewards, dtype=np.float64), lengths, int(lengths.sum()))
        return game_table(sessions.horizon, sessions.unequal, sessions.means, (reward0, reward1),
                          action, reward, valid, lengths, nf, agent=agent,
                          raw_response=_free_steps(outcomes.raw_response, nf, t_max),
                          parse_error=_free_steps(outcomes.parse_error, nf, t_max), params=params,
                          kept_trial=trial, kept_forced=forced)


@njit(cache=True)
def _game_rows(forced: np.ndarray, free_action: np.ndarray, free_valid: np.ndarray, rewards: np.ndarray,
               length: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray, np.ndarray]:  # pragma: no cover - numba
    """(action, valid, reward, reward0, reward1, trial, forced) of every row the games have, game after game:
    game i's first ``length[i]`` trials, the forced ones (always valid) then its free choices.  The
    reward is the chosen arm's pre-drawn one (an invalid choice's arm clipped to 0/1, as the step
    path reads it; NaN as the recorded outcome)."""
    n_forced = forced.shape[1]
    action = np.empty(total, dtype=np.int64)
    valid = np.empty(total, dtype=np.bool_)
    reward = np.empty(total, dtype=np.float64)
    reward0 = np.empty(total, dtype=np.float64)
    reward1 = np.empty(total, dtype=np.float64)
    trial = np.empty(total, dtype=np.int64)
    forced_trial = np.empty(total, dtype=np.bool_)
    r = np.uint64(0)  # unsigned: no negative-index wrap on the stores
    for i in range(forced.shape[0]):
        game = rewards[i]
        for t in range(n_forced):  # forced trials, then free ones: no branch on the trial kind
            a = forced[i, t]
            action[r], valid[r], trial[r], forced_trial[r] = a, True, t, True
            reward0[r], reward1[r] = game[t, 0], game[t, 1]
            reward[r] = game[t, np.intp(a >= 1)]  # an indexed load, not a branch on the (random) arm
            r += np.uint64(1)
        for t in range(n_forced, length[i]):
            a, ok = free_action[i, t - n_forced], free_valid[i, t - n_forced]
            action[r], valid[r], trial[r], forced_trial[r] = a, ok, t, False
            reward0[r], reward1[r] = game[t, 0], game[t, 1]
            paid = game[t, np.intp(a >= 1)]
            reward[r] = paid if ok else np.nan
            r += np.uint64(1)
    return action, valid, reward, reward0, reward1, trial, forced_trial


#: Forced-choice patterns before shuffling (CogBench's ``envs/bandits.py``): unequal information
#: [0,0,0,1] or [0,1,1,1] (which one drawn 50/50), equal information [0,0,1,1].
FORCED_PATTERNS = np.array([[0, 0, 0, 1], [0, 1, 1, 1], [0, 0, 1, 1]], dtype=np.int64)


@njit(cache=True)
def _forced_patterns(unequal: np.ndarray, pick: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    """(n, 4) unshuffled forced choices: game i's unequal pattern ``pick[i]`` where ``unequal[i]``, else
    the equal one (:data:`FORCED_PATTERNS`)."""
    n = unequal.shape[0]
    out = np.empty((n, FORCED_PATTERNS.shape[1]), dtype=np.int64)
    for i in range(n):
        row = 2 - np.int64(unequal[i]) * (2 - pick[i])  # pick[i] where unequal, else 2: no branch on a coin
        for t in range(FORCED_PATTERNS.shape[1]):
            out[i, t] = FORCED_PATTERNS[row, t]
    return out


@njit(cache=True)
def _game_means(horizon_pick: np.ndarray, arm: np.ndarray, base_pick: np.ndarray, delta_pick: np.ndarray,
                horizons: np.ndarray, base_means: np.ndarray,
                deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - numba
    """(horizon (n,), means (n, 2)) of every game from its drawn indices, one pass (Wilson et al. 2014,
    CogBench's ``envs/bandits.py``): arm ``arm[i]`` gets the base mean, the other arm that mean plus Δ."""
    n = horizon_pick.shape[0]
    horizon = np.empty(n, dtype=np.int64)
    means = np.empty((n, 2), dtype=np.float64)
    for i in range(n):
        horizon[i] = horizons[horizon_pick[i]]
        base = base_means[base_pick[i]]
        a = arm[i]
        means[i, a] = base
        means[i, 1 - a] = base + deltas[delta_pick[i]]
    return horizon, means


def _whole_means(design: HorizonDesign) -> bool:
    """Whether every mean the design can draw (a base mean, or one plus a Δ) is a whole number."""
    return _whole_sums(tuple(design.base_means), tuple(design.deltas))


@cache
def _whole_sums(base_means: tuple[float, ...], deltas: tuple[float, ...]) -> bool:
    """Whether every base mean, and every base mean plus a Δ, is a whole number (once per design)."""
    values = np.add.outer(base_means, (0.0, *deltas))
    return bool(np.all(values == np.rint(values)))


@cache
def _rounded_normal(sd: float) -> RoundedNormal:
    return RoundedNormal(sd)


def _free_steps(per_step: np.ndarray | None, n_forced: int, t_max: int) -> np.ndarray | None:
    """Per-step text (raw answers, parse errors) placed on the free trials of (n, t_max) rows."""
    if per_step is None:
        return None
    out = np.full((per_step.shape[0], t_max), None, dtype=object)
    out[:, n_forced:n_forced + per_step.shape[1]] = per_step
    return out
