"""Balloon Analogue Risk Task (Lejuez et al. 2002) as run by CogBench
(``Experiments/BART/query.py`` + ``envs/bart_env.py``).

Three balloon types with ``max_pumps`` M ∈ (128, 32, 8), labelled A/B/C in a random order
(CogBench shuffles the list of M before labelling), ``balloons_per_type`` balloons each (code:
15; the paper's text says 10 — named variant :meth:`BartDesign.paper`).  The next balloon's type
is drawn uniformly among the types that still have balloons left (not uniformly over the
remaining balloons).  Pump ``k`` (1-based) of a balloon pops it with probability 1/(M − k + 1) —
CogBench's ``p ← p·N/(N−1)`` rule — which is the same as a break point uniform on 1..M drawn when
the balloon appears: the balloon pops on the pump that reaches its break point.

One step (one LLM call) per decision.  Each call re-randomises which option number means "skip"
and which "inflate" (pre-drawn per step).  A skip banks the balloon's points (1 per successful
pump); a pop loses them.  Sessions have variable length (at most Σ balloons·M steps).

Prompt (code): instructions + history + the current balloon's line + ``"\\n\\nQ: You are
currently with balloon 5 which is a balloon of type A. What do you do? (Option 2 for 'skip' or
Option 1 for 'inflate')"`` + ``"\\n\\nA: Option"`` (CogBench's code sends a trailing space; the
paper's text has none, see :attr:`TextEnv.answer_prefix`).  The history header "You observed the
following previously ..." is added after the very first prompt, so it appears from the second
call on, even before any balloon is finished (a quirk of the code, kept).  ``"paper-era"`` renders
the instructions of the paper-era commit (1491337: "In this game will encounter ...").

Invalid answers: CogBench stops in a debugger.  Here an invalid answer voids the current balloon:
it is recorded as invalid (no points, not in the history) and the session moves on to the next
balloon.  Metrics exclude void balloons and count them.

Trial-table stimulus columns (one row per balloon, CogBench's ``trial``): ``balloon`` (letter),
``balloon_idx`` (letter index), ``max_pumps`` (M), ``balloon_trial`` (earlier balloons of this
type), ``break_point`` (hidden ground truth), ``pumps``, ``exploded``, ``n_decisions``.
``action`` = the balloon's number of pumps, ``reward`` = its points.  ``raw_response`` /
``parse_error`` join the balloon's per-decision texts with ``" | "``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import Field, field_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, parse_option_number
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.bart import ALPHABET, EXPERIMENT, SCHEMA
from cogtestbed.trials import finish_table

Q_PREFIX, A_PREFIX = "\n\nQ:", "\n\nA:"
SKIP, INFLATE = 0, 1


class BartDesign(Design):
    """Design of the task; defaults are CogBench's released code (15 balloons per type)."""

    max_pumps: tuple[int, ...] = (128, 32, 8)
    balloons_per_type: int = Field(default=15, ge=1, le=1000)
    prompt_variant: Literal["code", "paper-era"] = "code"

    @field_validator("max_pumps")
    @classmethod
    def _types(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(v) <= len(ALPHABET) or any(m < 1 for m in v):
            raise InputError(f"max_pumps must hold 1-{len(ALPHABET)} positive integers")
        return v

    @property
    def n_types(self) -> int:
        return len(self.max_pumps)

    @property
    def n_balloons(self) -> int:
        return self.n_types * self.balloons_per_type

    @property
    def n_trials(self) -> int:
        return self.n_balloons

    @classmethod
    def paper(cls, **overrides: Any) -> BartDesign:
        """The paper's text: 10 balloons per type (30 in all)."""
        return cls(balloons_per_type=10, **overrides)


@dataclass(frozen=True)
class BartSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    type_max: np.ndarray  # (N, n_types) int64, M of the type labelled A, B, C, ...
    sequence: np.ndarray  # (N, n_balloons) int64, letter index of each balloon
    break_point: np.ndarray  # (N, n_balloons) int64, pump on which the balloon pops (1..M)
    skip_is_two: np.ndarray  # (N, max_steps) bool, True: Option 2 = skip, Option 1 = inflate


@njit(cache=True)
def balloons_from_steps(
    action: np.ndarray, valid: np.ndarray, played: np.ndarray, break_point: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replay per-step decisions into per-balloon outcomes.

    Returns (pumps, exploded, valid, first_step, n_decisions), each (N, n_balloons).  A balloon
    ends on a skip, on the pump that reaches its break point, or on an invalid answer (void).
    """
    n, n_steps = action.shape
    nb = break_point.shape[1]
    pumps = np.zeros((n, nb), dtype=np.int64)
    exploded = np.zeros((n, nb), dtype=np.bool_)
    ok = np.zeros((n, nb), dtype=np.bool_)
    first = np.full((n, nb), -1, dtype=np.int64)
    count = np.zeros((n, nb), dtype=np.int64)
    for i in range(n):
        b = 0
        k = 0
        for s in range(n_steps):
            if b >= nb or not played[i, s]:
                break
            if k == 0 and count[i, b] == 0:
                first[i, b] = s
            count[i, b] += 1
            if not valid[i, s]:
                pumps[i, b] = k
                b += 1
                k = 0
                continue
            if action[i, s] == SKIP:
                pumps[i, b] = k
                ok[i, b] = True
                b += 1
                k = 0
            else:
                k += 1
                if k >= break_point[i, b]:
                    pumps[i, b] = k
                    exploded[i, b] = True
                    ok[i, b] = True
                    b += 1
                    k = 0
    return pumps, exploded, ok, first, count


# -- prompt forms (cogtestbed.environments.forms): form 0 is CogBench's verbatim prompt; the rest
# are this project's rewordings, with every number, label and the answer cue kept.
_INSTRUCTIONS = PromptForm(1, "paraphrase", "ours: the opening of the instructions reworded", patterns=(
    (r"There will be a total of (\d+) balloons for each type of balloon\. ",
     r"You will see \1 balloons of each type. "),
    (r"Your goal is to accumulate as many points as possible without popping the balloon\.",
     "Aim to collect as many points as you can without letting a balloon pop."),
    (r"You will be presented with a balloon and given the option to inflate it or not\.",
     "Each balloon is shown to you, and you choose whether to inflate it or not."),
    (r"Each inflation increases the balloon's size and potential points, but also carries a risk of the balloon "
     r"popping\.", "Every inflation makes the balloon bigger and worth more points, but it may also make the "
     "balloon pop."),
))
_QUESTION = PromptForm(2, "paraphrase", "ours: the question about the current balloon reworded", patterns=(
    (r"You are currently with balloon (\d+) which is a balloon of type (\w)\. What do you do\?",
     r"Balloon \1 is in front of you; it is of type \2. What is your choice?"),
))
_ORDER = PromptForm(3, "option-order", "ours: 'inflate' named before 'skip' (each keeps its option number)",
                    patterns=((r"\(Option (\d) for 'skip' or Option (\d) for 'inflate'\)",
                               r"(Option \2 for 'inflate' or Option \1 for 'skip')"),))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _INSTRUCTIONS, _QUESTION, _ORDER, "ours: instructions and question reworded, 'inflate' named first (forms 1-3)")


class BartEnv(TextEnv[BartDesign, BartSessions]):
    """CogBench's BART (see module docstring).

    Observation: ``balloon`` (index in the session), ``balloon_type`` (letter index),
    ``max_pumps`` (the type's M, known to a synthetic agent as its type), ``pumps`` (successful
    pumps so far on this balloon) and ``prompt``.  Action: 0 = skip, 1 = inflate.  ``info``
    holds the hidden ``break_point``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: A balloon's pumps (``action``) lie in 0..M; it pays its pumps unless it popped (0 points).
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = BartDesign
    #: The paper's "A: Option"; CogBench's code appends
    #: :data:`~cogtestbed.environments.base.COGBENCH_CODE_ANSWER_SUFFIX`
    #: (a space), dropped here so the prompt ends as the paper prints it.
    answer_prefix: ClassVar[str] = "Option"

    def __init__(self, design: BartDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        d = self.design
        self.observation_space = spaces.Dict(
            {
                "balloon": spaces.Discrete(d.n_balloons + 1),
                "balloon_type": spaces.Discrete(d.n_types),
                "max_pumps": spaces.Discrete(max(d.max_pumps) + 1),
                "pumps": spaces.Discrete(max(d.max_pumps) + 1),
                "prompt": self.prompt_space(2000 + 120 * d.n_balloons),
            }
        )
        self.declare_phases(Phase("answer", spaces.Discrete(2), self.parse_answer))
        self._history = ""
        self._observations = ""
        self._balloon = 0
        self._pumps = 0

    @classmethod
    def max_steps(cls, design: Design) -> int:
        d: BartDesign = design  # type: ignore[assignment]
        return d.balloons_per_type * sum(d.max_pumps)

    # -- stochastic design -----------------------------------------------------------------
    @classmethod
    def sample_sessions(cls, design: BartDesign, n: int, rng: np.random.Generator) -> BartSessions:
        """Labels, balloon order (uniform over types with balloons left), break points, options."""
        nt, per, nb = design.n_types, design.balloons_per_type, design.n_balloons
        m = np.asarray(design.max_pumps, dtype=np.int64)
        type_max = m[rng.random((n, nt)).argsort(axis=1)]
        left = np.full((n, nt), per, dtype=np.int64)
        sequence = np.empty((n, nb), dtype=np.int64)
        u = rng.random((n, nb))
        for b in range(nb):
            avail = left > 0
            n_avail = avail.sum(axis=1)
            pick = np.minimum((u[:, b] * n_avail).astype(np.int64), n_avail - 1)
            # index of the pick-th available type
            rank = np.cumsum(avail, axis=1) - 1
            choice = np.argmax(avail & (rank == pick[:, None]), axis=1)
            sequence[:, b] = choice
            left[np.arange(n), choice] -= 1
        bm = np.take_along_axis(type_max, sequence, axis=1)
        break_point = np.minimum((rng.random((n, nb)) * bm).astype(np.int64) + 1, bm)
        skip_is_two = rng.random((n, cls.max_steps(design))) < 0.5
        return BartSessions(type_max=type_max, sequence=sequence, break_point=break_point,
                            skip_is_two=skip_is_two)

    # -- dynamics --------------------------------------------------------------------------
    @property
    def _s(self) -> BartSessions:
        assert self.session is not None
        return self.session

    def _start(self) -> None:
        self._history = ""
        self._observations = ""
        self._balloon = 0
        self._pumps = 0

    def _terminated(self) -> bool:
        return self._balloon >= self.design.n_balloons

    def _letter(self) -> str:
        return ALPHABET[int(self._s.sequence[0, min(self._balloon, self.design.n_balloons - 1)])]

    def lapse_unit(self) -> int:
        """A lapse covers the whole balloon (every pump decision of it), the unit of the target
        model's lapse mixture: a random balloon is a fair coin on every decision, an invalid one is
        voided at its first decision."""
        return self._balloon

    def _play(self, action: Any) -> float:
        if int(action) == SKIP:
            return float(self._pumps)
        self._pumps += 1
        return 0.0

    def _record(self, t: int, action: Any, reward: float) -> None:
        if t == 0:
            self._history += ("\n\n You observed the following previously where the type of balloon "
                              "is given in parenthesis:")
        b, letter, k = self._balloon, self._letter(), self._pumps
        if self._is_no_action(action):
            self._next_balloon()  # void balloon: no points, no history line
            return
        exploded = int(action) == INFLATE and k >= int(self._s.break_point[0, b])
        if int(action) == SKIP or exploded:
            self._history += (f"\n -Balloon {b + 1} ({letter}): You inflated the balloon {k} times "
                              f"for a total of {0 if exploded else k} points. It did "
                              f"{'' if exploded else 'not '}explode.")
            self._next_balloon()
        else:
            self._observations = (f"\n -Balloon {b + 1} ({letter}): You inflated the balloon {k} "
                                  f"times for a total of {k} points.")

    def _next_balloon(self) -> None:
        self._balloon += 1
        self._pumps = 0
        self._observations = ""

    def _observation(self) -> dict[str, Any]:
        b = min(self._balloon, self.design.n_balloons - 1)
        idx = int(self._s.sequence[0, b])
        return {
            "balloon": self._balloon,
            "balloon_type": idx,
            "max_pumps": int(self._s.type_max[0, idx]),
            "pumps": self._pumps,
            "prompt": "(session finished)" if self._terminated() else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        b = min(self._balloon, self.design.n_balloons - 1)
        return {"trial": self.t, "balloon": self._balloon,
                "break_point": int(self._s.break_point[0, b])}

    # -- rendering and parsing -------------------------------------------------------------
    def option_numbers(self) -> tuple[int, int]:
        """(option number of skip, option number of inflate) on the current call."""
        return (2, 1) if self._s.skip_is_two[0, self.t] else (1, 2)

    def instructions(self) -> str:
        d = self.design
        labels = ALPHABET[: d.n_types]
        listed = ", ".join(labels[:-1]) + " and " + labels[-1]
        you = "" if d.prompt_variant == "paper-era" else "you "
        return (
            f"In this game {you}will encounter {d.n_types} different balloons labeled {listed}."
            f" There will be a total of {d.balloons_per_type} balloons for each type of balloon. "
            "Your goal is to accumulate as many points as possible without popping the balloon."
            " You will be presented with a balloon and given the option to inflate it or not."
            " Each inflation increases the balloon's size and potential points, but also carries "
            "a risk of the balloon popping. Your task is to decide whether to inflate the balloon "
            "or not knowing that a successful inflation adds 1 point from that balloon."
            " Once you decide to stop inflating the balloon, you can no longer earn points from "
            "that balloon. If the balloon pops before you stop inflating (skip), you will lose all "
            "the points accumulated for that balloon. Your final score will be determined by the "
            f"total number of points earned across all {d.n_balloons} balloons. "
            "Your goal is to maximize your final score. "
        )

    def render_prompt(self) -> str:
        """The exact string CogBench sends for the current decision."""
        skip, inflate = self.option_numbers()
        return (
            self.instructions() + self._history + self._observations
            + f"{Q_PREFIX} You are currently with balloon {self._balloon + 1} which is a balloon of "
            f"type {self._letter()}. What do you do? (Option {skip} for 'skip' or Option {inflate} "
            f"for 'inflate')" + f"{A_PREFIX} {self.answer_prefix}"
        )


    def parse_answer(self, text: str) -> ParseResult:
        """Read the option number ("1"/"2" after "Option ") and map it to skip/inflate; an echo of
        the question (both options restated) is no answer (:func:`echo_of_prompt`)."""
        parsed = echo_of_prompt(text, self.shown_prompt(), ("1", "2")) or parse_option_number(text)
        if parsed.action is None:
            return parsed
        skip, _ = self.option_numbers()
        return ParseResult.success(SKIP if int(parsed.action) + 1 == skip else INFLATE)

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: BartDesign, sessions: BartSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per balloon (CogBench's trial) in the schema of :mod:`cogtestbed.trials`."""
        played = outcomes.played if outcomes.played is not None else np.ones_like(outcomes.valid)
        pumps, exploded, ok, first, count = kernel(balloons_from_steps)(
            np.ascontiguousarray(outcomes.action, dtype=np.int64), outcomes.valid, played,
            sessions.break_point,
        )
        n, nb = pumps.shape
        letters = np.array(list(ALPHABET[: design.n_types]), dtype=object)
        type_m = np.take_along_axis(sessions.type_max, sessions.sequence, axis=1)
        # earlier balloons of the same type (CogBench's balloon_trial)
        onehot = sessions.sequence[..., None] == np.arange(design.n_types)
        earlier = (np.cumsum(onehot, axis=1) - onehot)[np.arange(n)[:, None], np.arange(nb), sessions.sequence]
        stimulus = {
            "balloon": letters[sessions.sequence],
            "balloon_idx": sessions.sequence,
            "max_pumps": type_m,
            "balloon_trial": earlier,
            "break_point": sessions.break_point,
            "pumps": pumps,
            "exploded": exploded,
            "n_decisions": count,
        }
        reward = np.where(ok, np.where(exploded, 0.0, pumps.astype(np.float64)), np.nan)
        raw = err = None
        if outcomes.raw_response is not None and any(x is not None for x in outcomes.raw_response.ravel()):
            raw = _join_steps(outcomes.raw_response, first, count)
        if outcomes.parse_error is not None and any(x is not None for x in outcomes.parse_error.ravel()):
            err = _join_steps(outcomes.parse_error, first, count)
        return finish_table(EXPERIMENT, {**stimulus, "action": pumps, "reward": reward, "valid": ok,
                                          "raw_response": raw, "parse_error": err}, agent=agent, params=params)


def _join_steps(per_step: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    out = np.full(first.shape, None, dtype=object)
    for i, b in zip(*np.nonzero(first >= 0), strict=True):
        parts = [str(x) for x in per_step[i, first[i, b] : first[i, b] + count[i, b]] if x is not None]
        out[i, b] = " | ".join(parts) if parts else None
    return out
