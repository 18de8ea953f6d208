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
from cogtestbed.llm_adapters.base import BackendUnavailable
from cogtestbed.parameters import ParameterError
from cogtestbed.registry import UnknownNameError
from cogtestbed.trials import TrialTableError
from cogtestbed.validation.errors import WorkerDied

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
    FileNotFoundError,
    FileExistsError,
    ValidationError,
    ValueError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    WorkerDied,
)


def one_line(exc: BaseException) -> str:
    """The message of a user error on one line.

    A pydantic :class:`ValidationError` becomes ``NAME: reason (got VALUE)`` for its first error
    (``NAME`` is the field, i.e. the option of the same name); pydantic's ``Value error,`` prefix
    and documentation URL are dropped; any other message has its line breaks folded.
    """
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        if errors:
            first = errors[0]
            where = ".".join(str(x) for x in first["loc"])
            msg = str(first["msg"]).removeprefix("Value error, ")
            got = f" (got {first['input']!r})" if where and not isinstance(first.get("input"), dict) else ""
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            text = f"{exc.title}: {where + ': ' if where else ''}{msg}{got}{more}"
            return " ".join(text.split())
    return " ".join(str(exc).split()) or type(exc).__name__

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
