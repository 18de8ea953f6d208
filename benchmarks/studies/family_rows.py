"""Family-table rows against NumPyro, measured again: both sides on data sets 0 and 1, and the package's first data
set with its compiled model loaded (issue 71 item 4).

    python benchmarks/studies/family_rows.py --cases collider-3p                  # runs them (NumPyro venv needed)
    python benchmarks/studies/family_rows.py --from DIR                           # the outputs of earlier runs
    python benchmarks/studies/family_rows.py ... --record NAME                    # also results/NAME.json

For each case, ``bench_hierarchical_vs_numpyro.py`` runs both sides on data sets 0 and 1 at the case's settings in
docs/benchmarks.md's family table (most: 20 subjects, 4 chains x (500 tune + 1000 draws); one thread;
``DIR/CASE-full.txt``),
then the package's side alone on data set 0 in a fresh process (``--package-only --reps 1``; ``DIR/CASE-loaded.txt``):
the first run compiled the model's wrappers and saved them in numba's disk cache, so this one loads them, as a
user's first fit does once a process on the machine compiled the shape.  Its ratio divides its rate by NumPyro's on
the same data set in the first run (a pairing across two runs).  A data set counts at >= 3x with the package's
R-hat <= 1.01 and no divergence; NumPyro's R-hat is printed beside it.  ``--from DIR`` reads the two files per case
instead of running.
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
#: Each case's settings in the family table (``--subjects``, ``--draws``, ``--tune``; 4 chains).
from cached_first_fit import SETTINGS  # noqa: E402
from lowrank_per_family import fits  # noqa: E402
from python_path_first_fit import counts  # noqa: E402

BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
NUMPYRO_PYTHON = HERE.parents[1] / ".venv-numpyro" / "bin" / "python"
COLUMNS = ["case", "data set", "package", "NumPyro", "ratio", "R-hat", "counts"]
CELL = ("package and NumPyro: min bulk ESS per CPU-second (min bulk ESS; CPU s), divergences; R-hat: the "
        "package's / NumPyro's max; data set 0 "
        "(compiled): the process's first fit, compiling the wrappers; data set 0 (loaded): a fresh process, the "
        "wrappers from numba's disk cache, against NumPyro's data set 0 of the first run")


def run(case: str, folder: Path, reps: int = 2) -> None:
    """Both runs of ``case``, their outputs written to ``folder``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    for name, extra in (("full", ["--reps", str(reps), "--numpyro-python", str(NUMPYRO_PYTHON)]),
                        ("loaded", ["--reps", "1", "--package-only"])):
        done = subprocess.run([sys.executable, str(BENCH), *SETTINGS[case], "--cores", "1", *extra, "--cases", case],
                              capture_output=True, text=True, check=False, env=env)
        (folder / f"{case}-{name}.txt").write_text(done.stdout, encoding="utf-8")


def _cell(r: dict[str, Any]) -> str:
    return f"{r['ess_per_cpu_s']:.2f} ({r['min_ess_bulk']:.0f}; {r['cpu_s']:.1f}), {r['divergences']}"


def _row(case: str, label: str, ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    ratio = ours["ess_per_cpu_s"] / theirs["ess_per_cpu_s"]
    return [case, label, _cell(ours), _cell(theirs), f"{ratio:.2f}x", f"{ours['max_rhat']:.4f} / "
            f"{theirs['max_rhat']:.4f}", counts(ratio, ours)]


def rows_of(case: str, full: str, loaded: str) -> list[list[str]]:
    """The case's rows: data set 0 compiled, data set 0 loaded, data set 1."""
    both, first = fits(full), fits(loaded).get(0)
    out = [_row(case, "0 (compiled)", both[0]["package"], both[0]["numpyro"])] if 0 in both else []
    if first is not None and 0 in both:
        out.append(_row(case, "0 (loaded)", first, both[0]["numpyro"]))
    return out + [_row(case, str(k), both[k]["package"], both[k]["numpyro"]) for k in sorted(both) if k > 0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=None, help="comma-separated bench cases (with --from: default, every case "
                                                  "with both files in DIR)")
    ap.add_argument("--from", dest="source", type=Path, default=None, help="read DIR/CASE-full.txt, CASE-loaded.txt")
    ap.add_argument("--out", type=Path, default=Path("family-rows"), help="where the runs' outputs go")
    ap.add_argument("--reps", type=int, default=2, help="data sets of the run of both sides (1: data set 0 alone)")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--provenance", default=None, help="with --from: when, on which code and at what load the "
                                                        "outputs were made (the record's notes)")
    o = ap.parse_args(argv)
    folder = o.source or o.out
    if (o.source is None and not o.cases) or o.reps < 1:
        print("give --cases (the runs take minutes to an hour a case) or --from DIR, and --reps >= 1", file=sys.stderr)
        return 2
    cases = ([c for c in o.cases.split(",") if c] if o.cases else
             sorted(p.name[:-len("-full.txt")] for p in folder.glob("*-full.txt")))
    if o.source is not None and not all((folder / f"{c}-{n}.txt").is_file() for c in cases for n in ("full", "loaded")):
        print(f"--from {folder}: give a folder with CASE-full.txt and CASE-loaded.txt for each case", file=sys.stderr)
        return 2
    if o.source is None:
        folder.mkdir(parents=True, exist_ok=True)
        for case in cases:
            run(case, folder, o.reps)
    rows = [r for c in cases for r in rows_of(c, (folder / f"{c}-full.txt").read_text(encoding="utf-8"),
                                             (folder / f"{c}-loaded.txt").read_text(encoding="utf-8"))]
    print("\n".join([CELL, " | ".join(COLUMNS), *(" | ".join(r) for r in rows)]))
    if o.record:
        sys.path.insert(0, str(HERE))
        import recorded

        notes = CELL if o.source is None else (
            f"the outputs of the bench commands this script runs, re-read with --from "
            f"({o.provenance or 'provenance not given'}). {CELL}")
        reps = "" if o.reps == 2 else f" --reps {o.reps}"
        recorded.write(o.record, f"python benchmarks/studies/family_rows.py --cases {','.join(cases)}{reps}",
                       [{"title": "both sides, data sets 0 and 1", "columns": COLUMNS, "rows": rows}], notes=notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
