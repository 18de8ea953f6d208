"""The demo (``cogtestbed demo``; :func:`demo`): the main job on built-in synthetic agents, with a report.

Simulates RW± subjects with known parameters at CogBench's instrumental-learning design, scores
them with CogBench's metrics, scores CogBench's released human data the same way, and writes the
trial table, the metrics and a Markdown report into the output folder.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cogtestbed.api.console import console_err
from cogtestbed.outputs import atomic_write_bytes, output_dir

DEMO_EXPERIMENT = "instrumental-learning"
DEMO_AGENT = "rw-pm"
DEMO_PARAMS = {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}
HUMAN_DATA = Path(__file__).resolve().parents[2].parent / "shared/data/cogbench/InstrumentalLearning/human.csv"


def demo(output: str | os.PathLike[str] = "demo_output", *, subjects: int = 50, seed: int = 1,
         workers: int | None = None, force: bool = False, real_model: bool = True) -> Path:
    """Simulate RW± subjects at CogBench's instrumental-learning design, score them (and CogBench's
    human data) with its metrics, run a recovery and a power study, and with ``real_model`` run
    ``hf:smollm2-135m`` through the same environments and plan from it as a pilot; writes
    trials.parquet, metrics.json, report.md and report.html into ``output`` (returned)."""
    out = Path(output)
    client = _real_client() if real_model else None  # a missing model is refused before any work
    with output_dir(out, force):
        _demo(out, subjects, seed, workers, client)
    return out


def _real_client() -> Any:
    """hf:smollm2-135m, loaded (converted once on a first run); one clear line when it is missing."""
    from cogtestbed.llm_adapters.clients.base import BackendUnavailable
    from cogtestbed.llm_adapters.clients.smollm2 import SMOLLM2

    try:
        from cogtestbed.llm_adapters import make_client

        return make_client(f"hf:{SMOLLM2}")
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"{exc} (or run the demo without the real model)") from None


def _demo(output: Path, subjects: int, seed: int, workers: int | None, client: Any = None) -> None:
    from cogtestbed.registry import get_experiment, write_trials
    from cogtestbed.simulation import simulate
    from cogtestbed.trials import write_json_atomic

    exp = get_experiment(DEMO_EXPERIMENT)
    trials = simulate(exp, DEMO_AGENT, subjects, seed, DEMO_PARAMS)
    write_trials(trials, output / "trials.parquet",
                 {"experiment": exp.name, "agent": DEMO_AGENT, "params": DEMO_PARAMS, "seed": seed,
                  "n_subjects": subjects, "command": "demo"})
    console_err.print(f"simulated {subjects} {DEMO_AGENT} subjects; fitting RW and RW± per subject")
    synthetic = exp.metrics(trials)
    results: dict[str, Any] = {"synthetic": synthetic}
    if HUMAN_DATA.exists():
        human_table, _ = exp.read(HUMAN_DATA, "cogbench")
        results["cogbench_human"] = exp.metrics(human_table)
    sections = _studies(output, seed, workers)
    report = _report(synthetic, results.get("cogbench_human"), subjects, seed)
    if client is not None:
        from cogtestbed.api.demo_real import real_model_part

        real_sections, real_lines, results["real_model"] = real_model_part(client, output, seed, workers, DEMO_PARAMS)
        sections += real_sections
        report += "\n".join(real_lines) + "\n"
    write_json_atomic(output / "metrics.json", results)
    atomic_write_bytes(output / "report.md", lambda tmp: tmp.write_text(report, encoding="utf-8"))
    console_err.print(f"wrote {output / 'report.md'}")
    from cogtestbed.studies.report import html_report

    page = html_report("cogtestbed demo: RW± at CogBench's instrumental-learning design"
                       + (f", and {client.spec} through the same environments" if client is not None else ""), sections)
    atomic_write_bytes(output / "report.html", lambda tmp: tmp.write_text(page, encoding="utf-8"))
    console_err.print(f"wrote {output / 'report.html'}")


def _studies(output: Path, seed: int, workers: int | None) -> list[dict[str, Any]]:
    """Recovery study + power curve for RW± at CogBench's design: the HTML report's sections.  Each
    study's tasks show on stderr as they finish (:func:`cogtestbed.progress.task_lines`)."""
    from cogtestbed.progress import task_lines
    from cogtestbed.studies.driver import run_study, study_spec
    from cogtestbed.studies.plots import plots
    from cogtestbed.studies.report import study_section
    from cogtestbed.trials import table_to_parquet

    specs = [
        study_spec(kind="recovery", experiment=DEMO_EXPERIMENT, models=("rw-pm",), subjects=(50,),
                  reps=20, seed=seed),
        study_spec(kind="power", experiment=DEMO_EXPERIMENT, models=("rw-pm",),
                  subjects=(10, 20, 40), trials=(96, 192), reps=40, seed=seed,
                  effect="optimism_bias", effect_size=0.2),
    ]
    sections = []
    for spec in specs:
        lines = task_lines(f"demo {spec.kind} study", len(spec.tasks()))
        result = run_study(spec, workers=workers, on_task_done=lines.advance)
        folder = output / spec.kind
        atomic_write_bytes(folder / "results.parquet", functools.partial(table_to_parquet, result.table))
        sections.append(study_section(result, plots(result, folder)))
        console_err.print(result.verdict)
    return sections


