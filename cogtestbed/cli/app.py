"""The shared typer application, console helpers and the errors shown without a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from cogtestbed.data.cogbench import DataFormatError
from cogtestbed.llm_adapters.base import BackendUnavailable, LLMError
from cogtestbed.parameters import ParameterError
from cogtestbed.registry import UnknownNameError
from cogtestbed.trials import TrialTableError

app = typer.Typer(
    name="cogtestbed",
    help="Synthetic agents with known parameters, run through the environments LLMs step "
    "through, analysed by the same fitters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
console_err = Console(stderr=True)

#: Errors caused by the user's input: printed as one line, exit status 2, no traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ParameterError,
    UnknownNameError,
    TrialTableError,
    DataFormatError,
    BackendUnavailable,
    LLMError,
    FileNotFoundError,
    FileExistsError,
    ValidationError,
    ValueError,
)

T = TypeVar("T")


def progress(items: Iterable[T], description: str, total: int | None = None,
             enabled: bool = True) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr (hidden when ``enabled`` is false)."""
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console_err,
        transient=True,
        disable=not enabled,
    ) as bar:
        yield from bar.track(items, total=total, description=description)


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (NaN becomes null)."""
    typer.echo(json.dumps(_finite(obj), indent=None, default=str))


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and obj != obj:  # NaN
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
