"""Every family's first hierarchical fit in a process, its wrappers loaded from numba's disk cache, against NumPyro
(issue 71 item 4).

    python benchmarks/studies/cached_first_fit.py --baseline BASE            # every case (~50 min on one core)
    python benchmarks/studies/cached_first_fit.py --baseline BASE --cases rw # some cases
    python benchmarks/studies/cached_first_fit.py ... --record NAME          # also benchmarks/studies/results/NAME.json

For each case of ``bench_hierarchical_vs_numpyro.py`` with a NumPyro rate on record, two fresh processes one after
the other, the package's side only, nutpie on one thread: a warm-up (``bench_nutpie_compile.py CASE --cached``:
the process compiles the model's wrappers where no earlier process on this machine did, and numba saves them,
``cogtestbed.shims.nutpie_cfunc``), then the measured fit of data set 0 at the settings of the family table in
docs/benchmarks.md (the process's first fit: it loads the wrappers instead of compiling them), alternating case by
case with the same fit by the checkout ``--baseline`` (the code before: its process compiles nutpie's model).  Two
ratios to NumPyro, each a pairing across runs: *direct*, the min bulk ESS per CPU-second over NumPyro's on the same
data set as recorded in docs/benchmarks.md (:data:`NUMPYRO_RECORDED`; NumPyro's process jit-compiles its model on
that data set, as every NumPyro process does), and *scaled*, the family table's ratio (``RECORDED``) times
the package's CPU before over after, both measured here (what the change did, at this run's load).  A row counts
where the lower of the two is >= 3x at the package's max R-hat <= 1.01 and no divergence.  The seeds are the
recorded runs', so the draws are the baseline's ("same draws": equal min bulk ESS, R-hat and divergences).
Revealed-belief dissonant has no NumPyro rate (NumPyro did not finish) and is not a case.

Without ``--baseline`` only this checkout's fit is measured (after the warm-up), and a row counts on its direct
ratio: the family table's first-data-set column as it stands (28 Nov 2026: the bench imports PyMC before its
clock starts, as NumPyro's script imports JAX; collider 3p at the standard draws; horizon and two-step model-free
at target acceptance 0.95, NumPyro's rates of ``family-rows-28nov``).
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
sys.path.insert(0, str(HERE))
#: Each case's settings in the family table (``--subjects``, ``--draws``, ``--tune``; 4 chains) and the table's
#: ratios to NumPyro before the compiled model came from the disk cache (data set 0, data set 1).
from python_path_first_fit import RECORDED, STANDARD, counts  # noqa: E402
from python_path_first_fit import SETTINGS as MEASURED_AT  # noqa: E402

#: The family table's settings now: collider 3p at the standard draws since 28 Nov 2026 (``family-rows-28nov``).
SETTINGS = {**MEASURED_AT, "collider-3p": STANDARD}
CASES = list(SETTINGS)
#: NumPyro's min bulk ESS and CPU seconds on data set 0 at those settings, as docs/benchmarks.md records them:
#: rw-pm "the issue's RW± pair" (f877e59); rw, expected value and two-step hybrid "the three families without a
#: row" (ccc2246); collider 4p "Collider 4p, both sides" (b537d09); collider 3p, horizon and two-step model-free
#: (at target acceptance 0.95) ``family-rows-28nov`` (2347dc6, 28 Nov 2026; before it: collider 3p (277, 574.9) at
#: 4 x (500 + 500), "Earlier results", d7ecaa2; horizon (1337, 40.8) and model-free (1108, 68.1) at 0.9); the rest
#: "Against NumPyro, 26 Nov 2026" (9944889).
NUMPYRO_RECORDED: dict[str, tuple[int, float]] = {
    "rw-pm": (977, 171.3), "rw": (1054, 61.1), "expected-value": (1228, 30.7), "prospect-theory": (584, 177.8),
    "hyperbolic": (552, 34.2), "generalised-bayes": (557, 75.7), "magnitude-linear": (293, 129.3),
    "static-bayes": (705, 44.0), "magnitude-kalman": (387, 174.0), "bart": (438, 250.8), "horizon": (1055, 31.4),
    "two-step-hybrid": (1704, 76.8), "two-step-model-based": (2084, 69.9), "two-step-model-free": (1238, 67.3),
    "restless-kalman": (1107, 383.1), "belief-mnl": (363, 159.8), "belief-loss": (633, 560.4),
    "collider-3p": (530, 553.2), "collider-4p": (626, 140.3)}
RHAT = 1.01
#: Cases whose recorded ratio (``RECORDED``) was measured at other settings than they run at now: no scaled ratio.
CHANGED_SINCE_RECORDED = frozenset({"collider-3p", "horizon", "two-step-model-free"})
COLUMNS = ["case", "CPU s before -> after", "same", "ESS/CPU-s (bulk ESS)", "R-hat", "div.", "direct", "scaled",
           "counts"]


def bench(case: str, root: Path | None = None) -> dict[str, Any]:
    """The bench's data-set-0 row for ``case`` at its family-table settings in a fresh process on one thread; the
    checkout ``root``'s code and bench where given."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    script = BENCH if root is None else root / "benchmarks" / BENCH.name
    if root is not None:
        env["PYTHONPATH"] = str(root)
    args = [sys.executable, str(script), "--package-only", "--cases", case, "--reps", "1", "--cores", "1",
            *SETTINGS[case]]
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"case"')]
    if done.returncode != 0 or not rows:
        raise RuntimeError(f"{case}: the bench failed: {done.stderr[-1500:]}")
    row: dict[str, Any] = rows[-1]
    return row


