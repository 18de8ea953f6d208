"""The registry's error for a name that is not registered (:class:`UnknownNameError`), in a module of its own so
that a refusal from an experiment's shipped facts (:mod:`cogtestbed.planning.facts`) raises it before the
experiment (:mod:`cogtestbed.experiments.spec`, which re-exports it) is imported.

Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import CogtestbedError


class UnknownNameError(CogtestbedError, KeyError):
    """A name that is not registered (the message lists the valid ones)."""

    def __init__(self, kind: str, name: str, valid: Mapping[str, Any] | list[str] | tuple[str, ...],
                 where: str = "") -> None:
        self._args = (kind, name, tuple(valid), where)
        if len(valid):
            hint = f"choose one of: {', '.join(sorted(valid))}"
        else:
            hint = f"there are none{' for ' + where if where else ''}"
        self.message = f"unknown {kind} {name!r}{' for ' + where if where else ''}; {hint}"
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by constructor arguments (the error crosses process boundaries from study workers)."""
        return (type(self), self._args)

    def __str__(self) -> str:
        return self.message


def unknown_test(test: str, valid: list[str] | tuple[str, ...], experiment: str,
                 aliases: Mapping[str, str]) -> UnknownNameError:
    """The error for a ``test`` the experiment's metrics do not report, naming the paper's ``aliases``."""
    named = ", ".join(f"{k} = {v}" for k, v in aliases.items())
    return UnknownNameError("test", test, valid, experiment + (f" (the paper's names: {named})" if named else ""))


__all__ = ["UnknownNameError", "unknown_test"]
