"""``cogtestbed plan``: the cheapest design reaching a target power, priced in calls, tokens and dollars
(a thin layer over :func:`cogtestbed.api.plan.plan`: it parses the options, calls it and prints).

The target takes the three forms of ``cogtestbed power``: a model parameter or contrast
(``--model M --effect NAME=SIZE``), a metric difference between two settings (``--metric M
--compare AGENT:p=v AGENT:p=v``, e.g. two LLMs' model-basedness) and a statistical test the
metrics function reports (``--test KEY --agent AGENT:p=v``).  ``-o DIR`` writes ``plan.json``
(executed by ``cogtestbed run --plan DIR/plan.json``), ``frontier.png`` and ``report.html``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.request import option
from cogtestbed.validation.design.plan_options import PlanRequest


def _print_forms_plan(result: dict[str, Any], experiment: str, model: str, eff: tuple[str, float],
                      power: float) -> None:
    from rich.table import Table

    from cogtestbed.formatting import num

    sc = result["scales"]
    interval = sc.get("tau_interval")
    tau_text = num(sc["tau"]) + ("" if interval is None else
                                 f" [{num(interval[0])}, {num(interval[1])}] ({sc['level']:.0%} F interval)")
    console.print(f"{experiment} {model}: {eff[0]} = {eff[1]:g} at power {power:g}; effect SD between forms τ = "
                  f"{tau_text}, one subject's σ = {num(sc['sigma'])} ({sc['source']})", highlight=False)
    for problem in sc.get("problems", []):
        console.print(f"WARNING: the pilot does not identify τ: {problem}; the designs below rest on it "
                      "(plan from --form-sd instead)", highlight=False)
    table = Table(title="forms x subjects (forms-aware test: t on the form means)")
    columns = ["forms", "subjects/form", "subjects", "power"] + (["power if τ at its upper bound"] if interval else [])
    for col in (*columns, "dollars", "note"):
        table.add_column(col)
    for r in result["designs"]:
        at_high = [num(r.get("power_at_tau_high"))] if interval else []
        table.add_row(str(r["forms"]), str(r["subjects_per_form"] or "-"), str(r["subjects"] or "-"), num(r["power"]),
                      *at_high, num(r["dollars"]), r.get("why", ""))
    console.print(table)
    one = result["one_form"]
    if one is not None:
        console.print(f"one form: cannot: {one['why']} (the naive test would need {one['naive_subjects']} subjects; "
                      f"{one['naive_note']})", highlight=False)
    chosen = result["chosen"]
    console.print("chosen: " + ("none reaches the target" if chosen is None else
                                f"{chosen['forms']} forms x {chosen['subjects_per_form']} subjects"), highlight=False)


@dataclass(frozen=True)
class PlanOutput:
    """Where and how ``cogtestbed plan`` puts its plan (the command line's own options)."""

    as_json: bool = option(False, flags=("--json",), api=False, help="Print the plan as one JSON object.")
    output: Path | None = option(None, flags=("--output", "-o"), api=False,
                                 help="Write plan.json and report.html here.")
    force: bool = option(False, flags=("--force",), api=False,
                         help="Overwrite the files of a non-empty --output folder.")


@request_command(app, PlanRequest, PlanOutput)
def plan(req: PlanRequest, out: PlanOutput) -> None:
    """Plan a study: the cheapest design that reaches the target power, in calls, tokens and dollars."""
    from cogtestbed.api.plan import plan as make_plan
    from cogtestbed.request import api_values

    if req.prompt_forms.forms is not None:
        _plan_forms(req, out)
        return
    from cogtestbed.outputs import output_dir

    # claimed before the simulations (a refused folder costs nothing; a second plan into the same
    # folder at once is refused) and held until the plan is written; progress goes to stderr even
    # with --json (stdout carries only the JSON)
    with output_dir(out.output, out.force):
        result = make_plan(**api_values(req), say=_say)
        if result.kind == "adaptive":
            _emit_adaptive(result, out.output, out.as_json, out.force)
            return
        if result.kind == "precision":
            _emit_precision(result, out.output, out.as_json, out.force)
            return
        _emit_plan(result, out.output, out.as_json, out.force)


def _plan_forms(req: PlanRequest, out: PlanOutput) -> None:
    """``plan --forms``: forms x subjects chosen jointly by dollars (:func:`cogtestbed.plan_forms`)."""
    from cogtestbed.errors import InputError

    tg = req.target
    if tg.population is not None:
        raise InputError("--forms plans prompt forms around the model's medians; --population is not planned with "
                         "forms yet: drop one")
    from cogtestbed.api.form_plan import plan_forms
    from cogtestbed.request import flat
    from cogtestbed.validation.design.plan_options import PLAN_FORMS_OPTIONS

    options = flat(req)
    planned = plan_forms(req.experiment, **{name: options[name] for name in PLAN_FORMS_OPTIONS})
    if out.as_json:
        print_json(planned)
        return
    from cogtestbed.parameters import parse_assignments

    eff = next(iter(parse_assignments([str(tg.effect)], "--effect").items()))
    _print_forms_plan(planned, planned["experiment"], str(tg.model), eff, tg.power)


def _say(line: str) -> None:
    """A progress line of the plan on stderr."""
    console_err.print(line, highlight=False, markup=False, soft_wrap=True)


def _saved_payload(result: Any, output: Path | None, force: bool) -> dict[str, Any]:
    """``result``'s payload, saved under ``output`` (when given) with the files it wrote added."""
    if output is None:
        return dict(result.payload)
    files = result.save(output, force=force)
    return {**result.payload, "files": {k: str(v) for k, v in files.items()}}


def _emit_precision(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """``plan --precision``'s output: ``precision.json`` under ``output``; the payload or two lines."""
    from cogtestbed.validation.design.precision import precision_line

    payload = _saved_payload(result, output, force)
    if as_json:
        print_json(payload)
        return
    console.print(precision_line(payload), highlight=False, soft_wrap=True)
    fields = ", ".join(f"{k}={v}" for k, v in payload["chosen"]["resolved"]["fields"].items())
    console.print(f"design {payload['chosen']['resolved']['label']}: {fields}", highlight=False, soft_wrap=True)


def _emit_adaptive(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """``plan --adaptive``'s output: ``adaptive.json`` under ``output``; the payload or three lines."""
    from cogtestbed.validation.design.adaptive_plan import adaptive_line

    payload = _saved_payload(result, output, force)
    if as_json:
        print_json(payload)
        return
    console.print(adaptive_line(payload), highlight=False, soft_wrap=True, markup=False)


def _emit_plan(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """Save the plan under ``output`` (:meth:`Plan.save <cogtestbed.api.plan.Plan.save>`: plan.json,
    frontier.png, report.html); print it as JSON or text."""
    payload = result.payload
    if output is not None:
        files = result.save(output, force=force)
        payload["files"] = {k: str(v) for k, v in files.items()}
    if as_json:
        print_json(payload)
        return
    _print_plan(payload, result.size_name)
    if output is not None:
        console_err.print(f"wrote {output}/plan.json and {output}/report.html")


def _print_plan(payload: dict[str, Any], size_name: str) -> None:
    """The plan as text: its summary, recovery and frontier (and its looks, for a sequential plan)."""
    from cogtestbed.formatting import rate_text
    from cogtestbed.validation.design.plan_report import summary_line

    console.print(summary_line(payload), highlight=False, soft_wrap=True)
    from cogtestbed.validation.design.pricing import cost_range_line

    cost_line = cost_range_line(payload.get("cost") or {})  # completion tokens measured or assumed (issue 67)
    if cost_line is not None:
        console.print(cost_line, highlight=False, soft_wrap=True, markup=False)
    line = recovery_line(payload.get("recovery") or {})
    if line:
        console.print(line, highlight=False, soft_wrap=True)
    for warning in payload.get("warnings") or []:
        console.print(f"WARNING: {warning}", highlight=False, soft_wrap=True, markup=False)
    for note in payload.get("notes") or []:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    for row in payload["frontier"]:
        dollars = f"${row['dollars']:.3f}" if row["dollars"] is not None else "-"
        console.print(f"  frontier: {row['design']}: power {rate_text(row['power'], row['sims'])}, "
                      f"{int(row['calls']):,} calls, {dollars}", highlight=False, soft_wrap=True)
    if "sequential" in payload:
        from cogtestbed.validation.design.seqpayload import sequential_lines

        for line in sequential_lines(payload["sequential"], size_name):
            console.print(line, highlight=False)
    if payload.get("fit_check"):
        from cogtestbed.validation.design.fitcheck import fit_check_lines

        for line in fit_check_lines(payload["fit_check"]):
            console.print(line, highlight=False, soft_wrap=True, markup=False)


def recovery_line(rec: dict[str, Any]) -> str:
    """The chosen design's effect bias and interval coverage in one line (model-level targets); the
    problems with their meaning and remedy are the payload's ``warnings``
    (:func:`~cogtestbed.validation.design.plan_report.recovery_warnings`)."""
    from cogtestbed.formatting import num

    if "effect_bias" not in rec:
        return ""
    parts = [f"effect bias {num(rec['effect_bias'])} (estimand {num(rec['estimand'])})"]
    coverage = rec.get("coverage")
    if coverage is not None and coverage == coverage and rec.get("coverage_level") is not None:  # NaN: no interval
        parts.append(f"interval coverage {num(rec['coverage'], 2)} (nominal {num(rec['coverage_level'], 2)})")
    fresh = f" ({rec['studies']} fresh simulated studies)" if rec.get("studies") else ""
    return "recovery at this design: " + ", ".join(parts) + fresh
