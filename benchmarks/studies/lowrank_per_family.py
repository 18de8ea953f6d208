"""nutpie's low-rank mass matrix against the diagonal one, per family, on fresh data sets (issue 71 item 4).

    python benchmarks/studies/lowrank_per_family.py                      # runs every case, both settings (~40 min)
    python benchmarks/studies/lowrank_per_family.py --cases rw,bart      # some cases
    python benchmarks/studies/lowrank_per_family.py --from DIR           # the outputs of earlier runs, re-read
    python benchmarks/studies/lowrank_per_family.py ... --record NAME    # also benchmarks/studies/results/NAME.json
    python benchmarks/studies/lowrank_per_family.py --cases belief-mnl --first-data-set 10   # other fresh data sets

For each case of ``bench_hierarchical_vs_numpyro.py`` (20 subjects, 4 chains x (500 tune + 1000 draws), nutpie
on one thread, the package's side only) it fits the data sets 2 and 3 (seeds 2 and 3, which no earlier
comparison used; data set 2 is the process's first fit and compiles) once with ``--diagonal-mass-matrix`` and
once with ``--low-rank-mass-matrix``, one process after another, and applies the rule written down before the
first run (27 Nov 2026, 16:04 UTC): **a family takes the low-rank mass matrix where, on both data sets, it gives
at least the diagonal's min bulk ESS per CPU-second, at max R-hat <= 1.01 and with no more divergences.**  No
other data decides it.  ``--from DIR`` reads ``DIR/CASE-diag.txt`` and ``DIR/CASE-lowrank.txt`` (what the bench
printed) instead of running.  Belief coherence's loss form (low-rank since issue 54, where the diagonal's steps
shrink to nothing on its correlated subject posterior) and revealed-belief dissonant (no fit holds on either
side: docs/benchmarks.md) are not cases of the default list.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
CASES = ["rw-pm", "rw", "hyperbolic", "prospect-theory", "expected-value", "generalised-bayes", "magnitude-linear",
         "static-bayes", "magnitude-kalman", "bart", "horizon", "two-step-hybrid", "two-step-model-based",
         "two-step-model-free", "restless-kalman", "belief-mnl", "collider-3p", "collider-4p"]
SETTINGS = {"diag": "--diagonal-mass-matrix", "lowrank": "--low-rank-mass-matrix"}
FIRST_DATA_SET, DATA_SETS = 2, 2
ARGS = ["--package-only", "--subjects", "20", "--draws", "1000", "--tune", "500", "--reps", str(DATA_SETS),
        "--cores", "1"]
RHAT = 1.01
#: NumPyro's min bulk ESS and CPU seconds on data sets 0 and 1 of the families the rule switched, as
#: docs/benchmarks.md recorded them (RW and expected value: "the three families without a row", code ccc2246;
#: hyperbolic and magnitude Kalman: "Against NumPyro, 26 Nov 2026"), for ``--paired``.
NUMPYRO_RECORDED = {("rw", 0): (1054, 61.1), ("rw", 1): (2000, 66.0), ("expected-value", 0): (1228, 30.7),
                    ("expected-value", 1): (1332, 30.6), ("hyperbolic", 0): (552, 34.2),
                    ("hyperbolic", 1): (1221, 27.1),
                    ("magnitude-kalman", 0): (387, 174.0), ("magnitude-kalman", 1): (410, 88.9)}
PAIRED_COLUMNS = ["case", "data set", "package now", "NumPyro (bulk ESS; CPU s)", "ratio", "counts"]


def fits(text: str) -> dict[int, dict[str, Any]]:
    """The bench's per-data-set rows (``{"case": ...}`` lines) of one process's output, by data set."""
    rows = [json.loads(line) for line in text.splitlines() if line.startswith('{"case"')]
    return {r["rep"]: r for r in rows}


def run(case: str, setting: str, first: int = FIRST_DATA_SET) -> str:
    """The bench's output for ``case`` at ``setting`` on data sets ``first`` and ``first + 1``, in a fresh process on
    one thread."""
    env = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(BENCH), *ARGS, "--first-data-set", str(first), "--cases", case,
                           SETTINGS[setting]],
                          capture_output=True, text=True, check=False, env={**os.environ, **env})
    return done.stdout


def study_options(ap: argparse.ArgumentParser, cases: list[str], settings: list[str]) -> None:
    """The options a per-family study takes: ``--cases``, ``--from DIR`` (:func:`outputs_of`), ``--record NAME``,
    ``--provenance``."""
    ap.add_argument("--cases", default=",".join(cases), help="comma-separated bench cases")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help=f"read DIR/{', '.join(f'CASE-{s}.txt' for s in settings)}")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--provenance", default=None, help="with --from: when, on which code and at what load the "
                                                        "outputs were made (the record's notes)")


def outputs_of(source: Path | None, cases: list[str], settings: list[str],
               run: Callable[[str, str], str]) -> dict[tuple[str, str], str] | None:
    """Each (case, setting)'s bench output: ``source/CASE-SETTING.txt`` (``--from``), else run now; None, after one
    line on stderr, where ``source`` lacks one."""
    if source is not None and not all((source / f"{c}-{s}.txt").is_file() for c in cases for s in settings):
        print(f"--from {source}: give a folder with {' and '.join(f'CASE-{s}.txt' for s in settings)} for "
              f"{', '.join(cases)}", file=sys.stderr)
        return None
    return {(c, s): ((source / f"{c}-{s}.txt").read_text(encoding="utf-8") if source else run(c, s))
            for c in cases for s in settings}


def holds(diag: dict[str, Any], low: dict[str, Any]) -> bool:
    """The rule on one data set: low-rank's rate >= the diagonal's, its R-hat <= 1.01, no more divergences."""
    return (low["ess_per_cpu_s"] >= diag["ess_per_cpu_s"] and low["max_rhat"] <= RHAT
            and low["divergences"] <= diag["divergences"])


def cell(r: dict[str, Any]) -> str:
    return (f"{r['ess_per_cpu_s']:.1f} ({r['min_ess_bulk']:.0f}; {r['cpu_s']:.1f}) {r['max_rhat']:.4f} "
            f"{r['divergences']} {r['mean_steps']:.1f}")


def study(outputs: dict[tuple[str, str], str]) -> tuple[list[list[str]], list[str]]:
    """The table's rows and the families the rule switches, from each (case, setting)'s output."""
    rows, switched = [], []
    for case in dict.fromkeys(c for c, _ in outputs):
        diag, low = fits(outputs[case, "diag"]), fits(outputs[case, "lowrank"])
        reps = sorted(set(diag) & set(low))
        verdicts = [holds(diag[k], low[k]) for k in reps]
        for k, ok in zip(reps, verdicts, strict=True):
            rows.append([case, str(k), cell(diag[k]), cell(low[k]),
                         f"{low[k]['ess_per_cpu_s'] / diag[k]['ess_per_cpu_s']:.2f}", "holds" if ok else "fails"])
        if len(reps) == DATA_SETS and all(verdicts):
            switched.append(case)
    return rows, switched


def paired(outputs: dict[str, str]) -> list[list[str]]:
    """Each switched family's data sets 0 and 1 at the product's setting (the bench's output by case) against
    NumPyro's recorded rate: the ratio of min bulk ESS per CPU-second, and whether it counts (>= 3x at the
    package's R-hat <= 1.01 without a divergence)."""
    rows = []
    for case, text in outputs.items():
        for k, r in sorted(fits(text).items()):
            ess, cpu = NUMPYRO_RECORDED[case, k]
            ratio = r["ess_per_cpu_s"] / (ess / cpu)
            counts = ratio >= 3 and r["max_rhat"] <= RHAT and r["divergences"] == 0
            rows.append([case, str(k), cell(r), f"{ess / cpu:.1f} ({ess}; {cpu})", f"{ratio:.2f}x",
                         "yes" if counts else "no"])
    return rows


#: Each setting's cell: min bulk ESS per CPU-second (min bulk ESS; CPU s), max R-hat, divergences, leapfrog steps
#: a draw.
COLUMNS = ["case", "data set", "diagonal", "low-rank", "low / diag", "rule"]
CELL = ("Each cell: min bulk ESS per CPU-second (min bulk ESS; CPU s), max R-hat, divergences, leapfrog steps a draw; "
        "the first data set is each process's first fit (it compiles, or loads numba's disk cache where an earlier "
        "process compiled it)")


def write_record(o: argparse.Namespace, script: str, default_cases: list[str], legend: str, verdict: str,
                 tables: list[dict[str, Any]], made: str = "made one after another") -> None:
    """Write ``o.record`` (``--record NAME``) of a per-family study: its command (``--cases`` where not the default
    list), the cell ``legend`` and ``verdict`` as notes, preceded with how its outputs were made where read with
    ``--from`` (``o.provenance``)."""
    import recorded

    cases = [c for c in o.cases.split(",") if c]
    command = f"python benchmarks/studies/{script}" + ("" if cases == default_cases else f" --cases {o.cases}")
    notes = f"{legend}; {verdict}"
    if o.source is not None:
        notes = (f"the outputs of the bench commands this script runs, {made} and re-read with "
                 f"--from ({o.provenance or 'provenance not given'}). " + notes)
    recorded.write(o.record, command, tables, notes=notes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    study_options(ap, CASES, list(SETTINGS))
    ap.add_argument("--paired", type=Path, default=None,
                    help="also read DIR/ds01-CASE.txt (the bench on data sets 0 and 1 at the product's setting) for "
                         "each switched family and print its ratio to NumPyro's recorded rate")
    ap.add_argument("--first-data-set", type=int, default=FIRST_DATA_SET,
                    help="the first of the two fresh data sets (seeds) each process fits; the rule reads both")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if o.first_data_set < 0:
        print("--first-data-set must be 0 or more", file=sys.stderr)
        return 2
    if (outputs := outputs_of(o.source, cases, list(SETTINGS),
                              lambda case, setting: run(case, setting, o.first_data_set))) is None:
        return 2
    rows, switched = study(outputs)
    lines = [CELL, " | ".join(COLUMNS), *(" | ".join(r) for r in rows),
             f"the rule takes the low-rank mass matrix for: {', '.join(switched) or 'none'}"]
    tables = [{"title": f"fresh data sets {o.first_data_set} and {o.first_data_set + 1}", "columns": COLUMNS,
               "rows": rows}]
    if o.paired is not None:
        pairs = paired({c: (o.paired / f"ds01-{c}.txt").read_text(encoding="utf-8") for c in switched})
        lines += [" | ".join(PAIRED_COLUMNS), *(" | ".join(r) for r in pairs)]
        tables.append({"title": "the switched families against NumPyro's recorded rates (data sets 0 and 1, the "
                                "package at the product's setting; a pairing across runs)",
                       "columns": PAIRED_COLUMNS, "rows": pairs})
    print("\n".join(lines))
    if o.record:
        sys.path.insert(0, str(HERE))
        script = "lowrank_per_family.py" + ("" if o.first_data_set == FIRST_DATA_SET
                                            else f" --first-data-set {o.first_data_set}")
        write_record(o, script, CASES, CELL,
                     f"the rule takes the low-rank mass matrix for: {', '.join(switched) or 'none'}", tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
