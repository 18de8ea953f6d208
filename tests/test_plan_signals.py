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
from typing import Any

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
    proc.send_signal(sig)
    code = proc.wait(timeout=60)  # a hang guard, not a duration the test asserts
    _, alive = psutil.wait_procs(workers, timeout=60)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == status, err
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
    with Heartbeat(lines.append, interval=0.01) as hb:
        hb.phase("fixed plan: simulating 10 subjects", 40)
        assert hb.line().endswith("ETA once the first result is in")
        hb.advance(10)
        assert hb.line().startswith("fixed plan: simulating 10 subjects: 10/40") and ", ETA " in hb.line()
        deadline = time.monotonic() + 60  # a hang guard: the thread's line comes whenever the machine lets it
        while not any(ln.startswith("fixed plan: simulating 10 subjects: 10/40") for ln in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.01)
    hb._thread.join(60)  # the block asked it to stop (and waited up to 1 s): it ends, saying nothing more
    assert not hb._thread.is_alive()


def test_stop_pool_leaves_no_manager_thread_for_the_exit_hook_to_wake() -> None:
    """The exit hook of concurrent.futures wakes every live pool manager through a pipe; a manager
    still closing that pipe then raised 'Bad file descriptor' at exit (seen in CI). stop_pool must
    return only once the manager thread has ended and closed its pipe."""
    from cogtestbed.studies.driver import fork_pool, stop_pool

    pool = fork_pool(2)
    futures = [pool.submit(time.sleep, 30) for _ in range(4)]
    manager = pool._executor_manager_thread  # type: ignore[attr-defined]
    wakeup = pool._executor_manager_thread_wakeup  # type: ignore[attr-defined]
    assert manager is not None and manager.is_alive()
    stop_pool(pool)  # returns without waiting out the 30 s sleeps: all futures are done (cancelled) below
    assert not manager.is_alive()
    assert wakeup._closed  # the exit hook's wakeup() is now a no-op
    assert all(f.done() for f in futures)


# ----------------------------------------------------------------------------- where a signal is raised (issue 71)
def _as_file(filename: str, source: str) -> dict[str, Any]:
    """``source`` run as the file ``filename`` (its lines served by linecache, as the handler reads them)."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: dict[str, Any] = {"sys": sys}
    exec(compile(source, filename, "exec"), scope)
    return scope


def _frame_at(filename: str, line: int) -> Any:
    """A function's frame whose code reads as ``filename`` at ``line`` (how the handler sees the main thread it
    interrupted; ``line`` >= 2)."""
    code = compile("\n" * (line - 2) + "def at():\n    return sys._getframe()", filename, "exec")
    scope: dict[str, Any] = {"sys": sys}
    exec(code, scope)
    return scope["at"]()


def _line_of(module: Any, text: str) -> int:
    import inspect

    lines, _ = inspect.findsource(module)
    return next(i + 1 for i, line in enumerate(lines) if text in line)


#: The command's own code, as the handler tells it (a file of the package).
OWN = """
def here():
    return can_raise(sys._getframe())

def forking():
    return here()  # as called from os.fork( ): an exception raised in its hooks is printed and dropped

class Finalised:
    def __del__(self):
        seen.append(here())
