"""One vocabulary of sizes: a design is named by its own fields everywhere.

A study, ``power``, ``plan`` and ``recover`` vary three kinds of size:

* **subjects** (``--subjects``): simulated subjects per data set (model-level studies);
* **runs** (``--runs``): sessions one simulated subject plays and the model pools (experiments
  whose pooling unit is the session), or the units a metric is computed over per setting;
* **design fields** (``--design FIELD=a,b,c``): the experiment's own integer fields, e.g.
  belief coherence's ``n_contexts``, magnitude's ``trials_per_session``; a comma list sweeps the
  experiment's trials field (:attr:`~cogtestbed.experiments.spec.ExperimentSpec.trials_field`) as
  one study's trials axis, any other integer field as one study per value (``plan`` searches
  it instead: :func:`plan_design`).

``--trials N`` means one thing everywhere: the trials in **one run of the whole design** (every
block, condition, session and repetition: the design's ``n_trials``), reached by scaling the
trials field; ``--design FIELD=...`` names the same sizes in the design's own terms.

Every summary, verdict, table and plot names a design by its fields (:func:`design_label`:
``200 contexts × 5 repetitions (1000 trials per run)``), and the resolved design, every field
including defaults, is printed and saved (:func:`resolved_designs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.formatting import FIELD_NOUNS, field_text
from cogtestbed.studies.study_data import design_for_trials, trials_step


def integer_fields(exp: ExperimentSpec) -> list[str]:
    """The design's integer fields (those a size can name)."""
    out = []
    for name, f in exp.design_cls.model_fields.items():
        if f.annotation is int or f.annotation == "int":
            out.append(name)
    return out


def split_design(exp: ExperimentSpec, items: list[str] | None) -> tuple[dict[str, Any], tuple[int | None, ...]]:
    """``--design`` items → (fixed design fields, trials axis).

    ``NAME=VALUE`` sets a field (JSON where it parses, else text); ``NAME=a,b,c`` on the trials
    field sweeps it: each value becomes the trials of one run (``value × step``), so studies and
    plans search it as their trials axis; a comma list on another integer field raises
    :class:`DesignSweep`, which the study commands turn into one study per value.
    """
    fixed: dict[str, Any] = {}
    swept: tuple[int, ...] = ()
    named: set[str] = set()
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError(f"`design` expects NAME=VALUE, got {item!r}")
        if name in fixed or name in named:  # which value would win is a guess (as `parse_assignments` refuses)
            raise InputError(f"`design` sets {name} twice; give it once")
        named.add(name)
        if _is_list(exp, item):
            swept = _sweep(exp, name, value)
            continue
        try:
            fixed[name] = json.loads(value)
        except json.JSONDecodeError:
            fixed[name] = value
    if not swept:
        return fixed, (None,)
    assert exp.trials_field is not None
    if exp.trials_field in fixed:
        raise InputError(f"`design` sets {exp.trials_field} twice (a value and a list); give it once")
    base = design_for_trials(exp, None, fixed)
    step = trials_step(base, exp.trials_field)
    return fixed, tuple(v * step for v in swept)


class DesignSweep(ValueError):
    """``--design NAME=a,b,c`` on an integer field other than the trials field: the study commands
    run one study per value (:attr:`name`, :attr:`values`); elsewhere it is this one-line error."""

    def __init__(self, exp: ExperimentSpec, name: str, values: tuple[int, ...]) -> None:
        field_ = exp.trials_field or "(none: its trial count is fixed)"
        super().__init__(f"`design` {name}=a,b,c: a comma list sweeps {exp.name}'s trials field {field_} here; the "
                         f"study commands (recover, power, ...) run one study per value of {name}; plan searches it")
        self.name, self.values = name, values


def plan_design(exp: ExperimentSpec, items: list[str] | None
                ) -> tuple[dict[str, Any], tuple[int | None, ...], tuple[str, tuple[int, ...]] | None]:
    """``--design`` items of ``plan`` → (fixed fields, trials axis, searched field).

    A plan searches one size of the design at a time: a comma list on the trials field gives the
    trials axis (as :func:`split_design`); a list on any other integer field gives the searched
    field ``(name, values)``, every other field fixed (the trials field at its value).  Two lists
    are refused.
    """
    lists = [item for item in items or [] if _is_list(exp, item)]
    if len(lists) > 1:
        names = " and ".join(f"`design` {item.partition('=')[0].strip()}=..." for item in lists)
        raise InputError(f"plan searches one design field at a time: {names} are both lists; fix all but one")
    try:
        fixed, trials = split_design(exp, items)
    except DesignSweep as sweep:
        rest = [item for item in items or [] if not _is_list(exp, item)]
        fixed, _ = split_design(exp, rest)
        if sweep.name in fixed:
            raise InputError(f"`design` sets {sweep.name} twice (a value and a list); give it once") from None
        return fixed, (None,), (sweep.name, sweep.values)
    return fixed, trials, None


def _is_list(exp: ExperimentSpec, item: str) -> bool:
    """Whether ``NAME=a,b,c`` is a list of sizes: commas in the value of an integer field (or of a
    name that is no field, refused by :func:`_sweep`); a field of another type takes the text as
    its value (belief coherence's ``evidence=smoke,asia``, as ``simulate`` and ``run`` take it)."""
    name, _, value = item.partition("=")
    name = name.strip()
    if "," not in value or value.strip().startswith(("[", "{", '"')):
        return False
    return name not in exp.design_cls.model_fields or name in integer_fields(exp)


