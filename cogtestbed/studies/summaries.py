"""Summary statistics of every study kind (the ``summary`` of a :class:`StudyResult`).

Recovery: Pearson r, bias = mean(est − true), RMSE per parameter (log scale for log-transformed
parameters) and, for Bayesian fits, the coverage of the central 50 % / 90 % intervals.  Model
recovery: row-normalised confusion matrices (Wilson & Collins 2019).  SBC: χ² test of uniform
ranks (Talts et al. 2018).  Power, metric power, test size/power: rejection rate with its
Monte-Carlo SE.  Metric validity: mean and SD of the metric per parameter value, Spearman ρ over
all replications and whether the means move monotonically in the declared direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.no_data import pearson_r
from cogtestbed.studies.study_data import rate
from cogtestbed.studies.study_kinds import StudySpec

#: Fewest (true, estimate) pairs a recovery correlation is computed from: below it r says
#: nothing (two points always give |r| = 1) and the verdict reports too few subjects to judge.
#: 10 pairs give a 95 % interval of about ±0.15 around r = 0.9 (Fisher z), enough to separate
#: good (r ≥ 0.8) from poor (r < 0.5) recovery.
MIN_RECOVERY_POINTS = 10


def summarise(spec: StudySpec, table: pd.DataFrame) -> dict[str, Any]:
    if spec.kind == "metric-validity":
        return metric_validity_summary(table, spec.direction)
    fn = {"recovery": recovery_summary, "model-recovery": model_recovery_summary, "power": power_summary,
          "sbc": sbc_summary, "metric-power": metric_power_summary, "test-size": test_summary,
          "test-power": test_summary}[spec.kind]
    return fn(table)


def _cell_key(n: int, t: int, runs: int) -> str:
    return f"{n}x{t}" if runs == 1 else f"{n}x{t}x{runs}runs"


def recovery_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Per design cell and parameter: r, bias, RMSE (+ 50/90 % coverage for Bayesian fits)."""
    out: dict[str, Any] = {}
    for (n, runs, t), cell in table.groupby(["n_subjects", "runs", "n_trials"], sort=True):
        params: dict[str, Any] = {}
        for name, g in cell.groupby("parameter", sort=False):
            params[str(name)] = _recovery_entry(g)
        out[_cell_key(int(n), int(t), int(runs))] = {"n_subjects": int(n), "runs": int(runs), "n_trials": int(t),
                                                     "parameters": params}
    return out


def _recovery_entry(g: pd.DataFrame) -> dict[str, Any]:
    """r, bias, RMSE (and coverage) of one cell's parameter over every subject, whatever its
    estimate (nothing drops a subject because of its estimate); where the table says which
    estimates the data pin (MLE: :mod:`cogtestbed.inference.identification`), the share flagged
    (``flagged``) and the flags' reasons beside them, and — a labelled secondary figure — the same
    statistics over the pinned ones only (``identified``, ``r_identified``)."""
    entry = _recovery_stats(g)
    if "identified" in g.columns and g["identified"].notna().all():
        ok = g["identified"].astype(bool).to_numpy()
        kinds = pd.Series([str(r).partition(":")[0] for r in g.loc[~ok, "unidentified_reason"]], dtype=object)
        entry.update({"n_identified": int(ok.sum()), "n_unidentified": int((~ok).sum()),
                      "flagged": float((~ok).mean()) if ok.size else None,
                      "unidentified_reasons": {str(k): int(v) for k, v in kinds.value_counts().items()}})
        sub = _recovery_stats(g[ok])
        entry["identified"] = {k: _none_if_nan(sub[k]) for k in ("r", "bias", "rmse", "n", "n_finite", "r_note")
                               if k in sub}
        entry["r_identified"] = entry["identified"]["r"]
    return entry


def _none_if_nan(value: Any) -> Any:
    """``value``, with a NaN float as None (what the JSON of the summary holds)."""
    return None if isinstance(value, float) and np.isnan(value) else value


