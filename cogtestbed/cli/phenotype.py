"""``cogtestbed phenotype``: CogBench's normalised behavioural / performance profile (Fig. 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.outputs import output_dir


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
) -> None:
    """Normalise agents' CogBench metrics (random = 0, human = 1) and plot them like Fig. 2."""
    if kind not in ("behaviour", "performance", "all"):
        raise ValueError(f"--kind must be behaviour, performance or all, got {kind!r}")
    if normalisation not in ("signed", "absolute"):
        raise ValueError(f"--normalisation must be signed or absolute, got {normalisation!r}")
    kinds = ("behaviour", "performance") if kind == "all" else (kind,)
    with output_dir(output, force):
        _phenotype(paths, agents, experiment, kinds, normalisation, output, as_json)


def _phenotype(paths: list[Path], agents: list[str] | None, experiment: str | None, kinds: tuple[str, ...],
               normalisation: str, output: Path | None, as_json: bool) -> None:
    from rich.table import Table

    from cogtestbed.outputs import atomic_write_bytes
    from cogtestbed.trials import write_json_atomic
    from cogtestbed.validation.runs.phenotype import metrics_from_files, phenotype_table, plot_phenotype, table_flags

    results = metrics_from_files(paths, agents, experiment, kinds)
    if not results:
        raise ValueError("no metrics found: no file matched a registered CogBench experiment/agent")
    table = phenotype_table(results, kinds)
    flags = table_flags(table)
    payload = {
        "normalisation": normalisation,
        "agents": list(dict.fromkeys(table["agent"])),
        "rows": table.to_dict(orient="records"),
        "flags": flags,
    }
    if output is not None:
        atomic_write_bytes(output / "phenotype.csv", lambda tmp: table.to_csv(tmp, index=False))
        write_json_atomic(output / "phenotype.json", payload)
        for k in kinds:
            if (table["kind"] == k).any():
                plot_phenotype(table, output / f"phenotype_{k}.png", k, normalisation)  # type: ignore[arg-type]
        console_err.print(f"wrote phenotype table and figures to {output}")
    if as_json:
        print_json(payload)
        return
    view = table.pivot_table(index="label", columns="agent", values=normalisation, sort=False)
    out = Table(title=f"CogBench phenotype ({normalisation}; random = 0, human = 1)")
    out.add_column("metric")
    for agent in view.columns:
        out.add_column(str(agent), justify="right")
    for label, row in view.iterrows():
        out.add_row(str(label), *(f"{v:.3g}" for v in row))
    console.print(out)
    for f in flags:
        console_err.print(f"[yellow]warning:[/] {f}", highlight=False)
