"""A study on a Dask scheduler and workers started as separate processes over TCP on 127.0.0.1 (as on
separate machines; issue 54): the same table as the process pool."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tolerance import assert_frames_close

from cogtestbed.studies.driver import run_study, study_spec

#: Seconds the scheduler file and the workers get to appear.
START_TIMEOUT = 60.0


@contextlib.contextmanager
def _cluster(tmp_path: Path, workers: int) -> Iterator[str]:
    """``dask scheduler`` and ``workers`` × ``dask worker`` (one thread each, no nanny) as processes of
    their own, over TCP on 127.0.0.1; yields the scheduler's address and ends them all."""
    pytest.importorskip("distributed")
    dask_cli = Path(sys.executable).with_name("dask")
    if not dask_cli.exists():
        pytest.skip("no dask command line beside this interpreter")
    scheduler_file = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[1]),
                                                                        os.environ.get("PYTHONPATH")]))}
    common = ["--scheduler-file", str(scheduler_file)]
    procs = [subprocess.Popen([str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", *common], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert scheduler_file.exists(), "the scheduler did not start"
        for _ in range(workers):
            procs.append(subprocess.Popen([str(dask_cli), "worker", "--nthreads", "1", "--no-nanny",
                                           "--no-dashboard", "--host", "127.0.0.1", *common], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(scheduler_file=str(scheduler_file), timeout=START_TIMEOUT) as client:
            client.wait_for_workers(workers, timeout=START_TIMEOUT)
            address = client.scheduler.address
        assert address.startswith("tcp://127.0.0.1:")
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_study_on_separate_scheduler_and_worker_processes_matches_the_pool(tmp_path: Path) -> None:
    """Two worker processes (each warmed by the study's first task, then given chunks): every row and
    value as on the process pool, within the tolerance of values computed in other processes."""
    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(5,),
                      reps=5, seed=11)
    pool = run_study(spec, workers=2).table
    with _cluster(tmp_path, workers=2) as address:
        on_dask = run_study(spec, dask=address)
    assert len(on_dask.table) == 5 * 5 * 4  # reps × subjects × (α⁺, α⁻, β, optimism bias)
    assert_frames_close(pool, on_dask.table)
