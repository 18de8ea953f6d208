"""A sequential run's looks at its data (``run --plan`` of a plan with ``--looks``): at each look the
statistic the plan simulated is computed on the units finished so far (:func:`look_statistic`: the
one-sample t-test on per-subject MLEs of the contrast, the Welch test of a metric difference, the
test a metrics function reports) and compared with the plan's bounds (:func:`evaluate_look`).
The run folder keeps them in :data:`LOOKS_FILE` beside the plan's design in :data:`SEQUENTIAL_FILE`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.sequential.seqpaths import Boundaries, first_units, z_from_p

#: A run's looks, one JSON line each, in its folder.
LOOKS_FILE = "looks.jsonl"
#: The plan's sequential design, as the run executes it, in its folder.
SEQUENTIAL_FILE = "sequential.json"


def look_statistic(exp: Any, design: Mapping[str, Any], table: Any, units: int) -> dict[str, Any]:
    """(Z, estimate, p-value) of the plan's test on the first ``units`` subjects of a run's table: the
    same fitter and test the plan simulated (``design``: the plan's ``run.sequential`` section).  A
    metric difference between two LLMs takes ``table`` as the pair (first LLM's, second LLM's)."""
    from cogtestbed.studies.metric_studies import test_outcome

    stat = design["statistic"]
    if stat["kind"] == "metric-power":
        return pair_statistic(exp, stat, table, units)
    part = first_units(table, units)
    if stat["kind"] == "power":
        return _model_statistic(exp, stat, part, units)
    if stat["kind"] in ("test-size", "test-power"):
        result = exp.metrics.test_result(stat["test"], part, **dict(stat.get("metric_options") or {}))
        _, p = test_outcome(result, stat["test"], float(design["level"]))
        if not math.isfinite(p):
            return {**_no_statistic(f"{stat['test']} has no p-value on the first {units} subjects"),
                    "subjects_fitted": int(part["subject"].nunique())}
        return {"statistic": z_from_p(p, 0.0, signed=False), "estimate": p, "p_value": p,
                "subjects_fitted": int(part["subject"].nunique())}
    raise InputError(f"a run executes the looks of a model-effect, metric-difference or test plan, not {stat['kind']}")


def _model_statistic(exp: Any, stat: Mapping[str, Any], part: Any, units: int) -> dict[str, Any]:
    """The one-sample t-test on per-subject MLEs of the contrast (a model-effect plan's look), each
    searched for as the plan simulated it (``statistic.fit``:
    :func:`~cogtestbed.planning.kinds.sequential.seqfit.fit_of`),
    or the amortised estimate the plan trained
    (:func:`~cogtestbed.planning.kinds.sequential.seqamortised.statistic_of`: on
    the test's scale less the plan's null already)."""
    from cogtestbed.inference.base import with_lapse
    from cogtestbed.planning.kinds.sequential.seqamortised import AmortisedFit, statistic_of

    model = exp.model(stat["model"])
    if not part["valid"].any():  # nothing to fit: no evidence (Z taken as 0 by the rule)
        return {"statistic": None, "estimate": None, "p_value": None, "subjects_fitted": 0,
                "reason": f"no valid trial among the first {units} subjects"}
    how = statistic_of(stat)
    fitted = with_lapse(model, stat.get("lapse_fit"))
    if isinstance(how, AmortisedFit):
        est = how.estimates(fitted, part)
        amortised = np.asarray([est[k] for k in sorted(est, key=str)], float)
        return _t_statistic(amortised[np.isfinite(amortised)], units)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = how.fitter(fitted).fit_mle(part).sort_values("subject", kind="stable")
    values = np.asarray(model.contrast(stat["effect"], {p: fits[p].to_numpy(float)
                                                        for p in model.parameters.names}), float)
    # a plan written before the one-sample null was recorded tested the natural-scale contrast against 0
    if stat.get("scale", "natural") == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(values)
    values = values - float(stat.get("null") or 0.0)
    return _t_statistic(values[np.isfinite(values)], units)


def _t_statistic(values: np.ndarray, units: int) -> dict[str, Any]:
    """The one-sample t-test on the per-subject contrasts that exist (a subject without an estimate,
    e.g. no valid trial, is left out, as the plan's simulation leaves it out: :func:`seqsim.prefix_z`);
    fewer than 2, or no spread: a null statistic with its reason (the rule then takes Z as 0)."""
    est = float(np.mean(values)) if values.size else None
    if values.size < 2:
        return {**_no_statistic(f"{values.size} of the first {units} subjects have an estimate; the t-test needs 2"),
                "estimate": est, "subjects_fitted": int(values.size)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_1samp(values, 0.0).pvalue)
    if not math.isfinite(p):
        return {**_no_statistic(f"the {values.size} subjects' estimates do not vary: the t-test has no p-value"),
                "estimate": est, "subjects_fitted": int(values.size)}
    return {"statistic": z_from_p(p, float(est or 0.0), signed=True), "estimate": est, "p_value": p,
            "subjects_fitted": int(values.size)}


def pair_statistic(exp: Any, stat: Mapping[str, Any], tables: Sequence[Any], units: int) -> dict[str, Any]:
    """A metric difference between two LLMs at a look: the metric on each LLM's first ``units``
    sessions and the fixed plan's difference test (:func:`difference_test`: Welch on per-run values,
    else the z-test of two pooled estimates); the estimate is second LLM − first, as the plan's
    ``--compare A B`` is B − A.  No metric for an LLM, or no p-value: a null statistic with its reason."""
    from cogtestbed.studies.metric_studies import comparison_result, difference_test, metric_value

    options = dict(stat.get("metric_options") or {})
    metric = stat["metric"]
    parts = [first_units(t, units) for t in tables]
    values = []
    for i, part in enumerate(parts):
        if not part["valid"].any():
            return _no_statistic(f"no valid trial among LLM {i + 1}'s first {units} sessions")
        values.append(comparison_result(exp, metric, part, options))
    a, b = values
    va, vb = metric_value(a, metric), metric_value(b, metric)
    out = {"value_a": va if math.isfinite(va) else None, "value_b": vb if math.isfinite(vb) else None}
    if not (math.isfinite(va) and math.isfinite(vb)):
        which = " and ".join(f"LLM {i + 1}" for i, v in enumerate((va, vb)) if not math.isfinite(v))
        return {**_no_statistic(f"{metric} is null for {which} on the first {units} sessions"), **out}
    _, p = difference_test(a, b, metric, exp.metrics.unit, exp.metrics.comparability(metric).test)
    if not math.isfinite(p):
        return {**_no_statistic(f"the difference test of {metric} has no p-value (zero standard error)"), **out,
                "estimate": vb - va}
    return {"statistic": z_from_p(p, 0.0, signed=False), "estimate": vb - va, "p_value": p,
            "subjects_fitted": units, **out}


def _no_statistic(reason: str) -> dict[str, Any]:
    return {"statistic": None, "estimate": None, "p_value": None, "subjects_fitted": 0, "reason": reason}


def evaluate_look(exp: Any, design: Mapping[str, Any], table: Any, k: int) -> dict[str, Any]:
    """Look ``k`` (0-based) of a run: its statistic, bounds and decision."""
    bounds = Boundaries.from_dict(design)
    units = bounds.sizes[k]
    out = {k_: (None if isinstance(v, float) and not math.isfinite(v) else v)
           for k_, v in look_statistic(exp, design, table, units).items()}
    z = out["statistic"] if out["statistic"] is not None else 0.0
    decision = bounds.decide(k, z, float(design.get("direction", 0.0)))
    return {"look": k + 1, "units": units, **out, "efficacy": bounds.efficacy[k],
            "futility": None if bounds.futility is None else bounds.futility[k], "decision": decision}
