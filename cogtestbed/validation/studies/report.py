"""Outputs of a study: Parquet table, PNG plots, a one-paragraph verdict and an HTML report.

Plots: recovery → true-vs-estimated scatter per parameter and the correlation matrix of the
estimation errors (a strong off-diagonal value flags a trade-off such as α vs β); model recovery →
confusion matrices; power → power curves with ±1.96 Monte-Carlo SE bars; SBC → rank histograms.
Files are written to a temporary name and renamed, so a failed run leaves no half file.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.formatting import num, rate_text
from cogtestbed.validation.studies.recovery_checks import BOUND_SHARE_FLAG

#: Recovery r at or above this is called "good"; below 0.5 "poor" (conventions of e.g.
#: Wilson & Collins 2019 / White et al. for learning-model parameters).
R_GOOD, R_POOR = 0.8, 0.5


def design_name(spec: Any, n_trials: Any) -> str:
    """The design of a study cell named by its fields (:func:`~cogtestbed.validation.studies.sizes.design_label`)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.sizes import design_label

    try:
        return design_label(get_experiment(spec.experiment), spec.design, int(n_trials))
    except (ValueError, KeyError):  # a trial count the trials field cannot reach: the count itself
        return f"{int(n_trials)} trials per run"


def _study_design(spec: Any) -> str:
    """The subjects, runs and designs of a one-cell model study, by the designs' fields."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.study_data import design_for_trials

    exp = get_experiment(spec.experiment)
    designs = ", ".join(design_name(spec, t if t is not None else design_for_trials(exp, None, spec.design).n_trials)
                        for t in spec.trials)
    runs = ", ".join(str(r) for r in spec.runs)
    return f"{', '.join(str(n) for n in spec.subjects)} subjects of {designs}" + (
        f", {runs} runs pooled per subject" if any(r > 1 for r in spec.runs) else "")


def _runs(n: Any) -> str:
    return f"{int(n)} run{'s' if int(n) != 1 else ''}"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Write ``fig`` to ``path`` atomically (a temporary file renamed over it) and close it."""
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------------- plots
def plot_error_by_size(result: Any, out: Path) -> list[Path]:
    """RMSE (and the share within the stated tolerance) of each parameter against the design's size,
    one line per subjects × runs cell: where a recovery study sweeps the trials field."""
    cells = list(result.summary.values())
    if len({c["n_trials"] for c in cells}) < 2:
        return []
    plt = pyplot()
    spec = result.spec
    names = list(cells[0]["parameters"])
    within = any("within" in v for c in cells for v in c["parameters"].values())
    fig, axes = plt.subplots(1 + within, len(names), figsize=(3.3 * len(names), 3.0 * (1 + within)), squeeze=False)
    for j, name in enumerate(names):
        for key in sorted({(c["n_subjects"], c["runs"]) for c in cells}):
            row = sorted((c for c in cells if (c["n_subjects"], c["runs"]) == key), key=lambda c: c["n_trials"])
            x = [_trials_value(spec, c["n_trials"]) for c in row]
            label = f"{key[0]} subjects" + (f", {_runs(key[1])}" if key[1] > 1 else "")
            axes[0, j].plot(x, [c["parameters"][name]["rmse"] for c in row], marker="o", label=label)
            if within and all("within" in c["parameters"][name] for c in row):
                axes[1, j].plot(x, [c["parameters"][name]["within"]["share"] for c in row], marker="o", label=label)
                q = row[0]["parameters"][name]["within"]
                axes[1, j].axhline(q["assurance"], color="grey", ls=":", lw=1)
                axes[1, j].set_ylabel(f"share within ±{q['halfwidth']:g}")
                axes[1, j].set_ylim(-0.02, 1.02)
        axes[0, j].set_title(name, fontsize=9)
        axes[0, j].set_ylabel("RMSE")
        for ax in axes[:, j]:
            ax.set_xlabel(_trials_axis(spec))
        axes[0, j].legend(fontsize=7)
    fig.suptitle(f"recovery error against size: {spec.models[0]} on {spec.experiment}", y=1.02, fontsize=10)
    return [save_figure(fig, out / "recovery_error_by_size.png")]


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of the finite pairs (NaN under 3 pairs or with a constant side)."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def plot_recovery(table: pd.DataFrame, out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    for (n, t), cell in table.groupby(["n_subjects", "n_trials"], sort=True):
        names = list(dict.fromkeys(cell["parameter"]))
        fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
        for ax, name in zip(axes[0], names, strict=True):
            g = cell[cell["parameter"] == name]
            log = "scale" in g and bool((g["scale"] == "log").all())  # the parameter's declared scale
            ok = (g["identified"].astype(bool).to_numpy() if "identified" in g and g["identified"].notna().all()
                  else np.ones(len(g), bool))
            x, y = g["true"].to_numpy(float), g["estimate"].to_numpy(float)
            ax.scatter(x[ok], y[ok], s=6, alpha=0.4, label=f"identified ({int(ok.sum())})")
            if (~ok).any():
                ax.scatter(x[~ok], y[~ok], s=10, marker="x", color="tab:red", alpha=0.5,
                           label=f"not identified ({int((~ok).sum())})")
                ax.legend(fontsize=6)
            if log:  # scored on the log scale, drawn on log axes
                keep = (x > 0) & (y > 0)
                ax.set_xscale("log")
                ax.set_yscale("log")
                x, y, ok = np.log(x[keep]), np.log(y[keep]), ok[keep]
            lo = float(np.nanmin([g["true"].min(), g["estimate"].min()]))
            hi = float(np.nanmax([g["true"].max(), g["estimate"].max()]))
            if log:
                pos = g[["true", "estimate"]].to_numpy(float)
                lo = float(np.nanmin(pos[pos > 0])) if (pos > 0).any() else 1e-3
            ax.plot([lo, hi], [lo, hi], "k--", lw=1)
            r = _corr(x, y)
            title = f"{name}  r={r:.2f}"
            if not ok.all():
                title += f"\nr={_corr(x[ok], y[ok]):.2f} on the identified"
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("true" + (" (log scale)" if log else ""))
            ax.set_ylabel("estimate")
        fig.suptitle(f"parameter recovery, {n} subjects x {t} trials per run", y=1.04)
        paths.append(save_figure(fig, out / f"recovery_scatter_{n}x{t}.png"))
        wide = cell.assign(err=cell["estimate"] - cell["true"]).pivot_table(
            index=["rep", "subject"], columns="parameter", values="err", aggfunc="first")[names]
        corr = wide.corr().to_numpy()
        fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2, 1.2 * len(names) + 1.5))
        im = ax.imshow(corr, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_yticks(range(len(names)), names)
        for i in range(len(names)):
            for j in range(len(names)):
                ax.text(j, i, f"{corr[i, j]:.2f}", ha="center", va="center", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8)
        ax.set_title("correlation of estimation errors")
        paths.append(save_figure(fig, out / f"recovery_error_corr_{n}x{t}.png"))
    return paths


def plot_confusion(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    for crit, m in summary.items():
        probs = np.asarray(m["probabilities"])
        models = m["models"]
        fig, ax = plt.subplots(figsize=(1.3 * len(models) + 2, 1.3 * len(models) + 1.5))
        ax.imshow(probs, vmin=0, vmax=1, cmap="Blues")
        ax.set_xticks(range(len(models)), models)
        ax.set_yticks(range(len(models)), models)
        ax.set_xlabel("best-fitting model")
        ax.set_ylabel("generating model")
        for i in range(len(models)):
            for j in range(len(models)):
                ax.text(j, i, f"{probs[i, j]:.2f}", ha="center", va="center",
                        color="white" if probs[i, j] > 0.6 else "black")
        ax.set_title(f"model recovery ({crit.upper()})")
        paths.append(save_figure(fig, out / f"confusion_{crit}.png"))
    return paths


def plot_power(summary: dict[str, Any], out: Path, spec: Any = None) -> list[Path]:
    plt = pyplot()
    cells = pd.DataFrame(summary["cells"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    key = summary.get("rate_key", "power")
    for t, g in cells.groupby("n_trials"):
        ax.errorbar(g["n_subjects"], g[key], yerr=_wilson_bars(g[key], g["sims"]), marker="o", capsize=3,
                    label=design_name(spec, t) if spec is not None else f"{t} trials per run")
    if key == "power":
        ax.axhline(0.8, color="grey", ls=":", lw=1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("subjects")
    ax.set_ylabel(summary.get("quantity", "power"))
    model = f"{spec.models[0]}: " if spec is not None else ""
    ax.set_title(f"{model}{summary['effect']} = {summary['effect_size']:g}\n{summary['test']}", fontsize=9)
    ax.legend()
    return [save_figure(fig, out / "power_curve.png")]


def plot_sbc(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = pyplot()
    names = list(summary)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), names, strict=False):
        h = np.asarray(summary[name]["histogram"])
        ax.bar(range(len(h)), h, width=0.9)
        ax.axhline(h.sum() / len(h), color="k", ls="--", lw=1)
        ax.set_title(f"{name}  p={summary[name]['p_value']:.2f}", fontsize=9)
        ax.set_xticks([])
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    fig.suptitle("SBC rank histograms (uniform if calibrated)")
    return [save_figure(fig, out / "sbc_ranks.png")]


# ----------------------------------------------------------------------------- verdict
def verdict(result: Any) -> str:
    """One paragraph: what is recoverable / detectable / valid, at which n, under which truth."""
    spec = result.spec
    text = {"recovery": _verdict_recovery, "model-recovery": _verdict_model_recovery, "power": _verdict_power,
            "sbc": _verdict_sbc, "metric-validity": _verdict_validity, "metric-power": _verdict_metric_power,
            "test-size": _verdict_test, "test-power": _verdict_test}[spec.kind](result)
    return f"{text} {unit_sentence(spec)} True parameters: {spec.true_distribution}."


def unit_sentence(spec: Any) -> str:
    """What one simulated subject or run is (:func:`~cogtestbed.validation.studies.sizes.unit_text`)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.sizes import unit_text
    from cogtestbed.validation.studies.study_kinds import MODEL_KINDS

    return unit_text(get_experiment(spec.experiment), spec.kind in MODEL_KINDS, tuple(spec.runs))


def _verdict_recovery(result: Any) -> str:
    spec, s = result.spec, result.summary
    criterion = getattr(result, "criterion", None) or {}
    parts = []
    for cell in s.values():
        params = cell["parameters"]
        runs = f", {_runs(cell['runs'])} pooled per subject" if cell.get("runs", 1) > 1 else ""
        head = f"With {cell['n_subjects']} subjects of {design_name(spec, cell['n_trials'])}{runs}"
        stats = "; ".join(_param_stats(k, v) for k, v in params.items())
        parts.append(f"{head}: {stats}. {_recovery_call(params, criterion)}")
    return f"Parameter recovery of {spec.models[0]} ({spec.method}, {spec.reps} reps). " + " ".join(parts)


def _param_stats(name: str, v: dict[str, Any]) -> str:
    """One parameter's r, RMSE, bias, share within the tolerance, coverage and share at a bound."""
    scale = " (log scale)" if v.get("scale") == "log" else ""
    bits = [f"r {num(v['r'], 2)}" if not v.get("r_note") else v["r_note"],
            f"RMSE {num(v['rmse'])}{scale}", f"bias {num(v['bias'])}"]
    if v.get("mean_estimate") is not None:
        bits.append(f"mean estimate {num(v['mean_estimate'])} for mean truth {num(v['mean_true'])}")
    within = v.get("within")
    if within:
        lo, hi = within["interval95"]
        bits.append(f"{num(within['share'], 2)} within ±{within['halfwidth']:g} [{num(lo, 2)}, {num(hi, 2)}]")
    if "coverage90" in v:
        bits.append(f"90% interval coverage {num(v['coverage90'], 2)}")
    if v.get("at_bound"):
        flag = " — FLAG: estimates at a bound" if v["at_bound"] > BOUND_SHARE_FLAG else ""
        bits.append(f"{v['at_bound']:.0%} of estimates at a bound{flag}")
    if v.get("n_unidentified"):
        why = ", ".join(f"{n} {k}" for k, n in v["unidentified_reasons"].items())
        ident = v["identified"]
        on = f"r {num(ident['r'], 2)}" if not ident.get("r_note") else ident["r_note"]
        on += f", RMSE {num(ident['rmse'])}"
        bits.append(f"{v['n_unidentified']} of {v['n']} estimates NOT identified ({why}); on the "
                    f"{v['n_identified']} identified: {on}")
    return f"{name}: " + ", ".join(bits)


def _recovery_call(params: dict[str, Any], criterion: dict[str, Any]) -> str:
    """Which parameters are recovered well: by the user's tolerance where stated, else by r."""
    txt = (_recovery_by_tolerance(params, criterion["assurance"]) if criterion.get("precision")
           else _recovery_by_r(params))
    flagged = [k for k, v in params.items() if (v.get("at_bound") or 0) > BOUND_SHARE_FLAG]
    if flagged:
        txt += f" Flagged: {', '.join(flagged)} estimates pile up at a bound (means and RMSE are distorted)."
    return txt


def _recovery_by_tolerance(params: dict[str, Any], q: float) -> str:
    """The recovery call against the user's stated tolerance (share ``q`` of estimates within it)."""
    met = [k for k, v in params.items() if v.get("within", {}).get("meets")]
    missed = [k for k, v in params.items() if "within" in v and not v["within"]["meets"]]
    return (f"Recovered well (≥ {q:.0%} of estimates within the stated tolerance): {', '.join(met) or 'none'}"
            + (f"; NOT within tolerance: {', '.join(missed)}" if missed else "") + ".")


def _recovery_by_r(params: dict[str, Any]) -> str:
    """The recovery call by the r >= R_GOOD / r < R_POOR convention (no tolerance stated)."""
    judged = {k: v for k, v in params.items() if not v.get("r_note")}
    good = [k for k, v in judged.items() if v["r"] >= R_GOOD]
    poor = [k for k, v in judged.items() if not v["r"] >= R_POOR]
    txt = (f"No tolerance stated (recover --precision PARAM=HALFWIDTH): by the r >= {R_GOOD} convention "
           f"{', '.join(good) or 'no parameter'} {'tracks' if len(good) == 1 else 'track'} the truth")
    return txt + (f"; {', '.join(poor)} poorly (r < {R_POOR}) — do not interpret individual estimates."
                  if poor else ".")


def _verdict_model_recovery(result: Any) -> str:
    s = result.summary
    parts = [f"{c.upper()} picks the generating model {m['accuracy']:.0%} of the time" for c, m in s.items()]
    for c, m in s.items():
        p = np.asarray(m["probabilities"])
        for i, g in enumerate(m["models"]):
            if p[i, i] < 0.7:
                parts.append(f"{g} is recognised only {p[i, i]:.0%} of the time by {c.upper()}")
    return (f"Model recovery among {', '.join(result.spec.models)} ({_study_design(result.spec)}): "
            + "; ".join(parts) + ".")


def _reach(spec: Any, cells: pd.DataFrame, by: str, size: str, value: str, what: str) -> list[str]:
    parts = []
    for t, g in cells.groupby(by):
        ok = g[g[value] >= 0.8]
        if len(ok):
            parts.append(f"with {design_name(spec, t)}, {int(ok[size].min())} {what} reach 80% power")
        else:
            parts.append(f"with {design_name(spec, t)}, none of {sorted(int(x) for x in g[size])} {what} reaches "
                         f"80% power (max {g[value].max():.0%})")
    return parts


def _verdict_power(result: Any) -> str:
    spec, s = result.spec, result.summary
    head = (f"Power to detect {s['effect']} = {s['effect_size']:g} for {spec.models[0]} ({s['test']}, "
            f"level {spec.level})")
    if s["effect_size"] == 0:
        head = f"Type-I error rate of {s['effect']} for {spec.models[0]} ({s['test']}, level {spec.level})"
        rates = ", ".join(f"{c['n_subjects']} subjects of {design_name(spec, c['n_trials'])}: "
                          f"{rate_text(c['type_i_error'], c['sims'])}" for c in s["cells"])
        return f"{head}: at effect 0 every rejection, in either direction, is a false positive: {rates}."
    parts = _reach(spec, pd.DataFrame(s["cells"]), "n_trials", "n_subjects", "power", "subjects")
    return head + ": " + "; ".join(parts) + "."


def _verdict_sbc(result: Any) -> str:
    spec, s = result.spec, result.summary
    bad = [k for k, v in s.items() if v["p_value"] < 0.01]
    return (f"SBC for hierarchical {spec.models[0]} ({spec.reps} data sets of {_study_design(spec)}): "
            + (f"uniformity rejected at p < 0.01 for {', '.join(bad)} — the sampler or the model code is "
               "miscalibrated there." if bad else
               "rank uniformity not rejected at p = 0.01 for any variable (min p = "
               f"{min(v['p_value'] for v in s.values()):.3f})."))


def _verdict_validity(result: Any) -> str:
    spec, s = result.spec, result.summary
    parts = []
    for cell in s.values():
        means = ", ".join(f"{r['value']:g}: {num(r['mean'])}" + (f" ± {num(r['sd'], 2)} SD" if r["sd"] == r["sd"] else
                                                                 " (one replication: no SD)")
                          for r in cell["by_value"])
        shape = ("increasing" if cell["increasing"] else "decreasing" if cell["decreasing"] else "not monotone")
        if cell["passed"] is None:
            call = f"means {shape} (no direction declared)"
        else:
            call = f"{'PASS' if cell['passed'] else 'FAIL'}: expected {cell['direction']}, means {shape}"
        parts.append(f"at {_runs(cell['runs'])} of {design_name(spec, cell['n_trials'])}, Spearman rho = "
                     f"{cell['spearman']:.2f}, {call} [{means}]")
    return (f"Metric validity of {spec.metric} against {spec.agent}'s {spec.parameter} ({spec.reps} reps): "
            + "; ".join(parts) + ".")


def _verdict_metric_power(result: Any) -> str:
    spec, s = result.spec, result.summary
    assert spec.compare is not None
    a, b = (", ".join(f"{k}={v:g}" for k, v in side.items()) for side in spec.compare)
    cells = pd.DataFrame(s["cells"])
    ok = cells[cells["power"] >= 0.8]
    swept = s.get("parameter")
    if swept:
        reach = (f"{swept} = {ok['value'].min():g} reaches 80% power" if len(ok) else
                 f"no {swept} of {sorted(cells['value'].tolist())} reaches 80% power (max {cells['power'].max():.0%})")
    else:
        reach = (f"{int(ok['runs'].min())} runs per setting reach 80% power" if len(ok) else
                 f"none of {sorted(cells['runs'].tolist())} runs reaches 80% power "
                 f"(max {cells['power'].max():.0%})")
    rates = ", ".join(f"{_runs(c['runs'])} of {design_name(spec, c['n_trials'])}"
                      + (f", {swept}={c['value']:g}" if "value" in c else "")
                      + f": {rate_text(c['power'], c['sims'])}" for c in s["cells"])
    return (f"Power to detect a difference in {s['metric']} between {spec.agent} ({a}) and ({b}) "
            f"({s['test']}, two-sided, level {spec.level}): {rates}; {reach}.")


def _verdict_test(result: Any) -> str:
    spec, s = result.spec, result.summary
    swept = s.get("parameter")

    def where(c: dict[str, Any]) -> str:
        return (f"{_runs(c['runs'])} of {design_name(spec, c['n_trials'])}"
                + (f", {swept}={c['value']:g}" if "value" in c else ""))

    rates = ", ".join(f"{where(c)}: {rate_text(c['rejection_rate'], c['sims'])}" for c in s["cells"])
    setting = ", ".join(f"{k}={v:g}" for k, v in spec.params.items()) or "defaults"
    if spec.kind == "test-size":
        off = [c for c in s["cells"] if abs(c["rejection_rate"] - spec.level) > 2 * max(c["mc_se"], 1e-9)]
        call = ("size differs from the nominal level by more than 2 MC SE at "
                + ", ".join(where(c) for c in off) if off else
                f"size consistent with the nominal {spec.level} (within 2 MC SE)")
        return f"Size of {s['test']} under {spec.agent} ({setting}): rejection rate {rates}; {call}."
    head = f"Power of {s['test']} under {spec.agent} ({setting}, level {spec.level})"
    if not swept:
        return f"{head}: rejection rate {rates}; {_power_reach(spec, s['cells'])}."
    parts = []
    for value in sorted({c["value"] for c in s["cells"] if "value" in c}):
        cells = [c for c in s["cells"] if c.get("value") == value]
        listed = ", ".join(f"{_runs(c['runs'])} of {design_name(spec, c['n_trials'])} "
                           f"{rate_text(c['rejection_rate'], c['sims'])}" for c in cells)
        if value == 0:
            parts.append(f"at {swept}=0 (no effect) the false-positive rate is {listed}")
        else:
            parts.append(f"at {swept}={value:g}: {listed}; {_power_reach(spec, cells)}")
    return f"{head}: " + "; ".join(parts) + "."


def _power_reach(spec: Any, cells: list[dict[str, Any]], target: float = 0.8) -> str:
    """The smallest design (fewest trials per run, then runs) whose rate reaches ``target``."""
    ok = sorted((c for c in cells if c["rejection_rate"] >= target), key=lambda c: (c["n_trials"], c["runs"]))
    if ok:
        c = ok[0]
        return f"{target:.0%} power first reached with {_runs(c['runs'])} of {design_name(spec, c['n_trials'])}"
    best = max((c["rejection_rate"] for c in cells), default=float("nan"))
    return f"no design here reaches {target:.0%} power (max {best:.0%})"


# ----------------------------------------------------------------------------- outputs
def plot_validity(summary: dict[str, Any], out: Path, spec: Any = None) -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for cell in summary.values():
        rows = pd.DataFrame(cell["by_value"])
        label = _runs(cell["runs"]) + (f" of {design_name(spec, cell['n_trials'])}" if spec is not None else "")
        ax.errorbar(rows["value"], rows["mean"], yerr=rows["sd"].fillna(0), marker="o", capsize=3, label=label)
        ax.set_xlabel(cell["parameter"])
        ax.set_ylabel(cell["metric"])
    ax.legend(fontsize=7)
    title = "metric validity: mean ± SD across replications"
    ax.set_title(title + (f"\n{_rate_title({'metric': spec.metric}, spec)}" if spec is not None else ""), fontsize=8)
    return [save_figure(fig, out / "metric_validity.png")]


def plot_rate(summary: dict[str, Any], out: Path, value: str, name: str, spec: Any = None) -> list[Path]:
    """A rejection rate (or metric power) against what varies: the swept parameter, else the
    design's size (its trials field) where several designs were run, else the runs; one line per
    other cell, labelled by runs and design; the title names the test, agent and its settings."""
    plt = pyplot()
    cells = pd.DataFrame(summary["cells"])
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    swept = summary.get("parameter") if "value" in cells else None
    designs = cells["n_trials"].nunique() > 1 if "n_trials" in cells else False
    if swept:
        x_col, x_label, group = "value", str(swept), ["runs", "n_trials"]
    elif designs:
        x_col, x_label, group = "n_trials", _trials_axis(spec), ["runs"]
    else:
        x_col, x_label, group = "runs", "runs per setting", ["n_trials"]
    for key, g in cells.groupby(group):
        keys = dict(zip(group, key if isinstance(key, tuple) else (key,), strict=True))
        parts = [_runs(keys["runs"])] if "runs" in keys else []
        if "n_trials" in keys:
            parts.append(design_name(spec, keys["n_trials"]) if spec is not None else f"{keys['n_trials']} trials")
        label = ", ".join(parts)
        x = g[x_col].map(lambda t: _trials_value(spec, t)) if x_col == "n_trials" else g[x_col]
        ax.errorbar(x, g[value], yerr=_wilson_bars(g[value], g["sims"]), marker="o", capsize=3, label=label)
    ax.axhline(0.8 if value == "power" else 0.05, color="grey", ls=":", lw=1)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    ax.set_xlabel(x_label)
    ax.set_ylabel(value.replace("_", " "))
    ax.set_title(_rate_title(summary, spec), fontsize=8)
    return [save_figure(fig, out / f"{name}.png")]


def _wilson_bars(rates: Any, sims: Any) -> np.ndarray:
    """Asymmetric error bars of the 95 % Wilson intervals (never zero-width at rates 0 and 1)."""
    from cogtestbed.formatting import wilson

    bounds = [wilson(float(r) * int(n), int(n)) for r, n in zip(rates, sims, strict=True)]
    r = np.asarray(rates, float)
    return np.array([[max(0.0, x - lo) for x, (lo, _) in zip(r, bounds, strict=True)],
                     [max(0.0, hi - x) for x, (_, hi) in zip(r, bounds, strict=True)]])


def _trials_axis(spec: Any) -> str:
    """The x label of a sweep over designs: the experiment's trials field, in words."""
    from cogtestbed.formatting import FIELD_NOUNS
    from cogtestbed.registry import get_experiment

    field_ = get_experiment(spec.experiment).trials_field if spec is not None else None
    return FIELD_NOUNS.get(field_ or "", field_ or "trials per run")


def _trials_value(spec: Any, n_trials: Any) -> float:
    """The trials field's value of the design with ``n_trials`` trials per run."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.study_data import design_for_trials

    exp = get_experiment(spec.experiment)
    if exp.trials_field is None:
        return float(n_trials)
    return float(getattr(design_for_trials(exp, int(n_trials), spec.design), exp.trials_field))


def _rate_title(summary: dict[str, Any], spec: Any) -> str:
    """Test (or metric), agent, its settings and the non-size design fields (network, noise...)."""
    what = summary.get("metric") or summary.get("test") or ""
    if spec is None:
        return str(what)
    settings = ", ".join(f"{k}={v:g}" for k, v in spec.params.items()) or "default settings"
    design = ", ".join(f"{k}={v}" for k, v in spec.design.items())
    return f"{what} under {spec.agent} ({settings})" + (f"\n{spec.experiment}: {design}" if design else
                                                        f"\n{spec.experiment}")


def plots(result: Any, out: Path) -> list[Path]:
    kind = result.spec.kind
    if kind == "recovery":
        return [*plot_recovery(result.table, out), *plot_error_by_size(result, out)]
    if kind == "model-recovery":
        return plot_confusion(result.summary, out)
    if kind == "power":
        return plot_power(result.summary, out, result.spec)
    if kind == "sbc":
        return plot_sbc(result.summary, out)
    if kind == "metric-validity":
        return plot_validity(result.summary, out, result.spec)
    if kind == "metric-power":
        return plot_rate(result.summary, out, "power", "metric_power", result.spec)
    return plot_rate(result.summary, out, "rejection_rate", kind.replace("-", "_"), result.spec)


#: Columns of a recovery table, in order (those present).
RECOVERY_COLUMNS = ("r", "rmse", "bias", "mean_true", "mean_estimate", "coverage90", "at_bound", "r_identified",
                    "n_identified", "n_unidentified")


def _recovery_frame(params: dict[str, Any]) -> pd.DataFrame:
    """One row per parameter: r, RMSE, bias, means, share within the tolerance, coverage, share at a bound."""
    rows = {}
    for name, v in params.items():
        row = {k: v[k] for k in RECOVERY_COLUMNS if k in v}
        if v.get("within"):
            row[f"within ±{v['within']['halfwidth']:g}"] = v["within"]["share"]
        rows[name] = row
    return pd.DataFrame(rows).T


def _summary_tables(result: Any) -> list[tuple[str, pd.DataFrame]]:
    s, kind = result.summary, result.spec.kind
    if kind == "recovery":
        return [(f"{c['n_subjects']} subjects of {design_name(result.spec, c['n_trials'])}"
                 + (f", {_runs(c['runs'])} pooled" if c.get("runs", 1) > 1 else ""), _recovery_frame(c["parameters"]))
                for c in s.values()]
    if kind == "model-recovery":
        return [(f"confusion ({k.upper()}, row = generating model)",
                 pd.DataFrame(m["probabilities"], index=m["models"], columns=m["models"])) for k, m in s.items()]
    if kind == "sbc":
        return [("SBC uniformity (chi-square)", pd.DataFrame({k: {"p_value": v["p_value"], "reps": v["reps"],
                                                                  "L": v["L"]} for k, v in s.items()}).T)]
    if kind == "metric-validity":
        return [(f"{c['metric']} by {c['parameter']}, {c['runs']} runs", pd.DataFrame(c["by_value"]))
                for c in s.values()]
    return [(kind, pd.DataFrame(s["cells"]))]


#: The captioned tables of a study's summary (the public name of :func:`_summary_tables`).
summary_tables = _summary_tables


def html_report(title: str, sections: list[dict[str, Any]]) -> str:
    """A self-contained HTML page: each section has a heading, verdict, tables and PNG paths."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for sec in sections:
        body.append(f"<section><h2>{html.escape(sec['title'])}</h2>")
        if sec.get("verdict"):
            body.append(f"<p class='verdict'>{html.escape(sec['verdict'])}</p>")
        for caption, df in sec.get("tables", []):
            body.append(f"<h3>{html.escape(caption)}</h3>")
            body.append(df.to_html(float_format=lambda x: f"{x:.3g}", border=0, classes="tbl"))
        for png in sec.get("plots", []):
            data = base64.b64encode(Path(png).read_bytes()).decode()
            body.append(f"<figure><img alt='{html.escape(Path(png).stem)}' "
                        f"src='data:image/png;base64,{data}'/><figcaption>"
                        f"{html.escape(Path(png).name)}</figcaption></figure>")
        if sec.get("details"):
            body.append(f"<details><summary>specification and timing</summary><pre>"
                        f"{html.escape(sec['details'])}</pre></details>")
        body.append("</section>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             ".tbl{border-collapse:collapse;margin:.5em 0}.tbl td,.tbl th{padding:2px 8px;"
             "border-bottom:1px solid #ddd;text-align:right}.verdict{background:#f3f6fa;"
             "padding:.6em;border-left:4px solid #4a78b0}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>{''.join(body)}</body></html>")


def study_section(result: Any, plot_paths: list[Path]) -> dict[str, Any]:
    details = json.dumps({"spec": result.spec.model_dump(), "seconds": round(result.seconds, 2)},
                         indent=1, default=str)
    spec = result.spec
    return {"title": f"{spec.kind}: {spec.subject} ({spec.experiment}, {spec.method})",
            "verdict": result.verdict, "tables": _summary_tables(result), "plots": plot_paths,
            "details": details}


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write text or bytes to ``path`` atomically (a reader never sees half a file)."""
    from cogtestbed.trials import atomic_write_bytes

    payload = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_bytes(path, lambda tmp: tmp.write_bytes(payload))


def check_output_dir(out: Path) -> Path:
    """Create ``out`` (a folder for study outputs) and check it is writable, before any computation."""
    import tempfile

    if out.exists() and not out.is_dir():
        raise FileExistsError(f"output {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise InputError(f"cannot write to output folder {out}: {exc.strerror or exc}") from None
    return out


def check_output_target(out: Path) -> Path:
    """Refuse, before any computation, an output folder that could not be written, without creating
    it (a command that is interrupted or fails then leaves no folder behind): ``out`` must be a
    writable folder, or not exist under a writable existing folder."""
    import os

    if out.exists() and not out.is_dir():
        raise FileExistsError(f"output {out} exists and is not a folder")
    here = out.absolute()
    while not here.exists():
        here = here.parent
    if not here.is_dir() or not os.access(here, os.W_OK | os.X_OK):
        raise InputError(f"cannot write to output folder {out}: {here} is not a writable folder")
    return out


def resolved(spec: Any) -> list[dict[str, Any]]:
    """Every design the study played, every field with its default (and its label, trials per run)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.sizes import resolved_designs

    return resolved_designs(get_experiment(spec.experiment), spec.design, tuple(spec.trials))


def write_study(result: Any, out: Path) -> dict[str, Path]:
    """results.parquet, summary.json, PNG plots and report.html in ``out`` (each written to a
    temporary file and renamed, so a failure leaves no half file)."""
    from cogtestbed.trials import atomic_write_bytes, package_versions

    check_output_dir(out)
    table = out / "results.parquet"
    frame = result.table.copy()
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].astype(str)
    atomic_write_bytes(table, lambda tmp: frame.to_parquet(tmp, index=False))
    summary = out / "summary.json"
    atomic_write(summary, json.dumps({"spec": result.spec.model_dump(), "designs": resolved(result.spec),
                                       "summary": result.summary,
                                       "verdict": result.verdict,
                                       "true_parameters": result.spec.true_distribution, "seconds": result.seconds,
                                       "versions": package_versions()},
                                      indent=1, default=str))
    pngs = plots(result, out)
    report = out / "report.html"
    atomic_write(report, html_report(f"cogtestbed study: {result.spec.kind}",
                                      [study_section(result, pngs)]))
    return {"table": table, "summary": summary, "report": report,
            **{p.stem: p for p in pngs}}
