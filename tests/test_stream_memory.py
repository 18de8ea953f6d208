"""Simulating and recovering RW subjects streamed in chunks (issue 71, item 5): the recovery's peak memory
does not grow with the subject count (``benchmarks/bench_stream_memory.py``; its 10⁶ figure is in
docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_stream_memory.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_stream_memory", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_recovery_memory_is_flat_in_subjects() -> None:
    bench = _bench()
    # 100 subjects (9,600 rows) a chunk; 6,000 subjects' table is 79 MiB in pandas (576,000 rows × 20
    # columns), so a recovery that held it (or grew with it) would peak far above the 1,000-subject run.
    small = bench.run(1_000, batch_rows=9_600, report=False)
    large = bench.run(6_000, batch_rows=9_600, report=False)
    assert small["fitted"] == 1_000 and large["fitted"] == 6_000
    assert large["recover_peak_gib"] - small["recover_peak_gib"] < 20 / 1024  # < 20 MiB growth
    assert large["recover_peak_gib"] < 1e9 / 2**30 and large["simulate_peak_gib"] < 1e9 / 2**30
    assert large["r_alpha"] > 0.5  # the estimates are the subjects' own (truth read from the same rows)
