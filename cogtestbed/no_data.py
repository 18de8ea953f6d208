"""No data, no number: what every experiment's metrics report where they have nothing to go on.

:class:`~cogtestbed.experiments.spec.MetricsSpec` calls these around an experiment's metrics
function, so the rule holds for every experiment alike:

* a table without one valid answer (or without rows) is not handed to the metrics function at all:
  :func:`no_data_result` reports every headline metric as ``null``, with the reason in
  ``null_reasons`` and a flag in ``flags`` (a 0 would read as a finding: "BCS 0" is a real result);
* a headline metric the function could not compute (NaN or ±inf: no valid input for that metric,
  a zero variance) is reported as ``null`` with a reason and a flag (:func:`null_nonfinite`), never
  as a non-JSON ``NaN`` / ``Infinity``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd


def valid_rows(trials: pd.DataFrame) -> int:
    """How many rows hold a valid answer (``valid`` True; a missing ``valid`` counts as invalid)."""
    if "valid" not in trials.columns or trials.empty:
        return 0
    return int(trials["valid"].fillna(False).to_numpy(dtype=bool).sum())


def no_data_result(trials: pd.DataFrame, headline: tuple[str, ...], unit: str) -> dict[str, Any]:
    """The metrics result of a table without one valid answer: every headline ``null``."""
    n = len(trials)
    reason = ("the table has no rows" if n == 0 else
              f"no valid answer: all {n} row{'s' * (n != 1)} of the table are invalid")
    return {"metrics": {k: None for k in headline}, unit: [], "n_invalid": n,
            "null_reasons": {k: reason for k in headline},
            "flags": [f"no data, no number: {reason}; every metric is null"]}


def _is_bad(value: Any) -> bool:
    return (isinstance(value, (float, np.floating)) and not math.isfinite(float(value)))


def _nulled(value: Any) -> tuple[Any, bool]:
    """``value`` with its non-finite number leaves replaced by None, and whether any was."""
    if isinstance(value, Mapping):
        out, changed = {}, False
        for k, v in value.items():
            out[k], c = _nulled(v)
            changed |= c
        return (out if changed else value), changed
    return (None, True) if _is_bad(value) else (value, False)


def null_nonfinite(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with every non-finite headline value (``result["metrics"]``) made ``null``, each
    named in ``null_reasons`` and flagged once."""
    metrics = result.get("metrics")
    if not isinstance(metrics, Mapping):
        return result
    nulled = sorted(k for k, v in metrics.items() if _nulled(v)[1])
    if not nulled:
        return result
    reasons: dict[str, str] = dict(result.get("null_reasons") or {})
    for key in nulled:
        reasons.setdefault(key, "not computable from this table (no valid input for it, or a zero "
                                "variance): the value was NaN or infinite")
    fixed = {k: (_nulled(v)[0] if k in nulled else v) for k, v in metrics.items()}
    flags = [*(result.get("flags") or []), f"not computable, reported as null: {', '.join(nulled)} "
             "(see null_reasons)"]
    return {**result, "metrics": fixed, "null_reasons": reasons, "flags": flags}


def json_safe(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, ±inf) as ``None``: JSON has no spelling for them
    (``NaN`` / ``Infinity`` are not JSON), so a file or line the tools write stays readable everywhere."""
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    if isinstance(obj, Mapping):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj
