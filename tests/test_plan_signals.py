"""A plan can be stopped (issue 40, item 3): SIGTERM and SIGINT end ``cogtestbed plan`` and every
worker within 5 s and leave no output folder; the workers of a killed plan exit on their own; a
long plan says where it is (a heartbeat line with an ETA)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
PLAN = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.15", "--llm",
        "openai:gpt-4o-mini", "--subjects", "60:200", "--trials", "96", "--workers", "2"]


def _start(tmp_path: Path, extra: list[str]) -> tuple[subprocess.Popen[bytes], list[psutil.Process]]:
    """A real ``cogtestbed plan`` process, once its two pool workers run."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", *PLAN, *extra], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 180
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        workers = parent.children(recursive=True)
    assert len(workers) >= 2, "the plan never started its workers"
    return proc, workers


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 128 + signal.SIGTERM),
                                             pytest.param(signal.SIGINT, 128 + signal.SIGINT,
                                                          marks=pytest.mark.slow)])
def test_signal_ends_plan_and_workers_fast_leaving_no_folder(sig: int, status: int, tmp_path: Path) -> None:
    out = tmp_path / "deep" / "plan"
    proc, workers = _start(tmp_path, ["-o", str(out)])
    sent = time.monotonic()
    proc.send_signal(sig)
    code = proc.wait(timeout=30)
    took = time.monotonic() - sent
    _, alive = psutil.wait_procs(workers, timeout=max(0.1, 5 - took))
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == status, err
    assert took < 5, f"the plan took {took:.1f} s to end"
    assert not alive, f"{len(alive)} workers outlived the plan"
    assert not (tmp_path / "deep").exists(), "an interrupted plan left its output folder"
    assert "Traceback" not in err


@pytest.mark.slow
def test_workers_of_a_killed_plan_exit_on_their_own(tmp_path: Path) -> None:
    proc, workers = _start(tmp_path, [])
    proc.kill()
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=5)
    assert not alive, f"{len(alive)} workers ran on after their plan was killed"


def test_heartbeat_says_phase_count_and_eta() -> None:
    from cogtestbed.progress import Heartbeat

    lines: list[str] = []
    with Heartbeat(lines.append, interval=0.05) as hb:
        hb.phase("fixed plan: simulating 10 subjects", 40)
        time.sleep(0.12)
        hb.advance(10)
        time.sleep(0.12)
    assert any("ETA once the first result is in" in ln for ln in lines)
    last = lines[-1]
    assert last.startswith("fixed plan: simulating 10 subjects: 10/40") and "ETA" in last and "elapsed" in last
    n = len(lines)
    time.sleep(0.15)
    assert len(lines) == n  # stopped with its block


def test_stop_pool_leaves_no_manager_thread_for_the_exit_hook_to_wake() -> None:
    """The exit hook of concurrent.futures wakes every live pool manager through a pipe; a manager
    still closing that pipe then raised 'Bad file descriptor' at exit (seen in CI). stop_pool must
    return only once the manager thread has ended and closed its pipe."""
    from cogtestbed.validation.studies.driver import fork_pool, stop_pool

    pool = fork_pool(2)
    futures = [pool.submit(time.sleep, 30) for _ in range(4)]
    manager = pool._executor_manager_thread  # type: ignore[attr-defined]
    wakeup = pool._executor_manager_thread_wakeup  # type: ignore[attr-defined]
    assert manager is not None and manager.is_alive()
    started = time.monotonic()
    stop_pool(pool)
    assert time.monotonic() - started < 10
    assert not manager.is_alive()
    assert wakeup._closed  # the exit hook's wakeup() is now a no-op
    assert all(f.done() for f in futures)
