"""Conformance checks of an experiment's environment and simulation paths (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): the tables module beside the environment
(:func:`check_tables_module`), the declared phases (:func:`check_phases`), gymnasium's env checker
(:func:`check_gymnasium_env`), seeded determinism (:func:`check_seeded_determinism`), the batch
path against the step path (:func:`check_batch_equals_step`) and lapses (:func:`check_lapses`).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import (
    CHECK_LAPSE,
    agent_names,
    fail,
    first_difference,
    prior_draws,
    small_design,
    table_bytes,
)
from cogtestbed.environments.base import Phase, TextEnv
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.lapse import Lapse
from cogtestbed.schema import TrialSchema
from cogtestbed.study_errors import ConformanceError

#: gymnasium env-checker warnings that are advice, not contract breaches: scalar (shape ())
#: Box values given as numpy scalars rather than 0-d arrays, and unbounded Box spaces (a reward
#: or a Kalman mean has no natural bound).
GYM_ADVISORY_WARNINGS: tuple[str, ...] = ("Casting input x to numpy array", "This is probably too low",
                                          "This is probably too high")
#: Lapse rates of the lapse checks (invalid, random): high enough that every small session lapses.
LAPSE = Lapse(0.3, 0.2)


def check_gymnasium_env(spec: ExperimentSpec, config: CheckConfig) -> None:
    """gymnasium's ``check_env`` passes on the default design (render check skipped)."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(spec.env_cls(), skip_render_check=True)
        except AssertionError as exc:
            raise ConformanceError(f"gymnasium.utils.env_checker.check_env: {exc}") from exc
    # gymnasium reports many contract breaches as warnings: each one fails, bar the advisory ones
    problems = sorted({_plain_warning(w.message) for w in caught
                       if issubclass(w.category, UserWarning)
                       and not any(a in str(w.message) for a in GYM_ADVISORY_WARNINGS)})
    fail(problems, f"{spec.name}: gymnasium's env checker warns")


def _plain_warning(message: Warning | str) -> str:
    """A warning's text without gymnasium's terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", str(message))


def check_seeded_determinism(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Same seed ⇒ byte-identical trial tables (batch and step paths); another seed changes them."""
    from cogtestbed.simulation import simulate

    design = small_design(spec, config)
    n, seed = config.n_subjects, config.seed
    problems: list[str] = []
    changed = False
    for agent in agent_names(spec):
        first = simulate(spec, agent, n, seed, design=design)
        again = simulate(spec, agent, n, seed, design=design)
        if table_bytes(first) != table_bytes(again):
            problems.append(f"agent {agent!r}, batch path, seed {seed}: two runs differ "
                            f"({first_difference(first, again)})")
        other = simulate(spec, agent, n, seed + 1, design=design)
        changed = changed or table_bytes(other) != table_bytes(first)
    agent = agent_names(spec)[0]
    step_a = simulate(spec, agent, n, seed, design=design, method="step")
    step_b = simulate(spec, agent, n, seed, design=design, method="step")
    if table_bytes(step_a) != table_bytes(step_b):
        problems.append(f"agent {agent!r}, step path: two runs differ ({first_difference(step_a, step_b)})")
    if not changed:
        problems.append(f"seeds {seed} and {seed + 1} give identical tables for every agent: the seed is ignored")
    fail(problems, f"{spec.name}: simulation is not a function of the seed")

