"""Published metrics of the revealed-belief family, the paper's reference tables, and sampling
noise floors (this project's addition: the paper scores exact distributions and has no noise floor).

Metrics (the paper's §3; p = the subject's renormalised distribution, q = the ground truth p*):

* Chebyshev ``D∞(p, q) = max_o |p(o) − q(o)|`` (the paper's main metric);
* Manhattan ``L1 = Σ_o |p(o) − q(o)|`` (range [0, 2]: twice the total variation, as the
  paper's 2-outcome rows show);
* symmetric KL ``Σ_o (p(o) − q(o))·(ln p(o) − ln q(o))`` in nats, summed.  The paper reports
  finite values where q(o) = 0 without saying how; here both distributions are floored at
  :data:`SYMKL_EPS` and renormalised first;
* StaA error ``1 − P(correct)`` (the Chebyshev distance to the one-hot answer), with P renormalised
  over the five options and raw (unnormalised, as scored).

``revealed_metrics`` gives them per item, per scenario × variant × channel and per paper
condition (beside the paper's appendix rows for 11 models, shipped as package data), and pairs
two models (e.g. a base and an instruct checkpoint) cell by cell.
"""

from __future__ import annotations

import csv
import math
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.revealed_floor import SYMKL_EPS, noise_floor
from cogtestbed.metrics_result import MetricOption
from cogtestbed.trials import list_cells

#: The 11 models of the paper's appendix tables, in column order.
REFERENCE_MODELS = ("Y6B", "M7B", "Q7B", "L8B", "G7B", "Y9B", "Y34B", "Q57xB", "L70B", "Q72B", "M8x22B")
_METRIC_NAMES = {"Chebyshev": "chebyshev", "L1": "l1", "Symmetric KL": "symkl"}
CELL_KEYS = ("scenario", "variant", "channel")


def chebyshev(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.max(np.abs(p - q)))


def l1(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(np.abs(p - q)))


def symkl(p: np.ndarray, q: np.ndarray, eps: float = SYMKL_EPS) -> float:
    """Σ (p − q)(ln p − ln q) after flooring both at ``eps`` and renormalising (nats)."""
    p = np.maximum(p, eps)
    q = np.maximum(q, eps)
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum((p - q) * (np.log(p) - np.log(q))))


