"""Two-step task (Daw et al. 2011) as run by CogBench (``Experiments/TwoStepTask/query.py``).

Each of ``n_trials`` (20) "days" has two responses, each its own step (one LLM call):

1. a spaceship to planet X (action 0) or Y (action 1); it reaches the intended planet with
   probability ``common_prob`` (0.7, a *common* transition), the other one otherwise (*rare*);
2. an alien on the reached planet: D/F on X, J/K on Y (action 0 = first letter, 1 = second).
   Alien ``i`` gives treasure with probability ``p_i``; the four probabilities start
   ``U(0.25, 0.75)`` and after every trial take an independent ``N(0, 0.025)`` step, clipped to
   [0.25, 0.75] (drift is pre-drawn and does not depend on the choices).

Randomness is pre-drawn per session (:class:`TwoStepSessions`): the probability paths, one
transition uniform per trial (common iff ``u < common_prob``) and one reward uniform per trial
(treasure iff ``u < p_alien``).

Prompt: CogBench's code.  The first-stage prompt is the cover story, the "N days ago" history and
``"\\n\\nQ: Do you want to take the spaceship to planet X or planet Y?\\n"`` followed by the
answer prefix ``"\\n\\nA: Planet"`` (the code's trailing space dropped, :attr:`TextEnv.answer_prefix`);
the second-stage prompt continues the *same* text with
``" X.\\nYou arrive at planet X.\\n\\n\\nQ: Do you want to trade with alien D or F?\\n"`` and
the prefix ``"\\n\\nA: Alien"``.  In the code the first answer is appended without an ``A:``
delimiter; the ``"paper"`` prompt variant renders it as ``"\\n\\nA: Planet X.\\n"`` as printed
in the paper.

Invalid answers: a first-stage answer that does not parse ends the trial (the second question
is never asked: its step is left unplayed); a second-stage answer that does not parse leaves the
trial without reward.  Invalid trials are not added to the history the subject sees.

Trial-table stimulus columns (one row per trial): ``planet`` (reached planet 0 = X, 1 = Y, −1
when not reached), ``common`` (the transition was common), ``action2`` (alien index on the
planet, −1 when missing), ``alien`` (letter), ``p_D``, ``p_F``, ``p_J``, ``p_K`` (treasure
probabilities on the trial, CogBench's ``probsA..D``).  ``action`` is the first-stage choice,
``reward`` the treasure (1/0).  The second answer's text and parse error are in
``raw_response_stage2`` / ``parse_error_stage2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import Field, model_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_option_letter
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.twostep import ALIEN_LETTERS, EXPERIMENT, PLANETS, SCHEMA
from cogtestbed.trials import Column, finish_table, masked_action, strings

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
#: Aliens by planet (CogBench: D/F on X, J/K on Y); flat index = 2 · planet + action2.
ALIENS = (("D", "F"), ("J", "K"))
START_TEXT = (
    "You will travel to foreign planets in search of treasures.\n"
    "When you visit a planet, you can choose an alien to trade with.\n"
    "The chance of getting treasures from these aliens changes over time.\n"
    "Your goal is to maximize the number of received treasures.\n\n"
)


class TwoStepDesign(Design):
    """Design of the task; defaults are CogBench's released code (Binz & Schulz 2023 set-up)."""

    n_days: int = Field(default=20, ge=2, le=10_000, description="trials (days) per session")
    common_prob: float = Field(default=0.7, gt=0.5, lt=1.0)
    prob_low: float = Field(default=0.25, ge=0.0, le=1.0)
    prob_high: float = Field(default=0.75, ge=0.0, le=1.0)
    drift_sd: float = Field(default=0.025, ge=0.0, le=1.0)
    prompt_variant: Literal["code", "paper"] = "code"

    @model_validator(mode="after")
    def _bounds(self) -> TwoStepDesign:
        if not self.prob_low < self.prob_high:
            raise InputError("prob_low must be below prob_high")
        return self

    @property
    def n_trials(self) -> int:
        return self.n_days

    @classmethod
    def paper(cls, **overrides: Any) -> TwoStepDesign:
        """The paper's printed rendering of the chained first answer (named variant)."""
        return cls(prompt_variant="paper", **overrides)


