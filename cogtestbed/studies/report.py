"""Outputs of a study: Parquet table, PNG plots, a one-paragraph verdict and an HTML report
(:func:`write_study`).  The plots are :mod:`~cogtestbed.studies.plots`, the verdict
:mod:`~cogtestbed.studies.verdict`; here the summary tables, the HTML report and the
output folder.  Files are written to a temporary name and renamed, so a failed run leaves no half file.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.studies.labels import design_name, runs_text
from cogtestbed.studies.plots import plots

#: Columns of a recovery table, in order (those present).
RECOVERY_COLUMNS = ("r", "rmse", "bias", "mean_true", "summary_kind", "summary_estimate", "summary_true",
                    "summary_offset", "summary_biased", "median_estimate", "mean_estimate", "coverage90", "coverage95",
                    "at_bound", "flagged", "r_identified")


def _recovery_frame(params: dict[str, Any]) -> pd.DataFrame:
    """One row per parameter: r, RMSE, bias, means, share within the tolerance, coverage, share at a bound."""
    rows = {}
    for name, v in params.items():
        row = {k: v[k] for k in RECOVERY_COLUMNS if k in v}
        if v.get("within"):
            row[f"within ±{v['within']['halfwidth']:g}"] = v["within"]["share"]
        rows[name] = row
    return pd.DataFrame(rows).T


def summary_tables(result: Any) -> list[tuple[str, pd.DataFrame]]:
    """The captioned tables of a study's summary (recovery per parameter, power cells, ...)."""
    s, kind = result.summary, result.spec.kind
    if kind == "recovery":
        return [(f"{c['n_subjects']} subjects of {design_name(result.spec, c['n_trials'])}"
                 + (f", {runs_text(c['runs'])} pooled" if c.get("runs", 1) > 1 else ""),
                 _recovery_frame(c["parameters"]))
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
            "verdict": result.verdict, "tables": summary_tables(result), "plots": plot_paths,
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


def resolved(spec: Any) -> list[dict[str, Any]]:
    """Every design the study played, every field with its default (and its label, trials per run)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.sizes import resolved_designs

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
                                       "versions": package_versions(),
                                       **({"request": result.request} if getattr(result, "request", None)
                                          is not None else {})},
                                      indent=1, default=str))
    pngs = plots(result, out)
    report = out / "report.html"
    atomic_write(report, html_report(f"cogtestbed study: {result.spec.kind}",
                                      [study_section(result, pngs)]))
    return {"table": table, "summary": summary, "report": report,
            **{p.stem: p for p in pngs}}
