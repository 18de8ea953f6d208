"""The evaluation protocol every plan kind declares: what chooses a design is never what reports it.

A plan *chooses* things from simulations (a size, a cap, a bet, a critical value, a rule) and *reports*
figures (power, type-I error, expected sizes, prices, savings).  A figure read from the simulations that
chose the design is optimistic by the selection (the cap set where that pool's power first reached the
target reads that pool's power high).  The protocol keeps the two apart by construction:

* :class:`SeedStreams` derives every seed a plan draws from one integer seed and a kind's key: a
  **choosing** stream and a **reporting** stream (independent :class:`numpy.random.SeedSequence` children),
  and records every seed it hands out with its role;
* a kind that derives its seeds its own way (a study seed plus a fixed offset) records them with
  :meth:`SeedStreams.adopt`; a figure computed without simulation (a formula, an interval on data) is declared
  with :meth:`SeedStreams.analytic`;
* :meth:`SeedStreams.report` is the one way a simulated figure is reported: a :class:`Reported` value with its
  Monte-Carlo SE and the seeds it was measured on, refused (:class:`ProtocolError`) when any of those seeds
  came from a choosing stream;
* a plan kind declares its use of the protocol (:attr:`~cogtestbed.planning.kinds.PlanKind.protocol`: a
  function of a seed returning the :class:`SeedStreams` the kind draws from, with the figures it reports);
  :func:`check_kind` replays it and fails for a kind that declares nothing or reports from its choosing streams
  (tests/test_protocol.py runs it over the registry; the declarations: :mod:`~cogtestbed.planning.kind_protocols`).

Imports numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: The two roles a seed plays.
CHOOSING, REPORTING = "choosing", "reporting"
#: Index of each role in the seed sequence ``[seed, key, index]`` (a pilot that sizes the choosing pools is a
#: second choosing stream, index 2).
_INDEX = {CHOOSING: 0, REPORTING: 1}
_PILOT = 2


class ProtocolError(InputError):
    """A figure reported from a choosing stream, or choosing and reporting seeds that overlap."""


@dataclass(frozen=True)
class Reported:
    """One printed figure: its ``value``, its Monte-Carlo SE ``mc_se`` and the integer ``seeds`` of the
    reporting simulations it was measured on."""

    name: str
    value: float
    mc_se: float
    seeds: tuple[int, ...]
    #: How a figure computed without simulation is computed (:meth:`SeedStreams.analytic`); empty: simulated.
    analytic: str = ""

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """``value ± z·mc_se``."""
        return self.value - z * self.mc_se, self.value + z * self.mc_se

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "mc_se": self.mc_se, "seeds": list(self.seeds)}
        if self.analytic:
            out["analytic"] = self.analytic
        return out


@dataclass
class SeedStreams:
    """The seed streams of one plan: ``seed`` (the plan's) and ``key`` (the kind's, so two kinds of one seed
    draw apart).  :meth:`choosing` and :meth:`reporting` hand out seeds (integers, as the simulators take
    them) and record them; :meth:`report` makes a :class:`Reported` from reporting seeds only."""

    seed: int
    key: int
    issued: dict[int, str] = field(default_factory=dict)
    reported: list[Reported] = field(default_factory=list)

    def sequence(self, role: str, pilot: bool = False) -> np.random.SeedSequence:
        """The :class:`~numpy.random.SeedSequence` ``[seed, key, index]`` of ``role`` (``pilot``: the
        second choosing stream)."""
        if role not in _INDEX:
            raise InputError(f"role must be {CHOOSING!r} or {REPORTING!r}, not {role!r}")
        index = _PILOT if pilot and role == CHOOSING else _INDEX[role]
        return np.random.SeedSequence([int(self.seed), int(self.key), index])

    def _ints(self, role: str, count: int, pilot: bool = False) -> tuple[int, ...]:
        state = self.sequence(role, pilot).generate_state(count)
        out = tuple(int(s >> 1) for s in state)  # 31-bit: every simulator takes them
        for s in out:
            if self.issued.setdefault(s, role) != role:
                raise ProtocolError(f"seed {s} was issued to both the choosing and the reporting stream")
        return out

    def choosing(self, count: int = 2, pilot: bool = False) -> tuple[int, ...]:
        """``count`` integer seeds of the choosing stream (``pilot``: of the pilot's, also choosing)."""
        return self._ints(CHOOSING, count, pilot)

    def reporting(self, count: int = 2) -> tuple[int, ...]:
        """``count`` integer seeds of the reporting stream: the only seeds a printed figure may come from."""
        return self._ints(REPORTING, count)

    def adopt(self, role: str, seeds: Iterable[int]) -> tuple[int, ...]:
        """Record ``seeds`` a kind derives its own way (a study seed plus a fixed offset) under ``role``:
        refused where one of them was issued to the other role."""
        if role not in _INDEX:
            raise InputError(f"role must be {CHOOSING!r} or {REPORTING!r}, not {role!r}")
        out = tuple(int(s) for s in seeds)
        for s in out:
            if self.issued.setdefault(s, role) != role:
                raise ProtocolError(f"seed {s} was issued to both the choosing and the reporting stream")
        return out

    def analytic(self, name: str, value: float, basis: str) -> Reported:
        """A printed figure computed without simulation (a formula, or an interval on data): no MC error and no
        seeds; ``basis`` says how it is computed."""
        out = Reported(name, float(value), 0.0, (), basis)
        self.reported.append(out)
        return out

    def generator(self, role: str, *tag: int) -> np.random.Generator:
        """A generator of ``role``'s stream (resampling, orderings), ``tag`` keeping several apart."""
        seq = self.sequence(role)
        return np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, 7, *tag)))

    def report(self, name: str, value: float, mc_se: float, seeds: Iterable[int]) -> Reported:
        """The printed figure ``name`` measured on simulations of ``seeds`` (each issued by
        :meth:`reporting`: a seed of a choosing stream or one never issued is refused)."""
        used = tuple(int(s) for s in seeds)
        bad = [s for s in used if self.issued.get(s) != REPORTING]
        if not used or bad:
            what = "no seeds" if not used else f"seeds {bad} of the {self.issued.get(bad[0], 'no')} stream"
            raise ProtocolError(f"{name} is reported from {what}: a printed figure comes from the reporting "
                                "stream only (fresh simulations that chose nothing)")
        out = Reported(name, float(value), float(mc_se) if math.isfinite(mc_se) else float("nan"), used)
        self.reported.append(out)
        return out

    def check(self) -> None:
        """Refuse streams that reported nothing or whose reported figures drew on a choosing seed."""
        if not self.reported:
            raise ProtocolError("the plan reported no figure through its seed streams")
        for r in self.reported:
            if r.analytic and not r.seeds:
                continue
            if not r.seeds or any(self.issued.get(s) != REPORTING for s in r.seeds):
                raise ProtocolError(f"{r.name} was reported from a choosing stream")


