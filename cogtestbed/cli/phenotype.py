"""``cogtestbed phenotype``: CogBench's normalised behavioural / performance profile (Fig. 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import SessionsOpt, app, console, console_err, print_json


@app.command()
def phenotype(
    paths: Annotated[list[Path], typer.Argument(
        help="CogBench CSVs (<Task>/<agent>.csv), trial tables (.parquet) or folders of them.")],
    agents: Annotated[list[str] | None, typer.Option(
        "--agent", "-a", help="Only these agents (file stems / agent column); repeatable.")] = None,
    experiment: Annotated[str | None, typer.Option(
        help="Experiment of every CSV (default: from the folder name or the file's columns).")] = None,
    kind: Annotated[str, typer.Option(help="behaviour, performance or all.")] = "all",
    normalisation: Annotated[str, typer.Option(
        help="signed: (x-random)/(human-random) as the paper; absolute: |x-random|/|human-random|.")] = "signed",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Folder for phenotype.csv, phenotype.json and the PNG figures.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    sessions: SessionsOpt = None,
) -> None:
    """Normalise agents' CogBench metrics (random = 0, human = 1) and plot them like Fig. 2."""
    from rich.table import Table

    from cogtestbed.api.phenotype import phenotype as profile

    result = profile(paths, agents=agents, experiment=experiment, kind=kind, normalisation=normalisation,
                     output=output, force=force, sessions=sessions)
    if output is not None:
        console_err.print(f"wrote phenotype table and figures to {output}")
    if as_json:
        print_json(result.to_dict())
        return
    view = result.table.pivot_table(index="label", columns="agent", values=normalisation, sort=False)
    out = Table(title=f"CogBench phenotype ({normalisation}; random = 0, human = 1)")
    out.add_column("metric")
    for agent in view.columns:
        out.add_column(str(agent), justify="right")
    for label, row in view.iterrows():
        out.add_row(str(label), *(f"{v:.3g}" for v in row))
    console.print(out)
    for f in result.flags:
        console_err.print(f"[yellow]warning:[/] {f}", highlight=False)