def _report(synthetic: Mapping[str, Any], human: Mapping[str, Any] | None, subjects: int, seed: int) -> str:
    import pandas as pd

    per_run = pd.DataFrame(synthetic["per_run"])
    est = per_run[["alpha_pos", "alpha_neg", "beta_pm", "optimism_bias"]].agg(["median", "mean", "std"])
    bound_note = _bound_note(per_run)
    lines = [
        "# cogtestbed demo: instrumental learning (CogBench design, 96 trials)",
        "",
        f"{subjects} synthetic RW± subjects (seed {seed}) with known parameters "
        + ", ".join(f"{k} = {v}" for k, v in DEMO_PARAMS.items())
        + f" (true optimism bias {DEMO_PARAMS['alpha_pos'] - DEMO_PARAMS['alpha_neg']:.2f}).",
        "",
        "## Per-subject maximum-likelihood estimates (RW± fit, CogBench likelihood)",
        "",
        "```",
        est.map(lambda v: f"{v:.3g}").to_string(),
        "```",
        *bound_note,
        "",
        "## CogBench metrics (mean over runs)",
        "",
        "```json",
        json.dumps(_readable(synthetic["metrics"]), indent=2),
        "```",
    ]
    if human is not None:
        lines += ["", "## CogBench's released human data, scored the same way", "", "```json",
                  json.dumps(_readable(human["metrics"]), indent=2), "```"]
    return "\n".join(lines) + "\n"


def _readable(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Metric values for people: 3 significant digits (counts stay integers)."""
    return {k: float(f"{v:.3g}") if isinstance(v, float) else v for k, v in metrics.items()}


#: CogBench's per-run estimate columns and the RW± model parameters they estimate.
ESTIMATE_COLUMNS = {"alpha_pos": "alpha_pos", "alpha_neg": "alpha_neg", "beta_pm": "beta"}


def _bound_note(per_run: Any) -> list[str]:
    """A flag for the parameters whose per-subject MLEs sit at a bound (they pull the mean, not the median)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.recovery_checks import at_bound

    parameters = {p.name: p for p in get_experiment(DEMO_EXPERIMENT).model("rw-pm").parameters}
    notes = []
    for column, name in ESTIMATE_COLUMNS.items():
        p = parameters[name]
        hits = int(at_bound(per_run[column].to_numpy(float), p).sum())
        if hits:
            notes.append(f"FLAG: {hits} of {len(per_run)} estimates of {column} sit at a bound of its range "
                         f"[{p.lower:g}, {p.upper:g}]; they pull its mean, so read the median.")
    return ["", *notes] if notes else []

