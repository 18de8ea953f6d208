"""Tasks of the metric-level studies: metric validity, metric power, test size and test power.

They score *agents* (not models) with the experiment's published metrics function, on the same
task / seed / pool machinery as the model studies (:mod:`cogtestbed.studies.driver`).  One
task simulates ``runs`` runs of an agent setting — the units the metric is computed over:
CogBench's runs of one LLM where the experiment pools sessions, simulated subjects elsewhere.

Metric power tests the difference the way the experiment declares for the metric
(:meth:`~cogtestbed.experiments.spec.MetricsSpec.comparability`, :func:`difference_test`): a Welch t-test
on the per-unit values where the metrics result lists the metric per run/subject, a z-test
on the two pooled estimates with their standard errors (``{metric}_se``, or the 95 % half-width
``{metric}_ci`` / 1.96) where the metric is one pooled fit (CogBench's two-step, horizon and
probabilistic-reasoning regressions), or a permutation test of the two groups' mean per-unit statistic
where the metric is pooled but has an estimate on each unit's own rows (belief coherence's T1a and T3:
:func:`comparison_result`, :func:`permutation_p`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.studies.study_data import TaskFn, seed_of, simulate_runs, welch_p
from cogtestbed.studies.study_kinds import MetricPowerStudy, MetricStudy, MetricValidityStudy, StatTestStudy

#: z quantile of the 95 % intervals whose half-widths metrics functions report as ``{metric}_ci``.
Z95 = float(stats.norm.ppf(0.975))


#: Random splits of the permutation test of a difference (all splits, exactly, where they are fewer).
PERMUTATION_RESAMPLES = 1999


def score(spec: MetricStudy, exp: ExperimentSpec, params: Mapping[str, float], runs: int, seed: int,
          design: Any) -> dict[str, Any]:
    """The metrics result of ``runs`` simulated runs of the study's agent at ``params``."""
    trials = simulate_runs(exp, spec.agent, runs, seed, params, design, lapse=spec.lapse)
    return dict(exp.metrics(trials, **spec.metric_options))


