"""The ``cogtestbed`` command line (typer): a thin layer over the library.

Each sub-command lives in a module of this package that registers itself on :data:`app`;
:func:`main` turns the library's input errors and click's usage errors into one line on stderr
and exit status 2, and turns SIGTERM and SIGINT into an orderly exit, one line and status 128 + the
signal (worker pools shut down, folders created for the failed command removed;
:mod:`cogtestbed.cli.signals`).  Sub-command modules import the library inside their command
bodies, so building the help loads no numerical package (``tests/test_cli_imports.py`` guards the
import set).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from types import TracebackType
from typing import NoReturn

import typer

# Sub-command modules register themselves on import.
from cogtestbed.cli import check as _check  # noqa: F401,E402
from cogtestbed.cli import demo as _demo  # noqa: F401,E402
from cogtestbed.cli import design_check as _design_check  # noqa: F401,E402
from cogtestbed.cli import export as _export  # noqa: F401,E402
from cogtestbed.cli import listing as _listing  # noqa: F401,E402
from cogtestbed.cli import looks as _looks  # noqa: F401,E402
from cogtestbed.cli import metrics as _metrics  # noqa: F401,E402
from cogtestbed.cli import phenotype as _phenotype  # noqa: F401,E402
from cogtestbed.cli import plan as _plan  # noqa: F401,E402
from cogtestbed.cli import population as _population  # noqa: F401,E402
from cogtestbed.cli import run as _run  # noqa: F401,E402
from cogtestbed.cli import serve as _serve  # noqa: F401,E402
from cogtestbed.cli import simulate as _simulate  # noqa: F401,E402
from cogtestbed.cli import studies as _studies  # noqa: F401,E402
from cogtestbed.cli import transcripts as _transcripts  # noqa: F401,E402
from cogtestbed.cli.app import app, console_err, is_user_error
from cogtestbed.cli.options import as_flags
from cogtestbed.cli.signals import (
    SIGINT_STATUS,
    SIGTERM_STATUS,
    Terminated,
    ending,
    handle_signals,
    interrupted,
    received_signal,
)
from cogtestbed.errors import one_line, printable
from cogtestbed.redact import redact

#: Environment variable that turns the quick exit of :func:`exit_process` off ("0").
QUICK_EXIT_SWITCH = "COGTESTBED_QUICK_EXIT"


def _error(message: str) -> None:
    from rich.markup import escape

    console_err.print(f"[bold red]error:[/] {escape(printable(redact(message)))}", highlight=False, soft_wrap=True)


def warning_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 line: str | None = None) -> str:
    """A warning as the command line prints it: one line, ``warning: CATEGORY: message`` — not
    Python's default, which adds the source file, line number and the line of code."""
    text = printable(redact(" ".join(str(message).split())))
    return f"warning: {category.__name__}: {text}\n"


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); return the exit status.
    Warnings raised meanwhile print as one line each (:func:`warning_line`)."""
    previous = warnings.formatwarning
    warnings.formatwarning = warning_line
    try:
        return _run_app(argv)
    finally:
        warnings.formatwarning = previous


def _run_app(argv: Sequence[str] | None) -> int:
    try:
        rv = app(args=list(argv) if argv is not None else None, prog_name="cogtestbed", standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors (typer's vendored click)
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text, as click shows it
            getattr(exc, "show", lambda: None)()
            return int(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        _error(" ".join(exc.format_message().split()) + where)
        return int(exc.exit_code)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # Ctrl-C / SIGINT: worker pools already shut down
            _error("interrupted")
            return SIGINT_STATUS
        _error("aborted")
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return SIGINT_STATUS
    except Terminated:  # SIGTERM (cogtestbed.cli.signals): worker pools shut down, created folders removed
        _error("terminated")
        return SIGTERM_STATUS
    except Exception as exc:
        missing = missing_extra(exc)
        if missing is not None:
            _error(missing)
            return 2
        from cogtestbed.outputs import write_failure

        failed = write_failure(exc)
        if failed is not None:  # a write the library does not wrap (a plain write_text)
            _error(one_line(failed))
            return 2
        if not is_user_error(exc):
            raise
        _error(as_flags(one_line(exc), ()))  # the library names fields (`level`), the command line its flags
        return 2
    if rv == SIGINT_STATUS and interrupted():  # typer's answer to Ctrl-C: status 130, silent
        _error("interrupted")
    return rv if isinstance(rv, int) else 0


#: Modules whose distribution name differs from the import name, by the extra that provides them.
MODULE_EXTRAS = {"distributed": "dask"}


def _extra_of(module: str) -> str | None:
    """The optional-dependency group (``pip install 'cogtestbed[EXTRA]'``) that installs ``module``,
    read from the package's own metadata (``Requires-Dist: NAME; extra == "EXTRA"``)."""
    import importlib.metadata as metadata
    import re

    top = module.partition(".")[0]
    if top in MODULE_EXTRAS:
        return MODULE_EXTRAS[top]
    try:
        requires = metadata.requires("cogtestbed") or []
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without an install
        return None
    for req in requires:
        found = re.match(r"\s*([A-Za-z0-9_.-]+).*extra\s*==\s*[\"']([^\"']+)[\"']", req)
        if found and re.sub(r"[-.]", "_", found.group(1).lower()) == top.lower():
            return found.group(2)
    return None


