"""Simulating a sequential plan: lazily, fitting each subject once, and calibrating its bounds.

The procedure :mod:`cogtestbed.planning.kinds.sequential.seqplan` designs is simulated exactly as ``run --plan``
executes it (the same fitter and test at each look), but only as far as it goes:

* **Each subject is fitted once.**  Per-subject MLE fits are independent, so the fits of the
  subjects finished by look k are the same at every later look; the look's statistic (the fixed
  plan's one-sample t-test on the per-subject contrast) is computed from the stored contrasts of
  the prefix (:func:`prefix_z`, one vectorised scipy call per look size).  ``tests/test_seqplan.py``
  checks that this gives the run's own refitted statistic (:func:`runlooks.look_statistic`).
* **Lazily.**  Replicates are simulated in blocks of :data:`BLOCK`, a few subjects at a time
  (one simulate and one fit call per block and step); a replicate stops being extended once every
  candidate maximum size has stopped it, so a study that stops at look 2 costs look 2's subjects
  (``Simulator.whole``: every replicate to the largest size, as ``plan --looks K`` with calibrated
  bounds simulates them, so that the fixed comparator is tested at every size on the same studies).
* **Calibrated on the simulated null** (:func:`null_scores`, :func:`calibrate_shift`): the
  efficacy bound in the effect's direction is moved by one shift δ so that, on a *calibration*
  set of simulated null studies run with futility obeyed (as the run executes it), exactly the
  share α/2 (α for an undirected statistic) rejects in that direction.  The normal-theory spending
  function gives the bounds' shape across looks, the simulated null their level.  Type-I error is
  then measured on an independent null (other seeds), never on the calibration set.

Metric-difference and test targets simulate whole paths (``seqpaths.simulate_paths``); they are
calibrated the same way.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.planning.kinds.sequential.seqfit import FULL_FIT, SubjectStatistic
from cogtestbed.planning.kinds.sequential.seqpaths import EFFICACY, EFFICACY_OTHER, FUTILITY, Z_CAP, Boundaries
from cogtestbed.studies.study_kinds import PlannedStudy, PowerStudy

#: Replicates simulated together (one simulate and one fit call per step): a fixed size, so a
#: replicate's random numbers do not depend on the number of workers.
BLOCK = 50
#: Whole paths (metric and test targets) simulated together: each path is seeded by its own index, so
#: the block size changes no number, only how often the progress line moves.
PATH_BLOCK = 10


def prefix_z(values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(Z, estimate) per row of the fixed plan's two-sided one-sample t-test on the first ``n``
    per-subject values: ``Z = sign(mean)·Φ⁻¹(1 − p/2)`` capped at ``Z_CAP``.  A subject without an
    estimate (NaN) is left out, as the run's look leaves it out (``runlooks.look_statistic``); Z is 0
    where no p-value exists (fewer than 2 estimates, or no spread), as the run's rule takes it."""
    v = values[:, :n]
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        est = np.nanmean(v, axis=1)
        if n < 2:
            return np.zeros(v.shape[0]), est
        if np.isnan(v).any():
            p = np.asarray(stats.ttest_1samp(v, 0.0, axis=1, nan_policy="omit").pvalue, float)
        else:
            p = _t_pvalue(v, est)
        z = np.minimum(stats.norm.isf(np.maximum(p, 0.0) / 2), Z_CAP) * np.sign(est)
    return np.where(np.isfinite(p), z, 0.0), est


