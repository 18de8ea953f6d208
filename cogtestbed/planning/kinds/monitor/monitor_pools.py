"""The monitor's simulated pools: per hypothesis (the effect, the null) a pool of simulated units'
statistic — one subject's MLE of the effect less its null value, a pair's difference, a pair of runs' metric
difference — and the simulated studies resampled from it.

Two roles, each with its own seed streams (:func:`pool_seeds`): the **choosing** pools fix everything the plan
decides before any data (the fixed size where the plan has none, the monitor's Kelly bet, null half-width and
symmetry scale, its futility cap, the group-sequential design's maximum size and calibrated bounds); the
**measuring** pools, simulated afresh, give every printed operating characteristic (power, type-I error,
expected sizes).  A figure measured on the pools that chose the rule would be optimistic by the selection
(a half-width set from the same null pool's mean, a cap set where that pool's power first reached the target).

Each simulated study is a random ordering of one of :data:`BATCHES` disjoint sub-pools (:func:`studies`): a
random permutation of i.i.d. draws is i.i.d., so each study is exactly a study of i.i.d. units while the fits
are reused across studies.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: Disjoint sub-pools per hypothesis (the MC SE's between-pool spread).
BATCHES = 10
#: Each measuring sub-pool holds this many times the longest study's units.
POOL_FACTOR = 2
#: The choosing pools' size as a multiple of the measuring pools': the cap and the futility boundary are set
#: where the choosing studies' power first clears the target, so that pool's own chance (its mean's error)
#: moves the fresh power; at half the measuring pools' size it moved it by several hundredths.
CHOOSE_SHARE = 2.0
#: The roles of the pools, in the order their seed streams are numbered (a pilot sizes the others, choosing too).
ROLES = ("choose", "measure", "pilot")


@dataclass(frozen=True)
class Pools:
    """One role's pools: the statistic of ``effect.size`` units under the effect and ``null.size`` under the
    null (NaN: a unit without a value), and the integer seeds each was simulated from (a two-group pool also
    uses ``seed + 1`` for its first group)."""

    role: str
    effect: np.ndarray
    null: np.ndarray
    seeds: tuple[int, int]
    #: Per hypothesis the units' values per group (columns: the first group, and the second for two LLMs),
    #: whose difference is the statistic: the fixed comparator tests them (None: not kept).
    effect_parts: np.ndarray | None = None
    null_parts: np.ndarray | None = None

    def seed_set(self) -> set[int]:
        """Every integer seed these pools' simulations drew from."""
        return {s + k for s in self.seeds for k in (0, 1)}


#: The monitor's key in the evaluation protocol's seed streams.
PROTOCOL_KEY = 74


def monitor_streams(seed: int) -> Any:
    """The monitor's :class:`~cogtestbed.planning.protocol.SeedStreams`: choosing (and pilot) and
    reporting streams of the seed sequence ``[seed, 74, index]``."""
    from cogtestbed.planning.protocol import SeedStreams

    return SeedStreams(int(seed), PROTOCOL_KEY)


def pool_seeds(seed: int, role: str, streams: Any = None) -> tuple[int, int]:
    """The (effect, null) seeds of a role's pools (:data:`ROLES`): two 31-bit integers of the evaluation
    protocol's choosing stream (``choose``; ``pilot``: its pilot stream) or reporting stream (``measure``)
    (:func:`monitor_streams`, or ``streams`` where given: the seeds are recorded there)."""
    if role not in ROLES:
        raise InputError(f"role must be one of {ROLES}, not {role!r}")
    st = streams if streams is not None else monitor_streams(seed)
    pair = st.reporting(2) if role == "measure" else st.choosing(2, pilot=role == "pilot")
    return int(pair[0]), int(pair[1])


