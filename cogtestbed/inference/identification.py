"""Whether the data pin one subject's maximum-likelihood estimate, and its interval.

Every fitted subject's parameter carries its **likelihood-ratio 95 % interval** (profile likelihood,
Venzon & Moolgavkar 1988): the values θ_j whose profile NLL — the minimum over the other parameters
with θ_j held there (:func:`profile_nll`) — lies within χ²₁(0.95)/2 ≈ 1.92 of the minimum.  Each end
is found by Brent's root finding (:func:`scipy.optimize.brentq`) on the profile between the estimate
and the end of the parameter's search range, or is that end where the profile stays within 1.92 of
the minimum there (:func:`profile_interval`).  Where an interval reaches the end of the search range,
the reported end is the parameter's declared bound (0 for a log-scale β whose search stops at 1e-6).

A **flag** means the data cannot pin the parameter, and nothing else:

* **the fit failed** — the search did not converge (away from every bound: a search that runs
  towards a bound, τ → 0, found its supremum there and is judged by its interval), or several
  subjects whose answers differ come back with the very same estimate (the optimiser stopped
  where it started, on a plateau of the likelihood, as six temporal-discounting subjects of
  a human data set did at k = 42.169650, τ = 0.001778: :func:`shared_estimates`);
* **an unbounded interval** — the likelihood-ratio interval is unbounded within the parameter's
  declared range: it covers the whole range, or it reaches an end where the declared range is
  unbounded (an infinite upper bound);
* **a one-sided interval** — the interval is open at one finite bound of the declared range and
  bounded on the other side (a learning rate of 1.0 whose interval is [0.81, 1]; any estimate on a
  declared bound): the data say "at least 0.81", not a value.

Whether an interval is open at an end is a rule, not where a root search stopped: the profile is
compared with the χ² cut :data:`OPEN_END_TOL` of the search range inside that end (so an interval
of a bounded range that is not flagged covers at most 99 % of it).  Summaries count each kind
(:func:`~cogtestbed.inference.summary.flag_kinds`).  :func:`unidentified_reason` gives the
first reason that applies to one subject (None: every parameter pinned).  The 95 % level and "an
end of the search range" are this project's rule, not a paper's.

Cost, paid only for what is asked (:class:`SubjectProfile`, computed lazily and once per subject): a
flag needs the profile at the ends of each parameter's range alone (one multi-start profile fit per
end, :data:`PROFILE_GRID_STARTS` grid starts besides the estimate, at most two per parameter); an
interval two root findings per parameter, run only where a row shows it (``intervals`` of
:meth:`~cogtestbed.inference.base.CognitiveModel.fit_mle`), each from the local quadratic model at the
estimate (:mod:`cogtestbed.inference.profile_root`: the Wald end, its quadratic correction
and Brent's method on the bracket they give, one warm-started BFGS run a point), or, where the
profile is far from quadratic, Brent's method on the whole side with multi-start profile fits;
measured by ``benchmarks/bench_identification.py`` (``docs/studies.md``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.inference.optim import FTOL, GTOL, MAX_ITER, mle_driver
from cogtestbed.inference.profile_root import LocalProfile, profile_args
from cogtestbed.parameters import Parameter

#: The model and fit types of :mod:`cogtestbed.inference.base` (which imports this module: named,
#: not imported, so that no import cycle forms).
CognitiveModel = Any
MLEResult = Any

#: χ²₁(0.95) / 2: the NLL rise that bounds a profile-likelihood 95 % interval.
LR_HALF_CHI2 = 1.9207294103470056
#: An estimate within this relative distance of a bound counts as at the bound.
BOUND_RTOL = 1e-4
#: Relative tolerance under which two subjects' estimates count as the same.
SHARED_RTOL = 1e-9
#: Grid starts of each profile fit besides the warm start (the other parameters' optimum at the
#: previous profile point): the profile is continuous, so the warm start is nearly always the optimum.
PROFILE_GRID_STARTS = 2
#: Start-grid rows (lowest NLL at the subject's data) a profile fit's grid starts are drawn from.
PROFILE_NODES = 24
#: Root-finding tolerance of an interval end, as a share of the parameter's search range (on its
#: search scale: natural for a bounded parameter, log for a log-scale one).
PROFILE_XTOL = 1e-3
#: The profile counts as close to quadratic where its rise at the Wald end is within these multiples
#: of χ²₁(0.95)/2: there an interval's ends are found from the local quadratic model
#: (:mod:`cogtestbed.inference.profile_root`); elsewhere (a ridge, a plateau) by the earlier computation.
QUADRATIC_SPAN = (0.5, 2.0)
#: Kernel-array elements of a subject's data (the work of one likelihood evaluation) from which an
#: interval's inside is found from the local quadratic model.  Below it a profile fit
#: costs microseconds and the multi-start numba fits beat scipy's per-iteration overhead (measured by
#: benchmarks/bench_identification.py: RW± 14 against 17 ms a subject, prospect theory 26 against 34 ms);
#: revealed-belief's dissonant model (≈ 316,000 elements, 960 items × channels) is above it.
LOCAL_MIN_ELEMENTS = 100_000
#: How near an interval's end must come to an end of the parameter's search range to be open there,
#: as a share of the search range on its search scale (natural for a bounded parameter, log for a
#: log-scale one): the profile is compared with the χ² cut at that distance from the end
#: (:meth:`SubjectProfile.reaches`), so whether an interval is open never depends on where a root
#: search stopped.  With it, a bounded interval of a bounded range covers at most 1 − 2 × 0.005 = 99 %
#: of that range; one that covers more is open at an end and flagged.
OPEN_END_TOL = 0.005
#: The reason prefixes of a fit that failed, of an unbounded interval and of a one-sided one (open at
#: one finite bound of the declared range: the data say "at least" or "at most", not a value).
FIT_FAILED, UNBOUNDED, ONE_SIDED = "fit failed", "unbounded interval", "one-sided interval"


def bounds_of(p: Parameter) -> list[float]:
    """Finite bounds of ``p`` and of its MLE search box (where an optimiser stops)."""
    lo, hi = p.search_bounds()
    out = [p.lower, p.upper, p.from_search(lo), p.from_search(hi)]
    return sorted({b for b in out if math.isfinite(b)})


def _near_bound(value: float, bound: float, p: Parameter) -> bool:
    """Whether ``value`` counts as at ``bound`` of ``p`` (the tolerance of :func:`at_bound`)."""
    span = (p.upper - p.lower) if math.isfinite(p.upper - p.lower) else max(1.0, abs(value))
    return abs(value - bound) <= BOUND_RTOL * max(abs(bound), span * 1e-2, 1e-12)


def at_bound(est: np.ndarray, p: Parameter) -> np.ndarray:
    """Which estimates sit at a bound of ``p`` (or of its search box)."""
    est = np.asarray(est, float)
    hit = np.zeros(est.shape, bool)
    if not est.size:
        return hit
    finite = est[np.isfinite(est)]
    wide = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    span = (p.upper - p.lower) if math.isfinite(p.upper - p.lower) else wide
    for b in bounds_of(p):
        hit |= np.abs(est - b) <= BOUND_RTOL * max(abs(b), span * 1e-2, 1e-12)
    return hit


def search_ends(p: Parameter) -> tuple[float, float]:
    """The natural values at the two ends of ``p``'s search range (±inf where it has none)."""
    lo, hi = p.search_bounds()
    return p.from_search(lo), p.from_search(hi)


