"""The experiment registry: one :class:`Experiment` per task, wiring its environment, synthetic
agents, cognitive models, published metrics and importers.

Generic code (simulation, CLI, studies, LLM runs) looks experiments up here and dispatches on the
contracts; it never branches on an experiment's name.  Each experiment is built lazily by a
builder function, so importing the registry stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import TextEnv
from cogtestbed.inference.base import CognitiveModel

MetricsFn = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class MetricOption:
    """A keyword option of an experiment's metrics function (``cogtestbed metrics … --NAME V``).

    Generic code passes ``NAME=value`` (converted by ``type``, checked against ``choices``) to
    ``Experiment.metrics(table, **options)``; an experiment declares the options it accepts.
    """

    name: str
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] = str

    def convert(self, raw: str) -> Any:
        if self.choices is not None and raw not in self.choices:
            raise ValueError(f"--{self.name.replace('_', '-')} must be one of "
                             f"{', '.join(self.choices)}, got {raw!r}")
        try:
            return self.type(raw)
        except (TypeError, ValueError):
            raise ValueError(f"--{self.name.replace('_', '-')}: cannot read {raw!r}") from None


@dataclass(frozen=True)
class Importer:
    """Reads published data of one source into a trial table."""

    source: str
    load: Callable[[Path], pd.DataFrame]
    sniff: Callable[[Path], bool]


@dataclass(frozen=True)
class Experiment:
    """Everything generic code needs to know about one experiment."""

    name: str
    description: str
    env_cls: type[TextEnv[Any, Any]]
    agents: Mapping[str, type[SyntheticAgent]]
    metrics: MetricsFn
    models: Mapping[str, CognitiveModel] = field(default_factory=dict)
    importers: Mapping[str, Importer] = field(default_factory=dict)
    #: Keyword options ``metrics`` accepts (see :class:`MetricOption`).
    metrics_options: Mapping[str, MetricOption] = field(default_factory=dict)

    def metric_option(self, name: str) -> MetricOption:
        try:
            return self.metrics_options[name]
        except KeyError:
            raise UnknownNameError("metrics option", f"--{name.replace('_', '-')}",
                                   {f"--{k.replace('_', '-')}": v for k, v in self.metrics_options.items()},
                                   self.name) from None

    def agent(self, name: str) -> type[SyntheticAgent]:
        try:
            return self.agents[name]
        except KeyError:
            raise UnknownNameError("agent", name, self.agents, f"experiment {self.name}") from None

    def model(self, name: str) -> CognitiveModel:
        try:
            return self.models[name]
        except KeyError:
            raise UnknownNameError("model", name, self.models, f"experiment {self.name}") from None

    def importer(self, source: str) -> Importer:
        try:
            return self.importers[source]
        except KeyError:
            raise UnknownNameError("data source", source, self.importers, self.name) from None


class UnknownNameError(KeyError):
    """A name that is not registered (the message lists the valid ones)."""

    def __init__(self, kind: str, name: str, valid: Mapping[str, Any] | list[str], where: str = ""):
        self.message = (
            f"unknown {kind} {name!r}{' for ' + where if where else ''}; "
            f"choose one of: {', '.join(sorted(valid))}"
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


# ----------------------------------------------------------------------------- builders
def _cogbench_importer(load: Callable[[Path], pd.DataFrame], columns: tuple[str, ...]) -> dict[str, Importer]:
    """The ``cogbench`` importer of a task: ``load``, recognising files by their ``columns``."""
    from cogtestbed.data.cogbench import looks_like_cogbench

    return {"cogbench": Importer("cogbench", load, lambda p: looks_like_cogbench(p, columns))}


def _instrumental_learning() -> Experiment:
    from cogtestbed.agents.instrumental import AGENTS
    from cogtestbed.data.cogbench import INSTRUMENTAL_COLUMNS, import_instrumental
    from cogtestbed.environments.instrumental import InstrumentalLearningEnv
    from cogtestbed.inference.instrumental import MODELS, cogbench_metrics

    return Experiment(
        name="instrumental-learning",
        description="CogBench instrumental learning: 4 two-armed casinos x 24 visits (Lefebvre 2017)",
        env_cls=InstrumentalLearningEnv,
        agents=AGENTS,
        metrics=cogbench_metrics,
        models=MODELS,
        importers=_cogbench_importer(import_instrumental, INSTRUMENTAL_COLUMNS),
    )


def _probabilistic_reasoning() -> Experiment:
    from cogtestbed.agents.probabilistic import AGENTS
    from cogtestbed.data.cogbench import PROBABILISTIC_COLUMNS, import_probabilistic
    from cogtestbed.environments.probabilistic import ProbabilisticReasoningEnv
    from cogtestbed.inference.probabilistic import MODELS, cogbench_metrics

    return Experiment(
        name="probabilistic-reasoning",
        description="CogBench probabilistic reasoning: wheel of fortune + urns, 2 judgements per run "
        "(Dasgupta 2020)",
        env_cls=ProbabilisticReasoningEnv,
        agents=AGENTS,
        metrics=cogbench_metrics,
        models=MODELS,
        importers=_cogbench_importer(import_probabilistic, PROBABILISTIC_COLUMNS),
    )


def _horizon() -> Experiment:
    from cogtestbed.agents.horizon import AGENTS
    from cogtestbed.data.cogbench import HORIZON_COLUMNS, import_horizon
    from cogtestbed.environments.horizon import HorizonEnv
    from cogtestbed.inference.horizon import MODELS, cogbench_metrics

    return Experiment(
        name="horizon",
        description="CogBench horizon task: 4 forced + 1 or 6 free choices per game (Wilson 2014)",
        env_cls=HorizonEnv,
        agents=AGENTS,
        metrics=cogbench_metrics,
        models=MODELS,
        importers=_cogbench_importer(import_horizon, HORIZON_COLUMNS),
    )


def _restless_bandit() -> Experiment:
    from cogtestbed.agents.restless import AGENTS
    from cogtestbed.data.cogbench import RESTLESS_COLUMNS, import_restless
    from cogtestbed.environments.restless import RestlessBanditEnv
    from cogtestbed.inference.restless import cogbench_metrics

    return Experiment(
        name="restless-bandit",
        description="CogBench restless bandit: 4 blocks, 80 trials, choice + confidence per trial "
        "(Ershadmanesh 2023)",
        env_cls=RestlessBanditEnv,
        agents=AGENTS,
        metrics=cogbench_metrics,
        importers=_cogbench_importer(import_restless, RESTLESS_COLUMNS),
    )


def _two_step() -> Experiment:
    from cogtestbed.agents.twostep import AGENTS
    from cogtestbed.data.cogbench import TWOSTEP_COLUMNS, import_twostep
    from cogtestbed.environments.twostep import TwoStepEnv
    from cogtestbed.inference.twostep import MODELS, cogbench_metrics

    return Experiment(
        name="two-step",
        description="CogBench two-step task: 20 days x 2 stages, 0.7/0.3 transitions (Daw 2011)",
        env_cls=TwoStepEnv, agents=AGENTS, metrics=cogbench_metrics, models=MODELS,
        importers=_cogbench_importer(import_twostep, TWOSTEP_COLUMNS),
    )


def _temporal_discounting() -> Experiment:
    from cogtestbed.agents.discounting import AGENTS
    from cogtestbed.data.cogbench import DISCOUNTING_COLUMNS, import_discounting
    from cogtestbed.environments.discounting import TemporalDiscountingEnv
    from cogtestbed.inference.discounting import MODELS, cogbench_metrics

    return Experiment(
        name="temporal-discounting",
        description="CogBench temporal discounting: Ruggeri staircase, 3 baselines + 4 anomalies",
        env_cls=TemporalDiscountingEnv, agents=AGENTS, metrics=cogbench_metrics, models=MODELS,
        importers=_cogbench_importer(import_discounting, DISCOUNTING_COLUMNS),
    )


def _bart() -> Experiment:
    from cogtestbed.agents.bart import AGENTS
    from cogtestbed.data.cogbench import BART_COLUMNS, import_bart
    from cogtestbed.environments.bart import BartEnv
    from cogtestbed.inference.bart import MODELS, cogbench_metrics

    return Experiment(
        name="bart",
        description="CogBench BART: 3 balloon types (M = 128, 32, 8) x 15, one call per pump",
        env_cls=BartEnv, agents=AGENTS, metrics=cogbench_metrics, models=MODELS,
        importers=_cogbench_importer(import_bart, BART_COLUMNS),
    )


def _collider() -> Experiment:
    from cogtestbed.agents.causal import AGENTS
    from cogtestbed.data.causal import (
        import_causaign_responses,
        import_rw17_human,
        looks_like_causaign_responses,
        looks_like_rw17_human,
    )
    from cogtestbed.environments.causal import CausalColliderEnv
    from cogtestbed.inference.causal import MODELS, collider_metrics

    return Experiment(
        name="collider",
        description="Causal collider C1 -> E <- C2: 11 query types x 20 items per cell "
        "(Rehder & Waldmann 2017; Dettki 2025 / causAIign)",
        env_cls=CausalColliderEnv,
        agents=AGENTS,
        metrics=collider_metrics,
        models=MODELS,
        importers={
            "rw17": Importer("rw17", import_rw17_human, looks_like_rw17_human),
            "causaign": Importer("causaign", import_causaign_responses,
                                 looks_like_causaign_responses),
        },
        metrics_options={
            "scheme": MetricOption("scheme", "CBN scheme: 3p, 4p or auto (max LOOCV R^2)", "auto",
                                   ("3p", "4p", "auto")),
            "aggregate": MetricOption(
                "aggregate", "fit cell means (human design), all rows (LLMs) or auto", "auto",
                ("auto", "cells", "rows")),
            "human": MetricOption("human", "RW17 human CSV for the Spearman alignment", None),
            "per_subject": MetricOption("per_subject", "also fit each subject: yes, no or auto",
                                        "auto", ("yes", "no", "auto")),
            "seed": MetricOption("seed", "seed of the fit's restarts and the bootstrap", 0, None, int),
        },
    )


_BUILDERS: dict[str, Callable[[], Experiment]] = {
    "instrumental-learning": _instrumental_learning,
    "probabilistic-reasoning": _probabilistic_reasoning,
    "horizon": _horizon,
    "restless-bandit": _restless_bandit,
    "two-step": _two_step,
    "temporal-discounting": _temporal_discounting,
    "bart": _bart,
}
_BUILDERS["collider"] = _collider


def _belief_coherence() -> Experiment:
    from cogtestbed.agents.belief import AGENTS
    from cogtestbed.environments.belief import BeliefCoherenceEnv
    from cogtestbed.inference.belief import METRIC_OPTIONS, belief_metrics
    from cogtestbed.inference.belief_models import MODELS

    return Experiment(
        name="belief-coherence",
        description="Belief coherence: elicit P(condition | evidence) from a Bayesian network, decide "
        "Yes/No/Defer; rationality tests T1-T4 (Yamin et al. 2026)",
        env_cls=BeliefCoherenceEnv, agents=AGENTS, metrics=belief_metrics, models=MODELS,
        metrics_options=METRIC_OPTIONS,
    )


_BUILDERS["belief-coherence"] = _belief_coherence
_CACHE: dict[str, Experiment] = {}


def experiment_names() -> list[str]:
    return list(_BUILDERS)


def get_experiment(name: str) -> Experiment:
    """The registered experiment called ``name`` (clear error listing valid names)."""
    if name not in _BUILDERS:
        raise UnknownNameError("experiment", name, list(_BUILDERS))
    if name not in _CACHE:
        _CACHE[name] = _BUILDERS[name]()
    return _CACHE[name]
