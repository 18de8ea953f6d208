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

from cogtestbed.formatting import rate_text

#: Recovery r at or above this is called "good"; below 0.5 "poor" (conventions of e.g.
#: Wilson & Collins 2019 / White et al. for learning-model parameters).
R_GOOD, R_POOR = 0.8, 0.5


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------------- plots
def plot_recovery(table: pd.DataFrame, out: Path) -> list[Path]:
    plt = _plt()
    paths = []
    for (n, t), cell in table.groupby(["n_subjects", "n_trials"], sort=True):
        names = list(dict.fromkeys(cell["parameter"]))
        fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
        for ax, name in zip(axes[0], names, strict=True):
            g = cell[cell["parameter"] == name]
            ax.scatter(g["true"], g["estimate"], s=6, alpha=0.4)
            lo = float(np.nanmin([g["true"].min(), g["estimate"].min()]))
            hi = float(np.nanmax([g["true"].max(), g["estimate"].max()]))
            ax.plot([lo, hi], [lo, hi], "k--", lw=1)
            x, y = g["true"].to_numpy(float), g["estimate"].to_numpy(float)
            if "scale" in g and (g["scale"] == "log").all():  # scored on the log scale
                x, y = np.log(x), np.log(y)
            r = np.corrcoef(x, y)[0, 1] if len(g) > 2 else np.nan
            ax.set_title(f"{name}  r={r:.2f}")
            ax.set_xlabel("true")
            ax.set_ylabel("estimate")
            if name.startswith("beta") and (g["true"] > 0).all() and (g["estimate"] > 0).all():
                ax.set_xscale("log")
                ax.set_yscale("log")
        fig.suptitle(f"parameter recovery, {n} subjects x {t} trials", y=1.04)
        paths.append(_save(fig, out / f"recovery_scatter_{n}x{t}.png"))
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
        paths.append(_save(fig, out / f"recovery_error_corr_{n}x{t}.png"))
    return paths