def _search_coordinate(p: Parameter, value: float) -> float:
    """``value`` on ``p``'s search scale (log for a log-scale parameter), clipped into the range."""
    lo, hi = p.search_bounds()
    return min(max(p.to_search(value), lo), hi)


def profile_nll(model: CognitiveModel, data: Any, j: int, value: float, n_starts: int,
                warm: np.ndarray | None = None, nodes: np.ndarray | None = None) -> tuple[float, np.ndarray | None]:
    """min over the other parameters of the NLL with parameter ``j`` held at ``value``, and where
    (the others on the numba search scale; None for a one-parameter model).  ``warm``: one start
    or a stack of starts of the others on that scale; ``nodes``: the start-grid rows to try (all
    where None).

    The same numba BFGS as the fit (:meth:`CognitiveModel.fit_subject`), from the best
    ``n_starts`` nodes of the start grid and from ``warm`` (the others' optimum at a nearby value),
    on the search objective with parameter ``j`` moved into the kernel's fixed columns."""
    rows = np.arange(len(model.start_grid())) if nodes is None else np.asarray(nodes)
    grid = model.start_grid()[rows].copy()
    grid[:, j] = value
    grid_nll = model.nll_many(grid, data)
    if len(model.parameters) == 1:
        return float(grid_nll[0]), None
    keep = np.array([i for i in range(len(model.parameters)) if i != j])
    z_grid = model._unconstrained_grid()[rows][:, keep]
    _, first = np.unique(z_grid, axis=0, return_index=True)  # one start per node of the other axes
    order = first[np.argsort(grid_nll[first], kind="stable")][:n_starts]
    starts = z_grid[order] if warm is None else np.vstack([np.atleast_2d(warm), z_grid[order]])
    args = profile_args(model, data, j, value)
    z, nll, _ = mle_driver(model._kernel())(np.ascontiguousarray(starts), args, MAX_ITER, GTOL, FTOL, np.inf)
    best = float(np.min(grid_nll[order]))
    if nll <= best:
        return float(nll), np.asarray(z, float)
    return best, z_grid[order[0]].copy()


