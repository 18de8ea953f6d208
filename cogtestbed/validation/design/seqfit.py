"""The per-subject fit a sequential plan simulates, and its run's looks compute (issue 71).

A model-effect plan's look statistic is the one-sample t-test on per-subject maximum-likelihood
estimates of the contrast.  The model's own fitter (:meth:`~cogtestbed.inference.base.CognitiveModel.fit_subject`)
evaluates the NLL on a start grid of ``grid_points`` nodes per parameter (9³ = 729 for RW±) and runs
BFGS from its ``n_starts`` best starts (8 for RW±): about 1.7 CPU ms a 96-trial RW± subject.
``plan --looks auto`` fits ~200,000 simulated subjects, so it uses the same maximum-likelihood
estimator from a coarser start grid and fewer BFGS starts (:data:`AUTO_FIT`: 4 nodes per
parameter, 2 starts; about 0.4 ms a subject).  It is a statistic of its own: it is what the plan's
every simulated study computes (effect, calibration, search, fresh null and robustness studies
alike), so its calibration and its fresh type-I error are the ones of that statistic, and the plan
records it (``statistic.fit`` of the design in plan.json) so that ``run --plan``'s looks compute
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
    start-grid nodes per parameter and ``n_starts`` BFGS starts (None: the model's own)."""

    grid_points: int | None = None
    n_starts: int | None = None

    def fitter(self, model: CognitiveModel) -> CognitiveModel:
        """``model`` searched this way (the model itself where nothing changes)."""
        grid, starts = self.settings(model)
        if (grid, starts) == (model.grid_points, model.n_starts):
            return model
        return _coarse(type(model), grid, starts)

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
        return {"estimator": "maximum likelihood", "grid_points": grid, "n_starts": starts,
                "start_grid_size": len(fitted.start_grid()), "full_grid_points": model.grid_points,
                "full_n_starts": model.n_starts, "full_start_grid_size": len(model.start_grid())}

    def words(self, model: CognitiveModel) -> str:
        """One line for the text report."""
        r = self.record(model)
        if (r["grid_points"], r["n_starts"]) == (r["full_grid_points"], r["full_n_starts"]):
            return (f"per-subject MLE by the model's own search ({r['start_grid_size']:,}-point start grid, BFGS "
                    f"from {r['n_starts']} starts)")
        return (f"per-subject MLE from a {r['start_grid_size']:,}-point start grid ({r['grid_points']} nodes a "
                f"parameter), BFGS from its {r['n_starts']} best starts (the full fitter: "
                f"{r['full_start_grid_size']:,} points, {r['full_n_starts']} starts); simulated, calibrated and "
                "computed at the run's looks alike")


#: The model's own fitter (``plan --looks K``, the fixed plan, ``cogtestbed fit``).
FULL_FIT = SubjectFit()
#: ``plan --looks auto``'s fit (the project's choice, measured in docs/benchmarks.md: 4 nodes a parameter
#: and 2 starts reach the full fitter's contrast within 1e-3 for about 99 % of 96-trial RW± subjects, at
#: about a quarter of its CPU).
AUTO_FIT = SubjectFit(grid_points=4, n_starts=2)
#: The share of simulated subjects whose contrast :data:`AUTO_FIT` must give within
#: :data:`AGREEMENT_TOL` of the full fitter's (``tests/test_seqfit.py``, on each of 3 parameter draws).
AGREEMENT, AGREEMENT_TOL = 0.95, 1e-3


def fit_of(statistic: Mapping[str, Any] | None) -> SubjectFit:
    """The fit a plan recorded (``statistic.fit``), or the model's own for a plan without one."""
    rec = (statistic or {}).get("fit") or {}
    return SubjectFit(rec.get("grid_points"), rec.get("n_starts"))


@functools.lru_cache(maxsize=64)
def _coarse(cls: type[CognitiveModel], grid: int, starts: int) -> CognitiveModel:
    """One instance (its start grid cached) of ``cls`` with ``grid`` nodes a parameter and ``starts``
    BFGS starts: a subclass overriding the two class settings and nothing else."""
    sub = type(f"{cls.__name__}Grid{grid}Starts{starts}", (cls,),
               {"grid_points": grid, "n_starts": starts,
                "__doc__": f"{cls.__doc__ or cls.__name__} Searched from {grid} grid nodes a parameter, "
                           f"{starts} BFGS starts."})
    return sub()
