"""What every study task shares: the design at a number of trials, simulated subjects and their
true parameters, the fitted model, the tasks' seeds and the statistics of rates and differences.

Used by the study driver (:mod:`cogtestbed.studies.driver`), its tasks
(:mod:`~cogtestbed.studies.model_studies`, :mod:`~cogtestbed.studies.metric_studies`) and
the summaries (:mod:`~cogtestbed.studies.summaries`); it imports none of them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.inference.base import CognitiveModel, with_lapse
from cogtestbed.inference.hierarchical import SD_SCALE, sample_hierarchical_prior
from cogtestbed.lapse import Lapse
from cogtestbed.parameters import CENTRAL_Z, Parameter
from cogtestbed.simulation import as_sessions, chosen_path, chunk_subjects, simulate, simulate_chunks
from cogtestbed.studies.study_kinds import ModelStudy, SampledStudy

#: Central mass of the prior whose natural-scale range the uniform sampler uses by default.
UNIFORM_PRIOR_Z = CENTRAL_Z
#: Posterior draws kept for SBC ranks: ranks of autocorrelated draws are not uniform, so draws
#: are thinned to about this many (Talts et al. 2018, §5.1).
SBC_RANKS = 100

def design_for_trials(exp: ExperimentSpec, trials: int | None, extra: Mapping[str, Any]) -> Any:
    """The experiment's design with ``extra`` fields and ``trials`` trials in one run (its ``n_trials``).

    ``trials`` is set through the spec's declared ``trials_field``: the design's trial count is
    proportional to that field, so the field becomes ``trials / n_trials(field = 1)``.
    """
    from pydantic import ValidationError

    cls = exp.design_cls
    try:
        base = cls(**extra)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(map(str, first["loc"]))
        where = f"{loc}: " if loc else ""  # a model-level check has no field
        message = str(first["msg"]).removeprefix("Value error, ")
        raise InputError(f"design of {exp.name}: {where}{message}") from None
    if trials is None or trials == base.n_trials:
        return base
    if trials < 1:
        raise InputError(f"trials per run must be at least 1, got {trials}")
    field_ = exp.trials_field
    if field_ is None:
        raise InputError(f"experiment {exp.name} has a fixed number of trials per run (no trials field)")
    per = trials_step(base, field_)
    if per < 1 or trials % per:
        raise InputError(f"cannot make one run of {exp.name}'s design {trials} trials long: {field_} scales a run "
                         f"in steps of {per} trials (`trials` counts the whole run; set the field itself with "
                         f"`design` {field_}=N)")
    return cls(**{**extra, field_: trials // per})


def trials_step(design: Any, field_: str) -> int:
    """Trials per unit of the trials field (the count is proportional to it; read off the design
    itself, since the field may have a lower bound above 1)."""
    value = int(getattr(design, field_))
    return design.n_trials // value if value > 0 and design.n_trials % value == 0 else 0


def simulate_runs(exp: ExperimentSpec, agent: str, n: int, seed: int, params: Mapping[str, Any],
                  design: Any, runs: int = 1, lapse: Lapse | None = None) -> pd.DataFrame:
    """``n`` subjects, each playing ``runs`` sessions of ``design`` with its own agent parameters.

    The one pooling mechanism: sessions are simulated as ``n·runs`` independent runs
    (subject-major) and relabelled ``subject = k // runs``, ``session = k % runs``, so a model
    fits each subject's runs together.
    """
    if runs == 1:
        return simulate(exp, agent, n, seed, dict(params), design=design, lapse=lapse)
    rep = {k: np.repeat(np.asarray(v, dtype=np.float64), runs) if np.ndim(v) else v
           for k, v in params.items()}
    return as_sessions(simulate(exp, agent, n * runs, seed, rep, design=design, lapse=lapse), runs)


def simulate_runs_chunked(exp: ExperimentSpec, agent: str, n: int, seed: int, params: Mapping[str, Any],
                          design: Any, runs: int = 1, lapse: Lapse | None = None,
                          chunk: int | None = None) -> Iterator[pd.DataFrame]:
    """:func:`simulate_runs`'s table, ``chunk`` subjects at a time (default: :func:`study_chunk`), in subject
    order: the chunks concatenated are :func:`simulate_runs`'s table row for row (every draw read from its
    stream's place, :func:`~cogtestbed.simulation.simulate_chunks`), while memory holds one chunk."""
    chunk = study_chunk(exp, agent, params, design, runs) if chunk is None else chunk
    rep = {k: np.repeat(np.asarray(v, dtype=np.float64), runs) if np.ndim(v) else v for k, v in params.items()}
    agent_cls = exp.agent(agent)
    with chosen_path("batch", exp, agent_cls, design, rep, n * runs, lapse) as path:
        for part in simulate_chunks(exp, agent, n * runs, seed, rep, design=design, method=path, lapse=lapse,
                                    chunk=chunk * runs):
            yield part if runs == 1 else as_sessions(part, runs)


