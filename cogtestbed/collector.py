"""The cyclic garbage collector in a command-line process: off while the process starts up.

Importing pandas, numba and the library allocates about a million container objects that live as
long as the process.  With CPython's default thresholds (700, 10, 10) the collector traverses them
in a few hundred collections while they are created, and frees next to nothing: 0.10–0.17 s of CPU
in a fitting call on a CogBench file (measured with ``gc.callbacks``), more than its fits.
:func:`defer_collection` turns the collector off for the first :data:`GRACE_S` seconds of the
process; a command that ends sooner (a fitting call, a help page) never collects.  A longer one
then collects once, freezes what is alive (``gc.freeze``: the start-up objects are never
traversed again) and collects as usual from then on.  A process forked before that (a study's
worker) freezes what it inherits and collects as usual at once.  Only reference cycles wait for
the collector; every other object is freed as usual, and no output depends on when cycles are
freed.  It is process-wide, so it is the command line's to call (like
:func:`cogtestbed.heap.keep_freed_memory`); with ``COGTESTBED_DEFER_GC=0`` in the environment,
nothing changes.
"""

from __future__ import annotations

import gc
import os
import threading

#: Seconds the collector stays off after start-up: a fitting call on a CogBench file takes 1–1.5 s
#: of wall on a loaded 2-core machine, so 3 s leaves it room; a longer command then collects.
GRACE_S = 3.0
#: Environment variable that turns the deferral off ("0").
ENV_SWITCH = "COGTESTBED_DEFER_GC"

_deferred: list[bool] = []


def defer_collection(grace_s: float = GRACE_S) -> bool:
    """Turn the collector off for ``grace_s`` seconds (once per process; a daemon timer thread
    then calls :func:`resume_collection`); whether it is deferred.  Nothing changes where the
    collector is already off or the environment switch says ``0``."""
    if _deferred:
        return _deferred[0]
    deferred = os.environ.get(ENV_SWITCH, "1") != "0" and gc.isenabled()
    _deferred.append(deferred)
    if deferred:
        gc.disable()
        os.register_at_fork(after_in_child=_resume_in_child)
        timer = threading.Timer(grace_s, resume_collection)
        timer.daemon = True  # never keeps the process alive (nor its quick exit from happening)
        timer.start()
    return deferred


def resume_collection() -> None:
    """Collect once, freeze what is alive and turn the collector back on (where
    :func:`defer_collection` turned it off; idempotent)."""
    if not (_deferred and _deferred[0]) or gc.isenabled():
        return
    gc.collect()
    gc.freeze()
    gc.enable()


def _resume_in_child() -> None:
    """In a forked child: freeze what it inherits (shared with the parent) and collect as usual."""
    if _deferred and _deferred[0] and not gc.isenabled():
        gc.freeze()
        gc.enable()
