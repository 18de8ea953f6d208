"""The per-subject fit a sequential plan simulates, and its run's looks compute.

A model-effect plan's look statistic is the one-sample t-test on per-subject maximum-likelihood
estimates of the contrast.  The model's own fitter (:meth:`~cogtestbed.inference.base.CognitiveModel.fit_subject`)
evaluates the NLL on a start grid of ``grid_points`` nodes per parameter (9³ = 729 for RW±) and runs
BFGS from its ``n_starts`` best starts (8 for RW±): about 1.7 CPU ms a 96-trial RW± subject.
``plan --looks auto`` fits ~200,000 simulated subjects, so it uses the same maximum-likelihood
estimator from a coarser start grid, fewer BFGS starts and fewer iterations a start (:data:`AUTO_FIT`:
4 nodes per parameter, 2 starts of at most 50 iterations, or the family's own in :data:`AUTO_MAX_ITER_OF`
where 50 moves its settled estimates; about 0.3 ms an RW± subject).  It is a statistic
of its own: it is what the plan's every simulated study computes (effect, calibration, search, fresh
null and robustness studies alike), so its calibration and its fresh type-I error are the ones of that
statistic, and the plan records it (``statistic.fit`` of the design in plan.json) so that ``run --plan``'s looks compute
it too (:func:`~cogtestbed.planning.kinds.sequential.runlooks.look_statistic`).  Where the coarse search
misses the full fitter's optimum the estimate differs; ``tests/test_seqfit.py`` bounds how often
(:data:`AGREEMENT`; per family, the cap against no cap: :func:`iteration_agreement`, :data:`CAP_AGREEMENT`),
and the plan's error rates hold whatever the share, being the simulated statistic's own.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from cogtestbed.inference.base import CognitiveModel


class SubjectStatistic(Protocol):
    """What a sequential plan's per-subject statistic offers: each subject's contrast (:meth:`SubjectFit.contrasts`,
    :meth:`~cogtestbed.planning.kinds.sequential.seqamortised.AmortisedFit.contrasts`), its plan.json record and its
    report line."""

    def contrasts(self, spec: Any, model: CognitiveModel, table: Any, n: int,
                  null: float | None = None) -> np.ndarray: ...

    def record(self, model: CognitiveModel) -> dict[str, Any]: ...

    def words(self, model: CognitiveModel) -> str: ...


@dataclass(frozen=True)
class SubjectFit:
    """How each subject's maximum-likelihood estimate is searched for: at most ``grid_points``
    start-grid nodes per parameter, ``n_starts`` BFGS starts and ``max_iter`` BFGS iterations a start,
    which stops at ‖∇f‖∞ < ``gtol`` or a relative decrease below ``ftol`` (None: the model's own;
    :attr:`~cogtestbed.inference.base.CognitiveModel.bfgs_stop`).  ``max_iter_of``: families
    (``experiment/model``, :func:`family`) whose cap is another (None: the model's own), the rule
    :data:`AUTO_FIT` takes from :data:`AUTO_MAX_ITER_OF`; a recorded fit (:func:`fit_of`) has none, its
    ``max_iter`` being the one its family ran."""

    grid_points: int | None = None
    n_starts: int | None = None
    max_iter: int | None = None
    gtol: float | None = None
    ftol: float | None = None
    max_iter_of: tuple[tuple[str, int | None], ...] = ()

    def contrasts(self, spec: Any, model: CognitiveModel, table: Any, n: int, null: float | None = None) -> np.ndarray:
        """The per-subject MLE contrast of each of the ``n`` subjects of ``table`` (subject ids 0..n−1), searched
        this way, on the one-sample test's scale less ``null``
        (:func:`~cogtestbed.studies.model_studies.one_sample_values`; None: the study's own); NaN for a
        subject without a valid trial (:func:`~cogtestbed.planning.kinds.sequential.seqsim.subject_contrasts`)."""
        from cogtestbed.studies.model_studies import one_sample_values
        from cogtestbed.studies.study_data import fitted_model

        values = np.full(n, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = self.fitter(fitted_model(spec, model)).fit_mle(table)
        contrast = one_sample_values(spec, model, {p: fits[p].to_numpy(float) for p in model.parameters.names}, null)
        values[fits["subject"].to_numpy(int)] = np.asarray(contrast, float)
        return values

    def fitter(self, model: CognitiveModel) -> CognitiveModel:
        """``model`` searched this way (the model itself where nothing changes)."""
        grid, starts = self.settings(model)
        stop = self.stopping(model)
        if (grid, starts, *stop) == (model.grid_points, model.n_starts, *model.bfgs_stop):
            return model
        return _coarse(type(model), grid, starts, *stop)

    def stopping(self, model: CognitiveModel) -> tuple[int, float, float]:
        """(BFGS iterations a start, gtol, ftol) used for ``model``: never more iterations than its own."""
        own_iter, own_gtol, own_ftol = model.bfgs_stop
        cap = dict(self.max_iter_of).get(family(model), self.max_iter)
        return (own_iter if cap is None else min(cap, own_iter),
                own_gtol if self.gtol is None else self.gtol, own_ftol if self.ftol is None else self.ftol)

    def settings(self, model: CognitiveModel) -> tuple[int, int]:
        """(grid nodes per parameter, BFGS starts) used for ``model``: never more than its own."""
        grid = model.grid_points if self.grid_points is None else min(self.grid_points, model.grid_points)
        starts = model.n_starts if self.n_starts is None else min(self.n_starts, model.n_starts)
        return grid, starts

    def record(self, model: CognitiveModel) -> dict[str, Any]:
        """What plan.json keeps (``statistic.fit``): the settings, the start grid's size and the full
        fitter's, for ``run --plan`` to compute the same estimate and a reader to see the difference."""
        grid, starts = self.settings(model)
        fitted = self.fitter(model)
        out = {"estimator": "maximum likelihood", "grid_points": grid, "n_starts": starts,
               "start_grid_size": len(fitted.start_grid()), "full_grid_points": model.grid_points,
               "full_n_starts": model.n_starts, "full_start_grid_size": len(model.start_grid())}
        stop = self.stopping(model)
        if stop != model.bfgs_stop:  # recorded where it differs: a plan without it runs the model's own
            out.update({"max_iter": stop[0], "gtol": stop[1], "ftol": stop[2], "full_max_iter": model.bfgs_stop[0]})
        return out

    def words(self, model: CognitiveModel) -> str:
        """One line for the text report."""
        r = self.record(model)
        if (r["grid_points"], r["n_starts"]) == (r["full_grid_points"], r["full_n_starts"]):
            return (f"per-subject MLE by the model's own search ({r['start_grid_size']:,}-point start grid, BFGS "
                    f"from {r['n_starts']} starts)")
        capped = (f", at most {r['max_iter']} iterations each" if "max_iter" in r else "")
        full_cap = (f", {r['full_max_iter']} iterations" if "max_iter" in r else "")
        return (f"per-subject MLE from a {r['start_grid_size']:,}-point start grid ({r['grid_points']} nodes a "
                f"parameter), BFGS from its {r['n_starts']} best starts{capped} (the full fitter: "
                f"{r['full_start_grid_size']:,} points, {r['full_n_starts']} starts{full_cap}); simulated, calibrated "
                "and computed at the run's looks alike")


#: The model's own fitter (``plan --looks K``, the fixed plan, ``cogtestbed fit``).
FULL_FIT = SubjectFit()
#: The families (:func:`family`) whose ``plan --looks auto`` fit caps each BFGS start otherwise than at
#: :data:`AUTO_MAX_ITER` (None: the model's own 200).  Capped at 50, every other family's estimates agree with
#: its uncapped search's for 99-100 % of the subjects whose uncapped search settled; restless-bandit Kalman's
#: for 38 % and revealed-belief dissonant's for 81 %, so those two keep their own (150 subjects a family:
#: ``python benchmarks/bench_seqplan.py --cap-agreement 150``, docs/benchmarks.md; a one-off check at 100
#: iterations gave 96 % and 100 % for 15 % and no less CPU than uncapped: not worth a statistic that is not
#: the search's own estimate).  The one place a family's cap is chosen.
AUTO_MAX_ITER_OF: dict[str, int | None] = {"restless-bandit/kalman": None, "revealed-belief/dissonant": None}
#: The BFGS iterations a start of every other family's ``plan --looks auto`` fit.
AUTO_MAX_ITER = 50
#: ``plan --looks auto``'s fit (the project's choice, measured in docs/benchmarks.md: 4 nodes a parameter
#: and 2 starts reach the full fitter's contrast within 1e-3 for about 99 % of 96-trial RW± subjects, at
#: about a quarter of its CPU; capping each start at 50 BFGS iterations, where the 3 % of starts that
#: would run to the default 200 spend a quarter of all iterations, keeps about 98 % and the
#: standardized effect, at about 70 % of the BFGS CPU), each family's cap its own where
#: :data:`AUTO_MAX_ITER_OF` says so.
AUTO_FIT = SubjectFit(grid_points=4, n_starts=2, max_iter=AUTO_MAX_ITER, max_iter_of=tuple(AUTO_MAX_ITER_OF.items()))
#: The share of simulated subjects whose contrast :data:`AUTO_FIT` must give within
#: :data:`AGREEMENT_TOL` of the full fitter's (``tests/test_seqfit.py``, on each of 3 parameter draws).
AGREEMENT, AGREEMENT_TOL = 0.95, 1e-3
#: The share of a family's simulated subjects, of those whose search without the cap had settled (the same
#: estimates at 3/4 of its iterations as at all), whose every estimate :data:`AUTO_FIT`'s iteration cap must
#: leave within :data:`AGREEMENT_TOL` (relative above 1) of that search's (:func:`iteration_agreement`;
#: ``tests/test_seqfit.py``, every family).  A subject whose search still moves at its last iterations (5 % of
#: RW± subjects: an inverse temperature drifting up a flat likelihood) gets another estimate under any cap,
#: so the bound leaves them out; the cap moves their estimate in a plan's statistic.
CAP_AGREEMENT = 0.95


def family(model: CognitiveModel) -> str:
    """``experiment/model``: the name a family's fit settings go by (a lapse variant's its model's)."""
    return f"{model.experiment}/{model.name}"


@dataclass(frozen=True)
class IterationAgreement:
    """A family's iteration cap against none, on the same simulated subjects (:func:`iteration_agreement`)."""

    family: str
    subjects: int
    #: BFGS iterations a start, with the cap and without it (the model's own)
    max_iter: int
    own_max_iter: int
    #: share of subjects whose every estimate agrees (NaN with NaN)
    agree: float
    #: share of the subjects whose uncapped estimate had settled (the same at 3/4 of its iterations), and the
    #: agreement among them (the cap's own doing: a search still moving at its last iterations has no estimate
    #: any cap could keep)
    settled: float
    agree_settled: float
    #: process CPU milliseconds a subject, with the cap and without it
    cpu_ms: float
    own_cpu_ms: float


def iteration_agreement(family_name: str, subjects: int, seed: int, fit: SubjectFit = AUTO_FIT,
                        tol: float = AGREEMENT_TOL, rounds: int = 1, sd: float | None = None) -> IterationAgreement:
    """How far ``fit``'s iteration cap moves the estimates of the family ``family_name`` (``experiment/model``,
    :func:`family`): ``subjects`` subjects simulated at the default design with the model's default parameters
    scattered as a plan's null population is (SD ``sd``, default the plan's ``sd_between``, on the unconstrained
    scale:
    :func:`~cogtestbed.studies.model_studies.scatter`), each fitted by ``fit``, by ``fit`` without a
    cap (its grid, starts and tolerances; the two alternated ``rounds`` times for their CPU, after one subject
    that compiles them) and by ``fit`` capped at 3/4 of the model's own iterations (which subjects settled).
    Estimates agree when each is within ``tol`` of the other's (relative above 1; NaN with NaN)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import scatter
    from cogtestbed.studies.study_data import design_for_trials, simulate_runs
    from cogtestbed.studies.study_kinds import PowerStudy

    experiment, _, model = family_name.partition("/")
    exp = get_experiment(experiment)
    m = exp.model(model)
    rng = np.random.default_rng(seed)
    sd = PowerStudy.model_fields["sd_between"].default if sd is None else sd
    true = {p.name: scatter(p, p.default, sd, rng.normal(size=subjects)) for p in m.parameters}
    gen = exp.generator(model)
    table = simulate_runs(exp, gen.agent, subjects, seed, gen.agent_params(true), design_for_trials(exp, None, {}))
    own = replace(fit, max_iter=None, max_iter_of=())
    fits = {"cap": fit.fitter(m), "own": own.fitter(m)}
    cpu, est = dict.fromkeys(fits, 0.0), {}
    names = list(m.parameters.names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in fits.values():
            f.fit_mle(table[table["subject"] == table["subject"].iloc[0]])
        for r in range(rounds):
            for key in (list(fits) if r % 2 == 0 else list(fits)[::-1]):
                start = time.process_time()
                est[key] = fits[key].fit_mle(table)[names].to_numpy(float)
                cpu[key] += time.process_time() - start
        late = replace(own, max_iter=3 * m.bfgs_stop[0] // 4).fitter(m).fit_mle(table)[names].to_numpy(float)
    same, settled = _agree(est["cap"], est["own"], tol), _agree(late, est["own"], tol)
    ms = {k: 1000 * v / rounds / subjects for k, v in cpu.items()}
    return IterationAgreement(family(m), subjects, fit.stopping(m)[0], m.bfgs_stop[0], float(same.mean()),
                              float(settled.mean()), float(same[settled].mean()) if settled.any() else float("nan"),
                              ms["cap"], ms["own"])


def _agree(x: np.ndarray, y: np.ndarray, tol: float) -> np.ndarray:
    """Rows of ``x`` whose every value is within ``tol`` of ``y``'s (relative above 1), NaN with NaN."""
    return np.all((np.abs(x - y) <= tol * np.maximum(1.0, np.abs(y))) | (np.isnan(x) & np.isnan(y)), axis=1)


def fit_of(statistic: Mapping[str, Any] | None) -> SubjectFit:
    """The fit a plan recorded (``statistic.fit``), or the model's own for a plan without one."""
    rec = (statistic or {}).get("fit") or {}
    return SubjectFit(rec.get("grid_points"), rec.get("n_starts"), rec.get("max_iter"), rec.get("gtol"),
                      rec.get("ftol"))


@functools.lru_cache(maxsize=64)
def _coarse(cls: type[CognitiveModel], grid: int, starts: int, max_iter: int, gtol: float,
            ftol: float) -> CognitiveModel:
    """One instance (its start grid cached) of ``cls`` with ``grid`` nodes a parameter, ``starts``
    BFGS starts and their stopping rule: a subclass overriding those class settings and nothing else."""
    sub = type(f"{cls.__name__}Grid{grid}Starts{starts}Iter{max_iter}", (cls,),
               {"grid_points": grid, "n_starts": starts, "bfgs_stop": (max_iter, gtol, ftol),
                "__doc__": f"{cls.__doc__ or cls.__name__} Searched from {grid} grid nodes a parameter, "
                           f"{starts} BFGS starts of at most {max_iter} iterations."})
    return sub()
