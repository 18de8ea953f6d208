"""``cogtestbed metrics``: an experiment's published metrics on a trial table or published data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

import typer

from cogtestbed.api.workflow_options import MetricsRequest
from cogtestbed.cli.app import app, console, console_err, print_json, stderr_is_terminal
from cogtestbed.cli.options import request_command
from cogtestbed.errors import InputError
from cogtestbed.option_groups import InputPath, JsonOutput
from cogtestbed.request import api_values, variant
from cogtestbed.simulate_options import EXPERIMENT_ARGUMENT, ExperimentName


def metric_option_args(args: list[str]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` pairs → ``{name: value}`` (the experiment converts and
    checks them: :func:`cogtestbed.metrics`)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or len(arg) < 3:
            raise InputError(f"unexpected argument {arg!r}; experiment options look like --name value")
        name, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(args):
                raise InputError(f"option {arg} needs a value")
            value = args[i + 1]
            i += 1
        out[name] = value
        i += 1
    return out


@dataclass(frozen=True)
class MetricsCommand(JsonOutput, variant(InputPath, defaults={"path": None},  # type: ignore[misc]
                                          present={"path": {"cli_type": Path | None}}),
                     variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT, helps={  # type: ignore[misc]
                         "experiment": "Experiment name; may be left out (metrics PATH): then the table's experiment "
                                       "column, or the experiment whose importer recognises the file."})):
    """``cogtestbed metrics``'s own options (those shared with :func:`cogtestbed.metrics`:
    :class:`~cogtestbed.api.workflow_options.MetricsRequest`; the experiment's own options follow as
    extra ``--NAME VALUE`` arguments)."""



@request_command(app, MetricsRequest, MetricsCommand, context=True,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def metrics(ctx: typer.Context, req: MetricsRequest, cmd: MetricsCommand) -> None:
    """Compute the experiment's published metrics, overall and per run.

    Experiment-specific options follow as ``--NAME VALUE`` (e.g. ``cogtestbed metrics collider
    PATH --scheme 4p``); each experiment declares its own (an unknown one lists the valid ones).
    """
    import contextlib

    from cogtestbed.api.core import metrics as compute_metrics
    from cogtestbed.progress import reporting, stderr_reporter

    experiment, path, as_json = cmd.experiment, cmd.path, cmd.as_json
    options = metric_option_args(list(ctx.args))
    if path is None:  # metrics PATH: the experiment from the file
        path, name = Path(experiment), None
    else:
        name = experiment
    # the spinner only where someone watches it (a terminal): elsewhere it starts a thread for nothing;
    # a posterior sampler reports its draws, chains and ETA in the spinner's line, or as a line per
    # interval off a terminal
    terminal = stderr_is_terminal()
    status: Any = console_err.status(f"fitting {name or 'the'} metrics on {path.name}…") if terminal \
        else contextlib.nullcontext()
    with status:
        report = (lambda line, final: console_err.print(line, highlight=False) if final else status.update(line)) \
            if terminal else stderr_reporter(False)
        with reporting(report, terminal):
            result = compute_metrics(name, path, **options, **api_values(req))
    detected = result["source"]
    if as_json:
        print_json(result)
        warn_flags(result.get("flags") or [])
        return
    _print_summary(result, f"{result['experiment']}: {path.name} ({detected})")
    if "prompt_forms" in result:
        _print_forms(result["prompt_forms"])
    warn_flags(result.get("flags") or [])


def _print_summary(result: Mapping[str, Any], title: str) -> None:
    """The headline metrics as a table: a null with its reason, a nested result one row per entry."""
    from rich.table import Table

    from cogtestbed.formatting import num

    summary = Table(title=title)
    summary.add_column("metric", no_wrap=True)
    summary.add_column("value", justify="right")
    reasons = result.get("null_reasons") or {}
    for key, value in result["metrics"].items():
        if value is None and key in reasons:
            summary.add_row(key, f"null ({reasons[key]})")
        elif isinstance(value, dict):  # a nested result: one row per entry, never a raw dict
            for sub, v in value.items():
                summary.add_row(f"{key}.{sub}", num(v))
        else:
            summary.add_row(key, num(value))
    console.print(summary)


def _print_forms(forms: dict[str, Any]) -> None:
    """The between-form SD of each per-unit value (interval, G) under the metrics table."""
    from rich.table import Table

    from cogtestbed.formatting import num

    out = Table(title=f"across prompt forms {forms['forms']} (random effects; SD: one-way ANOVA, F interval)")
    for col in ("value", "between-form SD", "interval", "G"):
        out.add_column(col, justify="right" if col != "value" else "left")
    for key, b in forms["between_forms"].items():
        lo, hi = b["interval"]
        out.add_row(key, num(b["between_form_sd"]), f"[{num(lo)}, {num(hi)}]", num(b["g"]))
    console.print(out)


def warn_flags(flags: list[str]) -> None:
    """Every flag of a result (non-convergence, separation, ...) as a warning line on stderr, in
    text mode as with ``--json`` (where they are the result's ``flags``)."""
    for flag in flags:
        typer.echo(f"warning: {' '.join(str(flag).split())}", err=True)
