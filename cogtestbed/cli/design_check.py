"""``cogtestbed check-design EXPERIMENT --model M``: what one subject's design identifies."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from cogtestbed.cli.app import app, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput
from cogtestbed.request import option

#: The default tolerance of :mod:`cogtestbed.identifiability` (repeated so that help loads no numerical package).
_TOLERANCE = 0.5


@dataclass(frozen=True)
class CheckDesignRequest(JsonOutput):
    """What ``cogtestbed check-design`` checks (its options, declared once: :mod:`cogtestbed.request`)."""

    experiment: str = option(argument=True, name="experiment", help="Experiment name.")
    model: str = option(flags=("--model", "-m"), help="The model whose parameters the design should identify.")
    sessions: int = option(1, flags=("--sessions",), min=1, max=100_000,
                           help="Sessions (games, blocks, runs) of one subject.")
    tolerance: float = option(_TOLERANCE, flags=("--tolerance",), min=1e-6, max=100.0,
                              help="Target SE, as a share of each parameter's prior SD (unconstrained scale).")
    design: list[str] = option(flags=("--design",), factory=list, help="Design field NAME=VALUE (repeatable).")
    seed: int = option(0, flags=("--seed",), min=0, max=2**31 - 1, help="Seed of the simulated sessions.")


@request_command(app, CheckDesignRequest, name="check-design")
def check_design(req: CheckDesignRequest) -> None:
    """Expected standard error of each parameter for one subject of the design, whether the design identifies it,
    and the fewest sessions a subject that identify it and bring its SE under the tolerance."""
    from cogtestbed.api.core import design_overrides
    from cogtestbed.identifiability import identifiability

    result = identifiability(req.experiment, req.model, design=design_overrides(req.design) or None,
                             sessions=req.sessions, tolerance=req.tolerance, seed=req.seed)
    if req.as_json:
        print_json({"experiment": result.experiment, "model": result.model, "sessions": result.sessions,
                    "trials_per_session": result.trials_per_session, "tolerance": result.tolerance,
                    "rank": result.rank, "condition_number": result.condition_number,
                    "smallest_sessions": result.smallest_sessions, "refusal": result.refusal(),
                    "parameters": result.table.astype(object).where(result.table.notna(), None)
                    .to_dict(orient="records")})
        return
    typer.echo(result.summary())