def warm_up(case: str) -> dict[str, Any]:
    """``bench_nutpie_compile.py CASE --cached`` in a fresh process: the case's wrappers compiled and saved where no
    process on this machine did, else loaded (its JSON line)."""
    subjects = SETTINGS[case][SETTINGS[case].index("--subjects") + 1]
    done = subprocess.run([sys.executable, str(HERE.parent / "bench_nutpie_compile.py"), case, "--cached",
                           "--subjects", subjects], capture_output=True, text=True, check=False)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not rows:
        raise RuntimeError(f"{case}: the warm-up failed: {done.stdout[-500:]} {done.stderr[-1500:]}")
    result: dict[str, Any] = rows[-1]
    return result


def measure(case: str, baseline: Path | None, flip: bool) -> dict[str, Any]:
    """The warm-up, then the measured process of one case and the baseline's (where given), in that order or flipped
    (module docstring)."""
    warm = warm_up(case)
    sides = ("after",) if baseline is None else ("before", "after") if flip else ("after", "before")
    out = {side: bench(case, baseline if side == "before" else None) for side in sides}
    return {**out, "warm_up": {k: warm[k] for k in ("wrappers", "wrappers_cpu_s")}, "load": os.getloadavg()[0],
            "at": time.strftime("%H:%M:%S")}


def table_row(case: str, m: dict[str, Any]) -> list[str]:
    """The case's row; without a baseline, no CPU before, no "same" and no scaled ratio ("-"), the direct one
    deciding."""
    before, r = m.get("before"), m["after"]
    ess, cpu = NUMPYRO_RECORDED[case]
    direct = r["ess_per_cpu_s"] / (ess / cpu)
    scaled = (None if before is None or case in CHANGED_SINCE_RECORDED
              else RECORDED[case][0] * before["cpu_s"] / r["cpu_s"])
    same = before is not None and all(before[k] == r[k] for k in ("min_ess_bulk", "max_rhat", "divergences"))
    return [case, f"{before['cpu_s']:.1f} -> {r['cpu_s']:.1f}" if before else f"{r['cpu_s']:.1f}",
            "-" if before is None else "yes" if same else "no",
            f"{r['ess_per_cpu_s']:.1f} ({r['min_ess_bulk']:.0f})", f"{r['max_rhat']:.4f}", str(r["divergences"]),
            f"{direct:.2f}x", "-" if scaled is None else f"{scaled:.2f}x",
            counts(direct if scaled is None else min(direct, scaled), r)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated bench cases")
    ap.add_argument("--baseline", type=Path, default=None, help="a checkout of the code before (it compiles); "
                                                                   "without: this checkout's fit alone")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--notes", default="", help="with --record: when, on which code, at what load")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if not cases or any(c not in SETTINGS for c in cases):
        print(f"give cases of {', '.join(CASES)}", file=sys.stderr)
        return 2
    keys = ("cpu_s", "min_ess_bulk", "max_rhat", "divergences", "mean_steps", "ess_per_cpu_s")
    rows = []
    for i, case in enumerate(cases):
        m = measure(case, o.baseline, flip=i % 2 == 1)
        rows.append(table_row(case, m))
        print(json.dumps({"case": case, **{side: {k: m[side][k] for k in keys} for side in ("before", "after")
                                            if side in m},
                          **{k: m[k] for k in ("warm_up", "load", "at")}}), flush=True)
    counted = [r[0] for r in rows if r[-1] == "yes"]
    which = "the lower ratio" if o.baseline else "the direct ratio"
    summary = (f"{len(counted)} of {len(rows)} first data sets count ({which} >= 3x, R-hat <= {RHAT}, "
               "no divergence)")
    print(" | ".join(COLUMNS))
    print("\n".join(" | ".join(r) for r in rows))
    print(summary)
    if o.record:
        import recorded

        command = ("python benchmarks/studies/cached_first_fit.py" + (" --baseline BASE" if o.baseline else "")
                   + ("" if cases == CASES else f" --cases {o.cases}"))
        recorded.write(o.record, command, [{"title": "data set 0, the process's first fit, wrappers from the disk "
                                            "cache", "columns": COLUMNS, "rows": rows}],
                       notes=f"{o.notes} {summary}; counted: {', '.join(counted) or 'none'}".strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
