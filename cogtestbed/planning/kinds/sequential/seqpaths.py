"""The pieces of a sequential plan that its simulation shares with the plan itself: the bounds
(:class:`Boundaries`, :func:`boundaries`: Lan–DeMets spending, :mod:`cogtestbed.planning.kinds.sequential.sequential`),
the Z of a p-value (:func:`z_from_p`) and whole simulated statistic paths of metric-difference and
test targets (:func:`simulate_paths`).  :mod:`cogtestbed.planning.kinds.sequential.seqsim` (the simulation),
:mod:`cogtestbed.planning.kinds.sequential.seqplan` (the plan) and :mod:`cogtestbed.planning.kinds.sequential.runlooks`
(the run's looks) build on it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from scipy import optimize, stats

from cogtestbed.errors import InputError, ResumeMismatch
from cogtestbed.planning.kinds.sequential.sequential import (
    GRID_PER_UNIT,
    Spending,
    check_spending,
    crossing_probabilities,
    efficacy_bounds,
    futility_bounds,
)
from cogtestbed.studies.study_kinds import MetricPowerStudy, StatTestStudy

#: Largest |Z| recorded (a p-value of 0 is a |Z| of ∞; the bounds are far below).
Z_CAP = 40.0

#: Decision codes of :meth:`Boundaries.codes`.
CONTINUE, EFFICACY, EFFICACY_OTHER, FUTILITY = 0, 1, 2, 3
DECISIONS = ("continue", "efficacy", "efficacy", "futility")


@dataclass(frozen=True)
class Boundaries:
    """Looks (units and information fractions) and their Z bounds.

    Efficacy: ``Z·d ≥ b_k`` in the effect's direction ``d`` (``|Z| ≥ b_k`` for an undirected
    statistic, d = 0) or ``Z·d ≤ −b'_k`` against it (``efficacy_other``; None: the same ``b_k``,
    i.e. ``|Z| ≥ b_k``, two-sided level α with α/2 per side); futility ``Z·d < a_k`` (``|Z|`` for
    d = 0; None: no futility).  ``calibration`` records how ``efficacy`` was set on the simulated
    null (:func:`calibrate_shift`), None for the normal-theory bounds."""

    sizes: tuple[int, ...]
    spending: Spending
    level: float
    efficacy: tuple[float, ...]
    futility: tuple[float, ...] | None
    efficacy_other: tuple[float, ...] | None = None
    calibration: Mapping[str, Any] | None = None

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.sizes[-1] for n in self.sizes)

    def as_dict(self) -> dict[str, Any]:
        out = {"looks": len(self.sizes), "sizes": list(self.sizes), "fractions": [round(f, 6) for f in self.fractions],
               "spending": self.spending, "level": self.level, "efficacy": [round(b, 6) for b in self.efficacy],
               "futility": None if self.futility is None else [round(a, 6) for a in self.futility]}
        if self.efficacy_other is not None:
            out["efficacy_other"] = [round(b, 6) for b in self.efficacy_other]
        if self.calibration is not None:
            out["calibration"] = dict(self.calibration)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Boundaries:
        fut, other = d.get("futility"), d.get("efficacy_other")
        # the rounded bounds of plan.json are the bounds: a run and ``looks`` decide on exactly these
        return cls(tuple(int(n) for n in d["sizes"]), d["spending"], float(d["level"]),
                   tuple(float(b) for b in d["efficacy"]), None if fut is None else tuple(float(a) for a in fut),
                   None if other is None else tuple(float(b) for b in other), d.get("calibration"))

    def with_shift(self, shift: float, calibration: Mapping[str, Any]) -> Boundaries:
        """These bounds with the efficacy bound in the effect's direction moved by ``shift``
        (rounded as plan.json stores it, so the plan simulates exactly what the run decides on)."""
        moved = tuple(round(b + shift, 6) for b in self.efficacy)
        other = self.efficacy if self.efficacy_other is None else self.efficacy_other
        # the last look's futility bound is its efficacy bound (a run that does not reject there accepts)
        futility = None if self.futility is None else (*(round(a, 6) for a in self.futility[:-1]), moved[-1])
        return Boundaries(self.sizes, self.spending, self.level, moved, futility,
                          tuple(round(b, 6) for b in other), {**calibration, "shift": round(shift, 6)})

    def codes(self, k: int, z: np.ndarray, direction: float) -> np.ndarray:
        """Decision codes (:data:`CONTINUE`, :data:`EFFICACY`, :data:`EFFICACY_OTHER`,
        :data:`FUTILITY`) at look ``k`` (0-based) for an array of statistics; the last look that
        does not reject stops for futility (accepts); a non-finite Z counts as 0."""
        z = np.asarray(z)
        return self._codes(z.reshape(-1, 1), np.array([k]), direction).reshape(z.shape)

    def codes_all(self, z: np.ndarray, direction: float) -> np.ndarray:
        """:meth:`codes` of every look at once: ``z`` holds a column per look (replicates × looks), in one
        pass over the array (the rule search applies ~2,000 rules to each set of paths)."""
        return self._codes(z, np.arange(len(self.sizes)), direction)

    def _codes(self, z: np.ndarray, looks: np.ndarray, direction: float) -> np.ndarray:
        """The codes of ``z``'s columns, column j at look ``looks[j]`` (:meth:`codes`)."""
        z = np.where(np.isfinite(z), z, 0.0)
        toward = np.abs(z) if direction == 0 else z * direction
        efficacy = np.asarray(self.efficacy, float)[looks]
        out = np.zeros(z.shape, dtype=np.int8)  # CONTINUE
        if self.futility is not None:
            out[toward < np.asarray(self.futility, float)[looks]] = FUTILITY
        out[:, looks == len(self.sizes) - 1] = FUTILITY  # the last look that does not reject accepts
        if direction != 0:
            other = efficacy if self.efficacy_other is None else np.asarray(self.efficacy_other, float)[looks]
            out[toward <= -other] = EFFICACY_OTHER
        out[toward >= efficacy] = EFFICACY
        return out

    def decide(self, k: int, z: float, direction: float) -> str:
        """``efficacy``, ``futility`` or ``continue`` at look ``k`` (0-based) (:meth:`codes`)."""
        return DECISIONS[int(self.codes(k, np.array([float(z)]), direction)[0])]


