"""CPU seconds of building and compiling one case's PyMC model for nutpie in this (fresh) process (issue 54
item 1: the compilation share of a first hierarchical fit).

    python benchmarks/bench_nutpie_compile.py two-step-hybrid --subjects 20

The cases and data are ``bench_hierarchical_vs_numpyro.py``'s (its data set 0).  Prints one JSON line:
``build_cpu_s`` (``model.pymc_model``), ``compile_cpu_s`` (``nutpie.compile_pymc_model``, what the first
fit of a model shape pays in a process: PyTensor's numba functions come from its on-disk cache once
compiled, but nutpie wraps them in ``numba.cfunc``s that numba cannot cache, so every process compiles
those again) and ``sample_cpu_s`` (one chain of 10 tuning + 10 draws on the compiled model).  Run it
twice: the first run after a change of the package's sources also fills PyTensor's cache.

    python benchmarks/bench_nutpie_compile.py rw --paths   # issue 71 item 4: the Python path against the compiled
    python benchmarks/bench_nutpie_compile.py rw --cached  # issue 71 item 4: the wrappers from numba's disk cache

``--paths``: the two ways ``fit_hierarchical`` can run nutpie on the model
(``hierarchical_sampling._nutpie_compiled``): nutpie's compiled model and the Python path
(``nutpie_shim.python_model``).  Prints the CPU of building each, then 4 chains x (500 + 1000) on one thread
on each, alternated over ``--rounds`` (the low-rank mass matrix where the model declares it, as the package
samples), whether the draws are the same, the leapfrog steps and the extra CPU a step on the Python path.

``--cached``: ``nutpie_cfunc.native_model`` (the model with wrappers numba caches on disk, what
``fit_hierarchical`` samples natively): the CPU seconds of building PyTensor's functions and of compiling or
loading the two wrappers, and whether they came from the cache.  The first run of a case on a machine compiles and
saves them; run it again to see a new process load them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: Sequence[str] | None = None) -> int:
    import bench_hierarchical_vs_numpyro as bench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="a case of bench_hierarchical_vs_numpyro.py (--list there)")
    parser.add_argument("--subjects", type=int, default=20)
    parser.add_argument("--paths", action="store_true", help="the Python path against nutpie's compiled model")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cached", action="store_true", help="the wrappers numba caches on disk: compile or load")
    args = parser.parse_args(argv)
    if args.case not in bench.CASES or args.subjects < 2:
        print(f"give a case of {', '.join(bench.CASES)} and --subjects >= 2", file=sys.stderr)
        return 2
    import nutpie

    from cogtestbed.inference.reproducible import strict_float
    from cogtestbed.registry import get_experiment

    case = bench.CASES[args.case]
    case = dataclasses.replace(case, subjects=min(case.subjects, args.subjects))
    table = bench.tables(case, 1)[0]
    model = get_experiment(case.experiment).model(case.model)
    if args.paths:
        return paths(model, table, args.rounds)
    if args.cached:
        return cached(args.case, case.subjects, model, table)
    start = time.process_time()
    pm_model = model.pymc_model(table)
    built = time.process_time()
    with strict_float():  # as fit_hierarchical compiles
        compiled = nutpie.compile_pymc_model(pm_model)
    done = time.process_time()
    nutpie.sample(compiled, draws=10, tune=10, chains=1, cores=1, seed=0, progress_bar=False)
    print(json.dumps({"case": args.case, "subjects": case.subjects, "build_cpu_s": round(built - start, 2),
                      "compile_cpu_s": round(done - built, 2), "sample_cpu_s": round(time.process_time() - done, 2)}))
    return 0


def cached(name: str, subjects: int, model: object, table: object) -> int:
    """Build the model with the wrappers numba caches on disk, loading them where cached (``--cached``)."""
    from cogtestbed.inference.reproducible import strict_float
    from cogtestbed.shims import nutpie_cfunc

    pm_model = model.pymc_model(table)  # type: ignore[attr-defined]
    with strict_float():  # as fit_hierarchical builds it
        start = time.process_time()
        funcs = nutpie_cfunc.model_functions(pm_model)
        built = time.process_time()
        loaded = nutpie_cfunc.native_model(pm_model, funcs, compile=False)
        probed = time.process_time()
        compiled = loaded if loaded is not None else nutpie_cfunc.native_model(pm_model, funcs)
        done = time.process_time()
    if compiled is None:
        print(f"{name}: the wrappers cannot be cached for this model (nutpie_cfunc.native_model gave None)")
        return 1
    print(json.dumps({"case": name, "subjects": subjects, "functions_cpu_s": round(built - start, 2),
                      "wrappers": "loaded" if loaded is not None else "compiled",
                      "wrappers_cpu_s": round(done - built, 2), "probe_cpu_s": round(probed - built, 2)}))
    return 0


def paths(model: object, table: object, rounds: int) -> int:
    """The Python path against nutpie's compiled model on one data set (module docstring)."""
    import numpy as np
    import nutpie

    from cogtestbed.inference.hierarchical_sampling import _mass_matrix_settings
    from cogtestbed.inference.reproducible import strict_float
    from cogtestbed.shims.nutpie_shim import python_model

    pm_model = model.pymc_model(table)  # type: ignore[attr-defined]
    built: dict[str, object] = {}
    with strict_float():
        for name, build in (("python", lambda: python_model(pm_model).model),
                            ("compiled", lambda: nutpie.compile_pymc_model(pm_model))):
            start = time.process_time()
            built[name] = build()
            print(f"build {name:8s}: {time.process_time() - start:6.2f} CPU-s")
    cpu: dict[str, list[float]] = {"python": [], "compiled": []}
    draws: dict[str, object] = {}
    for r in range(rounds):
        for name in (["compiled", "python"] if r % 2 == 0 else ["python", "compiled"]):
            start = time.process_time()
            trace = nutpie.sample(built[name], draws=1000, tune=500, chains=4, cores=1, seed=0, progress_bar=False,
                                  store_divergences=False, **_mass_matrix_settings(model))
            cpu[name].append(time.process_time() - start)
            draws[name] = trace
    trace: object = draws["python"]
    steps = sum(int(getattr(trace, g)["n_steps"].sum()) for g in ("warmup_sample_stats", "sample_stats")
                if g in trace.groups())  # type: ignore[attr-defined]
    same = all(np.array_equal(draws["python"].posterior[v].values, draws["compiled"].posterior[v].values)  # type: ignore[attr-defined]
               for v in draws["compiled"].posterior.data_vars)  # type: ignore[attr-defined]
    py, nat = min(cpu["python"]), min(cpu["compiled"])
    runs = {k: ", ".join(f"{c:.2f}" for c in v) for k, v in cpu.items()}
    print(f"sampling 4 x (500 + 1000), one thread, {rounds} alternated rounds: python {runs['python']} CPU-s, "
          f"compiled {runs['compiled']}; same draws: {same}")
    print(f"leapfrog steps {steps:,} (warm-up included); extra on the Python path {1e6 * (py - nat) / steps:.1f} us "
          "a step (least of each side's rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