def item_metrics(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per answered step with its metrics (NaN where a metric does not apply)."""
    rows = trials[trials["valid"].to_numpy(dtype=bool)]
    out: dict[str, list[float]] = {k: [] for k in ("chebyshev", "l1", "symkl", "staa_error", "staa_error_raw")}
    for ch, p_cell, q_cell, lp, correct in zip(rows["channel"].astype(str), list_cells(rows["probs"]),
                                               list_cells(rows["p_star"]), list_cells(rows["logprobs"]),
                                               rows["correct_option"], strict=True):
        p = np.asarray(p_cell, dtype=np.float64)
        q = np.asarray(q_cell, dtype=np.float64)
        if ch == "revb":
            out["chebyshev"].append(chebyshev(p, q))
            out["l1"].append(l1(p, q))
            out["symkl"].append(symkl(p, q))
            out["staa_error"].append(math.nan)
            out["staa_error_raw"].append(math.nan)
        else:
            for k in ("chebyshev", "l1", "symkl"):
                out[k].append(math.nan)
            out["staa_error"].append(1.0 - float(p[int(correct)]))
            out["staa_error_raw"].append(1.0 - math.exp(float(np.asarray(lp)[int(correct)])))
    keep = ["subject", "agent", "item", "scenario", "variant", "condition", "setting", "channel", "n_outcomes",
            "method", "n_samples", "mass_outside"]
    df = rows[keep].reset_index(drop=True).copy()
    for c in ("agent", "scenario", "variant", "condition", "setting", "channel", "method"):
        df[c] = df[c].astype(str)
    for k, v in out.items():
        df[k] = v
    return df


def _means(df: pd.DataFrame, by: list[str]) -> list[dict[str, Any]]:
    cols = ["chebyshev", "l1", "symkl", "staa_error", "staa_error_raw", "mass_outside"]
    g = df.groupby(by, sort=True, observed=True)
    agg = g[cols].mean()
    agg["n"] = g.size()
    out = []
    for key, row in agg.iterrows():
        key = key if isinstance(key, tuple) else (key,)
        rec: dict[str, Any] = dict(zip(by, key, strict=True))
        rec.update({c: (None if pd.isna(row[c]) else float(row[c])) for c in cols})
        rec["n"] = int(row["n"])
        out.append({k: v for k, v in rec.items() if v is not None})
    return out


@cache
def reference_tables() -> pd.DataFrame:
    """The paper's appendix tables (627 rows, 11 models), long format: section, framework,
    scenario, metric (chebyshev | l1 | symkl), condition, model, value."""
    from cogtestbed import data

    text = resources.files(data).joinpath("revealed_belief_tables.csv").read_text(encoding="utf-8")
    rows = []
    for rec in csv.DictReader(text.splitlines()):
        for m in REFERENCE_MODELS:
            rows.append({"section": rec["section"], "framework": rec["framework"], "scenario": rec["scenario"].lower(),
                         "metric": _METRIC_NAMES[rec["metric"]], "condition": rec["condition"], "model": m,
                         "value": float(rec[m])})
    return pd.DataFrame(rows)


def reference_for(scenario: str, condition: str, channel: str) -> dict[str, dict[str, dict[str, float]]]:
    """The paper's rows for one condition: {framework: {metric: {model: value}}} (StaA rows are
    reported under ``staa_error``)."""
    ref = reference_tables()
    sel = ref[(ref["scenario"] == scenario) & (ref["condition"] == condition)]
    sel = sel[sel["framework"].str.startswith("StaA" if channel == "staa" else "RevB")]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (fw, metric), g in sel.groupby(["framework", "metric"], sort=True):
        name = "staa_error" if channel == "staa" else str(metric)
        out.setdefault(str(fw), {})[name] = dict(zip(g["model"], g["value"].astype(float), strict=True))
    return out


def _flags(items: pd.DataFrame) -> list[str]:
    flags = []
    sampled = items[items["method"] == "sampled"]
    if len(sampled):
        n = int(sampled["n_samples"].median())
        k = int(sampled.loc[sampled["channel"] == "revb", "n_outcomes"].median()) if (
            sampled["channel"] == "revb").any() else 5
        floor = noise_floor(k, n)
        flags.append(f"{len(sampled)} distributions are estimates from N≈{n} samples: a uniform {k}-outcome "
                     f"distribution estimated so has E[Chebyshev] = {floor['chebyshev_mean']:.3f} "
                     f"(p95 {floor['chebyshev_p95']:.3f}) and E[L1] = {floor['l1_mean']:.3f} from sampling alone")
    gen = int((items["method"] == "generated").sum())
    if gen:
        flags.append(f"{gen} StaA answers were generated text (one-hot): StaA error is 0 or 1 per item")
    return flags


def revealed_metrics(trials: pd.DataFrame, pair: str | None = None, reference: str = "yes",
                     per_item: str = "yes") -> dict[str, Any]:
    """The family's metrics on a trial table (module docstring).

    ``pair``: a second trial table (e.g. the instruct checkpoint's run) reported cell by cell beside
    this one; ``reference``: include the paper's rows per condition; ``per_item``: include every
    item's metrics (averaged over subjects).
    """
    table = trials
    if pair is not None:
        from cogtestbed.memory import reading_input
        from cogtestbed.schema import canonical_rows, validate_trials
        from cogtestbed.tables.revealed import EXPERIMENT, SCHEMA
        from cogtestbed.trials import read_trial_file

        with reading_input(pair):  # a user's second table: under the input limit as the first
            other_raw = read_trial_file(pair)
        other = canonical_rows(validate_trials(other_raw, SCHEMA, EXPERIMENT, source=pair))
        a, b = str(trials["agent"].iloc[0]), str(other["agent"].iloc[0])
        if a == b:
            other = other.assign(agent=f"{b} ({Path(pair).stem})")
        table = pd.concat([trials, other], ignore_index=True)
    items = item_metrics(table)
    n_invalid = int((~table["valid"].to_numpy(dtype=bool)).sum())
    overall = _means(items.assign(_all="all"), ["_all"])[0]
    headline = {k: overall.get(k, math.nan) for k in ("chebyshev", "l1", "symkl", "staa_error",
                                                      "staa_error_raw", "mass_outside")}
    result: dict[str, Any] = {
        "metrics": headline,
        "per_subject": _means(items, ["agent", "subject"]),
        "by_cell": _means(items, ["agent", *CELL_KEYS]),
        "n_invalid": n_invalid,
        "flags": _flags(items),
    }
    by_cond = _means(items, ["agent", "scenario", "condition", "channel"])
    if reference == "yes":
        for rec in by_cond:
            ref = reference_for(rec["scenario"], rec["condition"], rec["channel"])
            if ref:
                rec["reference"] = ref
    result["by_condition"] = by_cond
    if per_item == "yes":
        result["items"] = _means(items, ["agent", "item", "scenario", "variant", "condition", "setting", "channel"])
    agents = sorted(items["agent"].unique())
    if len(agents) == 2:
        result["pairs"] = pair_cells(items, agents[0], agents[1])
    return result


def pair_cells(items: pd.DataFrame, a: str, b: str) -> list[dict[str, Any]]:
    """Two models side by side per scenario × variant × channel, with the difference b − a."""
    cells = {(r["scenario"], r["variant"], r["channel"], r["agent"]): r
             for r in _means(items, ["agent", *CELL_KEYS])}
    out = []
    for key in sorted({k[:3] for k in cells}):
        ra, rb = cells.get((*key, a)), cells.get((*key, b))
        if ra is None or rb is None:
            continue
        metric = "staa_error" if key[2] == "staa" else "chebyshev"
        out.append({"scenario": key[0], "variant": key[1], "channel": key[2], "metric": metric,
                    a: ra[metric], b: rb[metric], "difference": rb[metric] - ra[metric]})
    return out


METRIC_OPTIONS = {
    "pair": MetricOption("pair", "a second trial table (e.g. the instruct model's run) to pair with this one"),
    "reference": MetricOption("reference", "report the paper's appendix rows per condition", "yes", ("yes", "no")),
    "per_item": MetricOption("per_item", "report every item's metrics", "yes", ("yes", "no")),
}