def boundaries(sizes: Sequence[int], level: float, spending: Spending, futility: bool, power: float,
               fractions: Sequence[float] | None = None, per_unit: int = GRID_PER_UNIT) -> Boundaries:
    """Efficacy bounds spending α/2 per side; with ``futility``, β = 1 − power spent at the drift
    under which the efficacy-only design has that power (the usual non-binding futility design).
    ``fractions``: the information fractions the bounds are computed at (default: the looks' own
    ``n_k / n_K``; a plan uses the planned ``k/K`` for every maximum size and calibrates the level
    on the simulated null).  ``per_unit``: grid points per unit of Z of the efficacy bounds'
    recursive integration (20 gives them to 1e-6, a ninth of the default's cost)."""
    t = [n / sizes[-1] for n in sizes] if fractions is None else list(fractions)
    b = efficacy_bounds(t, level / 2, spending, per_unit)
    a = None
    if futility:
        drift = design_drift(t, b, power)
        a = tuple(float(x) for x in futility_bounds(t, b.tolist(), drift, 1 - power, spending))
    return Boundaries(tuple(int(n) for n in sizes), spending, level, tuple(float(x) for x in b), a)


def design_drift(fractions: Sequence[float], efficacy: np.ndarray, power: float) -> float:
    """The drift (mean of Z at the last look) at which the efficacy bounds reject with ``power``.

    Secant steps from the fixed-sample drift ``min_k b_k + Φ⁻¹(power)`` (each step is a whole
    recursion, on a grid of 20 points per unit of Z: the rejection probability to 1e-6 at a 30th of
    the cost), Brent's method over [0, 15] should they fail."""
    def gap(d: float) -> float:
        return crossing_probabilities(fractions, efficacy.tolist(), drift=d, per_unit=20).reject - power

    guess = float(np.min(efficacy)) + float(stats.norm.ppf(power))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        drift, info = optimize.newton(gap, guess, tol=1e-8, maxiter=20, disp=False, full_output=True)
    if info.converged and 0.0 < float(drift) < 15.0:
        return float(drift)
    return float(optimize.brentq(gap, 0.0, 15.0, xtol=1e-8))


def z_from_p(p: float, estimate: float, signed: bool) -> float:
    """``sign(estimate)·Φ⁻¹(1 − p/2)`` (unsigned for a test without a direction); NaN p → 0."""
    if not math.isfinite(p):
        return 0.0
    z = min(float(stats.norm.isf(max(p, 0.0) / 2)), Z_CAP)
    if signed:
        return z * (1.0 if estimate > 0 else -1.0 if estimate < 0 else 0.0)
    return z


# ----------------------------------------------------------------------------- one replicate
def first_units(table: Any, n: int) -> Any:
    """The first ``n`` units (subjects 0..n−1) of a simulated table."""
    return table[table["subject"] < n]


