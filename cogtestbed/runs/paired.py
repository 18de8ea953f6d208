"""Two models on the same sessions, side by side: headline metrics and a paired test per metric.

Two LLMs run with the same seed play the same sessions (the same stimuli, items and orders), so
their answers pair unit by unit.  The unit is what the experiment's metrics result lists per
unit (:attr:`~cogtestbed.experiments.spec.MetricsSpec.paired_by`; by default the unit rows,
``per_subject`` by ``subject`` or ``per_run`` by ``run``; an experiment whose sessions repeat
the same items deterministically pairs finer, e.g. revealed belief per item and channel).  For
every headline metric listed in those rows the report gives both models' headline values, the
mean difference B − A over the matched units and the Wilcoxon signed-rank test of a zero median
difference (two-sided; Wilcoxon 1945; scipy's exact null distribution for small samples, the
normal approximation with ties otherwise).  Fewer than :data:`MIN_PAIRS` non-zero differences
give no test (``p_value`` None).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec

#: Non-zero paired differences below which no signed-rank test is reported.
MIN_PAIRS = 2
#: The id field of the default unit rows.
UNIT_IDS: dict[str, tuple[str, ...]] = {"per_subject": ("subject",), "per_run": ("run",)}


def unit_frame(result: Mapping[str, Any], key: str, ids: tuple[str, ...]) -> pd.DataFrame:
    """The per-unit rows ``result[key]`` as a frame indexed by ``ids`` (numeric columns only)."""
    rows = result.get(key) or []
    frame = pd.DataFrame([r for r in rows if all(i in r for i in ids)])
    if frame.empty:
        return frame
    frame = frame.set_index(list(ids))
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    return frame[numeric]


def paired_test(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Mean difference b − a, its count and the two-sided Wilcoxon signed-rank p-value."""
    d = np.asarray(b, float) - np.asarray(a, float)
    d = d[np.isfinite(d)]
    out: dict[str, Any] = {"n_pairs": int(d.size), "mean_difference": float(d.mean()) if d.size else None,
                           "test": "Wilcoxon signed-rank (two-sided)", "p_value": None}
    if np.count_nonzero(d) >= MIN_PAIRS:
        out["p_value"] = float(stats.wilcoxon(d, zero_method="wilcox").pvalue)
    elif d.size and not np.any(d):
        out["p_value"] = 1.0
    return out


def _flat(value: Any, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a headline value, keyed ``a.b``."""
    if isinstance(value, Mapping):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return {}
    return {prefix.rstrip("."): float(value)}


def paired_report(exp: ExperimentSpec, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """Both models' headline metrics and a paired test per headline metric (module docstring)."""
    if len(tables) != 2:
        raise InputError(f"a paired report compares two models, got {len(tables)}")
    (name_a, table_a), (name_b, table_b) = tables.items()
    res_a, res_b = exp.metrics(table_a), exp.metrics(table_b)
    key, ids = exp.metrics.paired_by or (exp.metrics.unit, UNIT_IDS[exp.metrics.unit])
    units_a, units_b = unit_frame(res_a, key, ids), unit_frame(res_b, key, ids)
    metrics: dict[str, Any] = {}
    for metric in exp.metrics.headline:
        head_a, head_b = _flat(res_a["metrics"].get(metric)), _flat(res_b["metrics"].get(metric))
        entry: dict[str, Any] = {name_a: head_a.get("") if "" in head_a else head_a,
                                 name_b: head_b.get("") if "" in head_b else head_b}
        if metric in units_a and metric in units_b:
            both = units_a[[metric]].merge(units_b[[metric]], left_index=True, right_index=True,
                                           suffixes=("_a", "_b")).dropna()
            entry.update(paired_test(both[f"{metric}_a"].to_numpy(), both[f"{metric}_b"].to_numpy()))
        else:
            entry["p_value"] = None
            entry["test"] = f"none: {metric} is not listed per {' × '.join(ids)}"
        metrics[metric] = entry
    return {"experiment": exp.name, "models": [name_a, name_b], "paired_by": {"rows": key, "ids": list(ids)},
            "metrics": metrics, "n_invalid": {name_a: res_a["n_invalid"], name_b: res_b["n_invalid"]},
            "flags": {name_a: res_a["flags"], name_b: res_b["flags"]}}


def format_report(report: Mapping[str, Any]) -> str:
    """One line per headline metric: each model named beside its own value (A's first, as ``models``
    lists them), the mean difference B − A and the p-value."""
    a, b = report["models"]
    lines = [f"{report['experiment']}: {a} vs {b}, paired by {' × '.join(report['paired_by']['ids'])}"]
    for metric, e in report["metrics"].items():
        def show(v: Any) -> str:
            return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else str(v)
        diff = e.get("mean_difference")
        lines.append(f"  {metric}: {a} {show(e[a])} vs {b} {show(e[b])}"
                     + (f"; mean difference {b} - {a} {diff:+.4g} over {e['n_pairs']} pairs"
                        if diff is not None else "")
                     + (f", p = {e['p_value']:.3g}" if e.get("p_value") is not None else ", no test"))
    return "\n".join(lines)
