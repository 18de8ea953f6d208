"""``cogtestbed list [EXPERIMENT]``: what is registered, generated from the experiment specs.

Without an argument: every experiment with its description.  With one: its agents and models
(parameters with bounds, defaults and transforms), design fields with defaults, metrics
(headline keys, options), importers, declared studies, pooling unit and trials field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogtestbed.cli.app import app, console, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput
from cogtestbed.request import variant
from cogtestbed.simulate_options import OPTIONAL_EXPERIMENT_ARGUMENT, ExperimentName

if TYPE_CHECKING:
    from rich.table import Table


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    cells = [["" if v is None else str(v) for v in r] for r in rows]
    for i, c in enumerate(columns):  # names (the first two columns) are never cut nor wrapped
        if i < 2 and len(columns) > 2 or i == 0:
            width = max([len(c), *(len(r[i]) for r in cells)])
            table.add_column(c, no_wrap=True, min_width=width)
        else:
            table.add_column(c, overflow="fold")
    for r in cells:
        table.add_row(*r)
    return table


def _param_rows(owner: str, params: list[dict[str, Any]], described: bool = True) -> list[list[Any]]:
    return [[owner if i == 0 else "", p["name"], f"[{p['lower']:g}, {p['upper']:g}]", p["default"], p["transform"],
             *([p["description"]] if described else [])] for i, p in enumerate(params)]


def _print(info: dict[str, Any]) -> None:
    console.print(f"[bold]{info['name']}[/]: {info['description']}", highlight=False)
    field_ = info["trials_field"]
    sweep = (f"--design {field_}=a,b,c sweeps it; --trials N sets the trials of one run of the whole design "
             "through it" if field_ else "(none: the trials of a run are fixed by the paradigm)")
    console.print(f"{info['citation']}\npooling unit: {info['pooling_unit']}; trials field: {field_ or '-'} "
                  f"{sweep}", highlight=False)
    _print_pieces(info)
    _print_declarations(info)


def _print_pieces(info: dict[str, Any]) -> None:
    """The agents', models' and design's tables of :func:`_print`."""
    cols = ["", "parameter", "bounds", "default", "transform", "description"]
    console.print(_table("agents", cols, [r for a in info["agents"] for r in _param_rows(a["name"], a["parameters"])]))
    console.print(_table("models (MLE, +PyMC where marked; simulated by the named agent)", cols[:-1], [
        r for m in info["models"] for r in _param_rows(
            f"{m['name']}{' +pymc' if m['has_pymc'] else ''} <- {m['generated_by']}", m["parameters"], False)]))
    console.print(_table(f"design fields ({info['design']['class']}, --design NAME=VALUE)",
                         ["field", "type", "default", "description"],
                         [[f["name"], f["type"], f["default"], f["description"]] for f in info["design"]["fields"]]))


def _print_declarations(info: dict[str, Any]) -> None:
    """The metrics, importers, prompt forms, studies, planning and adaptive sessions of :func:`_print`."""
    metrics = info["metrics"]
    console.print(f"metrics ({metrics['unit']}): headline {', '.join(metrics['headline']) or '(none)'}; options "
                  f"{', '.join(o['flag'] for o in metrics['options']) or '(none)'}", highlight=False)
    console.print(f"importers: {', '.join(info['importers']) or '(none)'}", highlight=False)
    console.print(_table("prompt forms (--forms K or --forms ID,ID,...)", ["id", "kind", "source", "what differs"],
                         [[f["id"], f["kind"], f["source"], f["differs"]] for f in info["prompt_forms"]]))
    if "cover_story_note" in info:
        console.print(f"cover stories: {info['cover_story_note']}", highlight=False)
    console.print(_table("declared studies (cogtestbed study EXPERIMENT NAME)", ["study", "description"],
                         [[s["name"], s["description"]] for s in info["studies"]]))
    _print_planning(info["planning"])
    adaptive = info["adaptive"]
    console.print("adaptive sessions (--adaptive PARAM --trials N): " + (
        f"refused: {adaptive['refused']}" if "refused" in adaptive else
        f"model {adaptive['model']} ({', '.join(adaptive['parameters'])}); {adaptive['space']}"), highlight=False)


def _flags(text: str) -> str:
    """The library's fields (`` `model` ``) in ``text`` as ``plan``'s flags (``--model``)."""
    from cogtestbed.cli.options import as_flags
    from cogtestbed.planning.plan_options import PlanRequest

    return as_flags(text, (PlanRequest,))


def _print_planning(plan: dict[str, Any]) -> None:
    """What ``plan`` can plan for the experiment: metrics between groups, parameters forms can shift."""
    console.print(_table("planning (cogtestbed plan): each headline metric between two groups (--metric M --compare "
                         "A B, two --llm)", ["metric", "compared between groups"],
                         [[m["metric"], m.get("test") or f"no: {_flags(m['why'])}"] for m in plan["metrics"]]))
    console.print(_table("planning with prompt forms (plan --forms --model M --effect P=SIZE --form-sd P=SD)",
                         ["model", "parameters forms can shift"],
                         [[model, ", ".join(params) or "none (its agent takes other parameters)"]
                          for model, params in plan["forms"].items()]))


@dataclass(frozen=True)
class ListRequest(JsonOutput, variant(ExperimentName, present=OPTIONAL_EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                                      helps={"experiment": "Experiment to describe (omit to list them)."})):
    """What ``cogtestbed list`` shows (its options, declared once: :mod:`cogtestbed.request`)."""


@request_command(app, ListRequest, name="list")
def list_(req: ListRequest) -> None:
    """List experiments, or one experiment's agents, models, parameters, design, metrics and studies."""
    experiment, as_json = req.experiment, req.as_json
    from cogtestbed.api.describe import describe

    info = describe(experiment)
    if experiment is None:
        if as_json:
            print_json(info)
        else:
            console.print(_table("experiments (cogtestbed list EXPERIMENT for details)", ["experiment", "description"],
                                 [[r["name"], r["description"]] for r in info["experiments"]]))
        return
    if as_json:
        print_json(info)
    else:
        _print(info)
