"""T1b's two decision rules on the same simulated studies (Yamin et al. 2026, 200 contexts x 5 reps).

Each study runs T1b once (200 bootstrap resamples, as the calibration table) and records both
rules' decisions: ``placebo`` (improvement of theta minus that of a locally permuted theta, paired
bootstrap, one-sided at alpha) and ``paper`` (lower end of the 95 % CI of the improvement above 0).
Size: calibrated logit RUM at report noise 0, with the seeds of the calibration table's T1b cell
(``belief_size.py --calibration --tests t1_nested`` gives both rules' rates on the same studies,
one cell per rule, at twice the cost).  Power: the hidden-information leak agent at ``--leak``.
Prints one line per 10 studies and the final table "cell, studies, placebo rate +- MC SE, paper
rate +- MC SE"; ``-o DIR`` saves ``t1b_rules.parquet`` (one row per study) every 10 studies.

    nice -n 5 python benchmarks/studies/belief_t1b_rule.py --size-sims 300 --power-sims 50 -o runs/t1b
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.belief import BeliefCoherenceEnv
from cogtestbed.inference import belief as tests
from cogtestbed.validation.belief import CALIBRATION_TESTS, simulate_outcomes, study_design

#: Bootstrap resamples per study (as the calibration table and the declared studies).
STUDY_BOOT = 200


def run_cell(name: str, agent: str, params: dict[str, Any], n: int, seed: int, rows: list[dict[str, Any]],
             output: Path | None) -> None:
    """``n`` studies of ``agent``; appends one row per study with both rules' decisions."""
    design = study_design("t1_nested")
    sessions, outcomes, _ = simulate_outcomes(agent, params, design, n, seed)
    table = BeliefCoherenceEnv.trials_table(design, sessions, outcomes, agent=agent)
    start = time.process_time()
    for i, (_, part) in enumerate(table.groupby("subject", sort=True)):
        r = tests.t1_nested(part, tests.LEVEL, n_boot=STUDY_BOOT, seed=seed + i)
        rows.append({"cell": name, "study": i, "placebo": r["reject_placebo"], "paper": r["reject_paper"],
                     "improvement": r["estimate"], "placebo_improvement": r["placebo_estimate"],
                     "p_placebo": r["rules"]["placebo"]["p_value"], "p_paper": r["rules"]["paper"]["p_value"]})
        if (i + 1) % 10 == 0:
            done = pd.DataFrame([x for x in rows if x["cell"] == name])
            print(f"{name}: {i + 1} studies, placebo {done['placebo'].mean():.3f}, paper {done['paper'].mean():.3f}"
                  f" ({(time.process_time() - start) / (i + 1):.1f} s CPU per study)", flush=True)
            if output is not None:
                output.mkdir(parents=True, exist_ok=True)
                pd.DataFrame(rows).to_parquet(output / "t1b_rules.parquet", index=False)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell: studies, each rule's rejection rate and MC SE, median improvements."""
    out = []
    for cell, part in frame.groupby("cell", sort=False):
        row: dict[str, Any] = {"cell": cell, "studies": len(part)}
        for rule in ("placebo", "paper"):
            rate = float(part[rule].mean())
            row[rule] = f"{rate:.3f} ± {np.sqrt(rate * (1 - rate) / len(part)):.3f}"
        row["median improvement %"] = float(part["improvement"].median())
        row["median placebo %"] = float(part["placebo_improvement"].median())
        out.append(row)
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-sims", type=int, default=300)
    parser.add_argument("--power-sims", type=int, default=50)
    parser.add_argument("--leak", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--from", dest="source", type=Path, default=None, help="re-print a saved run")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    if args.source is not None:
        print(summary(pd.read_parquet(args.source / "t1b_rules.parquet")).to_string(index=False))
        return
    rows: list[dict[str, Any]] = []
    size_seed = args.seed + 1000 * CALIBRATION_TESTS.index("t1_nested")  # the calibration table's T1b cell
    run_cell(f"leak {args.leak}", "leak", {"leak": args.leak}, args.power_sims, size_seed + 500, rows, args.output)
    run_cell("logit RUM, σ = 0", "logit-rum", {"report_noise": 0.0}, args.size_sims, size_seed, rows, args.output)
    print(summary(pd.DataFrame(rows)).to_string(index=False))


if __name__ == "__main__":
    main()