#: A kind's declaration: a function of a seed that derives the kind's streams and reports, as the kind does,
#: the figures it prints (no simulation: the seeds and roles only).
Declaration = Callable[[int], SeedStreams]


def check_kind(kind: Any, seeds: Iterable[int] = (0, 1, 12345)) -> None:
    """Refuse (:class:`ProtocolError`, one line) a plan kind that does not declare its protocol
    (``kind.protocol`` None) or whose declaration, replayed at ``seeds``, reports a figure from a choosing
    stream or reports none."""
    declared = getattr(kind, "protocol", None)
    if declared is None:
        raise ProtocolError(f"plan kind {kind.name!r} declares no evaluation protocol")
    for s in seeds:
        streams = declared(int(s))
        if not isinstance(streams, SeedStreams):
            raise ProtocolError(f"plan kind {kind.name!r}'s protocol returned {type(streams).__name__}, "
                                "not SeedStreams")
        streams.check()


def jackknife(estimate: Callable[[np.ndarray], np.ndarray], groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-group-out jackknife of a vector ``estimate(mask)`` (``mask``: the rows kept) over the
    distinct ``groups``: (the full estimate, its jackknife SE per component).  Figures estimated jointly from
    the same reporting simulations (an expected size and the equal-power size it is compared with) get one
    joint SE this way, their correlation included."""
    groups = np.asarray(groups)
    full = np.asarray(estimate(np.ones(groups.size, bool)), float)
    labels = np.unique(groups)
    if labels.size < 2:
        return full, np.full(full.shape, np.nan)
    loo = np.array([np.asarray(estimate(groups != g), float) for g in labels])
    k = labels.size
    se = np.sqrt((k - 1) / k * ((loo - loo.mean(axis=0)) ** 2).sum(axis=0))
    return full, se


__all__ = ["CHOOSING", "REPORTING", "Declaration", "ProtocolError", "Reported", "SeedStreams", "check_kind",
           "jackknife"]