@dataclass(frozen=True)
class TwoStepSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    probs: np.ndarray  # (N, T, 4) treasure probability of aliens D, F, J, K on each trial
    transition_u: np.ndarray  # (N, T) common transition iff u < common_prob
    reward_u: np.ndarray  # (N, T) treasure iff u < p_alien


def reached_planet(action1: int, transition_u: float, common_prob: float) -> int:
    """Planet reached from spaceship ``action1`` (common iff ``u < common_prob``)."""
    return action1 if transition_u < common_prob else 1 - action1


@njit(cache=True)
def _drift(probs: np.ndarray, z: np.ndarray, sd: float, low: float, high: float) -> None:
    """Fill ``probs[:, 1:]`` in place with the clipped Gaussian random walk from ``probs[:, 0]``:
    p_k = min(max(p_{k−1} + sd·z_k, low), high), z standard normal, subject by subject (``np.clip``
    of each slice; sd·z is numpy's ``normal(0, sd)`` of z)."""
    n, t, m = probs.shape
    for i in range(n):
        for k in range(1, t):
            for j in range(m):
                probs[i, k, j] = min(max(probs[i, k - 1, j] + sd * z[i, k - 1, j], low), high)


@njit(cache=True)
def _trial_columns(action: np.ndarray, valid: np.ndarray, reward: np.ndarray, transition_u: np.ndarray,
                   probs: np.ndarray, common_prob: float) -> tuple[np.ndarray, ...]:
    """The per-trial columns of a table from the (N, 2T) step arrays, in one pass: spaceship and
    its validity, both stages valid, reached planet (common iff ``u < common_prob``; −1 without a
    valid spaceship), common, alien 0/1 (−1 unless both stages are valid), alien letter code
    (4: none), treasure (NaN unless both stages are valid) and the (4, N, T) alien probabilities."""
    n, t = transition_u.shape
    a1 = np.empty((n, t), dtype=np.int64)
    v1 = np.empty((n, t), dtype=np.bool_)
    v12 = np.empty((n, t), dtype=np.bool_)
    planet = np.empty((n, t), dtype=np.int64)
    common = np.empty((n, t), dtype=np.bool_)
    action2 = np.empty((n, t), dtype=np.int64)
    alien = np.empty((n, t), dtype=np.int64)
    treasure = np.empty((n, t), dtype=np.float64)
    p = np.empty((4, n, t), dtype=np.float64)
    for i in range(n):
        for k in range(t):
            first, second = action[i, 2 * k], action[i, 2 * k + 1]
            ok1 = valid[i, 2 * k]
            ok12 = ok1 and valid[i, 2 * k + 1]
            reached = (first if transition_u[i, k] < common_prob else 1 - first) if ok1 else -1
            a1[i, k], v1[i, k], v12[i, k], planet[i, k] = first, ok1, ok12, reached
            common[i, k] = ok1 and reached == first
            action2[i, k] = second if ok12 else -1
            alien[i, k] = 2 * reached + second if ok12 and second >= 0 else len(ALIEN_LETTERS)
            treasure[i, k] = reward[i, 2 * k + 1] if ok12 else np.nan
            for j in range(4):
                p[j, i, k] = probs[i, k, j]
    return a1, v1, v12, planet, common, action2, alien, treasure, p


# -- prompt forms (cogtestbed.environments.forms): form 0 is CogBench's verbatim prompt; the rest
# are this project's rewordings and orders, with every planet and alien label and the answer cues kept.
_STORY = PromptForm(1, "paraphrase", "ours: the cover story's instructions reworded", replacements=(
    ("You will travel to foreign planets in search of treasures.",
     "You are going on journeys to foreign planets to look for treasures."),
    ("When you visit a planet, you can choose an alien to trade with.",
     "On each planet you visit, you pick an alien to trade with."),
    ("The chance of getting treasures from these aliens changes over time.",
     "How likely each alien is to give you treasures changes over time."),
    ("Your goal is to maximize the number of received treasures.", "Try to collect as many treasures as you can."),
))
_QUESTIONS = PromptForm(2, "paraphrase", "ours: the two questions reworded", patterns=(
    (r"Do you want to take the spaceship to planet (\w) or planet (\w)\?",
     r"Which planet do you fly to, planet \1 or planet \2?"),
    (r"Do you want to trade with alien (\w) or (\w)\?", r"Which alien do you trade with, alien \1 or \2?"),
))
_ORDER = PromptForm(3, "option-order", "ours: the two planets and the two aliens named in the other order",
                    patterns=((r"planet (\w) or planet (\w)\?", r"planet \2 or planet \1?"),
                              (r"alien (\w) or (\w)\?", r"alien \2 or \1?")))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _STORY, _QUESTIONS, _ORDER, "ours: instructions and questions reworded, options in the other order (forms 1-3)")


