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

from cogtestbed.errors import DataError


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


# ----------------------------------------------------------------------------- degenerate answers
#: Fewest distinct valid answers from which a subject's (or a table's) model is identified: answers
#: without variation (SmolLM2 answering "100" to every collider query, an agent that always picks
#: the left arm) fit any parameters whose predictions sit at that answer, so the model's parameters,
#: and the metrics estimated from them, are not identified.  A named default; no paper states it.
MIN_DISTINCT_ANSWERS = 2
#: Start of every flag of :func:`degenerate_reason` (what a reader greps for).
DEGENERATE = "degenerate answers"


def _said(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, (int, float, np.integer, np.floating)) else repr(value)


def degenerate_reason(values: Any, min_distinct: int = MIN_DISTINCT_ANSWERS, scale: float = 1.0,
                      unit: str = "") -> str | None:
    """Why the valid answers ``values`` identify no model (fewer than ``min_distinct`` distinct
    values), or ``None``.  ``scale`` multiplies a number as it is shown (the collider's 0–1 answers
    on the 0–100 scale the subject used), ``unit`` follows it (``" (0–100 scale)"``)."""
    arr = np.asarray(values, dtype=np.float64 if _numeric(values) else object).ravel()
    distinct = pd.unique(arr)
    if distinct.size >= min_distinct:
        return None
    n = arr.size
    if distinct.size == 0:
        said = "no valid answer"
    elif distinct.size == 1:
        shown = _said(distinct[0] * scale) if scale != 1.0 else _said(distinct[0])
        said = f"all {n} valid answers are {shown}{unit}"
    else:
        said = f"{n} valid answers take only {distinct.size} distinct values (fewer than {min_distinct})"
    return f"{DEGENERATE}: {said}; a model of them is not identified (its parameters and fit are null)"


def _numeric(values: Any) -> bool:
    try:
        np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def valid_answers(trials: pd.DataFrame) -> pd.Series:
    """The ``action`` of every row holding a valid answer (what a subject answered)."""
    if "valid" not in trials.columns or "action" not in trials.columns:
        return pd.Series([], dtype="float64")
    keep = trials["valid"].fillna(False).to_numpy(dtype=bool)
    return trials["action"][keep].dropna()


def degenerate_units(trials: pd.DataFrame, min_distinct: int = MIN_DISTINCT_ANSWERS) -> dict[Any, str]:
    """The subjects (units) of ``trials`` whose valid answers are degenerate
    (:func:`degenerate_reason`), each with its reason; a subject without a valid answer is left
    to the no-data rule (:func:`no_data_result`)."""
    answers = valid_answers(trials)
    if answers.empty:
        return {}
    subjects = trials.loc[answers.index, "subject"].to_numpy()
    values = answers.to_numpy()
    # distinct answers per subject counted at once; only a subject with too few is looked at
    counts = pd.DataFrame({"s": subjects, "v": values}).drop_duplicates().groupby("s", sort=True).size()
    out: dict[Any, str] = {}
    for subject in counts.index[counts.to_numpy() < min_distinct]:
        reason = degenerate_reason(values[subjects == subject], min_distinct)
        if reason is not None:
            out[subject.item() if isinstance(subject, np.generic) else subject] = reason
    return out


class DegenerateAnswers(DataError):
    """No subject's valid answers identify the model (:func:`degenerate_units`): a fit would
    reflect only its prior, so none is made (the hierarchical fits' refusal)."""


def unfitted_flag(units: Mapping[Any, str]) -> str:
    """The flag of a fit naming the subjects left unfitted by the degenerate-answer rule
    (:func:`degenerate_units`) with the first one's reason (MLE and hierarchical fits alike)."""
    named = ", ".join(str(s) for s in list(units)[:10]) + (" …" if len(units) > 10 else "")
    return f"{len(units)} subject(s) ({named}) not fitted: {next(iter(units.values()))}"


def _unit_id(row: Mapping[str, Any]) -> Any:
    key = row.get("subject", row.get("run"))
    return key.item() if isinstance(key, np.generic) else key


def null_unidentified(result: dict[str, Any], trials: pd.DataFrame, keys: tuple[str, ...],
                      min_distinct: int = MIN_DISTINCT_ANSWERS, unit: str = "per_subject") -> dict[str, Any]:
    """``result`` (a metrics result of ``trials``) under the one rule for degenerate answers: where
    the valid answers of the whole table are degenerate (:func:`degenerate_reason`), a flag says
    so and every key of ``keys`` in ``result["metrics"]`` is ``null`` with the reason in
    ``null_reasons``; where only some subjects' (runs') answers are, a flag names them and their
    rows of ``result[unit]`` hold ``null`` for ``keys``.  Metrics that describe the answers as
    they are (a mean, a reward rate, an error) keep their values: ``keys`` names those estimated
    through a model the answers do not identify (:attr:`MetricsSpec.unidentified`)."""
    answers = valid_answers(trials)
    if answers.empty:
        return result
    return apply_unidentified(result, keys, degenerate_reason(answers.to_numpy(), min_distinct),
                              degenerate_units(trials, min_distinct), unit)