def plot_confusion(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = _plt()
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
        paths.append(_save(fig, out / f"confusion_{crit}.png"))
    return paths


def plot_power(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = _plt()
    cells = pd.DataFrame(summary["cells"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    key = summary.get("rate_key", "power")
    for t, g in cells.groupby("n_trials"):
        ax.errorbar(g["n_subjects"], g[key], yerr=1.96 * g["mc_se"], marker="o", capsize=3,
                    label=f"{t} trials")
    if key == "power":
        ax.axhline(0.8, color="grey", ls=":", lw=1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("subjects")
    ax.set_ylabel(summary.get("quantity", "power"))
    ax.set_title(f"{summary['effect']} = {summary['effect_size']:g}\n{summary['test']}", fontsize=9)
    ax.legend()
    return [_save(fig, out / "power_curve.png")]


def plot_sbc(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = _plt()
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
    return [_save(fig, out / "sbc_ranks.png")]


# ----------------------------------------------------------------------------- verdict
def verdict(result: Any) -> str:
    """One paragraph: what is recoverable / detectable / valid, at which n, under which truth."""
    spec = result.spec
    text = {"recovery": _verdict_recovery, "model-recovery": _verdict_model_recovery, "power": _verdict_power,
            "sbc": _verdict_sbc, "metric-validity": _verdict_validity, "metric-power": _verdict_metric_power,
            "test-size": _verdict_test, "test-power": _verdict_test}[spec.kind](result)
    return f"{text} True parameters: {spec.true_distribution}."


def _verdict_recovery(result: Any) -> str:
    spec, s = result.spec, result.summary
    parts = []
    for cell in s.values():
        params = cell["parameters"]
        runs = f" ({cell['runs']} runs pooled)" if cell.get("runs", 1) > 1 else ""
        head = f"With {cell['n_subjects']} subjects x {cell['n_trials']} trials{runs}"
        unjudged = {k: v["r_note"] for k, v in params.items() if v.get("r_note")}
        if len(unjudged) == len(params):
            parts.append(f"{head}: {'; '.join(f'{k}: {note}' for k, note in unjudged.items())}.")
            continue
        judged = {k: v for k, v in params.items() if k not in unjudged}
        good = [k for k, v in judged.items() if v["r"] >= R_GOOD]
        poor = [k for k, v in judged.items() if not v["r"] >= R_POOR]
        mid = [k for k in judged if k not in good and k not in poor]
        rs = ", ".join(f"{k} r={v['r']:.2f}" for k, v in judged.items())
        txt = f"{head} ({rs}): {', '.join(good) or 'no parameter'} recovered well (r >= {R_GOOD})"
        if mid:
            txt += f"; {', '.join(mid)} moderately"
        if poor:
            txt += f"; {', '.join(poor)} poorly (r < {R_POOR}) — do not interpret individual estimates"
        if unjudged:
            txt += "; " + "; ".join(f"{k}: {note}" for k, note in unjudged.items())
        covs = [f"{k} {v['coverage90']:.0%}" for k, v in cell["parameters"].items() if "coverage90" in v]
        if covs:
            txt += f"; 90% interval coverage {', '.join(covs)}"
        parts.append(txt + ".")
    return f"Parameter recovery of {spec.models[0]} ({spec.method}, {spec.reps} reps). " + " ".join(parts)


def _verdict_model_recovery(result: Any) -> str:
    s = result.summary
    parts = [f"{c.upper()} picks the generating model {m['accuracy']:.0%} of the time" for c, m in s.items()]
    for c, m in s.items():
        p = np.asarray(m["probabilities"])
        for i, g in enumerate(m["models"]):
            if p[i, i] < 0.7:
                parts.append(f"{g} is recognised only {p[i, i]:.0%} of the time by {c.upper()}")
    return f"Model recovery among {', '.join(result.spec.models)}: " + "; ".join(parts) + "."


def _reach(cells: pd.DataFrame, by: str, size: str, value: str, what: str) -> list[str]:
    parts = []
    for t, g in cells.groupby(by):
        ok = g[g[value] >= 0.8]
        if len(ok):
            parts.append(f"with {t} trials, {int(ok[size].min())} {what} reach 80% power")
        else:
            parts.append(f"with {t} trials, none of {sorted(g[size].tolist())} {what} reaches 80% power "
                         f"(max {g[value].max():.0%})")
    return parts


def _verdict_power(result: Any) -> str:
    spec, s = result.spec, result.summary
    head = (f"Power to detect {s['effect']} = {s['effect_size']:g} for {spec.models[0]} ({s['test']}, "
            f"level {spec.level})")
    if s["effect_size"] == 0:
        head = f"Type-I error rate of {s['effect']} for {spec.models[0]} ({s['test']}, level {spec.level})"
        rates = ", ".join(f"{c['n_subjects']} subjects {rate_text(c['type_i_error'], c['sims'])}"
                          for c in s["cells"])
        return f"{head}: at effect 0 every rejection, in either direction, is a false positive: {rates}."
    parts = _reach(pd.DataFrame(s["cells"]), "n_trials", "n_subjects", "power", "subjects")
    return head + ": " + "; ".join(parts) + "."


def _verdict_sbc(result: Any) -> str:
    spec, s = result.spec, result.summary
    bad = [k for k, v in s.items() if v["p_value"] < 0.01]
    return (f"SBC for hierarchical {spec.models[0]} ({spec.reps} data sets): "
            + (f"uniformity rejected at p < 0.01 for {', '.join(bad)} — the sampler or the model code is "
               "miscalibrated there." if bad else
               "rank uniformity not rejected at p = 0.01 for any variable (min p = "
               f"{min(v['p_value'] for v in s.values()):.3f})."))


def _verdict_validity(result: Any) -> str:
    spec, s = result.spec, result.summary
    parts = []
    for cell in s.values():
        means = ", ".join(f"{r['value']:g}: {r['mean']:.3g} ± {r['sd']:.2g}" for r in cell["by_value"])
        shape = ("increasing" if cell["increasing"] else "decreasing" if cell["decreasing"] else "not monotone")
        if cell["passed"] is None:
            call = f"means {shape} (no direction declared)"
        else:
            call = f"{'PASS' if cell['passed'] else 'FAIL'}: expected {cell['direction']}, means {shape}"
        parts.append(f"at {cell['runs']} runs, Spearman rho = {cell['spearman']:.2f}, {call} [{means}]")
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
    rates = ", ".join(f"{c['runs']} runs" + (f", {swept}={c['value']:g}" if "value" in c else "")
                      + f" {rate_text(c['power'], c['sims'])}" for c in s["cells"])
    return (f"Power to detect a difference in {s['metric']} between {spec.agent} ({a}) and ({b}) "
            f"({s['test']}, two-sided, level {spec.level}): {rates}; {reach}.")


def _verdict_test(result: Any) -> str:
    spec, s = result.spec, result.summary
    swept = s.get("parameter")

    def where(c: dict[str, Any]) -> str:
        return f"{c['runs']} runs" + (f", {swept}={c['value']:g}" if "value" in c else "")

    rates = ", ".join(f"{where(c)}: {rate_text(c['rejection_rate'], c['sims'])}" for c in s["cells"])
    setting = ", ".join(f"{k}={v:g}" for k, v in spec.params.items()) or "defaults"
    if spec.kind == "test-size":
        off = [c for c in s["cells"] if abs(c["rejection_rate"] - spec.level) > 2 * max(c["mc_se"], 1e-9)]
        call = ("size differs from the nominal level by more than 2 MC SE at "
                + ", ".join(where(c) for c in off) if off else
                f"size consistent with the nominal {spec.level} (within 2 MC SE)")
        return f"Size of {s['test']} under {spec.agent} ({setting}): rejection rate {rates}; {call}."
    return f"Power of {s['test']} under {spec.agent} ({setting}): rejection rate {rates}."


# ----------------------------------------------------------------------------- outputs
def plot_validity(summary: dict[str, Any], out: Path) -> list[Path]:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for cell in summary.values():
        rows = pd.DataFrame(cell["by_value"])
        ax.errorbar(rows["value"], rows["mean"], yerr=rows["sd"].fillna(0), marker="o", capsize=3,
                    label=f"{cell['runs']} runs")
        ax.set_xlabel(cell["parameter"])
        ax.set_ylabel(cell["metric"])
    ax.legend()
    ax.set_title("metric validity: mean ± SD across replications", fontsize=9)
    return [_save(fig, out / "metric_validity.png")]


def plot_rate(summary: dict[str, Any], out: Path, value: str, name: str) -> list[Path]:
    plt = _plt()
    cells = pd.DataFrame(summary["cells"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    swept = summary.get("parameter") if "value" in cells else None
    for runs, g in cells.groupby("runs") if swept else [(None, cells)]:
        x = g["value"] if swept else g["runs"]
        ax.errorbar(x, g[value], yerr=1.96 * g["mc_se"], marker="o", capsize=3,
                    label=f"{runs} runs" if swept else None)
    ax.axhline(0.8 if value == "power" else 0.05, color="grey", ls=":", lw=1)
    ax.set_ylim(-0.02, 1.02)
    if swept:
        ax.legend(fontsize=8)
    ax.set_xlabel(str(swept) if swept else "runs per setting")
    ax.set_ylabel(value.replace("_", " "))
    ax.set_title(summary["test"], fontsize=9)
    return [_save(fig, out / f"{name}.png")]


def plots(result: Any, out: Path) -> list[Path]:
    kind = result.spec.kind
    if kind == "recovery":
        return plot_recovery(result.table, out)
    if kind == "model-recovery":
        return plot_confusion(result.summary, out)
    if kind == "power":
        return plot_power(result.summary, out)
    if kind == "sbc":
        return plot_sbc(result.summary, out)
    if kind == "metric-validity":
        return plot_validity(result.summary, out)
    if kind == "metric-power":
        return plot_rate(result.summary, out, "power", "metric_power")
    return plot_rate(result.summary, out, "rejection_rate", kind.replace("-", "_"))


def _summary_tables(result: Any) -> list[tuple[str, pd.DataFrame]]:
    s, kind = result.summary, result.spec.kind
    if kind == "recovery":
        return [(f"{c['n_subjects']} subjects x {c['n_trials']} trials", pd.DataFrame(c["parameters"]).T)
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


def _atomic_write(path: Path, data: str | bytes) -> None:
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
        raise ValueError(f"cannot write to output folder {out}: {exc.strerror or exc}") from None
    return out


def write_study(result: Any, out: Path) -> dict[str, Path]:
    """results.parquet, summary.json, PNG plots and report.html in ``out`` (each written to a
    temporary file and renamed, so a failure leaves no half file)."""
    from cogtestbed.trials import atomic_write_bytes

    check_output_dir(out)
    table = out / "results.parquet"
    frame = result.table.copy()
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].astype(str)
    atomic_write_bytes(table, lambda tmp: frame.to_parquet(tmp, index=False))
    summary = out / "summary.json"
    _atomic_write(summary, json.dumps({"spec": result.spec.model_dump(), "summary": result.summary,
                                       "verdict": result.verdict,
                                       "true_parameters": result.spec.true_distribution, "seconds": result.seconds},
                                      indent=1, default=str))
    pngs = plots(result, out)
    report = out / "report.html"
    _atomic_write(report, html_report(f"cogtestbed study: {result.spec.kind}",
                                      [study_section(result, pngs)]))
    return {"table": table, "summary": summary, "report": report,
            **{p.stem: p for p in pngs}}
