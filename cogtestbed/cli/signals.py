"""How a command ends on SIGTERM or SIGINT: one line (``error: terminated`` / ``error: interrupted``), exit status
128 + the signal's number (:data:`SIGTERM_STATUS`, :data:`SIGINT_STATUS`), worker pools shut down and folders the
command created removed, by an exception the command unwinds, raised only where it can unwind.

Python runs a signal handler in the main thread between two bytecodes, wherever that thread is.  A handler that
raises there (Python's own SIGINT handler; a SIGTERM handler raising :class:`SystemExit`) can land inside the
standard library's lock, fork and logging machinery: raised in ``Condition.wait`` between the release of its lock
and the ``try`` that restores it, the exception became ``RuntimeError: release unlocked lock`` at the ``with``
that released it again (a traceback in 1 plan of 8); raised in a fork hook (logging's ``_releaseLock``,
the collector's, run by ``os.fork`` while a plan starts its workers) it was printed as "Exception ignored" and
lost, and the plan ran on to its end with status 0; raised in numba's Python code under its dispatcher, in an
llvmlite callback or in pydantic's schema build, it became "SystemError: ... returned a result with an exception
set", a segmentation fault, or a ``SchemaError``.

:func:`handle_signals` installs handlers that raise only in the command's own code or in a standard-library
blocking wait made to be interrupted (``Condition.wait``'s acquire, under every ``Future.result``,
``concurrent.futures.wait`` and ``Event.wait``; a thread's join), and not under a fork hook, a finaliser, or a
library whose compiled code calls Python (numba, llvmlite, pydantic): elsewhere they try again every
:data:`RETRY_S` (SIGALRM) until the main thread is in such a place (after :data:`RELAX_S`, any library's code
but those).  A signal that finds none within :data:`GIVE_UP_S` ends the process at once with its line and
status, having removed the folders the command created as the raised path does (the output blocks' registry:
:func:`cogtestbed.outputs.remove_created_outputs`; a folder that existed before the command is kept with its files,
less this process's claim marker); worker processes die with their parent (``PR_SET_PDEATHSIG``) and write no
output file (the main process writes them).  One that finds none before the command ends (it was finishing in a
library's code), or whose exception a library swallows, gives its line and status all the same
(:func:`received_signal`; a command still running :data:`GIVE_UP_S` after the exception was raised ends at once,
also removing what it created).  A second signal while the first unwinds is not raised into the clean-up, nor
into the removal before an immediate end.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from cogtestbed.outputs import remove_created_outputs

#: Exit status of a command ended by SIGTERM (128 + signal number, the shell convention).
SIGTERM_STATUS = 128 + signal.SIGTERM
#: Exit status of a command ended by Ctrl-C or SIGINT.
SIGINT_STATUS = 128 + signal.SIGINT
#: Seconds between two tries to raise a signal that came where an exception cannot unwind.
RETRY_S = 0.02
#: Seconds after which a signal is raised in another library's code too (still never in the standard library off
#: its waits, nor under a package of :data:`_NO_RAISE`, a fork hook or a finaliser): the main thread may spend
#: seconds in a library's functions (importing, reading a table).
RELAX_S = 1.0
#: Seconds a signal waits for a place to raise before the process ends at once.
GIVE_UP_S = 5.0

#: Lines of the standard library where an exception raised by a signal unwinds cleanly: the blocking acquires made
#: to be interrupted (``Condition.wait``'s, restored in its ``finally``; ``Thread._wait_for_tstate_lock``'s,
#: bpo-45274).  Anywhere else in it (a lock's release and restore, a fork hook, a queue's bookkeeping) the signal
#: waits.
_WAITS = ("waiter.acquire(", "lock.acquire(block, timeout)")
#: Packages whose C (or Rust) code calls Python code and reads no exception from it, or turns it into another
#: error: numba's dispatcher ("returned a result with an exception set", a segmentation fault), llvmlite's ctypes
#: callbacks ("Exception ignored"), pydantic-core building a schema (a ``SchemaError``).  No frame of the
#: interrupted stack may be theirs.
_NO_RAISE = ("numba", "llvmlite", "pydantic", "pydantic_core")
#: The command's own code: the one place besides :data:`_WAITS` where a signal's exception is raised.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: A line of an outer frame marking a call whose Python callbacks' exceptions are printed and dropped (``os.fork``'s
#: hooks: logging's ``_releaseLock``, :func:`cogtestbed.collector.resume_collection`).
_DROPPED = ("os.fork(",)


class Terminated(SystemExit):
    """A command ended by SIGTERM (exit status :data:`SIGTERM_STATUS`)."""

    def __init__(self) -> None:
        super().__init__(SIGTERM_STATUS)


class _State:
    """The signal being raised (None: none) since when, and whether its exception is already unwinding."""

    pending: int | None = None
    since = 0.0
    raised = False


def _line(frame: FrameType) -> str:
    import linecache

    lineno = frame.f_lineno  # None inside some C-level calls (a frame's line -1)
    return "" if lineno is None else linecache.getline(frame.f_code.co_filename, lineno)


def _raises_here(frame: FrameType, relaxed: bool = False) -> bool:
    """Whether an exception raised in ``frame`` (where the signal interrupted the main thread) unwinds: the
    command's own code (:data:`_PACKAGE`), a module's top level as it is imported (the import fails with it), or a
    blocking wait of the standard library (:data:`_WAITS`); ``relaxed`` (after :data:`RELAX_S`), any code outside
    the standard library too (another library's functions may be called from C that drops or rewrites the
    exception: first wait for a surer place)."""
    name = frame.f_code.co_filename
    if name.startswith(_PACKAGE) or frame.f_code.co_name == "<module>":  # a module's own top level: an import fails
        return True
    stdlib = os.path.dirname(os.__file__) + os.sep
    if name.startswith(stdlib) and "site-packages" not in name:
        return any(wait in _line(frame) for wait in _WAITS)
    return relaxed and not name.startswith("<")  # not a frozen module (importlib's locks)


def _can_raise(frame: FrameType | None, relaxed: bool = False) -> bool:
    """Whether the signal's exception can be raised in ``frame`` (:func:`_raises_here`) and reaches the command: no
    frame of the stack drops it (a finaliser, an ``os.fork`` hook: :data:`_DROPPED`) or is a package of
    :data:`_NO_RAISE`."""
    if frame is None:
        return True
    try:
        return _raises_here(frame, relaxed) and _reaches_command(frame)
    except Exception:  # a frame the checks cannot read: wait for the next one
        return False


def _reaches_command(frame: FrameType) -> bool:
    """Whether no frame from ``frame`` out drops an exception or is a package of :data:`_NO_RAISE`."""
    seen: FrameType | None = frame
    while seen is not None:
        name = seen.f_code.co_filename
        if seen.f_code.co_name == "__del__" or any(f"{os.sep}{package}{os.sep}" in name for package in _NO_RAISE):
            return False
        if seen is not frame and any(dropped in _line(seen) for dropped in _DROPPED):
            return False
        seen = seen.f_back
    return True


def ending(signum: int) -> tuple[str, int]:
    """The line's word and the exit status of a command ended by ``signum`` (SIGTERM, else SIGINT)."""
    return ("terminated", SIGTERM_STATUS) if signum == signal.SIGTERM else ("interrupted", SIGINT_STATUS)


