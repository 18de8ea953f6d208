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
import pyarrow as pa
from gymnasium import spaces
from numba import njit
from pydantic import Field, field_validator

from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.draws import argsort_uniform_rows, bernoulli
from cogtestbed.environments.parsing import parse_machine
from cogtestbed.environments.pcg64 import cursors, is_pcg64, put_state, step_key, unit
from cogtestbed.jit_cache import compiled_pays
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.instrumental import EXPERIMENT, SCHEMA
from cogtestbed.trials import CodedNumbers, CodedStrings, Column, finish_table, fresh_column

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
            raise ValueError("reward_probs must be four (p0, p1) pairs of probabilities")
        return v

    @field_validator("alphabet")
    @classmethod
    def _letters(cls, v: str) -> str:
        if len(set(v)) != len(v) or len(v) < 8 or not v.isalpha() or not v.isupper():
            raise ValueError("alphabet must hold at least 8 distinct upper-case letters")
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


class InstrumentalLearningEnv(TextEnv[InstrumentalDesign, InstrumentalSessions]):
    """CogBench's instrumental-learning task (see module docstring).

    Observation: ``casino`` (1–4), ``trial`` (0-based) and ``prompt``.  Action: arm index 0/1.
    ``info`` holds the hidden ``means`` of the current casino and ``optimal_action``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    #: Arm 0/1; rewards of 1 or 0 dollars; casinos 1–4 with reward probabilities in [0, 1].
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = InstrumentalDesign
    answer_prefix: ClassVar[str] = "Machine "

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
        """Draw letters, trial order, outcomes and option order for ``n`` sessions: letters and
        trial order as the argsort of uniform keys, then one uniform per pre-sampled outcome and per
        option order, each kind for all sessions at once (:meth:`_sample_numpy`).  From numpy's PCG64
        the same draws are read in one compiled pass (:meth:`_sample_compiled`): the same sessions,
        the generator left in the same state."""
        if is_pcg64(rng) and max(design.n_trials, len(design.alphabet)) <= PACKED_MAX and compiled_pays(
                n * design.n_trials, COMPILED_MIN_TRIALS, _draw_sessions):
            return cls._sample_compiled(design, n, rng)
        return cls._sample_numpy(design, n, rng)

    @classmethod
    def _sample_numpy(cls, design: InstrumentalDesign, n: int, rng: np.random.Generator) -> InstrumentalSessions:
        """:meth:`sample_sessions` with whole-array numpy draws (any generator): the argsorts in O(T)
        per session (:func:`~cogtestbed.environments.draws.argsort_uniform_rows`)."""
        n_c, v, t = design.n_casinos, design.visits_per_casino, design.n_trials
        alphabet = np.array(list(design.alphabet))
        letter_idx = argsort_uniform_rows(rng.random((n, len(alphabet))))[:, : 2 * n_c]
        letters = alphabet[letter_idx].reshape(n, n_c, 2)
        base = np.repeat(np.arange(1, n_c + 1, dtype=np.int64), v)
        casino = base.take(argsort_uniform_rows(rng.random((n, t))))
        probs = np.take(np.asarray(design.reward_probs, dtype=np.float64), casino - 1, axis=0)  # (n, t, 2)
        reward_draws = bernoulli(probs, rng)
        flip = rng.random((n, t)) < 0.5
        if not design.randomise_order:
            flip[:] = False
        return InstrumentalSessions(casino=casino, letters=letters, reward_draws=reward_draws,
                                    flip=flip)

    @classmethod
    def _sample_compiled(cls, design: InstrumentalDesign, n: int, rng: np.random.Generator) -> InstrumentalSessions:
        """:meth:`sample_sessions` in one compiled pass over the subjects (:func:`_draw_sessions`): the
        same sessions, and ``rng`` left in the same state."""
        n_c, t, n_letters = design.n_casinos, design.n_trials, len(design.alphabet)
        cur, inc, end = cursors(rng, [n * n_letters, n * t, n * t * 2, n * t])
        casino = np.empty((n, t), dtype=np.int64)
        letter_idx = np.empty((n, 2 * n_c), dtype=np.int64)
        reward_draws = np.empty((n, t, 2), dtype=np.float64)
        flip = np.empty((n, t), dtype=np.bool_)
        _draw_sessions(cur, inc, n_letters, design.visits_per_casino, np.asarray(design.reward_probs, dtype=np.float64),
                       casino, letter_idx, reward_draws, flip)
        put_state(rng, end)
        if not design.randomise_order:
            flip[:] = False
        letters = np.array(list(design.alphabet))[letter_idx].reshape(n, n_c, 2)
        return InstrumentalSessions(casino=casino, letters=letters, reward_draws=reward_draws, flip=flip)

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
        """Read "Machine X" / "X" (after the "Machine " prefix); X must be offered now.

        The action is the arm index of the named machine in the current casino.
        """
        offered = self.offered_letters()
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
        """One row per trial in the schema of :mod:`cogtestbed.trials`.

        The stimulus columns are written in one compiled pass (:func:`_stimulus_rows`) when the
        sessions hold the arrays :meth:`sample_sessions` draws (int64 casinos, float64 outcomes,
        ASCII letters) and are many (:data:`COMPILED_MIN_TRIALS`); others (few, or built by hand)
        take whole-array numpy steps (:meth:`_stimulus`).  Both give the same table.
        """
        many = compiled_pays(sessions.casino.size, COMPILED_MIN_TRIALS, _stimulus_rows)
        fast = cls._compiled_stimulus(design, sessions) if many else None
        stimulus = fast if fast is not None else cls._stimulus(design, sessions)
        return finish_table(
            EXPERIMENT, stimulus, outcomes.action, outcomes.reward, outcomes.valid, agent=agent,
            raw_response=outcomes.raw_response, parse_error=outcomes.parse_error, params=params,
        )

    @classmethod
    def _compiled_stimulus(cls, design: InstrumentalDesign,
                           sessions: InstrumentalSessions) -> dict[str, Column] | None:
        """The stimulus columns as fresh flat arrays, or None where the sessions' arrays are not the
        drawn types.  Letters are single ASCII bytes, so each letter column is an Arrow string array
        of one byte a row; the three share one offsets buffer (Arrow buffers are immutable)."""
        s = sessions
        if (s.casino.dtype != np.int64 or s.reward_draws.dtype != np.float64 or s.flip.dtype != np.bool_
                or s.letters.dtype != np.dtype("<U1") or s.casino.ndim != 2):
            return None
        points = np.ascontiguousarray(s.letters).view(np.uint32)
        if points.size and (points.max() >= 128 or points.min() == 0):
            return None
        casino, first, second, shown, mean0, mean1, reward0, reward1 = _stimulus_rows(
            s.casino, np.ascontiguousarray(points.astype(np.uint8)).reshape(len(s.casino), -1, 2),
            np.ascontiguousarray(s.flip), np.ascontiguousarray(s.reward_draws),
            np.asarray(design.reward_probs, dtype=np.float64))
        offsets = pa.py_buffer(np.arange(casino.size + 1, dtype=np.int64))

        def letters(data: np.ndarray) -> Column:
            array = pa.LargeStringArray.from_buffers(data.size, offsets, pa.py_buffer(data), None, null_count=0)
            return pd.arrays.ArrowStringArray(pa.chunked_array([array]))

        return {"casino": fresh_column(casino), "machine0": letters(first), "machine1": letters(second),
                "shown_first": letters(shown), "mean0": fresh_column(mean0), "mean1": fresh_column(mean1),
                "reward0": fresh_column(reward0), "reward1": fresh_column(reward1)}

    @classmethod
    def _stimulus(cls, design: InstrumentalDesign, sessions: InstrumentalSessions) -> dict[str, Column]:
        """The stimulus columns from whole-array numpy steps (any sessions)."""
        c0 = sessions.casino - 1
        letters = CodedStrings.encode(sessions.letters)
        # column of arm 0 of each trial's casino among a subject's (casino, arm) letters, flattened
        arm0 = c0 * 2
        arm0 += np.arange(0, letters.codes.size, 2 * design.n_casinos)[:, None]
        flat = letters.codes.reshape(-1)
        machine0 = CodedStrings(flat.take(arm0), letters.vocabulary)
        arm0 += 1
        machine1 = CodedStrings(flat.take(arm0), letters.vocabulary)
        probs = np.asarray(design.reward_probs, dtype=np.float64)
        return {
            "casino": sessions.casino,
            "machine0": machine0,
            "machine1": machine1,
            "shown_first": machine1.where(sessions.flip, machine0),
            "mean0": CodedNumbers(c0, probs[:, 0]),
            "mean1": CodedNumbers(c0, probs[:, 1]),
            "reward0": sessions.reward_draws[..., 0],
            "reward1": sessions.reward_draws[..., 1],
        }


#: Fewer trials than this are drawn and tabled with numpy until the compiled passes are loaded: loading
#: them (tens of ms once per process) costs more than numpy spends on them (~50 ns a trial), e.g. on the
#: step path's one-session resets.
COMPILED_MIN_TRIALS = 200_000


#: Longest row of keys the compiled draw sorts packed with their positions in one 64-bit word (a
#: uniform's 53 bits, an 11-bit position); longer sessions take numpy's draws.
PACKED_MAX = 2**11
_POSITION_BITS = np.uint64(11)
_POSITION_MASK = np.uint64(PACKED_MAX - 1)


#: Compare-exchange passes over neighbours (even pairs, odd pairs, even pairs) after the bucket sort:
#: they order any bucket of up to three words without a branch; a row they leave unsorted (a bucket
#: of four or more, about one row in two at one bucket a key) finishes with an insertion pass.
_EXCHANGE_STARTS = (0, 1, 0)


@njit(cache=True, inline="always")
def _sort_packed(tmp: np.ndarray, m: int, packed: np.ndarray, counts: np.ndarray, shift: np.uint64) -> None:
    """``packed[:m]``: ``tmp[:m]`` sorted ascending (distinct 64-bit words ``bits << 11 | position``
    whose top bits are uniform): a counting sort on the top bits (``counts``: one more than the
    buckets, about one a word; ``shift``: 64 − log2 of the buckets), then neighbours that share a
    bucket put in order (:data:`_EXCHANGE_STARTS`, then insertion where still needed)."""
    counts[:] = 0
    for i in range(m):
        counts[np.intp(tmp[i] >> shift) + 1] += 1
    for b in range(counts.size - 1):
        counts[b + 1] += counts[b]
    for i in range(m):
        p = tmp[i]
        bucket = np.intp(p >> shift)
        packed[counts[bucket]] = p
        counts[bucket] += 1
    for start in _EXCHANGE_STARTS:
        for i in range(start, m - 1, 2):
            a, b = packed[i], packed[i + 1]
            packed[i] = min(a, b)
            packed[i + 1] = max(a, b)
    unsorted = False
    for i in range(m - 1):
        unsorted |= packed[i] > packed[i + 1]
    if unsorted:
        for i in range(1, m):
            p = packed[i]
            j = i - 1
            while j >= 0 and packed[j] > p:
                packed[j + 1] = packed[j]
                j -= 1
            packed[j + 1] = p


@njit(cache=True)
def _buckets(m: int) -> tuple[np.uint64, np.ndarray]:  # pragma: no cover - numba
    """(shift, counts) of :func:`_sort_packed` for rows of up to ``m`` words: about one bucket a word
    (a power of two), the counts one longer."""
    log_buckets = 1
    while (1 << log_buckets) < m:
        log_buckets += 1
    return np.uint64(64 - log_buckets), np.empty((1 << log_buckets) + 1, dtype=np.int64)


@njit(cache=True)
def _draw_sessions(cur: np.ndarray, inc: np.ndarray, n_letters: int, visits: int, probs: np.ndarray,
                   casino: np.ndarray, letter_idx: np.ndarray, reward_draws: np.ndarray,
                   flip: np.ndarray) -> None:  # pragma: no cover - numba
    """Fill N sessions, subject by subject, from four PCG64 cursors placed where numpy's block draws of
    :meth:`InstrumentalLearningEnv.sample_sessions` start: 0 the letter keys (N, n_letters), 1 the
    trial-order keys (N, T), 2 the outcome uniforms (N, T, 2), 3 the option-order uniforms (N, T).

    A row's argsort is the sort of its keys packed as ``bits << 11 | position`` (ties, at probability
    below m²·2⁻⁵⁴, by position, as :func:`argsort_uniform_rows` breaks them).  The order keys, outcome
    and option-order draws of a trial are taken in one loop: three independent LCG chains side by side.
    """
    n, t = casino.shape
    width = max(t, n_letters)
    shift, counts = _buckets(width)
    packed = np.empty(width, dtype=np.uint64)
    tmp = np.empty(width, dtype=np.uint64)
    outcome = np.empty(2 * t, dtype=np.uint64)
    n_letter_idx = letter_idx.shape[1]
    inc_hi, inc_lo = inc[0], inc[1]
    h0, l0, h1, l1 = cur[0, 0], cur[0, 1], cur[1, 0], cur[1, 1]
    h2, l2, h3, l3 = cur[2, 0], cur[2, 1], cur[3, 0], cur[3, 1]
    for i in range(n):
        for j in range(n_letters):
            h0, l0, key = step_key(h0, l0, inc_hi, inc_lo)
            tmp[j] = (key << _POSITION_BITS) | np.uint64(j)
        _sort_packed(tmp, n_letters, packed, counts, shift)
        for j in range(n_letter_idx):
            letter_idx[i, j] = np.int64(packed[j] & _POSITION_MASK)
        for j in range(t):
            h1, l1, key = step_key(h1, l1, inc_hi, inc_lo)
            tmp[j] = (key << _POSITION_BITS) | np.uint64(j)
            h2, l2, outcome[2 * j] = step_key(h2, l2, inc_hi, inc_lo)
            h2, l2, outcome[2 * j + 1] = step_key(h2, l2, inc_hi, inc_lo)
            h3, l3, key = step_key(h3, l3, inc_hi, inc_lo)
            flip[i, j] = unit(key) < 0.5
        _sort_packed(tmp, t, packed, counts, shift)
        for j in range(t):
            c = np.int64(packed[j] & _POSITION_MASK) // visits
            casino[i, j] = c + 1
            reward_draws[i, j, 0] = 1.0 if unit(outcome[2 * j]) < probs[c, 0] else 0.0
            reward_draws[i, j, 1] = 1.0 if unit(outcome[2 * j + 1]) < probs[c, 1] else 0.0


@njit(cache=True)
def _stimulus_rows(casino: np.ndarray, letters: np.ndarray, flip: np.ndarray, reward_draws: np.ndarray,
                   probs: np.ndarray) -> tuple[np.ndarray, ...]:  # pragma: no cover - numba
    """Flat stimulus columns of N sessions in one pass: (casino, letter byte of arm 0, of arm 1, of the
    machine named first, mean of arm 0, of arm 1, outcome of arm 0, of arm 1); ``letters`` (N,
    n_casinos, 2) holds each casino's letters as ASCII bytes."""
    n, t = casino.shape
    rows = n * t
    n_c = probs.shape[0]
    casino_col = np.empty(rows, dtype=np.int64)
    first, second, shown = np.empty(rows, np.uint8), np.empty(rows, np.uint8), np.empty(rows, np.uint8)
    mean0, mean1 = np.empty(rows), np.empty(rows)
    reward0, reward1 = np.empty(rows), np.empty(rows)
    for i in range(n):
        for j in range(t):
            r = i * t + j
            c = casino[i, j]
            if c < 1 or c > n_c:
                raise ValueError("casino outside 1..n_casinos")
            casino_col[r] = c
            a, b = letters[i, c - 1, 0], letters[i, c - 1, 1]
            first[r] = a
            second[r] = b
            shown[r] = b if flip[i, j] else a
            mean0[r] = probs[c - 1, 0]
            mean1[r] = probs[c - 1, 1]
            reward0[r] = reward_draws[i, j, 0]
            reward1[r] = reward_draws[i, j, 1]
    return casino_col, first, second, shown, mean0, mean1, reward0, reward1
