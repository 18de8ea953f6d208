"""What an exponential or a logarithm costs in each side's compiled code, and how near the belief-coherence kernels
are to that floor (issue 71 item 4: why those two families stay near 2x NumPyro).

    python benchmarks/bench_transcendentals.py                                        # this environment only
    python benchmarks/bench_transcendentals.py --numpyro-python .venv-numpyro/bin/python   # and JAX's XLA

The package's kernels are numba loops that call the C library's scalar ``exp`` and ``log`` once an element;
JAX compiles the same element-wise arithmetic with XLA, whose ``exp`` and ``log`` are vectorised polynomials.
Prints, in CPU ns an element (process CPU time of every thread, best of 5 repeats): numba's scalar ``exp`` and
``log`` in a loop (and ``exp`` in a loop whose every call takes the last one's result, as a row's chain of calls
does), NumPy's (SIMD) ``np.exp`` and ``np.log`` on an array, XLA's (eight of each fused in one jitted function, less
the same function's sum alone, over eight), and each belief-coherence counts kernel's cost a row (data set 0
of the NumPyro comparison at 20 subjects) beside its floor: its transcendental calls a row times numba's
scalar cost.  A study script, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import best_cpu_of

HERE = Path(__file__).resolve().parent
N_ELEMENTS = 4096
REPEATS, CALLS = 5, 2000
#: Transcendental calls a row of each counts kernel (``cogtestbed.inference.belief_models``): MNL's softmax takes
#: two exponentials (the largest utility's is 1) and one logarithm; the loss form adds the Tversky-Kahneman weight's
#: three exponentials and one logarithm (``_tk_weights``).
CALLS_A_ROW = {"belief-mnl": {"exp": 2, "log": 1}, "belief-loss": {"exp": 5, "log": 2}}


def best_ns(f: Callable[[], Any], elements: int, calls: int = CALLS) -> float:
    """Best of :data:`REPEATS` mean CPU ns an element of ``calls`` calls of ``f`` (process CPU of every thread: a
    library that spreads a loop over threads pays for all; ``_timing.best_cpu_of``, one warm-up round first)."""
    def repeated() -> None:  # each result dropped before the next call (a list of them would hold the memory)
        for _ in range(calls):
            f()

    return best_cpu_of(repeated, REPEATS) / calls * 1e9 / elements


def numba_side() -> dict[str, float]:
    """ns an element of numba's scalar exp and log in a loop, and of NumPy's vectorised ones."""
    from numba import njit

    x = -np.random.default_rng(0).uniform(0.0, 5.0, N_ELEMENTS)
    positive = -x + 0.5
    out = np.empty_like(x)

    @njit
    def exp_loop(v: np.ndarray, o: np.ndarray) -> None:
        for i in range(v.size):
            o[i] = np.exp(v[i])

    @njit
    def exp_chain(v: np.ndarray, o: np.ndarray) -> None:  # each call waits on the last (its result feeds the next)
        last = 0.0
        for i in range(v.size):
            last = np.exp(v[i] + last * 1e-300)
            o[i] = last

    @njit
    def log_loop(v: np.ndarray, o: np.ndarray) -> None:
        for i in range(v.size):
            o[i] = np.log(v[i])

    return {"numba exp": best_ns(lambda: exp_loop(x, out), x.size),
            "numba exp, each waiting on the last": best_ns(lambda: exp_chain(x, out), x.size),
            "numba log": best_ns(lambda: log_loop(positive, out), x.size),
            "numpy exp": best_ns(lambda: np.exp(x, out=out), x.size),
            "numpy log": best_ns(lambda: np.log(positive, out=out), x.size)}


def kernel_rows() -> dict[str, float]:
    """ns a row of each belief-coherence counts kernel on the NumPyro comparison's data set 0 (20 subjects), at
    subject parameters spread around a typical value."""
    import dataclasses

    sys.path.insert(0, str(HERE))
    from bench_hierarchical_vs_numpyro import CASES, pooled_arrays, tables

    from cogtestbed.registry import get_experiment

    typical = {"belief-mnl": [0.3, 20.0, 1.5, 8.0], "belief-loss": [0.4, 0.2, 15.0, 0.8]}
    rng = np.random.default_rng(1)
    out = {}
    for name, centre in typical.items():
        case = dataclasses.replace(CASES[name], subjects=20)
        table = tables(case, 1)[0]
        model = get_experiment(case.experiment).model(case.model)
        subjects, idx, arrays = pooled_arrays(case, model, table)
        counted = model.counts_model()
        kernel, args = counted.kernel(), [arrays[f] for f in counted.observation_fields]
        theta = np.asarray(centre) * rng.uniform(0.7, 1.3, (len(subjects), 4))
        out[name] = best_ns(lambda k=kernel, a=args, t=theta, i=idx: k(t, i, *a), idx.size, calls=500)
    return out


JAX_FUSED = 8


def jax_side() -> dict[str, float]:
    """CPU ns an element of XLA's exp and log (float64; process CPU time, so threads XLA may use are counted): eight
    of each fused in one jitted function, less the cost of that function's sum alone, over eight."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    x = jnp.asarray(-np.random.default_rng(0).uniform(0.0, 5.0, N_ELEMENTS))
    positive = -x + 0.5
    exps = jax.jit(lambda v: jnp.sum(sum(jnp.exp(v * (k + 1) / JAX_FUSED) for k in range(JAX_FUSED))))
    logs = jax.jit(lambda v: jnp.sum(sum(jnp.log(v * (k + 1)) for k in range(JAX_FUSED))))
    alone = jax.jit(lambda v: jnp.sum(v * 1.0001))
    base = best_ns(lambda: alone(x).block_until_ready(), N_ELEMENTS)
    return {"XLA exp": (best_ns(lambda: exps(x).block_until_ready(), N_ELEMENTS) - base) / JAX_FUSED,
            "XLA log": (best_ns(lambda: logs(positive).block_until_ready(), N_ELEMENTS) - base) / JAX_FUSED}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numpyro-python", type=Path, default=None, help="also time XLA in NumPyro's environment")
    ap.add_argument("--jax-side", action="store_true", help=argparse.SUPPRESS)
    o = ap.parse_args(argv)
    if o.jax_side:
        print(json.dumps(jax_side()))
        return 0
    costs = numba_side()
    if o.numpyro_python is not None:
        if not o.numpyro_python.is_file():
            print(f"--numpyro-python {o.numpyro_python}: no such interpreter (make .venv-numpyro/.built)",
                  file=sys.stderr)
            return 2
        env = {"OMP_NUM_THREADS": "1", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
                                                    "intra_op_parallelism_threads=1", "PATH": "/usr/bin:/bin"}
        done = subprocess.run([str(o.numpyro_python), __file__, "--jax-side"], capture_output=True, text=True,
                              check=False, env=env)
        if done.returncode != 0:
            print(f"the XLA side failed (exit {done.returncode}):\n{done.stderr.strip()}", file=sys.stderr)
            return 1
        costs.update(json.loads(done.stdout.strip().splitlines()[-1]))
    print("CPU ns an element (every thread's, best of 5)")
    for name, ns in costs.items():
        print(f"  {name:<36} {ns:6.2f}")
    print("belief-coherence counts kernels, ns a row: measured / floor (its calls a row x numba's scalar cost)")
    for name, ns in kernel_rows().items():
        calls = CALLS_A_ROW[name]
        floor = calls["exp"] * costs["numba exp"] + calls["log"] * costs["numba log"]
        print(f"  {name:<12} {ns:6.1f} / {floor:5.1f}  ({calls['exp']} exp + {calls['log']} log a row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
