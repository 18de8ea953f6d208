"""The command line defers the cyclic garbage collector while it starts up (cogtestbed.collector)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, json, os, threading
from cogtestbed.collector import defer_collection, resume_collection
first = defer_collection()
again = defer_collection()
during = gc.isenabled()
threads = threading.active_count()
pid = os.fork()  # the collector is turned on (start-up frozen) before the fork, in parent and child alike
if pid == 0:
    child = {"child_enabled": gc.isenabled(), "child_frozen": gc.get_freeze_count() > 0}
    os.write(1, json.dumps(child).encode() + b"\\n")
    os._exit(0)
os.waitpid(pid, 0)
resume_collection()  # idempotent
print(json.dumps({"first": first, "again": again, "during": during, "after": gc.isenabled(),
                  "frozen": gc.get_freeze_count() > 0, "threads": threads}))
"""


def _probe(**env: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **env}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, object] = {}
    for line in done.stdout.strip().splitlines():
        out.update(json.loads(line))
    return out


def test_the_collector_is_off_until_a_fork_then_on_with_the_start_up_frozen() -> None:
    out = _probe()
    assert out == {"first": True, "again": True, "during": False, "after": True, "frozen": True,
                   "child_enabled": True, "child_frozen": True, "threads": 1}


def test_the_environment_switch_leaves_the_collector_alone() -> None:
    out = _probe(COGTESTBED_DEFER_GC="0")
    assert out == {"first": False, "again": False, "during": True, "after": True, "frozen": False,
                   "child_enabled": True, "child_frozen": False, "threads": 1}
