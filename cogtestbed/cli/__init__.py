"""The ``cogtestbed`` command line (typer): a thin layer over the library.

Each sub-command lives in a module of this package that registers itself on :data:`app`;
:func:`main` turns the library's input errors and click's usage errors into one line on stderr
and exit status 2, and turns SIGTERM into an orderly exit (worker pools shut down, folders
created for the failed command removed).  Sub-command modules import the library inside their
command bodies, so building the help loads no numerical package (``tests/test_cli_imports.py``
guards the import set).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from types import FrameType

import typer
from rich.markup import escape

# Sub-command modules register themselves on import.
from cogtestbed.cli import check as _check  # noqa: F401,E402
from cogtestbed.cli import demo as _demo  # noqa: F401,E402
from cogtestbed.cli import listing as _listing  # noqa: F401,E402
from cogtestbed.cli import metrics as _metrics  # noqa: F401,E402
from cogtestbed.cli import phenotype as _phenotype  # noqa: F401,E402
from cogtestbed.cli import plan as _plan  # noqa: F401,E402
from cogtestbed.cli import run as _run  # noqa: F401,E402
from cogtestbed.cli import simulate as _simulate  # noqa: F401,E402
from cogtestbed.cli import studies as _studies  # noqa: F401,E402
from cogtestbed.cli.app import app, console_err, is_user_error, one_line

#: Exit status of a command ended by SIGTERM (128 + signal number, the shell convention).
SIGTERM_STATUS = 128 + signal.SIGTERM


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(SIGTERM_STATUS)


def _error(message: str) -> None:
    console_err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
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
    except typer.Abort:
        _error("aborted")
        return 1
    except Exception as exc:
        if not is_user_error(exc):
            raise
        _error(one_line(exc))
        return 2
    return rv if isinstance(rv, int) else 0


def main() -> None:
    """Entry point of the ``cogtestbed`` console script.

    The command line keeps freed heap for the next table (:func:`cogtestbed.heap.keep_freed_memory`);
    a library caller opts in by calling it, as the process-wide allocator is the caller's to set.
    """
    from cogtestbed.heap import keep_freed_memory

    keep_freed_memory()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        code = run_cli()
    finally:
        signal.signal(signal.SIGTERM, previous)
    sys.exit(code)


__all__ = ["app", "main", "run_cli"]
