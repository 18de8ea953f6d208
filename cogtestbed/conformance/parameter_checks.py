"""Conformance checks of an experiment's parameters (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): out-of-bounds, NaN and unknown values are
refused in one clear line (:func:`check_parameter_bounds`), every agent simulates at its declared
bounds (:func:`check_bound_edges`) and the studies' prior samplers stay inside them
(:func:`check_prior_bounds`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.edge_checks import bound_edge_problems
from cogtestbed.conformance.harness import agent_names, fail, model_names, prior_draws, small_design
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.parameters import Parameter, ParameterError, ParameterSet


def _bad_values(p: Parameter) -> list[float]:
    out = [float("nan")]
    if np.isfinite(p.upper):
        out.append(p.upper + max(1.0, abs(p.upper)))
    if np.isfinite(p.lower):
        out.append(p.lower - max(1.0, abs(p.lower)))
    return out


def _bounds_problems(owner: str, parameters: ParameterSet, make: Callable[[dict[str, float]], Any]) -> list[str]:
    problems = []
    for p in parameters:
        for bad in _bad_values(p):
            for how, call in (("scalar", lambda v, name=p.name: make({name: v})),
                              ("array", lambda v, name=p.name, d=p.default: parameters.validate_array(
                                  {name: np.array([d, v])}))):
                try:
                    call(bad)
                except ParameterError as exc:
                    msg = str(exc)
                    if p.name not in msg or "\n" in msg:
                        problems.append(f"{owner}: {p.name}={bad} ({how}) raised an unclear error: {msg!r}")
                except Exception as exc:  # noqa: BLE001 - the wrong error type is the finding
                    problems.append(f"{owner}: {p.name}={bad} ({how}) raised {type(exc).__name__}, not ParameterError")
                else:
                    problems.append(f"{owner}: {p.name}={bad} ({how}) was accepted (bounds [{p.lower}, {p.upper}])")
    try:
        make({"no_such_parameter": 1.0})
    except ParameterError as exc:
        if parameters.names and parameters.names[0] not in str(exc):
            problems.append(f"{owner}: the unknown-parameter error does not list the valid names: {exc}")
    else:
        problems.append(f"{owner}: an unknown parameter name was accepted")
    return problems


def check_parameter_bounds(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Out-of-bounds, NaN and unknown parameters are refused with one clear ParameterError naming them."""
    problems = []
    for name in agent_names(spec):
        agent_cls = spec.agent(name)
        problems += _bounds_problems(f"agent {name!r}", agent_cls.parameters, agent_cls)
    for name, model in sorted(spec.models.items()):
        problems += _bounds_problems(f"model {name!r}", model.parameters, model.parameters.validate)
    fail(problems, f"{spec.name}: parameter bounds are not enforced")


def check_bound_edges(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every agent simulates at each declared bound of each parameter and at the nearest double
    inside it (two seeds), or refuses the value in one line: no traceback, a schema-valid table
    (``simulate`` validates it)."""
    design = small_design(spec, config)
    problems = [p for agent in agent_names(spec) for p in bound_edge_problems(spec, agent, design)]
    fail(problems, f"{spec.name}: agents fail at declared parameter bounds")


#: Draws per parameter of the prior-bounds check (the hierarchical prior, a population draw each).
PRIOR_BOUND_DRAWS = 2000


def check_prior_bounds(spec: ExperimentSpec, config: CheckConfig) -> None:
    """For every model and EVERY one of its parameters, the studies' prior samplers stay inside the
    bounds: :data:`PRIOR_BOUND_DRAWS` draws of the hierarchical prior (``recover``, SBC, power),
    the uniform sampler's range and the conformance suite's own prior draws (a log-transformed
    parameter with a finite upper bound maps the real line past it)."""
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.studies.study_data import uniform_range

    rng = np.random.default_rng(config.seed)
    problems = []
    for name in model_names(spec):
        parameters = spec.model(name).parameters
        draws: dict[str, list[np.ndarray]] = {p.name: [] for p in parameters}
        for _ in range(PRIOR_BOUND_DRAWS // 100):
            pop, subj = sample_hierarchical_prior(parameters, 100, rng)
            for p in parameters:
                draws[p.name] += [subj[p.name], np.array([pop[f"{p.name}_pop"]])]
        own = prior_draws(parameters, PRIOR_BOUND_DRAWS, rng)
        for p in parameters:
            x = np.concatenate([*draws[p.name], own[p.name], np.array(uniform_range(p))])
            outside = x[~((x >= p.lower) & (x <= p.upper))]
            if outside.size:
                problems.append(f"model {name!r}: {p.name}: {outside.size} prior draws outside [{p.lower}, {p.upper}] "
                                f"(e.g. {float(outside[0]):.6g})")
    fail(problems, f"{spec.name}: prior draws leave the parameter bounds")
