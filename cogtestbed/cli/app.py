"""The shared typer application, console helpers and the errors shown without a traceback.

The command line imports nothing heavy up front: sub-command modules import the library inside
their command bodies, and the user-error classes are named here by module and resolved only when
an exception has to be classified (:func:`is_user_error`), so ``cogtestbed --help`` loads neither
numpy, pandas, scipy nor numba.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import types
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

import typer
from typer.core import TyperGroup

from cogtestbed.shims.typer_shim import ClickContext as Context

if TYPE_CHECKING:  # rich is imported when a command first prints through a console
    from rich.console import Console


class LightGroup(TyperGroup):
    """The command group, with a help flag that is ``False`` (not ``None``) when absent.

    typer coerces every parameter value that is not already a ``bool`` through a pydantic
    ``TypeAdapter``; an absent help flag would import pydantic and build one just to read
    ``cogtestbed COMMAND --help``.  The commands it resolves pass values that need no conversion
    (strings, paths, defaults) through without an adapter (:mod:`cogtestbed.shims.typer_shim`).
    """

    def resolve_command(self, ctx: Context, args: list[str]) -> Any:
        """click's command look-up, with :func:`~cogtestbed.shims.typer_shim.use_plain_coercion`
        (and the light help formatter where the command's help page is asked for)."""
        from cogtestbed.shims.typer_shim import use_plain_coercion

        name, command, rest = super().resolve_command(ctx, args)
        use_plain_coercion(command, ctx)
        show_unset_defaults(command)
        if "--help" in rest:
            import_help_formatter()
        return name, command, rest

    def format_help(self, ctx: Context, formatter: Any) -> None:
        """typer's help page, through :func:`import_help_formatter`."""
        import_help_formatter()
        super().format_help(ctx, formatter)

    def get_help_option(self, ctx: Context) -> Any:
        """The help option, defaulting to ``False``."""
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            option.default = False
        return option


#: Modules typer's help formatter (``typer.rich_utils``) imports at its top and uses for no help page
#: of this command line, with the one name it takes from each: ``Markdown`` renders help only in
#: typer's "markdown" markup mode (the app's is "rich"), ``Traceback`` is never used there (our
#: tracebacks are Python's, redacted).  Together with what they import (markdown-it, pygments,
#: rich.syntax, rich.pretty, attrs) they are ~40 % of ``cogtestbed --help``'s CPU time.
HELP_UNUSED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


def _deferred(module: str, name: str) -> type:
    """A stand-in for ``module.name`` (a class): calling it imports ``module`` and returns the
    real class's instance, so a caller that does use it gets exactly what the import would give."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - the stand-in's constructor
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return type(name, (), {"__new__": __new__, "__module__": module,
                           "__doc__": f"Stand-in for {module}.{name}, imported on first call."})


def import_help_formatter() -> None:
    """Import ``typer.rich_utils`` (typer's help formatter) without :data:`HELP_UNUSED`'s modules.

    While it is imported, stand-ins (:func:`_deferred`) answer for those modules not yet loaded; they
    are taken out of ``sys.modules`` right after, so a later ``import rich.markdown`` loads the real
    module.  Called before a help page is built; a no-op once typer's formatter is loaded.
    """
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {}
    for module, name in HELP_UNUSED.items():
        if module not in sys.modules:
            stand_in = types.ModuleType(module, f"Stand-in for {module} while typer.rich_utils loads.")
            setattr(stand_in, name, _deferred(module, name))
            stand_ins[module] = stand_in
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for module, stand_in in stand_ins.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]


def show_unset_defaults(command: Any) -> None:
    """Every option's default in ``--help``: an option whose default is unset (``None``) and whose
    help does not say its default gets ``[default: none]`` (not set: no limit, nothing added)."""
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option" or getattr(param, "is_flag", False):
            continue
        help_ = param.help or ""
        if param.default in (None, (), []) and not param.required and "default" not in help_.lower():
            param.help = f"{help_} [default: none]".strip()


app = typer.Typer(
    cls=LightGroup,
    name="cogtestbed",
    help="Synthetic agents with known parameters, run through the environments LLMs step "
    "through, analysed by the same fitters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class _LazyConsole:
    """A rich :class:`~rich.console.Console` built on first use: a call that prints only JSON (or
    nothing on stderr) never imports rich's console, markup and rendering modules (tens of ms)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def _real(self) -> Console:
        """The console, built on first use."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    # rich's Live and Progress enter their console (``with console:``); a special method is looked
    # up on the type, never through __getattr__, so the proxy forwards it itself
    def __enter__(self) -> Console:
        return self._real().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._real().__exit__(*exc_info)


console = cast("Console", _LazyConsole())
console_err = cast("Console", _LazyConsole(stderr=True))
#: Environment variables through which rich's console may call a stream a terminal that ``isatty``
#: calls none (or the reverse): where one is set, :func:`stderr_is_terminal` asks rich.
TERMINAL_OVERRIDES = ("FORCE_TERMINAL", "FORCE_COLOR", "TTY_COMPATIBLE")


def stderr_is_terminal() -> bool:
    """``console_err.is_terminal`` (whether someone watches stderr), without importing rich where
    stderr is no terminal and no environment variable overrides that (rich then answers False)."""
    from cogtestbed.progress import stderr_isatty

    if not stderr_isatty() and not any(name in os.environ for name in TERMINAL_OVERRIDES):
        return False
    return bool(console_err.is_terminal)

#: Errors caused by the user's input outside the package's own :class:`~cogtestbed.errors.CogtestbedError`
#: (every error class the package raises for bad input is one), as ``module:Class``: printed as one
#: line, exit status 2, no traceback.  Named rather than imported (``pydantic`` is heavy).
USER_ERROR_NAMES: tuple[str, ...] = (
    "builtins:FileNotFoundError",
    "builtins:FileExistsError",
    "pydantic:ValidationError",
    "builtins:ValueError",
    "builtins:PermissionError",
    "builtins:IsADirectoryError",
    "builtins:NotADirectoryError",
)


def _resolve(name: str, load: bool) -> type[BaseException] | None:
    module_name, _, cls = name.partition(":")
    module = importlib.import_module(module_name) if load else sys.modules.get(module_name)
    return getattr(module, cls) if module is not None else None


def user_error_types(load: bool = False) -> tuple[type[BaseException], ...]:
    """The package's base error and the classes of :data:`USER_ERROR_NAMES`; with ``load=False``
    only those already imported.

    An exception's class is always imported by the time it is raised, so classifying a raised
    exception never needs to import anything.
    """
    from cogtestbed.errors import CogtestbedError

    resolved = (_resolve(name, load) for name in USER_ERROR_NAMES)
    return (CogtestbedError, *(cls for cls in resolved if cls is not None))


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of the user-input errors of :data:`USER_ERROR_NAMES`."""
    return isinstance(exc, user_error_types())


def __getattr__(name: str) -> Any:
    """``USER_ERRORS``: every user-error class, imported on first access (kept for callers)."""
    if name == "USER_ERRORS":
        return user_error_types(load=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


T = TypeVar("T")


def progress(items: Iterable[T], description: str, total: int | None = None,
             enabled: bool = True) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr (hidden when ``enabled`` is false)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

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
    typer.echo(json.dumps(_finite(obj), indent=None, default=str, allow_nan=False))


def _finite(obj: Any) -> Any:
    """``obj`` with NaN and ±inf as None: JSON has no spelling for them (``Infinity`` is not JSON)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
