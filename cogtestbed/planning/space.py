"""The design space a plan searches (:mod:`cogtestbed.planning.plan`): its axes and its points.

Read from the :class:`~cogtestbed.experiments.spec.ExperimentSpec`, never from an experiment's name:

* the **size** axis: simulated subjects for a model-level target, runs (units per setting) for a
  metric- or test-level target;
* **runs** per subject where a model-level target's experiment pools sessions (``pooling_unit``);
* **trials** per session where the experiment declares a ``trials_field`` (or another integer
  design field searched in its place).

A :class:`Point` is one design; :func:`study_at` is the study at it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.studies.study_data import design_for_trials, trials_step
from cogtestbed.studies.study_kinds import ModelStudy, PlannedStudy, PowerStudy

#: Values of each non-size axis on the coarse grid.
COARSE_POINTS = 5

#: Default trials range: the design's default trial count up to this multiple of it.
TRIALS_SPAN = 5

#: Default size range (subjects, or runs per setting).
DEFAULT_SIZE = (10, 200)

#: The most units (subjects, or runs per setting) a default size range is extended to: while a
#: combination of the other axes fails only for want of size at the range's top (no size up to it
#: reaches the target, and its top costs less than the best design so far), the top is doubled, up
#: to this cap (10× the default top); a range given by the user is not extended (the plan says when
#: its choice sits at an edge).
MAX_EXTENDED_SIZE = 2000


# ----------------------------------------------------------------------------- design space
@dataclass(frozen=True)
class Axis:
    """One axis of the design space: its name and the values it may take (sorted)."""

    name: str
    values: Sequence[int]

    def coarse(self, points: int = COARSE_POINTS) -> tuple[int, ...]:
        """Up to ``points`` values spread evenly (by index) over the axis, ends included."""
        if len(self.values) <= points:
            return tuple(self.values)
        idx = np.unique(np.round(np.linspace(0, len(self.values) - 1, points)).astype(int))
        return tuple(self.values[i] for i in idx)

    def between(self, a: int, b: int) -> int | None:
        """The allowed value closest to the midpoint of ``a`` and ``b`` strictly between them."""
        inner = [v for v in self.values if min(a, b) < v < max(a, b)]
        if not inner:
            return None
        mid = (a + b) / 2
        return min(inner, key=lambda v: (abs(v - mid), v))


def parse_range(given: Any, default: tuple[int, int] | None, name: str = "sizes") -> Sequence[int] | None:
    """The sizes ``given`` (a :class:`~cogtestbed.planning.sizes.Sizes`, ``LO:HI``, ``a,b,c``, one
    integer, ``(lo, hi)`` or a list; None: ``default``'s range, or None), sorted: a range stays a lazy
    :class:`range`, never listed integer by integer (:class:`~cogtestbed.planning.sizes.Sizes`)."""
    from cogtestbed.planning.sizes import Sizes

    if given is None:
        return None if default is None else range(default[0], default[1] + 1)
    return Sizes.of(given, name).values()


def size_axis_name(spec: PlannedStudy) -> str:
    """``subjects`` for a model-level target, ``runs`` (units per setting) otherwise."""
    return "subjects" if isinstance(spec, ModelStudy) else "runs"


def design_axes(spec: PlannedStudy, exp: ExperimentSpec, subjects: Any = None, runs: Any = None,
                trials: Any = None, field: Axis | None = None) -> tuple[Axis, list[Axis]]:
    """(size axis, other axes) of the design space ``spec``'s experiment declares.

    ``trials`` values must be reachable through the spec's ``trials_field`` (multiples of its step);
    unreachable ones are dropped, and none left is an error.  ``field``: an integer design field
    other than the trials field searched instead of the trials axis (its values from ``--design
    NAME=a,b,c``); the trials field then stays at the design's value.
    """
    size_name = size_axis_name(spec)
    pooled = isinstance(spec, ModelStudy) and exp.pooling_unit == "session"
    if size_name == "subjects":
        size = Axis("subjects", parse_range(subjects, DEFAULT_SIZE, "subjects") or ())
        if runs is not None and not pooled:
            raise InputError(f"experiment {exp.name} pools subjects, not sessions: `runs` needs an experiment "
                             "whose pooling unit is the session")
    else:
        if subjects is not None:
            raise InputError("`subjects` sizes a model-level target; a metric or test target is sized in `runs`")
        size = Axis("runs", parse_range(runs, DEFAULT_SIZE, "runs") or ())
    others: list[Axis] = []
    if pooled:
        others.append(Axis("runs", parse_range(runs, None, "runs") or declared_runs(spec, exp)))
    if field is not None:
        if trials is not None:
            raise InputError(f"`trials` and `design` {field.name}=a,b,c: plan searches one size of the design at a "
                             f"time; fix the trials field with `design` {exp.trials_field}=N")
        others.append(field)
    elif exp.trials_field is not None:
        others.append(Axis("trials", trials_values(spec, exp, trials)))
    elif trials is not None:
        raise InputError(f"experiment {exp.name} has a fixed number of trials per run (no trials field)")
    return size, others


def declared_runs(spec: PlannedStudy, exp: ExperimentSpec) -> tuple[int, ...]:
    """Runs per subject of the experiment's declared study of this kind and model (else 1)."""
    for decl in exp.studies_of(spec.kind):
        if decl.runs and (decl.model is None or (isinstance(spec, ModelStudy) and decl.model in spec.models)):
            return tuple(sorted(set(decl.runs)))
    return (1,)


def trials_values(spec: PlannedStudy, exp: ExperimentSpec, text: Any) -> tuple[int, ...]:
    """Reachable trial counts in the requested range (default: the design's count to ×5)."""
    base = design_for_trials(exp, None, spec.design).n_trials
    assert exp.trials_field is not None
    step = trials_step(design_for_trials(exp, None, spec.design), exp.trials_field)
    wanted = parse_range(text, (base, TRIALS_SPAN * base), "trials") or ()
    values = tuple(v for v in wanted if v % step == 0)
    if not values:
        raise InputError(f"no trial count in {str(text)!r} is reachable: {exp.name}'s {exp.trials_field} "
                         f"scales a session in steps of {step} trials")
    return values


# ----------------------------------------------------------------------------- designs and costs
@dataclass(frozen=True, order=True)
class Point:
    """One design: simulated subjects, runs (sessions per subject or units per setting), trials,
    and the value of a searched design field other than the trials field (``fields``:
    ``(("n_reps", 3),)``; empty where the plan searches the trials field or nothing)."""

    subjects: int
    runs: int
    trials: int | None
    fields: tuple[tuple[str, int], ...] = ()

    def value(self, name: str) -> int:
        """The point's value on axis ``name`` (subjects, runs, trials or a searched design field; a
        point of a plan that searches an axis has a value on it)."""
        fields = dict(self.fields)
        return fields[name] if name in fields else getattr(self, name)

    def design(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The design fields of this point: ``base`` (the study's fixed fields) with its searched field."""
        return {**base, **dict(self.fields)}

    def label(self, size_name: str, spec: Any = None) -> str:
        """The design in words: subjects, runs and the design named by its fields (with ``spec``:
        ``3 subjects, 40 contexts × 5 repetitions (200 trials per run)``)."""
        parts = [f"{self.subjects} subject{'s' * (self.subjects != 1)}"] if size_name == "subjects" else []
        if size_name == "runs" or self.runs > 1:
            parts.append(f"{self.runs} run{'s' * (self.runs != 1)}")
        if spec is not None:
            from cogtestbed.formatting import FIELD_NOUNS, field_text
            from cogtestbed.registry import get_experiment
            from cogtestbed.studies.labels import design_name

            spec = spec_at(spec, self)
            trials = self.trials if self.trials is not None else design_for_trials(
                get_experiment(spec.experiment), None, spec.design).n_trials
            parts.append(design_name(spec, trials))
            # a searched field the design's label does not name (not a count it knows): by name
            parts.extend(field_text(k, v) for k, v in self.fields if k not in FIELD_NOUNS)
        else:
            if self.trials is not None:
                parts.append(f"{self.trials} trials per run")
            parts.extend(f"{k}={v}" for k, v in self.fields)
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """Subjects, runs and trials (the arguments of :class:`Point` but ``fields``)."""
        return {"subjects": self.subjects, "runs": self.runs, "trials": self.trials}


def spec_at(spec: Any, point: Point) -> Any:
    """``spec`` with ``point``'s searched design field set in its design (itself where none is)."""
    return spec.model_copy(update={"design": point.design(spec.design)}) if point.fields else spec


def study_at(spec: PlannedStudy, point: Point, reps: int) -> PlannedStudy:
    """The study ``spec`` at one design point with ``reps`` repetitions."""
    return spec_at(spec, point).at_point(point.subjects, point.runs, point.trials, reps)


def sessions_per_llm(spec: PlannedStudy, point: Point) -> int:
    """Sessions one LLM plays for ``point``: subjects × runs (model level) or runs (per setting)."""
    return point.subjects * point.runs if isinstance(spec, ModelStudy) else point.runs


def n_groups(spec: PlannedStudy) -> int:
    """LLMs (agent settings) a design needs: two for a metric difference and for a parameter's
    difference between two simulated groups (two LLMs), else one (an LLM against a fixed human
    sample is one LLM)."""
    if spec.kind == "metric-power":
        return 2
    if isinstance(spec, PowerStudy) and spec.groups == 2 and spec.reference is None and spec.people is None:
        return 2
    return 1
