"""Every family's first hierarchical fit in a process, its wrappers loaded from numba's disk cache, against NumPyro
(issue 71 item 4).

    python benchmarks/studies/cached_first_fit.py                       # every case (~30 min on one core)
    python benchmarks/studies/cached_first_fit.py --cases rw,bart       # some cases
    python benchmarks/studies/cached_first_fit.py ... --record NAME     # also benchmarks/studies/results/NAME.json

For each case of ``bench_hierarchical_vs_numpyro.py`` with a NumPyro rate on record, two fresh processes one after
the other, the package's side only, nutpie on one thread: a warm-up (4 chains x (20 + 20) on data set 0: the
process compiles the model's wrappers where no earlier process on this machine did, and numba saves them,
``cogtestbed.shims.nutpie_cfunc``), then the measured fit of data set 0 at the settings of the family table in
docs/benchmarks.md (the process's first fit: it loads the wrappers instead of compiling them).  Its min bulk ESS per
CPU-second is divided by NumPyro's on the same data set as recorded there (:data:`NUMPYRO_RECORDED`: NumPyro's
process jit-compiles its model on that data set, as every NumPyro process does); a row counts at >= 3x with the
package's max R-hat <= 1.01 and no divergence.  The seeds are the recorded runs', so where the package's settings
did not change since, its draws (ESS, R-hat, divergences) are the recorded ones and only its CPU differs.
Revealed-belief dissonant has no NumPyro rate (NumPyro did not finish) and is not a case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
#: Each case's settings in the family table (subjects, draws, tuning steps a chain; 4 chains).
SETTINGS: dict[str, tuple[int, int, int]] = {
    "rw-pm": (50, 1000, 1000), "rw": (20, 1000, 500), "expected-value": (20, 1000, 500),
    "prospect-theory": (20, 1000, 500), "hyperbolic": (20, 1000, 500), "generalised-bayes": (20, 1000, 500),
    "magnitude-linear": (20, 1000, 500), "static-bayes": (20, 1000, 500), "magnitude-kalman": (20, 1000, 500),
    "bart": (20, 1000, 500), "horizon": (20, 1000, 500), "two-step-hybrid": (20, 1000, 500),
    "two-step-model-based": (20, 1000, 500), "two-step-model-free": (20, 1000, 500),
    "restless-kalman": (20, 1000, 500), "belief-mnl": (20, 1000, 500), "belief-loss": (20, 1000, 500),
    "collider-3p": (20, 500, 500), "collider-4p": (6, 500, 500)}
CASES = list(SETTINGS)
#: NumPyro's min bulk ESS and CPU seconds on data set 0 at those settings, as docs/benchmarks.md records them:
#: rw-pm "the issue's RW± pair" (f877e59); rw, expected value and two-step hybrid "the three families without a
#: row" (ccc2246); collider 3p "Earlier results" (d7ecaa2); collider 4p "Collider 4p, both sides" (b537d09); the
#: rest "Against NumPyro, 26 Nov 2026" (9944889).
NUMPYRO_RECORDED: dict[str, tuple[int, float]] = {
    "rw-pm": (977, 171.3), "rw": (1054, 61.1), "expected-value": (1228, 30.7), "prospect-theory": (584, 177.8),
    "hyperbolic": (552, 34.2), "generalised-bayes": (557, 75.7), "magnitude-linear": (293, 129.3),
    "static-bayes": (705, 44.0), "magnitude-kalman": (387, 174.0), "bart": (438, 250.8), "horizon": (1337, 40.8),
    "two-step-hybrid": (1704, 76.8), "two-step-model-based": (2084, 69.9), "two-step-model-free": (1108, 68.1),
    "restless-kalman": (1107, 383.1), "belief-mnl": (363, 159.8), "belief-loss": (633, 560.4),
    "collider-3p": (277, 574.9), "collider-4p": (626, 140.3)}
RHAT = 1.01
COLUMNS = ["case", "package: ESS/CPU-s (bulk ESS; CPU s)", "R-hat", "div.", "warm-up CPU s", "NumPyro ESS/CPU-s",
           "ratio", "counts"]


def bench(case: str, subjects: int, draws: int, tune: int) -> tuple[dict[str, Any], float]:
    """The bench's data-set-0 row for ``case`` in a fresh process on one thread, and the process's CPU seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    args = [sys.executable, str(BENCH), "--package-only", "--cases", case, "--reps", "1", "--cores", "1",
            "--subjects", str(subjects), "--draws", str(draws), "--tune", str(tune)]
    before = os.times()
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    after = os.times()
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"case"')]
    if done.returncode != 0 or not rows:
        raise RuntimeError(f"{case}: the bench failed: {done.stderr[-1500:]}")
    return rows[-1], (after.children_user - before.children_user) + (after.children_system - before.children_system)


def measure(case: str) -> dict[str, Any]:
    """The warm-up and the measured process of one case (module docstring)."""
    subjects, draws, tune = SETTINGS[case]
    _, warm_cpu = bench(case, subjects, 20, 20)
    row, _ = bench(case, subjects, draws, tune)
    return {**row, "warm_up_process_cpu_s": warm_cpu, "load": os.getloadavg()[0], "at": time.strftime("%H:%M:%S")}


def table_row(case: str, r: dict[str, Any]) -> list[str]:
    ess, cpu = NUMPYRO_RECORDED[case]
    ratio = r["ess_per_cpu_s"] / (ess / cpu)
    counts = ratio >= 3 and r["max_rhat"] <= RHAT and r["divergences"] == 0
    return [case, f"{r['ess_per_cpu_s']:.1f} ({r['min_ess_bulk']:.0f}; {r['cpu_s']:.1f})", f"{r['max_rhat']:.4f}",
            str(r["divergences"]), f"{r['warm_up_process_cpu_s']:.1f}", f"{ess / cpu:.1f}", f"{ratio:.2f}x",
            "yes" if counts else "no"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated bench cases")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--notes", default="", help="with --record: when, on which code, at what load")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if not cases or any(c not in SETTINGS for c in cases):
        print(f"give cases of {', '.join(CASES)}", file=sys.stderr)
        return 2
    rows = []
    for case in cases:
        r = measure(case)
        rows.append(table_row(case, r))
        print(json.dumps({"case": case, **{k: r[k] for k in ("cpu_s", "min_ess_bulk", "max_rhat", "divergences",
                                                               "mean_steps", "ess_per_cpu_s", "warm_up_process_cpu_s",
                                                               "load", "at")}}), flush=True)
    counted = [r[0] for r in rows if r[-1] == "yes"]
    summary = f"{len(counted)} of {len(rows)} first data sets count (>= 3x, R-hat <= {RHAT}, no divergence)"
    print(" | ".join(COLUMNS))
    print("\n".join(" | ".join(r) for r in rows))
    print(summary)
    if o.record:
        sys.path.insert(0, str(HERE))
        import recorded

        command = "python benchmarks/studies/cached_first_fit.py" + ("" if cases == CASES else f" --cases {o.cases}")
        recorded.write(o.record, command, [{"title": "data set 0, the process's first fit, wrappers from the disk "
                                            "cache", "columns": COLUMNS, "rows": rows}],
                       notes=f"{o.notes} {summary}; counted: {', '.join(counted) or 'none'}".strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