@dataclass(frozen=True)
class ProfileInterval:
    """One parameter's likelihood-ratio 95 % interval (natural scale) and which ends of its search
    range it reaches (there the end reported is the declared bound)."""

    lower: float
    upper: float
    reaches_lower: bool
    reaches_upper: bool

    def unbounded(self, p: Parameter) -> bool:
        """Whether the interval is unbounded within ``p``'s declared range: it covers the whole
        range, or reaches an end where the range is unbounded."""
        return ((self.reaches_lower and self.reaches_upper) or (self.reaches_upper and math.isinf(p.upper))
                or (self.reaches_lower and math.isinf(p.lower)))

    def one_sided(self, p: Parameter) -> bool:
        """Whether the interval is open at one finite bound of ``p``'s declared range only (an
        estimate on that bound included): bounded on the other side, it says "at least" or "at
        most", not a value."""
        return (self.reaches_lower or self.reaches_upper) and not self.unbounded(p)


def best_nodes(model: CognitiveModel, data: Any) -> np.ndarray:
    """The :data:`PROFILE_NODES` start-grid rows of lowest NLL for ``data``: the grid starts a
    profile fit draws from (one grid evaluation per subject, not one per profile point)."""
    grid_nll = model.nll_many(model.start_grid(), data)
    return np.argsort(grid_nll, kind="stable")[:PROFILE_NODES]


def _distinct_rows(starts: np.ndarray) -> np.ndarray:
    """``starts`` (2-D) without rows equal to an earlier row: BFGS from a repeated start repeats the
    same optimum, which never replaces the first (the driver keeps the first of equal optima)."""
    keep = [i for i in range(len(starts)) if not any(np.array_equal(starts[i], starts[m]) for m in range(i))]
    return starts[keep]


def _bracket(rises: Mapping[float, float], start: float, side: int) -> tuple[float, float]:
    """The points nearest each side of the first sign change of the rise, going from ``start``
    towards ``side`` (the points fitted, each with its rise; ``start``'s is negative)."""
    order = sorted((u for u in rises if (u - start) * side >= 0), key=lambda u: (u - start) * side)
    for a, b in zip(order, order[1:], strict=False):
        if rises[a] <= 0.0 < rises[b]:
            return a, b
    return order[-2], order[-1]