def _metric_path(spec: MetricPowerStudy, trials: int | None, n_top: int, sizes: Sequence[int],
                 seq: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray]:
    """(Z, difference) at each prefix of one simulated metric-difference study (``n_top`` runs per
    setting simulated once; the fixed plan's difference test on each prefix of both)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.metric_studies import comparison_prefixes, prefix_differences
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_runs

    exp = get_experiment(spec.experiment)
    design = design_for_trials(exp, trials, spec.design)
    seq_a, seq_b = seq.spawn(2)
    tables = [simulate_runs(exp, spec.agent, n_top, seed_of(s), {**spec.params, **setting}, design, lapse=spec.lapse)
              for s, setting in zip((seq_a, seq_b), spec.compare, strict=True)]
    # every prefix of both tables at once (sums accumulated once where the experiment can: MetricsSpec.prefixes),
    # and the fixed plan's difference test of every prefix pair at once
    results_a, results_b = (comparison_prefixes(exp, spec.metric, t, sizes, spec.metric_options) for t in tables)
    p, est = prefix_differences(results_a, results_b, spec.metric, exp.metrics.unit,
                                exp.metrics.comparability(spec.metric).test)
    return z_of_p(p), est


def z_of_p(p: np.ndarray) -> np.ndarray:
    """:func:`z_from_p` of an array of two-sided p-values, unsigned: ``Φ⁻¹(1 − p/2)`` capped at
    :data:`Z_CAP`; NaN p → 0."""
    p = np.asarray(p, dtype=float)
    with np.errstate(invalid="ignore"):
        z = np.minimum(stats.norm.isf(np.maximum(p, 0.0) / 2), Z_CAP)
    return np.where(np.isfinite(p), z, 0.0)


def _test_path(spec: StatTestStudy, trials: int | None, n_top: int, sizes: Sequence[int],
               seq: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray]:
    """(Z, p-value) at each prefix of one simulated test study (the test alone where the experiment
    declares it, else through the whole metrics function)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.metric_studies import test_outcome
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_runs

    exp = get_experiment(spec.experiment)
    design = design_for_trials(exp, trials, spec.design)
    table = simulate_runs(exp, spec.agent, n_top, seed_of(seq), spec.params, design, lapse=spec.lapse)
    z, est = np.zeros(len(sizes)), np.full(len(sizes), np.nan)
    for i, n in enumerate(sizes):
        result = exp.metrics.test_result(spec.test, first_units(table, n), **spec.metric_options)
        _, p = test_outcome(result, spec.test, spec.level)
        est[i] = p
        z[i] = z_from_p(p, 0.0, signed=False)
    return z, est


def simulate_paths(spec_json: str, trials: int | None, runs: int, n_top: int, sizes: Sequence[int],
                   seed: int, reps: Sequence[int], stream: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(Z, estimate) arrays (replicates × prefix sizes) of whole simulated paths of a metric-difference
    or test study, replicates ``reps`` (seed streams ``SeedSequence([seed, 7919, rep])``, with
    ``stream`` appended when > 0: the same replicate whatever the batch).  Model-effect studies are
    simulated lazily by :func:`cogtestbed.planning.kinds.sequential.seqsim.model_block`."""
    from cogtestbed.studies.study_kinds import load_study

    spec = load_study(spec_json)
    zs, ests = [], []
    for rep in reps:
        seq = np.random.SeedSequence([seed, 7_919, rep, *([stream] if stream else [])])
        if isinstance(spec, MetricPowerStudy):
            z, e = _metric_path(spec, trials, n_top, sizes, seq)
        elif isinstance(spec, StatTestStudy):
            z, e = _test_path(spec, trials, n_top, sizes, seq)
        else:
            raise InputError(f"whole paths are simulated for a metric or test target, not {spec.kind}")
        zs.append(z)
        ests.append(e)
    return np.array(zs), np.array(ests)


# ----------------------------------------------------------------------------- the plan's sequential section
_Finite = Annotated[float, Field(strict=False, allow_inf_nan=False)]
#: What a run can compute at a look (:func:`cogtestbed.planning.kinds.sequential.runlooks.look_statistic`).
STATISTIC_KINDS = ("power", "metric-power", "test-size", "test-power")
#: The fields each statistic kind needs.
STATISTIC_FIELDS = {"power": ("model", "effect"), "metric-power": ("metric",), "test-size": ("test",),
                    "test-power": ("test",)}


class SequentialSection(BaseModel):
    """The ``run.sequential`` section of ``plan.json`` (and a run's ``sequential.json``): looks at
    strictly increasing sizes, one finite bound per look, a known spending function and statistic.
    Checked before a run's first call, so a hand-edited plan is refused, not half run."""

    model_config = ConfigDict(extra="allow")

    sizes: Annotated[list[Annotated[int, Field(strict=True, ge=1)]], Field(min_length=2)]
    spending: Spending
    level: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)]
    efficacy: list[_Finite]
    futility: list[_Finite] | None = None
    efficacy_other: list[_Finite] | None = None
    direction: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)] = 0.0
    statistic: dict[str, Any]

    @model_validator(mode="after")
    def _consistent(self) -> SequentialSection:
        check_spending(self.spending)
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise InputError(f"sizes must increase from look to look, got {self.sizes}")
        return self._bounds_declared()

    def _bounds_declared(self) -> SequentialSection:
        k = len(self.sizes)
        for name in ("efficacy", "futility", "efficacy_other"):
            bounds = getattr(self, name)
            if bounds is not None and len(bounds) != k:
                raise InputError(f"{name} has {len(bounds)} bounds for {k} looks")
        looks = (self.model_extra or {}).get("looks")
        if looks is not None and looks != k:
            raise InputError(f"looks is {looks!r} but sizes name {k} looks")
        if self.futility is not None and any(a > b + 1e-9 for a, b in zip(self.futility, self.efficacy, strict=True)):
            raise InputError("a futility bound lies above its look's efficacy bound")
        return self._statistic_declared()

    def _statistic_declared(self) -> SequentialSection:
        kind = self.statistic.get("kind")
        if kind not in STATISTIC_KINDS:
            raise InputError(f"statistic.kind must be one of {', '.join(STATISTIC_KINDS)}, got {kind!r}")
        missing = [f for f in STATISTIC_FIELDS[kind] if not isinstance(self.statistic.get(f), str)]
        if missing:
            raise InputError(f"statistic of kind {kind} needs {', '.join(missing)}")
        return self


