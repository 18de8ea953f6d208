"""The ``cogtestbed`` command line (typer): a thin layer over the library.

Each sub-command lives in a module of this package that registers itself on :data:`app`;
:func:`main` turns the library's input errors into one clear message and exit status 2.
Sub-command modules import the library inside their command bodies, so building the help
loads no numerical package (``tests/test_cli_imports.py`` guards the import set).
"""

from __future__ import annotations

import sys

from rich.markup import escape

# Sub-command modules register themselves on import.
from cogtestbed.cli import check as _check  # noqa: F401,E402
from cogtestbed.cli import demo as _demo  # noqa: F401,E402
from cogtestbed.cli import metrics as _metrics  # noqa: F401,E402
from cogtestbed.cli import phenotype as _phenotype  # noqa: F401,E402
from cogtestbed.cli import plan as _plan  # noqa: F401,E402
from cogtestbed.cli import run as _run  # noqa: F401,E402
from cogtestbed.cli import simulate as _simulate  # noqa: F401,E402
from cogtestbed.cli import studies as _studies  # noqa: F401,E402
from cogtestbed.cli.app import app, console_err, is_user_error


def main() -> None:
    """Entry point of the ``cogtestbed`` console script."""
    try:
        app()
    except Exception as exc:
        if not is_user_error(exc):
            raise
        console_err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)


__all__ = ["app", "main"]
