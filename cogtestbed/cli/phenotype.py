"""``cogtestbed phenotype``: CogBench's normalised behavioural / performance profile (Fig. 2)."""

from __future__ import annotations

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.runs.phenotype_options import PhenotypeRequest


@request_command(app, PhenotypeRequest)
def phenotype(req: PhenotypeRequest) -> None:
    """Normalise agents' CogBench metrics (random = 0, human = 1) and plot them like Fig. 2."""
    from rich.table import Table

    from cogtestbed.api.phenotype import phenotype as profile
    from cogtestbed.request import api_values

    result = profile(**api_values(req))
    output, as_json, normalisation = req.output, req.as_json, req.normalisation
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