def apply_unidentified(result: dict[str, Any], keys: tuple[str, ...], table_reason: str | None,
                       units: Mapping[Any, str], unit: str = "per_subject") -> dict[str, Any]:
    """:func:`null_unidentified` given what it finds in the table: the reason the table's valid
    answers are degenerate (None: they are not) and the degenerate units with their reasons (a
    sequential plan's prefixes of one table share the units' reasons: ``MetricsSpec.on_prefixes``)."""
    flags = list(result.get("flags") or [])
    reasons: dict[str, str] = dict(result.get("null_reasons") or {})
    metrics = dict(result.get("metrics") or {})
    if table_reason is not None:
        nulled = [k for k in keys if k in metrics]
        metrics.update(dict.fromkeys(nulled))
        reasons.update(dict.fromkeys(nulled, table_reason))
        if not any(f.startswith(DEGENERATE) for f in flags):
            flags.append(table_reason + (f"; null: {', '.join(nulled)}" if nulled else
                                         "; the metrics describe the answers as they are"))
    out = {**result, "metrics": metrics, "flags": flags}
    if reasons:
        out["null_reasons"] = reasons
    if unit in result and units:
        out[unit] = [_row_nulled(row, keys) if _unit_id(row) in units else row for row in result[unit]]
    if units and table_reason is None:
        flags.append(_units_flag(list(units), keys))
    return out


def _units_flag(units: list[Any], keys: tuple[str, ...]) -> str:
    """The flag naming the units whose answers are degenerate (the table's are not)."""
    named = ", ".join(str(u) for u in units[:10]) + (" …" if len(units) > 10 else "")
    nulled_row = f"; null in their rows: {', '.join(keys)}" if keys else ""
    return (f"{DEGENERATE} of {len(units)} unit(s) ({named}): all their valid answers are one value, "
            f"so a model of them is not identified{nulled_row}")


def _row_nulled(row: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: (None if k in keys else v) for k, v in row.items()}


# ----------------------------------------------------------------------------- undefined statistics
#: A side of a correlation whose spread (max − min) is at most this share of its largest magnitude
#: (at least 1) has no variation: a constant written twice in floating point ("0.3" and
#: "0.30000000000000004") is still a constant, and its r (−0.00, 1.00, anything) means nothing.
CONSTANT_RTOL = 1e-9
#: Pairs a correlation needs before it is reported.
MIN_CORRELATION_PAIRS = 3


class Correlation:
    """Pearson's r of (truth, estimate) pairs, or why it is undefined: ``value`` (None where
    undefined) and ``reason``.  :meth:`text` is how every table, plot title and report prints it."""

    __slots__ = ("reason", "value")

    def __init__(self, value: float | None, reason: str | None = None) -> None:
        self.value, self.reason = value, reason

    def text(self, digits: int = 2) -> str:
        """``"0.93"``, or ``"undefined (no variation in the truth)"``."""
        return f"{self.value:.{digits}f}" if self.value is not None else f"undefined ({self.reason})"

    def or_nan(self) -> float:
        """The value, NaN where undefined (for arrays and means)."""
        return float("nan") if self.value is None else self.value


def _constant(x: np.ndarray) -> bool:
    return bool(np.ptp(x) <= CONSTANT_RTOL * max(1.0, float(np.max(np.abs(x)))))


def pearson_r(truth: Any, estimate: Any, *, what: tuple[str, str] = ("truth", "estimates"),
              min_pairs: int = MIN_CORRELATION_PAIRS) -> Correlation:
    """Pearson's r of the finite pairs of ``truth`` and ``estimate``, or undefined with the reason:
    fewer than ``min_pairs`` pairs, or no variation in one side (:data:`CONSTANT_RTOL`), named by
    ``what`` ("no variation in the truth")."""
    x, y = np.asarray(truth, dtype=float).ravel(), np.asarray(estimate, dtype=float).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < min_pairs:
        return Correlation(None, f"{len(x)} finite pair{'s' * (len(x) != 1)}, fewer than {min_pairs}")
    for side, name in ((x, what[0]), (y, what[1])):
        if _constant(side):
            return Correlation(None, f"no variation in the {name}")
    return Correlation(float(np.corrcoef(x, y)[0, 1]))