class SubjectProfile:
    """One fitted subject's profile likelihood, each piece computed when first asked for and only
    once: the profile at each end of a parameter's search range (:meth:`reaches`), each
    parameter's interval (:meth:`interval`) and the subject's flag (:meth:`reason`).

    A flag needs only the ends: a parameter is unbounded where the profile stays within
    χ²₁(0.95)/2 of the minimum at the ends its declared range requires (both ends of a bounded
    range; the end of an unbounded side), one profile fit per end, at most two per parameter; the
    root findings of an interval run only where its ends are asked for (a subject row or a
    coverage), reusing the end's fit.  Every flag is the one the eager computation gave (the same
    end fits from the same starts); an interval's ends lie within the root-finding tolerance of
    the eager ones (found from the local quadratic model, :meth:`_local_root`)."""

    def __init__(self, model: CognitiveModel, data: Any, fit: MLEResult, n_starts: int = PROFILE_GRID_STARTS,
                 nodes: np.ndarray | None = None) -> None:
        self.model, self.data, self.fit, self.n_starts = model, data, fit, n_starts
        self.finite = all(math.isfinite(fit.params[q]) for q in model.parameters.names)
        self._nodes = None if nodes is None else np.asarray(nodes)  # :func:`best_nodes` where None
        self._ends: dict[tuple[int, int], tuple[float, np.ndarray | None] | None] = {}
        self._sides: dict[tuple[int, int], tuple[float, bool]] = {}
        self._intervals: dict[int, ProfileInterval] = {}
        self._local_model: LocalProfile | None = None
        self._local_done = False
        self.profile_fits = 0  # profile fits run so far (the cost: measured in benchmarks/bench_identification.py)

    def _param(self, j: int) -> Parameter:
        return self.model.parameters.parameters[j]

    def _nodes_of(self) -> np.ndarray:
        if self._nodes is None:
            self._nodes = best_nodes(self.model, self.data)
        return self._nodes

    def _warm0(self, j: int) -> np.ndarray | None:
        """The other parameters' estimate on the search scale (None for a one-parameter model)."""
        if len(self.model.parameters) == 1:
            return None
        theta = np.array([self.fit.params[q] for q in self.model.parameters.names], float)
        return np.delete(self.model.to_search(theta), j)

    def _geometry(self, j: int, side: int) -> tuple[float, float, float]:
        """(start, end, xtol) of one side of parameter ``j``'s interval on its search scale; ``end``
        lies :data:`OPEN_END_TOL` of the search range inside the range's end (where the interval is
        judged open, :meth:`reaches`)."""
        p = self._param(j)
        ends = p.search_bounds()
        width = ends[1] - ends[0]
        end = ends[1] - OPEN_END_TOL * width if side > 0 else ends[0] + OPEN_END_TOL * width
        return _search_coordinate(p, self.fit.params[p.name]), end, PROFILE_XTOL * width

    def _on_bound(self, j: int, side: int) -> bool:
        """Whether the estimate of parameter ``j`` lies within :data:`OPEN_END_TOL` of the end of its
        search range on ``side`` or on a declared bound there (:func:`at_bound`)."""
        p = self._param(j)
        start, end, _ = self._geometry(j, side)
        if (end - start) * side <= 0:
            return True
        lo, hi = search_ends(p)
        near = [b for b in ((p.upper, hi) if side > 0 else (p.lower, lo)) if math.isfinite(b)]
        return any(_near_bound(self.fit.params[p.name], b, p) for b in near)

    def _rise(self, j: int, u: float, warm: np.ndarray | None) -> tuple[float, np.ndarray | None]:
        """Profile NLL − NLL − χ²₁(0.95)/2 at search coordinate ``u`` of parameter ``j``, and where
        the other parameters' optimum lies."""
        self.profile_fits += 1
        nll, z = profile_nll(self.model, self.data, j, self._param(j).from_search(u), self.n_starts,
                             None if warm is None else _distinct_rows(np.atleast_2d(warm)), self._nodes_of())
        return nll - self.fit.nll - LR_HALF_CHI2, z

    def _end_rise(self, j: int, side: int) -> tuple[float, np.ndarray | None] | None:
        """The rise :data:`OPEN_END_TOL` inside the end of the search range on ``side`` (None where the
        estimate lies that near the end or on a declared bound there, :meth:`_on_bound`: it reaches
        it unevaluated)."""
        key = (j, side)
        if key not in self._ends:
            _, end, _ = self._geometry(j, side)
            warm0 = self._warm0(j)
            self._ends[key] = (None if self._on_bound(j, side)
                               else self._rise(j, end, None if warm0 is None else np.vstack([warm0, warm0])))
        return self._ends[key]

    def reaches(self, j: int, side: int) -> bool:
        """Whether parameter ``j``'s interval is open at the end of its search range on ``side`` (−1
        lower, +1 upper), by rule: the profile :data:`OPEN_END_TOL` of the search range inside that
        end stays within χ²₁(0.95)/2 of the minimum (or the estimate lies there or on a declared
        bound on that side)."""
        r = self._end_rise(j, side)
        return r is None or r[0] <= 0.0

    def _side(self, j: int, side: int) -> tuple[float, bool]:
        """(search-scale end, whether it is the end of the search range) of one side of the interval:
        the end where :meth:`reaches`, else the root of the rise between the estimate and the end
        (:meth:`_local_root`; :meth:`_brent_root` where there is no local model, :meth:`_local`)."""
        key = (j, side)
        if key not in self._sides:
            if self.reaches(j, side):
                ends = self._param(j).search_bounds()
                self._sides[key] = (ends[1] if side > 0 else ends[0], True)
            else:
                local = self._local()
                self._sides[key] = (self._brent_root(j, side) if local is None else self._local_root(j, side, local),
                                    False)
        return self._sides[key]

    def _local(self) -> LocalProfile | None:
        """The quadratic model at the estimate (:class:`~cogtestbed.inference.profile_root.LocalProfile`),
        computed once; None for a one-parameter model, for data under :data:`LOCAL_MIN_ELEMENTS` or
        where the Hessian is not positive definite."""
        if not self._local_done:
            self._local_done = True
            size = sum(np.asarray(a).size for a in self.model.kernel_arrays(self.data))
            if len(self.model.parameters) > 1 and size >= LOCAL_MIN_ELEMENTS:
                theta = np.array([self.fit.params[q] for q in self.model.parameters.names], float)
                self._local_model = LocalProfile.of(self.model, self.data, theta)
        return self._local_model

    def _local_rise(self, j: int, u: float, near: np.ndarray | None, local: LocalProfile) -> tuple[float, np.ndarray]:
        """The rise at search coordinate ``u`` from one local profile fit
        (:meth:`~cogtestbed.inference.profile_root.LocalProfile.fit_at`), refitted by the multi-start
        profile fit where a start-grid node at ``u`` lies lower (another basin)."""
        self.profile_fits += 1
        value = self._param(j).from_search(u)
        nll, z = local.fit_at(j, value, near)
        grid = self.model.start_grid()[self._nodes_of()].copy()
        grid[:, j] = value
        if float(np.min(self.model.nll_many(grid, self.data))) < nll:
            nll_grid, z_grid = profile_nll(self.model, self.data, j, value, self.n_starts, z[None, :], self._nodes_of())
            if nll_grid < nll and z_grid is not None:
                nll, z = nll_grid, z_grid
        return nll - self.fit.nll - LR_HALF_CHI2, z

    def _local_root(self, j: int, side: int, local: LocalProfile) -> float:
        """The root of the rise on ``side`` (:mod:`cogtestbed.inference.profile_root`): the
        Wald end and its quadratic correction first, then Brent's method on the tightest bracket of
        the points fitted, each profile fit warm-started from the nearest point already fitted;
        :meth:`_brent_root` where the Wald end falls outside the range or the profile's rise there
        is not within :data:`QUADRATIC_SPAN` of the quadratic model's."""
        from scipy.optimize import brentq

        start, end, xtol = self._geometry(j, side)
        at_end = self._end_rise(j, side)
        points: dict[float, tuple[float, np.ndarray | None]] = {start: (-LR_HALF_CHI2, self._warm0(j))}
        if at_end is not None:
            points[end] = at_end

        def rise(u: float) -> float:
            if u not in points:
                points[u] = self._local_rise(j, u, points[min(points, key=lambda v: abs(v - u))][1], local)
            return points[u][0]

        p = self._param(j)
        guess = local.wald_guess(j, side, start, lambda zj: _search_coordinate(p, local.natural(j, zj)), LR_HALF_CHI2)
        if guess is None or (guess - start) * (end - guess) <= 0:
            return self._brent_root(j, side)
        excess = rise(guess) + LR_HALF_CHI2
        if not QUADRATIC_SPAN[0] <= excess / LR_HALF_CHI2 <= QUADRATIC_SPAN[1]:
            return self._brent_root(j, side)  # far from quadratic (a ridge, a plateau): the earlier computation
        corrected = start + (guess - start) * math.sqrt(LR_HALF_CHI2 / excess)
        if (corrected - start) * (end - corrected) > 0:
            rise(corrected)
        a, b = _bracket({u: v[0] for u, v in points.items()}, start, side)
        return float(brentq(rise, min(a, b), max(a, b), xtol=xtol, rtol=1e-6, maxiter=50))

    def _brent_root(self, j: int, side: int) -> float:
        """The root of the rise on ``side`` by Brent's method on the whole range from the estimate to
        the end, each profile fit the multi-start one warm-started from the estimate and the previous
        point's optimum (the earlier computation)."""
        from scipy.optimize import brentq

        start, end, xtol = self._geometry(j, side)
        warm0 = self._warm0(j)
        at_end = self._end_rise(j, side)
        state: dict[str, np.ndarray | None] = {"warm": warm0}

        def rise(u: float) -> float:
            if u == start:
                return -LR_HALF_CHI2
            last = state["warm"]
            if u == end and last is warm0 and at_end is not None:  # Brent's first look at the end: the fit made
                value, state["warm"] = at_end
                return value
            value, state["warm"] = self._rise(j, u, None if warm0 is None
                                              else np.vstack([warm0, warm0 if last is None else last]))
            return value

        lo, hi = min(start, end), max(start, end)
        return float(brentq(rise, lo, hi, xtol=xtol, rtol=1e-6, maxiter=50))

    def interval(self, j: int) -> ProfileInterval:
        """Parameter ``j``'s likelihood-ratio 95 % interval (:func:`profile_interval`)."""
        if j not in self._intervals:
            p = self._param(j)
            lo, lo_end = self._side(j, -1)
            hi, hi_end = self._side(j, +1)
            self._intervals[j] = ProfileInterval(p.lower if lo_end and math.isfinite(p.lower) else p.from_search(lo),
                                                 p.upper if hi_end else p.from_search(hi), lo_end, hi_end)
        return self._intervals[j]

    def unbounded(self, j: int) -> bool:
        """Whether parameter ``j``'s interval is unbounded within its declared range
        (:meth:`ProfileInterval.unbounded`), from the ends alone."""
        p = self._param(j)
        if math.isinf(p.upper) and self.reaches(j, +1):
            return True
        if math.isinf(p.lower) and self.reaches(j, -1):
            return True
        return self.reaches(j, -1) and self.reaches(j, +1)

    def intervals(self, names: Sequence[str] | None = None) -> dict[str, ProfileInterval]:
        """The intervals of ``names`` (every parameter where None; empty where an estimate is NaN)."""
        if not self.finite:
            return {}
        wanted = self.model.parameters.names if names is None else names
        return {p.name: self.interval(j) for j, p in enumerate(self.model.parameters) if p.name in wanted}

    def reason(self) -> str | None:
        """The flag of the first parameter whose interval is unbounded within its declared range, else
        of the first whose interval is one-sided (open at one bound, :meth:`reaches`;
        :func:`interval_reason_of`; None where every one is bounded or an estimate is NaN)."""
        if not self.finite:
            return None
        for j, p in enumerate(self.model.parameters):
            if self.unbounded(j):
                return interval_reason_of(p, self.interval(j))
        for j, p in enumerate(self.model.parameters):
            if self.reaches(j, -1) or self.reaches(j, +1):
                return interval_reason_of(p, self.interval(j))
        return None


