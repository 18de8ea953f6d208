"""Summaries of a table of per-subject maximum-likelihood fits over every fitted subject.

A summary never selects on the estimate: every fitted subject counts, whatever its estimate, and
the share of subjects whose data cannot pin their estimate (flagged: :mod:`cogtestbed.inference.identification`)
and the flags' reasons stand beside it.  Figures over the pinned subjects only appear as a
labelled secondary figure (``median_pinned_only``).  Which statistic summarises a parameter is
:func:`summary_kind` (the median of a log-scale parameter, the mean of another: measured by
``benchmarks/studies/summary_bias.py``, docs/studies.md).

Each population summary carries its uncertainty: a percentile bootstrap interval over subjects
(:func:`bootstrap_interval`: :data:`SUMMARY_BOOTSTRAP` resamples of the fitted subjects, seeded,
the same whatever the rows' order), and where the per-subject MLE's summary is known to be biased at
the experiment's design (:data:`KNOWN_SUMMARY_BIAS`, measured by ``benchmarks/studies/summary_bias.py``)
that bias beside it, with the hierarchical fit suggested for the population value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.parameters import Parameter, ParameterSet

#: Bootstrap resamples of the subjects behind a summary's 95 % percentile interval.
SUMMARY_BOOTSTRAP = 2_000
#: Seed of those resamples (a summary's interval is the same on every run).
SUMMARY_BOOTSTRAP_SEED = 20_260_068
#: The bias of the default summary of the per-subject MLE, on the log scale (log-scale parameters'
#: medians), with its MC SE, where recovery measured it far from zero at an experiment's only design:
#: ``python benchmarks/studies/summary_bias.py --reps 20 --subjects 50`` (docs/studies.md: hyperbolic
#: discounting on the CogBench staircase, log k −3, SD 1: k's median +0.448 ± 0.063, +57 %; the
#: temperature's −1.350 ± 0.165, −74 %).  Keyed by (experiment, model); each entry names its design.
KNOWN_SUMMARY_BIAS: dict[tuple[str, str], dict[str, Any]] = {
    ("temporal-discounting", "hyperbolic"): {
        "design": "the CogBench staircase (20 simulated samples of 50 subjects, log k -3, SD 1)",
        "log_bias": {"k": (0.448, 0.063), "temperature": (-1.350, 0.165)}},
}


def summary_kind(p: Parameter) -> str:
    """Which all-subject statistic summarises ``p``'s per-subject estimates: the median
    for a log-scale parameter, whose estimates at a far end of its range (β = 1e5, k = 1e-12) drag
    a mean without limit; the mean for a parameter on a bounded linear or logit scale, whose
    estimates cannot drag it far and whose median shifts towards a pile-up at a bound (measured:
    ``benchmarks/studies/summary_bias.py``, docs/studies.md)."""
    return "median" if p.transform == "log" else "mean"


def summary_scale(p: Parameter) -> str:
    """The scale ``p``'s summary and its interval are on, in words: a median is the same on every monotone
    scale (read it in the parameter's own units), a mean is taken on the parameter's own (natural) scale."""
    if summary_kind(p) == "median":
        return f"{p.name}'s own units (a median is the same on the log scale the fit works on)"
    return f"{p.name}'s own (natural) scale"


def default_summary(values: np.ndarray, p: Parameter) -> float:
    """:func:`summary_kind`'s statistic of the finite ``values`` (NaN where there is none)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if not v.size:
        return float("nan")
    return float(np.median(v) if summary_kind(p) == "median" else np.mean(v))


def bootstrap_interval(values: np.ndarray, p: Parameter, replicates: int = SUMMARY_BOOTSTRAP,
                       seed: int = SUMMARY_BOOTSTRAP_SEED, stat: str | None = None) -> list[float] | None:
    """The 95 % percentile bootstrap interval over subjects of :func:`default_summary` of the finite
    ``values`` (``stat``: ``"median"`` or ``"mean"`` instead; ``replicates`` resamples with replacement,
    seeded; the values sorted first, so the interval does not depend on the rows' order); None where
    fewer than two values are finite."""
    v = np.sort(np.asarray(values, float))
    v = v[np.isfinite(v)]
    if v.size < 2:
        return None
    draws = v[np.random.default_rng(seed).integers(0, v.size, size=(replicates, v.size))]
    of = np.median(draws, axis=1) if (stat or summary_kind(p)) == "median" else np.mean(draws, axis=1)
    lo, hi = np.percentile(of, [2.5, 97.5])
    return [float(lo), float(hi)]


def _intervals(rows: pd.DataFrame, parameters: ParameterSet, stat: str) -> dict[str, list[float] | None]:
    """:func:`bootstrap_interval` of ``stat`` (median or mean) of every parameter over ``rows``."""
    return {p.name: bootstrap_interval(rows[p.name].to_numpy(float), p, stat=stat) for p in parameters}


def known_bias(experiment: str, model: str, parameters: ParameterSet) -> dict[str, dict[str, Any]]:
    """The known bias of the per-subject MLE's default summary of each parameter of ``model`` at
    ``experiment``'s design (:data:`KNOWN_SUMMARY_BIAS`; empty where none is known): the log-scale
    bias and its MC SE, as a percentage of the value, where it was measured and the estimate suggested."""
    entry = KNOWN_SUMMARY_BIAS.get((experiment, model))
    if entry is None:
        return {}
    out = {}
    for name, (bias, se) in entry["log_bias"].items():
        if name in parameters.names:
            out[name] = {"log_bias": bias, "log_bias_mc_se": se, "percent": 100 * float(np.expm1(bias)),
                         "design": entry["design"], "measured_by": "benchmarks/studies/summary_bias.py",
                         "suggested": "the hierarchical fit's population median (fit --method hierarchical)"}
    return out


def bias_note(name: str, bias: dict[str, Any]) -> str:
    """One line on a parameter's known summary bias (:func:`known_bias`)."""
    return (f"the per-subject MLE median of {name} is biased by {bias['percent']:+.0f} % at {bias['design']} "
            f"(log scale {bias['log_bias']:+.3f} ± {bias['log_bias_mc_se']:.3f}, {bias['measured_by']}): "
            f"report {bias['suggested']}")


def flag_kinds(reasons: Iterable[Any]) -> dict[str, int]:
    """How many flags of each kind (the text before a reason's first colon), most common first."""
    kinds = pd.Series([str(r).partition(":")[0] for r in reasons if r is not None], dtype=object)
    return {str(k): int(v) for k, v in kinds.value_counts().items()}


def _over(rows: pd.DataFrame, names: Sequence[str], stat: str) -> dict[str, float | None]:
    """``stat`` (median or mean) of every parameter over ``rows`` (None where there is no row)."""
    return {p: float(getattr(rows[p], stat)()) if len(rows) else None for p in names}


def _information(fitted: pd.DataFrame) -> dict[str, float | None]:
    """Summed AIC and BIC of the fitted subjects (None where none is)."""
    return {k: float(fitted[k].sum()) if len(fitted) else None for k in ("aic", "bic")}


def mle_summary(fits: pd.DataFrame, names: Sequence[str], parameters: ParameterSet | None = None,
                bias: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The summary of an MLE table (:meth:`CognitiveModel.fit_identified`), over every fitted
    subject whatever its estimate (a summary never selects on the estimate): each
    parameter's default summary (``summary``, with ``summary_kind``: :func:`default_summary`, where
    ``parameters`` are given), its median and mean beside it,
    summed AIC / BIC (null, with the reason, where no subject is fitted), the share of fitted
    subjects flagged and the flags' reasons (``flagged``, ``flag_reasons``), and — a labelled
    secondary figure only — the median over the subjects the data pin (``median_pinned_only``).
    Each default summary has its 95 % bootstrap interval over subjects (``summary_ci95``,
    :func:`bootstrap_interval`, how in ``summary_interval``), and so do the median, the mean and the
    pinned-only median (``median_ci95``, ``mean_ci95``, ``median_pinned_only_ci95``: None where fewer than
    two subjects count), and the scale both are on (``summary_scale``,
    :func:`summary_scale`); ``bias``: the known bias of the
    summaries at this design (:func:`known_bias`), printed beside them (``summary_bias``, ``notes``).
    Flags name the subjects whose answers identify no model (not fitted) and those whose fit failed
    or whose interval is unbounded."""
    fitted = fits[fits[list(names)].notna().all(axis=1)]
    ok = fitted[fitted["identified"].astype(bool)]
    ridge = fitted[~fitted["identified"].astype(bool)]
    out: dict[str, Any] = {
        "median": _over(fitted, names, "median"), "mean": _over(fitted, names, "mean"),
        **_information(fitted),
        "n_units": len(fits), "n_fitted": len(fitted), "n_identified": len(ok),
        "flagged": (len(ridge) / len(fitted)) if len(fitted) else None,
        "flag_reasons": flag_kinds(ridge["null_reason"]) if len(ridge) else {},
        "median_pinned_only": _over(ok, names, "median"), "flags": []}
    if parameters is not None and len(fitted):
        out["summary"] = {p.name: default_summary(fitted[p.name].to_numpy(float), p) for p in parameters}
        out["summary_kind"] = {p.name: summary_kind(p) for p in parameters}
        out["summary_ci95"] = {p.name: bootstrap_interval(fitted[p.name].to_numpy(float), p) for p in parameters}
        out["median_ci95"] = _intervals(fitted, parameters, "median")
        out["mean_ci95"] = _intervals(fitted, parameters, "mean")
        out["median_pinned_only_ci95"] = _intervals(ok, parameters, "median")
        out["summary_scale"] = {p.name: summary_scale(p) for p in parameters}
        out["summary_interval"] = (f"95% percentile bootstrap over the {len(fitted)} fitted subjects "
                                   f"({SUMMARY_BOOTSTRAP:,} resamples, seed {SUMMARY_BOOTSTRAP_SEED})")
        if bias:
            out["summary_bias"] = dict(bias)
            out["notes"] = [bias_note(name, b) for name, b in bias.items()]
    unfitted = fits[~fits.index.isin(fitted.index)]
    if len(unfitted):
        from cogtestbed.no_data import unfitted_flag

        out["flags"].append(unfitted_flag(dict(zip(unfitted["subject"], unfitted["null_reason"], strict=True))))
    if len(ridge):
        named = ", ".join(str(s) for s in list(ridge["subject"])[:10]) + (" …" if len(ridge) > 10 else "")
        why = ", ".join(f"{n} {k}" for k, n in out["flag_reasons"].items())
        out["flags"].append(f"{len(ridge)} of {len(fitted)} fitted subject(s) ({named}) flagged: the data cannot "
                            f"pin their estimate ({why}); they stay in the medians, each with its interval")
    if not len(fitted):
        reason = str(fits["null_reason"].iloc[0])
        out["null_reasons"] = dict.fromkeys(("summary", "median", "mean", "aic", "bic", "median_pinned_only"), reason)
    elif not len(ok):
        out["null_reasons"] = {"median_pinned_only": "no fitted subject is pinned by its data"}
    return out


__all__ = ["KNOWN_SUMMARY_BIAS", "SUMMARY_BOOTSTRAP", "bias_note", "bootstrap_interval", "default_summary",
           "flag_kinds", "known_bias", "mle_summary", "summary_kind", "summary_scale"]
