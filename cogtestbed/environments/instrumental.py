"""Instrumental learning (Lefebvre et al. 2017) as run by CogBench (``palminteri2017-v0``).

Four two-armed "casinos", interleaved, ``visits_per_casino`` visits each (24 → 96 trials).
Casino reward probabilities are (.25, .25), (.25, .75), (.75, .25), (.75, .75); each arm pays 1
dollar with its probability, else 0, from pre-sampled Bernoulli outcomes.  The 8 machine letters
are drawn without replacement from ``ABCDEFGHJKLMNOPQRSTVW``; trial order is a random permutation;
the order in which the two machines are named in the question is randomised on every trial.

Prompt: CogBench's released code (``query.py`` + ``LLM.generate``) (Coda-Forno et al. 2024).  The
``"paper"`` variant uses the paper's printed wording instead.  Known code quirks not reproduced:
the first trial's option order is randomised like every other trial (CogBench leaves it fixed),
and rows are never appended twice.

Trial-table stimulus columns: ``casino`` (1–4), ``machine0`` / ``machine1`` (letters of arm 0/1),
``shown_first`` (letter named first in the question), ``mean0`` / ``mean1`` (reward
probabilities), ``reward0`` / ``reward1`` (pre-sampled outcomes).  ``action`` is the arm index
(CogBench's ``choice``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import Field, field_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_machine
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.instrumental import EXPERIMENT, SCHEMA
from cogtestbed.trials import Column, finish_table, outcome_columns, strings

ALPHABET = "ABCDEFGHJKLMNOPQRSTVW"
Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"


class InstrumentalDesign(Design):
    """Design of the task; defaults are CogBench's released code (``palminteri2017-v0``)."""

    visits_per_casino: int = Field(24, ge=1, le=1000)
    reward_probs: tuple[tuple[float, float], ...] = ((0.25, 0.25), (0.25, 0.75), (0.75, 0.25),
                                                     (0.75, 0.75))
    alphabet: str = ALPHABET
    randomise_order: bool = True
    prompt_variant: Literal["code", "paper"] = "code"

    @field_validator("reward_probs")
    @classmethod
    def _probabilities(cls, v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
        if len(v) != 4 or any(not 0.0 <= p <= 1.0 for pair in v for p in pair):
            raise InputError("reward_probs must be four (p0, p1) pairs of probabilities")
        return v

    @field_validator("alphabet")
    @classmethod
    def _letters(cls, v: str) -> str:
        if len(set(v)) != len(v) or len(v) < 8 or not v.isalpha() or not v.isupper():
            raise InputError("alphabet must hold at least 8 distinct upper-case letters")
        return v

    @property
    def n_casinos(self) -> int:
        return len(self.reward_probs)

    @property
    def n_trials(self) -> int:
        return self.n_casinos * self.visits_per_casino

    @classmethod
    def paper(cls, **overrides: Any) -> InstrumentalDesign:
        """The paper's printed prompt wording (named variant)."""
        return cls(prompt_variant="paper", **overrides)


@dataclass(frozen=True)
class InstrumentalSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    casino: np.ndarray  # (N, T) int64, 1-based casino of each trial
    letters: np.ndarray  # (N, n_casinos, 2) '<U1', letters of arm 0 / arm 1 per casino
    reward_draws: np.ndarray  # (N, T, 2) float64, pre-sampled outcome of each arm
    flip: np.ndarray  # (N, T) bool, True: arm 1 is named first in the question


# -- prompt forms (cogtestbed.environments.forms): form 0 is the code's verbatim prompt; the rest
# are this project's rewordings, with every number, letter and the answer cue kept.
_INSTRUCTIONS = PromptForm(1, "paraphrase", "ours: the instructions (casinos, machines, goal) reworded", patterns=(
    (r"You are going to visit four different casinos \(named 1, 2, 3 and 4\) (\d+) times each\. ",
     r"There are four casinos, named 1, 2, 3 and 4, and you will visit each of them \1 times. "),
    (r"Each casino owns two slot machines which all return either 1 or 0 dollars stochastically with "
     r"different reward probabilities\. ",
     "In every casino there are two slot machines; each pays out either 1 or 0 dollars at random, and the "
     "machines differ in how likely they are to pay. "),
    (r"Your goal is to maximize the sum of received dollars within (all )?(\d+) visits\.",
     r"Try to earn as many dollars as possible in total over \1\2 visits."),
))
_QUESTION = PromptForm(2, "paraphrase", "ours: the question of each visit reworded", patterns=(
    (r"You are now in visit (\d+) playing in Casino (\d+)\. Which machine do you choose between "
     r"Machine (\w) and Machine (\w)\?",
     r"This is visit \1, and you are in Casino \2. Which machine do you play, Machine \3 or Machine \4?"),
))
_HISTORY = PromptForm(3, "paraphrase", "ours: the record of past visits reworded", patterns=(
    (r"You have received the following amount of dollars when playing in the past: \n",
     "Here is what the machines paid you on your earlier visits: \n"),
    (r"- Machine (\w) in Casino (\d+) delivered ([\d.]+) dollars\.", r"- Casino \2, Machine \1: paid \3 dollars."),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _INSTRUCTIONS, _QUESTION, _HISTORY,
    "ours: instructions, question and record of past visits all reworded (forms 1-3)")


class InstrumentalLearningEnv(TextEnv[InstrumentalDesign, InstrumentalSessions]):
    """CogBench's instrumental-learning task (see module docstring).

    Observation: ``casino`` (1–4), ``trial`` (0-based) and ``prompt``.  Action: arm index 0/1.
    ``info`` holds the hidden ``means`` of the current casino and ``optimal_action``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: Arm 0/1; rewards of 1 or 0 dollars; casinos 1–4 with reward probabilities in [0, 1].
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = InstrumentalDesign
    #: The paper's "A: Machine"; CogBench's code appends
    #: :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`
    #: (a space), dropped here so the prompt ends as the paper prints it.
    answer_prefix: ClassVar[str] = "Machine"

    def __init__(self, design: InstrumentalDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        d = self.design
        # History lines are ~45 characters; the fixed text is < 700.
        self.observation_space = spaces.Dict(
            {
                "casino": spaces.Discrete(d.n_casinos, start=1),
                "trial": spaces.Discrete(d.n_trials + 1),
                "prompt": self.prompt_space(1000 + 60 * d.n_trials),
            }
        )
        self.declare_phases(Phase("answer", spaces.Discrete(2), self.parse_answer))
        self._history: list[str] = []

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(
        cls, design: InstrumentalDesign, n: int, rng: np.random.Generator
    ) -> InstrumentalSessions:
        """Draw letters, trial order, outcomes and option order for ``n`` sessions, each kind for all
        sessions at once: letters and trial order as the (stable) argsort of uniform keys, then one
        uniform per pre-sampled outcome (1 where below the arm's probability) and per option order."""
        n_c, v, t = design.n_casinos, design.visits_per_casino, design.n_trials
        alphabet = np.array(list(design.alphabet))
        letter_idx = rng.random((n, len(alphabet))).argsort(axis=1, kind="stable")[:, : 2 * n_c]
        letters = alphabet[letter_idx].reshape(n, n_c, 2)
        base = np.repeat(np.arange(1, n_c + 1, dtype=np.int64), v)
        casino = base.take(rng.random((n, t)).argsort(axis=1, kind="stable"))
        probs = np.take(np.asarray(design.reward_probs, dtype=np.float64), casino - 1, axis=0)  # (n, t, 2)
        reward_draws = (rng.random(probs.shape) < probs).astype(np.float64)
        flip = rng.random((n, t)) < 0.5
        if not design.randomise_order:
            flip[:] = False
        return InstrumentalSessions(casino=casino, letters=letters, reward_draws=reward_draws,
                                    flip=flip)

    # -- dynamics --------------------------------------------------------------------------
    def _start(self) -> None:
        self._history = []

    @property
    def _s(self) -> InstrumentalSessions:
        assert self.session is not None
        return self.session

    def _current_casino(self) -> int:
        t = min(self.t, self.design.n_trials - 1)
        return int(self._s.casino[0, t])

    def _play(self, action: Any) -> float:
        return float(self._s.reward_draws[0, self.t, int(action)])

    def _record(self, t: int, action: Any, reward: float) -> None:
        if self._is_no_action(action):
            return  # no valid answer: nothing was played, so nothing enters the history
        casino = int(self._s.casino[0, t])
        letter = self._s.letters[0, casino - 1, int(action)]
        self._history.append(f"- Machine {letter} in Casino {casino} delivered {float(reward)} dollars.\n")

    def _observation(self) -> dict[str, Any]:
        done = self.t >= self.design.n_trials
        return {
            "casino": self._current_casino(),
            "trial": self.t,
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        c = self._current_casino()
        means = self.design.reward_probs[c - 1]
        return {"trial": self.t, "means": means, "optimal_action": int(np.argmax(means))}

    # -- rendering and parsing -------------------------------------------------------------
    def offered_letters(self) -> tuple[str, str]:
        """Letters of the current casino's machines in the order the question names them."""
        t = min(self.t, self.design.n_trials - 1)
        c = self._current_casino()
        arm0, arm1 = (str(x) for x in self._s.letters[0, c - 1])
        return (arm1, arm0) if self._s.flip[0, t] else (arm0, arm1)

    def render_prompt(self) -> str:
        """The exact string CogBench sends (text + query specification + answer prefix)."""
        d, t = self.design, self.t
        first, second = self.offered_letters()
        casino = self._current_casino()
        if d.prompt_variant == "paper":
            instructions = (
                f"You are going to visit four different casinos (named 1, 2, 3, and 4) "
                f"{d.visits_per_casino} times each. Each casino owns two slot machines which all "
                "return either 1 or 0 dollars stochastically with different reward probabilities. "
            )
            goal = f"Your goal is to maximize the sum of received dollars within {d.n_trials} visits.\n"
            spec = '(Give the answer in the form "Machine <<<your choice>>>").'
        else:
            instructions = (
                f"You are going to visit four different casinos (named 1, 2, 3 and 4) "
                f"{d.visits_per_casino} times each. Each casino owns two slot machines which all "
                "return either 1 or 0 dollars stochastically with different reward probabilities. "
            )
            within = "all " if t == 0 else ""
            goal = f"Your goal is to maximize the sum of received dollars within {within}{d.n_trials} visits.\n"
            spec = '(Give the answer in the form "Machine <your answer>.")'
        history = ""
        if self._history:
            history = ("You have received the following amount of dollars when playing in the past: \n"
                       + "".join(self._history))
        question = (f"{Q_PREFIX} You are now in visit {t + 1} playing in Casino {casino}. "
                    f"Which machine do you choose between Machine {first} and Machine {second}?")
        return (instructions + goal + "\n" + history + "\n" + question + spec
                + f"{A_PREFIX} {self.answer_prefix}")

    def parse_answer(self, text: str) -> ParseResult:
        """Read "Machine X" / "X" (after the "Machine" prefix: `` X``); X must be offered now.

        The action is the arm index of the named machine in the current casino.
        """
        offered = self.offered_letters()
        echo = echo_of_prompt(text, self.shown_prompt(), offered)
        if echo is not None:
            return echo
        parsed = parse_machine(text, offered, absent="is not offered in this casino")
        if parsed.action is None:
            return parsed
        letter = offered[int(parsed.action)]
        casino = self._current_casino()
        return ParseResult.success(int(list(self._s.letters[0, casino - 1]).index(letter)))

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: InstrumentalDesign, sessions: InstrumentalSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial in the schema of :mod:`cogtestbed.trials`."""
        return finish_table(EXPERIMENT, {**cls._stimulus(design, sessions), **outcome_columns(outcomes)},
                            agent=agent, params=params)

    @classmethod
    def _stimulus(cls, design: InstrumentalDesign, sessions: InstrumentalSessions) -> dict[str, Column]:
        """The stimulus columns (any sessions)."""
        c0 = sessions.casino - 1
        vocabulary, codes = np.unique(sessions.letters, return_inverse=True)
        codes = codes.reshape(sessions.letters.shape)  # (n, casino, arm)
        rows = np.arange(len(c0))[:, None]
        arm0, arm1 = codes[rows, c0, 0], codes[rows, c0, 1]
        letters = [str(v) for v in vocabulary]
        probs = np.asarray(design.reward_probs, dtype=np.float64)
        return {
            "casino": sessions.casino,
            "machine0": strings(arm0, letters),
            "machine1": strings(arm1, letters),
            "shown_first": strings(np.where(sessions.flip, arm1, arm0), letters),
            "mean0": probs[c0, 0],
            "mean1": probs[c0, 1],
            "reward0": sessions.reward_draws[..., 0],
            "reward1": sessions.reward_draws[..., 1],
        }
