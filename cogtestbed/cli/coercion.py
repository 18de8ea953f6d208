"""Command-line values that need no conversion skip typer's pydantic coercion.

typer (0.29) converts every parameter value through a pydantic ``TypeAdapter`` built on first
use: a fitting call that reads three strings and a path imports pydantic's validator machinery
and builds four adapters (≈ 0.1 s of CPU) to hand back the strings it was given.
:class:`PlainCoercion` answers the values whose conversion is the identity, or a plain ``Path``,
itself, exactly as typer's adapter would; every other value (a number typed on the command line,
a choice, a list, a parser, a file) goes to typer's own coercion, built on demand, so errors and
conversions are typer's.

It is installed per command by :func:`use_plain_coercion` (the command group calls it on each
command it resolves).  It relies on typer's parameter attributes (``type_descriptor`` and the
runtime coercion slot, reached only through :mod:`cogtestbed.shims.typer_shim`) and does nothing
where a typer release lacks them, so values are then coerced by typer as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Marks a value :func:`plain_value` cannot pass through (``None`` is a value).
NOT_PLAIN = object()


def plain_value(descriptor: Any, value: Any, param: Any, ctx: Any) -> Any:
    """``value`` as typer's adapter for ``descriptor`` would return it, or :data:`NOT_PLAIN`.

    Passed through: a ``str`` for a ``str`` parameter, a ``bool`` for a ``bool`` one, an ``int``
    or ``float`` of the parameter's own type within its ``min`` / ``max`` (a default value).  A
    ``str`` for a ``pathlib.Path`` parameter becomes ``Path(value)`` (pydantic's lax ``Path``
    validation) where that spells the path as given (the messages name it as typed), then goes
    through typer's own checks (``coerce_cli_path``: existence, kind, permissions).
    """
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.is_choice or descriptor.is_file:
        return NOT_PLAIN
    annotation = descriptor.annotation
    if annotation in (str, bool) and type(value) is annotation:
        return value
    if annotation in (int, float) and type(value) is annotation and not info.clamp:
        if (info.min is None or value >= info.min) and (info.max is None or value <= info.max):
            return value
        return NOT_PLAIN
    if annotation is Path and info.path_type is None and type(value) is str and value and str(Path(value)) == value:
        from cogtestbed.shims.typer_shim import coerce_path

        return coerce_path(Path(value), info, param, ctx)
    return NOT_PLAIN


class PlainCoercion:
    """A parameter's runtime coercion: :func:`plain_value` first, typer's own otherwise."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self._typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """typer's ``RuntimeParam.coerce`` contract: the converted value of ``param``."""
        if not (param.multiple or param.nargs == -1):
            if value is None:
                return None
            plain = plain_value(self.descriptor, value, param, ctx)
            if plain is not NOT_PLAIN:
                return plain
        if self._typer is None:
            from cogtestbed.shims.typer_shim import typer_coercion

            self._typer = typer_coercion(self.descriptor)
        return self._typer.coerce(value, param=param, ctx=ctx)


def use_plain_coercion(command: Any, ctx: Any) -> None:
    """Give each typer parameter of ``command`` a :class:`PlainCoercion` (none already built).

    ``ctx`` is the context of the group that resolved ``command``: the command's help option
    (built on first use, from the help names its context inherits from the group's) is one of
    its parameters too, which an absent ``--help`` (``None``) would otherwise coerce.
    """
    from cogtestbed.shims.typer_shim import set_coercion, unbuilt

    params = list(getattr(command, "params", ()))
    if "help_option_names" not in (getattr(command, "context_settings", None) or {}):
        help_option = command.get_help_option(ctx) if hasattr(command, "get_help_option") else None
        params.extend([help_option] if help_option is not None else [])
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and unbuilt(param):
            set_coercion(param, PlainCoercion(descriptor))
