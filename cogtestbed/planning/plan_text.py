"""The plans as text (what ``cogtestbed plan`` prints; each plan kind's :attr:`~cogtestbed.planning.kinds.
PlanKind.lines`): a power plan's summary, cost range, recovery, frontier, looks and hierarchical search; a
precision plan's two lines; an adaptive plan's arms; a forms plan's table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plan_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    """A power plan as text: its summary, cost range, recovery, warnings, frontier (and its looks, for a
    sequential plan; the hierarchical fit's search, for a hierarchical one)."""
    from cogtestbed.formatting import rate_text
    from cogtestbed.planning.plan_report import summary_line
    from cogtestbed.planning.pricing import cost_range_line

    out = [summary_line(dict(payload))]
    cost_line = cost_range_line(payload.get("cost") or {})  # completion tokens measured or assumed
    if cost_line is not None:
        out += cost_line.splitlines()
    line = recovery_line(payload.get("recovery") or {})
    if line:
        out.append(line)
    out += [f"WARNING: {warning}" for warning in payload.get("warnings") or []]
    out += [f"note: {note}" for note in payload.get("notes") or []]
    for row in payload["frontier"]:
        dollars = f"${row['dollars']:.3f}" if row["dollars"] is not None else "-"
        out.append(f"  frontier: {row['design']}: power {rate_text(row['power'], row['sims'])}, "
                   f"{int(row['calls']):,} calls, {dollars}")
    for row in payload.get("evaluated") or []:  # every design searched, with the search's verdict
        if "verdict" in row:
            lo, hi = row["interval"]
            out.append(f"  searched: {row['design']}: power {row['power']:.2f} [{lo:.2f}, {hi:.2f}] "
                       f"({row['sims']} sims): {row['verdict']}")
    if "sequential" in payload:
        from cogtestbed.planning.kinds.sequential.seqpayload import sequential_lines

        out += sequential_lines(payload["sequential"], size_name)
    if payload.get("fit_check"):
        from cogtestbed.planning.fitcheck import fit_check_lines

        out += fit_check_lines(payload["fit_check"])
    return out


def recovery_line(rec: Mapping[str, Any]) -> str:
    """The chosen design's effect bias and interval coverage in one line (model-level targets); the
    problems with their meaning and remedy are the payload's ``warnings``
    (:func:`~cogtestbed.planning.plan_report.recovery_warnings`)."""
    from cogtestbed.formatting import num

    if "effect_bias" not in rec:
        return ""
    scale = f": {rec['estimand_scale']}" if rec.get("estimand_scale") else ""
    parts = [f"effect bias {num(rec['effect_bias'])} (estimand {num(rec['estimand'])}{scale})"]
    if rec.get("test_name"):
        parts.append(f"test: {rec['test_name']}")
    coverage = rec.get("coverage")
    if coverage is not None and coverage == coverage and rec.get("coverage_level") is not None:  # NaN: no interval
        parts.append(f"interval coverage {num(rec['coverage'], 2)} (nominal {num(rec['coverage_level'], 2)})")
    fresh = f" ({rec['studies']} fresh simulated studies)" if rec.get("studies") else ""
    return "recovery at this design: " + ", ".join(parts) + fresh


def precision_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    """A precision plan in two lines: the target met and the chosen design's fields."""
    from cogtestbed.planning.kinds.precision.precision import precision_line

    resolved = payload["chosen"]["resolved"]
    fields = ", ".join(f"{k}={v}" for k, v in resolved["fields"].items())
    said = {True: "reached", False: "not reached", None: "undecided"}  # the search's own decision (size_test)
    searched = [f"  searched: {row['design']}: P = {row['assurance']:.2f} [{row['interval95'][0]:.2f}, "
                f"{row['interval95'][1]:.2f}] ({row['subjects']} subjects): {said[row.get('passed')]}"
                for row in payload.get("evaluated") or [] if "interval95" in row]
    return [precision_line(dict(payload)), f"design {resolved['label']}: {fields}", *searched]


def adaptive_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    """An adaptive plan: the target and each arm
    (:func:`~cogtestbed.planning.kinds.adaptive.adaptive_plan.adaptive_line`)."""
    from cogtestbed.planning.kinds.adaptive.adaptive_plan import adaptive_line

    return adaptive_line(payload).split("\n")


def forms_lines(payload: Mapping[str, Any], size_name: str) -> list[str]:
    """A forms plan: the scales, the designs (forms × subjects, power, dollars) and the choice."""
    from cogtestbed.formatting import num

    sc = payload["scales"]
    interval = sc.get("tau_interval")
    tau_text = num(sc["tau"]) + ("" if interval is None else
                                 f" [{num(interval[0])}, {num(interval[1])}] ({sc['level']:.0%} F interval)")
    out = [f"{payload['experiment']} {payload['model']}: {payload['effect_name']} = {payload['effect']:g} at power "
           f"{payload['target_power']:g}; "
           f"effect SD between forms τ = {tau_text}, one subject's σ = {num(sc['sigma'])} ({sc['source']})"]
    if sc.get("estimand") is not None:
        out.append(f"power at the effect the test sees: the simulated estimates' mean {num(sc['estimand'])} ± "
                   f"{num(sc['estimand_mc_se'])} (the per-subject MLE's, on the test's scale), not the asked "
                   f"{payload['effect']:g}")
    out += [f"WARNING: the pilot does not identify τ: {problem}; the designs below rest on it (plan from --form-sd "
            "instead)" for problem in sc.get("problems", [])]
    head = ["forms", "subjects/form", "subjects", "power"] + (["power if τ at its upper bound"] if interval else [])
    rows = [[*head, "dollars", "note"]]
    for r in payload["designs"]:
        at_high = [num(r.get("power_at_tau_high"))] if interval else []
        power = num(r["power"]) + (f" ± {num(r['power_mc_se'])}" if r.get("power_mc_se") is not None else "")
        rows.append([str(r["forms"]), str(r["subjects_per_form"] or "-"), str(r["subjects"] or "-"), power,
                     *at_high, num(r["dollars"]), r.get("why", "")])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out.append("forms x subjects (forms-aware test: t on the form means)")
    out += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    one = payload["one_form"]
    if one is not None:
        out.append(f"one form: cannot: {one['why']} (the naive test would need {one['naive_subjects']} subjects; "
                   f"{one['naive_note']})")
    chosen = payload["chosen"]
    out.append("chosen: " + ("none reaches the target" if chosen is None else
                             f"{chosen['forms']} forms x {chosen['subjects_per_form']} subjects"))
    return out
