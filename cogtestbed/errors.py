"""The kinds of error the library raises for what a caller asked, not for a bug in it.

Every one is a :class:`CogtestbedError`: ``except ct.CogtestbedError`` catches each refusal of
the library, and the command line prints such an error as one line (``error: MESSAGE``) with
exit status 2, never a traceback (:func:`cogtestbed.cli.run_cli`).  Each kind below is the base
of the specific classes the layers define beside their code (the registry's
:class:`~cogtestbed.experiments.spec.UnknownNameError`, the schema's
:class:`~cogtestbed.schema.TrialTableError`, ...); all are exported from :mod:`cogtestbed`.
Each kind also keeps the built-in base its callers already catch (an :class:`InputError` is a
:class:`ValueError`, an :class:`~cogtestbed.llm_adapters.clients.base.LLMError` a :class:`RuntimeError`).

=========================  ===================================================================
kind                       raised for
=========================  ===================================================================
:class:`InputError`        a bad option, value or mix of options (``ParameterError``,
                           ``FormError``, a study spec the experiment cannot run)
``UnknownNameError``       an experiment, agent, model, metric, option or importer that is not
                           registered (the message lists the valid names)
:class:`DataError`         a table or file that cannot be read as the experiment's data
                           (``TrialTableError``, ``DataFormatError``, a corrupt response cache)
:class:`BudgetError`       a price table, a price that is missing, a budget that is spent
                           (``PriceError``, ``UnpricedModel``)
``RunDirError``            a run directory that cannot be used as asked (exists, locked, not
                           writable); :class:`ResumeMismatch`: ``--resume`` with other settings
``OutputError``            an output path that cannot be used; ``WriteFailed``: a write the
                           machine refused (full disk, read-only file system)
``LLMError``               an LLM backend or server that failed after its retries
                           (``BackendUnavailable``, ``BackendError``)
``MemoryLimitError``       a job that would not fit in the machine's memory (refused up front)
``PlanInfeasible``         no design within the budget reaches the target
``WorkerDied``             a worker process of a study died before reporting
``ConformanceError``       a conformance check that failed
=========================  ===================================================================

This module imports nothing of cogtestbed (it is the bottom of the layer order).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

#: The package's folder: frames whose file lies inside it are the library's own.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn`, called from the function that warns, that
    names the first caller outside this package (a notebook cell, a script), not the library's
    inner function that happened to call the warning one."""
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def one_line(exc: BaseException) -> str:
    """The message of a user error on one line.

    A pydantic ``ValidationError`` becomes ``NAME: reason (got VALUE)`` for its first error
    (``NAME`` is the field, i.e. the option or design field of the same name); pydantic's
    ``Value error,`` prefix and documentation URL are dropped; any other message has its line
    breaks folded.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
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


#: Characters a terminal acts on rather than shows (C0 but tab and line breaks, DEL, C1, Unicode's
#: bidirectional overrides and isolates): ``ESC [2J`` in a participant id would clear the screen.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (:data:`_CONTROLS`: ANSI escapes, bell,
    backspace, bidirectional overrides) written as its escape (``\\x1b``, ``\\u202e``); line breaks
    and tabs are left to :func:`one_line`.  Every refusal's message passes it (:class:`CogtestbedError`),
    and so does every line the command line prints."""
    return _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def printable_line(text: str) -> str:
    """``text`` as one line a terminal shows as written: its line breaks escaped (``\\n``, ``\\r``: a
    carriage return would let the rest overwrite the line, e.g. a forged ``error:``) and every other
    control character too (:func:`printable`).  Every line that quotes a file's values passes it."""
    return printable(text.replace("\n", "\\n").replace("\r", "\\r"))


def quoted(value: Any) -> str:
    """``value`` as a message quotes it: a string in quotes, any other value as ``str`` gives it,
    either with its control characters escaped (:func:`printable`) and its line breaks too."""
    return printable_line(repr(value) if isinstance(value, str) else str(value))


class CogtestbedError(Exception):
    """Base of every error the library raises for what it was asked (a refusal, not a bug): the
    command line prints its message as one line and exits with status 2.  Its message is made
    :func:`printable` when it is made: a value it quotes never drives the terminal."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(printable(a) if isinstance(a, str) else a for a in args))


class InputError(CogtestbedError, ValueError):
    """A bad option, value or combination of options (the message names the option)."""


class DataError(CogtestbedError, ValueError):
    """A table or file that cannot be read as the data asked for (the message names the file or
    column)."""


class BudgetError(CogtestbedError):
    """A price or budget that does not allow what was asked."""


class ResumeMismatch(CogtestbedError, ValueError):
    """``--resume`` of a run (or a sequential run) with settings other than those it recorded."""


__all__ = ["BudgetError", "CogtestbedError", "DataError", "InputError", "ResumeMismatch"]