def checked_sequential(section: Any, where: str, units: int | None = None) -> dict[str, Any]:
    """``section`` validated by :class:`SequentialSection` (its last look at ``units``, the plan's
    subjects, where given); the first problem in one line, prefixed by ``where``."""
    try:
        out = SequentialSection.model_validate(section).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
        raise InputError(f"{where}{'.' + loc if loc else ''}: {err['msg']}{got}") from None
    if units is not None and out["sizes"][-1] != units:
        raise InputError(f"{where}: the last look is at {out['sizes'][-1]} but the plan runs {units}")
    return out


#: What a resumed sequential run must share with the design it recorded (``--resume`` refuses a plan
#: that differs in any of them: its looks would no longer be the procedure whose error rates were planned).
DESIGN_KEYS = ("sizes", "efficacy", "efficacy_other", "futility", "spending", "level", "direction", "statistic")


def design_differences(recorded: Mapping[str, Any], planned: Mapping[str, Any]) -> list[str]:
    """The parts of a sequential design (:data:`DESIGN_KEYS`) in which ``planned`` differs from
    ``recorded``, each as ``name recorded → planned`` (bounds compared to 1e-9; the statistic field
    by field: its kind, model, effect and size, test, metric and options)."""
    out: list[str] = []
    for key in DESIGN_KEYS:
        a, b = recorded.get(key), planned.get(key)
        if key == "statistic" and isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(f"statistic.{k} {_show(a.get(k))} → {_show(b.get(k))}" for k in sorted(set(a) | set(b))
                       if not _same(a.get(k), b.get(k)))
        elif not _same(a, b):
            out.append(f"{key} {_show(a)} → {_show(b)}")
    return out


def _show(value: Any) -> str:
    """A design value in a message: numbers to 4 significant digits, lists element by element."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def check_same_design(recorded: Mapping[str, Any], planned: Mapping[str, Any], where: str) -> None:
    """Refuse (one line) to resume the sequential run recorded in ``where`` with a plan whose bounds,
    look sizes, statistic, effect or spending differ from the recorded design's."""
    diff = design_differences(recorded, planned)
    if diff:
        raise ResumeMismatch(f"`resume`: the plan differs from the sequential design recorded in {where} "
                         f"({'; '.join(diff[:3])}{'; …' if len(diff) > 3 else ''}): its looks would not be the "
                         "planned procedure; resume with the recorded plan or start a new run directory")


__all__ = ["DESIGN_KEYS", "STATISTIC_KINDS", "SequentialSection", "check_same_design", "checked_sequential",
           "design_differences",
           "CONTINUE", "DECISIONS", "EFFICACY", "EFFICACY_OTHER", "FUTILITY", "Z_CAP",
           "Boundaries", "boundaries", "design_drift", "simulate_paths", "z_from_p"]