def profile_interval(model: CognitiveModel, data: Any, fit: MLEResult, j: int,
                     n_starts: int = PROFILE_GRID_STARTS, nodes: np.ndarray | None = None) -> ProfileInterval:
    """Parameter ``j``'s likelihood-ratio 95 % interval at ``fit`` (see the module docstring): each
    end the root of profile NLL − NLL − χ²₁(0.95)/2 between the estimate and the end of the search
    range (Brent's method), or that end where the profile stays within the threshold there.
    ``nodes``: the start-grid rows its profile fits may start from (:func:`best_nodes`; all where None)."""
    rows = np.arange(len(model.start_grid())) if nodes is None else nodes
    return SubjectProfile(model, data, fit, n_starts, rows).interval(j)


def profile_intervals(model: CognitiveModel, data: Any, fit: MLEResult,
                      n_starts: int = PROFILE_GRID_STARTS) -> dict[str, ProfileInterval]:
    """:func:`profile_interval` of every parameter (empty where the fit has a NaN estimate)."""
    return SubjectProfile(model, data, fit, n_starts).intervals()


def parameter_flag(p: Parameter, lower: float, upper: float) -> str | None:
    """The flag of ``p``'s reported interval [lower, upper] (:func:`profile_interval`: an end that
    reaches the search range is reported as the declared bound), None where it is bounded."""
    if math.isnan(lower) or math.isnan(upper):
        return None
    iv = ProfileInterval(lower, upper, lower <= p.lower, upper >= p.upper)
    return interval_reason_of(p, iv)


