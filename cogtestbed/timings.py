"""A per-kind cost model of posterior sampling, measured on this machine: the up-front estimate
of a hierarchical fit before its set-up (model compilation) begins.

A sampler run costs a set-up (compiling the model: nutpie's numba build, or PyMC's) and then
time proportional to the gradient evaluations it makes, each proportional to the observations.
So a fit is estimated as ``set-up + rate × units`` with ``units = (tune + draws) × chains /
chains-in-parallel × observations``.  Every fit that reports progress records its measured set-up
and rate under its kind (sampler and model), in a small JSON file (:func:`store_path`); the next
fit of that kind is estimated from the median of its last :data:`KEEP` records.  A kind never
fitted on this machine falls back to :data:`DEFAULT` (measured on the development machine, see
docs/sizes.md), and says so: the rate differs between models by several times.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

#: Records kept per kind (the estimate is their median).
KEEP = 5
#: Set-up seconds and seconds per unit of a kind with no record on this machine: rw-pm's hierarchy
#: on nutpie, 4 subjects x 96 trials, 2 chains x 200 + 200 draws (docs/sizes.md, "Time estimates").
DEFAULT = {"setup_s": 25.0, "rate_s": 6.5e-6}


def store_path() -> Path:
    """``$COGTESTBED_TIMINGS``, else ``$XDG_CACHE_HOME/cogtestbed/timings.json`` (``~/.cache``)."""
    given = os.environ.get("COGTESTBED_TIMINGS")
    if given:
        return Path(given)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cogtestbed" / "timings.json"


def _read() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def estimate(kind: str, units: float) -> tuple[float, float, int]:
    """(set-up seconds, sampling seconds, records it rests on: 0 = the default) of a fit of ``kind``."""
    records = [r for r in _read().get(kind, []) if isinstance(r, dict)]
    setups = [float(r["setup_s"]) for r in records if r.get("setup_s") is not None]
    rates = [float(r["rate_s"]) for r in records if r.get("rate_s")]
    setup = statistics.median(setups) if setups else DEFAULT["setup_s"]
    rate = statistics.median(rates) if rates else DEFAULT["rate_s"]
    return setup, rate * units, len(rates)


def record(kind: str, setup_s: float | None, sampling_s: float, units: float) -> None:
    """Add one measured fit of ``kind`` (``setup_s`` None where the model was already compiled);
    a store that cannot be written is left alone (the estimate is a convenience)."""
    if units <= 0 or sampling_s <= 0:
        return
    data = _read()
    rows = [r for r in data.get(kind, []) if isinstance(r, dict)][-(KEEP - 1):]
    rows.append({"setup_s": None if setup_s is None else round(setup_s, 3), "rate_s": sampling_s / units})
    data[kind] = rows
    path = store_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    except OSError:
        return


__all__ = ["DEFAULT", "KEEP", "add_remote_cpu", "cpu_seconds", "estimate", "record", "remote_cpu_seconds",
           "store_path"]


#: CPU seconds Dask workers in other processes spent on this process's tasks (:func:`add_remote_cpu`).
_REMOTE_CPU = [0.0]


def add_remote_cpu(seconds: float) -> None:
    """Count ``seconds`` of CPU that a worker in another process (a Dask worker's) spent on this process's
    tasks in :func:`cpu_seconds`: the operating system counts only this process and its own children."""
    _REMOTE_CPU[0] += seconds


def remote_cpu_seconds() -> float:
    """The CPU seconds :func:`add_remote_cpu` has counted in this process."""
    return _REMOTE_CPU[0]


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, its finished children (a pool's workers) and the Dask
    workers' tasks run for it (:func:`add_remote_cpu`): the CPU time a plan or study reports beside its wall
    time."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + remote_cpu_seconds()
