"""``cogtestbed looks RUN_DIR``: reproduce a sequential run's recorded looks (a thin layer over
:func:`cogtestbed.api.looks.looks`; the looks of ``run --plan`` are played by :mod:`cogtestbed.api.run`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from cogtestbed.cli.app import app, console, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput
from cogtestbed.request import option


@dataclass(frozen=True)
class LooksRequest(JsonOutput):
    """The run whose looks ``cogtestbed looks`` reproduces (its options, declared once:
    :mod:`cogtestbed.request`)."""

    run_dir: Path = option(argument=True,
                           help="Run directory of a sequential `run --plan` or a monitored `run --monitor`.")


@request_command(app, LooksRequest)
def looks(req: LooksRequest) -> None:
    """Reproduce every recorded look of a sequential or monitored run from its saved trial table (exit 1 on a
    mismatch)."""
    run_dir, as_json = req.run_dir, req.as_json
    from cogtestbed.api.looks import looks as replay

    result = replay(run_dir)
    if as_json:
        print_json(result.to_dict())
    else:
        for r in result.looks:
            if "line" in r:  # a monitored run's step
                console.print(r["line"] + ("  reproduced" if r["reproduced"] else
                                           f"  MISMATCH ({', '.join(r['differs'])})"), highlight=False)
                continue
            console.print(f"look {r['look']}: {r['units']} {result.axis}  Z {_z(r['statistic'])} (recorded "
                          f"{_z(r['recorded_statistic'])})  bound {r['efficacy']:.3f}  {r['decision']} "
                          f"(recorded {r['recorded_decision']})  "
                          + ("reproduced" if r["reproduced"] else f"MISMATCH ({', '.join(r['differs'])})"),
                          highlight=False)
    if not result.reproduced:
        raise typer.Exit(1)


def _z(value: float | None) -> str:
    return "none" if value is None else f"{value:+.4f}"
