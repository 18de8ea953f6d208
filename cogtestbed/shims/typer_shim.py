"""typer's internals the command line relies on (issue 73): its vendored click context, a parameter's
runtime coercion and its path checks.

typer (0.29) converts every parameter value through a pydantic ``TypeAdapter`` held in a parameter's
``_runtime_param`` (built on first use by ``typer._coercion.build_runtime_param``); it has no public hook
for another coercion.  :func:`unbuilt` / :func:`set_coercion` read and set that attribute,
:func:`typer_coercion` builds typer's own, :func:`coerce_path` runs typer's path checks
(``typer._param_types.coerce_cli_path``), and :data:`ClickContext` is the vendored click ``Context``
(``typer._click``) that typer's command groups are called with (:mod:`cogtestbed.cli.coercion`).
"""

from __future__ import annotations

import importlib
from typing import Any

from typer._click import Context as ClickContext

#: The typer version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "0.29.2"
#: Marks a parameter with no ``_runtime_param`` attribute (another typer release).
_ABSENT = object()


def unbuilt(param: Any) -> bool:
    """Whether typer's parameter ``param`` has a runtime coercion slot not built yet (False where the typer
    release has no such slot: values are then coerced by typer as before)."""
    return getattr(param, "_runtime_param", _ABSENT) is None


def set_coercion(param: Any, coercion: Any) -> None:
    """Make ``coercion`` (an object with typer's ``coerce(value, param, ctx)``) ``param``'s runtime coercion."""
    param._runtime_param = coercion


def typer_coercion(descriptor: Any) -> Any:
    """typer's own runtime coercion for a parameter's ``type_descriptor``."""
    from typer._coercion import build_runtime_param

    return build_runtime_param(descriptor)


def coerce_path(value: Any, info: Any, param: Any, ctx: Any) -> Any:
    """typer's checks of a ``pathlib.Path`` value (existence, kind, permissions) as its coercion runs them."""
    from pathlib import Path

    from typer._param_types import coerce_cli_path

    return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)


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


__all__ = ["LOCKED", "ClickContext", "coerce_path", "problems", "set_coercion", "typer_coercion", "unbuilt"]