def _exit_now(signum: int) -> None:
    """End the process at once: the signal's line and status (no place to raise it was reached, or its exception
    was swallowed by a library's bare ``except``), the folders the command created removed first
    (:func:`cogtestbed.outputs.remove_created_outputs`: the command's output blocks will not unwind)."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):  # no second signal into the removal
        signal.signal(sig, signal.SIG_IGN)
    word, status = ending(signum)
    try:
        remove_created_outputs()
    finally:
        os.write(2, f"error: {word}\n".encode())
        os._exit(status)


def _handle(signum: int, frame: FrameType | None) -> None:
    """SIGTERM, SIGINT and the retries' SIGALRM: raise the pending signal's exception where it can unwind."""
    if _State.raised:  # unwinding; a retry's alarm this long after: its exception was swallowed on the way
        if signum == signal.SIGALRM and _State.pending is not None:
            _exit_now(_State.pending)
        return
    if signum != signal.SIGALRM and _State.pending is None:
        _State.pending, _State.since = signum, time.monotonic()
    pending = _State.pending
    if pending is None:  # a stray SIGALRM
        return
    waited = time.monotonic() - _State.since
    if not _can_raise(frame, relaxed=waited >= RELAX_S):
        if waited >= GIVE_UP_S:
            _exit_now(pending)
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    signal.setitimer(signal.ITIMER_REAL, GIVE_UP_S)  # the command unwinds within it, else ends at once
    _State.raised = True
    if pending == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt


def received_signal() -> int | None:
    """The signal that came during the last :func:`handle_signals` block (None: none).  Where the command's status
    is not that signal's (:func:`ending`), it found no place to raise before the command ended, or a library
    swallowed its exception: the command line prints its line and exits with its status all the same."""
    return _State.pending


def interrupted() -> bool:
    """Whether the command was interrupted by SIGINT inside :func:`handle_signals` (typer answers the
    :class:`KeyboardInterrupt` with exit status 130 and no line: the command line then prints its own)."""
    return _State.raised and _State.pending == signal.SIGINT


@contextmanager
def handle_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raised as :class:`Terminated` and :class:`KeyboardInterrupt` where the command can unwind
    (module docstring) inside the block; the previous handlers restored after it."""
    _State.pending, _State.raised = None, False
    signals = (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)
    previous = {sig: signal.signal(sig, _handle) for sig in signals}
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = ["GIVE_UP_S", "RELAX_S", "RETRY_S", "SIGINT_STATUS", "SIGTERM_STATUS", "Terminated", "handle_signals",
           "ending", "interrupted", "received_signal"]
