"""A plan on a Dask scheduler counts its workers' CPU in ``search.cpu_seconds`` (before, only the client's:
1.6 s against 19.5 s for the same plan run locally): each chunk reports the CPU its worker spent, counted where
the worker is another process."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pandas as pd
import pytest

import cogtestbed.timings as timings
from cogtestbed.planning.kinds.power.power_sims import count_worker_cpu, timed_chunk


def test_the_workers_cpu_in_other_processes_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timings, "_REMOTE_CPU", [0.0])
    a, b = pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [2]})
    rows = count_worker_cpu([(a, 5.0, os.getpid() + 1), (b, 3.0, os.getpid())])  # b: a thread of this process
    assert [r["x"].tolist() for r in rows] == [[1], [2]]
    assert timings.remote_cpu_seconds() == 5.0


def test_cpu_seconds_adds_the_workers_cpu_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timings, "_REMOTE_CPU", [0.0])
    times = SimpleNamespace(user=1.5, system=0.25, children_user=2.0, children_system=0.25)
    monkeypatch.setattr(timings.os, "times", lambda: times)
    assert timings.cpu_seconds() == 4.0
    timings.add_remote_cpu(17.5)
    assert timings.cpu_seconds() == 21.5


def test_a_chunk_reports_its_rows_its_cpu_and_its_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import cogtestbed.planning.kinds.power.power_sims as power_sims

    def busy(payload: str, tasks: list[dict[str, int]]) -> pd.DataFrame:
        total = sum(i * i for i in range(200_000))  # some CPU on this thread
        return pd.DataFrame({"task": [t["index"] for t in tasks], "total": total})

    monkeypatch.setattr(power_sims, "run_chunk", busy)
    rows, cpu, pid = timed_chunk("{}", [{"index": 3}, {"index": 4}])
    assert rows["task"].tolist() == [3, 4] and pid == os.getpid() and cpu > 0
