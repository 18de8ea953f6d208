"""Issue 46's temporal-discounting figures: the MLE run that crashed, its units and its ridges.

Prints, for the hyperbolic model on CogBench's temporal-discounting staircase:

1. ``cogtestbed recover temporal-discounting --model hyperbolic --subjects 30 --reps 10
   --seed 2 --method mle`` (the command that died with a ZeroDivisionError): per parameter, r over
   every subject and over the identified ones (log scale), how many estimates are not identified
   and why, and how many sit on the ridge k = 42.169650, τ = 0.001778;
2. ``ct.fit`` on 30 simulated subjects with their own k: the units it fitted and why, how many
   are identified;
3. the experiment's declared recovery study (1 and 10 pooled runs) at ``--declared-reps`` reps (10).

Run: ``python benchmarks/studies/td_identification.py`` (about 2-4 minutes on the shared 2-core
machine, one worker).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import cogtestbed as ct

RIDGE_K, RIDGE_TAU = 42.169650, 0.001778


def recovery_lines(study: ct.Study, label: str) -> list[str]:
    """One line per design cell and parameter: r all / identified, counts and reasons."""
    out = []
    for cell in study.summary.values():
        runs = f", {cell['runs']} runs pooled" if cell.get("runs", 1) > 1 else ""
        for name, v in cell["parameters"].items():
            reasons = ", ".join(f"{n} {k}" for k, n in v.get("unidentified_reasons", {}).items())
            r_id = v.get("r_identified")
            out.append(f"{label}{runs}: {name:12s} r (all {v['n']}) {v['r']:.3f} | r (identified "
                       f"{v.get('n_identified', v['n'])}) {r_id if r_id is None else f'{r_id:.3f}'} | "
                       f"not identified {v.get('n_unidentified', 0)} ({reasons or 'none'})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10, help="reps of the issue's recover command (10)")
    parser.add_argument("--declared-reps", type=int, default=10, help="reps of the declared study (10)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    study = ct.recover("hyperbolic", experiment="temporal-discounting", subjects=30, reps=args.reps, seed=2,
                       method="mle", workers=1)
    table = study.table
    ridge = table[(table["parameter"] == "k") & np.isclose(table["estimate"], RIDGE_K, rtol=1e-6)]
    print(f"1. recover temporal-discounting --model hyperbolic --subjects 30 --reps {args.reps} --seed 2 "
          f"--method mle: exit ok, {time.perf_counter() - t0:.0f} s wall")
    for line in recovery_lines(study, "   30 subjects x 1 run"):
        print(line)
    print(f"   on the ridge k = {RIDGE_K}, temperature = {RIDGE_TAU}: {len(ridge)} subjects, "
          f"{int((~ridge['identified']).sum())} flagged not identified")

    k = np.exp(np.random.default_rng(0).uniform(np.log(0.005), np.log(1.0), 30))
    trials = ct.simulate("temporal-discounting", "hyperbolic", subjects=30, seed=1,
                         params={"k": k, "temperature": 0.05})
    fits = ct.fit("temporal-discounting", trials, model="hyperbolic")
    units = fits.attrs["units"]
    print(f"2. ct.fit on 30 simulated subjects (own k each): {units['n_units']} {units['unit']} units "
          f"({units['unit_reason']}); identified {int(fits['identified'].sum())} of {len(fits)}")

    t0 = time.perf_counter()
    declared = ct.study("temporal-discounting", "recovery", reps=args.declared_reps, seed=2, workers=1)
    assert isinstance(declared, ct.Study)
    print(f"3. cogtestbed study temporal-discounting recovery --reps {args.declared_reps} --seed 2: "
          f"{time.perf_counter() - t0:.0f} s wall")
    for line in recovery_lines(declared, "   20 subjects"):
        print(line)


if __name__ == "__main__":
    main()
