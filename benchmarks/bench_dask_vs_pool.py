"""CPU of one recovery study on the process pool and on Dask, and their ratio (issue 54, item 3).

The study (RW± MLE recovery, instrumental learning; ``--reps`` × ``--subjects``, seed 1) runs on
:func:`~cogtestbed.studies.driver.run_study` with ``workers=N`` (forked pool) and on a
``distributed.LocalCluster`` of N worker processes with one thread each, started beforehand (a
cluster outlives studies; its start-up is not the study's cost) with numba's cache filled.  CPU:
this process plus its pool's children (``getrusage``), or this process plus every Dask worker
process's ``time.process_time()`` before and after (``Client.run``).  The study runs twice on the
cluster: on fresh workers (each imports the package and loads the kernels in the study's first task)
and again on the same, warm workers.  The tables must agree.  Target: Dask ≤ 1.2 × the pool.

Usage: ``python benchmarks/bench_dask_vs_pool.py [--reps 40] [--subjects 50] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from tolerance import assert_frames_close  # noqa: E402

from cogtestbed.studies.driver import run_study, study_spec  # noqa: E402

TARGET = 1.2


def own_cpu() -> float:
    """CPU seconds of this process and its reaped children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import distributed

    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",),
                      subjects=(args.subjects,), reps=args.reps, seed=1)
    run_study(study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",),
                         subjects=(5,), reps=1, seed=0), workers=1)  # numba's disk cache filled
    one, five, _ = os.getloadavg()
    print(f"recovery rw-pm, {args.reps} reps x {args.subjects} subjects, {args.workers} workers "
          f"(load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs)")
    cpu, wall = own_cpu(), time.perf_counter()
    pool = run_study(spec, workers=args.workers)
    pool_cpu, pool_wall = own_cpu() - cpu, time.perf_counter() - wall
    print(f"process pool: {pool_cpu:.1f} s CPU, {pool_wall:.1f} s wall")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for label in ("fresh workers, warmed by the study's first task", "the same workers, a second study"):
            before = client.run(time.process_time)
            cpu, wall = own_cpu(), time.perf_counter()
            dask = run_study(spec, dask=client)
            dask_cpu = own_cpu() - cpu + sum(client.run(time.process_time)[w] - t for w, t in before.items())
            dask_wall = time.perf_counter() - wall
            assert_frames_close(pool.table, dask.table)
            ratio = dask_cpu / pool_cpu
            print(f"Dask, {label}: {dask_cpu:.1f} s CPU, {dask_wall:.1f} s wall; Dask / pool CPU {ratio:.2f} "
                  f"({'meets' if ratio <= TARGET else 'misses'} the {TARGET} target); tables agree")


if __name__ == "__main__":
    main()
