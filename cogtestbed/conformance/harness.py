"""What the conformance checks share: small designs, prior draws, byte comparisons of tables,
playing one episode, simulating data from a model, and :func:`fail`, the one way a check reports.

The checks themselves live by what they test (:mod:`.env_checks`, :mod:`.prompt_checks`,
:mod:`.llm_checks`, :mod:`.parameter_checks`, :mod:`.likelihood_checks`, :mod:`.pymc_checks`,
:mod:`.study_checks`, :mod:`.data_checks`, :mod:`.edge_checks`, :mod:`.table_checks`);
:mod:`.suite` registers and runs them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.conformance.config import QUICK_MAX_STEPS, CheckConfig
from cogtestbed.environments.base import Design, TextEnv
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.parameters import Parameter, ParameterSet
from cogtestbed.study_errors import ConformanceError, NotApplicable
from cogtestbed.trials import table_to_parquet

#: Lapse rates (invalid, random) of the simulated data on which the likelihood checks score every
#: model's lapse variant (:func:`cogtestbed.inference.base.with_lapse`, ε fitted, so ε > 0 at
#: every test point), and of the batch == step check's lapsed run.
CHECK_LAPSE = (0.1, 0.2)


def fail(problems: Sequence[str], what: str) -> None:
    """Raise one :class:`ConformanceError` listing ``problems`` (no-op when empty)."""
    if problems:
        shown = list(problems[:20])
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise ConformanceError(f"{what}:\n  " + "\n  ".join(shown) + more)


def small_design(spec: ExperimentSpec, config: CheckConfig) -> Design:
    """The default design, with ``trials_field`` divided by ``config.design_divisor`` and, in
    quick mode, lowered further until a session has at most :data:`QUICK_MAX_STEPS` steps (≥ 1)."""
    design = spec.design_cls()
    if spec.trials_field is None or config.design_divisor == 1:
        return design
    value = max(1, int(getattr(design, spec.trials_field)) // config.design_divisor)
    small = _with_field(spec, design, value)
    steps = spec.env_cls.max_steps(small)
    if steps > QUICK_MAX_STEPS:
        small = _with_field(spec, design, max(1, value * QUICK_MAX_STEPS // steps))
    return small


def _with_field(spec: ExperimentSpec, design: Design, value: int) -> Design:
    assert spec.trials_field is not None
    return spec.design_cls(**{**design.model_dump(), spec.trials_field: value})


def design_with_trials(spec: ExperimentSpec, trials: int) -> Design:
    """The default design with ``trials`` trials per subject where ``trials_field`` scales the
    count proportionally, else with ``trials_field = trials`` (a declared count per block)."""
    design = spec.design_cls()
    if spec.trials_field is None or trials == design.n_trials:
        return design
    one, two = _with_field(spec, design, 1).n_trials, _with_field(spec, design, 2).n_trials
    per = two - one
    if per > 0 and one == per and trials % per == 0:
        return _with_field(spec, design, trials // per)
    return _with_field(spec, design, trials)


def prior_draws(parameters: ParameterSet, n: int, rng: np.random.Generator,
                spread: float = 1.0) -> dict[str, np.ndarray]:
    """``n`` values per parameter: normal on the unconstrained scale (the prior, SD × ``spread``)
    mapped back into the bounds and kept strictly inside them."""
    out = {}
    for p in parameters:
        z = rng.normal(p.prior_mean, p.prior_sd * spread, n)
        x = np.asarray(p.to_constrained(z), dtype=np.float64)
        out[p.name] = interior(p, x)
    return out


def interior(p: Parameter, x: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    """``x`` clipped to ``margin`` of ``p``'s range inside its finite bounds (``margin`` itself above
    a finite lower bound of an unbounded range)."""
    lo = p.lower + margin * (p.upper - p.lower) if np.isfinite(p.upper - p.lower) else p.lower + margin
    hi = p.upper - margin * (p.upper - p.lower) if np.isfinite(p.upper - p.lower) else p.upper
    return np.clip(x, lo if np.isfinite(lo) else -np.inf, hi if np.isfinite(hi) else np.inf)


def table_bytes(trials: pd.DataFrame) -> bytes:
    """The Parquet bytes of a table as :func:`~cogtestbed.trials.write_trials` writes them (what
    "byte-identical" compares)."""
    buf = io.BytesIO()
    table_to_parquet(trials, buf)
    return buf.getvalue()


def first_difference(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """A one-line description of where two tables first differ."""
    if list(a.columns) != list(b.columns):
        return f"columns differ: {list(a.columns)} vs {list(b.columns)}"
    if len(a) != len(b):
        return f"row counts differ: {len(a)} vs {len(b)}"
    for col in a.columns:
        x, y = a[col].reset_index(drop=True), b[col].reset_index(drop=True)
        if x.dtype != y.dtype:
            return f"column {col!r} dtype differs: {x.dtype} vs {y.dtype}"
        same = (x == y) | (x.isna() & y.isna())
        bad = ~same.fillna(False).to_numpy(dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = ", ".join(f"{k}={a[k].iloc[i]}" for k in ("subject", "session", "trial") if k in a.columns)
            return f"column {col!r} differs at row {i} ({where}): {x.iloc[i]!r} vs {y.iloc[i]!r}"
    return "tables differ only in metadata (index or categories)"


def agent_names(spec: ExperimentSpec) -> list[str]:
    """The experiment's registered agents, sorted (the order the checks play them in)."""
    return sorted(spec.agents)


