"""Lapses: invalid answers and random answers as part of a synthetic subject's behaviour.

Real LLM subjects do not always answer validly: some answers cannot be parsed (the trial is
recorded invalid, no outcome is paid) and some are valid but unrelated to the task (a lapse of
attention; Wichmann & Hill 2001's lapse rate λ for psychometric functions).  A :class:`Lapse`
gives any synthetic agent both processes, on every *lapse unit* independently: a step, or the
whole trial where the environment's trial spans several steps
(:meth:`~cogtestbed.environments.base.TextEnv.lapse_unit`: both stages of a two-step trial, every
pump decision of a BART balloon), the unit on which the likelihood's lapse mixture acts:

* with probability ``invalid`` the answer is invalid: the step is recorded exactly as an
  unparseable LLM answer (``valid=False``, :data:`~cogtestbed.environments.base.NO_ACTION`),
  and the environment does what it does for an invalid answer (nothing paid; a discounting
  session ends, a BART balloon is voided, the second stage of a two-step trial is not asked);
* with probability ``random`` the answer is drawn uniformly over the valid answers of the step
  (:meth:`TextEnv.random_answer`: a uniform choice among the options; uniform over the answer range
  for a continuous answer; uniform on the simplex for a scored distribution);
* otherwise the agent's own answer stands.

The agent still computes its own answer on a lapsed step (it draws its own uniforms as usual), and
a learning agent learns from the outcome of a random answer like from any other (the lapse
happens in ``act``).  The lapse decisions come from their own seeded stream (the third child of
``SeedSequence(seed)``, after the environment and agent streams), pre-drawn for every
(subject, unit) as :class:`LapseDraws` (the kind per unit, the random answer's uniforms per
step), so ``Lapse(0, 0)`` reproduces the lapse-free tables byte for byte and the batch and step
paths read the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from cogtestbed.errors import InputError

#: Step kinds of :attr:`LapseDraws.kind`.
NORMAL, INVALID, RANDOM = 0, 1, 2
#: Index of the lapse stream among the children of ``SeedSequence(seed)`` (0: environment,
#: 1: agent; see :func:`cogtestbed.simulation.seed_streams`).
LAPSE_STREAM = 2


@dataclass(frozen=True)
class Lapse:
    """Per-step rates of invalid answers and of uniformly random answers (each in [0, 1], sum ≤ 1)."""

    invalid: float = 0.0
    random: float = 0.0

    def __post_init__(self) -> None:
        for name in ("invalid", "random"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
                raise InputError(f"lapse rate {name} must be a number in [0, 1], got {value!r}")
        if float(self.invalid) + float(self.random) > 1.0:
            raise InputError(f"lapse rates invalid + random must be at most 1, got {self.invalid} + {self.random}")

    @property
    def active(self) -> bool:
        """Whether any step can lapse."""
        return self.invalid > 0.0 or self.random > 0.0


@dataclass(frozen=True)
class LapseDraws:
    """Pre-drawn lapse decisions of ``n`` sessions.

    ``kind`` (n, steps) int8: :data:`NORMAL`, :data:`INVALID` or :data:`RANDOM` per lapse unit
    (:meth:`~cogtestbed.environments.base.TextEnv.lapse_unit`; at most one unit per step);
    ``u`` (n, steps, k) uniforms from which a random answer is made (``k`` =
    :attr:`TextEnv.lapse_draws`, the uniforms one random answer needs).
    """

    kind: np.ndarray
    u: np.ndarray

    @classmethod
    def none(cls, n: int, steps: int, k: int = 1) -> LapseDraws:
        """No lapse anywhere (what a kernel with lapse support reads when lapses are off)."""
        return cls(np.zeros((n, steps), dtype=np.int8), np.zeros((n, steps, k)))

    @classmethod
    def empty(cls, steps: int, k: int = 1) -> LapseDraws:
        """No sessions' draws at all: what a kernel reads as "lapses off" without touching n × steps zeros."""
        return cls(np.zeros((0, steps), dtype=np.int8), np.zeros((0, steps, k)))

    def subject(self, i: int) -> LapseDraws:
        return LapseDraws(self.kind[i], self.u[i])


def lapse_rng(seed: int) -> np.random.Generator:
    """The lapse stream of a simulation seeded with ``seed`` (independent of the agent's draws)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(LAPSE_STREAM,)))


def draw_lapses(lapse: Lapse, rng: np.random.Generator, n: int, steps: int, k: int = 1) -> LapseDraws:
    """Lapse decisions for ``n`` sessions of at most ``steps`` steps: one uniform v per step
    (INVALID iff v < invalid, RANDOM iff invalid ≤ v < invalid + random), then ``k`` uniforms per
    step for the random answer."""
    v = rng.random((n, steps))
    u = rng.random((n, steps, k))
    kind = np.where(v < lapse.invalid, INVALID, np.where(v < lapse.invalid + lapse.random, RANDOM, NORMAL))
    return LapseDraws(kind.astype(np.int8), u)


@njit(cache=True)
def random_choice(u: float, n_options: int) -> int:
    """A uniformly random option index in 0..n_options−1 from one uniform (inverse CDF)."""
    return min(int(np.floor(u * n_options)), n_options - 1)


@njit(cache=True, inline="always")
def unit_lapse(lapse_kind: np.ndarray, i: int, unit: int) -> int:
    """The lapse kind of unit ``unit`` of session ``i``: :data:`NORMAL` where the draws have no
    rows (:meth:`LapseDraws.empty`, lapses off)."""
    return lapse_kind[i, unit] if lapse_kind.shape[0] > 0 else NORMAL


@njit(cache=True, inline="always")
def step_lapse(kind: int, lapse_u: np.ndarray, i: int, step: int, chosen: int, n_options: int) -> int:
    """:func:`lapsed_choice` of step ``step`` of session ``i`` under lapse ``kind`` (the step's
    uniform is read only on a lapse, so empty draws are never indexed)."""
    if kind == NORMAL:
        return chosen
    return lapsed_choice(kind, lapse_u[i, step], chosen, n_options)


@njit(cache=True)
def lapsed_choice(kind: int, u: float, chosen: int, n_options: int) -> int:
    """The recorded choice of a step: the agent's ``chosen`` option, a random option, or −1
    (invalid); the one rule every kernel with lapse support applies after choosing."""
    if kind == INVALID:
        return -1
    if kind == RANDOM:
        return random_choice(u, n_options)
    return chosen
