"""``cogtestbed check-design EXPERIMENT --model M``: what one subject's design identifies."""

from __future__ import annotations

from dataclasses import MISSING, dataclass

import typer

from cogtestbed.cli.app import app, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import CognitiveModel, JsonOutput, Seed, SubjectSessions
from cogtestbed.request import option, variant
from cogtestbed.simulate_options import EXPERIMENT_ARGUMENT, DesignFields, ExperimentName

#: The default tolerance of :mod:`cogtestbed.identifiability` (repeated so that help loads no numerical package).
_TOLERANCE = 0.5


@dataclass(frozen=True)
class CheckDesignRequest(
        JsonOutput, DesignFields,
        variant(SubjectSessions, defaults={"subject_sessions": 1},  # type: ignore[misc]
                helps={"subject_sessions": "Sessions (games, blocks, runs) of one subject of the design."}),
        variant(Seed, helps={"seed": "Seed of the simulated sessions."}),  # type: ignore[misc]
        variant(CognitiveModel, defaults={"model": MISSING},  # type: ignore[misc]
                helps={"model": "The model whose parameters the design should identify."}),
        variant(ExperimentName, defaults={"experiment": MISSING}, present=EXPERIMENT_ARGUMENT,  # type: ignore[misc]
                helps={"experiment": "Experiment name."})):
    """What ``cogtestbed check-design`` checks (its options, declared once: :mod:`cogtestbed.request`)."""

    #: ``tolerance``: the target SE of the design check, not a recovery's ``--precision``
    se_tolerance: float = option(_TOLERANCE, name="tolerance", flags=("--tolerance",), min=1e-6, max=100.0,
                                 help="Largest ratio of the expected SE (over the population) to the population's SD "
                                      "that identifies a parameter (0.5: r about 0.89).")


@request_command(app, CheckDesignRequest, name="check-design")
def check_design(req: CheckDesignRequest) -> None:
    """Expected standard error of each parameter for one subject of the design, whether the design identifies it
    (full rank, and the SE over the population at most the tolerance times the population's SD), the fewest
    sessions a subject that identify it, and the sessions the check suggests."""
    from cogtestbed.api.core import design_overrides
    from cogtestbed.identifiability import identifiability

    design = req.design
    fields = design_overrides(design) if isinstance(design, list | tuple) else design
    result = identifiability(str(req.experiment), str(req.model), design=fields or None,
                             sessions=req.subject_sessions or 1, tolerance=req.se_tolerance, seed=req.seed)
    if req.as_json:
        print_json({"experiment": result.experiment, "model": result.model, "sessions": result.sessions,
                    "trials_per_session": result.trials_per_session, "tolerance": result.tolerance,
                    "rank": result.rank, "condition_number": result.condition_number,
                    "smallest_sessions": result.smallest_sessions, "refusal": result.refusal(),
                    "rule": result.rule, "suggested_sessions": result.suggested_sessions,
                    "not_identified": result.not_identified, "default_subject": result.default_subject(),
                    "parameters": result.table.astype(object).where(result.table.notna(), None)
                    .to_dict(orient="records")})
        return
    typer.echo(result.summary())
