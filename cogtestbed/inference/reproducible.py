"""Seeded fits reproduce bit for bit on one machine and lock (issue 50), and how to check it.

**What is reproducible.**  On one machine with the locked versions, a seeded fit gives identical
results in every process: a hierarchical fit (:func:`~cogtestbed.inference.hierarchical.fit_hierarchical`,
``ct.fit(..., method="hierarchical", seed=...)``, every family's model) the same draws and sampler
statistics, an MLE fit the same estimates table, whatever the state of the compilation caches
(cold or warm), the load beside it, the CPUs it may use, ``PYTHONHASHSEED`` or the fits run
before it in the process.  Across CPUs (another instruction set, another libm) or versions the
draws differ by floating-point rounding, so posteriors agree to Monte Carlo error only.

**The cause of issue 50.**  PyTensor's numba backend (what nutpie compiles a PyMC model with)
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

    with config.change_flags(numba__fastmath=False):
        yield


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


__all__ = ["TIMING_STATS", "draws_digest", "strict_float", "table_digest"]