def _sweep(exp: ExperimentSpec, name: str, text: str) -> tuple[int, ...]:
    if name not in exp.design_cls.model_fields:
        raise InputError(f"{name!r} is not a design field of {exp.name}; valid: "
                         f"{', '.join(exp.design_cls.model_fields)}")
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"`design` {name} expects comma-separated integers, got {text!r}") from None
    return _swept(exp, name, values, repr(text))


def _swept(exp: ExperimentSpec, name: str, values: tuple[int, ...], shown: str) -> tuple[int, ...]:
    """The sizes ``values`` of the design field ``name`` searched, checked (the trials field's are returned; another
    integer field raises :class:`DesignSweep`)."""
    if any(v < 1 for v in values):
        raise InputError(f"`design` {name} values must be at least 1, got {shown}")
    values = tuple(sorted(set(values)))
    if name != exp.trials_field:
        if name not in integer_fields(exp):
            raise InputError(f"`design` {name}=a,b,c: {name} is not an integer field of {exp.name}")
        raise DesignSweep(exp, name, values)
    return values


def plan_design_fields(exp: ExperimentSpec, fields: Mapping[str, Any]
                       ) -> tuple[dict[str, Any], tuple[int | None, ...], tuple[str, tuple[int, ...]] | None]:
    """A typed ``design`` of ``plan`` (``{FIELD: VALUE}``, a list, tuple or range of integers on the one field
    searched) → what :func:`plan_design` makes of the same fields as text, without writing them as text."""
    lists = [name for name, v in fields.items() if isinstance(v, (list, tuple, range))]
    if len(lists) > 1:
        raise InputError(f"plan searches one design field at a time: `design` {' and '.join(lists)} are both lists; "
                         "fix all but one")
    fixed = {k: v for k, v in fields.items() if k not in lists}
    if not lists:
        return fixed, (None,), None
    name, given = lists[0], tuple(fields[lists[0]])
    if name not in exp.design_cls.model_fields:
        raise InputError(f"{name!r} is not a design field of {exp.name}; valid: "
                         f"{', '.join(exp.design_cls.model_fields)}")
    if not given or not all(isinstance(v, int) and not isinstance(v, bool) for v in given):
        raise InputError(f"`design` {name} expects integers, got {list(given)!r}")
    try:
        values = _swept(exp, name, given, repr(list(given)))
    except DesignSweep as sweep:
        return fixed, (None,), (sweep.name, sweep.values)
    assert exp.trials_field is not None
    if exp.trials_field in fixed:
        raise InputError(f"`design` sets {exp.trials_field} twice (a value and a list); give it once")
    step = trials_step(design_for_trials(exp, None, fixed), exp.trials_field)
    return fixed, tuple(v * step for v in values), None


def size_fields(exp: ExperimentSpec, design: Any) -> dict[str, int]:
    """The design's size fields: its trials field first, then the other integer count fields a
    label names (``n_reps``), then the design's trials per run."""
    out: dict[str, int] = {}
    if exp.trials_field is not None:
        out[exp.trials_field] = int(getattr(design, exp.trials_field))
    for name in integer_fields(exp):
        if name in FIELD_NOUNS and name not in out:
            out[name] = int(getattr(design, name))
    return out


def design_label(exp: ExperimentSpec, fields: Mapping[str, Any], trials: int | None) -> str:
    """A design named by its fields: ``200 contexts × 5 repetitions (1000 trials per run)``."""
    design = design_for_trials(exp, trials, fields)
    sizes = size_fields(exp, design)
    total = int(design.n_trials)
    named = " × ".join(field_text(k, v) for k, v in sizes.items())
    per_run = f"{total} trial{'s' if total != 1 else ''} per run"
    return f"{named} ({per_run})" if named else per_run


def resolved_designs(exp: ExperimentSpec, fields: Mapping[str, Any],
                     trials: tuple[int | None, ...]) -> list[dict[str, Any]]:
    """Every field of each design a study plays (defaults included), with its label and trials."""
    out = []
    for t in trials:
        design = design_for_trials(exp, t, fields)
        out.append({"label": design_label(exp, fields, t), "n_trials": int(design.n_trials),
                    "fields": design.model_dump(mode="json")})
    return out


def unit_text(exp: ExperimentSpec, model_level: bool, runs: tuple[int, ...]) -> str:
    """What one simulated subject / run is, for a study's summary."""
    pooled = ", ".join(str(r) for r in runs)
    if model_level:
        if exp.pooling_unit == "session":
            return (f"One subject plays {pooled} run(s) of the design, pooled in its fit (one run = one session "
                    "of the whole design).")
        return "One subject plays one run of the design (one session of the whole design)."
    return (f"One run is one simulated session of the whole design; each simulated study computes the metric or "
            f"test over {pooled} run(s) per setting, pooled.")


__all__ = ["DesignSweep", "design_label", "integer_fields", "plan_design", "resolved_designs", "size_fields",
           "split_design", "unit_text"]