def _t_pvalue(v: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Two-sided p-value of the one-sample t-test of each row of ``v`` (no NaN) against 0, from its mean and
    sample SD with scipy's t distribution: ``stats.ttest_1samp``'s p-values (to rounding; the plan computes one
    per block, look and hypothesis, where the test's argument checks cost more than the test), the same p of 0
    for a constant non-zero row and NaN for a row of zeros."""
    n = v.shape[1]
    sd = np.std(v, axis=1, ddof=1)
    t = mean / (sd / np.sqrt(n))
    return np.asarray(2 * stats.t.sf(np.abs(t), n - 1), float)


# ----------------------------------------------------------------------------- the stopping rule per block
@dataclass(frozen=True)
class Rule:
    """Every candidate's bounds and the path columns of its looks; ``calibrating``: a rejection in
    the effect's direction does not stop a path (a calibration path runs to futility or the end)."""

    bounds: tuple[Boundaries, ...]
    columns: tuple[tuple[int, ...], ...]
    direction: float
    calibrating: bool = False


@dataclass
class _Tracker:
    """Which replicates of a block each candidate still runs, look by look."""

    rule: Rule | None
    reps: int
    alive: list[np.ndarray] = field(default_factory=list)
    next_look: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = 0 if self.rule is None else len(self.rule.bounds)
        self.alive = [np.ones(self.reps, bool) for _ in range(n)]
        self.next_look = [0] * n

    def update(self, z: np.ndarray, sizes: Sequence[int], have: int) -> np.ndarray:
        """Apply every look whose size is ≤ ``have``; the replicates some candidate still runs."""
        if self.rule is None:
            return np.ones(self.reps, bool)
        stops = (FUTILITY, EFFICACY_OTHER) if self.rule.calibrating else (EFFICACY, EFFICACY_OTHER, FUTILITY)
        for c, (b, cols) in enumerate(zip(self.rule.bounds, self.rule.columns, strict=True)):
            while self.next_look[c] < len(cols) and sizes[cols[self.next_look[c]]] <= have:
                k = self.next_look[c]
                codes = b.codes(k, z[:, cols[k]], self.rule.direction)
                last = k == len(cols) - 1
                stopped = functools.reduce(np.logical_or, (codes == s for s in stops))
                self.alive[c] &= ~(stopped | last)
                self.next_look[c] += 1
        return np.logical_or.reduce(self.alive) if self.alive else np.zeros(self.reps, bool)


# ----------------------------------------------------------------------------- model targets: lazy blocks
def _chunk_table(spec: PowerStudy, exp: Any, model: Any, design: Any, runs: int, n: int,
                 seq: np.random.SeedSequence) -> Any:
    """``n`` fresh subjects of the study (parameters drawn as the fixed plan draws them)."""
    from cogtestbed.studies.model_studies import power_subjects

    return power_subjects(spec, exp, model, design, runs, n, seq)[0]


def subject_contrasts(spec: PowerStudy, model: Any, table: Any, n: int, null: float | None = None,
                      fit: SubjectStatistic = FULL_FIT) -> np.ndarray:
    """The per-subject contrast of each of the ``n`` subjects of ``table`` (subject ids 0..n−1) on the one-sample
    test's scale, less its value before the effect
    (:func:`~cogtestbed.studies.model_studies.one_sample_values`); NaN for a subject without a valid
    trial (as the run's look has no estimate for it).  ``null``: the one-sample null when the caller has it
    (:func:`~cogtestbed.studies.model_studies.one_sample_null`); ``fit``: the statistic, an MLE searched
    as :class:`~cogtestbed.planning.kinds.sequential.seqfit.SubjectFit` says, or the amortised estimator trained for the
    plan (:mod:`~cogtestbed.planning.kinds.sequential.seqamortised`, against the plan's null already)."""
    if not table["valid"].any():
        return np.full(n, np.nan)
    assert spec.effect is not None
    return fit.contrasts(spec, model, table, n, null)


@dataclass
class Paths:
    """Simulated statistic paths of one hypothesis: Z and estimate per replicate and look size
    (NaN where the replicate was not simulated that far), and the per-subject contrasts' total."""

    z: np.ndarray
    est: np.ndarray
    total: float = 0.0
    count: int = 0

    @property
    def reference(self) -> float | None:
        """The mean of every simulated subject's estimate: E[per-subject contrast] (Wald's identity
        holds for the lazily extended replicates), the estimate a full-size study centres on."""
        return self.total / self.count if self.count else None


def model_block(spec_json: str, trials: int | None, runs: int, n_top: int, sizes: Sequence[int],
                rule: Rule | None, seed: int, stream: int, block: int, reps: int, width: int,
                fit: SubjectStatistic = FULL_FIT, null_value: float | None = None) -> Paths:
    """``reps`` replicates of a model-effect study, extended ``width`` subjects at a time while a
    candidate of ``rule`` still runs them (``rule`` None: to ``n_top``), each subject fitted by
    ``fit``, its contrast taken against ``null_value`` (None: the study's own one-sample null); random numbers
    from ``SeedSequence([seed, 7919, stream, block, step])``."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null
    from cogtestbed.studies.study_data import design_for_trials
    from cogtestbed.studies.study_kinds import load_study

    spec = load_study(spec_json)
    assert isinstance(spec, PowerStudy)
    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, trials, spec.design)
    values = np.full((reps, n_top), np.nan)
    out = Paths(np.full((reps, len(sizes)), np.nan), np.full((reps, len(sizes)), np.nan))
    tracker, active, have, step = _Tracker(rule, reps), np.ones(reps, bool), 0, 0
    null = one_sample_null(spec, model) if null_value is None else null_value  # one value for every block's contrasts
    while have < n_top and active.any():
        upto, rows = min(n_top, have + width), np.flatnonzero(active)
        n = rows.size * (upto - have)
        table = _chunk_table(spec, exp, model, design, runs, n,
                             np.random.SeedSequence([seed, 7_919, stream, block, step]))
        fresh = subject_contrasts(spec, model, table, n, null, fit).reshape(rows.size, upto - have)
        values[rows, have:upto] = fresh
        finite = fresh[np.isfinite(fresh)]
        out.total, out.count = out.total + float(finite.sum()), out.count + int(finite.size)
        for i, size in enumerate(sizes):
            if have < size <= upto:
                out.z[rows, i], out.est[rows, i] = prefix_z(values[rows], size)
        active = tracker.update(out.z, sizes, upto)
        have, step = upto, step + 1
    return out


def _full_block(spec_json: str, trials: int | None, runs: int, n_top: int, sizes: Sequence[int], seed: int,
                stream: int, reps: Sequence[int]) -> Paths:
    from cogtestbed.planning.kinds.sequential.seqpaths import simulate_paths

    z, est = simulate_paths(spec_json, trials, runs, n_top, sizes, seed, reps, stream)
    return Paths(z, est)


@dataclass
class Simulator:
    """Runs a hypothesis' replicates in blocks, in a fork pool of ``workers`` processes."""

    trials: int | None
    runs: int
    n_top: int
    sizes: tuple[int, ...]
    sims: int
    seed: int
    workers: int = 1
    width: int = 2
    subjects: int = 0  # units simulated so far (model targets)
    label: str = "sequential plan: simulating studies"  # the heartbeat's phase
    #: every replicate extended to ``n_top`` whatever the rule (model targets: the fair fixed comparator
    #: is tested at every size, so no path may stop where the procedure stops)
    whole: bool = False
    #: how each simulated subject is fitted (model targets; :mod:`~cogtestbed.planning.kinds.sequential.seqfit`)
    fit: SubjectStatistic = FULL_FIT
    #: the one-sample null every subject's contrast is taken against (model targets; None: each study's own): the
    #: plan's, where a robustness study's other population would move it (the run tests against the plan's)
    null: float | None = None

    def run(self, jobs: Sequence[tuple[PlannedStudy, int, Rule | None]]) -> list[Paths]:
        """Each job's (study, seed stream, rule) paths: ``sims`` replicates each."""
        calls: list[list[tuple[Callable[..., Paths], tuple[Any, ...]]]] = [self._calls(*job) for job in jobs]
        flat = [c for group in calls for c in group]
        results = self._execute(flat, self.sims * len(jobs))
        out, i = [], 0
        for group in calls:
            parts, i = results[i:i + len(group)], i + len(group)
            out.append(_joined(parts))
            self.subjects += out[-1].count if isinstance(jobs[0][0], PowerStudy) else 0
        return out

    def _execute(self, flat: Sequence[tuple[Callable[..., Paths], tuple[Any, ...]]], reps: int) -> list[Paths]:
        """Every block's paths, in a fork pool of ``workers`` whose workers end with this process
        (and at once on an interrupt or an error); finished replicates count on the current
        heartbeat (:func:`cogtestbed.progress.tick`)."""
        from cogtestbed.progress import beat, tick
        from cogtestbed.studies.driver import fork_pool, stop_pool

        hb = beat()
        if hb is not None:
            hb.phase(self.label, reps, f"{len(flat)} blocks, {self.workers} worker"
                     f"{'s' * (self.workers != 1)}")
        if self.workers <= 1 or len(flat) < 2:
            out = []
            for fn, args in flat:
                out.append(fn(*args))
                tick(out[-1].z.shape[0])
            return out
        pool = fork_pool(self.workers)
        try:
            futures = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(flat)}
            done: dict[int, Paths] = {}
            for f in as_completed(futures):
                done[futures[f]] = f.result()
                tick(done[futures[f]].z.shape[0])
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        return [done[i] for i in range(len(flat))]

    def _calls(self, spec: PlannedStudy, stream: int, rule: Rule | None) -> list[tuple[Callable[..., Paths],
                                                                                       tuple[Any, ...]]]:
        payload = spec.model_dump_json()
        blocks = range(0, self.sims, BLOCK)
        if isinstance(spec, PowerStudy):
            rule = None if self.whole else rule
            return [(model_block, (payload, self.trials, self.runs, self.n_top, self.sizes, rule, self.seed, stream,
                                   b // BLOCK, min(BLOCK, self.sims - b), self.width, self.fit, self.null))
                    for b in blocks]
        # a whole path's random numbers are its own (seeded by its index), so these blocks can be small:
        # the heartbeat's count and ETA move every PATH_BLOCK paths
        return [(_full_block, (payload, self.trials, self.runs, self.n_top, self.sizes, self.seed, stream,
                               list(range(b, min(b + PATH_BLOCK, self.sims)))))
                for b in range(0, self.sims, PATH_BLOCK)]


# ----------------------------------------------------------------------------- calibration on the null
def null_scores(bounds: Boundaries, z: np.ndarray, columns: Sequence[int], direction: float) -> np.ndarray:
    """Per null path, ``max_k (Z_k·d − b_k)`` over the looks up to where futility (or a rejection
    against the effect's direction) stops it: the path rejects in the effect's direction under
    bounds ``b_k + δ`` exactly when its score is ≥ δ (the futility bounds held fixed)."""
    zc = z[:, np.asarray(columns, dtype=np.intp)]
    t = np.where(np.isfinite(zc), zc, 0.0)
    t = np.abs(t) if direction == 0 else t * direction
    codes = bounds.codes_all(zc, direction)
    stops = (codes == FUTILITY) | (codes == EFFICACY_OTHER)
    alive = np.ones(t.shape, bool)  # look k counts while no earlier look stopped the path
    np.logical_and.accumulate(~stops[:, :-1], axis=1, out=alive[:, 1:])
    return np.max(np.where(alive, t - np.asarray(bounds.efficacy, float), -np.inf), axis=1)


def calibrate_shift(scores: np.ndarray, side_level: float) -> float:
    """The shift δ under which at most ``side_level`` of the calibration paths reject: midway
    between the ``c``-th and ``(c+1)``-th largest score, ``c = ⌊side_level · paths⌋``."""
    s = np.sort(np.asarray(scores, float))[::-1]
    c = int(math.floor(side_level * s.size + 1e-9))
    if c >= s.size:
        return float(s[-1]) - 1.0
    below = float(s[c])
    above = float(s[c - 1]) if c >= 1 else below + 1e-3
    return (below + above) / 2 if above > below else float(np.nextafter(below, np.inf))


def _joined(parts: Sequence[Paths]) -> Paths:
    """One job's paths from its blocks' paths."""
    return Paths(np.concatenate([p.z for p in parts]), np.concatenate([p.est for p in parts]),
                 sum(p.total for p in parts), sum(p.count for p in parts))
