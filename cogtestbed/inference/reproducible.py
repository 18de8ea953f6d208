"""Seeded fits reproduce bit for bit on one machine and lock, and how to check it.

**What is reproducible.**  On one machine with the locked versions, a seeded fit gives identical
results in every process: a hierarchical fit (:func:`~cogtestbed.inference.hierarchical.fit_hierarchical`,
``ct.fit(..., method="hierarchical", seed=...)``, every family's model) the same draws and sampler
statistics, an MLE fit the same estimates table, whatever the state of the compilation caches
(cold or warm), the load beside it, the CPUs it may use, ``PYTHONHASHSEED`` or the fits run
before it in the process.  Across CPUs (another instruction set, another libm) or versions the
draws differ by floating-point rounding, so posteriors agree to Monte Carlo error only.

**Why seeded fits differed between processes.**  PyTensor's numba backend (what nutpie compiles a PyMC model with)
sets LLVM's fast-math flags by default (``pytensor.config.numba__fastmath``: ``reassoc``,
``contract``, ``afn``, ``arcp``, ``nsz``), under which LLVM may reassociate sums and fuse
multiply-adds differently depending on what it compiles and optimises together.  PyTensor caches
every Op's numba function and every compiled graph on disk (``base_compiledir/numba``,
``~/.pytensor/numba``), so a model compiled with a cold cache (its Ops compiled in the process and
optimised with the graph) and with a warm one (pieces loaded from the cache, or Ops cached by
another model's fit) ran different machine code: the gradient of one population mean differed
in its last bit (measured: RW±, 20 subjects, 1 of 66 gradient components at 29 of 50 points), and
NUTS trajectories parted from there.  The first fit of a model on a machine (or after a change
of the cache) therefore gave other draws than every later one; emptying numba's own cache
directory or PyTensor's ``compiledir`` did not touch ``base_compiledir/numba``.
:func:`strict_float` compiles without fast-math: LLVM then keeps IEEE semantics whatever it
inlines or links, so every path computes the same bits.

**How to check.**  :func:`draws_digest` of two fits (or of an MLE table, :func:`table_digest`)
in separate processes; ``python benchmarks/studies/reproducible_fits.py check`` runs one seeded fit in
fresh processes under cold caches, a CPU-loading process beside it, one CPU and another
``PYTHONHASHSEED``, and prints every digest.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

#: Sampler statistics that measure time, not the chain (PyMC's); left out of :func:`draws_digest`.
TIMING_STATS = ("perf_counter_diff", "perf_counter_start", "process_time_diff")


@contextlib.contextmanager
def strict_float() -> Iterator[None]:
    """Compile PyTensor graphs to numba without LLVM's fast-math flags (``numba__fastmath=False``)
    while the block runs: the setting that makes a nutpie (or numba-mode PyMC) fit reproduce bit
    for bit across processes (module docstring).  The flag is part of PyTensor's cache keys, so
    no function compiled with fast-math is reused; sampling speed is unchanged within the
    machine's noise (the likelihood kernels are the package's own numba code, compiled without
    fast-math anyway)."""
    from pytensor import config

    unique_numba_symbols()
    with config.change_flags(numba__fastmath=False):
        yield


#: The folder, beside PyTensor's own ``base_compiledir/numba``, of the numba functions compiled once
#: :func:`unique_numba_symbols` numbers them at random (none from a process that counted 1, 2, 3, …).
UNIQUE_CACHE = "numba-unique-ids"


def unique_numba_symbols() -> None:
    """Give every numba function compiled from here on a random 128-bit id, and point PyTensor's numba
    cache at :data:`UNIQUE_CACHE`, where every entry was compiled so (idempotent; nothing is done where
    PyTensor draws the ids itself, from 2.38.3).

    Why: numba names a compiled function's machine-code symbol after its module, qualified name,
    argument types and an id from a per-process counter (1, 2, 3, …).  PyTensor writes the graphs it
    compiles to one on-disk cache and names them all ``numba_funcified_fgraph`` (its Ops' wrappers
    share names too), so two processes that each compiled a different model first gave both the same
    symbol, and a process that loaded both from the cache linked one body for both (LLVM merges
    symbols of one name): nutpie's log density of one model ran the other model's graph (measured:
    RW± with 8 subjects, then RW with 5, "All initialization points failed … Logp function returned
    error: ErrorCode(1)"; where the shapes agree, it would compute another model's density without
    an error).  numba report #10486 on GitHub; PyTensor 2.38.3 draws the ids at random the same way, but the
    lock's numba 0.68 is above its bound.  numba has no public setting for its ids: the one private
    access is :func:`cogtestbed.shims.numba_shim.draw_ids_from`, pinned to the locked numba.  The entries
    of the shared folder written by counting processes keep their colliding names, hence the folder of
    its own."""
    from cogtestbed.shims.numba_shim import counts_ids, draw_ids_from
    from cogtestbed.shims.pytensor_shim import numba_cache, use_numba_cache

    if not counts_ids():
        return
    use_numba_cache(numba_cache().parent / UNIQUE_CACHE)
    draw_ids_from(_random_id)


def _random_id() -> int:
    """A random 128-bit integer (``uuid4``: fresh entropy at every call, so a forked process draws its
    own): numba's function ids after :func:`unique_numba_symbols`."""
    import uuid

    return uuid.uuid4().int


def draws_digest(fit: Any) -> str:
    """SHA-256 (hex) of a Bayesian fit's draws, sampler statistics (timings left out,
    :data:`TIMING_STATS`) and pointwise log-likelihood where stored: equal digests are identical
    draws.  ``fit``: a :class:`~cogtestbed.inference.hierarchical.BayesFit` or an ArviZ
    ``InferenceData``."""
    idata = getattr(fit, "idata", fit)
    digest = hashlib.sha256()
    for group in ("posterior", "sample_stats", "log_likelihood"):
        if group not in idata.groups():
            continue
        data = idata[group]
        for name in sorted(str(v) for v in data.data_vars):
            if name in TIMING_STATS:
                continue
            values = np.ascontiguousarray(data[name].values)
            digest.update(f"{group}/{name}:{values.dtype}:{values.shape};".encode())
            digest.update(values.tobytes())
    return digest.hexdigest()


def table_digest(table: pd.DataFrame) -> str:
    """SHA-256 (hex) of a table's column names, dtypes and values in row order (an MLE fit's
    estimates): equal digests are identical tables, bit for bit."""
    digest = hashlib.sha256()
    for name in table.columns:
        column = table[name]
        digest.update(f"{name}:{column.dtype};".encode())
        if column.dtype.kind in "biufc":
            digest.update(np.ascontiguousarray(column.to_numpy()).tobytes())
        else:
            digest.update("\x1f".join(map(repr, column.tolist())).encode())
    return digest.hexdigest()


__all__ = ["TIMING_STATS", "UNIQUE_CACHE", "draws_digest", "strict_float", "table_digest", "unique_numba_symbols"]