def missing_extra(exc: BaseException) -> str | None:
    """One line naming the ``pip install 'cogtestbed[EXTRA]'`` for an import of an optional
    dependency that failed (``exc`` or an exception it was raised from); ``None`` for any other error."""
    seen: BaseException | None = exc
    while seen is not None:
        name = getattr(seen, "name", None)
        if isinstance(seen, ModuleNotFoundError) and name:
            extra = _extra_of(name)
            if extra is not None:
                return (f"this command needs the optional dependency {name.partition('.')[0]!r}: "
                        f"pip install 'cogtestbed[{extra}]'")
        seen = seen.__cause__ or seen.__context__
    return None


def main(quick_exit: bool = False) -> None:
    """Entry point of the command line: run it on ``sys.argv`` and exit with its status.

    ``quick_exit``: end the process through :func:`exit_process` (the ``cogtestbed`` console script
    and ``python -m cogtestbed``, which own their process); otherwise ``sys.exit`` (a caller in
    the same process, a test, catches the ``SystemExit``).
    """
    sys.excepthook = _redacted_traceback
    with handle_signals():  # SIGTERM and SIGINT raised only where the command can unwind
        code = run_cli()
    received = received_signal()
    if received is not None and code != ending(received)[1]:  # never raised, or swallowed: its line and status
        word, code = ending(received)
        _error(word)
    if quick_exit:
        exit_process(code)
    sys.exit(code)


def _redacted_traceback(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """Print an unexpected error's traceback (a bug) as Python does, redacted: its messages may quote
    what a server sent (:func:`cogtestbed.redact.redact`)."""
    import traceback

    sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))


def console_main() -> None:
    """The ``cogtestbed`` console script: :func:`main` with the quick exit of a process of its own,
    the garbage collector deferred while it starts up (:func:`cogtestbed.collector.defer_collection`)."""
    from cogtestbed.collector import defer_collection

    defer_collection()
    main(quick_exit=True)


def exit_process(code: int) -> NoReturn:
    """End the command-line process with status ``code``, skipping the interpreter's teardown.

    After the command, Python's shutdown would take apart every module and collect every object
    (pandas, numba, llvmlite, scipy: 0.15–0.3 s of CPU after a fitting call, more than its fits),
    none of which has anything left to write.  The steps of that shutdown that have an effect run
    as Python runs them (``Py_FinalizeEx``): the ``atexit`` handlers (temporary folders,
    multiprocessing's clean-up, logging), then stdout and stderr are flushed; the process then
    ends with ``os._exit``.  Where another non-daemon thread is alive (the interpreter would wait
    for it), where a stream cannot be flushed, or with ``COGTESTBED_QUICK_EXIT=0``, the interpreter
    shuts down as usual (``sys.exit``).
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others or os.environ.get(QUICK_EXIT_SWITCH, "1") == "0":
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the usual shutdown reports it
        sys.exit(code)
    os._exit(code)


__all__ = ["app", "console_main", "exit_process", "main", "missing_extra", "run_cli"]
