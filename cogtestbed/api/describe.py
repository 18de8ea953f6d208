"""What is registered, as plain data (``cogtestbed list``): :func:`describe`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public

if TYPE_CHECKING:
    from cogtestbed.experiments.spec import ExperimentSpec


@public()
def describe(experiment: str | ExperimentSpec | None = None) -> dict[str, Any]:
    """Everything a user can name, as the command prints it with ``--json``: without an
    experiment ``{"experiments": [{"name", "description"}, ...]}`` (every registered one); with one,
    its agents and models (parameters with bounds, defaults and transforms), design fields with
    defaults, metrics (headline keys, options), importers, prompt forms, declared studies, pooling
    unit and trials field (:func:`describe_experiment`).

    Parameters
    ----------
    experiment : str or ExperimentSpec, optional
        One experiment (None: every registered experiment, briefly).

    Returns
    -------
    dict
        What ``cogtestbed list [EXPERIMENT] --json`` prints.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> info = ct.describe("instrumental-learning")
    >>> info["name"], info["pooling_unit"], info["trials_field"]
    ('instrumental-learning', 'subject', 'visits_per_casino')
    """
    from cogtestbed.api.core import experiments, get_experiment

    if experiment is None:
        return {"experiments": [{"name": n, "description": get_experiment(n).description} for n in experiments()]}
    return describe_experiment(get_experiment(experiment))


def _number(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _parameters(pset: Any) -> list[dict[str, Any]]:
    return [{"name": p.name, "lower": _number(p.lower), "upper": _number(p.upper), "default": p.default,
             "transform": p.transform, "description": p.description} for p in pset]


def _design_fields(design_cls: Any) -> list[dict[str, Any]]:
    out = []
    for name, f in design_cls.model_fields.items():
        default = None if f.is_required() else f.get_default(call_default_factory=True)
        out.append({"name": name, "type": getattr(f.annotation, "__name__", str(f.annotation)),
                    "default": default, "description": f.description or "",
                    "example": f"--design {design_cls.field_example(name)}"})
    return out


def describe_experiment(exp: ExperimentSpec) -> dict[str, Any]:
    """Everything a user can name for ``exp`` (an :class:`ExperimentSpec`), as plain data."""
    from cogtestbed.studies.driver import declared_studies

    note = exp.env_cls.cover_story_note
    return {
        "name": exp.name, "description": exp.description, "citation": exp.citation,
        "pooling_unit": exp.pooling_unit, "trials_field": exp.trials_field,
        "agents": [{"name": name, "parameters": _parameters(cls.parameters)} for name, cls in exp.agents.items()],
        "models": [{"name": name, "parameters": _parameters(m.parameters), "has_pymc": bool(m.has_pymc),
                    "contrasts": sorted(m.contrasts), "generated_by": exp.generators[name].agent}
                   for name, m in exp.models.items()],
        "design": {"class": exp.design_cls.__name__, "fields": _design_fields(exp.design_cls)},
        "metrics": {"unit": exp.metrics.unit, "headline": list(exp.metrics.headline),
                    "options": [{"name": o.name, "flag": o.flag, "default": o.default,
                                 "choices": list(o.choices) if o.choices else None, "help": o.help}
                                for o in exp.metrics.options.values()]},
        "importers": sorted(exp.all_importers),
        "prompt_forms": [f.as_json() for f in exp.prompt_forms],
        **({"cover_story_note": note} if note is not None else {}),
        "studies": [{"name": n, "kind": d.kind, "description": d.description} for n, d in declared_studies(exp)],
        "adaptive": _adaptive(exp),
        "planning": _planning(exp),
    }


def _planning(exp: ExperimentSpec) -> dict[str, Any]:
    """What ``cogtestbed plan`` can plan for ``exp``: each headline metric compared between two groups
    (or why not), the parameters forms plans can shift and adaptive plans target
    (:func:`~cogtestbed.planning.capabilities.planning`)."""
    from cogtestbed.planning.capabilities import planning

    return planning(exp)


def _adaptive(exp: ExperimentSpec) -> dict[str, Any]:
    """The experiment's adaptive sessions: the model and design space, or why none."""
    from cogtestbed.experiments._adaptive import UNDECLARED, AdaptiveDecl

    decl = exp.adaptive
    if not isinstance(decl, AdaptiveDecl):
        return {"refused": decl or UNDECLARED}
    return {"model": decl.model, "parameters": list(exp.models[decl.model].parameters.names), "space": decl.note}
