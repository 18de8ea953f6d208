"""The synthetic-agent contract.

A synthetic agent has validated ``params`` (bounds, one clear error on bad values), ``reset(rng)``,
``act(obs) -> action`` and ``update(obs, action, reward, next_obs)`` where it learns, and a
*batch path*: :meth:`SyntheticAgent.simulate_batch`, a numba kernel that plays many pre-drawn
sessions at once.

Randomness contract (what makes the batch path and the step path produce identical tables): an
agent consumes exactly :attr:`SyntheticAgent.draws_per_trial` uniforms from its generator on
every trial, through :meth:`SyntheticAgent.uniforms`.  The batch path draws the same uniforms as
one ``rng.random((n_subjects, max_steps * draws_per_trial))`` array, which numpy's generators fill
in the same order as sequential scalar draws.  Variable-length sessions (a subject may stop before
``max_steps``) would shift every later subject's draws on the step path, so the step path hands each
subject its pre-drawn row (``reset(rng, uniforms=row)``) and :meth:`SyntheticAgent.uniforms` reads
it in order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic

import numpy as np

from cogtestbed.environments.base import DesignT, Outcomes, SessionsT
from cogtestbed.lapse import LapseDraws
from cogtestbed.parameters import ParameterSet


class SyntheticAgent(ABC, Generic[DesignT, SessionsT]):
    """Base class of agents with known parameters, generic over the experiment's design and
    pre-drawn sessions (``SyntheticAgent[InstrumentalDesign, InstrumentalSessions]``).

    Subclasses set :attr:`name`, :attr:`experiment` and :attr:`parameters`, and implement
    :meth:`act`, :meth:`update` and :meth:`simulate_batch`.
    """

    #: Name used by the CLI and the registry (e.g. ``"rw-pm"``).
    name: ClassVar[str]
    #: Registry name of the experiment the agent plays.
    experiment: ClassVar[str]
    #: The agent's parameters (shared with the matching cognitive model).
    parameters: ClassVar[ParameterSet]
    #: Uniforms consumed per trial (see module docstring).
    draws_per_trial: ClassVar[int] = 1
    #: CPU microseconds a step of the batch path costs with its kernels run as plain Python
    #: (:mod:`cogtestbed.interpreted`), an upper estimate: ``method="auto"`` interprets a first run
    #: whose estimate is within :data:`cogtestbed.simulation.INTERPRETED_BUDGET_S` (compiling costs
    #: more).  cogtestbed's figure, measured 26 Nov 2026 (``python benchmarks/bench_first_call.py
    #: --interpreted-cost``): 0.2–13 µs a step for most agents; heavier agents set their own (horizon,
    #: revealed belief), and agents whose cost depends on the design or the parameters override
    #: :meth:`interpreted_cost_us`.
    interpreted_step_us: ClassVar[float] = 15.0

    @classmethod
    def interpreted_cost_us(cls, design: DesignT | None, params: Mapping[str, Any]) -> float:
        """CPU microseconds a step of the interpreted batch path costs for ``design`` (None: the
        default) and ``params`` (given values, scalars or one per subject; a missing one at its
        default), averaged over the subjects: what ``method="auto"`` budgets with
        (:func:`cogtestbed.simulation.interpreted_estimate_s`).  Default :attr:`interpreted_step_us`."""
        return float(cls.interpreted_step_us)

    @classmethod
    def share_of_subjects(cls, params: Mapping[str, Any], name: str, test: Any) -> float:
        """The share of subjects whose parameter ``name`` (its default where not given) passes
        ``test`` (a vectorised predicate): for :meth:`interpreted_cost_us`."""
        value = params.get(name, cls.parameters[name].default)
        return float(np.mean(test(np.asarray(value, dtype=np.float64))))

    def __init__(self, params: Mapping[str, float] | None = None) -> None:
        self.params: dict[str, float] = self.parameters.validate(params)
        self.rng: np.random.Generator | None = None

    def reset(self, rng: np.random.Generator, uniforms: np.ndarray | None = None) -> None:
        """Start a new session drawing randomness from ``rng``.

        ``uniforms``: this session's pre-drawn row of uniforms (the batch path's row); when given,
        :meth:`uniforms` reads it in order instead of drawing from ``rng``.
        """
        self.rng = rng
        self._stream = None if uniforms is None else np.asarray(uniforms, dtype=np.float64)
        self._pos = 0
        self._reset_state()

    def uniforms(self) -> np.ndarray:
        """This step's uniforms: exactly :attr:`draws_per_trial` draws (generator or row)."""
        if self.rng is None:
            raise RuntimeError(f"{type(self).__name__}.reset(rng) must be called before act()")
        k = self.draws_per_trial
        stream = getattr(self, "_stream", None)
        if stream is not None:
            if self._pos + k > stream.shape[0]:
                raise RuntimeError("the session used more steps than its pre-drawn uniforms")
            out = stream[self._pos : self._pos + k]
            self._pos += k
            return out
        return self.rng.random(k)

    @abstractmethod
    def _reset_state(self) -> None:
        """Reset learned state (values, beliefs) to its initial value."""

    @abstractmethod
    def act(self, obs: Mapping[str, Any]) -> Any:
        """Choose an action for the observation (draws :meth:`uniforms` once)."""

    def update(  # noqa: B027 - agents that do not learn keep the default
        self, obs: Mapping[str, Any], action: Any, reward: float, next_obs: Mapping[str, Any]
    ) -> None:
        """Learn from the outcome of ``action`` (no-op for agents that do not learn)."""

    @classmethod
    @abstractmethod
    def simulate_batch(
        cls,
        design: DesignT,
        sessions: SessionsT,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
    ) -> Outcomes:
        """Play every session at once (numba kernel).

        ``params`` maps each parameter name to an array of shape (n_subjects,) and ``uniforms``
        has shape (n_subjects, max_steps * draws_per_trial) (see ``TextEnv.max_steps``).
        """

    @classmethod
    def simulate_batch_lapsed(
        cls,
        design: DesignT,
        sessions: SessionsT,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
        lapse: LapseDraws,
    ) -> Outcomes | None:
        """:meth:`simulate_batch` with pre-drawn lapses (:mod:`cogtestbed.lapse`).  The simulator calls
        it only on a :class:`KernelLapsingAgent` (subclass that to have the kernel play lapses); for any
        other agent it applies the lapses after the fact where the environment's steps do not depend on
        earlier answers, and plays the step path otherwise (the same table).

        A kernel that supports lapses chooses as usual on every step (drawing its uniforms), then
        applies :func:`~cogtestbed.lapse.lapsed_choice` and plays the recorded answer
        exactly as the environment does (learning from a random answer, skipping what the
        environment skips after an invalid one).
        """
        return None


class KernelLapsingAgent(SyntheticAgent[DesignT, SessionsT]):
    """An agent whose numba kernel plays lapses itself: the lapse-free batch run is the lapsed one
    with no lapse draws (:meth:`LapseDraws.empty`, which the kernels read as "lapses off")."""

    @classmethod
    def simulate_batch(
        cls,
        design: DesignT,
        sessions: SessionsT,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
    ) -> Outcomes:
        outcomes = cls.simulate_batch_lapsed(design, sessions, params, uniforms, LapseDraws.empty(uniforms.shape[1]))
        if outcomes is None:
            raise TypeError(f"{cls.__name__} declares a lapsing kernel but plays no lapsed batch")
        return outcomes
