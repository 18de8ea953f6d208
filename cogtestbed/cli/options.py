"""A command's options made from its request: the one place of the command line
that builds a typer option or argument.

:func:`request_command` registers ``body(request, *more)`` as a command whose parameters are the
command-line options of the request classes (:func:`cogtestbed.request.cli_leaves`): typer reads the
generated ``__signature__`` of the command function, so ``--help`` shows each option with its flag,
help text, default, limits and help panel (the request's sub-object) as declared there.  The command
function builds each request from the values typer passes (:func:`cogtestbed.request.from_cli`) and calls
``body`` with them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from cogtestbed.cli.app import is_user_error
from cogtestbed.request import Leaf, cli_leaves, from_cli, leaves


def typer_info(leaf: Leaf) -> Any:
    """The typer option (or argument) of ``leaf``."""
    common: dict[str, Any] = {"help": " ".join(leaf.opt.help.split()), "rich_help_panel": leaf.panel}
    if leaf.opt.min is not None:
        common["min"] = leaf.opt.min
    if leaf.opt.max is not None and leaf.opt.cost is None:
        common["max"] = leaf.opt.max
    elif leaf.opt.max is not None:  # a count's bound: refused by the request's build, saying what it would cost
        common["help"] += f" At most {leaf.opt.max:,.0f}."
    if leaf.opt.show_default is not None:
        common["show_default"] = leaf.opt.show_default
    if leaf.opt.argument:
        return typer.Argument(**common)
    return typer.Option(*leaf.opt.flags, **common)  # none declared: typer's own (--name, --no-name for a flag)


def parameter(leaf: Leaf) -> inspect.Parameter:
    """The command function's parameter of ``leaf``: its command-line type annotated with its typer
    option, its default."""
    parsed = leaf.opt.cli_type if leaf.opt.cli_type is not None else leaf.hint
    if isinstance(parsed, str):  # a type naming what its module imports only for type checking
        raise TypeError(f"option {leaf.name}: give the type the command line parses (cli_type), not {parsed!r}")
    kind_of = inspect.Parameter.POSITIONAL_OR_KEYWORD if leaf.opt.argument else inspect.Parameter.KEYWORD_ONLY
    default = inspect.Parameter.empty if leaf.opt.cli_required else leaf.default
    return inspect.Parameter(leaf.cli_name, kind_of, default=default, annotation=Annotated[parsed, typer_info(leaf)])


def command_signature(*classes: type[Any]) -> inspect.Signature:
    """The parameters of a command taking the command-line options of ``classes`` (in that order;
    the positional arguments first, as the command line reads them)."""
    found = [leaf for cls in classes for leaf in cli_leaves(cls)]
    names = [leaf.cli_name for leaf in found]
    if len(set(names)) != len(names):
        raise TypeError(f"options declared twice: {sorted({n for n in names if names.count(n) > 1})}")
    ordered = [leaf for leaf in found if leaf.opt.argument] + [leaf for leaf in found if not leaf.opt.argument]
    return inspect.Signature([parameter(leaf) for leaf in ordered])


def metrics_flags() -> dict[str, str]:
    """The flag of every experiment's metrics options by name (``bootstrap``: ``--bootstrap``)."""
    from cogtestbed.registry import experiment_names, get_experiment

    return {name: option.flag for exp in experiment_names()
            for name, option in get_experiment(exp).metrics.options.items()}


def as_flags(text: str, classes: Sequence[type[Any]]) -> str:
    """A library message's fields (written `` `name` ``) as the command line's flags (``--name``): those
    of the requests ``classes`` first, then those of any other request the command line declares (a message
    naming an option of another command), then an experiment's metrics options; a quoted word none declares stays
    as it is."""
    import re

    from cogtestbed.request import declared_requests

    flags = {leaf.name: leaf.flags[0] for cls in declared_requests() for leaf in leaves(cls) if not leaf.opt.argument}
    if set(re.findall(r"`(\w+)`", text)) - set(flags):  # an experiment's metrics option (`bootstrap`: --bootstrap)
        flags = {**metrics_flags(), **flags}
    flags.update({leaf.name: leaf.flags[0] for cls in classes for leaf in leaves(cls) if not leaf.opt.argument})
    return re.sub(r"`(\w+)`", lambda m: flags.get(m.group(1), m.group(0)), text)


def request_command(app: typer.Typer, *classes: type[Any], name: str | None = None, help: str | None = None,  # noqa: A002
                    context: bool = False, **settings: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``body(REQUEST, ...)`` (one argument per class of ``classes``; with ``context`` click's
    context first, for a command taking extra arguments) as the command ``name`` (default: the body's
    name) of ``app``, its options those of ``classes``; ``help`` defaults to the body's docstring, as
    typer shows it."""

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(body)
        def command(**values: Any) -> Any:
            ctx = (values.pop("ctx"),) if context else ()
            try:
                return body(*ctx, *(from_cli(cls, values) for cls in classes))
            except Exception as exc:  # the library names fields (`effect`); the command line names its flags
                if is_user_error(exc) and exc.args and isinstance(exc.args[0], str):
                    exc.args = (as_flags(exc.args[0], classes), *exc.args[1:])
                raise

        del command.__wrapped__  # typer reads the signature below, not the body's
        signature = command_signature(*classes)
        if context:
            signature = signature.replace(parameters=[
                inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
                *signature.parameters.values()])
        command.__signature__ = signature  # type: ignore[attr-defined]
        command.__annotations__ = {}
        app.command(name, help=help, **settings)(command)
        return body

    return decorate