"""


def test_a_signal_is_raised_only_where_the_command_unwinds() -> None:
    """Raised in ``Condition.wait`` off its blocking acquire (between the release of its lock and the ``try`` that
    restores it), a SIGTERM's exception once became "RuntimeError: release unlocked lock"; in a fork hook or a
    finaliser it was dropped (the plan ran on); under numba, llvmlite or pydantic, a SystemError, a segmentation
    fault or a SchemaError."""
    import threading

    from cogtestbed.cli import signals

    own = _as_file(os.path.join(signals._PACKAGE, "signals_test_own.py"), OWN)
    own.update(can_raise=signals._can_raise, seen=[])
    assert own["here"]()  # the command's own code
    assert not own["forking"]()  # under an os.fork hook
    own["Finalised"]().__del__()  # once called, once collected: a finaliser's exception is dropped
    assert own["seen"] and not any(own["seen"])
    assert signals._can_raise(_frame_at(threading.__file__, _line_of(threading, "waiter.acquire()")))
    released = _line_of(threading, "saved_state = self._release_save()")
    assert not signals._can_raise(_frame_at(threading.__file__, released))
    assert not signals._can_raise(_frame_at(os.path.join(os.path.dirname(os.__file__), "logging", "__init__.py"), 2))
    numba = _frame_at(os.path.join(os.sep + "site-packages", "numba", "core", "typeof.py"), 2)
    assert not signals._can_raise(numba) and not signals._can_raise(numba, relaxed=True)
    assert not signals._can_raise(sys._getframe())  # another package's code (this test's): at first
    assert signals._can_raise(sys._getframe(), relaxed=True)  # after RELAX_S
    under = _as_file(os.path.join("site-packages", "pydantic", "_internal", "fake.py"), "def call(f):\n    return f()")
    assert not under["call"](own["here"])  # the command's code called from pydantic's


def test_a_signal_off_a_safe_place_is_raised_once_the_main_thread_reaches_one() -> None:
    import threading

    from cogtestbed.cli import signals

    inside = _frame_at(threading.__file__, _line_of(threading, "saved_state = self._release_save()"))
    own = _frame_at(os.path.join(signals._PACKAGE, "signals_test_own.py"), 2)
    with signals.handle_signals():
        signals._handle(signal.SIGTERM, inside)  # deferred: a retry armed, nothing raised
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= signals.RETRY_S
        with pytest.raises(signals.Terminated) as raised:
            signals._handle(signal.SIGALRM, own)
        assert raised.value.code == 128 + signal.SIGTERM
        assert signals.GIVE_UP_S - 1 < signal.getitimer(signal.ITIMER_REAL)[0] <= signals.GIVE_UP_S  # the watchdog
        signals._handle(signal.SIGTERM, own)  # a second signal while the first unwinds: not raised
    assert signal.getsignal(signal.SIGTERM) is not signals._handle
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # no timer outlives the block
    assert signals.received_signal() == signal.SIGTERM and signals.ending(signal.SIGTERM) == ("terminated", 143)
    with signals.handle_signals():
        assert signals.received_signal() is None
        signals._handle(signal.SIGINT, inside)  # the command ends before the main thread reaches a safe place
    assert signals.received_signal() == signal.SIGINT  # main() prints its line and exits 130 all the same
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


SMALL_PLAN = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.3", "--llm",
              "openai:gpt-4o-mini", "--subjects", "10:60", "--workers", "2"]


def _wait_until_caught(pid: int, sig: int) -> None:
    """Return once process ``pid`` catches ``sig`` (its bit in /proc's SigCgt): the command's handlers are
    installed.  A signal sent before that meets Python's start-up, whose ending is the default action's, not the
    command's; no test depends on when a signal lands relative to start-up."""
    status = Path(f"/proc/{pid}/status")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        caught = next((line.split()[1] for line in status.read_text().splitlines() if line.startswith("SigCgt:")), "0")
        if int(caught, 16) >> (sig - 1) & 1:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never installed its handler of signal {sig}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads a process's caught signals from /proc")
@pytest.mark.parametrize(("sig", "delay", "status", "line"), [
    (signal.SIGTERM, 0.0, 128 + signal.SIGTERM, "error: terminated"),
    (signal.SIGTERM, 1.0, 128 + signal.SIGTERM, "error: terminated"),
    (signal.SIGTERM, 2.2, 128 + signal.SIGTERM, "error: terminated"),
    (signal.SIGINT, 1.6, 128 + signal.SIGINT, "error: interrupted"),
])
def test_a_signal_during_a_plan_ends_it_in_one_line(sig: int, delay: float, status: int, line: str) -> None:
    """At whatever point of a small plan once its handlers are installed (importing, timing the estimate, starting
    the workers, waiting on them): the documented status and one line, no traceback, no lock error (before: 1
    SIGTERM in 8 printed "RuntimeError: release unlocked lock"; one was dropped and the plan ended with status 0).
    The delay counts from the handlers' installation, so a busy machine cannot send the signal before them."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", *SMALL_PLAN], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _wait_until_caught(proc.pid, signal.SIGTERM)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    for bad in ("Traceback", "RuntimeError", "Exception ignored", "SystemError"):
        assert bad not in err, err
    assert err.strip().splitlines()[-1] == line


#: A command that claims a new output folder (``deep/new``, as ``plan -o`` does: cogtestbed.outputs.output_dir) and
#: a user's folder (``mine``), writes part of its files, then sits where no signal is raised (a frame under numba):
#: with GIVE_UP_S at 0.3 s, a SIGTERM takes the immediate exit of cogtestbed.cli.signals.
FALLBACK = """
import os, sys, time
from pathlib import Path
from cogtestbed.cli import signals
from cogtestbed.outputs import atomic_write_bytes, output_dir

signals.GIVE_UP_S, signals.RELAX_S = 0.3, 0.1
under_numba = {}
# "ready" is printed from inside the frame under numba: a signal sent after it cannot land in the block's own code
exec(compile("def sit():\\n    print('ready', flush=True)\\n    while True:\\n        time.sleep(0.05)",
     os.path.join(os.sep + "site-packages", "numba", "core", "fake.py"), "exec"), {"time": time}, under_numba)
tmp = Path(sys.argv[1])
with signals.handle_signals(), output_dir(tmp / "deep" / "new"), output_dir(tmp / "mine", force=True):
    (tmp / "deep" / "new" / "plan.json").write_text("{")  # partly written
    atomic_write_bytes(tmp / "mine" / "plan.json", lambda p: p.write_text("{}"))
    under_numba["sit"]()
print("unreachable", flush=True)
"""


@pytest.mark.parametrize(("sig", "status", "line"), [(signal.SIGTERM, 128 + signal.SIGTERM, "error: terminated"),
                                                     (signal.SIGINT, 128 + signal.SIGINT, "error: interrupted")])
def test_a_signal_that_ends_the_process_at_once_removes_the_folders_it_created(
        sig: int, status: int, line: str, tmp_path: Path) -> None:
    """Where a signal finds no place to raise within GIVE_UP_S the process ends at once (os._exit: no block unwinds);
    before, the output folder it had created was left behind with its partial files.  The user's folder stays, with
    its files and without the command's claim marker."""
    from cogtestbed.outputs import CLAIM_FILE

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", FALLBACK, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n", proc.communicate(timeout=30)
    assert (tmp_path / "deep" / "new" / "plan.json").exists() and (mine / CLAIM_FILE).exists()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err  # the immediate exit after GIVE_UP_S: the frame under numba never unwinds
    assert err.strip().splitlines() == [line] and "unreachable" not in out
    assert not (tmp_path / "deep").exists(), "the folder the command created was left behind"
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "plan.json"]
    assert (mine / "notes.txt").read_text() == "the user's"


def test_a_signal_unwinding_an_output_block_removes_its_folder_with_its_files(tmp_path: Path) -> None:
    """The raised path removes what the immediate exit removes: the folder the command created, partial files and
    all (an ordinary error keeps a folder that holds files, as before); a user's folder stays with its files."""
    from cogtestbed.cli.signals import Terminated
    from cogtestbed.outputs import output_dir

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    for stop in (Terminated, KeyboardInterrupt):
        with pytest.raises(stop), output_dir(tmp_path / "deep" / "new"), output_dir(mine, force=True):
            (tmp_path / "deep" / "new" / "plan.json").write_text("{")
            (mine / "plan.json").write_text("{")
            raise stop()
        assert not (tmp_path / "deep").exists()
        assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "plan.json"]
    with pytest.raises(RuntimeError), output_dir(tmp_path / "deep" / "new"):
        (tmp_path / "deep" / "new" / "plan.json").write_text("{")
        raise RuntimeError("the study failed")
    assert (tmp_path / "deep" / "new" / "plan.json").exists()  # an error, not a signal: the files are kept
