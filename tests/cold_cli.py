"""Plan requests run by a fresh interpreter (shared by the refusal tests): which exit codes and error lines they
give, and which heavy modules were imported by the time the last was refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The numerical libraries (and the package's heavy modules) a refusal from the request alone must not import.
HEAVY = ("numpy", "pandas", "scipy", "numba", "pymc", "torch", "pytensor", "sklearn", "cogtestbed.simulation",
         "cogtestbed.experiments.spec")

_PROBE = """
import io, json, sys, contextlib
from cogtestbed.cli import run_cli
codes, errs = [], []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        codes.append(run_cli(["plan", *argv]))
    errs.append(err.getvalue())
heavy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
print(json.dumps({"codes": codes, "errs": errs, "heavy": heavy}))
"""


def cold(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (no test times it: what a cold refusal must not do is import the heavy
    modules, which :func:`assert_refused_cold` checks whatever the machine's load)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def assert_refused_cold(requests: list[list[str]], heavy: tuple[str, ...] = HEAVY) -> None:
    """Every ``cogtestbed plan`` request of ``requests``, in one fresh process: exit 2, one ``error:`` line, and
    not one module of ``heavy`` imported by the time the last is refused (deterministic, whatever the load)."""
    done = cold(_PROBE, json.dumps(requests), json.dumps(heavy))
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert out["codes"] == [2] * len(requests), out["errs"]
    for err in out["errs"]:
        assert [line.startswith("error:") for line in err.splitlines()] == [True], err
    assert out["heavy"] == []