def interval_reason_of(p: Parameter, iv: ProfileInterval) -> str | None:
    """The flag of one parameter's interval, None where it is bounded within the declared range and
    open at neither of its ends (:meth:`ProfileInterval.one_sided`)."""
    if iv.one_sided(p):
        side, other = (("upper", f"at least {iv.lower:.6g}") if iv.reaches_upper
                       else ("lower", f"at most {iv.upper:.6g}"))
        return (f"{ONE_SIDED}: {p.name}'s likelihood-ratio 95% interval [{iv.lower:.6g}, {iv.upper:.6g}] is open at "
                f"its {side} bound: the data say {other}, not a value")
    if not iv.unbounded(p):
        return None
    if iv.reaches_lower and iv.reaches_upper:
        return (f"{UNBOUNDED}: {p.name}'s likelihood-ratio 95% interval covers its whole range "
                f"[{iv.lower:.6g}, {iv.upper:.6g}]")
    return (f"{UNBOUNDED}: {p.name}'s likelihood-ratio 95% interval [{iv.lower:.6g}, {iv.upper:.6g}] reaches "
            "the end of its search range where its declared range is unbounded")


def interval_reason(model: CognitiveModel, intervals: Mapping[str, ProfileInterval]) -> str | None:
    """The flag of the first parameter whose interval is unbounded within its declared range, else of
    the first whose interval is one-sided."""
    reasons = [interval_reason_of(p, intervals[p.name]) for p in model.parameters if p.name in intervals]
    flagged = [r for r in reasons if r is not None]
    unbounded = [r for r in flagged if r.startswith(UNBOUNDED)]
    first = unbounded or flagged
    return first[0] if first else None


