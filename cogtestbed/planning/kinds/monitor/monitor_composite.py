"""The composite null of a one-LLM monitor: the per-subject MLE's null mean over a declared nuisance region.

A per-subject MLE of a contrast is biased at a finite design, and its bias depends on the LLM's other
parameters (for RW± optimism: the null mean of the α⁺ − α⁻ estimate of an LLM with α⁺ = α⁻ = α runs from
about −0.10 to +0.03 as α and β vary).  A null "mean 0 ± the bias at the plan's population" then holds only
for LLMs like that population.  The composite null instead declares a **nuisance region** (the ranges of the
null model's parameters an LLM may show, :data:`REGIONS`), measures the statistic's null mean with its MC SE
at every point of a grid over it (:func:`composite_null`), and takes the interval

    [min_k (mean_k − margin · SE_k), max_k (mean_k + margin · SE_k)]

as the null interval of means.  The betting e-process of :mod:`~cogtestbed.planning.kinds.monitor.eprocess`
tests "the mean lies in the interval": each bet faces the end on its side (the planned bet, in the effect's
direction, the upper end for a positive effect), so it is a supermartingale for every mean inside.

**The assumption validity needs**: at every point of the region the statistic's null mean lies inside the
interval (the grid's interpolation error and the MC error are covered by the margin).  Subjects of one LLM
at different points of the region are covered too: each subject's conditional mean lies in the interval,
which is all the supermartingale needs.  An LLM outside the region is not covered (it is stated in the plan).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: The declared nuisance region per (model, effect): the null model's parameters' ranges an LLM is taken to show.
REGIONS: Mapping[tuple[str, str], Mapping[str, tuple[float, float]]] = {
    ("rw-pm", "optimism_bias"): {"alpha": (0.05, 0.95), "beta": (1.0, 30.0)},
}
#: The null model whose parameters span the region (the contrast at its null value).
NULL_MODELS: Mapping[tuple[str, str], str] = {("rw-pm", "optimism_bias"): "rw"}
#: The choosing grid: points per axis (a unit parameter linearly spaced, a positive one log-spaced).
GRID_POINTS = (4, 3)
#: The interval is widened by this many MC SEs of each point's mean (MC error and grid interpolation).
MARGIN_SE = 2.0
#: Simulated subjects per grid point when a plan measures the interval.
SUBJECTS_PER_POINT = 200


def region_of(model: str, effect: str) -> dict[str, tuple[float, float]]:
    """The declared nuisance region of ``model``'s contrast ``effect``, or one line saying none is declared (no
    composite null, so no one-LLM monitor valid beyond the simulated population)."""
    try:
        return dict(REGIONS[(model, effect)])
    except KeyError:
        raise InputError(f"no nuisance region is declared for {model} {effect}: a one-LLM monitor would be valid "
                         "only at the plan's simulated population, so it is not offered") from None


def has_region(spec: Any) -> bool:
    """Whether ``spec``'s model and effect have a declared nuisance region (:data:`REGIONS`)."""
    from cogtestbed.registry import get_experiment

    model = get_experiment(spec.experiment).model(spec.models[0])
    return (model.name, spec.effect) in REGIONS


def grid(region: Mapping[str, tuple[float, float]], points: tuple[int, ...] = GRID_POINTS,
         offset: bool = False) -> list[dict[str, float]]:
    """Points over ``region`` (first axis linear, the rest log-spaced), ``points`` per axis; ``offset``: the
    midpoints between them plus the region's corners (a grid disjoint from the choosing one)."""
    axes = []
    for (name, (lo, hi)), k in zip(region.items(), points, strict=True):
        space = np.linspace if lo <= 0 or name == next(iter(region)) else np.geomspace
        nodes = space(lo, hi, k)
        if offset:
            mid = (nodes[:-1] + nodes[1:]) / 2 if space is np.linspace else np.sqrt(nodes[:-1] * nodes[1:])
            nodes = mid
        axes.append((name, nodes))
    mesh = np.meshgrid(*[a for _, a in axes], indexing="ij")
    out = [dict(zip([n for n, _ in axes], map(float, p), strict=True)) for p in zip(*[m.ravel() for m in mesh],
                                                                                    strict=True)]
    if offset:
        corners = np.meshgrid(*[np.array(r) for r in region.values()], indexing="ij")
        out += [dict(zip(region, map(float, p), strict=True)) for p in zip(*[m.ravel() for m in corners],
                                                                           strict=True)]
    return out


def point_pool(spec: Any, trials: int | None, runs: int, n: int, seed: int, point: Mapping[str, float]) -> np.ndarray:
    """``n`` simulated subjects' statistic (the per-subject MLE of ``spec.effect`` less its null value, NaN: no
    valid trial) with every subject at the null model's parameters ``point``."""
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    null = exp.model(NULL_MODELS[(model.name, spec.effect)])
    kernel = null.kernel_theta(np.array([float(point[p]) for p in null.parameters.names]))
    true = {name: np.full(n, float(kernel[i])) for i, name in enumerate(model.parameters.names)}
    design = design_for_trials(exp, trials, spec.design)
    table = simulate_model(spec, exp, model.name, true, n, seed_of(np.random.SeedSequence(seed)), design, runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return subject_contrasts(spec, model, table, n,
                                 one_sample_null(spec.model_copy(update={"effect_size": 0.0}), model))


def composite_null(spec: Any, trials: int | None, runs: int, seed: int, n: int = SUBJECTS_PER_POINT,
                   margin: float = MARGIN_SE, points: tuple[int, ...] = GRID_POINTS) -> dict[str, Any]:
    """The composite null interval of ``spec``'s one-LLM statistic over its declared region (:func:`region_of`):
    the null mean and MC SE at each point of :func:`grid` (``n`` subjects each, seeds of ``seed``), and the
    interval of the means widened by ``margin`` SEs.  Returns ``region``, ``points`` (each with ``mean``,
    ``se``), ``interval`` ``[lo, hi]``, ``margin_se``."""
    from cogtestbed.registry import get_experiment

    model = get_experiment(spec.experiment).model(spec.models[0])
    region = region_of(model.name, spec.effect)
    rows = []
    for k, point in enumerate(grid(region, points)):
        x = point_pool(spec, trials, runs, n, int(np.random.SeedSequence([seed, 94, k]).generate_state(1)[0] >> 1),
                       point)
        x = x[np.isfinite(x)]
        if x.size < 2:
            raise InputError(f"no valid estimates at the nuisance point {point}: the composite null is not measured")
        rows.append({**point, "mean": float(x.mean()), "se": float(x.std(ddof=1) / math.sqrt(x.size))})
    lo = min(r["mean"] - margin * r["se"] for r in rows)
    hi = max(r["mean"] + margin * r["se"] for r in rows)
    return {"region": {k: list(v) for k, v in region.items()}, "points": rows, "interval": [lo, hi],
            "margin_se": margin, "subjects_per_point": n, "null_model": NULL_MODELS[(model.name, spec.effect)]}


def center_width(interval: Any) -> tuple[float, float]:
    """The null interval ``[lo, hi]`` as its center and half-width (the e-process's ``m ± halfwidth``)."""
    lo, hi = (float(v) for v in interval)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise InputError(f"a null interval must be two finite numbers lo <= hi, got {interval!r}")
    return (lo + hi) / 2, (hi - lo) / 2


__all__ = ["GRID_POINTS", "MARGIN_SE", "NULL_MODELS", "REGIONS", "SUBJECTS_PER_POINT", "center_width",
           "composite_null", "grid", "has_region", "point_pool", "region_of"]
