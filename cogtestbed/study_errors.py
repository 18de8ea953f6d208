"""Errors a study or a conformance check raises in the process that runs it (light: the CLI imports
them at start-up)."""

from __future__ import annotations

from cogtestbed.errors import CogtestbedError, InputError


class StudyInputError(InputError):
    """A study task rejected its input: the worker's message, on one line.  ``typed``: whether the
    worker's own exception was one of the library's typed errors (a plain ``ValueError`` from
    deeper down is shown as one line too, but is a bug to fix at its cause: the matrix run counts
    it as a traceback, the matrix run, ``benchmarks/studies/matrix.py``); ``remote_traceback``: the worker's."""

    def __init__(self, message: str, typed: bool = True, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.typed, self.remote_traceback = typed, remote_traceback

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.typed, self.remote_traceback))


class StudyFailure(RuntimeError):
    """A study task failed for another reason: the worker's message and its traceback."""


class WorkerDied(CogtestbedError, StudyFailure):
    """A worker process of a study died (killed, out of memory) before reporting a result."""


class ConformanceError(CogtestbedError, AssertionError):
    """A conformance check failed (the message says what, where, and what was expected)."""


class NotApplicable(Exception):  # noqa: N818 - it is an outcome, not an error
    """The experiment has nothing this check could test (reported as ``skipped``)."""