def heading_to_a_bound(model: CognitiveModel, fit: MLEResult) -> bool:
    """Whether a fit sits at a bound of a parameter, or beyond the search range of a log-scale one
    (τ → 0): a search that stops there without a stationary point found the supremum at the bound,
    an estimate at a bound judged by its interval, not a failed fit."""
    for p in model.parameters:
        v = fit.params[p.name]
        lo, hi = search_ends(p)
        if bool(at_bound(np.array([v]), p)[0]) or (p.transform == "log" and not lo <= v <= hi):
            return True
    return False


#: Rounds of :func:`continued_fit` (each a fresh BFGS of :data:`~cogtestbed.inference.optim.MAX_ITER`
#: iterations from where the last stopped).
CONTINUE_ROUNDS = 20


def continued_fit(model: CognitiveModel, data: Any, fit: MLEResult) -> MLEResult:
    """A fit that stopped unconverged, continued from where it stopped until the search converges
    (at a stationary point, or at a bound of the search box where the likelihood still rises:
    α → 0, β → its cap on RW±'s ridge) or :data:`CONTINUE_ROUNDS` rounds pass; the continued fit
    where its NLL is no higher, else ``fit`` (a converged fit, one with a NaN estimate or one already
    at a bound, :func:`heading_to_a_bound`, as it is).
    A ridge the first search was still climbing is then judged by its interval, as an estimate at
    a bound is, not called a failed fit because the search ran out of iterations."""
    names = model.parameters.names
    if fit.converged or not all(math.isfinite(fit.params[q]) for q in names) or heading_to_a_bound(model, fit):
        return fit  # only a fit the flag would call failed is continued
    z = model.to_search(np.array([fit.params[q] for q in names], float))
    args = model.objective_args(data)
    value, converged = fit.nll, False
    for _ in range(CONTINUE_ROUNDS):
        z, value, converged = mle_driver(model._kernel())(np.ascontiguousarray(z[None, :]), args, MAX_ITER, GTOL,
                                                         FTOL, np.inf)
        z = np.asarray(z, float)
        if converged:
            break
    if not value <= fit.nll:
        return fit
    return model._result(model.to_natural(z), float(value), bool(converged), data)


