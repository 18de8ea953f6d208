"""An experiment's declaration of its adaptive sessions: which model's posterior chooses
the trials and from which design space, or why its trials cannot be chosen freely.

A spec sets ``adaptive=AdaptiveDecl(model, space)``: ``space(design)`` returns the
:class:`~cogtestbed.inference.adaptive.DesignSpace` of the design's candidate trials (the model's
kernel arrays of each), and the environment plays ``design.trials`` of them, each chosen by an
:class:`~cogtestbed.inference.adaptive.AdaptiveDesigner` on the parameters ``design.adaptive``.  A
spec whose trials cannot be chosen without breaking the instrument sets ``adaptive="<reason>"``;
:func:`adaptive_model` refuses ``--adaptive`` in one line with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogtestbed.errors import InputError

# ``spec`` arguments are :class:`~cogtestbed.experiments.spec.ExperimentSpec` objects (typed Any: the spec
# module calls :func:`register_adaptive`, so this module does not import it back)

if TYPE_CHECKING:
    from cogtestbed.inference.adaptive import DesignSpace
    from cogtestbed.inference.base import CognitiveModel

#: The reason given where a spec declares nothing.
UNDECLARED = "the experiment declares no adaptive design space"
#: ``--adaptive all``: every parameter of the model.
ALL = "all"


@dataclass(frozen=True)
class AdaptiveDecl:
    """Adaptive sessions of an experiment: the ``model`` (a name among the spec's models) whose grid
    posterior chooses each trial from ``space(design)``."""

    model: str
    space: Callable[[Any], DesignSpace]
    note: str = ""
    #: Where the posterior reads more than (design, answer) from a table (continuous answers, a
    #: covariate the subject reports): per subject, per trial, (design index, the kernel's observation
    #: fields); the adaptive-vs-fixed comparison then plays both arms through the environment (the
    #: fixed arm: the instrument's own stimuli) and replays each posterior with these.
    observations: Callable[[Any], list[list[tuple[int, dict[str, Any]]]]] | None = None
    #: Design fields of the adaptive-vs-fixed comparison and of ``plan --adaptive`` (e.g. one block
    #: of magnitude estimation, where ``--trials`` counts the trials of every block).
    study_design: tuple[tuple[str, Any], ...] = ()


def register_adaptive(spec: Any) -> None:
    """Give the spec's environment its trial chooser (called when the spec is declared)."""
    decl = spec.adaptive
    if not isinstance(decl, AdaptiveDecl):
        return
    from cogtestbed.environments.adaptive import register_chooser

    def factory(design: Any) -> Any:
        from cogtestbed.inference.adaptive import AdaptiveDesigner

        return AdaptiveDesigner(spec.models[decl.model], decl.space(design), tuple(design.adaptive))

    register_chooser(spec.name, factory)


def adaptive_model(spec: Any) -> CognitiveModel:
    """The model whose posterior chooses the spec's adaptive trials (refused in one line, with the
    spec's reason, where its trials cannot be chosen freely)."""
    refused = adaptive_refusal(spec)
    if refused is not None:
        raise InputError(refused)
    return spec.models[spec.adaptive.model]


def adaptive_refusal(spec: Any) -> str | None:
    """Why ``--adaptive`` is refused for ``spec`` (its declared reason, else :data:`UNDECLARED`), or None where
    it declares its adaptive sessions (:func:`adaptive_model` raises it)."""
    decl = spec.adaptive
    return None if isinstance(decl, AdaptiveDecl) else f"{spec.name}: `adaptive` refused: {decl or UNDECLARED}"


def adaptive_targets(experiment: str, model: str, parameters: Sequence[str], params: Sequence[str] | str) -> list[str]:
    """The parameters ``params`` names (``PARAM[,PARAM]``, a list, or ``all``) of ``experiment``'s adaptive model
    ``model`` (with ``parameters``), refused in one line where one is none of them (or none is named)."""
    names = [p.strip() for p in (params.split(",") if isinstance(params, str) else params) if p.strip()]
    if names == [ALL]:
        names = list(parameters)
    unknown = [n for n in names if n not in parameters]
    if unknown or not names:
        raise InputError(f"`adaptive` {','.join(unknown) or '(none)'}: the {experiment} adaptive model "
                         f"{model!r} has parameters {', '.join(parameters)} (or 'all')")
    return names


def adaptive_fields(spec: Any, params: Sequence[str] | str | None, trials: int | None) -> dict[str, Any]:
    """The design fields of an adaptive session of ``spec`` (``adaptive``, ``trials``), checked:
    ``params`` names parameters of the spec's adaptive model (or ``all``), ``trials`` ≥ 1.  Empty
    without ``params``."""
    if params is None or (not isinstance(params, str) and not list(params)):
        if trials:
            raise InputError("`trials` sets the length of an adaptive session: give `adaptive` PARAM[,PARAM] too")
        return {}
    model = adaptive_model(spec)
    names = adaptive_targets(spec.name, model.name, list(model.parameters.names), params)
    if trials is None or trials < 1:
        raise InputError("`adaptive` needs `trials` N (N >= 1): the length of the adaptive session")
    return {"adaptive": tuple(n for n in model.parameters.names if n in names), "trials": int(trials)}
