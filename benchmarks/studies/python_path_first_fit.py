"""The Python path for a model shape's first fits against nutpie's compiled model, per family (issue 71 item 4).

    python benchmarks/studies/python_path_first_fit.py --baseline /tmp/base     # every case, both codes (~30 min)
    python benchmarks/studies/python_path_first_fit.py --from DIR               # the outputs of earlier runs
    python benchmarks/studies/python_path_first_fit.py ... --record NAME        # also results/NAME.json

For each case of ``bench_hierarchical_vs_numpyro.py`` at the settings of docs/benchmarks.md's family table, the
package's side alone (``--package-only --reps 2``, nutpie on one thread, data sets 0 and 1: data set 0 is the
process's first fit) is run in a fresh process by ``--baseline`` (a checkout of the code before the Python path,
``hierarchical_sampling._nutpie_compiled`` compiling every shape) and by this checkout, the order alternating
from case to case; each run's output goes to ``DIR/CASE-base.txt`` and ``DIR/CASE-new.txt`` (``--out DIR``), which
``--from DIR`` reads instead of running.  Both codes draw the same (the two paths share PyTensor's functions,
initial points and seeds), which the table checks (the same min bulk ESS and max R-hat); only the CPU differs.
The ratio to NumPyro's min bulk ESS per CPU-second is the family table's recorded one (:data:`RECORDED`) times
the package's CPU before over after: a pairing across runs, NumPyro's side not run again.  A data set counts at
>= 3x with the package's R-hat <= 1.01 and no divergence.  Revealed-belief dissonant (no fit holds on either
side) is not a case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = Path("benchmarks") / "bench_hierarchical_vs_numpyro.py"
STANDARD = ["--subjects", "20", "--draws", "1000", "--tune", "500"]
#: Each case's settings, as the family table's row was measured.
SETTINGS: dict[str, list[str]] = {
    "rw-pm": ["--subjects", "50", "--draws", "1000", "--tune", "1000"],
    **{c: STANDARD for c in ("rw", "expected-value", "prospect-theory", "hyperbolic", "generalised-bayes",
                              "magnitude-linear", "static-bayes", "magnitude-kalman", "bart", "horizon",
                              "two-step-hybrid", "two-step-model-based", "two-step-model-free", "restless-kalman",
                              "belief-mnl", "belief-loss")},
    "collider-3p": ["--subjects", "20", "--draws", "500", "--tune", "500"],
    "collider-4p": ["--subjects", "6", "--draws", "500", "--tune", "500"],
}
CASES = list(SETTINGS)
#: The family table's ratios to NumPyro (data set 0, data set 1) before the Python path (docs/benchmarks.md,
#: "Every family, first and later data set", code b8786ed).
RECORDED: dict[str, tuple[float, float]] = {
    "rw-pm": (2.31, 3.11), "rw": (3.02, 6.72), "expected-value": (2.79, 10.32), "prospect-theory": (3.60, 7.23),
    "hyperbolic": (5.04, 9.09), "generalised-bayes": (1.73, 7.35), "magnitude-linear": (1.73, 3.50),
    "static-bayes": (2.39, 4.67), "magnitude-kalman": (26.00, 56.91), "bart": (1.04, 3.11), "horizon": (1.51, 3.93),
    "two-step-hybrid": (3.31, 11.76), "two-step-model-based": (3.13, 12.51), "two-step-model-free": (3.07, 7.63),
    "restless-kalman": (3.13, 5.05), "belief-mnl": (1.08, 0.69), "belief-loss": (2.01, 1.17),
    "collider-3p": (9.94, 22.87), "collider-4p": (2.70, 17.69)}
RHAT = 1.01
#: "ratio": CPU after / before; "steps": leapfrog steps a draw after warm-up; "to NumPyro": the ratio of min bulk
#: ESS per CPU-second, before -> after.
COLUMNS = ["case", "data set", "CPU s before -> after", "ratio", "same draws", "steps", "to NumPyro", "counts"]


def fits(text: str) -> dict[int, dict[str, Any]]:
    """The bench's per-data-set rows (``{"case": ...}`` lines) of one process's output, by data set."""
    rows = [json.loads(line) for line in text.splitlines() if line.startswith('{"case"')]
    return {r["rep"]: r for r in rows}


def run(checkout: Path, case: str) -> str:
    """The bench's output for ``case`` run by the code of ``checkout``, in a fresh process on one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, str(checkout / BENCH), "--package-only", "--reps", "2", "--cores", "1",
                           "--cases", case, *SETTINGS[case]], capture_output=True, text=True, check=False, env=env,
                          cwd=checkout)
    return done.stdout