def unidentified_reason(model: CognitiveModel, data: Any, fit: MLEResult, n_starts: int = PROFILE_GRID_STARTS,
                        intervals: Mapping[str, ProfileInterval] | None = None,
                        profile: SubjectProfile | None = None) -> str | None:
    """Why the data cannot pin one subject's fitted estimate: the fit failed (no convergence, away
    from every bound: :func:`heading_to_a_bound`), or
    a parameter's likelihood-ratio interval is unbounded within its declared range; None where
    every parameter is pinned.  A fit with NaN estimates (no valid answer) is left to the caller's
    own reason.  ``intervals``: the subject's :func:`profile_intervals`, where already computed;
    ``profile``: its :class:`SubjectProfile` (the ends alone decide; an interval is computed only for
    the reason's text of a flagged parameter)."""
    if not all(math.isfinite(fit.params[p.name]) for p in model.parameters):
        return None
    if not fit.converged and not heading_to_a_bound(model, fit):
        return (f"{FIT_FAILED}: the search did not converge (no stationary point; the likelihood is still changing "
                "there)")
    if intervals is not None:
        return interval_reason(model, intervals)
    return (SubjectProfile(model, data, fit, n_starts) if profile is None else profile).reason()


def data_digest(model: CognitiveModel, data: Any) -> bytes:
    """The bytes of one subject's kernel arrays (equal for subjects whose answers agree)."""
    return b"|".join(np.ascontiguousarray(a).tobytes() for a in model.kernel_arrays(data))


def shared_estimates(model: CognitiveModel, estimates: Mapping[Hashable, Sequence[float]],
                     data: Mapping[Hashable, Any]) -> dict[Hashable, str]:
    """The subjects whose estimate vector equals (to :data:`SHARED_RTOL`) that of another subject
    whose answers differ, each with the reason (subjects with the same answers share an estimate
    rightly)."""
    keys = [k for k, v in estimates.items() if np.all(np.isfinite(v))]
    out: dict[Hashable, str] = {}
    if len(keys) < 2:
        return out
    values = np.array([np.asarray(estimates[k], float) for k in keys])
    scale = np.maximum(np.abs(values), 1e-12)
    digest: dict[Hashable, bytes] = {}  # each subject's answers read once, however many groups it is in
    for i, key in enumerate(keys):
        same = np.all(np.abs(values - values[i]) <= SHARED_RTOL * scale, axis=1)
        group = [keys[m] for m in np.flatnonzero(same)]
        if len(group) < 2:
            continue
        for k in group:
            if k not in digest:
                digest[k] = data_digest(model, data[k])
        digests = {digest[k] for k in group}
        if len(digests) > 1:
            shown = ", ".join(f"{n} = {v:.6g}" for n, v in zip(model.parameters.names, values[i], strict=True))
            out[key] = (f"{FIT_FAILED}: shared exactly by {len(group)} subjects with different answers ({shown}): "
                        "the search stopped on a plateau of the likelihood, not at an estimate")
    return out


__all__ = ["FIT_FAILED", "LR_HALF_CHI2", "ONE_SIDED", "OPEN_END_TOL", "UNBOUNDED", "ProfileInterval", "SubjectProfile",
           "at_bound", "bounds_of", "continued_fit", "interval_reason", "parameter_flag", "profile_interval",
           "profile_intervals", "profile_nll", "shared_estimates", "unidentified_reason"]