def draw_pools(spec: Any, trials: int | None, runs: int, n: int, seed: int, role: str, null: bool = True,
               streams: Any = None) -> Pools:
    """``n`` units per hypothesis for ``role`` (:data:`ROLES`): a metric difference between two settings
    (:func:`metric_parts`) or a model effect (:func:`hypothesis_parts`), from :func:`pool_seeds`; without
    ``null`` the null pool is left empty (a pilot)."""
    s_eff, s_nul = pool_seeds(seed, role, streams)
    draw = ((lambda s, e: metric_parts(spec, trials, n, s, e)) if getattr(spec, "metric", None) is not None
            else (lambda s, e: hypothesis_parts(spec, trials, runs, n, s, e)))
    eff = draw(s_eff, True)
    nul = draw(s_nul, False) if null else np.empty((0, eff.shape[1]))
    return Pools(role, _statistic(eff), _statistic(nul), (s_eff, s_nul), eff, nul)


def _statistic(parts: np.ndarray) -> np.ndarray:
    """The monitored statistic from the groups' values: the one group's, or the second less the first."""
    return parts[:, 0] if parts.shape[1] == 1 else parts[:, 1] - parts[:, 0]


def choose_size(measure_n: int) -> int:
    """Units per hypothesis of the choosing pools beside measuring pools of ``measure_n`` (at least one
    longest study per sub-pool)."""
    return max(BATCHES, math.ceil(CHOOSE_SHARE * measure_n))


def subject_pool(spec: Any, trials: int | None, runs: int, n: int, seed: int) -> np.ndarray:
    """``n`` simulated subjects' statistic at the design (``trials`` per run, ``runs``): the per-subject MLE
    of ``spec.effect`` on the test's scale less :func:`one_sample_null` (NaN: no valid trial).  ``spec`` is a
    one-group :class:`~cogtestbed.studies.study_kinds.PowerStudy`."""
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null, power_parameters
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, trials, spec.design)
    param_seq, sim_seq = np.random.SeedSequence(seed).spawn(2)
    true = power_parameters(spec, model, n, np.random.default_rng(param_seq))
    table = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return subject_contrasts(spec, model, table, n, one_sample_null(spec.model_copy(update={"effect_size": 0.0}),
                                                                       model))



def hypothesis_pool(spec: Any, trials: int | None, runs: int, n: int, seed: int, effect: bool) -> np.ndarray:
    """``n`` observations of the monitored statistic under the effect (``effect``) or the null: one
    subject each (one group), or a pair's difference, second group less first (two groups)."""
    return _statistic(hypothesis_parts(spec, trials, runs, n, seed, effect))


def hypothesis_parts(spec: Any, trials: int | None, runs: int, n: int, seed: int, effect: bool) -> np.ndarray:
    """:func:`hypothesis_pool`'s units per group, shape ``(n, groups)``: one subject (one group), or the
    first group's subject (the null value, seed ``seed + 1``) and the second's."""
    one = spec.model_copy(update={"groups": 1})
    moved = one if effect else one.model_copy(update={"effect_size": 0.0})
    if spec.groups == 1:
        return subject_pool(moved, trials, runs, n, seed)[:, None]
    base = one.model_copy(update={"effect_size": 0.0})
    return np.column_stack([subject_pool(base, trials, runs, n, seed + 1), subject_pool(moved, trials, runs, n, seed)])



