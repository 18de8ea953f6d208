"""What a plan's refusals read from an experiment, known without importing it (every refusal
reachable from the request alone in under a second, from the command line, cold).

An experiment's module imports its models, simulators and metrics (numba, scipy, pandas: seconds on a cold
process); a refusal needs only names, bounds and declarations.  :class:`ExperimentFacts` holds them: each
model's parameters (name, bounds, default), its contrasts and the parameters its simulated agent takes, and
each headline metric's comparison between groups (:func:`~cogtestbed.planning.capabilities.
comparisons`).  :func:`facts_of` reads them from a loaded experiment (what the checks always read);
:func:`shipped_facts` from ``plan_facts.json`` beside this module, written by ``python -m
cogtestbed.planning.facts`` (tests/test_plan_kinds.py fails while it differs from :func:`facts_of`
of any package experiment), so :func:`cogtestbed.plan` checks a package experiment's request before importing
it.  A refusal from the shipped facts is the one the loaded experiment gives; a request they pass is checked
again on the loaded experiment before anything is simulated.

Imports nothing heavy.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError

#: The shipped facts of every package experiment (:func:`write_shipped`).
SHIPPED = Path(__file__).with_name("plan_facts.json")


@dataclass(frozen=True)
class ParamFact:
    """One model parameter as the refusals read it: its name, bounds and default."""

    name: str
    lower: float
    upper: float
    default: float


class ParamFacts(tuple[ParamFact, ...]):
    """A model's parameters in order (``.names`` as :class:`~cogtestbed.parameters.ParameterSet` has)."""

    @property
    def names(self) -> list[str]:
        """The parameters' names, in order."""
        return [p.name for p in self]


@dataclass(frozen=True)
class ModelFacts:
    """A model as the refusals read it: ``parameters``, ``contrasts`` (``{NAME: {PARAM: WEIGHT}}``), and the
    simulated ``agent`` with the parameters it takes at the model's defaults (``agent_params``; both None where
    the experiment simulates no agent for the model)."""

    parameters: ParamFacts
    contrasts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    agent: str | None = None
    agent_params: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ExperimentFacts:
    """An experiment as the refusals read it: its ``name``, its ``models`` and its headline metrics'
    ``comparisons`` (``{METRIC: {"test": ...}}`` or ``{METRIC: {"why": ...}}``, in headline order) with their
    ``aliases`` (``{ALIAS: METRIC}``); its ``pooling_unit`` (``session``: a subject's runs pooled, so ``runs``
    sizes a model target; ``subject``), its ``trials_field`` (None: a fixed number of trials per run) and
    ``trials_step``, the trials one unit of that field adds to a run of the default design
    (:func:`~cogtestbed.studies.study_data.trials_step`; 0 where the count is not proportional); and
    each simulated agent's parameters (``agents``: the settings of a metric target, ``compare`` and ``params``);
    its adaptive sessions (``adaptive``: ``{"model": NAME}``, the model choosing the trials, or ``{"refused": WHY}``,
    the line ``--adaptive`` is refused with); the ``tests`` a test target names (its metrics' declared tests and
    the headline metrics whose values are tests:
    :func:`~cogtestbed.planning.capabilities.statistical_tests`)."""

    name: str
    models: Mapping[str, ModelFacts]
    comparisons: Mapping[str, Mapping[str, str]]
    aliases: Mapping[str, str] = field(default_factory=dict)
    pooling_unit: str = "subject"
    trials_field: str | None = None
    trials_step: int = 0
    agents: Mapping[str, ParamFacts] = field(default_factory=dict)
    adaptive: Mapping[str, str] = field(default_factory=dict)
    tests: tuple[str, ...] = ()
    #: the design's field names (``--design NAME=VALUE``; empty: not shipped, the loaded experiment checks them)
    design_fields: tuple[str, ...] = ()

    def model(self, name: str) -> ModelFacts:
        """The model ``name``'s facts."""
        return self.models[name]

    def resolve(self, metric: str) -> str:
        """The headline metric ``metric`` or its alias names (unchanged when it is neither; case folded as
        :meth:`~cogtestbed.experiments.spec.MetricsSpec.resolve` folds it)."""
        if metric in self.comparisons:
            return metric
        folded = {k.lower(): v for k, v in self.aliases.items()} | {k.lower(): k for k in self.comparisons}
        return folded.get(metric.lower(), metric)

    def comparable(self) -> list[str]:
        """The headline metrics two groups can be compared in."""
        return [m for m, how in self.comparisons.items() if "test" in how]

    def to_dict(self) -> dict[str, Any]:
        """The facts as ``plan_facts.json`` holds them."""
        return {"models": {name: {"parameters": _param_rows(m.parameters),
                                  "contrasts": {k: dict(v) for k, v in m.contrasts.items()}, "agent": m.agent,
                                  "agent_params": None if m.agent_params is None else list(m.agent_params)}
                           for name, m in self.models.items()},
                "comparisons": [[k, dict(v)] for k, v in self.comparisons.items()], "aliases": dict(self.aliases),
                "pooling_unit": self.pooling_unit, "trials_field": self.trials_field, "trials_step": self.trials_step,
                "agents": {name: _param_rows(params) for name, params in self.agents.items()},
                "adaptive": dict(self.adaptive), "tests": list(self.tests), "design_fields": list(self.design_fields)}

    @classmethod
    def from_dict(cls, name: str, row: Mapping[str, Any]) -> ExperimentFacts:
        """The facts of ``name`` from their ``plan_facts.json`` row."""
        models = {m: ModelFacts(_params_of(given["parameters"]),
                                {k: {q: float(w) for q, w in v.items()} for k, v in given["contrasts"].items()},
                                given["agent"], None if given["agent_params"] is None else tuple(given["agent_params"]))
                  for m, given in row["models"].items()}
        return cls(name, models, {str(k): dict(v) for k, v in row["comparisons"]}, dict(row["aliases"]),
                   str(row["pooling_unit"]), row["trials_field"], int(row["trials_step"]),
                   {agent: _params_of(rows) for agent, rows in row["agents"].items()}, dict(row["adaptive"]),
                   tuple(row["tests"]), tuple(row.get("design_fields", ())))


