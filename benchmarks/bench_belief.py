"""Belief coherence figures: exact p* for 1,000 HEPAR II contexts, T1c on 1,000 rows, one size cell.

Prints (Yamin et al. 2026 design, 200 contexts x 5 repetitions):
* seconds to compute exact p*(x) for 1,000 stratified HEPAR II contexts (target <= 2 s; the BIF
  file itself is parsed once and cached);
* median ms of the T1c likelihood-ratio test on 1,000 rows (target <= 50 ms) and of T1a / T1b;
* seconds for one size cell of 500 simulated studies with T1c (target <= 60 s) and the measured size.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from cogtestbed.environments import belief as env_mod
from cogtestbed.environments.bayesnets import load_network
from cogtestbed.environments.belief import BeliefCoherenceEnv, BeliefDesign, ground_truth
from cogtestbed.inference import belief as tests

sys.path.insert(0, str(Path(__file__).resolve().parent / "studies"))
from belief_family import rejection_rate, simulate_outcomes, study_arrays, study_design  # noqa: E402


def bench_exact_posterior() -> float:
    load_network("hepar2")  # parse (or read the cache) outside the timing: this is not inference
    load_network("hepar2")._cache.clear()
    env_mod._ground_truth.cache_clear()
    design = BeliefDesign(network="hepar2", n_contexts=1000, n_reps=1)
    start = time.perf_counter()
    gt = ground_truth(design)
    sessions = BeliefCoherenceEnv.sample_sessions(design, 1, np.random.default_rng(0))
    p = gt.pstar[sessions.config[0]]
    seconds = time.perf_counter() - start
    assert p.size == 1000
    return seconds


def bench_tests() -> dict[str, tuple[float, float]]:
    design = study_design("t1_lr")
    sessions, outcomes, _ = simulate_outcomes("logit-rum", {"report_noise": 0.1}, design, 1, 0)
    d = study_arrays(design, sessions, outcomes)[0]
    out = {}
    for name, fn, reps in (
        ("t1_lr", lambda: tests.t1_lr_arrays(d["a"], d["p"], d["theta"]), 20),
        ("t1_cmi (1 estimate)", lambda: tests.cmi_knn(d["a"], d["theta"], d["p"]), 20),
        ("t1_cmi (100 permutations)", lambda: tests.t1_cmi_arrays(d["a"], d["p"], d["theta"], d["group"], n_boot=0,
                                                                 n_perm=100), 2),
        ("t1_nested (6 x 5-fold GB: p, (p, θ), 4 placebos)",
         lambda: tests.t1_nested_arrays(d["a"], d["p"], d["theta"], d["group"], n_boot=200), 1),
        ("t2", lambda: tests.t2_arrays(d["a"], d["p"]), 20),
    ):
        fn()
        wall, cpu = [], []
        for _ in range(reps):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        out[name] = (1000 * float(np.median(wall)), 1000 * float(np.median(cpu)))
    return out


def main() -> None:
    print(f"exact p* for 1,000 HEPAR II contexts: {bench_exact_posterior():.3f} s (target <= 2 s)")
    for name, (wall, cpu) in bench_tests().items():
        print(f"{name} on 1,000 rows: {wall:.1f} ms wall, {cpu:.1f} ms CPU"
              + (" (target <= 50 ms)" if name == "t1_lr" else ""))
    rejection_rate("t1_lr", "logit-rum", {}, study_design("t1_lr", n_contexts=10), 2, 0)  # compile
    start_cpu = time.process_time()
    cell = rejection_rate("t1_lr", "logit-rum", {"report_noise": 0.0}, study_design("t1_lr"), 500, 0)
    print(f"size cell, 500 studies of 200 x 5, T1c: {cell['seconds']:.1f} s wall, "
          f"{time.process_time() - start_cpu:.1f} s CPU (target <= 60 s), "
          f"size {cell['rate']:.3f} +- {cell['mc_se']:.3f}")


if __name__ == "__main__":
    main()