def comparison_result(exp: ExperimentSpec, metric: str, trials: pd.DataFrame,
                      options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a comparison of ``metric`` between two groups reads of one group's ``trials``: where the
    experiment declares a per-unit statistic for it (:attr:`~cogtestbed.metrics_result.MetricComparison.unit_statistic`)
    the metric on each subject's own rows (``None`` where they do not define it) and their mean as the
    headline, computed alone (a fraction of the whole metrics' cost); else the whole metrics result."""
    how = exp.metrics.comparability(metric)
    opts = dict(options or {})
    if how.unit_statistic is None:
        return dict(exp.metrics(trials, **opts))
    by_unit = how.unit_statistic(trials, **opts)
    rows: list[dict[str, Any]] = [{"subject": int(s), metric: float(v) if math.isfinite(v) else None}
                                  for s, v in sorted(by_unit.items())]
    values = [float(r[metric]) for r in rows if r[metric] is not None]
    n_invalid = int((~trials["valid"].fillna(False).astype(bool)).sum()) if "valid" in trials.columns else 0
    return {"metrics": {metric: float(np.mean(values)) if values else None}, exp.metrics.unit: rows,
            "n_invalid": n_invalid, "flags": []}


def comparison_prefixes(exp: ExperimentSpec, metric: str, trials: pd.DataFrame, sizes: Sequence[int],
                        options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """:func:`comparison_result` of the first n units (subject ids below n) for each n of ``sizes``: per-unit
    statistics computed once and cut, else the metrics spec's own prefixes."""
    if exp.metrics.comparability(metric).unit_statistic is None:
        return [dict(r) for r in exp.metrics.on_prefixes(trials, sizes, **dict(options or {}))]
    whole = comparison_result(exp, metric, trials, options)
    unit = exp.metrics.unit
    out = []
    for n in sizes:
        rows = [r for r in whole[unit] if r["subject"] < n]
        values = [float(r[metric]) for r in rows if r[metric] is not None]
        out.append({**whole, "metrics": {metric: float(np.mean(values)) if values else None}, unit: rows})
    return out


def permutation_p(a: np.ndarray, b: np.ndarray, resamples: int = PERMUTATION_RESAMPLES, seed: int = 0) -> float:
    """Two-sided permutation p-value of mean(b) − mean(a), the units exchanged between the two groups
    (:func:`scipy.stats.permutation_test`, every split where there are at most ``resamples``); NaN with
    fewer than 2 units in a group.  Exact at level α when the groups' units are exchangeable under the
    null (Good 2005, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, §3)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        return float("nan")

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    res = stats.permutation_test((a, b), diff, permutation_type="independent", vectorized=True,
                                 n_resamples=resamples, alternative="two-sided",
                                 random_state=np.random.default_rng(seed))
    return float(res.pvalue)


def at_value(spec: MetricStudy, exp: ExperimentSpec, params: Mapping[str, float], design: Any,
             value: Any) -> tuple[dict[str, float], Any]:
    """(agent parameters, design) with the swept ``spec.parameter`` at ``value`` (``None``: no
    sweep): an agent parameter, or else a field of the design."""
    if value is None or spec.parameter is None:
        return dict(params), design
    if spec.parameter in exp.agent(spec.agent).parameters.names:
        return {**params, spec.parameter: float(value)}, design
    return dict(params), type(design)(**{**design.model_dump(), spec.parameter: value})


def metric_value(result: Mapping[str, Any], metric: str) -> float:
    """The headline value of ``metric`` (a number; NaN when the metric could not be computed)."""
    value = result["metrics"].get(metric, float("nan"))
    if isinstance(value, Mapping):
        raise InputError(f"metric {metric!r} is a nested mapping, not a number: study one of its entries")
    return float(value) if value is not None else float("nan")


def unit_values(result: Mapping[str, Any], metric: str, unit: str) -> np.ndarray:
    """The metric per run/subject (empty when the metrics result does not list it per unit)."""
    rows = [r for r in result.get(unit) or [] if metric in r and r[metric] is not None]
    if any(isinstance(r[metric], Mapping) for r in rows):
        raise InputError(f"metric {metric!r} is a nested mapping for each unit, not a number: study a metric "
                         "with one value per unit")
    return np.array([float(r[metric]) for r in rows], dtype=float)


def pooled_se(result: Mapping[str, Any], metric: str) -> float:
    """Standard error of a pooled metric (``{metric}_se``, or ``{metric}_ci`` / 1.96); NaN if none,
    or if the metrics result holds it as null (not computable, with its reason in ``null_reasons``:
    e.g. horizon's interval from 10 runs), so the difference is untestable, not a crash."""
    m = result["metrics"]
    for key, scale in ((f"{metric}_se", 1.0), (f"{metric}_ci", Z95)):
        if key in m:
            return float("nan") if m[key] is None else float(m[key]) / scale
    return float("nan")


def difference_test(a: Mapping[str, Any], b: Mapping[str, Any], metric: str, unit: str,
                    test: str = "welch") -> tuple[str, float]:
    """(test name, two-sided p-value) for a difference in ``metric`` between two metrics results: the
    declared ``test`` (:class:`~cogtestbed.metrics_result.MetricComparison`), ``permutation`` on the
    per-unit values of :func:`comparison_result`, else Welch on per-unit values where both list them, else
    the z-test on the two pooled estimates."""
    va, vb = unit_values(a, metric, unit), unit_values(b, metric, unit)
    if test == "permutation":
        return "permutation test of the per-unit means", permutation_p(va, vb)
    if va.size and vb.size:
        return "Welch t-test on per-unit values", welch_p(va, vb)
    has_se = any(f"{metric}_{s}" in a["metrics"] for s in ("se", "ci"))
    if not has_se:
        raise InputError(f"metric {metric!r} has neither per-{unit[4:]} values nor a standard error: "
                         "no test of a difference")
    se = math.hypot(pooled_se(a, metric), pooled_se(b, metric))
    diff = metric_value(b, metric) - metric_value(a, metric)
    p = float(2 * stats.norm.sf(abs(diff / se))) if np.isfinite(se) and se > 0 else float("nan")
    return "z-test on two pooled estimates", p


def prefix_differences(results_a: Sequence[Mapping[str, Any]], results_b: Sequence[Mapping[str, Any]], metric: str,
                       unit: str, test: str = "welch") -> tuple[np.ndarray, np.ndarray]:
    """(two-sided p-value, difference b − a) of :func:`difference_test` for each pair of metrics
    results of nested prefixes of two tables (the last pair: the whole tables), as a sequential plan
    tests every look of a simulated study.  Per-unit values are per unit, so a prefix has them exactly
    when the whole table does: where either whole table has none, every prefix takes the z-test on
    two pooled estimates, computed for all prefixes at once; else each prefix its own Welch test."""
    if len(results_a) != len(results_b):
        raise InputError(f"{len(results_a)} prefixes of the first table, {len(results_b)} of the second")
    m = len(results_a)
    diff = np.array([metric_value(b, metric) - metric_value(a, metric)
                     for a, b in zip(results_a, results_b, strict=True)], dtype=float)
    if m == 0:
        return np.zeros(0), diff
    if test == "permutation" or (unit_values(results_a[-1], metric, unit).size
                                 and unit_values(results_b[-1], metric, unit).size):
        return np.array([difference_test(a, b, metric, unit, test)[1] for a, b in zip(results_a, results_b,
                                                                                     strict=True)]), diff
    for r in (*results_a, *results_b):
        if not any(f"{metric}_{s}" in r["metrics"] for s in ("se", "ci")):
            difference_test(r, r, metric, unit)  # raises: neither per-unit values nor a standard error
    se = np.hypot([pooled_se(a, metric) for a in results_a], [pooled_se(b, metric) for b in results_b])
    with np.errstate(all="ignore"):
        p = np.where(np.isfinite(se) & (se > 0), 2 * stats.norm.sf(np.abs(diff / se)), np.nan)
    return p, diff


#: Subjects a probe of an experiment's metrics simulates (the fewest every metrics function computes on).
PROBE_SUBJECTS = 3


def probe_metrics(exp: ExperimentSpec, seed: int = 0) -> Any:
    """The metrics of :data:`PROBE_SUBJECTS` simulated subjects of ``exp``'s first declared agent (its default
    design, the metrics' smoke options): what a metrics function returns is known only by running it."""
    from cogtestbed.simulation import simulate

    table = simulate(exp, exp.declared_agents[0], PROBE_SUBJECTS, seed, design=exp.design_cls())
    return exp.metrics(table, **dict(exp.metrics.smoke_options))


def probe_tests(exp: ExperimentSpec, seed: int = 0) -> list[str]:
    """The statistical tests a test target of ``exp`` may name (``--test KEY``): the tests its metrics declare
    (:attr:`MetricsSpec.tests <cogtestbed.experiments.spec.MetricsSpec.tests>`), then each other headline metric
    whose value in :func:`probe_metrics` is a test (a mapping with ``p_value`` or ``reject``: :func:`test_outcome`)
    or is null there (too few subjects to tell: kept, the study decides)."""
    declared = list(exp.metrics.tests)
    rest = [m for m in exp.metrics.headline if m not in declared]
    if not rest:
        return declared
    result = probe_metrics(exp, seed)
    values, nulls = {**result, **result["metrics"]}, set(result.get("null_reasons") or {})
    return declared + [m for m in rest if m in nulls or _is_test(values.get(m))]


def _is_test(value: Any) -> bool:
    """Whether a metrics result's ``value`` is a statistical test: a mapping with ``p_value`` or ``reject``."""
    return isinstance(value, Mapping) and bool({"reject", "p_value"} & set(value))


#: :func:`probe_tests` made in this process, by experiment name and metrics function.
_PROBED_TESTS: dict[tuple[str, int], list[str]] = {}


def named_tests(exp: ExperimentSpec) -> list[str]:
    """:func:`probe_tests` of ``exp``, probed once a process."""
    key = (exp.name, id(exp.metrics.fn))
    if key not in _PROBED_TESTS:
        _PROBED_TESTS[key] = probe_tests(exp)
    return _PROBED_TESTS[key]


def test_outcome(result: Mapping[str, Any], test: str, level: float) -> tuple[bool, float]:
    """(rejected, p-value) of the statistical test ``test`` the metrics result reports.

    ``test`` names a key of the result (or of its ``metrics``) whose value carries ``reject``
    and/or ``p_value``; without ``reject`` the test rejects when p < ``level``.  A test the result
    holds as null (no data, or answers that do not identify it: ``null_reasons``) is untestable:
    not rejected, p-value NaN (as a metric-power study's untestable difference).
    """
    value = result.get(test, result["metrics"].get(test))
    if value is None and test in (result.get("null_reasons") or {}):
        return False, float("nan")
    if not _is_test(value):
        raise InputError(f"{test!r} is not a statistical test of the metrics result "
                         "(a mapping with 'p_value' or 'reject')")
    p = float(value.get("p_value", float("nan")))
    reject = bool(value["reject"]) if "reject" in value else bool(p < level)
    return reject, p


def task_metric_validity(spec: MetricValidityStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
                         rng: np.random.Generator, sim_seq: np.random.SeedSequence,
                         fit_seed: int) -> pd.DataFrame:
    assert spec.parameter is not None
    value = float(task["value"])
    params, design = at_value(spec, exp, spec.params, design, task["value"])
    result = score(spec, exp, params, int(task["runs"]), seed_of(sim_seq), design)
    per_unit = unit_values(result, spec.metric, exp.metrics.unit)
    return pd.DataFrame([{"parameter": spec.parameter, "value": value, "metric": spec.metric,
                          "estimate": metric_value(result, spec.metric),
                          "unit_sd": float(per_unit.std(ddof=1)) if per_unit.size > 1 else float("nan"),
                          "n_flags": len(result.get("flags", result["metrics"].get("flags", [])) or [])}])


def task_metric_power(spec: MetricPowerStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
                      rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    seq_a, seq_b = sim_seq.spawn(2)
    runs = int(task["runs"])
    value = task.get("value")
    base, design = at_value(spec, exp, spec.params, design, value)
    a, b = (comparison_result(exp, spec.metric, simulate_runs(exp, spec.agent, runs, seed_of(seq),
                                                              {**base, **setting}, design, lapse=spec.lapse),
                              spec.metric_options)
            for seq, setting in ((seq_a, spec.compare[0]), (seq_b, spec.compare[1])))
    test, p = difference_test(a, b, spec.metric, exp.metrics.unit, exp.metrics.comparability(spec.metric).test)
    ea, eb = metric_value(a, spec.metric), metric_value(b, spec.metric)
    return pd.DataFrame([{"metric": spec.metric, **_swept(spec, value), "estimate_a": ea, "estimate_b": eb,
                          "difference": eb - ea, "p_value": p, "detected": bool(p < spec.level), "test": test}])


def _swept(spec: MetricStudy, value: Any) -> dict[str, Any]:
    """The ``parameter`` / ``value`` columns of a sweep's row (NaN value: no sweep)."""
    return {"parameter": spec.parameter if value is not None else None,
            "value": float("nan") if value is None else float(value)}


def task_test(spec: StatTestStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
              rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    value = task.get("value")
    params, design = at_value(spec, exp, spec.params, design, value)
    if spec.test not in exp.metrics.tests:
        result = score(spec, exp, params, int(task["runs"]), seed_of(sim_seq), design)
    else:  # the test computed alone: the same entry as the full metrics' (same rules), a fraction of the cost
        trials = simulate_runs(exp, spec.agent, int(task["runs"]), seed_of(sim_seq), params, design,
                               lapse=spec.lapse)
        result = exp.metrics.test_result(spec.test, trials, **spec.metric_options)
    reject, p = test_outcome(result, spec.test, spec.level)
    return pd.DataFrame([{"test": spec.test, **_swept(spec, value), "p_value": p, "rejected": reject}])


METRIC_TASKS: dict[str, TaskFn] = {"metric-validity": task_metric_validity, "metric-power": task_metric_power,
                                   "test-size": task_test, "test-power": task_test}