def counts(ratio: float, fit: dict[str, Any]) -> str:
    return "yes" if ratio >= 3 and fit["max_rhat"] <= RHAT and fit["divergences"] == 0 else "no"


def rows_of(case: str, base: dict[int, dict[str, Any]], new: dict[int, dict[str, Any]]) -> list[list[str]]:
    """One row per data set both codes fitted."""
    out = []
    for k in sorted(set(base) & set(new)):
        b, n = base[k], new[k]
        same = b["min_ess_bulk"] == n["min_ess_bulk"] and b["max_rhat"] == n["max_rhat"]
        before = RECORDED[case][k]
        after = before * b["cpu_s"] / n["cpu_s"]
        out.append([case, str(k), f"{b['cpu_s']:.2f} -> {n['cpu_s']:.2f}", f"{n['cpu_s'] / b['cpu_s']:.2f}",
                    "yes" if same else "NO", f"{n['mean_steps']:.1f}", f"{before:.2f}x -> {after:.2f}x",
                    f"{counts(before, n)} -> {counts(after, n)}"])
    return out


def summary(rows: list[list[str]]) -> list[str]:
    lines = []
    for k, name in (("0", "first"), ("1", "later")):
        sel = [r for r in rows if r[1] == k]
        ratios = sorted(float(r[3]) for r in sel)
        lines.append(f"{name} data set counts: before {sum(r[7].startswith('yes') for r in sel)} of {len(sel)}, after "
                     f"{sum(r[7].endswith('yes') for r in sel)} of {len(sel)}; CPU after / before: median "
                     f"{ratios[len(sel) // 2]:.2f}, {ratios[0]:.2f} to {ratios[-1]:.2f}.")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated bench cases")
    ap.add_argument("--baseline", type=Path, default=None, help="a checkout of the code before")
    ap.add_argument("--out", type=Path, default=None, help="write each run's output to DIR/CASE-base|new.txt")
    ap.add_argument("--from", dest="source", type=Path, default=None, help="read DIR/CASE-base.txt, CASE-new.txt")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--provenance", default=None, help="with --from: when, on which code and at what load")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if any(c not in SETTINGS for c in cases) or (o.source is None) == (o.baseline is None):
        print(f"give cases of {', '.join(CASES)} and either --baseline CHECKOUT or --from DIR", file=sys.stderr)
        return 2
    rows = []
    for i, case in enumerate(cases):
        if o.source is not None:
            text = {w: (o.source / f"{case}-{w}.txt").read_text(encoding="utf-8") for w in ("base", "new")}
        else:
            order = [("base", o.baseline), ("new", HERE.parents[1])]
            text = {w: run(Path(str(c)), case) for w, c in (order if i % 2 == 0 else order[::-1])}
            if o.out is not None:
                o.out.mkdir(parents=True, exist_ok=True)
                for w, t in text.items():
                    (o.out / f"{case}-{w}.txt").write_text(t, encoding="utf-8")
        rows += rows_of(case, fits(text["base"]), fits(text["new"]))
    lines = summary(rows)
    print(" | ".join(COLUMNS))
    print("\n".join([" | ".join(r) for r in rows] + lines))
    if o.record:
        sys.path.insert(0, str(HERE))
        import recorded

        notes = ("both codes in fresh processes on one thread, alternating; ratios to NumPyro are the family table's "
                 "times the package's CPU before over after (NumPyro not run again); ratio: CPU after / before; steps: "
                 "leapfrog steps a draw after warm-up. " + " ".join(lines))
        if o.source is not None:
            notes = f"re-read with --from ({o.provenance or 'provenance not given'}). " + notes
        recorded.write(o.record, "python benchmarks/studies/python_path_first_fit.py --baseline BASE",
                       [{"title": "the package's CPU per data set, before and after", "columns": COLUMNS,
                         "rows": rows}], notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