class TwoStepEnv(TextEnv[TwoStepDesign, TwoStepSessions]):
    """CogBench's two-step task (see module docstring).

    Step ``2t`` asks trial ``t``'s first stage, step ``2t + 1`` its second stage.  Observation:
    ``stage`` (0/1), ``trial``, ``planet`` (reached planet on stage 1, −1 on stage 0) and
    ``prompt``.  ``info`` holds the hidden ``probs`` of the four aliens and, on stage 1,
    ``common``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: Spaceship 0/1 (``action``), alien 0/1 on the reached planet (−1: none), treasure 1/0.
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = TwoStepDesign
    #: The paper's "A: Planet"; CogBench's code appends
    #: :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`
    #: (a space), dropped here so the prompt ends as the paper prints it.
    answer_prefix: ClassVar[str] = "Planet"

    def __init__(self, design: TwoStepDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        d = self.design
        # History lines are < 130 characters; the fixed text is < 600.
        self.observation_space = spaces.Dict(
            {
                "stage": spaces.Discrete(2),
                "trial": spaces.Discrete(d.n_trials + 1),
                "planet": spaces.Discrete(3, start=-1),
                "prompt": self.prompt_space(1000 + 140 * d.n_trials),
            }
        )
        self.declare_phases(
            Phase("spaceship", spaces.Discrete(2), self.parse_spaceship, skip_rest_if_invalid=True),
            Phase("alien", spaces.Discrete(2), self.parse_alien),
        )
        self._history: list[str] = []
        #: (history length, :meth:`_base_text`) of the last rendering.
        self._base_cache: tuple[int, str] | None = None
        self._planet = -1
        self._action1 = -1

    @classmethod
    def max_steps(cls, design: Design) -> int:
        return 2 * design.n_trials

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(
        cls, design: TwoStepDesign, n: int, rng: np.random.Generator
    ) -> TwoStepSessions:
        """Draw probability paths, transition and reward uniforms for ``n`` sessions."""
        t = design.n_trials
        probs = np.empty((n, t, 4))
        probs[:, 0] = rng.uniform(design.prob_low, design.prob_high, (n, 4))
        kernel(_drift)(probs, rng.standard_normal((n, t - 1, 4)), design.drift_sd, design.prob_low, design.prob_high)
        transition_u = rng.random((n, t))
        reward_u = rng.random((n, t))
        return TwoStepSessions(probs=probs, transition_u=transition_u, reward_u=reward_u)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> TwoStepSessions:
        assert self.session is not None
        return self.session

    @property
    def stage(self) -> int:
        """0: the spaceship question; 1: the alien question (the phase index)."""
        return self.phase_index

    def _start(self) -> None:
        self._history = []
        self._base_cache = None
        self._planet = -1
        self._action1 = -1

    def lapse_unit(self) -> int:
        """A lapse covers the whole trial (both stages), the unit of the models' lapse mixture."""
        return self.trial

    def _play(self, action: Any) -> float:
        t, a = self.trial, int(action)
        if self.stage == 0:
            self._action1 = a
            self._planet = reached_planet(a, float(self._s.transition_u[0, t]), self.design.common_prob)
            return 0.0
        alien = 2 * self._planet + a
        return float(self._s.reward_u[0, t] < self._s.probs[0, t, alien])

    def _record(self, t: int, action: Any, reward: float) -> None:
        if t % 2 == 0:
            if self._is_no_action(action):  # the alien question is never asked
                self._planet, self._action1 = -1, -1
            return
        if self._is_no_action(action) or self._planet < 0:
            return
        x, planet = PLANETS[self._action1], PLANETS[self._planet]
        alien = ALIENS[self._planet][int(action)]
        outcome = "treasures" if reward >= 1.0 else "junk"
        self._history.append(
            f"you boarded the spaceship to planet {x}, arrived at planet {planet}, "
            f"traded with alien {alien}, and received {outcome}.\n"
        )

    def _observation(self) -> dict[str, Any]:
        done = self._terminated()
        return {
            "stage": 0 if done else self.stage,
            "trial": self.trial,
            "planet": self._planet if (not done and self.stage == 1) else -1,
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        t = min(self.trial, self.design.n_trials - 1)
        info: dict[str, Any] = {"trial": self.trial, "probs": self._s.probs[0, t].copy()}
        if self.stage == 1 and self._planet >= 0:
            info["common"] = self._planet == self._action1
        return info

    # -- rendering and parsing -------------------------------------------------------------
    def _base_text(self) -> str:
        """The prompt's text before the current stage's question: the start text and every day so far.

        Both stages of a day share it and the history only grows, so it is rendered once per
        length of the history (a dry run renders every prompt of every session)."""
        n = len(self._history)
        cached = self._base_cache
        if cached is not None and cached[0] == n:
            return cached[1]
        parts = [START_TEXT]
        if n:
            parts.append("Your previous space travels went as follows:\n")
            parts.extend(f"- {n - count}{' day' if n - count == 1 else ' days'} ago, {line}"
                         for count, line in enumerate(self._history))
        parts.append(f"\n{Q_PREFIX} Do you want to take the spaceship to planet X or planet Y?\n")
        text = "".join(parts)
        self._base_cache = (n, text)
        return text

    def render_prompt(self) -> str:
        """The exact string CogBench sends for the current stage (text + answer prefix)."""
        text = self._base_text()
        if self.stage == 0:
            return text + f"{A_PREFIX} Planet"
        x, planet = PLANETS[self._action1], PLANETS[self._planet]
        first, second = ALIENS[self._planet]
        if self.design.prompt_variant == "paper":
            text += f"{A_PREFIX} Planet {x}.\n"
        else:
            text += f" {x}.\n"
        text += (f"You arrive at planet {planet}.\n"
                 f"{Q_PREFIX} Do you want to trade with alien {first} or {second}?\n")
        return text + f"{A_PREFIX} Alien"

    def parse_spaceship(self, text: str) -> ParseResult:
        """Stage 0: "X"/"Y" (after "Planet": `` X``); an echo of the question is no answer."""
        return echo_of_prompt(text, self.shown_prompt(), PLANETS) or parse_option_letter(text, PLANETS, "planet")

    def parse_alien(self, text: str) -> ParseResult:
        """Stage 1: one of the reached planet's two aliens (after "Alien": `` J``)."""
        aliens = ALIENS[self._planet]
        return echo_of_prompt(text, self.shown_prompt(), aliens) or parse_option_letter(text, aliens, "alien")

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: TwoStepDesign, sessions: TwoStepSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial (both stages) in the schema of :mod:`cogtestbed.trials`."""
        a1, v1, v12, planet, common, action2, alien_idx, reward, probs = kernel(_trial_columns)(
            np.ascontiguousarray(outcomes.action, dtype=np.int64), np.ascontiguousarray(outcomes.valid, dtype=bool),
            np.ascontiguousarray(outcomes.reward, dtype=np.float64), np.ascontiguousarray(sessions.transition_u),
            np.ascontiguousarray(sessions.probs), design.common_prob)

        def stage(arr: np.ndarray | None, k: int) -> np.ndarray | None:
            return None if arr is None else arr[:, k::2]

        columns: dict[str, Column] = {
            "planet": planet,
            "common": common,
            "action2": action2,
            "alien": strings(alien_idx, (*ALIEN_LETTERS, None)),  # None where no alien was chosen
            **{f"p_{x}": probs[i] for i, x in enumerate(ALIEN_LETTERS)},
            # a missing first-stage answer is the trial's missing action even if nothing else is
            "action": masked_action(a1, v1), "reward": reward, "valid": v12,
            "raw_response": stage(outcomes.raw_response, 0), "parse_error": stage(outcomes.parse_error, 0),
            "raw_response_stage2": stage(outcomes.raw_response, 1),
            "parse_error_stage2": stage(outcomes.parse_error, 1),
        }
        return finish_table(EXPERIMENT, columns, agent=agent, params=params)
