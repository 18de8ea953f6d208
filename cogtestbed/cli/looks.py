"""Sequential plans at run time: ``run --plan`` of a plan with looks, and ``cogtestbed looks RUN_DIR``.

A run of a sequential plan (``plan … --looks K``) plays the first ``n_k`` subjects, fits and tests
them as the plan simulated (:func:`cogtestbed.validation.seqplan.evaluate_look`), appends the look to
``looks.jsonl`` and stops (efficacy or futility) or resumes the same run directory for the next
look (earlier subjects come from the response cache).  ``--resume`` continues at the first look not
recorded.  ``cogtestbed looks RUN_DIR`` recomputes every recorded look from the saved trial table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cogtestbed.cli.app import app, console, console_err, print_json


def recorded_looks(run_dir: Path) -> list[dict[str, Any]]:
    from cogtestbed.validation.seqplan import LOOKS_FILE

    path = run_dir / LOOKS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_sequential(request: Any, design: dict[str, Any], execute_run: Callable[[Any], Any]) -> Any:
    """Execute a sequential plan's looks in ``request.output`` (see the module docstring);
    ``execute_run`` plays one look's subjects (:func:`cogtestbed.cli.run.execute_run`)."""
    from dataclasses import replace

    from cogtestbed.registry import get_experiment, read_trials
    from cogtestbed.validation.seqplan import LOOKS_FILE, SEQUENTIAL_FILE, evaluate_look

    if design["statistic"]["kind"] == "metric-power":
        raise ValueError("--plan: a sequential plan of a metric difference between two LLMs is not executed by run "
                         "(run each LLM's looks by hand); model-effect and test plans are")
    if int(design.get("runs_per_subject", 1)) != 1:
        raise ValueError("--plan: a sequential plan with several sessions per subject is not executed by run")
    exp = get_experiment(request.experiment)
    done = recorded_looks(request.output) if request.resume else []
    if done and done[-1]["decision"] != "continue":
        console_err.print(f"the run stopped at look {done[-1]['look']} ({done[-1]['decision']}): nothing to resume")
        return None
    result = None
    for k in range(len(done), len(design["sizes"])):
        n = int(design["sizes"][k])
        req = replace(request, resume=request.resume or k > 0, limit=n)
        console_err.print(f"look {k + 1}/{len(design['sizes'])}: the first {n} subjects", highlight=False)
        result = execute_run(req)
        if int(result.stats["subjects_complete"]) < n:  # the budget stopped it
            return result
        if k == 0:
            (request.output / SEQUENTIAL_FILE).write_text(json.dumps(design, indent=1) + "\n")
        look = evaluate_look(exp, design, read_trials(request.output / "trials.parquet", exp.name), k)
        with (request.output / LOOKS_FILE).open("a") as fh:
            fh.write(json.dumps(look) + "\n")
        shown = f"{look['statistic']:+.3f}" if look["statistic"] is not None else f"none ({look.get('reason')})"
        console_err.print(f"look {k + 1}: Z = {shown} (efficacy |Z| ≥ {look['efficacy']:.3f}"
                          + (f", futility {look['futility']:.3f}" if look["futility"] is not None else "")
                          + f"): {look['decision']}", highlight=False)
        if look["decision"] != "continue":
            result.status = "complete"
            break
    return result


@app.command()
def looks(
    run_dir: Annotated[Path, typer.Argument(help="Run directory of a sequential `run --plan`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the looks as JSON.")] = False,
) -> None:
    """Reproduce every recorded look of a sequential run from its saved trial table (exit 1 on a mismatch)."""
    import math

    from cogtestbed.registry import get_experiment, read_trials
    from cogtestbed.validation.seqplan import LOOKS_FILE, SEQUENTIAL_FILE, evaluate_look

    path = run_dir / SEQUENTIAL_FILE
    if not path.exists():
        raise ValueError(f"{run_dir} holds no sequential run ({SEQUENTIAL_FILE} missing): run one with "
                         "`cogtestbed run --plan PLAN` of a `plan --looks` plan")
    design = json.loads(path.read_text())
    recorded = recorded_looks(run_dir)
    manifest = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    exp = get_experiment(manifest.get("config", {}).get("experiment") or design["experiment"])
    table = read_trials(run_dir / "trials.parquet", exp.name)
    rows, ok = [], True
    for rec in recorded:
        again = evaluate_look(exp, design, table, int(rec["look"]) - 1)
        a, b = again["statistic"], rec["statistic"]
        same = again["decision"] == rec["decision"] and (
            (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6,
                                                                                         abs_tol=1e-6)))
        ok &= same
        rows.append({**again, "recorded_statistic": rec["statistic"], "recorded_decision": rec["decision"],
                     "reproduced": same})
    if not recorded:
        raise ValueError(f"{run_dir} records no look yet ({LOOKS_FILE} empty or missing)")
    if as_json:
        print_json({"run_dir": str(run_dir), "looks": rows, "reproduced": ok})
    else:
        for r in rows:
            console.print(f"look {r['look']}: {r['units']} subjects  Z {_z(r['statistic'])} (recorded "
                          f"{_z(r['recorded_statistic'])})  bound {r['efficacy']:.3f}  {r['decision']} "
                          f"(recorded {r['recorded_decision']})  {'reproduced' if r['reproduced'] else 'MISMATCH'}",
                          highlight=False)
    if not ok:
        raise typer.Exit(1)


def _z(value: float | None) -> str:
    return "none" if value is None else f"{value:+.4f}"