def _param_rows(params: ParamFacts) -> list[list[Any]]:
    return [[p.name, p.lower, p.upper, p.default] for p in params]


def _params_of(rows: Any) -> ParamFacts:
    return ParamFacts(ParamFact(str(p[0]), float(p[1]), float(p[2]), float(p[3])) for p in rows)


def _param_facts(parameters: Any) -> ParamFacts:
    """The facts of a :class:`~cogtestbed.parameters.ParameterSet` (a model's or an agent's)."""
    return ParamFacts(ParamFact(p.name, float(p.lower), float(p.upper), float(p.default)) for p in parameters)


def _model_facts(exp: Any, name: str) -> ModelFacts:
    model = exp.model(name)
    params = _param_facts(model.parameters)
    contrasts = {k: {q: float(w) for q, w in v.items()} for k, v in (getattr(model, "contrasts", None) or {}).items()}
    generator = (getattr(exp, "generators", None) or {}).get(name)
    if generator is None:
        return ModelFacts(params, contrasts)
    taken = generator.agent_params({p.name: p.default for p in params})
    return ModelFacts(params, contrasts, str(generator.agent), tuple(sorted(taken)))


def facts_of(exp: Any) -> ExperimentFacts:
    """The facts of a loaded experiment (``exp`` itself where it is already :class:`ExperimentFacts`)."""
    from cogtestbed.planning.capabilities import comparisons, statistical_tests

    if isinstance(exp, ExperimentFacts):
        return exp
    aliases = dict(getattr(exp.metrics, "aliases", None) or {})
    return ExperimentFacts(exp.name, {name: _model_facts(exp, name) for name in exp.models}, comparisons(exp),
                           aliases, str(exp.pooling_unit), exp.trials_field, _trials_step(exp),
                           {name: _param_facts(agent.parameters) for name, agent in exp.agents.items()},
                           _adaptive_facts(exp), tuple(statistical_tests(exp)), tuple(exp.design_cls.model_fields))


def _adaptive_facts(exp: Any) -> dict[str, str]:
    """``{"model": NAME}`` of the model choosing ``exp``'s adaptive trials, or ``{"refused": WHY}``."""
    from cogtestbed.experiments._adaptive import adaptive_refusal

    refused = adaptive_refusal(exp)
    return {"refused": refused} if refused is not None else {"model": str(exp.adaptive.model)}


def _trials_step(exp: Any) -> int:
    """The trials one unit of ``exp``'s trials field adds to a run of its default design (the step
    :func:`~cogtestbed.planning.space.trials_values` reads); 0 without a trials field."""
    from cogtestbed.studies.study_data import design_for_trials, trials_step

    if exp.trials_field is None:
        return 0
    return trials_step(design_for_trials(exp, None, {}), exp.trials_field)


def check_metric_target(exp: Any, metric: str) -> None:
    """Refuse, before any simulation, a metric two groups cannot be compared in (with why, and the metrics
    that can be), from :func:`~cogtestbed.planning.capabilities.comparisons` (a declared comparison first,
    :attr:`~cogtestbed.experiments.spec.MetricsSpec.comparisons`: the refusal ``power --metric`` gives) as
    :func:`facts_of` holds it: ``exp`` a loaded experiment or its shipped
    facts (the check then runs before the experiment is imported)."""
    facts = facts_of(exp)
    how = facts.comparisons.get(facts.resolve(metric))
    can = ", ".join(facts.comparable())
    if how is None:
        raise InputError(f"`metric` {metric!r} is no headline metric of {facts.name}: the metrics two groups can be "
                         f"compared in are {can or 'none'}")
    if "why" in how:
        raise InputError(f"`metric` {metric!r} of {facts.name} cannot be compared between two groups: {how['why']}; "
                         + (f"comparable: {can}" if can else "none of its metrics can be"))


@functools.cache
def _shipped() -> dict[str, Any]:
    return dict(json.loads(SHIPPED.read_text(encoding="utf-8"))) if SHIPPED.exists() else {}


def shipped_facts(name: Any) -> ExperimentFacts | None:
    """The shipped facts of the package experiment ``name``, or None (an experiment given as a spec, registered
    from outside the package, or not shipped)."""
    if not isinstance(name, str):
        return None
    row = _shipped().get(name)
    return None if row is None else ExperimentFacts.from_dict(name, row)


def shipped_names() -> Iterator[str]:
    """The experiments whose facts are shipped."""
    yield from _shipped()


def write_shipped() -> Path:
    """Read the facts of every package experiment and write :data:`SHIPPED`."""
    from cogtestbed.registry import EXPERIMENTS, get_experiment

    table = {name: facts_of(get_experiment(name)).to_dict() for name in EXPERIMENTS.builtin_names()}
    SHIPPED.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    _shipped.cache_clear()
    return SHIPPED


__all__ = ["SHIPPED", "ExperimentFacts", "ModelFacts", "ParamFact", "ParamFacts", "check_metric_target", "facts_of",
           "shipped_facts", "shipped_names", "write_shipped"]


if __name__ == "__main__":  # pragma: no cover - the release step that rewrites the shipped facts
    print(write_shipped())