def _recovery_stats(g: pd.DataFrame) -> dict[str, Any]:
    true, est = g["true"].to_numpy(float), g["estimate"].to_numpy(float)
    log = "scale" in g and bool((g["scale"] == "log").all())
    if log:  # e.g. β: errors are multiplicative, score log β (an estimate at 0: −∞, counted out of n_finite)
        with np.errstate(divide="ignore", invalid="ignore"):
            true, est = np.log(true), np.log(est)
    ok = np.isfinite(true) & np.isfinite(est)
    err = est[ok] - true[ok]
    n_ok = int(ok.sum())
    if n_ok < MIN_RECOVERY_POINTS:
        r, r_note = float("nan"), f"too few subjects to judge (n={n_ok}, need {MIN_RECOVERY_POINTS})"
    else:  # undefined (null, with the reason) where a side has no variation, float noise of a constant included
        corr = pearson_r(true[ok], est[ok])
        r, r_note = corr.or_nan(), "" if corr.value is not None else f"r undefined: {corr.reason}"
    entry: dict[str, Any] = {"r": r, "bias": float(err.mean()) if err.size else float("nan"),
                             "rmse": float(np.sqrt((err ** 2).mean())) if err.size else float("nan"), "n": len(g),
                             "n_finite": n_ok}
    if r_note:
        entry["r_note"] = r_note
    entry.update(_truth_spread(true[ok], err))
    t_nat = g["true"].to_numpy(float)
    if "lo95" in g and g["lo95"].notna().any():  # the MLE's likelihood-ratio intervals
        lo, hi = g["lo95"].to_numpy(float), g["hi95"].to_numpy(float)
        has = ~np.isnan(lo)
        entry["coverage95"] = float(((t_nat >= lo) & (t_nat <= hi))[has].mean())
    if "lo90" in g and g["lo90"].notna().any():
        for q in (50, 90):
            lo, hi = g[f"lo{q}"].to_numpy(float), g[f"hi{q}"].to_numpy(float)
            has = ~np.isnan(lo)
            entry[f"coverage{q}"] = float(((t_nat >= lo) & (t_nat <= hi))[has].mean())
    entry["scale"] = "log" if log else "natural"
    return entry


def _truth_spread(true: np.ndarray, err: np.ndarray) -> dict[str, Any]:
    """The true values' SD (``true_sd``, on the scale r is computed on) and, where it is below the estimates'
    typical error (``typical_error``: the errors' scaled median absolute deviation, 1.4826·MAD, which a few
    estimates at a bound do not inflate), the r that errors of that size leave (``r_ceiling`` =
    SD/√(SD² + error²)): true values that hardly vary (a prior-drawn population narrow on this parameter) hold r
    down whatever the fit, so a low r there says nothing about the estimates."""
    if true.size < 2:
        return {}
    sd = float(true.std())
    typical = float(1.4826 * np.median(np.abs(err - np.median(err))))
    out: dict[str, Any] = {"true_sd": sd, "typical_error": typical}
    if sd < typical:
        out["r_ceiling"] = sd / float(np.hypot(sd, typical))
    return out


def model_recovery_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Row-normalised confusion matrices: P(winning model | generating model) per criterion."""
    out: dict[str, Any] = {}
    models = list(dict.fromkeys(table["model"]))
    keys = ["n_subjects", "runs", "n_trials", "generator", "rep", "subject"]
    for crit, better in (("aic", "min"), ("bic", "min"), ("elpd_loo", "max")):
        if table[crit].isna().all():
            continue
        grouped = table.groupby(keys)[crit]
        idx = grouped.idxmin() if better == "min" else grouped.idxmax()
        winners = table.loc[idx.to_numpy(), ["generator", "model"]]
        counts = pd.crosstab(winners["generator"], winners["model"]).reindex(index=models, columns=models,
                                                                             fill_value=0)
        probs = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0)
        out["loo" if crit == "elpd_loo" else crit] = {
            "models": models, "counts": counts.to_numpy().tolist(),
            "probabilities": probs.fillna(0.0).to_numpy().tolist(),
            "accuracy": float(np.trace(counts.to_numpy()) / max(counts.to_numpy().sum(), 1)),
        }
    return out


def power_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Power per (subjects, runs, trials) cell with its Monte-Carlo standard error.

    At effect 0 the rejection rate of the two-sided test is the type-I error rate, reported
    under that name (``type_i_error``), never as power.
    """
    first = table.iloc[0]
    null = float(first["effect_size"]) == 0.0
    key = "type_i_error" if null else "power"
    cells = []
    for (n, runs, t), g in table.groupby(["n_subjects", "runs", "n_trials"], sort=True):
        r = rate(g["detected"])
        cells.append({"n_subjects": int(n), "runs": int(runs), "n_trials": int(t), key: r["rate"],
                      "mc_se": r["mc_se"], "sims": r["sims"], "mean_estimate": float(g["estimate"].mean())})
    return {"effect": str(first["effect"]), "effect_size": float(first["effect_size"]),
            "test": str(first["test"]), "quantity": "type-I error rate" if null else "power", "rate_key": key,
            "cells": cells}


