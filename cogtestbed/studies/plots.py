"""A study's PNG plots: recovery → true-vs-estimated scatter per parameter and the correlation matrix of
the estimation errors (a strong off-diagonal value flags a trade-off such as α vs β); model recovery →
confusion matrices; power → power curves with ±1.96 Monte-Carlo SE bars; SBC → rank histograms;
validity and rates → Wilson-interval curves over the size.  Each figure is written to a temporary
name and renamed (:func:`save_figure`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.no_data import pearson_r
from cogtestbed.studies.labels import design_name, runs_text


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
            label = f"{key[0]} subjects" + (f", {runs_text(key[1])}" if key[1] > 1 else "")
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


def _corr(x: np.ndarray, y: np.ndarray) -> str:
    """Pearson r of the finite pairs as a title prints it: undefined with its reason under 3 pairs
    or with a side without variation (:func:`~cogtestbed.no_data.pearson_r`)."""
    return pearson_r(x, y).text()


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
            title = f"{name}  r={_corr(x, y)}"
            if not ok.all():
                title += f"\nr={_corr(x[ok], y[ok])} on the identified"
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


# ----------------------------------------------------------------------------- outputs
def plot_validity(summary: dict[str, Any], out: Path, spec: Any = None) -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for cell in summary.values():
        rows = pd.DataFrame(cell["by_value"])
        label = runs_text(cell["runs"]) + (f" of {design_name(spec, cell['n_trials'])}" if spec is not None else "")
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
        parts = [runs_text(keys["runs"])] if "runs" in keys else []
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
    from cogtestbed.studies.study_data import design_for_trials

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