def study_chunk(exp: ExperimentSpec, agent: str, params: Mapping[str, Any], design: Any, runs: int = 1) -> int:
    """Subjects of ``runs`` sessions each that a streamed study task simulates and fits at a time: about
    :data:`~cogtestbed.simulation.CHUNK_BYTES` of trial table, at least one."""
    fixed = {k: v for k, v in params.items() if not np.ndim(v)}
    return max(1, chunk_subjects(exp, agent, fixed, design) // max(1, runs))


def uniform_range(p: Parameter) -> tuple[float, float]:
    """The bounds of the uniform sampler of ``p``: its prior mean ± :data:`UNIFORM_PRIOR_Z` prior SDs
    on the unconstrained scale, mapped to the natural scale and kept inside the bounds."""
    return p.central_range(UNIFORM_PRIOR_Z)


def draw_true_parameters(spec: SampledStudy, model: CognitiveModel, n: int,
                         rng: np.random.Generator) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(population values, per-subject natural values) for one simulated data set (a population's:
    one posterior draw of its group parameters, :meth:`~cogtestbed.inference.population.Population.sample`)."""
    if spec.from_population is not None:
        pop, subj = spec.from_population.sample(model.parameters, n, rng)
    elif spec.sampler == "prior":
        pop, subj = sample_hierarchical_prior(model.parameters, n, rng, SD_SCALE)
    else:
        pop, subj = {}, {}
        for p in model.parameters:
            lo, hi = spec.ranges.get(p.name, uniform_range(p))
            subj[p.name] = rng.uniform(lo, hi, n)
    for name, value in spec.fixed.items():
        subj[name] = np.full(n, float(value))
        pop.pop(f"{name}_mu", None)
        pop.pop(f"{name}_sigma", None)
    return pop, subj


def fitted_model(spec: ModelStudy, model: CognitiveModel) -> CognitiveModel:
    """The model a study fits: ``model`` with the spec's lapse term, if any."""
    return with_lapse(model, spec.lapse_fit)


def simulate_model(spec: ModelStudy, exp: ExperimentSpec, model: str, true: Mapping[str, Any], n: int,
                   seed: int, design: Any, runs: int, extra: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Data from ``model`` at ``true`` parameters, through its generator's agent."""
    gen = exp.generator(model)
    params = {**gen.agent_params(true), **spec.params, **dict(extra or {})}
    return simulate_runs(exp, gen.agent, n, seed, params, design, runs, spec.lapse)

#: A study task: (spec, experiment, task, design, rng, sim_seq, fit_seed) -> its rows.
TaskFn = Callable[..., pd.DataFrame]

def seed_of(seq: np.random.SeedSequence) -> int:
    """An integer seed for :func:`~cogtestbed.simulation.simulate` from a spawned sequence."""
    return int(seq.generate_state(1)[0])

def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Welch t-test p-value on the finite values of two groups.

    Returns NaN when a group has fewer than 2 finite values (no test); when neither group has
    spread, 0 if their values differ and 1 if they are equal.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return float("nan")
    if a.std() == 0 and b.std() == 0:
        return 0.0 if a[0] != b[0] else 1.0
    with warnings.catch_warnings():  # near-identical values: scipy warns about precision
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def rank_test(b: np.ndarray, a: np.ndarray) -> tuple[float, float, float]:
    """Two groups' finite values compared by ranks: (the Hodges–Lehmann shift of ``b`` over ``a``, the
    median of every difference b_i − a_j; the relative effect P(B > A) + ½·P(B = A) − ½; the two-sided
    p-value of the Brunner–Munzel test, Brunner & Munzel 2000).  Brunner–Munzel is the rank analogue
    of Welch's test: it tests P(B > A) = ½ without assuming equal spreads or shapes, and a rank is
    the same on every monotone scale, so an estimate at a bound counts as the lowest (or highest)
    value, however far the optimiser ran.  Where the groups separate completely its variance
    estimate is 0 (no statistic): the p-value is then the Mann–Whitney U test's.  NaNs where a group
    has fewer than 2 finite values."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return float("nan"), float("nan"), float("nan")
    shift = float(np.median(b[:, None] - a[None, :]))
    relative = float((b[:, None] > a[None, :]).mean() + 0.5 * (b[:, None] == a[None, :]).mean() - 0.5)
    with warnings.catch_warnings():  # complete separation: 0/0 in its statistic, handled below
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.brunnermunzel(b, a).pvalue)
    if not math.isfinite(p):
        p = 1.0 if relative == 0.0 and np.ptp(np.r_[a, b]) == 0 else float(stats.mannwhitneyu(b, a).pvalue)
    return shift, relative, p


def rate(hits: Iterable[bool]) -> dict[str, float]:
    """Share of ``hits`` with its Monte-Carlo SE √(p(1−p)/n)."""
    x = np.asarray(list(hits), dtype=float)
    p = float(x.mean()) if x.size else float("nan")
    return {"rate": p, "mc_se": float(math.sqrt(p * (1 - p) / x.size)) if x.size else float("nan"),
            "sims": int(x.size)}