def sbc_summary(table: pd.DataFrame, bins: int = 10) -> dict[str, Any]:
    """χ² uniformity test of the SBC ranks per variable (ranks 0..L binned into ``bins``)."""
    out: dict[str, Any] = {}
    for var, g in table.groupby("variable", sort=False):
        L = int(g["L"].iloc[0])
        hist = np.bincount(np.asarray(g["rank"]) * bins // (L + 1), minlength=bins)
        entry = {"p_value": float(stats.chisquare(hist).pvalue), "histogram": hist.tolist(), "L": L,
                 "reps": len(g)}
        if "in90" in g:
            entry["coverage90"] = float(g["in90"].mean())
        out[str(var)] = entry
    return out


def monotonicity(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Spearman ρ of ``y`` against ``x`` and whether the means of ``y`` per ``x`` are strictly monotone."""
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    means = frame.groupby("x", sort=True)["y"].mean().to_numpy()
    d = np.diff(means)
    rho = float(stats.spearmanr(frame["x"], frame["y"]).statistic) if len(frame) > 2 else float("nan")
    return {"spearman": rho, "increasing": bool(d.size and np.all(d > 0)),
            "decreasing": bool(d.size and np.all(d < 0))}


def metric_validity_summary(table: pd.DataFrame, direction: str = "any") -> dict[str, Any]:
    """Per runs cell: the metric's mean / SD (across reps) / mean per-unit SD per value, Spearman ρ
    over all replications, monotonicity of the means, and the verdict in the declared direction."""
    out: dict[str, Any] = {}
    for (runs, t), cell in table.groupby(["runs", "n_trials"], sort=True):
        by = cell.groupby("value", sort=True).agg(mean=("estimate", "mean"), sd=("estimate", "std"),
                                                  unit_sd=("unit_sd", "mean"), reps=("estimate", "size"),
                                                  nan=("estimate", lambda s: int(s.isna().sum())))
        mono = monotonicity(cell["value"], cell["estimate"])
        passed = None if direction == "any" else bool(mono[direction] and (
            mono["spearman"] > 0 if direction == "increasing" else mono["spearman"] < 0))
        out[f"{int(runs)}runs"] = {"runs": int(runs), "n_trials": int(t), "metric": str(cell["metric"].iloc[0]),
                                   "parameter": str(cell["parameter"].iloc[0]),
                                   "by_value": by.reset_index().to_dict(orient="records"), **mono,
                                   "direction": direction, "passed": passed}
    return out


def _sweep_cells(table: pd.DataFrame) -> tuple[str | None, list[tuple[dict[str, Any], pd.DataFrame]]]:
    """(swept parameter, [(cell keys, rows)]) per (runs, n_trials, swept value) cell."""
    if "value" not in table:
        table = table.assign(value=np.nan, parameter=None)
    parameter = table["parameter"].dropna()
    cells = [({"runs": int(runs), "n_trials": int(t), **({"value": float(v)} if pd.notna(v) else {})}, g)
             for (runs, t, v), g in table.groupby(["runs", "n_trials", "value"], sort=True, dropna=False)]
    return (str(parameter.iloc[0]) if len(parameter) else None), cells


def metric_power_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Power per (runs, swept value) cell (MC SE), the mean difference B − A and the test used."""
    swept, groups = _sweep_cells(table)
    cells = []
    for keys, g in groups:
        r = rate(g["detected"])
        cells.append({**keys, "power": r["rate"], "mc_se": r["mc_se"], "sims": r["sims"],
                      "mean_difference": float(g["difference"].mean()),
                      "untestable": int(g["p_value"].isna().sum())})
    return {"metric": str(table["metric"].iloc[0]), "test": str(table["test"].iloc[0]), "parameter": swept,
            "cells": cells}


def test_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Rejection rate per (runs, swept value) cell with its MC SE."""
    swept, groups = _sweep_cells(table)
    cells = []
    for keys, g in groups:
        r = rate(g["rejected"])
        cells.append({**keys, "rejection_rate": r["rate"], "mc_se": r["mc_se"], "sims": r["sims"],
                      "median_p": float(g["p_value"].median()), "untestable": int(g["p_value"].isna().sum())})
    return {"test": str(table["test"].iloc[0]), "parameter": swept, "cells": cells}
