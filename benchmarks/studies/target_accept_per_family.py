"""NUTS target acceptance 0.95 against the product's 0.9, per family whose fits diverged (issue 71 item 4).

    python benchmarks/studies/target_accept_per_family.py                    # every case, both settings (~15 min)
    python benchmarks/studies/target_accept_per_family.py --cases horizon    # some cases
    python benchmarks/studies/target_accept_per_family.py --from DIR         # the outputs of earlier runs, re-read
    python benchmarks/studies/target_accept_per_family.py ... --record NAME  # also benchmarks/studies/results/NAME.json

The families here are those whose fits at the product's setting drew divergences in docs/benchmarks.md's tables
(horizon, two-step hybrid, model-based and model-free, magnitude Kalman, RW±).  For each, the package's side
alone of ``bench_hierarchical_vs_numpyro.py`` (20 subjects, 4 chains x (500 tune + 1000 draws), nutpie on one
thread) fits the fresh data sets 2 to 5 (seeds 2 to 5; data set 2 is the process's first fit) once at the
product's target acceptance (``TARGET_ACCEPT``, 0.9, which every one of these families takes) and once with
``--target-accept 0.95``, one process after another, and applies the rule written down before the first run
(28 Nov 2026, 00:10 UTC): **a family takes 0.95 where 0.9 diverged on at least one of the four data sets and 0.95
draws fewer divergences over the four, at max R-hat <= 1.01 on each.**  Speed does not decide (it is printed):
a divergence says the sampler missed part of the posterior, which a faster fit does not buy back.  ``--from DIR``
reads ``DIR/CASE-0.9.txt`` and ``DIR/CASE-0.95.txt`` (what the bench printed) instead of running.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lowrank_per_family import cell, fits, outputs_of, study_options, write_record  # noqa: E402  (a sibling study script, not a package)

BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
CASES = ["horizon", "two-step-hybrid", "two-step-model-based", "two-step-model-free", "magnitude-kalman", "rw-pm"]
SETTINGS = ("0.9", "0.95")
FIRST_DATA_SET, DATA_SETS = 2, 4
ARGS = ["--package-only", "--subjects", "20", "--draws", "1000", "--tune", "500", "--reps", str(DATA_SETS),
        "--cores", "1", "--first-data-set", str(FIRST_DATA_SET)]
RHAT = 1.01
COLUMNS = ["case", "data set", "target 0.9", "target 0.95", "0.95 / 0.9"]
CELL = ("Each cell: min bulk ESS per CPU-second (min bulk ESS; CPU s), max R-hat, divergences, leapfrog steps a draw "
        "(0.95 / 0.9: the ratio of the rates; on a case's last row, what the rule takes); "
        "data set 2 is each process's first fit")


def run(case: str, setting: str) -> str:
    """The bench's output for ``case`` at target acceptance ``setting``, in a fresh process on one thread."""
    env = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(BENCH), *ARGS, "--cases", case, "--target-accept", setting],
                          capture_output=True, text=True, check=False, env={**os.environ, **env})
    return done.stdout


def takes_higher(low: dict[int, dict[str, Any]], high: dict[int, dict[str, Any]]) -> bool:
    """The rule over the data sets both settings fitted (all four, or no switch)."""
    reps = sorted(set(low) & set(high))
    if len(reps) != DATA_SETS:
        return False
    diverged = sum(low[k]["divergences"] for k in reps)
    return (diverged > 0 and sum(high[k]["divergences"] for k in reps) < diverged
            and all(high[k]["max_rhat"] <= RHAT for k in reps))


def study(outputs: dict[tuple[str, str], str]) -> tuple[list[list[str]], list[str]]:
    """The table's rows, a total row per case, and the families the rule moves to 0.95."""
    rows, switched = [], []
    for case in dict.fromkeys(c for c, _ in outputs):
        low, high = fits(outputs[case, SETTINGS[0]]), fits(outputs[case, SETTINGS[1]])
        for k in sorted(set(low) & set(high)):
            rows.append([case, str(k), cell(low[k]), cell(high[k]),
                         f"{high[k]['ess_per_cpu_s'] / low[k]['ess_per_cpu_s']:.2f}"])
        moves = takes_higher(low, high)
        rows.append([case, "divergences, all", str(sum(r["divergences"] for r in low.values())),
                     str(sum(r["divergences"] for r in high.values())), f"takes {'0.95' if moves else '0.9'}"])
        if moves:
            switched.append(case)
    return rows, switched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    study_options(ap, CASES, list(SETTINGS))
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if (outputs := outputs_of(o.source, cases, list(SETTINGS), run)) is None:
        return 2
    rows, switched = study(outputs)
    verdict = f"the rule takes target acceptance 0.95 for: {', '.join(switched) or 'none'}"
    print("\n".join([CELL, " | ".join(COLUMNS), *(" | ".join(r) for r in rows), verdict]))
    if o.record:
        write_record(o, "target_accept_per_family.py", CASES, CELL, verdict,
                     [{"title": "fresh data sets 2 to 5", "columns": COLUMNS, "rows": rows}])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
