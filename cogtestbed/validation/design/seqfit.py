"""The per-subject fit a sequential plan simulates, and its run's looks compute (issue 71).

A model-effect plan's look statistic is the one-sample t-test on per-subject maximum-likelihood
estimates of the contrast.  The model's own fitter (:meth:`~cogtestbed.inference.base.CognitiveModel.fit_subject`)
evaluates the NLL on a start grid of ``grid_points`` nodes per parameter (9³ = 729 for RW±) and runs
BFGS from its ``n_starts`` best starts (8 for RW±): about 1.7 CPU ms a 96-trial RW± subject.
``plan --looks auto`` fits ~200,000 simulated subjects, so it uses the same maximum-likelihood
estimator from a coarser start grid, fewer BFGS starts and fewer iterations a start (:data:`AUTO_FIT`:
4 nodes per parameter, 2 starts of at most 50 iterations; about 0.3 ms a subject).  It is a statistic
of its own: it is what the plan's every simulated study computes (effect, calibration, search, fresh
null and robustness studies alike), so its calibration and its fresh type-I error are the ones of that
statistic, and the plan records it (``statistic.fit`` of the design in plan.json) so that ``run --plan``'s looks compute
it too (:func:`~cogtestbed.validation.design.runlooks.look_statistic`).  Where the coarse search
misses the full fitter's optimum the estimate differs; ``tests/test_seqfit.py`` bounds how often
(:data:`AGREEMENT`), and the plan's error rates hold whatever the share, being the simulated
statistic's own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cogtestbed.inference.base import CognitiveModel


@dataclass(frozen=True)
class SubjectFit:
    """How each subject's maximum-likelihood estimate is searched for: at most ``grid_points``
    start-grid nodes per parameter, ``n_starts`` BFGS starts and ``max_iter`` BFGS iterations a start,
    which stops at ‖∇f‖∞ < ``gtol`` or a relative decrease below ``ftol`` (None: the model's own;
    :attr:`~cogtestbed.inference.base.CognitiveModel.bfgs_stop`)."""

    grid_points: int | None = None
    n_starts: int | None = None
    max_iter: int | None = None
    gtol: float | None = None
    ftol: float | None = None

    def fitter(self, model: CognitiveModel) -> CognitiveModel:
        """``model`` searched this way (the model itself where nothing changes)."""
        grid, starts = self.settings(model)
        stop = self.stopping(model)
        if (grid, starts, *stop) == (model.grid_points, model.n_starts, *_own_stopping(model)):
            return model
        return _coarse(type(model), grid, starts, *stop)

    def stopping(self, model: CognitiveModel) -> tuple[int, float, float]:
        """(BFGS iterations a start, gtol, ftol) used for ``model``: never more iterations than its own."""
        own_iter, own_gtol, own_ftol = _own_stopping(model)
        return (own_iter if self.max_iter is None else min(self.max_iter, own_iter),
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
        if stop != _own_stopping(model):  # recorded where it differs: a plan without it runs the model's own
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
#: ``plan --looks auto``'s fit (the project's choice, measured in docs/benchmarks.md: 4 nodes a parameter
#: and 2 starts reach the full fitter's contrast within 1e-3 for about 99 % of 96-trial RW± subjects, at
#: about a quarter of its CPU; capping each start at 50 BFGS iterations, where the 3 % of starts that
#: would run to the default 200 spend a quarter of all iterations, keeps about 98 % and the
#: standardized effect, at about 70 % of the BFGS CPU: issue 71).
AUTO_FIT = SubjectFit(grid_points=4, n_starts=2, max_iter=50)
#: The share of simulated subjects whose contrast :data:`AUTO_FIT` must give within
#: :data:`AGREEMENT_TOL` of the full fitter's (``tests/test_seqfit.py``, on each of 3 parameter draws).
AGREEMENT, AGREEMENT_TOL = 0.95, 1e-3


def fit_of(statistic: Mapping[str, Any] | None) -> SubjectFit:
    """The fit a plan recorded (``statistic.fit``), or the model's own for a plan without one."""
    rec = (statistic or {}).get("fit") or {}
    return SubjectFit(*(rec.get(k) for k in ("grid_points", "n_starts", "max_iter", "gtol", "ftol")))


def _own_stopping(model: CognitiveModel) -> tuple[int, float, float]:
    return model.bfgs_stop


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
