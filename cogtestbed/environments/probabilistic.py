"""Probabilistic reasoning (Dasgupta et al. 2020) as run by CogBench (``ProbabilisticReasoning``).

A wheel of fortune with 10 sections labelled F or J (the prior) selects one of two urns of 10
red/blue balls (the likelihood); one ball is drawn and the subject reports P(urn = left label |
ball colour).  Each session is CogBench's *run*: two one-shot judgements without history, first an
informative-likelihood trial, then an informative-prior trial.

Design (released code, ``query.py`` + ``envs/urns_exp.py``; Coda-Forno et al. 2024):

* informative side — P(red | left urn) or P(left urn) — drawn from {.1, .2, .3, .7, .8, .9};
  the uninformative side from {.4, .5, .5, .6} (0.5 twice: CogBench's own weighting);
* F/J are assigned to left/right by a fair coin per trial; the question always asks about the
  left label; the right urn is the mirror image (1 − p);
* urn ~ Bernoulli(prior), ball ~ Bernoulli(P(red | urn)).

The ``"paper"`` variant uses the paper's wording ("labeled", one space before "ball") and its
narrower probability sets (informative likelihood .7/.8/.9 with prior .5/.6 and the reverse).

Response: the completion after ``"... to be 0."``, read as the decimals of a probability (two
digits in CogBench, ``max_tokens = 2``).  The parser never substitutes a random number (CogBench
does): an answer without digits, or with several numbers, is invalid, with its reason.

Trial-table stimulus columns: ``trial_type`` (``"likelihood"`` or ``"prior"``: which side is
informative), ``informative_lh`` (CogBench's boolean), ``left_label`` (F or J), ``prior``
(P(left urn)), ``lh`` (P(red | left urn)), ``red_observation`` (ball colour), ``likelihood``
(P(observed colour | left urn)), ``posterior`` (the Bayes posterior of the left urn),
``urn_left`` (hidden: whether the left urn was drawn), ``estimate`` (the reported probability,
NaN when invalid) and ``cogbench_human_lh`` (True only for rows imported from CogBench's human
file, whose scoring flips the likelihood twice, see :mod:`cogtestbed.inference.probabilistic`).
``action`` is the estimate in hundredths, rounded (the exact value is ``estimate``); ``reward`` is
the trial's posterior accuracy 1 − |posterior − estimate|.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import field_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import parse_decimal_digits
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.probabilistic import EXPERIMENT, SCHEMA, TRIAL_TYPES, bayes_posterior, stimulus_table

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
#: CogBench's default number of runs (``query.py``); the paper says 100.
CODE_RUNS, PAPER_RUNS = 200, 100
class ProbabilisticDesign(Design):
    """Design of the urn task; defaults are CogBench's released code."""

    informative_probs: tuple[float, ...] = (0.1, 0.2, 0.3, 0.7, 0.8, 0.9)
    uninformative_probs: tuple[float, ...] = (0.4, 0.5, 0.5, 0.6)
    randomise_labels: bool = True
    prompt_variant: Literal["code", "paper"] = "code"

    @field_validator("informative_probs", "uninformative_probs")
    @classmethod
    def _tenths(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        # 10 wheel sections and 10 balls per urn: probabilities are whole tenths strictly inside (0, 1)
        if not v or any(not 0.0 < p < 1.0 or abs(p * 10 - round(p * 10)) > 1e-9 for p in v):
            raise InputError("probabilities must be non-empty multiples of 0.1 strictly between 0 and 1")
        return v

    @property
    def n_trials(self) -> int:
        return len(TRIAL_TYPES)

    @classmethod
    def paper(cls, **overrides: Any) -> ProbabilisticDesign:
        """The paper's wording and probability sets (informative .7/.8/.9, flat .5/.6)."""
        values: dict[str, Any] = {"informative_probs": (0.7, 0.8, 0.9),
                                  "uninformative_probs": (0.5, 0.6), "prompt_variant": "paper"}
        values.update(overrides)
        return cls(**values)


@dataclass(frozen=True)
class ProbabilisticSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject; second: the two trials)."""

    left_is_f: np.ndarray  # (N, 2) bool: the left urn is labelled F
    prior: np.ndarray  # (N, 2) P(left urn)
    lh: np.ndarray  # (N, 2) P(red | left urn)
    urn_left: np.ndarray  # (N, 2) bool: the wheel selected the left urn (hidden)
    red: np.ndarray  # (N, 2) bool: a red ball was drawn


@njit(cache=True)
def _urn_draws(label_u: np.ndarray, informative: np.ndarray, flat: np.ndarray, urn_u: np.ndarray, ball_u: np.ndarray,
               randomise_labels: bool) -> tuple[np.ndarray, ...]:
    """The sessions' arrays from their uniforms and drawn probabilities, (N, 2) each: left label F
    iff u < ½ (always F without randomised labels); trial 0 has the informative likelihood and a flat
    prior, trial 1 the reverse; the left urn iff u < prior; a red ball iff u < P(red | urn), the
    right urn being the mirror image (1 − lh)."""
    n = label_u.shape[0]
    left_is_f, urn_left, red = np.empty((n, 2), np.bool_), np.empty((n, 2), np.bool_), np.empty((n, 2), np.bool_)
    prior, lh = np.empty((n, 2)), np.empty((n, 2))
    for i in range(n):
        lh[i, 0], prior[i, 0] = informative[i, 0], flat[i, 0]
        lh[i, 1], prior[i, 1] = flat[i, 1], informative[i, 1]
    for i in range(n):
        for t in range(2):
            left_is_f[i, t] = (label_u[i, t] < 0.5) | (not randomise_labels)
            urn = urn_u[i, t] < prior[i, t]
            urn_left[i, t] = urn
            u = ball_u[i, t]  # P(red | urn) is lh for the left urn, 1 − lh for the right (no branch)
            red[i, t] = (urn & (u < lh[i, t])) | ((not urn) & (u < 1.0 - lh[i, t]))
    return left_is_f, prior, lh, urn_left, red


# ----------------------------------------------------------------------------- environment
# -- prompt forms (cogtestbed.environments.forms): form 0 is CogBench's verbatim prompt; the rest
# are this project's rewordings, with every number, label and the answer cue kept.
_SETTING = PromptForm(1, "paraphrase", "ours: the setting (wheel, urns, the other person) reworded", replacements=(
    ("You are participating in an experiment where you are provided with a wheel of fortune and two urns.",
     "In this experiment you are given a wheel of fortune and two urns."),
    ("Another person will spin the wheel of fortune, select an urn based on the outcome of the spin, and then "
     "randomly pick a ball from the selected urn.",
     "Someone else spins the wheel, takes the urn that the spin points to, and draws a ball at random from it."),
))
_GOAL = PromptForm(2, "paraphrase", "ours: the goal sentence reworded", replacements=(
    ("Your goal is to give your best estimate of the probability of the urn being",
     "Your task is to estimate, as well as you can, the probability that the urn is"),
))
_QUESTION = PromptForm(3, "paraphrase", "ours: the question of each trial reworded", patterns=(
    (r"What is the probability that it was drawn from Urn (\w)\?", r"How likely is it that it came from Urn \1?"),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _SETTING, _GOAL, _QUESTION, "ours: setting, goal and question all reworded (forms 1-3)")


class ProbabilisticReasoningEnv(TextEnv[ProbabilisticDesign, ProbabilisticSessions]):
    """CogBench's urn task (see module docstring).

    Observation: ``trial`` (0/1), ``trial_type`` (0 informative likelihood, 1 informative prior),
    ``prior`` (P(left urn)), ``lh`` (P(red | left urn)), ``red`` (0/1) and ``prompt``.  Action:
    the reported P(left urn | ball) in [0, 1] (one continuous phase, recorded as a float in
    ``outcomes.action``).  ``info`` holds the Bayes ``posterior`` and the hidden ``urn_left``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: One-shot judgements: no feedback, no adaptive design, so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    #: The estimate in hundredths (0–100) and as a probability; reward = posterior accuracy in [0, 1].
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = ProbabilisticDesign
    action_dtype: ClassVar[Any] = np.float64

    def __init__(self, design: ProbabilisticDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        unit = spaces.Box(0.0, 1.0, shape=(), dtype=np.float64)
        self.observation_space = spaces.Dict(
            {
                "trial": spaces.Discrete(self.design.n_trials + 1),
                "trial_type": spaces.Discrete(2),
                "prior": unit,
                "lh": unit,
                "red": spaces.Discrete(2),
                "prompt": self.prompt_space(1500),
            }
        )
        self.declare_phases(Phase("estimate", spaces.Box(0.0, 1.0, shape=(), dtype=np.float64), self.parse_estimate))

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(
        cls, design: ProbabilisticDesign, n: int, rng: np.random.Generator
    ) -> ProbabilisticSessions:
        """Draw labels, prior/likelihood, urn and ball for ``n`` sessions of two trials."""
        inf = np.asarray(design.informative_probs, dtype=np.float64)
        uninf = np.asarray(design.uninformative_probs, dtype=np.float64)
        # every draw is made before any is used (none depends on another's value): one pass builds the rest
        label_u = rng.random((n, 2))
        informative_i = rng.integers(0, len(inf), size=(n, 2))
        flat_i = rng.integers(0, len(uninf), size=(n, 2))
        urn_u, ball_u = rng.random((n, 2)), rng.random((n, 2))
        left_is_f, prior, lh, urn_left, red = kernel(_urn_draws)(
            label_u, inf[informative_i], uninf[flat_i], urn_u, ball_u, design.randomise_labels)
        return ProbabilisticSessions(left_is_f=left_is_f, prior=prior, lh=lh, urn_left=urn_left, red=red)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> ProbabilisticSessions:
        assert self.session is not None
        return self.session

    def _start(self) -> None:
        """Nothing to prepare: each judgement is a one-shot prompt."""

    def _cur(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    def likelihood(self) -> float:
        """P(observed colour | left urn) on the current trial."""
        t = self._cur()
        lh = float(self._s.lh[0, t])
        return lh if bool(self._s.red[0, t]) else 1.0 - lh

    def posterior(self) -> float:
        return float(bayes_posterior(self._s.prior[0, self._cur()], self.likelihood()))

    def _play(self, action: Any) -> float:
        """Posterior accuracy of the reported probability: 1 − |posterior − estimate|."""
        return 1.0 - abs(self.posterior() - float(action))

    def _observation(self) -> dict[str, Any]:
        t = self._cur()
        done = self.t >= self.design.n_trials
        return {
            "trial": self.t,
            "trial_type": t,
            "prior": np.float64(self._s.prior[0, t]),
            "lh": np.float64(self._s.lh[0, t]),
            "red": int(self._s.red[0, t]),
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        t = self._cur()
        return {"trial": self.t, "posterior": self.posterior(), "urn_left": bool(self._s.urn_left[0, t])}

    # -- rendering and parsing -------------------------------------------------------------
    def labels(self) -> tuple[str, str]:
        """(left label, right label) of the current trial."""
        return ("F", "J") if bool(self._s.left_is_f[0, self._cur()]) else ("J", "F")

    def answer_prefix_text(self) -> str:
        """CogBench's ``format_answer`` for the current trial (it names the colour and label)."""
        left, _ = self.labels()
        colour = "red" if bool(self._s.red[0, self._cur()]) else "blue"
        return f"I estimate the probability of the {colour} ball to be drawn from the urn {left} to be 0."

    def render_prompt(self) -> str:
        """The exact string CogBench sends: instructions + query + ``"\\n\\nA: "`` + answer prefix."""
        t = self._cur()
        left, right = self.labels()
        paper = self.design.prompt_variant == "paper"
        word = "labeled" if paper else "labelled"
        k = int(round(float(self._s.prior[0, t]) * 10))
        m = int(round(float(self._s.lh[0, t]) * 10))
        colour = "red" if bool(self._s.red[0, t]) else "blue"
        instructions = (
            "You are participating in an experiment where you are provided with a wheel of fortune "
            "and two urns."
            f" The wheel of fortune contains 10 evenly sized sections {word} either {left} or {right},"
            f" corresponding to the urns {left} and {right}."
            " Another person will spin the wheel of fortune, select an urn based on the outcome of the"
            " spin, and then randomly pick a ball from the selected urn."
            f" Your goal is to give your best estimate of the probability of the urn being {left}"
            " after observing the ball drawn from the urn."
        )
        space = " " if paper else "  "  # CogBench's f-string has two spaces before "ball"
        query = (
            f"{Q_PREFIX} The wheel of fortune contains {k} section{'s' if k > 1 else ''} {word} {left}"
            f" and {10 - k} section{'s' if 10 - k > 1 else ''} {word} {right}."
            f" The urn {left} contains ({m}, {10 - m}) and the urn {right} contains ({10 - m}, {m})"
            f" red/blue balls. A {colour}{space}ball was drawn. What is the probability that it was"
            f" drawn from Urn {left}? (Give your probability estimate on the scale from 0 to 1"
            " rounded to two decimal places)"
        )
        return instructions + query + f"{A_PREFIX} " + self.answer_prefix_text()

    def parse_estimate(self, text: str) -> ParseResult:
        """Read the digits completing ``"... to be 0."`` (see :func:`parse_decimal_digits`)."""
        return parse_decimal_digits(text, "probability")

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: ProbabilisticDesign, sessions: ProbabilisticSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per judgement in the schema of :mod:`cogtestbed.trials`."""
        n = sessions.n_subjects
        estimate = np.where(outcomes.valid, np.asarray(outcomes.action, dtype=np.float64), np.nan)
        informative_lh = np.broadcast_to(np.array([True, False]), (n, 2))
        return stimulus_table(
            sessions.prior, sessions.lh, sessions.red, informative_lh, sessions.left_is_f, estimate,
            outcomes.valid, agent=agent, urn_left=sessions.urn_left,
            raw_response=outcomes.raw_response, parse_error=outcomes.parse_error, params=params,
        )
