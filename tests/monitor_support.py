"""Shared steps of the monitored-run tests: read the written path, kill a run after its first step."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def recorded_steps(out: Path) -> list[dict[str, Any]]:
    """The monitored run's path as written: one JSON step per line of ``monitor.jsonl``."""
    return [json.loads(x) for x in (out / "monitor.jsonl").read_text().splitlines()]


def kill9_after_first_step(args: list[str], env: dict[str, str], out: Path, timeout: float) -> list[dict[str, Any]]:
    """Start ``cogtestbed ARGS``, SIGKILL it once its first monitor step is on disk, return the steps written."""
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + timeout
    path = out / "monitor.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_text().count("\n") >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return recorded_steps(out)
