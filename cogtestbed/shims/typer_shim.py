"""typer's internals the command line relies on: command-line values that need no conversion
skip typer's pydantic coercion.

typer (0.29) converts every parameter value through a pydantic ``TypeAdapter`` built on first use and kept in
the parameter's ``_runtime_param``; it has no public hook for another coercion.  A fitting call that reads three
strings and a path would import pydantic's validator machinery and build four adapters (≈ 0.1 s of CPU) to hand
back the strings it was given.  :class:`PlainCoercion` answers the values whose conversion is the identity, or
a plain ``Path``, itself, exactly as typer's adapter would; every other value (a number typed on the command
line, a choice, a list, a parser, a file) goes to typer's own coercion (``typer._coercion``), built on demand,
so errors and conversions are typer's.  It is installed per command by :func:`use_plain_coercion` (the command
group, :class:`cogtestbed.cli.app.LightGroup`, calls it on each command it resolves), and does nothing where a
typer release lacks the attributes it relies on (``type_descriptor``, ``_runtime_param``), so values are then
coerced by typer as before.  :data:`ClickContext` is the vendored click ``Context`` (``typer._click``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from typer._click import Context as ClickContext

#: The typer version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "0.29.2"
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
    if annotation in (int, float) and not info.clamp:
        return _plain_number(annotation, value, info, param, ctx)
    if annotation is Path and info.path_type is None and type(value) is str and value and str(Path(value)) == value:
        from typer._param_types import coerce_cli_path

        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    return NOT_PLAIN


def _plain_number(annotation: type, value: Any, info: Any, param: Any, ctx: Any) -> Any:
    """A default ``int`` / ``float`` of the parameter's own type within its ``min`` / ``max``, or a number typed on
    the command line (:func:`typed_number`); else :data:`NOT_PLAIN`."""
    if type(value) is annotation:
        within = (info.min is None or value >= info.min) and (info.max is None or value <= info.max)
        return value if within else NOT_PLAIN
    if type(value) is str:
        return typed_number(value, annotation, info.min, info.max, param, ctx)
    return NOT_PLAIN


def typed_number(text: str, kind: type, low: float | None, high: float | None, param: Any, ctx: Any) -> Any:
    """``text`` typed on the command line as a number of ``kind`` (``int`` or ``float``) within ``[low, high]``, or
    click's ``BadParameter`` in one plain line ("nan is not a finite number", "must be at least 0, got -1"):
    typer's own coercion would answer in pydantic's words ("Input should be greater than or equal to 0", for a
    NaN too)."""
    from typer._click.exceptions import BadParameter

    try:
        value = int(text) if kind is int else float(text)
    except ValueError:
        raise BadParameter(f"{text!r} is not {'an integer' if kind is int else 'a number'}", ctx, param) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadParameter(f"{text} is not a finite number", ctx, param)
    if low is not None and value < low:
        raise BadParameter(f"must be at least {low:g}, got {text}", ctx, param)
    if high is not None and value > high:
        raise BadParameter(f"must be at most {high:g}, got {text}", ctx, param)
    return value


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
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self.descriptor)
        return self._typer.coerce(value, param=param, ctx=ctx)


def use_plain_coercion(command: Any, ctx: Any) -> None:
    """Give each typer parameter of ``command`` a :class:`PlainCoercion` (none already built).

    ``ctx`` is the context of the group that resolved ``command``: the command's help option
    (built on first use, from the help names its context inherits from the group's) is one of
    its parameters too, which an absent ``--help`` (``None``) would otherwise coerce.
    """
    params = list(getattr(command, "params", ()))
    if "help_option_names" not in (getattr(command, "context_settings", None) or {}):
        help_option = command.get_help_option(ctx) if hasattr(command, "get_help_option") else None
        params.extend([help_option] if help_option is not None else [])
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and getattr(param, "_runtime_param", NOT_PLAIN) is None:
            param._runtime_param = PlainCoercion(descriptor)


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed typer ([] where all does):
    the locked version, ``typer._click.Context``, ``typer._coercion.build_runtime_param``,
    ``typer._param_types.coerce_cli_path`` (taking ``path_type``, ``param``, ``ctx``) and a typer parameter's
    ``_runtime_param`` slot (None until typer builds it)."""
    import inspect

    import typer

    out = [] if typer.__version__ == LOCKED else [f"typer {typer.__version__} is installed; the shim is for {LOCKED}"]
    coercion: Any = importlib.import_module("typer._coercion")
    if not callable(getattr(coercion, "build_runtime_param", None)):
        out.append("typer._coercion has no build_runtime_param")
    types: Any = importlib.import_module("typer._param_types")
    path = getattr(types, "coerce_cli_path", None)
    if path is None or not {"path_type", "param", "ctx"} <= set(inspect.signature(path).parameters):
        out.append("typer._param_types.coerce_cli_path no longer takes path_type, param and ctx")
    parameter = getattr(importlib.import_module("typer.core"), "_TyperParameter", None)
    built = getattr(parameter, "get_runtime_param", None)
    if built is None or "self._runtime_param is None" not in inspect.getsource(built):
        out.append("typer's parameters no longer build their coercion into _runtime_param when it is None")
    if not isinstance(ClickContext, type):
        out.append("typer._click.Context is not a class")
    return out


__all__ = ["LOCKED", "NOT_PLAIN", "ClickContext", "PlainCoercion", "plain_value", "problems", "typed_number",
           "use_plain_coercion"]
