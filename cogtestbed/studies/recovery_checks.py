"""Recovery judged in the researcher's terms: precision within a stated tolerance, estimates at a bound.

:func:`add_recovery_checks` adds to every (design cell, parameter) entry of a recovery summary:

* ``within`` — the share of estimates with |estimate − truth| ≤ the halfwidth the user stated
  (``recover --precision PARAM=HALFWIDTH``, natural scale), with its 95 % Wilson interval, and
  ``meets`` — whether that share reaches the assurance (``--assurance Q``, default 0.9);
* ``at_bound`` — the share of estimates at a bound of the parameter or of the fitter's search box
  (a β stuck at 1e5 for a true β of 5 drags its mean to thousands): flagged in the verdict
  whenever it exceeds :data:`BOUND_SHARE_FLAG`;
* ``mean_true`` / ``mean_estimate`` / ``median_estimate`` (natural scale, over every subject), and
  the default summary ``summary_estimate`` (``summary_kind``: the median of a log-scale parameter,
  the mean of another: :func:`~cogtestbed.inference.base.default_summary`).

"Recovered well" is then said only where the user's criterion holds (``meets``); without one the
verdict says which convention it used (r ≥ 0.8) and that no tolerance was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.formatting import wilson
from cogtestbed.inference.base import default_summary, summary_kind
from cogtestbed.inference.identification import BOUND_RTOL as BOUND_RTOL
from cogtestbed.inference.identification import at_bound as at_bound
from cogtestbed.inference.identification import bounds_of as bounds_of
from cogtestbed.inference.summary import bootstrap_interval

#: A parameter with more than this share of its estimates at a bound is flagged.
BOUND_SHARE_FLAG = 0.05


def _none_if_nan(value: float) -> float | None:
    return None if value != value else value


def summary_offset(est: np.ndarray, true: np.ndarray, p: Any, method: str) -> dict[str, Any]:
    """The default summary of the true values (``summary_true``) and how far the estimates' summary lies
    from it (``summary_offset``: on the log scale for a median of a log-scale parameter, with
    ``summary_offset_percent``; the difference for a mean), and whether the true summary falls outside the
    estimates' bootstrap interval (``summary_biased``: the summary is biased at this design, beyond what
    drawing the subjects explains).  Where a per-subject MLE's summary is biased, ``summary_suggested``
    names the hierarchical fit's population value.  Empty where either summary is missing."""
    got, want = default_summary(est, p), default_summary(true, p)
    ci = bootstrap_interval(est, p)
    if not (np.isfinite(got) and np.isfinite(want)) or ci is None:
        return {}
    out: dict[str, Any] = {"summary_true": want}
    if summary_kind(p) == "median" and got > 0 and want > 0:
        out["summary_offset"] = float(np.log(got / want))
        out["summary_offset_percent"] = float(100 * np.expm1(out["summary_offset"]))
    else:
        out["summary_offset"] = float(got - want)
    out["summary_biased"] = bool(not ci[0] <= want <= ci[1])
    if out["summary_biased"] and method == "mle":
        out["summary_suggested"] = "the hierarchical fit's population value (--method hierarchical)"
    return out


def add_recovery_checks(result: Any, precision: Mapping[str, float], assurance: float) -> None:
    """Add ``within``/``at_bound``/means to ``result.summary`` (in place) and record the criterion."""
    from cogtestbed.registry import get_experiment

    spec = result.spec
    model = get_experiment(spec.experiment).model(spec.models[0])
    unknown = sorted(set(precision) - set(model.parameters.names))
    if unknown:
        raise InputError(f"`precision` names {', '.join(unknown)}, not a parameter of {model.name}; valid: "
                         f"{', '.join(model.parameters.names)}")
    table: pd.DataFrame = result.table
    for cell in result.summary.values():
        rows = table[(table["n_subjects"] == cell["n_subjects"]) & (table["runs"] == cell["runs"])
                     & (table["n_trials"] == cell["n_trials"])]
        for name, entry in cell["parameters"].items():
            if name not in model.parameters.names:
                continue
            g = rows[rows["parameter"] == name]
            true, est = g["true"].to_numpy(float), g["estimate"].to_numpy(float)
            entry["mean_true"] = float(np.nanmean(true)) if true.size else None
            entry["mean_estimate"] = float(np.nanmean(est)) if est.size else None
            entry["median_estimate"] = float(np.nanmedian(est)) if est.size else None
            entry["summary_kind"] = summary_kind(model.parameters[name])
            entry["summary_estimate"] = _none_if_nan(default_summary(est, model.parameters[name]))
            entry["summary_ci95"] = bootstrap_interval(est, model.parameters[name])  # over subjects
            entry.update(summary_offset(est, true, model.parameters[name], spec.method))
            entry["at_bound"] = float(at_bound(est, model.parameters[name]).mean()) if est.size else None
            if name in precision:
                h = float(precision[name])
                ok = np.abs(est - true) <= h  # NaN (a failed fit) counts as a miss
                hits, n = int(ok.sum()), int(ok.size)
                entry["within"] = {"halfwidth": h, "share": hits / n if n else None,
                                   "interval95": list(wilson(hits, n)), "assurance": assurance,
                                   "meets": bool(n and hits / n >= assurance)}
    result.criterion = {"precision": dict(precision), "assurance": assurance}
