"""The command line defers the cyclic garbage collector while it starts up (cogtestbed.collector)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, json, os, sys, time
from cogtestbed.collector import defer_collection
first = defer_collection(float(sys.argv[1]))
again = defer_collection(float(sys.argv[1]))
during = gc.isenabled()
pid = os.fork()
if pid == 0:  # a child forked while the collector is off collects as usual
    child = {"child_enabled": gc.isenabled(), "child_frozen": gc.get_freeze_count() > 0}
    os.write(1, json.dumps(child).encode() + b"\\n")
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(float(sys.argv[1]) + 0.5)
print(json.dumps({"first": first, "again": again, "during": during, "after": gc.isenabled(),
                  "frozen": gc.get_freeze_count() > 0}))
"""


def _probe(grace: float, **env: str) -> dict[str, bool]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(grace)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **env}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, bool] = {}
    for line in done.stdout.strip().splitlines():
        out.update(json.loads(line))
    return out


def test_the_collector_is_off_for_the_grace_period_then_on_with_the_start_up_frozen() -> None:
    out = _probe(0.3)
    assert out == {"first": True, "again": True, "during": False, "after": True, "frozen": True,
                   "child_enabled": True, "child_frozen": True}


def test_the_environment_switch_leaves_the_collector_alone() -> None:
    out = _probe(0.1, COGTESTBED_DEFER_GC="0")
    assert out == {"first": False, "again": False, "during": True, "after": True, "frozen": False,
                   "child_enabled": True, "child_frozen": False}
