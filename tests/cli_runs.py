"""``cogtestbed ARGS`` run in the test's own process (:func:`cogtestbed.cli.run_cli`, the code behind
``python -m cogtestbed``): its exit status and what it printed, without a fresh interpreter's imports."""

from __future__ import annotations

import contextlib
import io
import subprocess

from cogtestbed.cli import run_cli


def in_process(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The command's exit status, stdout and stderr (``check``: a non-zero status fails with its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(list(args))
    proc = subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc
