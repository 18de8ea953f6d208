"""CPU seconds of building and compiling one case's PyMC model for nutpie in this (fresh) process (issue 54
item 1: the compilation share of a first hierarchical fit).

    python benchmarks/bench_nutpie_compile.py two-step-hybrid --subjects 20

The cases and data are ``bench_hierarchical_vs_numpyro.py``'s (its data set 0).  Prints one JSON line:
``build_cpu_s`` (``model.pymc_model``), ``compile_cpu_s`` (``nutpie.compile_pymc_model``, what the first
fit of a model shape pays in a process: PyTensor's numba functions come from its on-disk cache once
compiled, but nutpie wraps them in ``numba.cfunc``s that numba cannot cache, so every process compiles
those again) and ``sample_cpu_s`` (one chain of 10 tuning + 10 draws on the compiled model).  Run it
twice: the first run after a change of the package's sources also fills PyTensor's cache.
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


if __name__ == "__main__":
    sys.exit(main())