def check_batch_equals_step(spec: ExperimentSpec, config: CheckConfig) -> None:
    """For every agent, the batch kernel and the gymnasium step path give identical, schema-valid
    tables (per-subject, non-default parameters), without and with lapses (:data:`CHECK_LAPSE`)."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.simulation import simulate

    design = small_design(spec, config)
    rng = np.random.default_rng(config.seed)
    problems = []
    for agent in agent_names(spec):
        params = prior_draws(spec.agent(agent).parameters, config.n_subjects, rng)
        batch = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design)
        step = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design, method="step")
        if not batch.equals(step) or table_bytes(batch) != table_bytes(step):
            problems.append(f"agent {agent!r}: {first_difference(batch, step)}")
        lapse = Lapse(*CHECK_LAPSE)
        lapsed = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design, lapse=lapse)
        lapsed_step = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design,
                               lapse=lapse, method="step")
        if table_bytes(lapsed) != table_bytes(lapsed_step):  # (equals() fails on NaN inside array cells)
            problems.append(f"agent {agent!r} with lapses {lapse}: {first_difference(lapsed, lapsed_step)}")
        problems += _table_problems(spec, agent, batch, params, config.n_subjects)
    fail(problems, f"{spec.name}: batch and step paths differ")


def _table_problems(spec: ExperimentSpec, agent: str, batch: Any, params: dict[str, np.ndarray],
                    n_subjects: int) -> list[str]:
    """What a simulated table gets wrong: its schema, its experiment and subjects, its generating parameters."""
    from cogtestbed.registry import validate_table
    from cogtestbed.schema import TrialTableError

    problems = []
    try:
        validate_table(batch)
    except TrialTableError as exc:
        problems.append(f"agent {agent!r}: {exc}")
    if not batch["experiment"].astype(str).eq(spec.name).all() or batch["subject"].nunique() != n_subjects:
        problems.append(f"agent {agent!r}: the table is not {n_subjects} subjects of {spec.name!r}")
    for name, values in params.items():
        column = batch.get(f"param_{name}")
        if column is None or not np.allclose(column.groupby(batch["subject"]).first().to_numpy(), values):
            problems.append(f"agent {agent!r}: column param_{name} does not hold the generating values")
    return problems


def tables_module_name(env_module: str) -> str:
    """The tables module of an environment module: its ``environments`` package segment replaced by
    ``tables`` (``cogtestbed.environments.coin`` → ``cogtestbed.tables.coin``, and the same in
    another package: ``mypkg.environments.coin`` → ``mypkg.tables.coin``); an environment outside an
    ``environments`` package has its tables module beside it (``mypkg.coin`` → ``mypkg.tables``...
    named ``<package>.tables.<module>``)."""
    parts = env_module.split(".")
    if "environments" in parts[:-1]:
        i = len(parts) - 1 - parts[::-1].index("environments")
        return ".".join([*parts[:i], "tables", *parts[i + 1:]])
    return ".".join([*parts[:-1], "tables", parts[-1]])


def check_tables_module(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The schema is declared once, in the tables module of the environment's family
    (``cogtestbed/tables/<family>.py`` for ``cogtestbed/environments/<family>.py``; an experiment
    of another package keeps the same layout in its own package, :func:`tables_module_name`):
    ``SCHEMA`` is the spec's ``table_schema`` and its environment's, and ``EXPERIMENT``, where the
    module declares one (the name is declared once, in the spec: :meth:`ExperimentSpec.claim_pieces`),
    is the spec's name."""
    problems = []
    if not isinstance(spec.table_schema, TrialSchema):
        problems.append("table_schema is not declared (a TrialSchema from the tables module)")
    elif spec.schema is not spec.env_cls.table_schema:
        problems.append("the spec's table_schema is not its environment's table_schema")
    module = tables_module_name(spec.env_cls.__module__)
    try:
        tables = importlib.import_module(module)
    except ImportError:
        problems.append(f"no tables module {module} (beside the environment {spec.env_cls.__module__})")
    else:
        if getattr(tables, "SCHEMA", None) is not spec.schema:
            problems.append(f"{module}.SCHEMA is not the spec's schema")
        names = {getattr(tables, "EXPERIMENT", spec.name), spec.name, spec.env_cls.experiment}
        if len(names) != 1:
            problems.append(f"EXPERIMENT, the spec's name and the environment's differ: {sorted(map(str, names))}")
    fail(problems, f"{spec.name}: tables module")


def check_phases(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The environment declares its phases, observes the current one and does not override
    :meth:`TextEnv.step`."""
    env = spec.env_cls()
    problems = []
    if not env.phases or not all(isinstance(p, Phase) for p in env.phases):
        problems.append("no phases declared (a tuple of Phase)")
    else:
        obs, _ = env.reset(seed=3)
        if obs.get("phase") != 0 or obs.get("response") != env.phases[0].response:
            problems.append("the first observation does not name phase 0 and its response")
        if not env.observation_space.contains(obs):
            problems.append("the first observation is outside the observation space")
    if type(env).step is not TextEnv.step:
        problems.append("the environment overrides TextEnv.step")
    fail(problems, f"{spec.name}: phases")


def check_lapses(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every family supports lapses (:mod:`cogtestbed.lapse`): a zero lapse leaves the
    table byte for byte as without one; with lapses some answers are invalid, and the batch path
    plays them itself (never falling back on the step path) with the step path's table, byte for byte."""
    import cogtestbed.simulation as simulation

    design = small_design(spec, config)
    agent = list(spec.agents)[-1]
    args: dict[str, Any] = {"design": design}
    plain = simulation.simulate(spec, agent, 3, 5, **args)
    problems = []
    if table_bytes(simulation.simulate(spec, agent, 3, 5, lapse=Lapse(0.0, 0.0), **args)) != table_bytes(plain):
        problems.append("a zero lapse changes the table")
    step = simulation.simulate(spec, agent, 4, 9, lapse=LAPSE, method="step", **args)
    original = simulation.run_stepwise

    def refuse(*_: object, **__: object) -> Any:
        raise ConformanceError(f"{spec.name}: the batch path of agent {agent!r} plays lapses through the step path")

    simulation.run_stepwise = refuse
    try:
        batch = simulation.simulate(spec, agent, 4, 9, lapse=LAPSE, **args)
    finally:
        simulation.run_stepwise = original
    if table_bytes(batch) != table_bytes(step):
        problems.append(f"agent {agent!r}: the batch and step paths differ with lapses")
    if batch["valid"].all():
        problems.append(f"agent {agent!r}: no invalid answer at an invalid-answer rate of {LAPSE.invalid}")
    fail(problems, f"{spec.name}: lapses")