def step_space(env: TextEnv[Any, Any]) -> spaces.Space[Any]:
    """The action space of the current step (its phase's, where the environment declares phases)."""
    phase = getattr(env, "phase", None) if getattr(env, "phases", ()) else None
    return phase.action_space if phase is not None else env.action_space


def step_prefix(env: TextEnv[Any, Any]) -> str:
    """The answer prefix every prompt of ``env`` must end with: the class's ``answer_prefix``
    where a trial is one declared phase (trials of several phases, such as the two stages of the
    two-step task, continue from a prefix per phase)."""
    return type(env).answer_prefix if len(getattr(env, "phases", ())) == 1 else ""


def is_scored(obs: Mapping[str, Any]) -> bool:
    """Whether the observation asks for a scored answer (log-probabilities of continuations)."""
    return getattr(obs.get("response"), "kind", "text") == "scored"


def play_episode(spec: ExperimentSpec, design: Design, agent: str, seed: int,
                 on_step: Callable[[TextEnv[Any, Any], dict[str, Any], int], None] | None = None,
                 max_steps: int | None = None, form: int = 0) -> int:
    """Play one session with ``agent`` through ``reset``/``step`` in prompt form ``form``; call
    ``on_step(env, obs, t)`` before each answer.  Stops after ``max_steps`` steps if given; returns
    the number of steps played (raises if the episode does not end within the environment's ``max_steps``)."""
    from cogtestbed.simulation import seed_streams

    env = spec.env_cls(design)
    env_rng, agent_rng = seed_streams(seed)
    session = spec.env_cls.sample_sessions(design, 1, env_rng)
    subject = spec.agent(agent)()
    subject.reset(agent_rng)
    obs, _ = env.reset(options={"session": session, "form": form})
    limit = spec.env_cls.max_steps(design)
    for t in range(limit + 1):
        if max_steps is not None and t >= max_steps:
            return t
        if on_step is not None:
            on_step(env, obs, t)
        action = subject.act(obs)
        next_obs, _, done, truncated, _ = env.step(action)
        subject.update(obs, action, float(env.outcomes.reward[0, env.t - 1]), next_obs)
        obs = next_obs
        if done or truncated:
            return t + 1
    raise ConformanceError(f"agent {agent!r}: the episode did not end within max_steps = {limit} steps")


def model_names(spec: ExperimentSpec) -> list[str]:
    """The experiment's cognitive models, sorted; :class:`NotApplicable` where it declares none."""
    if not spec.models:
        raise NotApplicable(f"{spec.name} declares no cognitive models")
    return sorted(spec.models)


def simulate_from_model(spec: ExperimentSpec, model: str, params: Mapping[str, np.ndarray], seed: int,
                        design: Design, runs: int = 1, lapse: Any = None) -> pd.DataFrame:
    """Simulate data *from a model* through its declared generator (agent + parameter map).

    ``params`` maps the model's parameters to per-subject arrays; with ``runs > 1`` each subject
    plays ``runs`` sessions (simulated as independent runs, relabelled ``subject = k // runs``,
    ``session = k % runs``), the pooling of experiments whose unit is the session.  ``lapse``: a
    :class:`~cogtestbed.lapse.Lapse` of the simulated subjects.
    """
    from cogtestbed.simulation import simulate

    gen = spec.generator(model)
    n = len(next(iter(params.values())))
    agent_params = gen.agent_params({k: np.repeat(np.asarray(v, dtype=np.float64), runs) for k, v in params.items()})
    full = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (n * runs,)).copy() for k, v in agent_params.items()}
    table = simulate(spec, gen.agent, n * runs, seed, params=full, design=design, lapse=lapse)
    if runs == 1:
        return table
    run = table["subject"].to_numpy(dtype=np.int64)
    return table.assign(subject=run // runs, session=run % runs)


def model_data(spec: ExperimentSpec, model: str, config: CheckConfig, lapse: bool = False) -> tuple[Any, Any]:
    """(model, one subject's data) simulated at the model's defaults on the small design; with
    ``lapse``, the model's lapse variant (ε fitted) on data simulated with :data:`CHECK_LAPSE`."""
    from cogtestbed.inference.base import with_lapse
    from cogtestbed.lapse import Lapse

    m = spec.model(model)
    defaults = {p.name: np.array([p.default]) for p in m.parameters}
    table = simulate_from_model(spec, model, defaults, config.seed, small_design(spec, config),
                                lapse=Lapse(*CHECK_LAPSE) if lapse else None)
    if lapse:
        m = with_lapse(m, "fit")
    data = m.subject_data(table)
    return m, next(iter(data.values()))
