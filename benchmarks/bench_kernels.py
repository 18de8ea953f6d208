"""ns per trial of what a metric comparison simulates and computes, per experiment, one core (CPU time).

A plan that compares a metric between two LLMs (``plan EXP --metric M --compare A B --llm X --llm Y``) simulates
each group's runs (:func:`~cogtestbed.studies.study_data.simulate_runs`) and computes the metric the
comparison tests on them (:func:`~cogtestbed.studies.metric_studies.comparison_result`).  For each
experiment (default design, ``RUNS`` runs of its agent) this prints the CPU ns per trial of the two separately
(a trial is one of the design's ``n_trials``; belief coherence's trial is a context repetition of 8 calls:
4 π0/scoring-rule beliefs, 2 LIE conditionals, the LIE covariate, the decision), and belief coherence's ratio to
the slowest other experiment (target <= 5).  Best of ``--repeats`` process-CPU-time runs (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_cpu_of  # noqa: E402

from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.studies.metric_studies import comparison_result  # noqa: E402
from cogtestbed.studies.study_data import simulate_runs  # noqa: E402

#: Runs a group simulates (the T1a headline plan's largest size).
RUNS = 20
#: (experiment, agent, parameters, metric, metrics options): belief coherence's comparable tests (as a plan's
#: test-power studies run them) and the other experiments' headline comparisons.
CASES: tuple[tuple[str, str, dict[str, float], str, dict[str, int]], ...] = (
    ("belief-coherence", "leak", {"leak": 0.05}, "t1_cmi", {"n_boot": 1, "n_perm": 100}),
    ("belief-coherence", "leak", {"leak": 0.05}, "t1_lr", {}),
    ("belief-coherence", "loss-report", {"shift": 0.1}, "t3", {"n_perm": 100}),
    ("collider", "cbn", {}, "lad", {}),
    ("instrumental-learning", "rw", {}, "learning_rate", {}),
    ("two-step", "hybrid", {}, "model_basedness", {}),
    ("risky-choice", "prospect-theory", {}, "p_risky", {}),
)
#: Belief coherence's simulation and metrics must run within this factor of the other experiments'.
TARGET_RATIO = 5.0


def bench(name: str, agent: str, params: dict[str, float], metric: str, options: dict[str, int],
          repeats: int) -> tuple[int, float, float]:
    """(trials, simulation ns per trial, metric ns per trial) of ``RUNS`` runs."""
    exp = get_experiment(name)
    design = exp.env_cls.design_cls()
    trials = simulate_runs(exp, agent, RUNS, 0, params, design)
    comparison_result(exp, metric, trials, options)  # compile and import outside the timing
    n = RUNS * int(design.n_trials)
    sim = best_cpu_of(lambda: simulate_runs(exp, agent, RUNS, 1, params, design), repeats)
    met = best_cpu_of(lambda: comparison_result(exp, metric, trials, options), repeats)
    return n, sim / n * 1e9, met / n * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many timings")
    args = parser.parse_args()
    print(f"{RUNS} runs a group, default design, one core, CPU ns per trial")
    print(f"{'experiment':22s} {'metric':16s} {'trials':>7s} {'simulation':>11s} {'metric':>9s}")
    rows = []
    for name, agent, params, metric, options in CASES:
        n, sim, met = bench(name, agent, params, metric, options, args.repeats)
        rows.append((name, sim, met))
        print(f"{name:22s} {metric:16s} {n:7d} {sim:11.0f} {met:9.0f}", flush=True)
    others = [r for r in rows if r[0] != "belief-coherence"]
    ours = [r for r in rows if r[0] == "belief-coherence"]
    for what, k in (("simulation", 1), ("metric", 2)):
        ratio = max(r[k] for r in ours) / max(r[k] for r in others)
        print(f"belief coherence's slowest {what} / the slowest other experiment's: {ratio:.1f}x "
              f"(target <= {TARGET_RATIO:.0f}) [{'OK' if ratio <= TARGET_RATIO else 'MISSED'}]")


if __name__ == "__main__":
    main()
