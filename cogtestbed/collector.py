"""The cyclic garbage collector in a command-line process: off while the process starts up.

Importing pandas, numba and the library allocates about a million container objects that live as
long as the process.  With CPython's default thresholds (700, 10, 10) the collector traverses them
in a few hundred collections while they are created, and frees next to nothing: 0.10–0.17 s of CPU
in a fitting call on a CogBench file, more than its fits.  :func:`defer_collection` turns the
collector off at entry; a short command (a fitting call, a help page) never collects.
:func:`resume_collection` freezes what is alive (``gc.freeze``: the start-up objects are never
traversed again) and turns the collector back on: a study or plan calls it when its work starts
(:func:`cogtestbed.studies.driver.run_chunk`), and it runs before every fork, so a forked
worker inherits the collector on and the start-up objects frozen (their pages stay shared).  No
thread is involved.  Only reference cycles wait for the collector; every other object is freed as
usual, and no output depends on when cycles are freed.  It is process-wide, so it is the command
line's to call; with ``COGTESTBED_DEFER_GC=0`` in the environment, nothing changes.
"""

from __future__ import annotations

import gc
import os

#: Environment variable that turns the deferral off ("0").
ENV_SWITCH = "COGTESTBED_DEFER_GC"

_deferred: list[bool] = []


def defer_collection() -> bool:
    """Turn the collector off (once per process) until :func:`resume_collection`; whether it is
    deferred.  Nothing changes where the collector is already off or the environment switch says ``0``."""
    if _deferred:
        return _deferred[0]
    deferred = os.environ.get(ENV_SWITCH, "1") != "0" and gc.isenabled()
    _deferred.append(deferred)
    if deferred:
        gc.disable()
        os.register_at_fork(before=resume_collection)
    return deferred


def resume_collection() -> None:
    """Freeze what is alive and turn the collector back on (where :func:`defer_collection` turned it
    off; idempotent)."""
    if _deferred and _deferred[0] and not gc.isenabled():
        gc.freeze()
        gc.enable()