def studies(pool: np.ndarray, reps: int, length: int, rng: np.random.Generator,
            batches: int = BATCHES) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` studies of ``length`` observations, each a random ordering of one of ``batches`` disjoint
    sub-pools of ``pool`` (1: of the whole pool, as the choosing studies are drawn); returns them and each
    study's sub-pool."""
    sub = np.array_split(pool, batches)
    which = np.arange(reps) % batches
    out = np.empty((reps, length))
    for i, b in enumerate(which):
        out[i] = rng.permutation(sub[b])[:length]
    return out, which


def null_studies(pool: np.ndarray, reps: int, length: int, rng: np.random.Generator, batches: int = BATCHES,
                 mirror: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`studies` of a null pool; with ``mirror`` (two LLMs simulated alike), half of them are the other
    half's studies with every value negated.  The null pool of a two-LLM comparison simulates both LLMs
    identically and independently, so swapping them (``D → −D``) is another draw of the same pool: measuring on
    both cancels the pool's chance asymmetry to first order (antithetic variates), to which a test of symmetry
    is sensitive, without assuming anything the simulation does not construct."""
    if not mirror:
        return studies(pool, reps, length, rng, batches)
    half, which = studies(pool, math.ceil(reps / 2), length, rng, batches)
    return np.vstack([half, -half])[:reps], np.concatenate([which, which])[:reps]


def metric_pool(spec: Any, trials: int | None, n: int, seed: int, effect: bool) -> np.ndarray:
    """:func:`metric_parts`' pair differences, second setting less first."""
    return _statistic(metric_parts(spec, trials, n, seed, effect))


def metric_parts(spec: Any, trials: int | None, n: int, seed: int, effect: bool) -> np.ndarray:
    """``n`` pairs of a metric's per-unit values (run or subject, :func:`~cogtestbed.
    studies.metric_studies.comparison_result`, the fixed plan's own per-unit values), shape ``(n, 2)``: unit ``i`` of
    the first setting and unit ``i`` of the second (``effect``), or of a second, independent simulation of the
    first setting (the null: two exchangeable LLMs).  NaN where a unit has no value.  ``spec``: a metric-power study."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.metric_studies import comparison_result
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_runs

    exp = get_experiment(spec.experiment)
    design = design_for_trials(exp, trials, spec.design)
    values = []
    settings = (spec.compare[0], spec.compare[1] if effect else spec.compare[0])
    for seq, setting in zip(np.random.SeedSequence(seed).spawn(2), settings, strict=True):
        table = simulate_runs(exp, spec.agent, n, seed_of(seq), {**spec.params, **setting}, design, lapse=spec.lapse)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = comparison_result(exp, spec.metric, table, spec.metric_options)
        values.append(unit_array(result.get(exp.metrics.unit) or [], spec.metric, n))
    return np.column_stack(values)


def unit_array(rows: Any, metric: str, n: int) -> np.ndarray:
    """The metric of units 0..n−1 from a metrics result's per-unit rows (their ``run``/``subject`` id, else
    their order); NaN where a unit has none."""
    out = np.full(n, np.nan)
    for i, row in enumerate(rows):
        k = int(row.get("run", row.get("subject", i)))
        v = row.get(metric)
        if 0 <= k < n and isinstance(v, (int, float)) and math.isfinite(v):
            out[k] = float(v)
    return out


def rate_and_se(x: np.ndarray, which: np.ndarray) -> tuple[float, float]:
    """Mean of ``x`` and its MC SE: the larger of the i.i.d. SE and the between-sub-pool one."""
    x = np.asarray(x, float)
    iid = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
    means = np.array([x[which == b].mean() for b in np.unique(which)])
    between = float(means.std(ddof=1) / math.sqrt(means.size)) if means.size > 1 else 0.0
    return float(x.mean()), max(iid, between)


def upper_bound(rate: float, se: float, n: int) -> float:
    """One-sided 95 % upper bound of a rejection rate: the larger of ``rate + 1.645·se`` (the MC SE, sub-pool
    spread included) and the Clopper–Pearson bound of ``rate·n`` rejections in ``n`` studies."""
    from cogtestbed.planning.kinds.sequential.seqfair import upper_bound as clopper_pearson

    return max(rate + 1.645 * se, clopper_pearson(round(rate * n), n))


__all__ = ["BATCHES", "CHOOSE_SHARE", "POOL_FACTOR", "ROLES", "Pools", "choose_size", "draw_pools",
           "hypothesis_parts", "hypothesis_pool", "metric_parts", "metric_pool", "monitor_streams", "null_studies",
           "pool_seeds", "rate_and_se", "studies", "subject_pool", "unit_array", "upper_bound"]
