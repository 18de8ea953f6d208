"""Per-test CPU time of the test suite: a pytest plugin that records it, and a report that sums it.

CPU time (user + system of the test process and of the children it waited for, ``getrusage``) is
what a test costs whatever the load of the machine; wall time on a shared machine is not.  Each
test's figure covers its set-up, call and tear-down, so a module- or session-scoped fixture is
charged to the first test that uses it (run serially, without ``-n``, for per-test figures)::

    PYTHONPATH=.:benchmarks COGTESTBED_SUITE_CPU=cpu.jsonl nice python -m pytest -p suite_cpu \
        -p no:cacheprovider [TESTS]
    python benchmarks/suite_cpu.py cpu.jsonl [--before other.jsonl] [--top 25]

The report prints the total, the most expensive tests and files, and with ``--before`` each test's
change over the tests both files hold.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

#: Where the plugin appends one JSON line per test (``{"id", "cpu", "wall"}``).
OUT_VARIABLE = "COGTESTBED_SUITE_CPU"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Record the CPU and wall seconds of one test's whole protocol."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    yield
    out = os.environ.get(OUT_VARIABLE)
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": item.nodeid, "cpu": cpu_seconds() - cpu,
                                "wall": time.perf_counter() - wall}) + "\n")


def read(path: Path) -> dict[str, float]:
    """Test id → CPU seconds (a test recorded twice keeps its last figure)."""
    return {row["id"]: float(row["cpu"]) for row in map(json.loads, path.read_text().splitlines()) if row}


def report(after: dict[str, float], before: dict[str, float] | None, top: int) -> list[str]:
    lines = [f"{len(after)} tests, {sum(after.values()):.1f} CPU s"]
    files: dict[str, float] = defaultdict(float)
    for test, cpu in after.items():
        files[test.partition("::")[0]] += cpu
    lines += ["", f"most expensive {top} tests:"]
    lines += [f"{cpu:8.1f}  {test}" for test, cpu in sorted(after.items(), key=lambda kv: -kv[1])[:top]]
    lines += ["", f"most expensive {top} files:"]
    lines += [f"{cpu:8.1f}  {name}" for name, cpu in sorted(files.items(), key=lambda kv: -kv[1])[:top]]
    if before is not None:
        both = sorted(set(after) & set(before))
        b, a = sum(before[t] for t in both), sum(after[t] for t in both)
        lines += ["", f"{len(both)} tests in both: {b:.1f} -> {a:.1f} CPU s ({a - b:+.1f})"]
        lines += [f"{before[t]:8.1f} -> {after[t]:8.1f}  {t}"
                  for t in sorted(both, key=lambda t: after[t] - before[t])[:top]]
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("after", type=Path, help="JSON lines the plugin wrote")
    ap.add_argument("--before", type=Path, help="another run's JSON lines, to compare with")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    print("\n".join(report(read(args.after), read(args.before) if args.before else None, args.top)))


if __name__ == "__main__":
    main()
